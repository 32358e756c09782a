"""Every rate of a network's transfers derived again from its air record (air.csv:
core.columns.AIR_COLUMNS, books.blocks.AirSettings) with the reference formula
(channel.network.transfer_rates), independently of the incremental air
(scala_netsim.sim.network.air) that timed it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

import channel
from scala_netsim.books.blocks import AirSettings

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
    attempt = air["attempt"].to_numpy() if "attempt" in air else None
    moving = settings.moves is not None   # (and where clients move, by their moves')
    every_gain = None if coherence_s is not None or moving else settings.gains(
        events, client, attempt)
    direction = str(air["direction"].iloc[0])
    # does a stretch hold a set of blocks in several runs (a row a run, one start)?
    runs = bool(air.duplicated(["event_index", "start_s"]).any())
    bits, slack = np.zeros(len(air)), np.zeros(len(air))
    span = (float(start.min()), float(end.max()))
    moved = [] if settings.moves is None else settings.moves.instants_in(client, *span)
    instants = np.unique(np.concatenate([start, end, settings.blocks_in(*span), moved]))
    held = settings.held_s(direction, instants[:-1], instants[1:])
    for t0, t1, dt in zip(instants[:-1].tolist(), instants[1:].tolist(), held.tolist(),
                          strict=True):
        on = np.flatnonzero((start <= t0) & (end >= t1) & (count > 0))   # (not parked)
        if not len(on):
            continue
        middle = (t0 + t1) / 2
        if coherence_s is not None:
            gains = settings.block_gains(client[on], math.floor(middle / coherence_s),
                                         direction, middle)
        elif moving:
            gains = settings.gains(events[on], client[on],
                                   None if attempt is None else attempt[on], middle)
        else:
            assert every_gain is not None
            gains = every_gain[on]
        transfers, on = _transfers_on(on, events if runs else None, cell, first, count,
                                      power_w, gains, settings.blocks[direction])
        if settings.load_floor is not None and direction in settings.load_floor:
            assert settings.load_share is not None      # (the fluid model's: both or none)
            transfers = dataclasses.replace(
                transfers, floor_w=settings.floor(direction, client[on], cell[on], middle),
                share=settings.load_share[direction][cell[on]])
        rates = channel.network.transfer_rates(
            transfers, settings.blocks[direction], settings.block_hz,
            settings.noise_w[direction] / settings.block_hz, settings.interference, uplink,
            None if settings.nr is None else settings.nr[direction])
        bits[on] += rates.rate_bps * dt
        slack[on] += rates.rate_bps * np.spacing(abs(t0) + abs(t1))
    return bits, slack


def _transfers_on(on: np.ndarray, events: np.ndarray | None, cell: np.ndarray,
                  first: np.ndarray, count: np.ndarray, power_w: np.ndarray,
                  gains: np.ndarray, total: int
                  ) -> tuple[channel.network.Transfers, np.ndarray]:
    """The transfers of the air rows `on` (those on the air throughout an interval; `gains`
    their rows' gains to every cell), one a transfer: a transfer whose blocks are a set of
    several runs has a row a run (scala_netsim.sim.network.rows.block_runs), taken together
    as one transfer on the union of its runs (`events`: each row's event; None: no set in
    several runs). -> them, and the row each is counted on (its first)."""
    if events is not None:
        taken, at = np.unique(events[on], return_index=True)    # (at: each's first row)
    if events is None or len(taken) == len(on):     # every set a range: the rows themselves
        return channel.network.Transfers(cell[on], first[on], count[on], power_w[on],
                                         gains[np.arange(len(on)), cell[on]], gains), on
    which = np.searchsorted(taken, events[on])
    held = np.zeros((len(taken), total), dtype=bool)
    for i, f, n in zip(which.tolist(), first[on].tolist(), count[on].tolist(), strict=True):
        held[i, f:f + n] = True
    rows = on[at]
    return channel.network.Transfers(cell[rows], first[rows], held.sum(axis=1), power_w[rows],
                                     gains[at, cell[rows]], gains[at], held), rows


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
                      rtol: float = 1e-9, until: float = math.inf,
                      traffic: pd.DataFrame | None = None) -> list[str]:
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
    (they stay in as the others' interferers, which they were). With other users' traffic
    (`traffic`: traffic.csv; `air` then holds its files' rows as negative events,
    books.traffic.with_background) each file's bits derived again equal its bits (its
    delivered bits where it had not ended, or had infinite bits: a full-buffer user's)."""
    problems = []
    air = air.assign(**_senders(air, events, traffic))
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
    every = air.assign(bits=bits, slack=slack, held=_stretch_held(air, settings)).groupby(
        ["direction", *keys], sort=False).agg(
        bits=("bits", "sum"), slack=("slack", "sum"), start_s=("start_s", "min"),
        end_s=("end_s", "max"), payload=("payload", "first"), recorded=("recorded", "first"),
        attempts=("attempts", "first"), cut=("cut", "first"), held=("held", "sum")
    ).reset_index()
    every = every[every["end_s"].to_numpy() <= until]
    for direction, each in every.groupby("direction", sort=True):
        if "attempt" in each:
            problems.extend(_attempt_problems(each.reset_index(drop=True), str(direction),
                                              settings, rtol))
        else:
            problems.extend(_transfer_problems(each, str(direction), settings, rtol))
    return problems


def _senders(air: pd.DataFrame, events: pd.DataFrame,
             traffic: pd.DataFrame | None) -> dict[str, np.ndarray]:
    """Each air row's round, client, power, payload (bits), recorded rate, attempts and
    whether it was cut, from its event; a background file's row (a negative event) from
    traffic.csv: its user's row of the radio map, its bits (what it delivered where they are
    not all through), no recorded rate, no round (-1)."""
    index = air["event_index"].to_numpy()
    learning = index >= 0
    moved = events.iloc[index[learning]]
    n = len(air)
    columns = {"round": np.full(n, -1, np.int64), "client": np.zeros(n, np.int64),
               "power_w": np.full(n, np.nan), "payload": np.full(n, np.nan),
               "recorded": np.full(n, np.nan), "attempts": np.ones(n, np.int64),
               "cut": np.zeros(n, dtype=bool)}
    columns["round"][learning] = moved["round"].to_numpy()
    columns["client"][learning] = moved["client_id"].to_numpy()
    columns["power_w"][learning] = moved["tx_power_w"].to_numpy(float)
    columns["payload"][learning] = 8.0 * moved["payload_bytes"].to_numpy(float)
    columns["recorded"][learning] = moved["rate_bps"].to_numpy(float)
    if "attempts" in moved:
        columns["attempts"][learning] = moved["attempts"].to_numpy()
    if "completed" in moved:
        columns["cut"][learning] = moved["completed"].to_numpy() == 0
    if traffic is not None and not learning.all():
        files = traffic.set_index("file").loc[-1 - index[~learning]]
        bits = files["bits"].to_numpy(float)
        whole = np.isfinite(bits) & np.isfinite(files["end_s"].to_numpy(float))
        columns["client"][~learning] = files["client_id"].to_numpy()
        columns["power_w"][~learning] = air["tx_power_w"].to_numpy(float)[~learning]
        columns["payload"][~learning] = np.where(whole, bits,
                                                 files["delivered_bits"].to_numpy(float))
    return columns


def _transfer_problems(each: pd.DataFrame, direction: str, settings: AirSettings,
                       rtol: float) -> list[str]:
    """Each transfer's bits derived again (`bits`, over its rows) against its payload and
    against its recorded rate times its air time (air_rate_problems)."""
    problems = []
    bits, slack = each["bits"].to_numpy(), each["slack"].to_numpy()
    held = (each["held"].to_numpy() if settings.moves is not None   # (legs apart in time)
            else settings.held_s(direction, each["start_s"].to_numpy(),
                                 each["end_s"].to_numpy()))
    recorded = each["recorded"].to_numpy() * held
    # a transfer cut short (completed 0) got its payload's whole bytes through, and less
    # than one more
    cut = each["cut"].to_numpy(bool)
    payload = each["payload"].to_numpy()
    payload = np.where(cut, np.clip(bits, payload, payload + 8.0), payload)
    for label, got in (("payload", payload), ("recorded rate", recorded)):
        # (a background file records no rate: NaN, not judged)
        wrong = np.flatnonzero(np.abs(bits - got) > rtol * np.abs(got) + 4.0 * slack)
        for i in wrong[:5].tolist():
            event = int(each['event_index'].iloc[i])
            problems.append(f"{_named(event)} ({direction}): "
                            f"{bits[i]:.6g} bits derived from the air record, "
                            f"{got[i]:.6g} by its {label}")
    return problems


def _stretch_held(air: pd.DataFrame, settings: AirSettings) -> np.ndarray:
    """Where clients move, each air row's time moving bits (AirSettings.held_s), once for a
    stretch (its other runs of blocks 0): summed over a transfer, its air time in all the
    cells it was handed over between, without the interruptions (0 elsewhere: unused)."""
    if settings.moves is None:
        return np.zeros(len(air))
    start, end = air["start_s"].to_numpy(float), air["end_s"].to_numpy(float)
    held = np.zeros(len(air))
    for direction, rows in air.groupby("direction").indices.items():
        held[rows] = settings.held_s(str(direction), start[rows], end[rows])
    return np.where(air.duplicated(["event_index", "start_s"]).to_numpy(), 0.0, held)


def _named(event: int) -> str:
    """An air row's sender: event k, or background file f (event -1 - f)."""
    return f"event {event}" if event >= 0 else f"background file {-1 - event}"


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
