"""Block fading in a network of cells: every link of a transfer faded, the interferers' too.

A transfer of client k in one direction sees its own |h|^2 on its link to every cell (a row
of the cells' count, channel.fading.fading_power_gain, E|h|^2 = 1): on the uplink the rows
of the clients on the air say what each hears at every base station, its own included; on
the downlink a client's row says what it hears from every base station. The coupling gains
(clients x cells) times the row are the transfer's gains while it is on the air, posted on
the radio map (RadioMap.post).
`coherence` as in the paper's cell (channel.Fading): `round`, one row per client, direction
and round (the channel constant over a round: every transfer of it sees the same row);
`transfer`, a fresh row for every transfer. The rates change at those boundaries only, where
a transfer starts: the row is set before it joins the air, and a client has one transfer of
a direction on the air at a time. `time` (`coherence_s`): a fresh row per client and direction
for every block [i T_c, (i + 1) T_c) of the clock, set on the air at the block's boundary
while the client's transfer is in flight (RadioMap.post, which the air re-rates): the
rates change there too, its own and those of the others that hear it.

Every row is drawn from its own child of the fading stream, named by (client, round or chunk
of BLOCKS_A_DRAW blocks of time, direction) and, per transfer, by the transfer's place among
the client's of that direction in the round: the same draws whatever came before, so a
resumed run draws what the uninterrupted one draws with nothing to save, and two algorithms
see the same channel in a round where they move the same transfers."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import simpy

import channel
from channel import Direction
from scala_netsim.sim.link import child_rng
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap

#: fading in blocks of time: the blocks whose rows a client's direction draws at once
BLOCKS_A_DRAW = 64


class NetworkFading:
    """Fading rows for a network's transfers (see the module's docstring)."""

    def __init__(self, fading: channel.Fading, seed: np.random.SeedSequence,
                 num_cells: int) -> None:
        self.fading, self.seed, self.num_cells = fading, seed, num_cells
        self.round = 0
        self._rows: dict[tuple[int, Direction], np.ndarray] = {}
        self._count: dict[tuple[int, Direction], int] = {}
        #: blocks of time: each (client, direction)'s last chunk of BLOCKS_A_DRAW blocks' rows
        self._chunks: dict[tuple[int, int], tuple[int, np.ndarray]] = {}

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

    def row_in_block(self, direction: Direction, k: int, block: int) -> np.ndarray:
        """|h|^2 of client k in `direction` on its link to every cell during fading block
        `block` of time (coherence: time): row block % BLOCKS_A_DRAW of the rows drawn
        together from the stream's child (client, block // BLOCKS_A_DRAW, direction), the
        same whatever the algorithm did (a child stream a block cost a third of a faded
        FedAvg re-timing's time)."""
        down = int(direction is Direction.DOWNLINK)
        chunk, row = divmod(block, BLOCKS_A_DRAW)
        drawn = self._chunks.get((k, down))
        if drawn is None or drawn[0] != chunk:
            rows = self._draw(child_rng(self.seed, k, chunk, down), BLOCKS_A_DRAW)
            drawn = self._chunks[(k, down)] = (chunk, rows.reshape(BLOCKS_A_DRAW, -1))
        return drawn[1][row]

    def _draw(self, rng: np.random.Generator, rows: int = 1) -> np.ndarray:
        """`rows` rows of |h|^2 to every cell, one after another (flat)."""
        f = self.fading
        return np.asarray(channel.fading.fading_power_gain(
            f.kind, rng, rows * self.num_cells, k_factor_db=f.k_factor_db), dtype=float)


class TimeFades:
    """A transfer's fading blocks of time (coherence: time), client k's in `direction` on the
    radio map `radio`: its row of the block it joins in, set before it joins (`begin`), and
    at every boundary of a block while it is on the air (or waiting for a block: round robin)
    the next block's, posted mid-transfer (RadioMap.post, on its coupling gains to every
    cell), until it leaves the air or its record is written (`stop`). The rows are not kept:
    each is a function of the stream, the client, the block and the direction
    (`row_in_block`), which the checks draw again."""

    def __init__(self, env: simpy.Environment, fading: NetworkFading, radio: RadioMap,
                 direction: Direction, k: int) -> None:
        self.env, self.fading, self.radio = env, fading, radio
        self.direction, self.k = direction, k
        #: the row of the last block it saw (None: it never joined the air)
        self.last: np.ndarray | None = None
        self._flow: Flow | None = None
        self._over = False

    def begin(self, flow: Flow) -> np.ndarray:
        """Its row now, as `flow` joins the air; the next block's comes at its boundary."""
        self._flow = flow
        block = self.fading.fading.block(self.env.now)
        self.last = self.fading.row_in_block(self.direction, self.k, block)
        self._arm(block + 1, flow)
        return self.last

    def _arm(self, block: int, flow: Flow) -> None:
        starts = self.fading.fading.block_start(block)
        self.env.timeout(max(starts - self.env.now, 0.0)).callbacks.append(
            lambda _: self._boundary(block, flow))

    def _boundary(self, block: int, flow: Flow) -> None:
        """Block `block` begins: its row posted while `flow` is on the air (a flow taken
        off the air at a handover arms no more: its transfer's next flow arms its own)."""
        if self._over or flow is not self._flow or not math.isnan(flow.end):   # off the air
            return
        self.last = self.fading.row_in_block(self.direction, self.k, block)
        self.radio.post(self.direction, self.k, self.last)
        self._arm(block + 1, flow)

    def stop(self) -> None:
        """No more blocks: its record is written (a drop may have cut it off the air)."""
        self._over = True


def blocks_of_time(network_fading: NetworkFading | None
                   ) -> tuple[float | None, Callable[[int, int, str], np.ndarray] | None]:
    """Fading in blocks of time: their length and how a block's row is drawn again
    (books.blocks.AirSettings.coherence_s, draw_block); None, None otherwise."""
    if network_fading is None or not network_fading.fading.per_time:
        return None, None

    @functools.lru_cache(maxsize=1 << 16)     # (a block spans several intervals)
    def draw(client: int, block: int, direction: str) -> np.ndarray:
        return network_fading.row_in_block(Direction(direction), client, block)
    return network_fading.fading.coherence_s, draw
