"""A network transfer's life as a small state machine (scala_netsim.sim.network.link walks
it): where its bits are (`Stage`), what it was given when it was sent, and the cut a drop
makes wherever it is.

    upload:    [turn] -> grant (K2) -> air -> harq -> backhaul -> done
    download:  [turn] -> backhaul -> air -> harq -> done
    air -> handover -> air (its client handed over: off its cell's air for the interruption,
                            then on the target cell's with the bits left)
    any stage before done -> cut (a drop: deadlines, over-selection)

A transfer on a block taken in turns (the static scheduler, a cell with more clients than
blocks) first waits for its turn; under a per-instant scheduler it may wait on the air for
blocks (before it joins, or parked). A fixed-rate link's transfer whose every attempt failed
goes from air to done, lost."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from channel import Direction
from scala_netsim.core.events import EventKind
from scala_netsim.sim.link import Message
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.arq import Attempts
from scala_netsim.sim.network.fading import TimeFades
from scala_netsim.sim.network.pool import Flow, Pool


class Stage(enum.Enum):
    """Where a transfer's bits are."""

    TURN = "waiting for its turn on a shared block"
    GRANT = "waiting for its uplink grant (K2)"
    AIR = "on the air (or waiting there for blocks)"
    HARQ = "waiting for its last transport block's retransmissions"
    BACKHAUL = "on its cell's backhaul"
    HANDOVER = "off the air while its client is handed over (the interruption)"
    CUT = "cut by a drop"
    DONE = "recorded"


def _unfreed(start: float) -> None:
    del start


@dataclass(eq=False, slots=True)
class Transfer:
    """One transfer of client `message.client_id` in `direction`, of `kind` at `local_iter`,
    served by `cell`; `ended` fires when it is recorded (or fails, lost). Asked at `asked`;
    sent (`sent`) from `start`, with its fading block (`fade`: a row, its blocks of time, or
    None), its gain to its serving cell, its static grant (`first`, `blocks`, `power_w`; -1,
    0, NaN per instant: its stretches say) and its attempts (`arq`: a fixed-rate link)."""

    message: Message
    kind: EventKind
    local_iter: int
    direction: Direction
    cell: int
    gain: float
    ended: simpy.Event
    asked: float
    #: its client (message.client_id) and bits (8 x message.payload_bytes), kept at hand
    client: int
    bits: float
    stage: Stage = Stage.GRANT
    sent: bool = False
    start: float = math.nan
    fade: np.ndarray | TimeFades | None = None
    first: int = -1
    blocks: int = 0
    #: its static grant's blocks, first..first + blocks - 1 (the scheduler's array, shared;
    #: None per instant)
    granted: np.ndarray | None = None
    power_w: float = math.nan
    arq: Attempts | None = None
    #: its cell's backhaul (None: none), its Flow on the air once it joined, its Flow on the
    #: backhaul while it crosses it, its turn on a shared block and what frees that
    backhaul: Pool | None = None
    air: Flow | None = None
    pool: tuple[Pool, Flow] | None = None
    turn: simpy.resources.resource.Request | None = None
    free: Callable[[float], None] = field(default=_unfreed)
    #: the bits it has still to move on the air (its bits until a handover takes it off the
    #: air part-way), the air times it had in earlier cells (cell, Flow: each off the air
    #: at a handover) and the handovers of its client that held it back (made while it was
    #: in flight, or before, their interruption not over when it would join the air)
    left: float = math.nan
    legs: list[tuple[int, Flow]] = field(default_factory=list)
    handovers: int = 0
    #: the end of the last interruption counted in `handovers` (one that began before it
    #: was sent counts when it holds it back)
    interrupted: float = math.nan
    #: the time a download spent on the backhaul before it joined the air
    backhaul_s: float = 0.0

    def __post_init__(self) -> None:
        self.left = self.bits

    @property
    def carried(self) -> float:
        """The bits it moved on the air in earlier cells (before its last handover)."""
        return self.bits - self.left

    @property
    def is_cut(self) -> bool:
        return self.stage is Stage.CUT

    def cut(self, air: Air, now: float,
            record: Callable[[Transfer, Flow | None, float, tuple[int, float]], None]) -> None:
        """A drop cuts it now, wherever its bits are: on the air (`air`, its direction's) it
        leaves it (its blocks to the others), on the backhaul it leaves the cell's share,
        waiting for its turn on a block it gives it up; `record`ed up to now, not completed,
        with the bytes it got through the air (all of them once it is off the air). Nothing
        once it is recorded (it crossed at this very instant)."""
        if self.stage is Stage.DONE:
            return
        self.stage = Stage.CUT
        moved: float | None = None      # None: it never got on the air
        if self.air is not None and math.isnan(self.air.end):
            moved = air.remove(self.air)
            if moved is not None:
                self.free(self.start if self.sent else now)
        elif self.air is not None:      # its air time is over: HARQ or the backhaul
            moved = self.air.bits
        if self.pool is not None and math.isnan(self.pool[1].end):
            self.pool[0].remove(self.pool[1])
        if self.turn is not None and not self.turn.triggered:
            self.turn.cancel()
        if not self.sent:
            self.start = self.asked
        backhaul_s = 0.0       # its time on the backhaul: up to now, or to its air time
        if self.pool is not None:    # where it crossed the backhaul first (a download)
            until = now
            first = self.legs[0][1] if self.legs else self.air    # (its first air time)
            if first is not None and first.start >= self.pool[1].start:
                until = first.start
            backhaul_s = until - self.pool[1].start
        moved_bits = (0.0 if moved is None else moved) + self.carried
        record(self, self.air, backhaul_s, (int(moved_bits / 8.0), moved_bits))
