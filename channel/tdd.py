"""A TDD frame (TS 38.213 11.1, the slot format of TS 38.211 4.3.2): one carrier for both
directions, a periodic pattern of slots, each all downlink (D), all uplink (U) or special (S:
downlink symbols, a guard, uplink symbols). A transfer's bits move only in its direction's
symbols, so what it needs is time in those symbols: `usable_s` is the time of a direction's
symbols in [t0, t1) and `finish` the earliest instant by which a given amount of it has
passed, both in closed form over whole periods and the partial ones at each end (the frame
is never an event per slot). A slot lasts 1 ms / 2^mu for the numerology mu of the subcarrier
spacing (15 kHz x 2^mu), and holds 14 symbols of equal length (normal cyclic prefix; the
longer prefix of each half-subframe's first symbol, 0.5 % of a slot at 30 kHz, is not
modelled).

DDDSU with the special slot 10:2:2 gives the uplink 16 of 70 symbols (22.9 % of the time),
DDDDDDDSUU 30 of 140 (21.4 %)."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from channel.link import Direction

SYMBOLS_PER_SLOT = 14
LETTERS = "DSU"


def default_k2_slots(subcarrier_spacing_hz: float) -> int:
    """K2's j of the default PUSCH time-domain allocation table (TS 38.214 6.1.2.1.1, Table
    6.1.2.1.1-4): 1 slot for numerology 0 and 1, 2 for 2, 3 for 3."""
    mu = round(math.log2(subcarrier_spacing_hz / 15e3))
    return {0: 1, 1: 1, 2: 2, 3: 3}[mu]


def slot_s(subcarrier_spacing_hz: float) -> float:
    """A slot's duration: 1 ms at 15 kHz, halved with each doubling of the spacing."""
    mu = math.log2(subcarrier_spacing_hz / 15e3)
    if mu < 0 or mu != int(mu):
        raise ValueError(f"subcarrier_spacing_hz: {subcarrier_spacing_hz:g} is not 15 kHz x 2^mu")
    return 1e-3 / 2 ** int(mu)


@dataclass(frozen=True)
class TddFrame:
    """A periodic slot pattern (`pattern`, letters D, S and U), the special slot's
    (downlink, guard, uplink) symbols, and the slot's duration."""

    pattern: str
    special_slot: tuple[int, int, int]
    slot_s: float
    #: per direction: the starts and ends of its windows [start, end) within one period
    #: (seconds, adjacent ones merged) and the time they take before each and in all, as
    #: plain lists (bisect on a list is some ten times faster than numpy on a handful of
    #: numbers, and a run asks once or more per transfer)
    _lists: dict[Direction, tuple[list, list, list]] = field(init=False, repr=False,
                                                             compare=False)

    def __post_init__(self) -> None:
        wrong = sorted(set(self.pattern) - set(LETTERS))
        if not self.pattern or wrong:
            raise ValueError(f"pattern: {self.pattern!r} has letters {wrong or 'none'}; "
                             f"allowed: D, S and U")
        if len(self.special_slot) != 3 or sum(self.special_slot) != SYMBOLS_PER_SLOT or min(
                self.special_slot) < 0:
            raise ValueError(f"special_slot: {list(self.special_slot)} must be three counts of "
                             f"symbols (downlink, guard, uplink) adding up to {SYMBOLS_PER_SLOT}")
        if not self.slot_s > 0:
            raise ValueError(f"slot_s: {self.slot_s} must be > 0")
        windows = {d: _windows(self.pattern, self.special_slot, self.slot_s, d)
                   for d in Direction}
        for d, w in windows.items():
            if not len(w):
                raise ValueError(f"pattern: {self.pattern!r} with special_slot "
                                 f"{list(self.special_slot)} has no {d.value} symbol")
        object.__setattr__(self, "_lists", {
            d: (w[:, 0].tolist(), w[:, 1].tolist(),
                np.concatenate([[0.0], np.cumsum(w[:, 1] - w[:, 0])]).tolist())
            for d, w in windows.items()})

    @property
    def period_s(self) -> float:
        return len(self.pattern) * self.slot_s

    def symbols(self, direction: Direction) -> int:
        """The direction's symbols in one period."""
        down, _, up = self.special_slot
        own = "D" if direction is Direction.DOWNLINK else "U"
        return (SYMBOLS_PER_SLOT * self.pattern.count(own)
                + self.pattern.count("S") * (down if direction is Direction.DOWNLINK else up))

    def share(self, direction: Direction) -> float:
        """The fraction of the time the direction's symbols take."""
        return self.symbols(direction) / (SYMBOLS_PER_SLOT * len(self.pattern))

    def windows(self, direction: Direction) -> np.ndarray:
        """(k, 2): the direction's windows [start, end) within one period, in seconds."""
        starts, ends, _ = self._lists[direction]
        return np.column_stack([starts, ends])

    def cumulative(self, direction: Direction, t: float) -> float:
        """The time of the direction's symbols in [0, t)."""
        starts, ends, before = self._lists[direction]
        periods = math.floor(t / self.period_s)
        x = t - periods * self.period_s
        i = bisect.bisect_right(starts, x)   # windows starting <= x
        partial = before[i - 1] + min(x, ends[i - 1]) - starts[i - 1] if i else 0.0
        return periods * before[-1] + partial

    def usable_many(self, direction: Direction, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
        """`usable_s` of many intervals at once (arrays)."""
        windows, before = self.windows(direction), np.array(self._lists[direction][2])

        def cumulative(t: np.ndarray) -> np.ndarray:
            periods = np.floor(t / self.period_s)
            x = t - periods * self.period_s
            i = np.searchsorted(windows[:, 0], x, side="right")
            j = np.maximum(i - 1, 0)
            partial = np.where(i > 0, before[j] + np.minimum(x, windows[j, 1]) - windows[j, 0],
                               0.0)
            return periods * before[-1] + partial

        t0, t1 = np.asarray(t0, float), np.asarray(t1, float)
        return np.where(t1 > t0, np.maximum(cumulative(t1) - cumulative(t0), 0.0), 0.0)

    def usable_s(self, direction: Direction, t0: float, t1: float) -> float:
        """The time of the direction's symbols in [t0, t1) (0 when t1 <= t0)."""
        if t1 <= t0:
            return 0.0
        return max(0.0, self.cumulative(direction, t1) - self.cumulative(direction, t0))

    def finish(self, direction: Direction, t0: float, need_s: float) -> float:
        """The earliest t >= t0 with `need_s` of the direction's symbol time in [t0, t): a
        transfer that needs `need_s` at its rate, started (or ready) at t0, ends then (t0
        itself when it needs nothing; never before the direction's next symbol when it needs
        anything, however little)."""
        if need_s <= 0:
            return t0
        starts, _, before = self._lists[direction]
        t0 = self.next_symbol(direction, t0)
        target = self.cumulative(direction, t0) + need_s
        periods = math.floor(target / before[-1])
        rest = target - periods * before[-1]
        if rest <= 0:          # at the end of the last window of the period before
            periods, rest = periods - 1, before[-1]
        # before[i] < rest <= before[i+1]; rest may round a hair above the period's total
        # (target / total floored at large clocks): it then ends in the last window
        i = min(bisect.bisect_left(before, rest), len(starts)) - 1
        return max(t0, periods * self.period_s + starts[i] + (rest - before[i]))

    def next_symbol(self, direction: Direction, t: float) -> float:
        """`t` when it lies in one of the direction's windows, else the start of the next."""
        starts, ends, _ = self._lists[direction]
        periods = math.floor(t / self.period_s)
        x = t - periods * self.period_s
        i = bisect.bisect_right(starts, x)
        if i and x < ends[i - 1]:
            return t
        if i < len(starts):
            return periods * self.period_s + starts[i]
        return (periods + 1) * self.period_s + starts[0]


def _windows(pattern: str, special: tuple[int, int, int], slot_s: float,
             direction: Direction) -> np.ndarray:
    """The direction's windows within one period, adjacent ones merged."""
    symbol_s = slot_s / SYMBOLS_PER_SLOT
    down, guard, up = special
    spans = []
    for n, letter in enumerate(pattern):
        start = n * slot_s
        if letter == ("D" if direction is Direction.DOWNLINK else "U"):
            spans.append((start, start + slot_s))
        elif letter == "S":
            if direction is Direction.DOWNLINK and down:
                spans.append((start, start + down * symbol_s))
            elif direction is Direction.UPLINK and up:
                spans.append((start + (down + guard) * symbol_s, start + slot_s))
    merged: list[list[float]] = []
    for a, b in spans:
        if merged and math.isclose(merged[-1][1], a, rel_tol=0.0, abs_tol=1e-15):
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return np.array(merged, dtype=float).reshape(-1, 2)
