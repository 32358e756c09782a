"""The cell: its dropped clients (distance, path loss, shadowing, FLOP/s), the server and the
bands, in SI units."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import channel
from channel import Direction


@dataclass
class Cell:
    """The dropped clients of one cell (one entry per client), the server and the bands, in
    SI units. `gain_linear` is each client's large-scale power gain 10^(-(PL + X)/10): the
    distance's path loss PL and, when the cell has shadowing, the client's shadowing X (dB)."""

    distance_m: np.ndarray
    pathloss_db: np.ndarray
    flops_per_s: np.ndarray
    server_flops_per_s: float
    uplink_bandwidth_hz: float
    downlink_bandwidth_hz: float
    shadowing_db: np.ndarray | None = None
    gain_linear: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        loss_db = np.asarray(self.pathloss_db)
        if self.shadowing_db is not None:
            loss_db = loss_db + self.shadowing_db
        self.gain_linear = channel.db_to_linear(-loss_db)

    def bandwidth_hz(self, direction: Direction) -> float:
        """The whole band in `direction`."""
        return (self.uplink_bandwidth_hz if direction is Direction.UPLINK
                else self.downlink_bandwidth_hz)
