"""A network transfer's rows of the air record (core.columns.AIR_COLUMNS, or under round
robin AIR_SHARED_COLUMNS; a fixed-rate link's with each row's attempt), as
scala_netsim.sim.network.link records a transfer that is over."""

from __future__ import annotations

import math

from channel import Direction
from scala_netsim.sim.network.arq import Attempts
from scala_netsim.sim.network.pool import Flow


def air_rows(index: int, air: Flow, c: int, direction: Direction, first: int, blocks: int,
             power_w: float, start: float, arq: Attempts | None = None
             ) -> tuple[list[tuple], int | float, float, float]:
    """The rows of the transfer `index` of cell c that held `air` (a fixed-rate one's: each
    attempt's, with its number); -> them, its blocks and power (under round robin their
    averages over its stretches) and its event's start."""
    if not air.stretches:
        rows = ([(index, c, direction.value, first, blocks, air.start, air.end)]
                if arq is None else arq.static_rows(index, c, direction.value, first, blocks,
                                                    air))
        return rows, blocks, power_w, start
    # round robin: its blocks and power, each a stretch of its time; a transfer that found
    # every block taken waited for one: like a turn on a shared block, the wait is its
    # client's idle time and the event starts when it ends
    rows = [(index, c, direction.value, f, n, t0, t1, p, cap)
            + (() if arq is None else (arq.attempt_of(t0),))
            for f, n, t0, t1, p, cap in air.stretches if t1 > t0]
    averaged = _time_averaged(air.stretches)
    return rows, averaged[0], averaged[1], start + (air.stretches[0][2] - air.start)


def _time_averaged(stretches: list[list]) -> tuple[float, float]:
    """A round-robin transfer's blocks and power averaged over its stretches' time (its
    last stretch's where they took none; its power itself where it radiated one power all
    along, as an upload does without power control). Summed exactly (math.fsum), not by a
    BLAS dot product, whose kernel, and so the last bit, depends on the processor."""
    spans = [t1 - t0 for _, _, t0, t1, _, _ in stretches]
    total = math.fsum(spans)
    if not total > 0:
        return float(stretches[-1][1]), float(stretches[-1][4])
    powers = [p for *_, p, _ in stretches]
    blocks = math.fsum(s * n for s, (_, n, *_) in zip(spans, stretches, strict=True)) / total
    if all(p == powers[0] for p in powers):
        return blocks, float(powers[0])
    return blocks, math.fsum(s * p for s, p in zip(spans, powers, strict=True)) / total
