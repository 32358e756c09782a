"""The backhaul behind each cell of a network (network.backhaul): a latency and a bandwidth
shared equally by the cell's transfers crossing it at once, per direction (an upload crosses
it after the air, a download before: scala_netsim.sim.network.link)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import simpy

from channel import Direction
from scala_netsim.sim.network.pool import Flow, Pool, Rated
from scala_netsim.sim.network.transfer import Transfer


class Backhaul:
    """Every cell's backhaul, `settings` (latency s, bandwidth bit/s; None: no backhaul)."""

    def __init__(self, env: simpy.Environment,
                 settings: tuple[float, float] | None) -> None:
        self.env, self.settings = env, settings
        self._pools: dict[tuple[Direction, int], Pool] = {}

    @property
    def in_flight(self) -> int:
        """Transfers crossing a backhaul now."""
        return sum(len(pool.flows) for pool in self._pools.values())

    def pool(self, direction: Direction, c: int) -> Pool | None:
        """Cell c's backhaul in `direction` (None: no backhaul)."""
        if self.settings is None:
            return None
        key = (direction, c)
        if key not in self._pools:
            bandwidth_bps = self.settings[1]

            def shared(static: np.ndarray) -> Rated:
                n = len(static)
                return np.full(n, bandwidth_bps / n), np.full(n, math.nan), np.zeros(n)
            self._pools[key] = Pool(self.env, shared, 0)
        return self._pools[key]

    def cross(self, pool: Pool | None, bits: float, then: Callable[[float], None],
              transfer: Transfer | None = None) -> None:
        """The bits cross the cell's backhaul `pool` (their share of its bandwidth, then its
        latency); `then(seconds it took)`, unless a drop cut the transfer meanwhile."""
        if pool is None or self.settings is None:
            then(0.0)
            return
        start, latency_s = self.env.now, self.settings[0]

        def crossed(_: Flow) -> None:
            arrived = self.env.timeout(latency_s)
            arrived.callbacks.append(
                lambda _: None if transfer is not None and transfer.is_cut else then(
                    self.env.now - start))
        flow = Flow(bits, start, crossed)
        if transfer is not None:
            transfer.pool = (pool, flow)
        pool.add(flow, ())
