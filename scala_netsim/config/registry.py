"""Every algorithm by its scenario name: the one list of them.

An entry ties together the trainer class (the learning math), the protocol (its communication
pattern, timed by the engine), the client-selection policy, the pydantic model of its scenario
section (its hyper-parameters, under the algorithm's name) and its traits: what the rest of the
package needs to know about it (does the server wait for every client, do activations or
gradients cross the air, can it be attacked, timed without training, re-timed, is it
asynchronous), as data. The scenario schema is derived from this registry: the allowed
`algorithms`, every algorithm's section, and the checks that depend on traits.

The built-in entries name their trainer and protocol by import path ("module:Class") and are
imported on first use, so that reading the registry (validating a scenario) loads no torch; an
entry may also give the classes themselves, and then its traits may be left out (they are read
from the classes). Either way the classes are checked against the traits and the protocol's
trainer contract when they are first resolved.

Algorithms from other packages register themselves through the entry-point group
`scala_netsim.algorithms`: each entry point names an `AlgorithmSpec` (or a list of them); they
are loaded when this module is first imported, in every process (worker processes and Ray
tasks too). A script may also call `register(...)` before it validates a scenario.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channel.plugins import load_entry_points
from scala_netsim.algorithms.config import (
    AlgorithmConfig,
    AsyncSFLConfig,
    FedAsyncConfig,
    FedBuffConfig,
    FedCBSConfig,
    FedConcatConfig,
    FedDecorrConfig,
    FedDynConfig,
    FedLCConfig,
    FedProxConfig,
    FlowerConfig,
    GASConfig,
    OptimizerStateConfig,
    ScalaPEConfig,
    SFLLocalLossConfig,
    SplitFedV2Config,
    SplitFedV3Config,
)
from scala_netsim.algorithms.selection import ClientSelector, FedCBSSelector, RandomSelector

if TYPE_CHECKING:
    from scala_netsim.learn.contract import Trainer
    from scala_netsim.sim.stages import ClientStages

ENTRY_POINT_GROUP = "scala_netsim.algorithms"


@dataclass(frozen=True)
class Traits:
    """What an algorithm does, as configuration, sweeps, the CLI and the estimates need to know
    it (without importing its classes)."""

    barrier: bool = False       # the server waits for every selected client's step
    activations: bool = False   # clients upload cut-layer activations
    gradients: bool = False     # the server sends the activations' gradients down
    global_client_model: bool = True   # one client-side model for all (not one kept per client)
    timeable: bool = True       # message sizes and FLOPs fixed per step kind: timing-only runs
    retimeable: bool = True     # a training's record can be re-timed under another cell
    asynchronous: bool = False  # clients start when others finish; the clock decides the model

    @property
    def attackable(self) -> bool:
        """The inversion attack needs a global client-side model whose activations go up."""
        return self.activations and self.global_client_model

    def why_not_attackable(self, name: str) -> str | None:
        """Why `name`'s runs cannot be attacked, or None."""
        if not self.activations:
            return f"{name} sends no activations (its clients send whole models)"
        if not self.global_client_model:
            return f"{name} has no global client-side model (each client keeps its own)"
        return None


# the traits of the built-in protocols (checked against the classes when they are resolved)
CONCATENATED = Traits(barrier=True, activations=True, gradients=True)
PER_CLIENT = Traits(activations=True, gradients=True)
KEPT_MODELS = Traits(activations=True, gradients=True, global_client_model=False)
LOCAL_LOSS = Traits(activations=True)
FEDERATED = Traits()
# the clock decides what is learned: never re-timed, never timed without training
ASYNCHRONOUS_FEDERATED = Traits(timeable=False, retimeable=False, asynchronous=True)
ASYNCHRONOUS_SPLIT = Traits(activations=True, gradients=True, timeable=False, retimeable=False,
                            asynchronous=True)


def traits_of(protocol: type[ClientStages[Any]], trainer: type[Trainer]) -> Traits:
    """The traits that `protocol` and `trainer` declare as class flags."""
    return Traits(barrier=protocol.has_barrier, activations=protocol.sends_activations,
                  gradients=protocol.sends_gradients,
                  global_client_model=not protocol.keeps_client_models,
                  timeable=trainer.fixed_step_costs, retimeable=not protocol.asynchronous,
                  asynchronous=protocol.asynchronous)


def resolve(ref: type | str) -> type:
    """A class, or the class a "package.module:Class" path names (imported)."""
    if isinstance(ref, type):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


class AlgorithmSpec:
    """One algorithm: `trainer` (a class with `from_setup(setup, config)` implementing the
    trainer contract of `protocol`), `protocol`, `selector` (built by its
    `from_label_counts(label_counts, config)`), `config` (its scenario section, or None) and
    `traits` (None: read from the classes). `trainer` and `protocol` may be classes or
    "module:Class" paths, imported on first use; `traits` is then required."""

    def __init__(self, name: str, trainer: type | str, protocol: type[ClientStages[Any]] | str,
                 description: str, selector: type[ClientSelector] = RandomSelector,
                 config: type[AlgorithmConfig] | None = None,
                 traits: Traits | None = None) -> None:
        if traits is None:
            if isinstance(trainer, str) or isinstance(protocol, str):
                raise TypeError(f"algorithm {name!r}: traits are required when the trainer "
                                f"or the protocol is named by path")
            check_contract(name, trainer, protocol)   # (its traits are read from it next)
            traits = traits_of(protocol, trainer)
        self.name, self.description, self.selector = name, description, selector
        self.config, self.traits = config, traits
        self._refs = (trainer, protocol)
        self._classes: tuple[type[Trainer], type[ClientStages[Any]]] | None = None

    def _key(self) -> tuple:
        return (self.name, *self._refs, self.description, self.selector, self.config,
                self.traits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AlgorithmSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"AlgorithmSpec({self.name!r}, {self.description!r}, {self.traits})"

    def classes(self) -> tuple[type[Trainer], type[ClientStages[Any]]]:
        """(trainer, protocol), imported and checked on first use: the trainer implements
        the protocol's contract and the classes' flags agree with the traits."""
        if self._classes is None:
            trainer, protocol = (resolve(ref) for ref in self._refs)
            check_classes(self.name, trainer, protocol, self.traits)
            self._classes = trainer, protocol
        return self._classes

    @property
    def trainer(self) -> type[Trainer]:
        return self.classes()[0]

    @property
    def protocol(self) -> type[ClientStages[Any]]:
        return self.classes()[1]

    def section(self, scenario: Any) -> AlgorithmConfig | None:
        """This algorithm's section of `scenario` (None when it has no hyper-parameters)."""
        return getattr(scenario, self.name) if self.config is not None else None


def check_contract(name: str, trainer: type, protocol: type) -> None:
    """Refuse a protocol that is not one, or a trainer that does not implement its
    protocol's contract."""
    from scala_netsim.sim.stages import ClientStages

    if not (isinstance(protocol, type) and issubclass(protocol, ClientStages)):
        raise TypeError(f"algorithm {name!r}: {protocol!r} is not a protocol (a subclass of "
                        f"Protocol or AsyncProtocol: scala_netsim.sim)")
    contract = protocol.trainer_contract
    if not (isinstance(trainer, type) and issubclass(trainer, contract)):
        raise TypeError(f"algorithm {name!r}: {getattr(trainer, '__name__', trainer)} must "
                        f"implement {contract.__name__}, the contract of {protocol.__name__}")


def check_classes(name: str, trainer: type[Trainer], protocol: type[ClientStages[Any]],
                  traits: Traits) -> None:
    """Refuse a trainer that does not implement its protocol's contract, or classes whose
    flags contradict the declared traits."""
    check_contract(name, trainer, protocol)
    declared = traits_of(protocol, trainer)
    wrong = [f"{f.name}={getattr(traits, f.name)} (the classes say "
             f"{getattr(declared, f.name)})" for f in dataclasses.fields(Traits)
             if f.name in ("barrier", "activations", "gradients", "global_client_model",
                           "timeable", "asynchronous")
             and getattr(traits, f.name) != getattr(declared, f.name)]
    if wrong:
        raise TypeError(f"algorithm {name!r}: traits disagree with {trainer.__name__} and "
                        f"{protocol.__name__}: {', '.join(wrong)}")


class Registry(Mapping):
    """Algorithm name -> AlgorithmSpec, in registration order. The installed packages'
    algorithms (entry-point group `scala_netsim.algorithms`) are loaded when the registry is
    first read, not when this module is imported: a plugin module imports this module to
    build its spec, so importing the plugin directly (a test, a notebook) must not load the
    half-imported plugin through its entry point. A plugin that cannot be loaded is named,
    and only a scenario that asks for it is refused (`broken`)."""

    def __init__(self) -> None:
        self._specs: dict[str, AlgorithmSpec] = {}
        self._version = 0   # bumped by every registration (the scenario schema follows it)
        self._plugins_loaded = False
        #: entry-point name -> why it could not be loaded
        self.broken: dict[str, str] = {}
        #: names registered by a call in this process after the built-ins, not through an
        #: entry point: worker processes and Ray tasks, which do not run that call, lack them
        self.runtime_only: set[str] = set()
        self.sealed = False   # (set once the built-ins are registered)

    def _with_plugins(self) -> dict[str, AlgorithmSpec]:
        if not self._plugins_loaded:
            self._plugins_loaded = True     # (before: loading reads the registry)
            load_plugins(self)
        return self._specs

    @property
    def version(self) -> int:
        self._with_plugins()
        return self._version

    def register(self, spec: AlgorithmSpec, plugin: bool = False) -> AlgorithmSpec:
        """Add `spec`; a trainer given as a class is checked against its protocol now.
        `plugin`: registered from an entry point (every process loads it)."""
        if not spec.name.isidentifier():
            raise ValueError(f"algorithm name must be a Python identifier, got {spec.name!r}")
        if spec.name in self._specs and self._specs[spec.name] != spec:
            raise ValueError(f"algorithm {spec.name!r} is registered already")
        if not any(isinstance(ref, str) for ref in spec._refs):
            spec.classes()
        self._specs[spec.name] = spec
        self._version += 1
        if self.sealed and not plugin:
            self.runtime_only.add(spec.name)
        return spec

    def __getitem__(self, name: str) -> AlgorithmSpec:
        return self._with_plugins()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._with_plugins())

    def __len__(self) -> int:
        return len(self._with_plugins())

    def with_trait(self, trait: str) -> list[str]:
        """The names of the algorithms with `trait` (a Traits field or property) true."""
        return [name for name, spec in self._with_plugins().items()
                if getattr(spec.traits, trait)]


ALGORITHMS = Registry()
register = ALGORITHMS.register

_ENGINE = "scala_netsim.sim.protocols:"
CONCAT = (_ENGINE + "ConcatSplitProtocol", CONCATENATED)
PER = (_ENGINE + "PerClientSplitProtocol", PER_CLIENT)
KEPT = (_ENGINE + "KeptModelSplitProtocol", KEPT_MODELS)
LOCAL = (_ENGINE + "LocalLossProtocol", LOCAL_LOSS)
FED = (_ENGINE + "FederatedProtocol", FEDERATED)
ASYNC_FED = ("scala_netsim.sim.async_protocols:AsyncFederatedProtocol", ASYNCHRONOUS_FEDERATED)
ASYNC_SPLIT = ("scala_netsim.sim.async_protocols:AsyncSplitProtocol", ASYNCHRONOUS_SPLIT)


def _builtin(name: str, trainer: str, protocol: tuple[str, Traits], description: str,
             **kwargs: Any) -> AlgorithmSpec:
    """A built-in entry: its trainer under scala_netsim.algorithms, its protocol's traits
    (unless `traits` says otherwise)."""
    path, traits = protocol
    return AlgorithmSpec(name, "scala_netsim.algorithms." + trainer, path, description,
                         traits=kwargs.pop("traits", traits), **kwargs)


for _spec in (
    _builtin("scala", "scala:SCALA", CONCAT,
             "concatenated activations + logit adjustment (SCALA)", config=OptimizerStateConfig),
    _builtin("scala_pe", "scala:SCALAPE", CONCAT,
             "SCALA with a bottleneck and a simulated inversion model (SCALA-PE)",
             config=ScalaPEConfig),
    _builtin("ca_sfl", "scala:CASFL", CONCAT,
             "concatenated activations, plain cross-entropy (Minibatch-SFL)",
             config=OptimizerStateConfig),
    _builtin("splitfed_v1", "splitfed:SplitFedV1", PER,
             "a server copy per client, copies averaged", config=OptimizerStateConfig),
    _builtin("splitfed_v2", "splitfed:SplitFedV2", PER,
             "one shared server model, served in arrival order or client by client",
             config=SplitFedV2Config),
    _builtin("splitfed_v3", "splitfed:SplitFedV3", KEPT,
             "server copies averaged, client models kept per client", config=SplitFedV3Config),
    _builtin("lla_sfl", "splitfed:LLASFL", PER, "SplitFedV1 with local logit adjustment",
             config=OptimizerStateConfig),
    _builtin("cs_sfl", "splitfed:SplitFedV1", PER,
             "SplitFedV1 with Fed-CBS class-balanced selection (our reading)",
             selector=FedCBSSelector, config=FedCBSConfig),
    _builtin("sfl_local_loss", "splitfed:SFLLocalLoss", LOCAL,
             "local auxiliary loss, no gradients sent back", config=SFLLocalLossConfig),
    _builtin("fedavg", "federated:FedAvg", FED, "FedAvg", config=OptimizerStateConfig),
    _builtin("fedprox", "federated:FedProx", FED, "FedAvg + proximal term", config=FedProxConfig),
    _builtin("fedlc", "federated:FedLC", FED, "FedAvg with logit calibration",
             config=FedLCConfig),
    _builtin("fedla", "federated:FedLA", FED, "FedAvg with local logit adjustment",
             config=OptimizerStateConfig),
    _builtin("feddyn", "federated:FedDyn", FED, "FedAvg with dynamic regulariser",
             config=FedDynConfig),
    _builtin("feddecorr", "federated:FedDecorr", FED, "FedAvg + feature decorrelation penalty",
             config=FedDecorrConfig),
    # its messages change size with the clustering: no timing-only runs
    _builtin("fedconcat", "federated:FedConcat", FED,
             "clustered FedAvg, concatenated encoders + shared classifier",
             config=FedConcatConfig, traits=dataclasses.replace(FEDERATED, timeable=False)),
    _builtin("fedcbs", "federated:FedAvg", FED, "FedAvg with Fed-CBS class-balanced selection",
             selector=FedCBSSelector, config=FedCBSConfig),
    _builtin("fedasync", "async_trainers:FedAsync", ASYNC_FED,
             "asynchronous FL, each upload mixed in on arrival, staleness-weighted (FedAsync)",
             config=FedAsyncConfig),
    _builtin("fedbuff", "async_trainers:FedBuff", ASYNC_FED,
             "asynchronous FL, K buffered deltas applied as their mean (FedBuff)",
             config=FedBuffConfig),
    _builtin("async_sfl", "async_trainers:AsyncSFL", ASYNC_SPLIT,
             "asynchronous split learning, server stepped on arrival, FedAsync-mixed clients",
             config=AsyncSFLConfig),
    _builtin("gas", "gas:GAS", ASYNC_SPLIT,
             "asynchronous split learning with generated activations rebalancing labels (GAS)",
             config=GASConfig),
    # Flower's strategies over the package's FedAvg clients (issue 65; the [flower] extra)
    AlgorithmSpec("flower", "scala_netsim.flower.trainer:FlowerFedAvg",
                  "scala_netsim.flower.protocol:GridProtocol",
                  "a Flower strategy (flwr) over FedAvg clients", config=FlowerConfig,
                  traits=FED[1]),
):
    register(_spec)
ALGORITHMS.sealed = True


def load_plugins(registry: Registry) -> list[str]:
    """Register the algorithms of installed packages (entry-point group
    `scala_netsim.algorithms`) in `registry`. -> their names. An entry point that cannot be
    loaded (its import fails, it names no AlgorithmSpec, the registry refuses it) is kept in
    `registry.broken` with the reason, and a warning names it; the other algorithms work."""
    names: list[str] = []

    def add(loaded: Any) -> None:
        specs = loaded if isinstance(loaded, (list, tuple)) else [loaded]
        for spec in specs:
            if not isinstance(spec, AlgorithmSpec):
                raise TypeError(f"it must name an AlgorithmSpec, got {type(spec).__name__}")
        names.extend(registry.register(spec, plugin=True).name for spec in specs)

    registry.broken.update(load_entry_points(ENTRY_POINT_GROUP, "algorithm", add))
    return names
