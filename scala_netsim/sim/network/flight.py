"""A network transfer that a drop may cut, followed through its stages
(scala_netsim.sim.network.link: `_transfer` starts it, `_cut` ends it wherever it is)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import simpy

from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.pool import Flow, Pool


@dataclass
class Flight:
    """Where a transfer that a drop may cut has its bits: its Flow on the air once it joined
    (a round-robin one may still wait there for a block), on its cell's backhaul, or its
    turn on a shared block; whether it was recorded (`done`) or cut."""

    start: float
    info: tuple | None = None
    air: Flow | None = None
    pool: tuple[Pool, Flow] | None = None
    turn: simpy.resources.resource.Request | None = None
    free: Callable[[float], None] | None = None
    cut: bool = False
    done: bool = False


def cut(flight: Flight, air: Air, now: float, unsent: tuple,
        record: Callable[[tuple, Flow | None, float, tuple[int, float]], None]) -> None:
    """A drop cuts the transfer now, wherever its bits are: on the air (`air`, its
    direction's) it leaves it (its blocks to the others), on the backhaul it leaves the cell's
    share, waiting for a block it gives up its turn; `record`ed up to now, not completed,
    with the bytes it got through the air (all of them once it is off the air). `unsent`: its
    record's terms where it never began (waiting for its turn on a block)."""
    flight.cut = True
    if flight.done:                 # recorded at this very instant: it crossed
        return
    moved: float | None = None      # None: it never got on the air
    if flight.air is not None and math.isnan(flight.air.end):
        moved = air.remove(flight.air)
        if flight.free is not None and moved is not None:
            flight.free(flight.info[0] if flight.info else now)
    elif flight.air is not None:    # its air time is over: HARQ or the backhaul
        moved = flight.air.bits
    if flight.pool is not None and math.isnan(flight.pool[1].end):
        flight.pool[0].remove(flight.pool[1])
    if flight.turn is not None and not flight.turn.triggered:
        flight.turn.cancel()
    if flight.info is None:
        flight.info = unsent
    backhaul_s = 0.0           # its time on the backhaul: up to now, or to its air time
    if flight.pool is not None:    # where it crossed the backhaul first (a download)
        until = now
        if flight.air is not None and flight.air.start >= flight.pool[1].start:
            until = flight.air.start
        backhaul_s = until - flight.pool[1].start
    moved_bits = 0.0 if moved is None else moved
    record(flight.info, flight.air, backhaul_s, (int(moved_bits / 8.0), moved_bits))
