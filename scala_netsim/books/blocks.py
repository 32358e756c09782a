"""A network's resource blocks, checked from its books: the grants of each round (a client's
own blocks, or one block taken in turns), the turns taken, and the air record (air.csv:
which blocks each transfer held, and when, core.columns.AIR_COLUMNS), with what deriving
every transfer's rate again from it needs (`AirSettings`, `AirRecord`; the derivation:
books.air_rates)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

import channel
from scala_netsim.books.moves import Moves
from scala_netsim.core.columns import (
    AIR_ATTEMPT_COLUMNS,
    AIR_COLUMNS,
    AIR_SHARED_ATTEMPT_COLUMNS,
    AIR_SHARED_COLUMNS,
    FADING_ATTEMPT_COLUMNS,
    FADING_COLUMNS,
)


def block_problems(block_rows: Sequence[tuple], blocks: Mapping[str, int]) -> list[str]:
    """No cell hands out more blocks than it has, nor one block twice, in any round and
    direction: every grant's blocks (core.columns.BLOCK_GRANT_COLUMNS) lie in the cell's band
    and the grants of one cell do not overlap. (A round's grants hold for the whole round, so
    this is the check at every instant.)"""
    problems = []
    held: dict[tuple, list[tuple[int, int]]] = {}
    for round_, k, direction, c, first, n in block_rows:
        if n < 1 or first < 0 or first + n > blocks[direction]:
            problems.append(f"round {round_}: client {k} was granted {direction} blocks "
                            f"{first}..{first + n - 1}, outside its cell's {blocks[direction]}")
        held.setdefault((round_, direction, c), []).append((first, n))
    for (round_, direction, c), ranges in held.items():
        ranges.sort()
        if any(f1 + n1 > f2 for (f1, n1), (f2, _) in zip(ranges, ranges[1:], strict=False)):
            problems.append(f"round {round_}: cell {c} granted a {direction} block twice")
    return problems


def turn_problems(shared_rows: Sequence[tuple], turn_rows: Sequence[tuple],
                  block_rows: Sequence[tuple], blocks: Mapping[str, int]) -> list[str]:
    """Blocks taken in turns: every such grant (core.columns.SHARED_GRANT_COLUMNS) lies in the
    cell's band, no client of the cell holds that block alone in the same round and direction
    (block_rows), and the turns on a block (core.columns.TURN_COLUMNS) never overlap: it
    carries one transfer at a time."""
    problems = []
    alone: dict[tuple, list[tuple[int, int]]] = {}
    for round_, _, direction, c, first, n in block_rows:
        alone.setdefault((round_, direction, c), []).append((first, n))
    for round_, k, direction, c, block in shared_rows:
        if not 0 <= block < blocks[direction]:
            problems.append(f"round {round_}: client {k} takes turns on {direction} block "
                            f"{block}, outside its cell's {blocks[direction]}")
        if any(f <= block < f + n for f, n in alone.get((round_, direction, c), [])):
            problems.append(f"round {round_}: cell {c}'s {direction} block {block} is taken in "
                            f"turns and granted alone")
    turns: dict[tuple, list[tuple[float, float, int]]] = {}
    for round_, direction, c, block, k, start, end in turn_rows:
        turns.setdefault((round_, direction, c, block), []).append((start, end, k))
    for (round_, direction, c, block), held in turns.items():
        held.sort()
        if any(s2 < e1 for (_, e1, _), (s2, _, _) in zip(held, held[1:], strict=False)):
            problems.append(f"round {round_}: cell {c}'s {direction} block {block} carried two "
                            f"transfers at once")
    return problems


def air_columns(per_instant: bool, attempts: bool) -> tuple[str, ...]:
    """The air record's declared columns: AIR_SHARED_COLUMNS under a per-instant scheduler
    (its rows are stretches with their power and cap), else AIR_COLUMNS; with a fixed-rate
    link's attempt after them (AIR_ATTEMPT_COLUMNS, AIR_SHARED_ATTEMPT_COLUMNS)."""
    if per_instant:
        return AIR_SHARED_ATTEMPT_COLUMNS if attempts else AIR_SHARED_COLUMNS
    return AIR_ATTEMPT_COLUMNS if attempts else AIR_COLUMNS


def fading_columns(key: str) -> tuple[str, ...]:
    """The fading record's columns with its rows' `key` (AirSettings.fade_key): FADING_COLUMNS,
    or a fixed-rate link's with each attempt's number (FADING_ATTEMPT_COLUMNS)."""
    return {"": FADING_COLUMNS, "attempt": FADING_ATTEMPT_COLUMNS}[key]


def air_frame(air_rows: Sequence[tuple], columns: Sequence[str]) -> pd.DataFrame:
    """The air record's rows as a table (air.csv) of its declared `columns` (air_columns)."""
    return pd.DataFrame(list(air_rows), columns=list(columns))


def round_robin_problems(air: pd.DataFrame, blocks: Mapping[str, int],
                         until: float = math.inf) -> list[str]:
    """A per-instant air record (AIR_SHARED_COLUMNS) is work-conserving: between every two
    consecutive starts and ends of its stretches, each cell's transfers on the air in a
    direction hold min(the cell's blocks, the sum of their caps) blocks: never more than the
    cell has, and none idle while one of them could use it. Only the instants up to `until`
    are checked (an asynchronous run stops with transfers in flight, not in the record)."""
    problems: list[str] = []
    # a stretch whose set of blocks is several runs has a row a run: its cap counts once
    again = air.duplicated(["event_index", "start_s"]).to_numpy()
    for (direction, cell), rows in air.assign(again=again).groupby(["direction", "cell"],
                                                                   sort=True):
        start, end = rows["start_s"].to_numpy(), rows["end_s"].to_numpy()
        count = rows["blocks"].to_numpy()
        first_run = ~rows["again"].to_numpy()
        cap = np.where(first_run, rows["cap_blocks"].to_numpy(), 0)
        instants = np.unique(np.concatenate([start, end]))
        instants = instants[instants <= until]
        for t0, t1 in zip(instants[:-1].tolist(), instants[1:].tolist(), strict=True):
            on = (start <= t0) & (end >= t1) & (end > start)
            if not on.any():
                continue
            held, wanted = int(count[on].sum()), min(blocks[str(direction)], int(cap[on].sum()))
            if held != wanted:
                what = "idle" if held < wanted else "more than the cell has"
                problems.append(f"cell {cell}'s {direction} blocks in [{t0:.9g}, {t1:.9g}) s: "
                                f"{held} held by {int((on & first_run).sum())} transfers, "
                                f"{wanted} due ({wanted - held} {what})")
                if len(problems) >= 5:
                    return problems
    return problems


def air_problems(air: pd.DataFrame, blocks: Mapping[str, int]) -> list[str]:
    """Every transfer's blocks lie in its cell's band, and no block of a cell carries two
    transfers of one direction at once: on each block, its air times in order of start (then
    end), each ends before the next one starts. Swept cell by cell over the rows in time
    order (`_clashes`), one entry a block: a round-robin record's millions of stretches of
    tens of blocks are never spread out a row a block. A per-instant scheduler's stretch with
    no block (first -1: proportional fair left the transfer parked on the air) holds none."""
    problems = []
    if "cap_blocks" in air:     # a per-instant scheduler's parked stretches: no block held
        air = air[(air["blocks"] != 0) | (air["first_block"] != -1)]
    total = air["direction"].map(blocks).to_numpy()
    outside = ((air["blocks"] < 1) | (air["first_block"] < 0)
               | (air["first_block"] + air["blocks"] > total)).to_numpy()
    for row in air[outside].head(5).itertuples():
        problems.append(f"event {row.event_index}: {row.direction} blocks {row.first_block}.."
                        f"{row.first_block + row.blocks - 1} outside cell {row.cell}'s band")
    held = air[~outside]
    if held.empty:
        return problems
    direction = pd.factorize(held["direction"], sort=True)[0]
    cell, start, end = (held[c].to_numpy() for c in ("cell", "start_s", "end_s"))
    order = np.lexsort((end, start, cell, direction))   # stable: ties in record order
    first, count = held["first_block"].to_numpy(np.int64), held["blocks"].to_numpy(np.int64)
    group = direction.astype(np.int64) * (int(cell.max()) + 1) + cell.astype(np.int64)
    pairs = _clashes(order, group, first, count, start.astype(float), end.astype(float),
                     int((first + count).max()), 5)
    for i, j, block in pairs.tolist():
        a, b = held.iloc[i], held.iloc[j]
        problems.append(f"cell {a.cell}'s {a.direction} block {block} carried events "
                        f"{a.event_index} and {b.event_index} at once")
    return problems


@numba.njit(cache=True)
def _clashes(order: np.ndarray, group: np.ndarray, first: np.ndarray, count: np.ndarray,
             start: np.ndarray, end: np.ndarray, num_blocks: int, limit: int) -> np.ndarray:
    """Up to `limit` (earlier row, later row, block) where, taking the rows in `order` (by
    group, then start, then end), a row starts on a block of its group before the row that
    last held it there ended."""
    out = np.empty((limit, 3), np.int64)
    n = 0
    last_end = np.empty(num_blocks)
    last_row = np.full(num_blocks, -1, np.int64)
    current = -1
    for i in order:
        if group[i] != current:
            current = group[i]
            last_row[:] = -1
        for b in range(first[i], first[i] + count[i]):
            if last_row[b] >= 0 and start[i] < last_end[b] and n < limit:
                out[n, 0], out[n, 1], out[n, 2] = last_row[b], i, b
                n += 1
            last_end[b], last_row[b] = end[i], i
    return out[:n]


@dataclass(frozen=True)
class AirSettings:
    """What deriving a network's rates again needs beyond its books: the blocks of each
    direction's band, a block's width, the noise power on a block per direction (W), whether
    cells interfere, and the coupling gains (clients x cells, linear)."""

    blocks: Mapping[str, int]
    block_hz: float
    noise_w: Mapping[str, float]
    interference: bool
    coupling: np.ndarray
    frame: channel.tdd.TddFrame | None = None     # a TDD frame: rates count in its symbols
    #: the NR link abstraction's lookups by direction (None: Shannon rates)
    nr: Mapping[str, channel.nr_link.LinkTables] | None = None
    #: block fading's record (core.columns.FADING_COLUMNS rows: each transfer's |h|^2 to
    #: every cell; none without fading, or in blocks of time) and what its rows' fourth field
    #: is (`fade_key`: "" none, "attempt" a fixed-rate link's)
    fades: Sequence[tuple] = ()
    fade_key: str = ""
    #: fading in blocks of time: their length (s) and a block's row of |h|^2 for (client,
    #: block, direction), drawn again from the run's fading stream (a function of them alone:
    #: too many to record, a row of every cell for every block of every transfer)
    coherence_s: float | None = None
    draw_block: Callable[[int, int, str], np.ndarray] | None = None
    #: other users' load in its mean (network.traffic.model: fluid), by direction: the
    #: interference it adds on a block of a transfer of row r received through cell c
    #: ((rows, cells), W), and the share of each cell's blocks' time it leaves ((cells,));
    #: None: none (scala_netsim.sim.network.traffic.fluid_load)
    load_floor: Mapping[str, np.ndarray] | None = None
    load_share: Mapping[str, np.ndarray] | None = None
    #: moving clients' gain updates (network.mobility; books.moves.Moves): their gains in
    #: force change at each (None: every client's are the drop's `coupling` all along)
    moves: Moves | None = None
    #: with them under other users' load in its mean: a moved client's downlink floor from
    #: its gains in force and its serving cell (sim.network.traffic.LoadTerms.moved_floor)
    moved_floor: Callable[[str, np.ndarray, int], float] | None = None

    def floor(self, direction: str, client: np.ndarray, cell: np.ndarray,
              t: float) -> np.ndarray:
        """The interference floor other users' load in its mean leaves transfers of `client`
        on `cell` at instant t: the drop's, or a moved client's downlink one drawn again."""
        assert self.load_floor is not None
        floor = self.load_floor[direction][client, cell]
        if self.moves is None or self.moved_floor is None or direction != "downlink":
            return floor
        moved_floor = functools.partial(self.moved_floor, direction)
        rows = self.moves.current(client, t)
        if any(row >= 0 for row in rows):
            floor = floor.copy()
            for i, row in enumerate(rows):
                if row >= 0:
                    floor[i] = self.moves.floor(row, int(cell[i]), moved_floor)
        return floor

    @functools.cached_property
    def _fade_rows(self) -> dict[tuple[int, int], np.ndarray] | None:
        """The fading record by (event index, attempt), read once, where the rates are
        derived again."""
        return fades_by_event(self.fades, self.coupling.shape[1], self.fade_key == "attempt")

    def large(self, client: np.ndarray, t: float | None = None) -> np.ndarray:
        """The large-scale gains (rows x cells) of `client` at instant t: the drop's
        coupling, or where clients move their gains in force then (`moves`)."""
        if self.moves is None or t is None:
            return self.coupling[client]
        return self.moves.large(self.coupling, client, t)

    def gains(self, event_index: np.ndarray, client: np.ndarray,
              key: np.ndarray | None = None, t: float | None = None) -> np.ndarray:
        """The gains (rows x cells) of the transfers `event_index` of clients `client` while
        they were on the air (a fixed-rate link's in their attempts `key`; at instant t where
        clients move): the large-scale gains, times each one's fading row (blocks of time:
        `block_gains`)."""
        gains = self.large(client, t)
        rows = self._fade_rows
        if rows is None:
            return gains
        keys = np.ones(len(event_index), np.int64) if key is None else key
        return gains * np.stack([rows[(int(e), int(a))]
                                 for e, a in zip(event_index, keys, strict=True)])

    def block_gains(self, client: np.ndarray, block: int, direction: str,
                    t: float | None = None) -> np.ndarray:
        """The gains (rows x cells) of clients `client` in fading block `block` of time (at
        instant t where clients move): the large-scale gains times each one's row drawn
        again (`draw_block`)."""
        assert self.draw_block is not None
        draw = self.draw_block
        return self.large(client, t) * np.stack([draw(int(k), block, direction)
                                                 for k in client])

    def blocks_in(self, t0: float, t1: float) -> np.ndarray:
        """The boundaries of the fading blocks of time strictly inside (t0, t1) (none
        without them)."""
        if self.coherence_s is None:
            return np.zeros(0)
        first, last = math.floor(t0 / self.coherence_s) + 1, math.ceil(t1 / self.coherence_s)
        edges = np.arange(first, last) * self.coherence_s
        return edges[(edges > t0) & (edges < t1)]

    def held_s(self, direction: str, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
        """The time a transfer of `direction` moves bits in [t0, t1): all of it, or under a
        TDD frame its direction's symbols'."""
        if self.frame is None:
            return np.asarray(t1, float) - np.asarray(t0, float)
        return self.frame.usable_many(channel.Direction(direction), np.asarray(t0, float),
                                      np.asarray(t1, float))


@dataclass(frozen=True)
class AirRecord:
    """A network link's air record (its rows, of the declared `columns`: air_columns) with
    what deriving its rates again needs."""

    rows: list[tuple]
    settings: AirSettings
    columns: tuple[str, ...] = AIR_COLUMNS

    def frame(self) -> pd.DataFrame:
        """Its rows as a table (air.csv)."""
        return air_frame(self.rows, self.columns)

    @property
    def fades(self) -> Sequence[tuple]:
        """Block fading's record (fading.csv; none without fading)."""
        return self.settings.fades


def fades_by_event(rows: Sequence[tuple], num_cells: int, attempts: bool = False
                   ) -> dict[tuple[int, int], np.ndarray] | None:
    """The fading record's rows (event index, cell, |h|^2[, attempt]: fading_columns, the
    attempt where `attempts`), every cell of a transfer (or attempt) in order, as each one's
    row of |h|^2 by (event index, attempt: 1 where the record has none) (None: no rows)."""
    if not rows:
        return None
    width = len(FADING_ATTEMPT_COLUMNS if attempts else FADING_COLUMNS)
    table = np.asarray(rows, dtype=float).reshape(-1, num_cells, width)
    keys = table[:, 0, 3] if attempts else np.ones(len(table))
    return {(int(e), int(a)): r for e, a, r in zip(table[:, 0, 0].tolist(), keys.tolist(),
                                                   table[:, :, 2], strict=True)}
