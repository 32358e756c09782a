"""The cell: its dropped clients (distance, path loss, shadowing, FLOP/s), the server and the
bands, in SI units; in a network of cells, the cells around and who serves whom."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import channel
from channel import Direction


@dataclass(frozen=True)
class BackgroundUsers:
    """Other users of a network's cells (network.traffic), dropped like its clients: where
    each stands, its serving cell, its coupling gain to every cell (linear, users x cells),
    and on its serving link its LOS state and whether it is indoors."""

    x_m: np.ndarray
    y_m: np.ndarray
    serving: np.ndarray
    coupling_linear: np.ndarray
    los: np.ndarray
    indoor: np.ndarray

    def __len__(self) -> int:
        return len(self.serving)


@dataclass(frozen=True)
class NetworkView:
    """The network around the clients (a hexagonal layout): its cells, each client's serving
    cell and its coupling gain to every cell (linear, clients x cells)."""

    cells: channel.network.Cells
    serving: np.ndarray
    coupling_linear: np.ndarray
    #: other users' (network.traffic: kind not none), else None
    users: BackgroundUsers | None = None
    #: the clients' paths and moving links (network.mobility: scala_netsim.sim.network.mobile.
    #: Mobile), else None: every client stands at its drop
    mobile: Any = None


@dataclass
class Cell:
    """The dropped clients of one cell (one entry per client), the server and the bands, in
    SI units. `gain_linear` is each client's large-scale power gain 10^(-(PL + X + O)/10): the
    path loss PL, the client's shadowing X when the cell has it, and its outdoor-to-indoor
    loss O under a 38.901 model (dB)."""

    distance_m: np.ndarray
    pathloss_db: np.ndarray
    flops_per_s: np.ndarray
    server_flops_per_s: float
    uplink_bandwidth_hz: float
    downlink_bandwidth_hz: float
    shadowing_db: np.ndarray | None = None
    #: outdoor-to-indoor loss (dB; 0 outdoors), a 38.901 model's
    o2i_db: np.ndarray | None = None
    #: what a per-client model drew besides (d3d_m, h_ut_m, los, indoor), for clients.csv
    drawn: dict[str, np.ndarray] = field(default_factory=dict)
    #: the serving cell's antenna gain towards each client (dB), in a sectored network
    antenna_gain_db: np.ndarray | None = None
    #: the cells around (a network of cells); None: the paper's single cell
    network: NetworkView | None = None
    gain_linear: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        loss_db = np.asarray(self.pathloss_db)
        for extra in (self.shadowing_db, self.o2i_db):
            if extra is not None:
                loss_db = loss_db + extra
        if self.antenna_gain_db is not None:
            loss_db = loss_db - self.antenna_gain_db
        self.gain_linear = channel.db_to_linear(-loss_db)

    def bandwidth_hz(self, direction: Direction) -> float:
        """The whole band in `direction`."""
        return (self.uplink_bandwidth_hz if direction is Direction.UPLINK
                else self.downlink_bandwidth_hz)
