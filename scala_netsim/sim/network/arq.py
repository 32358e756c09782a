"""A fixed-rate link's retransmissions (ARQ) in a network of cells
(scala_netsim.sim.network.link): the paper's cell's outage, capacity below the rate, where the
capacity changes while an attempt is on the air.

An attempt sends the payload's bits at the link's fixed rate R, so it lasts 8 x bytes / R
whatever its blocks (of its direction's symbols, under a TDD frame); it holds its blocks and
radiates on them all that time (the others' interference), and it gets through when the bits
its blocks could carry over it, the integral of the Shannon rate sum_b B_rb log2(1 +
SINR_b(t)) over its time, reach its bits: the information outage of a codeword spread over
several channel states (Ozarow, Shamai and Wyner 1994). Where the SINR is constant over the
attempt this is the cell's test, capacity >= R, exactly. A failed attempt is sent again at
once on the same blocks (the air's flow stays, its mutual information counted again:
Air.gathered), up to the link's max_attempts in all; a transfer whose every attempt failed
is lost (its client dropped from the round, as in the cell). Under fading with one block per
transfer each attempt sees a fresh row on every link (NetworkFading.row, set mid-transfer by
RadioMap.post); with one per round the same; in blocks of time, the blocks' rows (TimeFades).

The air record gives each attempt its own rows (an `attempt` column), and a faded run's
fading record each attempt's row, so that books.blocks derives each attempt's mutual
information again and checks its verdict."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

import numpy as np
import simpy

import channel
from channel import Direction
from scala_netsim.sim.link import share_done
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.fading import NetworkFading
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap


class Attempts:
    """One transfer's attempts, of client k in `direction` (see the module's docstring), at
    the rate of the fixed-rate link `model`. The first is on the fading row `fade` (None: no
    fading, or fading in blocks of time); each after it on `fading`'s next row for the client
    (NetworkFading.row): under one fading block a transfer a fresh row, posted mid-transfer
    on the radio map `radio` (its coupling gains times the row); under one a round the same
    row."""

    def __init__(self, env: simpy.Environment, air: Air, bits: float,
                 model: channel.LinkModel, fade: np.ndarray | None,
                 fading: NetworkFading | None, direction: Direction, k: int,
                 radio: RadioMap) -> None:
        self.env, self.air, self.bits = env, air, bits
        self.rate_bps = model.rate_bps(direction, math.nan, math.nan, env.now, None)
        self.max_attempts = model.max_attempts
        self.airtime_s = bits / self.rate_bps
        self._fading, self._direction, self._k, self._radio = fading, direction, k, radio
        #: the attempt on the air (1, 2, ...), whether all failed, when the first began, the
        #: instants at which one ended and the next began, each attempt's fading row
        self.attempt = 1
        self.failed = False
        self.began = math.nan
        self.boundaries: list[float] = []
        self.fades: list[np.ndarray] = [] if fade is None else [fade]
        self._delivered: Callable[[Flow], None] = lambda _: None
        self._lost: Callable[[Flow], None] = lambda _: None
        self.flow: Flow | None = None

    def new_flow(self, delivered: Callable[[Flow], None],
                 lost: Callable[[Flow], None]) -> Flow:
        """The flow that joins the air now for its attempts (infinite bits: the air never
        ends it); `delivered(flow)` or `lost(flow)` when they are over, its flow off the
        air."""
        self._delivered, self._lost = delivered, lost
        self.flow = Flow(math.inf, self.env.now, lambda _: None)
        self.flow.on_air = self._on_air
        return self.flow

    def _on_air(self, flow: Flow) -> None:
        self.began = self.env.now
        self._arm()

    def _arm(self) -> None:
        """The attempt's end: its air time from now, in its direction's symbols under TDD."""
        air = self.air
        ends = air.instant(air.tau(self.env.now) + self.airtime_s)
        self.env.timeout(max(ends - self.env.now, 0.0)).callbacks.append(self._over)

    def _over(self, _: simpy.Event) -> None:
        """An attempt's time is over: through, again, or lost."""
        flow, air = self.flow, self.air
        assert flow is not None
        if not math.isnan(flow.end):         # a drop cut it meanwhile
            return
        through = air.gathered(flow) >= self.bits
        if through or self.attempt == self.max_attempts:
            flow.bits = self.bits
            air.remove(flow)
            if through:
                self._delivered(flow)
            else:
                self.failed = True
                self._lost(flow)
            return
        self.attempt += 1
        self.boundaries.append(self.env.now)
        air.split(flow)
        fading = self._fading       # (blocks of time: their own boundaries, TimeFades)
        if fading is not None and not fading.fading.per_time:
            fade = fading.row(self._direction, self._k)
            if not fading.fading.per_round:
                self._radio.post(self._direction, self._k, fade)
            self.fades.append(fade)
        self._arm()

    def done_bytes(self, payload_bytes: int, now: float) -> int:
        """What a drop cutting it at `now` records as sent: all its bytes once lost, else the
        share of its attempts' air time so far (the cell's: attempts x bytes over that)."""
        if self.failed:
            return payload_bytes
        if math.isnan(self.began):
            return 0
        return share_done(payload_bytes, self.air.tau(self.began), self.air.tau(now),
                          self.attempt * self.airtime_s)

    def attempt_of(self, t0: float) -> int:
        """The attempt on the air from instant t0 (a stretch's start)."""
        return 1 + bisect.bisect_right(self.boundaries, t0)

    def static_rows(self, index: int, c: int, direction: str, first: int, blocks: int,
                    flow: Flow) -> list[tuple]:
        """Its air rows on blocks held for the round: one an attempt."""
        times = [flow.start, *self.boundaries, flow.end]
        return [(index, c, direction, first, blocks, t0, t1, a)
                for a, (t0, t1) in enumerate(zip(times[:-1], times[1:], strict=True), start=1)]

    def fade_rows(self, index: int) -> list[tuple]:
        """Its rows of the fading record: each attempt's |h|^2 to every cell."""
        return [(index, cell, h2, a) for a, fade in enumerate(self.fades, start=1)
                for cell, h2 in enumerate(fade.tolist())]
