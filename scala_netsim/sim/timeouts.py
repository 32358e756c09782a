"""Events that keep what their record will say: a computation or a transfer is a timeout that
carries its row of events.csv-to-be (`record`), given when it is made. The protocol (a
computation) or the link (a transfer) writes the row from it when the timeout ends, and an
asynchronous run's checkpoint saves it for each client in flight, so that a resumed run
rebuilds the same timeout and records it through the same code."""

from __future__ import annotations

import heapq

import simpy
from simpy.events import NORMAL


class RecordedTimeout(simpy.Timeout):
    """A timeout of `delay` from now whose `record` is what the log will hold when it ends:
    ("compute", start, duration, local_iter, who, kind, flops) or ("transfer", start, airtime,
    local_iter, client, kind, payload bytes, *radio)."""

    def __init__(self, env: simpy.Environment, delay: float, record: tuple) -> None:
        super().__init__(env, delay)
        self.record = record


class RecordedAt(simpy.Event):
    """A recorded event that happens at `end` exactly, as a timeout does (triggered, due
    then): a rebuilt timeout of a resumed asynchronous run, whose original was made at
    another instant; a timeout made now would end at now + delay, a float sum that cannot
    reach every instant (0.3333333333333333 + d is never 0.8695312851478766)."""

    def __init__(self, env: simpy.Environment, end: float, record: tuple) -> None:
        super().__init__(env)
        self.record = record
        # SimPy has no public way to schedule at an absolute time; its own entry, as
        # schedule() makes it: (time, priority, event id, event)
        self._ok, self._value = True, None
        heapq.heappush(env._queue, (end, NORMAL, next(env._eid), self))


#: what a computation or a transfer waits on
Recorded = RecordedTimeout | RecordedAt
