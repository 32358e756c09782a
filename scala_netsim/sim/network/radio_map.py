"""The network's radio map: the one owner of every client's gains to every cell and of who
serves whom (docs/model/network.md).

It holds the drop's large-scale coupling gains (clients x cells, linear: path loss,
shadowing, O2I loss and antenna gain, channel.network.drop_network) and each client's serving
cell, and per direction the gains in force now: the coupling times the fading row a client's
transfer sees (scala_netsim.sim.network.fading: one a round, a transfer, an attempt, or a
block of time). Fading posts a client's row here (`post`); whatever reads a gain reads it
here: the air of each direction (its kernels read `gains(direction)`, the live array),
power control and the NR blocks (`serving_gain`, the large-scale gain to the serving cell),
the link's records, and the books (`coupling`, which the re-derivation of rates multiplies by
the recorded or re-drawn rows, as the air did). A post that lands while the client has a
transfer on the air re-rates it there (the air watches the map: Air.regained). A client
that moves (issue 64) changes its large-scale gains (`move`) and, handed over, its serving
cell (`serve`); `coupling` stays the drop's, and the books take a moved client's gains from
its moves (books.moves.Moves: mobility.csv's positions, drawn again).

Each post is recorded in the run's files (the fading record's rows) or drawn again from the
seed (fading in blocks of time), and each move in mobility.csv, so the map the air used can
be rebuilt from the files and the seed; the coupling itself is the drop's (clients.csv's
serving link, and every cell's in the network's records)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from channel import Direction
from scala_netsim.sim.cell import Cell

#: what a watcher of a direction is told: the client whose gains changed now
Watcher = Callable[[int], None]


class RadioMap:
    """Every client's gains to every cell, and its serving cell (see the module's docstring).
    `coupling`: the drop's large-scale gains (clients x cells, linear); `serving`: each
    client's serving cell (None: the strongest, as the drop serves)."""

    def __init__(self, coupling: np.ndarray, serving: np.ndarray | None = None) -> None:
        self.coupling = np.ascontiguousarray(coupling, dtype=float)
        self.coupling.setflags(write=False)
        # (a copy: a handover changes it, and the drop's is the world's)
        self.serving = (np.argmax(self.coupling, axis=1) if serving is None
                        else np.array(serving, dtype=np.int64))
        if self.serving.shape != (self.coupling.shape[0],):
            raise ValueError(f"the radio map's serving cells ({self.serving.shape}) do not "
                             f"match its coupling gains ({self.coupling.shape})")
        self._clients = np.arange(len(self.serving))
        #: the large-scale gains in force now: the drop's until a client moves (`move`)
        self._large = self.coupling.copy()
        #: the large-scale gain of each client to its serving cell
        self.serving_gains = self.coupling[self._clients, self.serving]
        self._now = {d: self.coupling.copy() for d in Direction}
        #: each client's fading row in force in each direction (none: the coupling alone)
        self._rows: dict[Direction, dict[int, np.ndarray | None]] = {d: {} for d in Direction}
        self._watchers: dict[Direction, list[Watcher]] = {d: [] for d in Direction}
        self._movers: list[Watcher] = []

    @classmethod
    def of(cls, cell: Cell) -> RadioMap:
        """The map of a network's dropped clients (Cell.network: its coupling and serving),
        and after them its other users' (network.traffic), user u the row clients + u."""
        network = cell.network
        if network is None:
            raise ValueError("a radio map needs a cell of a network (Cell.network)")
        users = network.users
        if users is None:
            return cls(network.coupling_linear, network.serving)
        return cls(np.vstack([network.coupling_linear, users.coupling_linear]),
                   np.concatenate([network.serving, users.serving]))

    @property
    def num_clients(self) -> int:
        """Rows of the map: the clients and after them any other users."""
        return int(self.coupling.shape[0])

    @property
    def num_cells(self) -> int:
        return int(self.coupling.shape[1])

    def gains(self, direction: Direction) -> np.ndarray:
        """The gains in force now in `direction` (clients x cells, linear): the array itself,
        which the air's kernels read as posts change it (do not write it)."""
        return self._now[direction]

    def serving_cell(self, client: int) -> int:
        return int(self.serving[client])

    def serving_gain(self, client: int) -> float:
        """Client's large-scale gain to its serving cell (what power control answers to)."""
        return float(self.serving_gains[client])

    def gain(self, direction: Direction, client: int) -> float:
        """Client's gain to its serving cell in force now in `direction` (faded)."""
        return float(self._now[direction][client, self.serving[client]])

    def faded(self, client: int, row: np.ndarray | None) -> float:
        """Client's gain to its serving cell under fading row `row` (None: the large-scale
        gain), without posting it."""
        gain = self.serving_gains[client]
        return float(gain if row is None else gain * row[self.serving[client]])

    def watch(self, direction: Direction, watcher: Watcher) -> None:
        """`watcher(client)` after every post of `direction` (the air: it re-rates the
        client's transfer in flight, if any)."""
        self._watchers[direction].append(watcher)

    def post(self, direction: Direction, client: int, row: np.ndarray | None) -> None:
        """Client's gains to every cell in `direction` from now on: its large-scale gains in
        force (the drop's coupling until it moves) times the fading row `row` (|h|^2 to every
        cell; None: the large-scale gains alone); its watchers told."""
        now = self._now[direction]
        large = self._large[client]
        now[client] = large if row is None else large * row
        self._rows[direction][client] = row
        for watcher in self._watchers[direction]:
            watcher(client)

    def move(self, client: int, coupling_row: np.ndarray) -> None:
        """Client's large-scale gains to every cell from now on (it moved: issue 64): its
        fading rows in force kept, each direction's gains the new coupling times them, its
        gain to its serving cell (power control's and the NR blocks' reading) the new one;
        the movers told (`on_move`), then each direction's watchers (the air re-rates its
        transfer in flight as for a post; its power stays what power control set at its
        start). Its serving cell stays: a handover is a change of its own. `coupling` stays
        the drop's."""
        new = np.asarray(coupling_row, dtype=float)
        if new.shape != (self.num_cells,):
            raise ValueError(f"a move's coupling row has {new.shape}, the map {self.num_cells} "
                             f"cells")
        self._large[client] = new
        self.serving_gains[client] = self._large[client, self.serving[client]]
        for watcher in self._movers:
            watcher(client)
        for direction in Direction:
            row = self._rows[direction].get(client)
            large = self._large[client]
            self._now[direction][client] = large if row is None else large * row
            for watcher in self._watchers[direction]:
                watcher(client)

    def serve(self, client: int, cell: int) -> None:
        """Client served by `cell` from now on (a handover, a re-selection), its gain to its
        serving cell the large-scale one in force to `cell`; nobody told: the caller first
        takes its transfers off the air, then moves it (RadioMap.move: its beam's gains
        toward the new cell)."""
        self.serving[client] = cell
        self.serving_gains[client] = self._large[client, cell]

    def on_move(self, watcher: Watcher) -> None:
        """`watcher(client)` when a client's large-scale gains change (`move`), before the
        directions' watchers (the NR blocks forget what they kept of its old gain)."""
        self._movers.append(watcher)

    def large_scale(self, client: int) -> np.ndarray:
        """Client's large-scale gains to every cell in force now (the drop's until it moves;
        a copy)."""
        return self._large[client].copy()

    def large_scale_all(self) -> np.ndarray:
        """Every row's large-scale gains to every cell in force now (a copy)."""
        return self._large.copy()
