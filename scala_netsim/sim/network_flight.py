"""A network transfer that a drop may cut, followed through its stages
(scala_netsim.sim.network_link: `_transfer` starts it, `_cut` ends it wherever it is)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import simpy

from scala_netsim.sim.pool import Flow, Pool


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
