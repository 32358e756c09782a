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

from scala_netsim.core.events import EventLog

if TYPE_CHECKING:
    from scala_netsim.selection import ClientSelector
    from scala_netsim.sim.link import WirelessLink
    from scala_netsim.sim.protocols import Protocol


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
