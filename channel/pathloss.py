"""Path-loss models. Each maps a distance in metres to a loss in dB.

A scenario names its model (`network.pathloss`) from `PATHLOSS_MODELS`: the built-in ones and
those of installed packages (entry-point group `scala_netsim.pathloss`, each entry naming a
`PathLossModel` subclass), loaded when the registry is first read. A model is built for a
scenario by `from_network(network)`, which gives it the scenario's radio settings (its
carrier frequency, `network.carrier_frequency_hz`)."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any, ClassVar

import numpy as np

ENTRY_POINT_GROUP = "scala_netsim.pathloss"


class PathLossModel(ABC):
    """Distance (m) -> path loss (dB); larger means weaker signal."""

    name: ClassVar[str]
    #: the carrier frequencies (Hz, low and high) the model is defined for; None: any
    carrier_range_hz: ClassVar[tuple[float, float] | None] = None

    @classmethod
    def from_network(cls, network: Any) -> PathLossModel:
        """The model for a scenario's `network` section. The default takes no setting; a
        model that needs one (the carrier frequency) overrides this."""
        return cls()

    @abstractmethod
    def pathloss_db(self, distance_m: np.ndarray | float) -> np.ndarray:
        """Path loss in dB at `distance_m` (scalar or array)."""

    def gain_linear(self, distance_m: np.ndarray | float) -> np.ndarray:
        """Channel power gain g = 10^(-PL/10)."""
        return np.power(10.0, -np.asarray(self.pathloss_db(distance_m)) / 10.0)


class Macro3gpp36814(PathLossModel):
    """3GPP TR 36.814 macro-cell path loss, Table A.2.1.1.2-3 (2 GHz carrier):
    PL(d) = 128.1 + 37.6 log10(d / 1 km) dB.
    """

    name = "3gpp_36814_macro"
    carrier_range_hz = (2e9, 2e9)

    def pathloss_db(self, distance_m: np.ndarray | float) -> np.ndarray:
        distance_km = np.asarray(distance_m, dtype=float) / 1000.0
        return 128.1 + 37.6 * np.log10(distance_km)


class PathLossRegistry(Mapping[str, type[PathLossModel]]):
    """Path-loss model name -> class. The installed packages' models (entry-point group
    `scala_netsim.pathloss`) are loaded when the registry is first read; one that cannot be
    loaded is named in a warning and kept in `broken` with the reason, the others work. A
    model registered by a call in a running script (`register`, not an entry point) is in
    `runtime_only`: worker processes and Ray tasks, which do not run that script, lack it."""

    def __init__(self, *builtin: type[PathLossModel]) -> None:
        self._models = {model.name: model for model in builtin}
        self._plugins_loaded = False
        self.broken: dict[str, str] = {}
        self.runtime_only: set[str] = set()

    def _with_plugins(self) -> dict[str, type[PathLossModel]]:
        if not self._plugins_loaded:
            self._plugins_loaded = True     # (before: a plugin's import may read the registry)
            for entry in entry_points(group=ENTRY_POINT_GROUP):
                try:
                    self._add(entry.load())
                except Exception as exc:   # (any failure of a plugin's import is the plugin's)
                    why = (f"the path-loss plugin {entry.name} = {entry.value} (entry-point "
                           f"group {ENTRY_POINT_GROUP}) could not be loaded: "
                           f"{type(exc).__name__}: {exc}")
                    self.broken[entry.name] = why
                    warnings.warn(why, stacklevel=3)
        return self._models

    def _add(self, model: Any) -> type[PathLossModel]:
        if not (isinstance(model, type) and issubclass(model, PathLossModel)):
            raise TypeError(f"a path-loss model must be a subclass of channel.PathLossModel, "
                            f"got {model!r}")
        name = getattr(model, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{model.__name__} must name itself: name = '...' (a class "
                            f"attribute)")
        if self._models.get(name, model) is not model:
            raise ValueError(f"path-loss model {name!r} is registered already")
        self._models[name] = model
        return model

    def register(self, model: type[PathLossModel]) -> type[PathLossModel]:
        """Add `model` in this process (a decorator too); worker processes do not see it:
        an entry point registers it everywhere."""
        self._with_plugins()
        self._add(model)
        self.runtime_only.add(model.name)
        return model

    def __getitem__(self, name: str) -> type[PathLossModel]:
        return self._with_plugins()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._with_plugins())

    def __len__(self) -> int:
        return len(self._with_plugins())


PATHLOSS_MODELS = PathLossRegistry(Macro3gpp36814)
register_pathloss = PATHLOSS_MODELS.register
