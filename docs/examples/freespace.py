"""Free-space path loss (Friis), a path-loss plugin: PL(d) = 20 log10(4 pi d f / c) dB at the
scenario's carrier frequency f (network.carrier_frequency_hz)."""
from typing import Any

import numpy as np

from channel import PathLossModel

SPEED_OF_LIGHT_M_PER_S = 299_792_458.0


class FreeSpace(PathLossModel):
    name = "free_space"                     # network.pathloss: free_space

    def __init__(self, carrier_frequency_hz: float) -> None:
        self.carrier_frequency_hz = carrier_frequency_hz

    @classmethod
    def from_network(cls, network: Any) -> "FreeSpace":
        return cls(network.carrier_frequency_hz)   # the scenario's settings

    def pathloss_db(self, distance_m: np.ndarray | float) -> np.ndarray:
        d = np.asarray(distance_m, dtype=float)
        return 20 * np.log10(4 * np.pi * d * self.carrier_frequency_hz / SPEED_OF_LIGHT_M_PER_S)
