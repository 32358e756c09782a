"""The book of drops: which selected clients a round loses (a deadline, over-selection, a
transfer lost after all its attempts), their processes in flight, and the rules that say so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import simpy


class RoundRules(NamedTuple):
    """How the network may drop clients from a round (the scenario's training section).

    `deadline_s`: a client whose round is not done this long after the round's start (its
    model upload, or for SplitFedV3 its last step, not finished) is dropped. `step_deadline_s`
    (algorithms with a barrier): the server waits this long for each local iteration's
    activations, from the moment it is ready for them (the round's start, then the end of its
    previous step), steps on those that came and drops the others. `keep` (over-selection):
    the round keeps its first `keep` finishers (model uploads; for a barrier, activations of
    the first local iteration) and drops the others then. `sequential_server` (per-client
    split and local-loss patterns; the algorithm's server_order: sequential): the server
    takes one client's local iterations as a block, clients in id order, and a client's
    steps wait until the server is done with the clients before it (dropped ones included);
    it drops nobody."""

    deadline_s: float | None = None
    step_deadline_s: float | None = None
    keep: int | None = None
    sequential_server: bool = False

    @property
    def active(self) -> bool:
        return (self.deadline_s is not None or self.step_deadline_s is not None
                or self.keep is not None)


NO_RULES = RoundRules()   # nobody is dropped but for a lost transfer


class Drops:
    """Who may still be dropped from the round and what each client (and the server,
    SERVER_ID) has in flight, so that a client dropped mid-round has its step cut at that
    moment and recorded as not completed; who finished and who was dropped, and why."""

    def __init__(self) -> None:
        self.round = 0
        self.active: set[int] = set()       # selected, neither finished nor dropped
        self.finished: list[int] = []       # in the order they finished
        self.dropped: list[tuple[int, str]] = []   # (client, reason) in the order dropped
        self.processes: dict[int, list[simpy.Process]] = {}
        self.local_iter: dict[int, int] = {}    # the step each client is in
        self._steps: dict[int, list[tuple[simpy.Event, Any, Any]]] = {}

    def begin(self, round_: int, selected: Sequence[int]) -> None:
        self.round = round_
        self.active = {int(k) for k in selected}
        self.finished, self.dropped = [], []
        self.processes, self.local_iter, self._steps = {}, {}, {}

    def track(self, owner: int, timeout: simpy.Event, record: Any, cut: Any,
              local_iter: int | None = None) -> simpy.Event:
        """`timeout` ends `owner`'s step: `record` logs it then; `cut()` logs it up to now if
        its owner is dropped first."""
        timeout.callbacks.append(record)
        self._steps.setdefault(owner, []).append((timeout, record, cut))
        if local_iter is not None:
            self.local_iter[owner] = local_iter
        return timeout

    def cut(self, owner: int) -> None:
        """Cut every step `owner` has in flight now (in the order they began): those whose
        timeout has not been processed yet (its callbacks not run)."""
        for timeout, record, cut in self._steps.pop(owner, ()):
            if timeout.callbacks is not None:
                timeout.callbacks.remove(record)
                cut()
