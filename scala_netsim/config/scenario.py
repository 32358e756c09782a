"""Scenario files: YAML validated by pydantic models.

A file is validated in two passes, and every problem a pass finds is reported together, one
per line, each as `field.path: what is allowed, got value`, in one ScenarioError that names
the file: first every field on its own (types, ranges, names, unknown keys); then, when every
field is valid, the checks that relate several fields (cross_field_problems).

The allowed names come from their registries: algorithms (and each algorithm's section) from
scala_netsim.config.registry, path-loss models, link models and bandwidth allocators from
channel.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, create_model

import channel
from scala_netsim.config.async_checks import asynchronous_problems, network_problems
from scala_netsim.config.deployments import DEPLOYMENTS
from scala_netsim.config.documents import (
    DuplicateKey,
    ScenarioError,
    apply_overrides,
    parse_yaml,
)
from scala_netsim.config.network import NetworkConfig
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.sections import (
    DATASET_CLASSES,
    PARTITION_KINDS,
    CompressionConfig,
    ComputeConfig,
    DataConfig,
    ModelConfig,
    PrivacyConfig,
    QuantityPartition,
    ReportConfig,
    Strict,
    TrainingConfig,
    one_of,
)


class Scenario(Strict):
    """A validated scenario. The class itself holds the behaviour; the fields are those of
    `scenario_model()` (the fixed sections, then `algorithms` and one section per registered
    algorithm with hyper-parameters, derived from the algorithm registry)."""

    if TYPE_CHECKING:   # the fields _fields() gives every scenario, as the type checker sees them
        name: str
        seed: int
        device: Literal["auto", "cpu", "cuda"]
        timing_only: bool
        data: DataConfig
        model: ModelConfig
        training: TrainingConfig
        algorithms: list[str]
        network: NetworkConfig
        compute: ComputeConfig
        compression: CompressionConfig
        privacy: PrivacyConfig | None
        report: ReportConfig
        sweep: dict[str, list[Any] | dict[str, dict[str, Any]]]

    def __reduce__(self) -> tuple:
        """Pickled by the fields as they are and rebuilt on `scenario_model()`'s class (the
        class is made for the registered algorithms, so pickle cannot name it): a worker
        process or Ray task gets the validated scenario, not a document to validate again."""
        return _rebuilt, (self.__getstate__(),)

    @property
    def num_participants(self) -> int:
        """r * K clients take part in every round (at least one): n, the clients kept."""
        return max(1, round(self.training.participation * self.data.num_clients))

    @property
    def concurrency(self) -> int:
        """Q: the clients an asynchronous algorithm keeps training at once (training.
        concurrency, or the n of a synchronous round)."""
        return self.training.concurrency or self.num_participants

    @property
    def num_selected(self) -> int:
        """ceil((1 + over_selection) n) clients are selected every round (n without
        over-selection)."""
        n, x = self.num_participants, self.training.over_selection
        return n if x == 0 else math.ceil((1 + x) * n - 1e-9)   # (1.1 * 10 is 11.000...02)

    @property
    def selected_batch_size(self) -> int:
        """The batch B apportioned among the selected clients: B itself, or with
        over-selection round(B m / n), so that each client's B_k is what it would be among n
        and the n kept clients' batch is about B."""
        n, m, batch = self.num_participants, self.num_selected, self.training.batch_size
        return batch if m == n else round(batch * m / n)

    @property
    def network_shapes_learning(self) -> bool:
        """Do deadlines or over-selection let the clock decide who is aggregated?"""
        tr = self.training
        return (tr.deadline_s is not None or tr.step_deadline_s is not None
                or tr.over_selection > 0)

    @property
    def drops_clients(self) -> bool:
        """Can the network drop clients from a round (deadlines, over-selection, or a link that
        loses transfers)? Such runs record who contributed (scala_netsim.runner.loop)."""
        return (self.network_shapes_learning
                or channel.LINK_MODELS[self.network.link.mode].outages)

    @property
    def records_radio(self) -> bool:
        """Does a run record the radio and energy columns (scala_netsim.books.radio)? When the
        cell has shadowing, fading, a link other than the adaptive one or an allocator other
        than equal shares, or is a network of cells, or when `network.record_radio` asks for
        them: a default cell's files keep their columns, byte for byte."""
        net = self.network
        return (net.record_radio or net.shadowing_std_db > 0 or net.fading.kind != "none"
                or net.link.mode != "adaptive" or net.allocation != "equal"
                or net.layout.kind != "single" or net.duplex.kind != "fdd")


def _fields() -> dict:
    """The scenario's fields in file order, the algorithm part from the registry."""
    sections = {name: (spec.config, Field(default_factory=spec.config))
                for name, spec in ALGORITHMS.items() if spec.config is not None}
    return {
        "name": (str, Field(pattern=r"^[A-Za-z0-9_.-]+$")),
        "seed": (int, Field(default=0, ge=0)),
        "device": (Literal["auto", "cpu", "cuda"], "auto"),
        # true: time the protocols with each step's bytes and FLOPs from the real trainer's
        # first step of that batch size, training nothing else (scala_netsim.runner.timing)
        "timing_only": (bool, False),
        "data": (DataConfig, Field(default_factory=DataConfig)),
        "model": (ModelConfig, Field(default_factory=ModelConfig)),
        "training": (TrainingConfig, Field(default_factory=TrainingConfig)),
        "algorithms": (GenericAlias(list, one_of(ALGORITHMS)),
                       Field(default=["scala"], min_length=1)),
        "network": (NetworkConfig, Field(default_factory=NetworkConfig)),
        "compute": (ComputeConfig, Field(default_factory=ComputeConfig)),
        "compression": (CompressionConfig, Field(default_factory=CompressionConfig)),
        **sections,
        # null: no attack; a section: attack every completed run at its end
        "privacy": (PrivacyConfig | None, None),
        "report": (ReportConfig, Field(default_factory=ReportConfig)),
        # dotted key -> list of values, or a name of your own -> named cases (case name ->
        # {dotted key: value, ...}: keys that vary together); every combination is run with
        # every algorithm (scala_netsim.tools.sweep). Values are checked cell by cell when the
        # sweep is expanded.
        "sweep": (dict[str, Annotated[list[Any], Field(min_length=1)]
                       | Annotated[dict[str, dict[str, Any]], Field(min_length=1)]],
                  Field(default_factory=dict)),
    }


_MODEL: dict[int, type[Scenario]] = {}


def scenario_model() -> type[Scenario]:
    """The pydantic model of a scenario file for the algorithms registered now."""
    if ALGORITHMS.version not in _MODEL:
        _MODEL.clear()
        _MODEL[ALGORITHMS.version] = create_model("Scenario", __base__=Scenario, **_fields())
    return _MODEL[ALGORITHMS.version]


def _rebuilt(state: dict) -> Scenario:
    """A pickled Scenario (Scenario.__reduce__), on this process's scenario model."""
    model = scenario_model()
    scenario = model.__new__(model)
    scenario.__setstate__(state)
    return scenario


def compression_problems(scenario: Scenario) -> list[str]:
    """Cut-layer compression needs an algorithm that sends activations (uplink) or their
    gradients (downlink); in a scenario that lists others too, only the cells of those that
    send them carry it (scala_netsim.tools.sweep). Models may be compressed for every algorithm."""
    problems = []
    for direction, trait, what in (("uplink", "activations", "cut-layer activations"),
                                   ("downlink", "gradients", "activation gradients")):
        codec = getattr(scenario.compression, direction)
        if codec != "none" and not any(getattr(ALGORITHMS[a].traits, trait)
                                       for a in scenario.algorithms):
            senders = ALGORITHMS.with_trait(trait)
            problems.append(f"compression.{direction}: only for algorithms that send "
                            f"{what} ({', '.join(senders)}); {', '.join(scenario.algorithms)} "
                            f"send{'s' if len(scenario.algorithms) == 1 else ''} none, got "
                            f"{codec!r} (compression.models applies to every algorithm)")
    return problems


def sweep_problems(scenario: Scenario) -> list[str]:
    """Problems with what `sweep` sweeps (named cases, keys that cannot be swept)."""
    problems = []
    for key, values in scenario.sweep.items():
        keys = [key]
        if isinstance(values, dict):   # named cases
            if key in type(scenario).model_fields or "." in key:
                problems.append(f"sweep: {key!r} names cases: it must be a name of your own, "
                                f"neither a scenario key nor dotted (e.g. channel)")
            keys = [k for case in values.values() for k in case]
            problems.extend(f"sweep.{key}.{case}: a case sets at least one dotted key"
                            for case, settings in values.items() if not settings)
        for k in dict.fromkeys(keys):
            if k.split(".")[0] in ("name", "algorithms", "sweep"):
                problems.append(f"sweep: {k!r} cannot be swept (sweepable: any other dotted "
                                f"key, e.g. training.local_iters or seed; algorithms are "
                                f"always crossed with the sweep)")
    return problems


def cross_field_problems(scenario: Scenario) -> list[str]:
    """Problems that involve several fields of an otherwise valid scenario, one per entry."""
    problems = []
    num_classes = DATASET_CLASSES[scenario.data.dataset]
    part = scenario.data.partition
    if isinstance(part, QuantityPartition):
        if part.alpha > num_classes:
            problems.append(f"data.partition.alpha: must be <= the {num_classes} classes of "
                            f"{scenario.data.dataset}, got {part.alpha}")
        elif (scenario.data.num_clients * part.alpha) % num_classes:
            problems.append(f"data.partition.alpha: num_clients*alpha must be divisible by "
                            f"the {num_classes} classes, got {scenario.data.num_clients}*"
                            f"{part.alpha} = {scenario.data.num_clients * part.alpha}")
    tr = scenario.training
    if tr.batch_size < scenario.num_participants:
        problems.append(f"training.batch_size: must be >= the number of participating "
                        f"clients ({scenario.num_participants}), got "
                        f"{scenario.training.batch_size}")
    if scenario.num_selected > scenario.data.num_clients:
        most = scenario.data.num_clients / scenario.num_participants - 1
        problems.append(f"training.over_selection: selects ceil((1 + {tr.over_selection:g}) x "
                        f"{scenario.num_participants}) = {scenario.num_selected} clients, more "
                        f"than the {scenario.data.num_clients} there are (data.num_clients); "
                        f"allowed: at most {most:.4g}")
    barrier = [a for a in scenario.algorithms if ALGORITHMS[a].traits.barrier]
    if tr.step_deadline_s is not None and not barrier:
        with_barrier = ALGORITHMS.with_trait("barrier")
        problems.append(f"training.step_deadline_s: only for algorithms with a barrier "
                        f"({', '.join(with_barrier)}); {', '.join(scenario.algorithms)} "
                        f"{'has' if len(scenario.algorithms) == 1 else 'have'} none, got "
                        f"{tr.step_deadline_s}")
    problems.extend(compression_problems(scenario))
    problems.extend(asynchronous_problems(scenario))
    if scenario.privacy is not None:
        reasons = [ALGORITHMS[a].traits.why_not_attackable(a) for a in scenario.algorithms]
        if all(reasons):
            problems.append(f"privacy: the attack needs an algorithm that sends activations "
                            f"from a global client-side model; "
                            f"{'; '.join(r for r in reasons if r)}")
    if scenario.timing_only and barrier and scenario.drops_clients:
        problems.append(f"timing_only: {', '.join(barrier)} with deadlines, over-selection or a "
                        f"fixed-rate link steps the server on the clients left, batches no "
                        f"timing-only run has metered; set timing_only: false")
    problems.extend(network_problems(scenario))
    problems.extend(sweep_problems(scenario))
    if len(set(scenario.algorithms)) != len(scenario.algorithms):
        problems.append(f"algorithms: each algorithm at most once, got {scenario.algorithms}")
    for name in dict.fromkeys(scenario.algorithms):
        section = ALGORITHMS[name].section(scenario)
        if section is not None:
            problems.extend(section.problems(scenario))
    return problems


def _allowed_keys(loc: tuple) -> list[str]:
    """Field names allowed at `loc` (a pydantic error location), for close-match hints."""
    model: Any = scenario_model()   # a model class, or None once the location leaves models
    for part in loc[:-1]:
        if part in PARTITION_KINDS:   # a discriminated union's tag names its member model
            model = PARTITION_KINDS[part]
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        annotation = field.annotation
        is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        model = annotation if is_model else None   # a union: the tag comes next
    return list(getattr(model, "model_fields", {}))


def _describe(error: Mapping[str, Any]) -> list[str]:
    loc = [p for p in error["loc"] if p not in PARTITION_KINDS]
    where = ".".join(str(p) for p in loc) or "(top level)"
    kind, ctx, got = error["type"], error.get("ctx", {}), error.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(error["loc"])
        hint = difflib.get_close_matches(str(error["loc"][-1]), allowed, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        return [f"{where}: unknown key{suggestion} (allowed: {', '.join(allowed)})"]
    if kind == "missing":
        return [f"{where}: required key is missing"]
    if kind == "boolean_for_number":
        field = ctx["field"] if where == "(top level)" else f"{where}.{ctx['field']}"
        value = (got or {}).get(ctx["field"]) if isinstance(got, dict) else got
        shown = f"{str(value).lower()} (a boolean)" if isinstance(value, bool) else repr(value)
        return [f"{field}: must be {ctx['kind']}, got {shown}"]
    if kind == "value_error":
        # a section's validator names the field itself ("field: what is allowed, got
        # value"); a field's validator is located at the field and says only what is allowed
        message = str(ctx.get("error", error["msg"]))
        if where == "(top level)":
            return [message]
        names_field = re.match(r"[A-Za-z_][\w.]*: ", message) is not None
        return [f"{where}.{message}" if names_field else f"{where}: {message}"]
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
              "less_than_equal": "<="}
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return [f"{where}: must be {bounds[kind]} {limit}, got {got!r}"]
    broken = channel.PATHLOSS_MODELS.broken if loc[-1:] == ["pathloss"] else ALGORITHMS.broken
    if kind == "literal_error" and isinstance(got, str) and got in broken:
        return [f"{where}: {got!r} is not available: {broken[got]}"]
    if kind == "literal_error":
        expected = str(ctx.get("expected"))
        return [f"{where}: must be one of {expected}, got {got!r}{_did_you_mean(got, expected)}"]
    if kind == "union_tag_invalid":
        expected, tag = str(ctx.get("expected_tags")), ctx.get("tag")
        return [f"{where}: kind must be one of {expected}, got {tag!r}"
                f"{_did_you_mean(tag, expected)}"]
    if loc and loc[0] == "sweep" and len(loc) > 1:   # (pydantic names each member of the union)
        return [f"sweep.{loc[1]}: must be a list of values (e.g. [5, 10]) or named cases "
                f"({{case: {{dotted.key: value, ...}}, ...}}), got {got!r}"]
    return [f"{where}: {error['msg'].lower()}, got {got!r}"]


def _did_you_mean(got: Any, expected: str) -> str:
    """'; did you mean 'x'?' when `got` is close to one of the quoted names in `expected`."""
    names = re.findall(r"'([^']*)'", expected)
    close = difflib.get_close_matches(str(got), names, n=1) if isinstance(got, str) else []
    return f"; did you mean {close[0]!r}?" if close else ""


def validate_scenario(document: Any, source: str | Path = "<scenario>") -> Scenario:
    """A Scenario from a parsed YAML document, or a ScenarioError listing every problem."""
    if not isinstance(document, dict):
        raise ScenarioError(source, [f"(top level): must be a mapping of keys, got "
                                     f"{type(document).__name__}"])
    try:
        scenario = scenario_model().model_validate(document)
    except ValidationError as exc:
        described = dict.fromkeys(p for e in exc.errors() for p in _describe(e))
        raise ScenarioError(source, list(described) + deployed_note(document, described)) \
            from None
    problems = cross_field_problems(scenario)
    if problems:
        raise ScenarioError(source, problems)
    return scenario


def deployed_note(document: dict, problems: Iterable[str]) -> list[str]:
    """Where a named deployment set the network's keys and a problem lies among them: a line
    saying that a value the user did not write is the deployment's (config.deployments)."""
    network = document.get("network")
    name = network.get("deployment") if isinstance(network, dict) else None
    if not isinstance(name, str) or name not in DEPLOYMENTS or not any(
            p.startswith("network.") and not p.startswith("network.deployment:")
            for p in problems):
        return []
    return [f"(network.deployment: {name} sets the network keys the scenario leaves out, and "
            f"given with --set replaces the file's: a value above that you did not write is "
            f"the deployment's; docs/model/network.md lists them)"]


def load_scenario(path: str | Path, overrides: Sequence[str] = ()) -> Scenario:
    """Read, override and validate a scenario file."""
    return validate_scenario(read_document(path, overrides), source=Path(path))


def read_document(path: str | Path, overrides: Sequence[str] = ()) -> Any:
    """A scenario file's parsed document with `overrides` ("dotted.key=value") applied, not
    yet validated; ScenarioError for a file that is missing or not YAML."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p.name for p in path.glob("*.yaml"))[:5]
        listed = f" (it holds {', '.join(files)}{', ...' if len(files) == 5 else ''})" \
            if files else ""
        raise ScenarioError(path, [f"{str(path)!r} is a folder, not a scenario file; give "
                                   f"one YAML file{listed}"])
    if not path.is_file():
        raise ScenarioError(path, [f"scenario file not found: {str(path)!r}"])
    try:
        document = parse_yaml(path.read_text())
    except DuplicateKey as exc:
        raise ScenarioError(path, [str(exc)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = f"YAML syntax error: {where}{getattr(exc, 'problem', exc)}"
        raise ScenarioError(path, [problem]) from None
    if document is None:
        document = {}
    if isinstance(document, dict):
        document = apply_overrides(document, overrides)
    return document


def scenario_yaml(scenario: Scenario) -> str:
    """The resolved scenario (every default filled in) as YAML."""
    return yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False)


def training_identity(scenario: Scenario) -> dict:
    """What decides a run's numbers: the resolved scenario without `report` (accuracy targets
    only change what is computed from the result files afterwards) and without the sections
    of the algorithms it does not run (a run of FedProx does not change with
    splitfed_v1.optimizer_state)."""
    document = scenario.model_dump(mode="json")
    document.pop("report", None)
    for name in ALGORITHMS:
        if name not in scenario.algorithms:
            document.pop(name, None)
    return document



def differing_keys(a: dict, b: dict, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two nested documents (two identities)."""
    keys = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            keys.extend(differing_keys(x, y, f"{prefix}{key}."))
        elif x != y:
            keys.append(f"{prefix}{key}")
    return keys


#: sections that change only when things happen, never what is learned (for an algorithm
#: whose selection does not look at the network): cells differing only here are re-timed
TIMING_SECTIONS = ("network", "compute")


def learning_identity(scenario: Scenario) -> dict:
    """What decides what a run learns: `training_identity` without the timing sections, the
    study's name and the device. Two runs with equal learning identities learn the same
    trajectory, up to the floating-point order of the device that trained it: a re-timing
    takes the trajectory as its record has it, so a run trained on a GPU re-times a cell of
    `device: auto` or `cpu` (as the torch thread count never counted either)."""
    document = training_identity(scenario)
    for key in (*TIMING_SECTIONS, "name", "device"):
        document.pop(key, None)
    return document
