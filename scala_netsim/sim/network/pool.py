"""A resource shared at rates that change only when a user joins or leaves: a backhaul (its
bandwidth shared equally), or anything whose rates a function of all the users in flight
gives (the tests' reference for the network's air, which scala_netsim.sim.network.air keeps block by
block). Each user is a `Flow` of bits; the `Pool` advances every flow's bits at its rate
between such instants and finishes a flow when its bits reach zero, in SimPy's style: one
timeout for the next finish, replaced whenever a flow joins. (scala_netsim.sim.network.link
uses it for the backhaul.)"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import simpy


class Flow:
    """Bits crossing a shared resource at a rate that the resource's pool sets: what a
    transfer's record needs once it has crossed (its pool keeps the numbers in flight)."""

    __slots__ = ("bits", "done", "start", "end", "rate", "sinr", "interference_w",
                 "sinr_area", "interference_area", "varied", "held_s", "mcs_area",
                 "tbler_area", "sending_s", "tbler", "stretches", "on_air", "blocks_s")

    def __init__(self, bits: float, start: float, done: Callable[[Flow], None]) -> None:
        self.bits, self.start, self.done = bits, start, done
        self.end = self.rate = self.sinr = self.interference_w = math.nan
        #: the time it crossed in: end - start, or under a TDD frame its direction's
        #: symbols' time in [start, end) (scala_netsim.sim.network.air)
        self.held_s = math.nan
        #: of that, the time it held blocks, where a scheduler left it on the air with none
        #: a while (proportional fair: parked); NaN: all of it
        self.blocks_s = math.nan
        self.sinr_area = self.interference_area = 0.0
        self.varied = False
        #: under the NR link abstraction (scala_netsim.sim.network.air): the integrals of its
        #: MCS and TBLER over the time it sent, that time, and its TBLER at its end
        self.mcs_area = self.tbler_area = self.sending_s = 0.0
        self.tbler = math.nan
        #: under a per-instant scheduler (scala_netsim.sim.network.air.Air.request) the blocks it
        #: held over time: [first block, blocks, from, to, power radiated over them (W), the
        #: most blocks it can use]
        self.stretches: list[list] = []
        #: called with it when it gets its first blocks on a network's air (None: nothing)
        self.on_air: Callable[[Flow], None] | None = None

    def crossed(self) -> None:
        """Its bits have crossed: `done(self)`, then the callback let go. It is often a
        closure holding the transfer that holds this flow, a cycle that reference counting
        cannot free: the garbage collector would have to find every transfer's."""
        done, self.done = self.done, _called
        done(self)


def _called(flow: Flow) -> None:
    """A flow's callback once it has been called: nothing more to do."""
    del flow


#: what a pool's rate function gives for its flows in flight: rate (bit/s), SINR (linear)
#: and interference (W), one entry per flow
Rated = tuple[np.ndarray, np.ndarray, np.ndarray]


class Pool:
    """Flows sharing a resource whose rates change only when a flow joins or leaves: between
    such instants every flow's bits decrease at its rate (`rates(static)` gives them, from the
    flows' rows of numbers given when they joined), and a flow leaves when its bits reach
    zero. The numbers in flight are arrays, one entry per flow, in the order they joined."""

    #: the per-flow arrays, each with what a flow starts with (the rows of `static` and the
    #: bits are given when it joins)
    ARRAYS = {"rate": math.nan, "sinr": math.nan, "interference": math.nan, "sinr_area": 0.0,
              "interference_area": 0.0, "varied": False}

    def __init__(self, env: simpy.Environment, rates: Callable[[np.ndarray], Rated],
                 width: int) -> None:
        self.env, self._rates = env, rates
        self.flows: list[Flow] = []
        self.static = np.empty((0, width))
        self.bits = self.rate = self.sinr = self.interference = np.empty(0)
        self.sinr_area = self.interference_area = np.empty(0)
        self.varied = np.empty(0, dtype=bool)
        self._since = 0.0
        self._wake: simpy.Event | None = None

    def add(self, flow: Flow, static: tuple) -> None:
        self._advance()
        self.flows.append(flow)
        self.static = np.vstack([self.static, np.asarray(static, dtype=float)[None, :]])
        self.bits = np.append(self.bits, flow.bits)
        for name, start in self.ARRAYS.items():
            setattr(self, name, np.append(getattr(self, name), start))
        self._reschedule()

    def remove(self, flow: Flow) -> None:
        """Flow leaves now, before its bits have crossed (cut short): the others share what
        it held."""
        self._advance()
        i = self.flows.index(flow)
        kept = np.arange(len(self.flows)) != i
        del self.flows[i]
        for name in ("static", "bits", *self.ARRAYS):
            setattr(self, name, getattr(self, name)[kept])
        self._reschedule()

    def _advance(self) -> None:
        """Take every flow's bits and time averages up to now."""
        now = self.env.now
        dt = now - self._since
        if dt > 0 and self.flows:
            self.bits = self.bits - self.rate * dt
            self.sinr_area = self.sinr_area + self.sinr * dt
            self.interference_area = self.interference_area + self.interference * dt
        self._since = now

    def _reschedule(self) -> None:
        if not self.flows:
            self._wake = None
            return
        rate, sinr, interference = self._rates(self.static)
        self.varied |= (sinr != self.sinr) & ~np.isnan(self.sinr)
        self.rate, self.sinr, self.interference = rate, sinr, interference
        delay = float(np.min(np.maximum(self.bits, 0.0) / rate))
        wake = self._wake = self.env.timeout(delay)
        wake.callbacks.append(lambda _: self._woken(wake))

    @staticmethod
    def crossed(bits: np.ndarray, rate: np.ndarray, now: float) -> np.ndarray:
        """Which flows are done: what is left of their bits is below the float error of the
        arithmetic that took it there (as a backhaul's flows, of a nanosecond at their rate)."""
        del now
        return bits <= 1e-9 * np.maximum(1.0, rate)

    def _woken(self, wake: simpy.Event) -> None:
        if wake is not self._wake:            # a flow joined since: a later wake stands
            return
        self._advance()
        finished = self.crossed(self.bits, self.rate, self.env.now)
        if not finished.any():   # rounding left a sliver: finish the nearest
            finished[int(np.argmin(self.bits / self.rate))] = True
        done = [self._finish(i) for i in np.flatnonzero(finished).tolist()]
        kept = ~finished
        self.flows = [f for f, keep in zip(self.flows, kept.tolist(), strict=True) if keep]
        for name in ("static", "bits", *self.ARRAYS):
            setattr(self, name, getattr(self, name)[kept])
        self._reschedule()
        for f in done:
            f.crossed()

    def _finish(self, i: int) -> Flow:
        """Flow i's numbers into its Flow, now it has crossed."""
        f = self.flows[i]
        f.end, f.rate = self.env.now, float(self.rate[i])
        f.sinr, f.interference_w = float(self.sinr[i]), float(self.interference[i])
        f.sinr_area = float(self.sinr_area[i])
        f.interference_area = float(self.interference_area[i])
        f.varied = bool(self.varied[i])
        return f
