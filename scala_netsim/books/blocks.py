"""A network's resource blocks, checked from its books: the grants of each round (a client's
own blocks, or one block taken in turns), the turns taken, and the air record (air.csv:
which blocks each transfer held, and when, core.columns.AIR_COLUMNS), from which every
transfer's rate is derived again here with the reference formula
(channel.network.transfer_rates), independently of the incremental air
(scala_netsim.sim.network.air) that timed it."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

import channel
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
    """A round-robin air record (AIR_SHARED_COLUMNS) is work-conserving: between every two
    consecutive starts and ends of its stretches, each cell's transfers on the air in a
    direction hold min(the cell's blocks, the sum of their caps) blocks: never more than the
    cell has, and none idle while one of them could use it. Only the instants up to `until`
    are checked (an asynchronous run stops with transfers in flight, not in the record)."""
    problems: list[str] = []
    for (direction, cell), rows in air.groupby(["direction", "cell"], sort=True):
        start, end = rows["start_s"].to_numpy(), rows["end_s"].to_numpy()
        count, cap = rows["blocks"].to_numpy(), rows["cap_blocks"].to_numpy()
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
                                f"{held} held by {int(on.sum())} transfers, {wanted} due "
                                f"({wanted - held} {what})")
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

    @functools.cached_property
    def _fade_rows(self) -> dict[tuple[int, int], np.ndarray] | None:
        """The fading record by (event index, attempt), read once, where the rates are
        derived again."""
        return fades_by_event(self.fades, self.coupling.shape[1], self.fade_key == "attempt")

    def gains(self, event_index: np.ndarray, client: np.ndarray,
              key: np.ndarray | None = None) -> np.ndarray:
        """The gains (rows x cells) of the transfers `event_index` of clients `client` while
        they were on the air (a fixed-rate link's in their attempts `key`): the coupling
        gains, times each one's fading row (blocks of time: `block_gains`)."""
        gains = self.coupling[client]
        rows = self._fade_rows
        if rows is None:
            return gains
        keys = np.ones(len(event_index), np.int64) if key is None else key
        return gains * np.stack([rows[(int(e), int(a))]
                                 for e, a in zip(event_index, keys, strict=True)])

    def block_gains(self, client: np.ndarray, block: int, direction: str) -> np.ndarray:
        """The gains (rows x cells) of clients `client` in fading block `block` of time: the
        coupling gains times each one's row drawn again (`draw_block`)."""
        assert self.draw_block is not None
        draw = self.draw_block
        return self.coupling[client] * np.stack([draw(int(k), block, direction)
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


#: the most work (air_rate_work) for which a run's checks derive every rate again at its end:
#: about 15 CPU s on this project's 2-core machine (a 7-site network's re-timed 500 rounds,
#: 3.6 million, took 5.4 s); the blocks are checked in every run
AIR_RATES_CHECKED_UP_TO = 10_000_000


def air_rate_work(air: pd.DataFrame, rounds: np.ndarray,
                  coherence_s: float | None = None) -> int:
    """What deriving the rates again costs (air_rate_problems): the sum over rounds and
    directions of the square of their transfers (`rounds`: each air row's round); under
    fading in blocks of `coherence_s` seconds, plus each round's transfers times the blocks
    its air rows span (every block's boundary is an interval of its own, every transfer's row
    drawn again)."""
    direction = air["direction"].to_numpy()
    counts = pd.Series(rounds).groupby([rounds, direction]).size()
    work = int((counts.to_numpy(np.int64) ** 2).sum())
    if coherence_s is None:
        return work
    spans = (air["end_s"].to_numpy(float) - air["start_s"].to_numpy(float)) / coherence_s
    blocks = pd.Series(np.ceil(spans) + 1).groupby([rounds, direction]).sum()
    return work + int((blocks.to_numpy() * counts.loc[blocks.index].to_numpy()).sum())


def air_bits(air: pd.DataFrame, power_w: np.ndarray, client: np.ndarray, uplink: bool,
             settings: AirSettings) -> tuple[np.ndarray, np.ndarray]:
    """The bits each transfer of one direction moved over its air time, derived again: the
    interval between every two consecutive starts and ends, the rates of the transfers in the
    air throughout it from the reference (channel.network.transfer_rates, all recomputed),
    summed over the intervals. `air` are rows of the air record (transfers that overlap in
    time with no transfer outside them, a round's), `power_w` and `client` each transfer's
    power and client (from its event). -> (bits, slack): the bits, and what the clock's
    rounding allows them to differ by (each interval's rate times a unit in the last place of
    its ends: a transfer of microseconds at a clock of minutes has few exact digits)."""
    start, end = air["start_s"].to_numpy(), air["end_s"].to_numpy()
    if "tx_power_w" in air:                # round robin: each stretch's own power
        power_w = air["tx_power_w"].to_numpy(float)
    cell, first = air["cell"].to_numpy(), air["first_block"].to_numpy()
    count = air["blocks"].to_numpy()
    events = air["event_index"].to_numpy()
    coherence_s = settings.coherence_s    # gains by the block of time, interval by interval
    every_gain = None if coherence_s is not None else settings.gains(
        events, client, air["attempt"].to_numpy() if "attempt" in air else None)
    direction = str(air["direction"].iloc[0])
    bits, slack = np.zeros(len(air)), np.zeros(len(air))
    instants = np.unique(np.concatenate([start, end, settings.blocks_in(
        float(start.min()), float(end.max()))]))
    held = settings.held_s(direction, instants[:-1], instants[1:])
    for t0, t1, dt in zip(instants[:-1].tolist(), instants[1:].tolist(), held.tolist(),
                          strict=True):
        on = np.flatnonzero((start <= t0) & (end >= t1) & (count > 0))   # (not parked)
        if not len(on):
            continue
        if coherence_s is not None:
            gains = settings.block_gains(client[on], math.floor((t0 + t1) / 2 / coherence_s),
                                         direction)
        else:
            assert every_gain is not None
            gains = every_gain[on]
        transfers = channel.network.Transfers(cell[on], first[on], count[on], power_w[on],
                                              gains[np.arange(len(on)), cell[on]], gains)
        rates = channel.network.transfer_rates(
            transfers, settings.blocks[direction], settings.block_hz,
            settings.noise_w[direction] / settings.block_hz, settings.interference, uplink,
            None if settings.nr is None else settings.nr[direction])
        bits[on] += rates.rate_bps * dt
        slack[on] += rates.rate_bps * np.spacing(abs(t0) + abs(t1))
    return bits, slack


def overlapping(air: pd.DataFrame) -> np.ndarray:
    """Each air row's group, per direction: the rows whose air times overlap or touch, one
    after another (a synchronous round's transfers, or an asynchronous run's that overlap
    across versions): what deriving the rates again must take together, as only they
    interfere with each other."""
    group = np.zeros(len(air), dtype=np.int64)
    start, end = air["start_s"].to_numpy(float), air["end_s"].to_numpy(float)
    direction = air["direction"].to_numpy()
    offset = 0
    for d in np.unique(direction).tolist():
        rows = np.flatnonzero(direction == d)
        order = rows[np.argsort(start[rows], kind="stable")]
        reach = np.maximum.accumulate(end[order])
        new = np.concatenate([[True], start[order][1:] > reach[:-1]])
        group[order] = offset + np.cumsum(new)
        offset += int(new.sum())
    return group


def air_rate_problems(air: pd.DataFrame, events: pd.DataFrame, settings: AirSettings,
                      rtol: float = 1e-9, until: float = math.inf) -> list[str]:
    """Every transfer moved its payload in its air time at the rates the air record implies:
    the bits derived again round by round and direction by direction (air_bits) equal
    8 x payload_bytes (a transfer cut short, completed 0: at least that and less than 8 more),
    and the rate events.csv gives (rate_bps, bits over air time) times the air time equals
    them, both to `rtol` relative beyond the clock's rounding (air_bits).
    `events` is events.csv with its radio columns (tx_power_w, rate_bps). The work grows
    with the square of a round's transfers (air_rate_work): a run derives them again where
    that is at most AIR_RATES_CHECKED_UP_TO (runner.checks). The transfers are taken
    together where their air times overlap (`overlapping`), whatever their rounds. Only the
    transfers that end by `until` are checked: an asynchronous run stops with transfers in
    flight, not in the record, and those that end later may have shared the air with them
    (they stay in as the others' interferers, which they were)."""
    problems = []
    moved = events.iloc[air["event_index"].to_numpy()]
    air = air.assign(round=moved["round"].to_numpy(), client=moved["client_id"].to_numpy(),
                     power_w=moved["tx_power_w"].to_numpy(float),
                     payload=8.0 * moved["payload_bytes"].to_numpy(float),
                     recorded=moved["rate_bps"].to_numpy(float),
                     attempts=moved["attempts"].to_numpy() if "attempts" in moved
                     else np.ones(len(moved), dtype=np.int64),
                     cut=(moved["completed"].to_numpy() == 0) if "completed" in moved
                     else np.zeros(len(moved), dtype=bool))
    air = air.assign(group=overlapping(air))
    bits, slack = np.zeros(len(air)), np.zeros(len(air))
    groups = air.groupby(["group", "direction"], sort=True).indices
    for at in groups.values():
        rows = air.iloc[at]
        uplink = rows["direction"].iloc[0] == channel.Direction.UPLINK.value
        bits[at], slack[at] = air_bits(rows, rows["power_w"].to_numpy(),
                                       rows["client"].to_numpy(), uplink, settings)
    # a transfer's stretches (per instant) summed: its bits over its whole air time, all
    # transfers at once (a fixed-rate link's attempts each on their own: _attempt_problems)
    keys = ["event_index", "attempt"] if "attempt" in air else ["event_index"]
    every = air.assign(bits=bits, slack=slack).groupby(["direction", *keys], sort=False).agg(
        bits=("bits", "sum"), slack=("slack", "sum"), start_s=("start_s", "min"),
        end_s=("end_s", "max"), payload=("payload", "first"), recorded=("recorded", "first"),
        attempts=("attempts", "first"), cut=("cut", "first")).reset_index()
    every = every[every["end_s"].to_numpy() <= until]
    for direction, each in every.groupby("direction", sort=True):
        if "attempt" in each:
            problems.extend(_attempt_problems(each.reset_index(drop=True), str(direction),
                                              settings, rtol))
        else:
            problems.extend(_transfer_problems(each, str(direction), settings, rtol))
    return problems


def _transfer_problems(each: pd.DataFrame, direction: str, settings: AirSettings,
                       rtol: float) -> list[str]:
    """Each transfer's bits derived again (`bits`, over its rows) against its payload and
    against its recorded rate times its air time (air_rate_problems)."""
    problems = []
    bits, slack = each["bits"].to_numpy(), each["slack"].to_numpy()
    recorded = each["recorded"].to_numpy() * settings.held_s(
        direction, each["start_s"].to_numpy(), each["end_s"].to_numpy())
    # a transfer cut short (completed 0) got its payload's whole bytes through, and less
    # than one more
    cut = each["cut"].to_numpy(bool)
    payload = each["payload"].to_numpy()
    payload = np.where(cut, np.clip(bits, payload, payload + 8.0), payload)
    for label, got in (("payload", payload), ("recorded rate", recorded)):
        wrong = np.flatnonzero(np.abs(bits - got) > rtol * np.abs(got) + 4.0 * slack)
        for i in wrong[:5].tolist():
            problems.append(f"event {int(each['event_index'].iloc[i])} ({direction}): "
                            f"{bits[i]:.6g} bits derived from the air record, "
                            f"{got[i]:.6g} by its {label}")
    return problems


def _attempt_problems(each: pd.DataFrame, direction: str, settings: AirSettings,
                      rtol: float) -> list[str]:
    """A fixed-rate link's attempts (scala_netsim.sim.network.arq), one row each with the
    mutual information derived again over it (`bits`), checked against their verdicts: a
    transfer has attempts 1..attempts; each of a delivered one sent its payload at the
    recorded rate (rate x its time = 8 x payload_bytes); all but its last failed (their
    mutual information below the bits sent) and its last got through (at least them). A
    transfer cut short (completed 0) records the share of its attempts' time it was on the
    air, not its payload: its attempts but the last failed; its last (cut by a drop, or the
    last of a lost transfer: the records cannot tell them apart) is not judged."""
    problems: list[str] = []
    counts = each.groupby("event_index")["attempt"].agg(["count", "max"])
    expected = each.groupby("event_index")["attempts"].first()
    for event in counts.index[(counts["count"] != expected) | (counts["max"] != expected)
                              ][:5].tolist():
        problems.append(f"event {event} ({direction}): attempts "
                        f"{sorted(each.loc[each['event_index'] == event, 'attempt'])} in the "
                        f"air record, {int(expected[event])} in its event")
    start, end = each["start_s"].to_numpy(float), each["end_s"].to_numpy(float)
    rate = each["recorded"].to_numpy(float)
    sent = rate * settings.held_s(direction, start, end)
    clock = 4.0 * rate * np.spacing(np.abs(start) + np.abs(end))
    bits, slack = each["bits"].to_numpy(), 4.0 * each["slack"].to_numpy()
    last = each["attempt"].to_numpy() == each["attempts"].to_numpy()
    cut = each["cut"].to_numpy(bool)
    payload = each["payload"].to_numpy()
    checks = (
        ("sent its payload at the recorded rate", ~cut,
         np.abs(sent - payload) <= rtol * payload + clock),
        ("failed", ~last, bits <= sent * (1.0 + rtol) + slack + clock),
        ("got through", last & ~cut, bits >= sent * (1.0 - rtol) - slack - clock))
    for label, judged, holds in checks:
        for i in np.flatnonzero(judged & ~holds)[:5].tolist():
            problems.append(f"event {int(each['event_index'].iloc[i])} ({direction}) attempt "
                            f"{int(each['attempt'].iloc[i])}: {bits[i]:.6g} bits of mutual "
                            f"information derived from the air record, {sent[i]:.6g} sent: "
                            f"not what its record says (it {label})")
    return problems
