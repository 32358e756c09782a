"""Algorithm hyper-parameters: the scenario section of each algorithm, under its name."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError


def number_kind(annotation: Any) -> str | None:
    """'a whole number' or 'a number' when `annotation` (a field's type) takes numbers and
    not booleans, else None."""
    found = {annotation} | set(get_args(annotation))
    for inner in list(found):
        found |= set(get_args(inner))      # (Annotated[float, Field(gt=0)] | None)
    if bool in found or Any in found:
        return None
    return "a number" if float in found else "a whole number" if int in found else None


class Strict(BaseModel):
    """A scenario section (scala_netsim.config.sections, and each algorithm's): unknown keys
    refused, and a boolean never taken for a number (pydantic would read `true` as 1)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, document: Any) -> Any:
        if isinstance(document, dict):
            for name, value in document.items():
                field = cls.model_fields.get(name) if isinstance(name, str) else None
                kind = None if field is None else number_kind(field.annotation)
                if isinstance(value, bool) and kind is not None:
                    raise PydanticCustomError("boolean_for_number", "{field} must be {kind}",
                                              {"field": name, "kind": kind})
                if (field is not None and field.annotation is bool
                        and not isinstance(value, bool)):
                    raise PydanticCustomError("boolean_for_number", "{field} must be {kind}",
                                              {"field": name, "kind": "true or false"})
        return document


class AlgorithmConfig(Strict):
    """An algorithm's scenario section (its hyper-parameters). Subclasses declare fields with
    defaults; `problems` may add checks that need the whole scenario."""

    def problems(self, scenario: Any) -> list[str]:
        """Problems with this section given the rest of the (valid) scenario, each
        'section.field: what is allowed, got value' (the section is the algorithm's name)."""
        return []

    def keeps_optimizer_state(self) -> bool:
        """Do the clients' optimisers (and the server copies' of a per-client server) keep
        their state across a client's rounds? (`optimizer_state`; no, where the section has
        no such key)"""
        return False

    def sequential_server(self) -> bool:
        """Does the server take one client's local iterations as a block, clients in id
        order, instead of every step in arrival order? (`server_order`; no, where the
        section has no such key)"""
        return False


#: per_round: a client's optimiser (its momentum) starts fresh with every round's model, and
#: so does a per-client server copy's; persistent: each client keeps its optimiser's state
#: from one of its rounds to its next, as does the server copy that serves it
OptimizerState = Literal["per_round", "persistent"]

#: arrival: the server steps on each upload as it arrives (first come, first served, clients
#: interleaved); sequential: one client's T steps as a block, then the next client's, in
#: client-id order (Thapa et al.'s reference SplitFedV2 loop), the others' uploads waiting
ServerOrder = Literal["arrival", "sequential"]


class OptimizerStateConfig(AlgorithmConfig):
    """The section of a split or federated baseline: whether client optimisers keep their
    state across rounds. per_round is the default, what every run kept before the option
    existed trained with."""

    optimizer_state: OptimizerState = "per_round"

    def keeps_optimizer_state(self) -> bool:
        return self.optimizer_state == "persistent"


class SplitFedV2Config(OptimizerStateConfig):
    """SplitFedV2: the order in which its one shared server model takes the clients' steps
    (its optimiser always keeps its state)."""

    server_order: ServerOrder = "arrival"

    def sequential_server(self) -> bool:
        return self.server_order == "sequential"


class SFLLocalLossConfig(SplitFedV2Config):
    """SFL with local loss (Han et al. 2021, who leave the server's side open): one shared
    server part stepped in `server_order` (its optimiser kept across rounds), or one copy
    per client averaged every round, |D_k|-weighted, as SplitFedV1's (`per_client`)."""

    server: Literal["shared", "per_client"] = "shared"


class FedProxConfig(OptimizerStateConfig):
    mu: float = Field(default=0.01, ge=0)          # [choice] literature uses 0.001..1


class FedAsyncConfig(AlgorithmConfig):
    """FedAsync (Xie et al. 2019): w <- (1 - a s(tau)) w + a s(tau) w_k with the polynomial
    staleness function s(tau) = (tau + 1)^(-exponent)."""

    alpha: float = Field(default=0.6, gt=0, le=1)               # a [paper's experiments]
    staleness_exponent: float = Field(default=0.5, ge=0)        # [paper's choice]


class FedBuffConfig(AlgorithmConfig):
    """FedBuff (Nguyen et al. 2022): the server buffers K client deltas and applies their mean
    times a server learning rate when the buffer is full."""

    buffer_size: int = Field(default=5, ge=1)                   # K [choice]
    server_lr: float = Field(default=1.0, gt=0)                 # [paper's default]


class AsyncSFLConfig(FedAsyncConfig):
    """async_sfl: client-side models mixed in FedAsync's way, w_c <- (1 - a s(tau)) w_c +
    a s(tau) w_c,k, with the polynomial staleness function (the same defaults)."""


class GASConfig(AlgorithmConfig):
    """GAS (Yang and Liu 2024, arXiv 2409.01251; scala_netsim.algorithms.gas). null: the
    authors' code's value, tied to training.concurrency Q."""

    activation_buffer: int | None = Field(default=None, ge=1)   # uploads per server step [code: Q]
    model_buffer: int | None = Field(default=None, ge=1)        # models per version [code: Q]
    samples_per_label: int | None = Field(default=None, ge=1)   # labels topped up to [code: B/Q]
    covariance: Literal["diagonal", "full"] = "diagonal"        # [choice] code: full


class FedLCConfig(OptimizerStateConfig):
    tau: float = Field(default=1.0, gt=0)          # [choice] the FedLC paper does not state it


class FedDynConfig(OptimizerStateConfig):
    alpha: float = Field(default=0.01, gt=0)       # [code]


class FedDecorrConfig(OptimizerStateConfig):
    coef: float = Field(default=0.1, ge=0)         # [code]


class FedConcatConfig(AlgorithmConfig):
    clusters: int = Field(default=5, ge=1)         # K = 5 [FedConcat paper]
    encoder_round_fraction: float = Field(default=0.8, gt=0, lt=1)  # [choice]

    def problems(self, scenario: Any) -> list[str]:
        if self.clusters > scenario.data.num_clients:
            return [f"fedconcat.clusters: must be <= data.num_clients "
                    f"({scenario.data.num_clients}), got {self.clusters}"]
        return []


class FedCBSConfig(OptimizerStateConfig):
    trials: int = Field(default=3, ge=1)           # [choice] sets drawn, the most balanced kept
    beta_start: float = Field(default=1.0, gt=0)   # [code] exponent rising 1 -> 10
    beta_end: float = Field(default=10.0, gt=0)


class ScalaPEConfig(OptimizerStateConfig):
    """SCALA-PE (journal section 5.7, mechanisms of ResSFL, Li et al. CVPR 2022)."""
    coef: float = Field(default=0.3, ge=0)                # [code] ResSFL's strength 0.3
    bottleneck_channels: int = Field(default=8, ge=1)     # [code] ResSFL's C8S1 (VGG-11 cut 2)
    bottleneck_stride: Literal[1, 2] = 1                  # [code]
    decoder_width: int = Field(default=64, ge=1)          # [code] ResSFL's simulated attacker C64


class SplitFedV3Config(OptimizerStateConfig):
    eval_clients: int = Field(default=10, ge=1)    # [choice] clients averaged in evaluation


#: the Flower strategies a scenario's `flower.strategy` names (flwr.serverapp.strategy)
FLOWER_STRATEGIES = ("FedAvg", "FedProx", "FedAvgM", "FedAdam", "FedYogi", "FedAdagrad",
                     "QFedAvg", "FedTrimmedAvg", "FedMedian", "Krum", "MultiKrum", "Bulyan")
#: flwr 1.42's other strategies, and why a run does not offer them (docs/guides/flower.md,
#: "What does not run")
FLOWER_NOT_OFFERED = dict.fromkeys(
    ("DifferentialPrivacyServerSideFixedClipping", "DifferentialPrivacyServerSideAdaptiveClipping",
     "DifferentialPrivacyClientSideFixedClipping", "DifferentialPrivacyClientSideAdaptiveClipping"),
    "the differential-privacy wrappers wrap a strategy (they are no subclass of FedAvg), draw "
    "their noise from NumPy's global generator and, client-side, need a clipping mod on the "
    "ClientApp") | dict.fromkeys(
    ("FedXgbBagging", "FedXgbCyclic"),
    "the XGBoost strategies exchange trees, not the arrays of a model")
#: what a scenario's `flower.options` may not set: the run sets them (its clients a round and
#: the nodes its network can reach; the package evaluates the global model itself)
FLOWER_RUN_OPTIONS = ("fraction_train", "fraction_evaluate", "min_train_nodes",
                      "min_evaluate_nodes", "min_available_nodes",
                      # the records' keys the package's clients write and read, and
                      # functions (no YAML value is one)
                      "weighted_by_key", "arrayrecord_key", "configrecord_key",
                      "train_loss_key", "train_metrics_aggr_fn", "evaluate_metrics_aggr_fn")
#: a round's config keys the run and the strategies set (not `flower.train_config`'s)
FLOWER_ROUND_CONFIG = {"local-steps": "the run (training.local_iters)",
                       "server-round": "flwr", "proximal-mu": "FedProx (its proximal_mu)"}
#: strategies that never aggregate below a number of clients a round for f malicious ones
#: (a x f + b; flwr's Bulyan only warns each round and keeps the model)
FLOWER_ROBUST_NEEDS = {"Bulyan": (4, 3)}


def imported(path: str) -> Any:
    """The attribute a user's "module:attribute" path names, imported as Python imports any
    module; ImportError saying where the module must be when it cannot be."""
    import importlib

    module, _, attribute = path.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as error:
        raise ImportError(f"cannot import {path!r}: {error} (the module must be on Python's "
                          f"path: run from its folder with python -m, or set PYTHONPATH)"
                          ) from error


class FlowerConfig(OptimizerStateConfig):
    """`algorithms: [flower]` (issue 65): a Flower strategy (flwr 1.42, the `[flower]` extra)
    aggregating the package's FedAvg clients, `options` its constructor's keywords."""

    # one of FLOWER_STRATEGIES, or a user's strategy by "module:Class" (a subclass of flwr's
    # FedAvg, as all twelve are: the run sets its fraction and minimum of clients a round)
    strategy: str = "FedAvg"
    options: dict[str, Any] = Field(default_factory=dict)
    # a user's own ClientApp (scala_netsim.flower.apps), each "module:attribute"; null: the
    # package's clients on the scenario's data and model
    client_app: str | None = None        # the flwr ClientApp
    initial_arrays: str | None = None    # a function -> the initial global model
    evaluate_fn: str | None = None       # Flower's evaluate_fn(server_round, arrays)
    run_config: dict[str, bool | int | float | str] = Field(default_factory=dict)
    # every round's train config, what a ServerApp passes Strategy.start as train_config
    # (beside the run's local-steps, flwr's server-round and FedProx's proximal-mu)
    train_config: dict[str, bool | int | float | str] = Field(default_factory=dict)

    def problems(self, scenario: Any) -> list[str]:
        import importlib.util
        import inspect

        if importlib.util.find_spec("flwr") is None:
            return ["flower: Flower is not installed: pip install -e '.[flower]' (flwr 1.42)"]
        from flwr.serverapp import strategy as strategies

        problems = self.app_problems(scenario)
        if problems:
            return problems
        if scenario.compression.models != "none":
            return [f"compression.models: a Flower strategy's messages travel as their arrays "
                    f"(no codec on them), got {scenario.compression.models!r}; allowed with "
                    f"algorithms: [flower]: 'none'"]
        taken = [key for key in self.options if key in FLOWER_RUN_OPTIONS]
        if taken:
            return [f"flower.options: {', '.join(taken)} are the run's (training."
                    f"participation, the clients its network reaches, the records its "
                    f"clients write), got {taken}"]
        try:
            cls = self.strategy_class()
        except (ImportError, AttributeError, ValueError) as error:
            return [f"flower.strategy: {error}"]
        if not (isinstance(cls, type) and issubclass(cls, strategies.FedAvg)):
            return [f"flower.strategy: {self.strategy!r} is not a subclass of flwr's FedAvg "
                    f"(the run sets its fraction and minimum of clients a round)"]
        parameters = inspect.signature(cls).parameters
        allowed = set(parameters)
        unknown = sorted(set(self.options) - allowed)
        if unknown and not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            return [f"flower.options: {self.strategy} takes "
                    f"{', '.join(sorted(allowed - set(FLOWER_RUN_OPTIONS)))}, got {unknown}"]
        try:   # the strategy's own checks of its values (QFedAvg's rate: training.lr's)
            defaults = ({"client_learning_rate": scenario.training.lr}
                        if issubclass(cls, strategies.QFedAvg) else {})
            cls(**{**defaults, **self.options})
        except (TypeError, ValueError) as error:
            return [f"flower.options: {self.strategy} refuses {self.options}: {error}"]
        robust = [n for n in FLOWER_ROBUST_NEEDS if issubclass(cls, getattr(strategies, n))]
        if robust:
            times, plus = FLOWER_ROBUST_NEEDS[robust[0]]
            f = int(self.options.get("num_malicious_nodes", 0))
            if scenario.num_selected < times * f + plus:
                return [f"flower.options.num_malicious_nodes: {self.strategy} needs at least "
                        f"{times} f + {plus} = {times * f + plus} clients a round for f = {f}, "
                        f"the run has {scenario.num_selected} (training.participation)"]
        return []

    def strategy_class(self) -> type:
        """The strategy's class: flwr's of that name, or a user's ("module:Class")."""
        from flwr.serverapp import strategy as strategies

        if ":" not in self.strategy:
            if self.strategy in FLOWER_NOT_OFFERED:
                raise ValueError(f"{self.strategy!r} does not run here: "
                                 f"{FLOWER_NOT_OFFERED[self.strategy]}; one of "
                                 f"{', '.join(FLOWER_STRATEGIES)} does, or a user's subclass "
                                 f"of FedAvg as module:Class")
            if self.strategy not in FLOWER_STRATEGIES:
                raise ValueError(f"one of {', '.join(FLOWER_STRATEGIES)}, or a user's strategy "
                                 f"as module:Class, got {self.strategy!r}")
            return getattr(strategies, self.strategy)
        return imported(self.strategy)

    def describe(self) -> str:
        """The run's header line: the strategy, and whose clients it aggregates."""
        options = f" {self.options}" if self.options else ""
        clients = ("the package's clients (the model and data above)"
                   if self.client_app is None else
                   f"the ClientApp {self.client_app} (its own model and data: the data line "
                   f"above only numbers its clients; accuracy from {self.evaluate_fn})")
        return f"strategy {self.strategy}{options} over {clients}"

    @property
    def user_strategy(self) -> bool:
        """Is the strategy a user's (by import path)?"""
        return ":" in self.strategy

    def app_problems(self, scenario: Any) -> list[str]:
        """A user's ClientApp: all three paths, each importable and of its kind; none of
        them without `client_app`; no timing-only run (its steps' costs are the app's)."""
        paths = {"client_app": self.client_app, "initial_arrays": self.initial_arrays,
                 "evaluate_fn": self.evaluate_fn}
        if self.client_app is None:
            given = [f"flower.{key}" for key, value in paths.items() if value is not None]
            given += [f"flower.{key}" for key in ("run_config", "train_config")
                      if getattr(self, key)]
            return [f"{', '.join(given)}: only with flower.client_app (a user's ClientApp)"
                    ] if given else []
        problems = [f"flower.{key}: a user's ClientApp needs it (module:attribute)"
                    for key, value in paths.items() if value is None]
        taken = sorted(set(self.train_config) & set(FLOWER_ROUND_CONFIG))
        if taken:
            problems.append(f"flower.train_config: {taken} are set each round by "
                            f"{', '.join(FLOWER_ROUND_CONFIG[k] for k in taken)}; got "
                            f"{self.train_config}")
        if scenario.timing_only:
            problems.append("timing_only: a user's ClientApp (flower.client_app) decides its "
                            "own steps' costs; allowed: false")
        if problems:
            return problems
        from flwr.clientapp import ClientApp

        for key, path in paths.items():
            if ":" not in str(path):
                problems.append(f"flower.{key}: module:attribute expected, got {path!r}")
                continue
            try:
                found = imported(str(path))
            except ImportError as error:
                problems.append(f"flower.{key}: {error}")
                continue
            kind_ok = isinstance(found, ClientApp) if key == "client_app" else callable(found)
            if not kind_ok:
                problems.append(f"flower.{key}: {path!r} is a {type(found).__name__}, not "
                                f"{'a flwr ClientApp' if key == 'client_app' else 'a function'}")
        return problems
