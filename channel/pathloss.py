"""Path-loss models. Each maps a distance in metres to a loss in dB."""

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np


class PathLossModel(ABC):
    """Distance (m) -> path loss (dB); larger means weaker signal."""

    name: ClassVar[str]

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

    def pathloss_db(self, distance_m: np.ndarray | float) -> np.ndarray:
        distance_km = np.asarray(distance_m, dtype=float) / 1000.0
        return 128.1 + 37.6 * np.log10(distance_km)


PATHLOSS_MODELS: dict[str, type[PathLossModel]] = {m.name: m for m in (Macro3gpp36814,)}
