"""The book of a proportional-fair scheduler's decisions (scala_netsim.sim.network.schedulers.
ProportionalFair), and the check of its invariants from the book alone.

Each decision is the instant, the cell and, per request in the order the scheduler was given
them, one row of ROW_COLUMNS: the client; its cap, the blocks it can use (its request's cap,
at most the cell's); its instantaneous rate on them; its client's average before the update
at this decision (as the cell's previous decision left it; NaN at the client's first
request) and after it (brought up to now: the average its metric divides by); its metric;
the blocks it got; and the rate its allocation gives it (on the blocks it got; 0: none).
The rows are kept as plain numbers in arrays, a few appends a decision.

`decision_problems` checks the book without the scheduler's code (no
channel.network.proportional_fair_shares or proportional_fair_average): in every decision,
no block idle while a transfer of the cell waits and none above its cap; the blocks in order
of metric; each metric the rate over the average; and each client's average moved between
two decisions of its cell as stated, T beta^n + r (1 - beta^n) over n = (t2 - t1) / slot at
the rate r its allocation at the earlier decision gave it (0 at those it was not part of)."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

import numpy as np

#: a decision's row per request (see the module's docstring)
ROW_COLUMNS = ("client", "cap", "rate", "before", "after", "metric", "blocks", "given")
CLIENT, CAP, RATE, BEFORE, AFTER, METRIC, BLOCKS, GIVEN = range(len(ROW_COLUMNS))
#: the relative tolerance of the averages and metrics derived again
REL_TOL = 1e-9
#: how many problems are listed (the count says how many in all)
LISTED = 5


class DecisionBook:
    """A proportional-fair scheduler's decisions (see the module's docstring): `instants`,
    `cells` and `firsts` (each decision's first row) per decision, `rows` the rows' numbers
    one after the other."""

    def __init__(self) -> None:
        self.instants = array("d")
        self.cells = array("q")
        self.firsts = array("q")
        self.rows = array("d")

    def __len__(self) -> int:
        return len(self.instants)

    def record(self, now: float, cell: int, rows: Sequence[tuple[float, ...]]) -> None:
        """One decision: its instant, cell and a row of ROW_COLUMNS per request."""
        self.instants.append(now)
        self.cells.append(cell)
        self.firsts.append(len(self.rows) // len(ROW_COLUMNS))
        for row in rows:
            self.rows.extend(row)

    def table(self) -> np.ndarray:
        """(rows, ROW_COLUMNS) every decision's rows, one after the other."""
        return np.frombuffer(self.rows, dtype=np.float64).reshape(-1, len(ROW_COLUMNS))

    def decisions(self) -> list[tuple[float, int, np.ndarray]]:
        """Each decision as (instant, cell, its rows)."""
        table = self.table()
        ends = list(self.firsts[1:]) + [len(table)] if len(self.firsts) else []
        return [(t, c, table[first:end]) for t, c, first, end
                in zip(self.instants, self.cells, self.firsts, ends, strict=True)]


def decision_problems(book: DecisionBook, num_blocks: int, beta: float,
                      slot_s: float) -> list[str]:
    """Broken invariants of the decisions in `book` of a scheduler of `num_blocks` blocks a
    cell, whose average weighs `beta` a slot of `slot_s` (see the module's docstring): the
    first LISTED, and how many in all."""
    problems: list[str] = []
    averages = Averages(beta, slot_s)
    for now, cell, rows in book.decisions():
        where = f"proportional fair, cell {cell} at {now!r} s"
        problems.extend(f"{where}: {p}" for p in shares_problems(rows, num_blocks))
        problems.extend(f"{where}: {p}" for p in metric_problems(rows))
        problems.extend(f"{where}: {p}" for p in averages.step(now, cell, rows))
    if len(problems) > LISTED:
        return problems[:LISTED] + [f"proportional fair: {len(problems)} problems in all"]
    return problems


def shares_problems(rows: np.ndarray, num_blocks: int) -> list[str]:
    """One decision's blocks: each between 0 and its request's cap, as many in all as the
    cell has or its requests can use (no block idle while a transfer waits), and a request
    given fewer than its cap with a metric no higher than any given blocks (ties in the
    order given)."""
    problems = []
    clients, caps, got, metrics = (rows[:, column].tolist()
                                   for column in (CLIENT, CAP, BLOCKS, METRIC))
    for client, cap, n in zip(clients, caps, got, strict=True):
        if not 0 <= n <= cap <= num_blocks:
            problems.append(f"client {int(client)} got {int(n)} blocks of a cap of {int(cap)} "
                            f"(the cell has {num_blocks})")
    due = min(num_blocks, int(sum(caps)))
    if int(sum(got)) != due:
        problems.append(f"{int(sum(got))} blocks handed out of {num_blocks}, where the "
                        f"requests' caps {[int(c) for c in caps]} use {due}")
    given = [j for j, n in enumerate(got) if n > 0]
    for i in (i for i, (n, cap) in enumerate(zip(got, caps, strict=True)) if n < cap):
        ahead = [j for j in given if j != i and (
            metrics[j] < metrics[i] or (metrics[j] == metrics[i] and j > i))]
        if ahead:
            j = ahead[0]
            problems.append(f"client {int(clients[i])} (request {i}, metric {metrics[i]!r}) "
                            f"got {int(got[i])} of its {int(caps[i])} blocks while client "
                            f"{int(clients[j])} (request {j}, metric {metrics[j]!r}) got "
                            f"{int(got[j])}")
    return problems


def metric_problems(rows: np.ndarray) -> list[str]:
    """One decision's metrics: each request's rate over its client's average (inf where the
    average is 0)."""
    problems = []
    for client, rate, average, metric in rows[:, [CLIENT, RATE, AFTER, METRIC]].tolist():
        expected = rate / average if average > 0 else math.inf
        if not _close(metric, expected):
            problems.append(f"client {int(client)}'s metric is {metric!r}, not its rate "
                            f"{rate!r} over its average {average!r} ({expected!r})")
    return problems


class Averages:
    """Each (cell, client)'s average as the book says it should move (see the module's
    docstring), decision by decision: `step` checks one decision's averages against the
    client's last decision and moves it on."""

    def __init__(self, beta: float, slot_s: float) -> None:
        self.beta, self.slot_s = beta, slot_s
        #: each cell's decisions so far: the instants
        self.instants: dict[int, list[float]] = {}
        #: (cell, client): its average after its last decision, that decision's index in its
        #: cell's and the rate its allocation there gave it
        self.last: dict[tuple[int, int], tuple[float, int, float]] = {}

    def moved(self, average: float, rate: float, t1: float, t2: float) -> float:
        """An average after t2 - t1 at the rate `rate` (the closed form, by hand)."""
        keep = self.beta ** ((t2 - t1) / self.slot_s)
        return average * keep + rate * (1.0 - keep)

    def step(self, now: float, cell: int, rows: np.ndarray) -> list[str]:
        """One decision's averages: a client's before the update as its cell's previous
        decision left it (its own last average moved at the rate its allocation there gave it
        up to the cell's next decision, then at 0), after it moved from there to now (at the
        rate it had from the previous decision), at its first request its rate."""
        problems = []
        instants = self.instants.setdefault(cell, [])
        given: dict[int, float] = {}
        first: dict[int, float] = {}       # (clients new to the cell: their first rate)
        for row in rows.tolist():
            client = int(row[CLIENT])
            before, after = row[BEFORE], row[AFTER]
            last = self.last.get((cell, client))
            if last is None:
                expected_before = math.nan
                expected_after = first.setdefault(client, row[RATE])
            else:
                expected_before, rate = self.previous(last, instants)
                expected_after = self.moved(expected_before, rate, instants[-1], now)
            for name, value, expected in (("before", before, expected_before),
                                          ("after", after, expected_after)):
                if not _close(value, expected):
                    problems.append(f"client {client}'s average {name} the update is "
                                    f"{value!r}, not {expected!r} as stated")
            if row[BLOCKS] > 0:
                given[client] = row[GIVEN]
            given.setdefault(client, 0.0)
        index = len(instants)
        instants.append(now)
        for row in rows.tolist():
            client = int(row[CLIENT])
            self.last[(cell, client)] = (row[AFTER], index, given[client])
        return problems

    def previous(self, last: tuple[float, int, float],
                 instants: list[float]) -> tuple[float, float]:
        """A client's average as its cell's previous decision left it, from its own last one
        (`last`: its average, that decision's index, the rate given there), and the rate it
        had since the previous decision (the rate given, if that was its own last, else 0)."""
        average, index, rate = last
        if index == len(instants) - 1:
            return average, rate
        average = self.moved(average, rate, instants[index], instants[index + 1])
        return self.moved(average, 0.0, instants[index + 1], instants[-1]), 0.0


def _close(value: float, expected: float) -> bool:
    """Equal to REL_TOL (NaN and inf equal to themselves only)."""
    if math.isnan(expected) or math.isinf(expected):
        return value == expected or (math.isnan(value) and math.isnan(expected))
    return math.isclose(value, expected, rel_tol=REL_TOL, abs_tol=1e-300)
