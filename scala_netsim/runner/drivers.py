"""What moves a run's simulated clock forward: a driver, one for each clock.

The run loop (`runner.loop.Run`) asks its driver to `advance` to the next global model version
and records what it produced: one row per version (rounds.csv's `round` is the version
number), the events logged since, the evaluation when one is due, the checkpoint between
versions. The loop knows nothing of how a version comes about, nor of what differs between
the two clocks: the driver says it. `SynchronousRounds`: a version is a round, whose clients
are drawn by the algorithm's selector and which the protocol simulates (and trains) to its
end. `AsynchronousUpdates`: a version is a server update, with clients starting when others
finish; it adds the columns a version writes (its arrivals, their staleness), the books it is
checked by, the summary's figures on whom the server listened to, what a checkpoint holds of
the clients in flight, and when the run may be saved.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import pandas as pd
import simpy
import torch

from scala_netsim.books.versions import check_asynchronous, listening_summary, version_row
from scala_netsim.core.columns import ASYNC_COLUMNS, EVENT_COLUMNS
from scala_netsim.core.events import EventLog
from scala_netsim.learn.training import to_device
from scala_netsim.sim import async_state

if TYPE_CHECKING:
    from scala_netsim.algorithms.selection import ClientSelector
    from scala_netsim.learn.contract import Trainer
    from scala_netsim.sim.async_protocols import AsyncProtocol
    from scala_netsim.sim.cell import Cell
    from scala_netsim.sim.drops import RoundRules
    from scala_netsim.sim.link import Link
    from scala_netsim.sim.protocols import Protocol
    from scala_netsim.sim.stages import ClientStages

#: the kind of protocol a driver drives (a round protocol, or an asynchronous one)
ProtocolT = TypeVar("ProtocolT", bound="ClientStages[Any]")


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


class Driver(ABC, Generic[ProtocolT]):
    """Advances a run to its next global model version. `bind` hands it the simulation it
    drives (at the start, and again when a run resumes from a checkpoint on a fresh clock).
    The other members say what the run records and checks beyond what every version has; the
    defaults are a round's."""

    #: each client in flight holds a fixed slot of the bands (the invariants' check_run)
    slots = False

    protocol: ProtocolT

    @abstractmethod
    def open(self, protocol_class: type[ProtocolT], env: simpy.Environment, cell: Cell,
             trainer: Trainer, link: Link, log: EventLog, local_iters: int,
             rules: RoundRules) -> ProtocolT:
        """The algorithm's protocol on a fresh clock `env` (at the start, and again when a
        run resumes from a checkpoint), driven by this driver from now on."""

    def bind(self, env: simpy.Environment, protocol: ProtocolT, link: Link,
             log: EventLog) -> None:
        self.env, self.protocol, self.link, self.log = env, protocol, link, log

    @abstractmethod
    def advance(self, number: int) -> Version:
        """Simulate (and train) until version `number` of the global model exists."""

    def version_row(self, row: dict, version: Version, label_counts: np.ndarray) -> dict:
        """The version's row of rounds.csv, from the row every version has."""
        return row

    def event_table(self, columns: tuple[str, ...],
                    rows: list[tuple]) -> tuple[tuple[str, ...], list[tuple]]:
        """events.csv's columns and rows, with what this clock adds."""
        return columns, rows

    def problems(self, events: pd.DataFrame, rounds: pd.DataFrame, transfers: pd.DataFrame,
                 band_hz: dict[str, float]) -> list[str]:
        """Broken invariants of this clock's own books (check_run checks what all share)."""
        return []

    def summary(self, flops_per_s: np.ndarray, gain_linear: np.ndarray) -> dict:
        """summary.json's figures of this clock."""
        return {}

    @property
    def checkpointable(self) -> bool:
        """Can the run be saved now? Between rounds, always."""
        return True

    def state_dict(self) -> dict | None:
        """What a checkpoint holds of the clock beyond the run's rows and books (None: nothing,
        a round ends with nothing in flight)."""
        return None

    def load_state_dict(self, state: dict | None, device: torch.device) -> None:
        """Put back what state_dict saved (after `bind` on the resumed clock); a round's
        clock has nothing to put back."""
        return None


class SynchronousRounds(Driver["Protocol[Any]"]):
    """One version per round: `num_selected` clients drawn by `selector` from `rng`, the
    protocol's round simulated to its end (its slowest client, or its deadline)."""

    def __init__(self, selector: ClientSelector, rng: np.random.Generator,
                 num_selected: int) -> None:
        self.selector, self.rng, self.num_selected = selector, rng, num_selected

    def open(self, protocol_class: type[Protocol[Any]], env: simpy.Environment, cell: Cell,
             trainer: Trainer, link: Link, log: EventLog, local_iters: int,
             rules: RoundRules) -> Protocol[Any]:
        """A round protocol, with the round's rules (deadlines, over-selection)."""
        protocol = protocol_class(env, cell, trainer, link, log, local_iters, rules)
        self.bind(env, protocol, link, log)
        return protocol

    def advance(self, number: int) -> Version:
        selected = self.selector.select(self.num_selected, self.rng)
        version = Version(number, selected, self.env.now, len(self.log),
                          len(self.link.transfer_rows))
        self.protocol.run_round(number, selected)
        return version


class AsynchronousUpdates(Driver["AsyncProtocol[Any]"]):
    """One version per server update of an asynchronous algorithm (FedAsync: every arrival;
    FedBuff: every K-th). `concurrency` (Q) clients train at once: the first Q are drawn when
    the run starts, and whenever one finishes (its model reached the server) another is drawn
    in its place, uniformly among the clients not training, from `rng` (the run's selection
    stream, in the order the clock finishes them). `selected` of a version: the clients
    whose updates it took."""

    slots = True

    def __init__(self, rng: np.random.Generator, num_clients: int, concurrency: int) -> None:
        self.rng, self.num_clients, self.concurrency = rng, num_clients, concurrency

    def open(self, protocol_class: type[AsyncProtocol[Any]], env: simpy.Environment,
             cell: Cell, trainer: Trainer, link: Link, log: EventLog, local_iters: int,
             rules: RoundRules) -> AsyncProtocol[Any]:
        """An asynchronous protocol (no round, so no round rules: config.async_checks
        refuses them), Q clients at once, another started as each finishes (on a single
        cell's link, or a network's round-robin air: config.async_checks)."""
        from scala_netsim.sim.link import AsyncLink
        assert isinstance(link, AsyncLink)
        protocol = protocol_class(env, cell, trainer, link, log, local_iters)
        self.bind(env, protocol, link, log)
        return protocol

    def bind(self, env: simpy.Environment, protocol: AsyncProtocol[Any], link: Link,
             log: EventLog) -> None:
        super().bind(env, protocol, link, log)
        protocol.drive(self.concurrency, self._replace)
        self._last_s = env.now
        self._first_event, self._first_transfer = len(log), len(link.transfer_rows)

    def version_row(self, row: dict, version: Version, label_counts: np.ndarray) -> dict:
        return version_row(row, self.taken, list(version.selected), label_counts,
                           len(self.protocol.in_flight))

    def event_table(self, columns: tuple[str, ...],
                    rows: list[tuple]) -> tuple[tuple[str, ...], list[tuple]]:
        updates = self.protocol.updates
        return (columns + ASYNC_COLUMNS,
                [(*row, *updates.get(i, (-1, -1))) for i, row in enumerate(rows)])

    def problems(self, events: pd.DataFrame, rounds: pd.DataFrame, transfers: pd.DataFrame,
                 band_hz: dict[str, float]) -> list[str]:
        return check_asynchronous(events, rounds, transfers, band_hz, self.concurrency,
                                  slots=self.protocol.link.air_record() is None)

    def summary(self, flops_per_s: np.ndarray, gain_linear: np.ndarray) -> dict:
        """Whom the server listened to."""
        client = EVENT_COLUMNS.index("client_id")
        return listening_summary(self.protocol.updates, [r[client] for r in self.log.rows],
                                 flops_per_s, gain_linear)

    @property
    def checkpointable(self) -> bool:
        """When nothing is due at this instant that anything waits on
        (scala_netsim.sim.async_state; else the next version that can be is saved)."""
        return async_state.quiet(self.env) and getattr(self.protocol.link, "in_flight", 0) == 0

    def state_dict(self) -> dict:
        """The clients in flight (the protocol's snapshot) and where the next version's
        records start (the rng is the run's)."""
        return {"protocol": self.protocol.snapshot(),
                "driver": {"last_s": self._last_s, "first_event": self._first_event,
                           "first_transfer": self._first_transfer}}

    def load_state_dict(self, state: dict | None, device: torch.device) -> None:
        assert state is not None, "an asynchronous checkpoint holds its clients in flight"
        driver = state["driver"]
        self._last_s = float(driver["last_s"])
        self._first_event = int(driver["first_event"])
        self._first_transfer = int(driver["first_transfer"])
        self.protocol.resume(to_device(state["protocol"], device))

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
        if made.value is None:
            raise RuntimeError("the server made a version without saying which")
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
