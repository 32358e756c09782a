"""What moves a run's simulated clock forward: a driver.

The run loop (`runner.loop.Run`) asks its driver to `advance` to the next global model version
and records what it produced: one row per version (rounds.csv's `round` is the version
number), the events logged since, the evaluation when one is due, the checkpoint between
versions. The loop knows nothing of how a version comes about. `SynchronousRounds` is today's
driver for every algorithm: a version is a round, whose clients are drawn by the algorithm's
selector and which the protocol simulates (and trains) to its end. An asynchronous driver
(issue 28) advances instead until the server's next update, with clients starting when others
finish, on the same seam.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import simpy

from scala_netsim.core.events import EVENT_COLUMNS, EventLog

if TYPE_CHECKING:
    from scala_netsim.algorithms.selection import ClientSelector
    from scala_netsim.sim.link import WirelessLink
    from scala_netsim.sim.protocols import Protocol


ROUND = EVENT_COLUMNS.index("round")


@dataclass(frozen=True)
class Version:
    """What one `advance` produced: global model version `number`, the clients drawn for it
    (`selected`), and where its records start: the simulated time, the index of its first
    event in the log and of its first transfer in the link's book."""

    number: int
    selected: Sequence[int]
    start_s: float
    first_event: int
    first_transfer: int
    #: where its records end (None: at the log's end)
    end_event: int | None = None
    end_transfer: int | None = None


class Driver(ABC):
    """Advances a run to its next global model version. `bind` hands it the simulation it
    drives (at the start, and again when a run resumes from a checkpoint on a fresh clock)."""

    def bind(self, env: simpy.Environment, protocol: Protocol, link: WirelessLink,
             log: EventLog) -> None:
        self.env, self.protocol, self.link, self.log = env, protocol, link, log

    @abstractmethod
    def advance(self, number: int) -> Version:
        """Simulate (and train) until version `number` of the global model exists."""


class SynchronousRounds(Driver):
    """One version per round: `num_selected` clients drawn by `selector` from `rng`, the
    protocol's round simulated to its end (its slowest client, or its deadline)."""

    def __init__(self, selector: ClientSelector, rng: np.random.Generator,
                 num_selected: int) -> None:
        self.selector, self.rng, self.num_selected = selector, rng, num_selected

    def advance(self, number: int) -> Version:
        selected = self.selector.select(self.num_selected, self.rng)
        version = Version(number, selected, self.env.now, len(self.log),
                          len(self.link.transfer_rows))
        self.protocol.run_round(number, selected)
        return version


class AsynchronousUpdates(Driver):
    """One version per server update of an asynchronous algorithm (FedAsync: every arrival;
    FedBuff: every K-th). `concurrency` (Q) clients train at once: the first Q are drawn when
    the run starts, and whenever one finishes (its model reached the server) another is drawn
    in its place, uniformly among the clients not training, from `rng` (the run's selection
    stream, in the order the clock finishes them). `selected` of a version: the clients
    whose updates it took."""

    def __init__(self, rng: np.random.Generator, num_clients: int, concurrency: int) -> None:
        self.rng, self.num_clients, self.concurrency = rng, num_clients, concurrency

    def bind(self, env: simpy.Environment, protocol: Protocol, link: WirelessLink,
             log: EventLog) -> None:
        super().bind(env, protocol, link, log)
        protocol.set_concurrency(self.concurrency)
        protocol.on_finish = self._replace
        self._last_s = env.now
        self._first_event, self._first_transfer = len(log), len(link.transfer_rows)

    def state_dict(self) -> dict:
        """Where the next version's records start (a checkpoint's; the rng is the run's)."""
        return {"last_s": self._last_s, "first_event": self._first_event,
                "first_transfer": self._first_transfer}

    def load_state_dict(self, state: dict) -> None:
        self._last_s = float(state["last_s"])
        self._first_event = int(state["first_event"])
        self._first_transfer = int(state["first_transfer"])

    def _draw(self) -> int:
        """A client not training now, uniformly (redrawn until one is free)."""
        while True:
            k = int(self.rng.integers(self.num_clients))
            if k not in self.protocol.in_flight:
                return k

    def _replace(self, finished: int) -> None:
        self.protocol.start(self._draw())

    def advance(self, number: int) -> Version:
        protocol = self.protocol
        if not protocol.in_flight:   # the start (afterwards a finished client is replaced)
            for _ in range(self.concurrency):
                protocol.start(self._draw())
        made = protocol.version_made
        self.env.run(until=made)
        update, taken = made.value
        if update.version != number:
            raise RuntimeError(f"the server made version {update.version}, expected {number}")
        # the version's records: the events that ended while it was being built (their
        # `round`); any that ended at the same instant after it belong to the next one
        end_event = len(self.log)
        while end_event > self._first_event and self.log.rows[end_event - 1][ROUND] > number:
            end_event -= 1
        transfers = self.link.transfer_rows
        end_transfer = len(transfers)
        while end_transfer > self._first_transfer and transfers[end_transfer - 1][0] >= end_event:
            end_transfer -= 1
        version = Version(number, list(update.contributors), self._last_s, self._first_event,
                          self._first_transfer, end_event, end_transfer)
        self.taken = list(taken)    # (client, staleness) of every arrival in the version
        self._last_s = self.env.now
        self._first_event, self._first_transfer = end_event, end_transfer
        return version
