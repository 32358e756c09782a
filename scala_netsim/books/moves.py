"""Moving clients' gains as a run's records say them (mobility.csv: core columns of
core.columns.MOVE_COLUMNS): each move's coupling gains drawn again from
where the client stood and the cell its beam came from (`coupling_at`: the scenario's moving
links and antennas, from its seed), in force from the move's instant until the next; before
a client's first move, the drop's. What deriving a moving network's rates again reads
(books.blocks.AirSettings.moves)."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: a move's coupling gains (linear, to every cell): client, (x, y), serving cell
CouplingAt = Callable[[int, np.ndarray, int], np.ndarray]


@dataclass(frozen=True)
class Moves:
    """The moves `rows` (client, t, x, y, walked, serving cell; in the order they were made,
    so by time for each client) and how a move's gains are drawn again."""

    rows: Sequence[tuple]
    coupling_at: CouplingAt

    @functools.cached_property
    def _by_client(self) -> dict[int, tuple[list[float], list[int]]]:
        """Each client's move instants and rows (a later row at the same instant, a change
        of serving cell, replaces the earlier one)."""
        out: dict[int, tuple[list[float], list[int]]] = {}
        for i, (client, t, *_) in enumerate(self.rows):
            times, rows = out.setdefault(int(client), ([], []))
            if times and times[-1] == t:
                rows[-1] = i
            else:
                times.append(float(t))
                rows.append(i)
        return out

    @functools.cached_property
    def _drawn(self) -> dict[int, np.ndarray]:
        """The moves' gains drawn so far, by row (each drawn once)."""
        return {}

    def _row(self, i: int) -> np.ndarray:
        drawn = self._drawn
        if i not in drawn:
            client, _, x, y, _, serving = self.rows[i]
            drawn[i] = self.coupling_at(int(client), np.array([x, y], float), int(serving))
        return drawn[i]

    def current(self, clients: np.ndarray, t: float) -> list[int]:
        """Each of `clients`' move in force at instant t (its row; -1: none yet)."""
        out = []
        by_client = self._by_client
        for k in np.asarray(clients).tolist():
            moves = by_client.get(k)
            j = -1 if moves is None else bisect.bisect_right(moves[0], t) - 1
            out.append(-1 if j < 0 else moves[1][j])      # type: ignore[index]
        return out

    def large(self, coupling: np.ndarray, clients: np.ndarray, t: float) -> np.ndarray:
        """The large-scale gains (rows x cells) of `clients` in force at instant t (not a
        move's instant: between two): their last move's, else the drop's `coupling`."""
        out = coupling[clients].copy()
        for i, row in enumerate(self.current(clients, t)):
            if row >= 0:
                out[i] = self._row(row)
        return out

    def floor(self, row: int, cell: int, moved_floor: Callable[[np.ndarray, int], float]
              ) -> float:
        """A downlink floor (`moved_floor`) of move `row`'s gains on `cell`, drawn once."""
        floors = self._floors
        if (row, cell) not in floors:
            floors[(row, cell)] = moved_floor(self._row(row), cell)
        return floors[(row, cell)]

    @functools.cached_property
    def _floors(self) -> dict[tuple[int, int], float]:
        return {}

    def instants_in(self, clients: np.ndarray, t0: float, t1: float) -> list[float]:
        """The move instants of `clients` strictly inside (t0, t1)."""
        out: list[float] = []
        by_client = self._by_client
        for k in np.unique(clients).tolist():
            moves = by_client.get(k)
            if moves is None:
                continue
            times = moves[0]
            out.extend(times[bisect.bisect_right(times, t0):bisect.bisect_left(times, t1)])
        return out
