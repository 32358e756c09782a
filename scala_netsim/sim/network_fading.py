"""Block fading in a network of cells: every link of a transfer faded, the interferers' too.

A transfer of client k in one direction sees its own |h|^2 on its link to every cell (a row
of the cells' count, channel.fading.fading_power_gain, E|h|^2 = 1): on the uplink the rows
of the clients on the air say what each hears at every base station, its own included; on
the downlink a client's row says what it hears from every base station. The coupling gains
(clients x cells) times the row are the transfer's gains while it is on the air (Air.fade).
`coherence` as in the paper's cell (channel.Fading): `round`, one row per client, direction
and round (the channel constant over a round: every transfer of it sees the same row);
`transfer`, a fresh row for every transfer. The rates change at those boundaries only, where
a transfer starts: the row is set before it joins the air, and a client has one transfer of
a direction on the air at a time.

Every row is drawn from its own child of the fading stream, named by (client, round,
direction) and, per transfer, by the transfer's place among the client's of that direction
in the round: the same draws whatever came before, so a resumed run draws what the
uninterrupted one draws with nothing to save, and two algorithms see the same channel in a
round where they move the same transfers."""

from __future__ import annotations

import numpy as np

import channel
from channel import Direction
from scala_netsim.sim.link import child_rng


class NetworkFading:
    """Fading rows for a network's transfers (see the module's docstring)."""

    def __init__(self, fading: channel.Fading, seed: np.random.SeedSequence,
                 num_cells: int) -> None:
        self.fading, self.seed, self.num_cells = fading, seed, num_cells
        self.round = 0
        self._rows: dict[tuple[int, Direction], np.ndarray] = {}
        self._count: dict[tuple[int, Direction], int] = {}

    def begin_round(self, round_: int) -> None:
        self.round = round_
        self._rows.clear()
        self._count.clear()

    def row(self, direction: Direction, k: int) -> np.ndarray:
        """|h|^2 of client k's next transfer in `direction` on its link to every cell."""
        key = (k, direction)
        down = int(direction is Direction.DOWNLINK)
        if self.fading.per_round:
            if key not in self._rows:
                self._rows[key] = self._draw(child_rng(self.seed, k, self.round, down))
            return self._rows[key]
        i = self._count.get(key, 0)
        self._count[key] = i + 1
        return self._draw(child_rng(self.seed, k, self.round, down, i))

    def _draw(self, rng: np.random.Generator) -> np.ndarray:
        f = self.fading
        return np.asarray(channel.fading.fading_power_gain(
            f.kind, rng, self.num_cells, k_factor_db=f.k_factor_db), dtype=float)
