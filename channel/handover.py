"""Handover's trigger (issue 64, item 3), pure math: TS 38.331's event A3 (5.5.4.4, a
neighbour becomes offset better than the serving cell) on RSRPs that change only at a
client's gain updates (piecewise constant between them), with its time to trigger.

Entering condition for neighbour n, the cell-specific offsets (Ofn, Ocn, Ofp, Ocp) 0:
Mn - Hys > Mp + Off, M the RSRPs (dBm; here unfiltered: the measurement at the last update,
no layer-3 filter), Hys the hysteresis, Off the a3-Offset. A neighbour whose entering
condition holds at every measurement taken during the time to trigger (5.5.4.1: a
measurement where it does not stops its timer) triggers the report and, here, the handover
to it at once (the gNB's decision, its preparation and the RRC reconfiguration are taken as
the interruption the caller adds). The leaving condition, Mn + Hys < Mp + Off, applies to a
cell already triggered: none stays triggered here, the client being handed over to it.
Several at once: the strongest. The values the standard allows: `TIME_TO_TRIGGER_S` (the
enumerated TimeToTrigger), hysteresis 0 to 15 dB and a3-Offset -15 to 15 dB in 0.5 dB steps
(Hysteresis INTEGER (0..30), a3-Offset INTEGER (-30..30), both in 0.5 dB)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: TS 38.331's TimeToTrigger values (ms 0 ... ms 5120), in seconds
TIME_TO_TRIGGER_S = (0.0, 0.04, 0.064, 0.08, 0.1, 0.128, 0.16, 0.256, 0.32, 0.48, 0.512, 0.64,
                     1.024, 1.28, 2.56, 5.12)


def _half_db_steps(value: float, lo: float, hi: float, name: str) -> None:
    if not (math.isfinite(value) and lo <= value <= hi and float(2 * value).is_integer()):
        raise ValueError(f"{name}: must be in [{lo:g}, {hi:g}] dB in steps of 0.5 dB "
                         f"(TS 38.331), got {value!r}")


@dataclass(frozen=True)
class A3:
    """Event A3's parameters: a3-Offset and hysteresis (dB), time to trigger (s)."""

    offset_db: float = 3.0
    hysteresis_db: float = 0.0
    time_to_trigger_s: float = 0.256

    def __post_init__(self) -> None:
        _half_db_steps(self.offset_db, -15.0, 15.0, "handover.a3_offset_db")
        _half_db_steps(self.hysteresis_db, 0.0, 15.0, "handover.hysteresis_db")
        if self.time_to_trigger_s not in TIME_TO_TRIGGER_S:
            raise ValueError(f"handover.time_to_trigger_s: must be one of TS 38.331's "
                             f"TimeToTrigger values "
                             f"({', '.join(f'{v:g}' for v in TIME_TO_TRIGGER_S)} s), got "
                             f"{self.time_to_trigger_s!r}")

    def entering(self, rsrp_dbm: np.ndarray, serving: int) -> np.ndarray:
        """Per cell, whether A3's entering condition holds (never for the serving cell)."""
        held = rsrp_dbm - self.hysteresis_db > rsrp_dbm[serving] + self.offset_db
        held[serving] = False
        return held


@dataclass
class A3Monitor:
    """One connected client's A3 timers: `since[n]`, when neighbour n's entering condition
    began to hold (NaN: no timer). `measure` at each gain update; `due` says when a timer
    would expire and to which cell, should no later measurement stop it."""

    event: A3
    serving: int
    cells: int
    since: np.ndarray = field(init=False)
    rsrp_dbm: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.since = np.full(self.cells, np.nan)
        self.rsrp_dbm = np.full(self.cells, -np.inf)

    def measure(self, t: float, rsrp_dbm: np.ndarray) -> None:
        """The RSRPs measured at time `t` (in force until the next measurement)."""
        self.rsrp_dbm = np.asarray(rsrp_dbm, float).copy()
        entering = self.event.entering(self.rsrp_dbm, self.serving)
        self.since[entering & np.isnan(self.since)] = t
        self.since[~entering] = np.nan

    def due(self) -> tuple[float, int] | None:
        """(when, target): the earliest running timer's expiry, the strongest of the cells
        whose timers expire then; None without a timer."""
        running = np.flatnonzero(~np.isnan(self.since))
        if not len(running):
            return None
        expiry = self.since[running] + self.event.time_to_trigger_s
        first = running[expiry == expiry.min()]
        return float(expiry.min()), int(first[np.argmax(self.rsrp_dbm[first])])

    def hand_over(self, target: int) -> None:
        """The client now served by `target`: every timer stopped (measured again from the
        next update, against the new serving cell)."""
        self.serving = target
        self.since[:] = np.nan


def first_handover(times: np.ndarray, rsrp_dbm: np.ndarray, serving: int,
                   event: A3) -> tuple[float, int] | None:
    """Over RSRPs measured at `times` ((updates, cells), each in force until the next), the
    first handover A3 triggers: (instant, target), or None. A timer expires at its start
    plus the time to trigger unless a measurement before then (strictly) stops it; a
    measurement at that very instant comes after the handover."""
    monitor = A3Monitor(event, serving, rsrp_dbm.shape[1])
    for k, t in enumerate(np.asarray(times, float).tolist()):
        pending = monitor.due()
        if pending is not None and pending[0] <= t:
            return pending
        monitor.measure(t, rsrp_dbm[k])
    return monitor.due()
