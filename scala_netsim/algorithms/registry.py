"""Every algorithm by its scenario name: the one list of them.

An entry ties together the trainer class (the learning math), the protocol (its communication
pattern, timed by the engine), the client-selection policy and the pydantic model of its
scenario section (its hyper-parameters, under the algorithm's name). The scenario schema is
derived from this registry: the allowed `algorithms` and every algorithm's section.

Algorithms from other packages register themselves through the entry-point group
`scala_netsim.algorithms`: each entry point names an `AlgorithmSpec` (or a list of them); they
are loaded when this module is first imported, in every process (worker processes and Ray
tasks too). A script may also call `register(...)` before it validates a scenario.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from scala_netsim.algorithms.config import (
    AlgorithmConfig,
    FedCBSConfig,
    FedConcatConfig,
    FedDecorrConfig,
    FedDynConfig,
    FedLCConfig,
    FedProxConfig,
    ScalaPEConfig,
    SplitFedV3Config,
)
from scala_netsim.algorithms.federated import (
    FedAvg,
    FedConcat,
    FedDecorr,
    FedDyn,
    FedLA,
    FedLC,
    FedProx,
)
from scala_netsim.algorithms.scala import CASFL, SCALA, SCALAPE
from scala_netsim.algorithms.splitfed import (
    LLASFL,
    SFLLocalLoss,
    SplitFedV1,
    SplitFedV2,
    SplitFedV3,
)
from scala_netsim.engine import (
    ConcatSplitProtocol,
    FederatedProtocol,
    KeptModelSplitProtocol,
    LocalLossProtocol,
    PerClientSplitProtocol,
    Protocol,
)
from scala_netsim.selection import ClientSelector, FedCBSSelector, RandomSelector

ENTRY_POINT_GROUP = "scala_netsim.algorithms"


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm: `trainer` (a class with `from_setup(setup, config)` implementing the
    trainer contract of `protocol`), `protocol`, `selector` (built by its
    `from_label_counts(label_counts, config)`) and `config` (its scenario section, or None)."""

    name: str
    trainer: type
    protocol: type[Protocol]
    description: str
    selector: type[ClientSelector] = RandomSelector
    config: type[AlgorithmConfig] | None = None

    def section(self, scenario: Any) -> AlgorithmConfig | None:
        """This algorithm's section of `scenario` (None when it has no hyper-parameters)."""
        return getattr(scenario, self.name) if self.config is not None else None


class Registry(Mapping):
    """Algorithm name -> AlgorithmSpec, in registration order."""

    def __init__(self) -> None:
        self._specs: dict[str, AlgorithmSpec] = {}
        self.version = 0   # bumped by every registration (the scenario schema follows it)

    def register(self, spec: AlgorithmSpec) -> AlgorithmSpec:
        """Add `spec`; its trainer must implement the contract its protocol calls."""
        if not spec.name.isidentifier():
            raise ValueError(f"algorithm name must be a Python identifier, got {spec.name!r}")
        if spec.name in self._specs and self._specs[spec.name] != spec:
            raise ValueError(f"algorithm {spec.name!r} is registered already")
        contract = spec.protocol.trainer_contract
        if not issubclass(spec.trainer, contract):
            raise TypeError(f"algorithm {spec.name!r}: {spec.trainer.__name__} must implement "
                            f"{contract.__name__}, the contract of {spec.protocol.__name__}")
        self._specs[spec.name] = spec
        self.version += 1
        return spec

    def __getitem__(self, name: str) -> AlgorithmSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


ALGORITHMS = Registry()
register = ALGORITHMS.register

for _spec in (
    AlgorithmSpec("scala", SCALA, ConcatSplitProtocol,
                  "concatenated activations + logit adjustment (SCALA)"),
    AlgorithmSpec("scala_pe", SCALAPE, ConcatSplitProtocol,
                  "SCALA with a bottleneck and a simulated inversion model (SCALA-PE)",
                  config=ScalaPEConfig),
    AlgorithmSpec("ca_sfl", CASFL, ConcatSplitProtocol,
                  "concatenated activations, plain cross-entropy (Minibatch-SFL)"),
    AlgorithmSpec("splitfed_v1", SplitFedV1, PerClientSplitProtocol,
                  "a server copy per client, copies averaged"),
    AlgorithmSpec("splitfed_v2", SplitFedV2, PerClientSplitProtocol,
                  "one shared server model, served in arrival order"),
    AlgorithmSpec("splitfed_v3", SplitFedV3, KeptModelSplitProtocol,
                  "server copies averaged, client models kept per client",
                  config=SplitFedV3Config),
    AlgorithmSpec("lla_sfl", LLASFL, PerClientSplitProtocol,
                  "SplitFedV1 with local logit adjustment"),
    AlgorithmSpec("cs_sfl", SplitFedV1, PerClientSplitProtocol,
                  "SplitFedV1 with Fed-CBS class-balanced selection (our reading)",
                  selector=FedCBSSelector, config=FedCBSConfig),
    AlgorithmSpec("sfl_local_loss", SFLLocalLoss, LocalLossProtocol,
                  "local auxiliary loss, no gradients sent back"),
    AlgorithmSpec("fedavg", FedAvg, FederatedProtocol, "FedAvg"),
    AlgorithmSpec("fedprox", FedProx, FederatedProtocol, "FedAvg + proximal term",
                  config=FedProxConfig),
    AlgorithmSpec("fedlc", FedLC, FederatedProtocol, "FedAvg with logit calibration",
                  config=FedLCConfig),
    AlgorithmSpec("fedla", FedLA, FederatedProtocol, "FedAvg with local logit adjustment"),
    AlgorithmSpec("feddyn", FedDyn, FederatedProtocol, "FedAvg with dynamic regulariser",
                  config=FedDynConfig),
    AlgorithmSpec("feddecorr", FedDecorr, FederatedProtocol,
                  "FedAvg + feature decorrelation penalty", config=FedDecorrConfig),
    AlgorithmSpec("fedconcat", FedConcat, FederatedProtocol,
                  "clustered FedAvg, concatenated encoders + shared classifier",
                  config=FedConcatConfig),
    AlgorithmSpec("fedcbs", FedAvg, FederatedProtocol,
                  "FedAvg with Fed-CBS class-balanced selection", selector=FedCBSSelector,
                  config=FedCBSConfig),
):
    register(_spec)


def load_plugins() -> list[str]:
    """Register the algorithms of installed packages (entry-point group
    `scala_netsim.algorithms`). -> their names."""
    names = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        loaded = entry.load()
        for spec in loaded if isinstance(loaded, (list, tuple)) else [loaded]:
            if not isinstance(spec, AlgorithmSpec):
                raise TypeError(f"entry point {entry.name} = {entry.value} of group "
                                f"{ENTRY_POINT_GROUP} must name an AlgorithmSpec, got "
                                f"{type(spec).__name__}")
            names.append(register(spec).name)
    return names


load_plugins()
