"""The books of a run, checked: every violation is reported, none is fixed.

Works on tables (pandas) of what the run recorded: its events, its rounds, the sub-bands the
link granted each round and the rate each transfer was given. It checks the records against
each other, never against its own copy of the engine's formulas (the formulas themselves are
tested against hand-worked values in the test suite).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scala_netsim.books.duplexing import Duplexing
from scala_netsim.core.events import CLIENT_COMPUTE_KINDS, DOWNLINK_KINDS, UPLINK_KINDS, EventKind

UPLINK = [k.value for k in UPLINK_KINDS]
DOWNLINK = [k.value for k in DOWNLINK_KINDS]
COMPUTE = [k.value for k in CLIENT_COMPUTE_KINDS]
SERVER = EventKind.SERVER_STEP.value
REL_TOL = 1e-9


class InvariantError(AssertionError):
    """A run broke one of its invariants; `problems` lists them."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("run invariants violated:\n" + "\n".join(f"  {p}" for p in self.problems))


@dataclass(frozen=True)
class RadioSettings:
    """What recomputing events.csv's radio and energy columns takes beyond the events: the
    noise PSD (W/Hz), whether rates are Shannon's on the recorded gain (`adaptive` links), the
    energy coefficient kappa and each client's FLOP/s (clients.csv)."""

    noise_psd_w_per_hz: float     # at the base station (the uplink's receiver)
    shannon_rates: bool
    energy_coefficient: float
    flops_per_s: np.ndarray
    downlink_noise_psd_w_per_hz: float | None = None   # at the clients; None: the same


def _relative_error(value: np.ndarray, expected: np.ndarray) -> np.ndarray:
    return np.abs(value - expected) / np.maximum(np.abs(expected), 1e-300)


def _overlapping(frame: pd.DataFrame) -> np.ndarray:
    """Owners (client_id) with two intervals, consecutive by start, that overlap."""
    owner = frame["client_id"].to_numpy()
    start, end = frame["t_start_s"].to_numpy(), frame["t_end_s"].to_numpy()
    order = np.lexsort((end, start, owner))      # by owner, then start, then end
    owner, start, end = owner[order], start[order], end[order]
    slack = REL_TOL * np.maximum(1.0, np.abs(start[1:]))
    bad = (owner[1:] == owner[:-1]) & (end[:-1] > start[1:] + slack)
    return np.unique(owner[1:][bad])


def _clock_slack(moved: pd.DataFrame, held_s: np.ndarray | None = None) -> np.ndarray:
    """The relative error the clock's rounding puts in a transfer's recorded duration, and so
    in a rate recorded as its bits over that duration (a network's link, whose rate may vary
    during a transfer): the duration is the difference of two absolute times, each good to
    half a unit in its last place and reached by sums that add a few more, so 4 units in the
    last place of its end over its length. For a kilobyte model sent in 30 us, 600 s into a
    run, that is 4e-9: above REL_TOL, yet no model error. A model error (a wrong gain, power,
    band or SINR) moves a rate by a fraction of itself whatever the clock reads, so the bulk of
    the transfers (milliseconds and more) still show it to 1e-9; what the slack admits is a
    timing error of at most 4 units in the clock's last place. (The scenario refuses values
    that would push the clock out of that resolution: network.backhaul.latency_s.) Under TDD
    the rate is bits over the time of its direction's symbols (`held_s`), which it is
    relative to."""
    t_end = moved["t_end_s"].to_numpy()
    duration_s = t_end - moved["t_start_s"].to_numpy() if held_s is None else held_s
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(duration_s > 0, 4 * np.spacing(np.abs(t_end)) / duration_s, 0.0)


def _misfit_durations(moved: pd.DataFrame, attempts: np.ndarray, rate_bps: np.ndarray,
                      backhaul_s: np.ndarray | float = 0.0,
                      duplexing: Duplexing | None = None) -> int:
    """How many of the transfer events `moved` do not last attempts x payload bits / rate,
    plus the time they spent on a network's backhaul (relative 1e-9, give or take the clock's
    rounding: a duration is the difference of two absolute times, each good to half a unit in
    their last place, which for a kilobyte model late in a long run exceeds 1e-9 of it); a
    transfer cut short (events.csv `completed` 0)
    records the bytes it got through, so it lasts at least that and less than one byte more.
    Under TDD (`duplexing`) what must equal attempts x bits / rate is the time of the
    direction's symbols from its grant to its end, to the clock's rounding of each symbol
    boundary it crosses. A transfer whose client was handed over while it was in flight
    (events.csv `handovers` above 0) was off the air a while: it lasts at least that (its
    bits over each air time are derived again from the air record: air_rate_problems)."""
    t_end = moved["t_end_s"].to_numpy()
    duration_s = t_end - moved["t_start_s"].to_numpy()
    harq_s = _harq_s(moved)
    if duplexing is not None:
        duration_s = duplexing.airtime_s(moved, backhaul_s, harq_s)
        backhaul_s = harq_s = 0.0
    payload = moved["payload_bytes"].to_numpy()
    expected_s = attempts * payload * 8.0 / rate_bps + backhaul_s + harq_s
    slack = REL_TOL * np.abs(expected_s) + 4 * np.spacing(np.abs(t_end))
    bad = np.abs(duration_s - expected_s) > slack
    if "completed" in moved:
        cut = moved["completed"].to_numpy() == 0
        above_next = duration_s > (attempts * (payload + 1) * 8.0 / rate_bps + backhaul_s
                                   + harq_s + slack)
        bad = np.where(cut, (duration_s + slack < expected_s) | above_next, bad)
    if "handovers" in moved:    # (off the air while handed over: its air record's bits say)
        bad = np.where(moved["handovers"].to_numpy() > 0, duration_s + slack < expected_s,
                       bad)
    return int(bad.sum())


def check_run(events: pd.DataFrame, rounds: pd.DataFrame, grants: pd.DataFrame,
              transfers: pd.DataFrame, band_hz: dict[str, float],
              pipelined_clients: bool = False, radio: RadioSettings | None = None,
              slots: bool = False, band_grants: pd.DataFrame | None = None,
              duplexing: Duplexing | None = None, per_instant: bool = False) -> list[str]:
    """Problems found (empty when the run's books balance).

    `events` and `rounds` are events.csv and rounds.csv; `grants` has one row per (round,
    client_id, direction) with the bandwidth_hz granted; `transfers` one row per transfer
    event (event_index into `events`, bandwidth_hz, rate_bps); `band_hz` the whole band per
    direction ("uplink", "downlink").

    - the clock never goes back: events end after they start, rounds end in order;
    - a client's computations never overlap, nor do its transmissions, nor (unless the
      algorithm pipelines its clients, as SFL with local loss does) any two of its events;
      the server's steps never overlap (one processor);
    - the sub-bands granted in a round sum to at most the band, in each direction, and every
      transfer used its client's sub-band of that round (so, with a client's transmissions
      never overlapping, the bandwidth in use never exceeds the band);
    - every transfer lasts payload bits / the rate it was given (relative error below 1e-9;
      under TDD, `duplexing`, its direction's symbols from its grant to its end do);
    - bytes and FLOPs per round equal the sums over the events; the last round's sim_time_s
      is the end of its last event;
    - with `radio` (events.csv has scala_netsim.books.radio's columns): `check_radio`.

    With `slots` (an asynchronous run: each client holds a fixed slot from its start to its
    end, granted when it starts, not per round) the sub-bands are checked by
    scala_netsim.books.versions.check_asynchronous instead of round by round.

    `band_grants` (a network's: scala_netsim.sim.network.link.NetworkLink.band_grant_rows,
    where a block that clients take in turns counts once) are the grants summed over the band
    in place of `grants`; the events' sub-bands are then not summed over the band either (the
    link's own books check every cell's blocks, instant by instant). With `per_instant` (a
    network's round-robin scheduler) there are no grants for a round to match: a transfer's
    blocks change while it is on the air, and its air record is checked block by block.
    """
    problems = _clock_and_overlap_problems(events, rounds, pipelined_clients)
    if not slots:
        problems.extend(_band_problems(grants if band_grants is None else band_grants,
                                       band_hz))
    problems.extend(_transfer_problems(events, grants, transfers,
                                       match_grants=not (slots or per_instant),
                                       duplexing=duplexing))
    problems.extend(_sum_problems(events, rounds))
    if radio is not None:
        problems.extend(check_radio(events, rounds, band_hz, radio,
                                    books_check_band=slots or band_grants is not None,
                                    duplexing=duplexing))
    problems.extend(_end_problems(events, rounds))
    return problems


def _clock_and_overlap_problems(events: pd.DataFrame, rounds: pd.DataFrame,
                                pipelined_clients: bool) -> list[str]:
    problems = []
    if (events["t_end_s"] < events["t_start_s"]).any():
        problems.append(f"{int((events['t_end_s'] < events['t_start_s']).sum())} events end "
                        f"before they start")
    if (np.diff(rounds["sim_time_s"].to_numpy()) < 0).any():
        problems.append("rounds.csv: sim_time_s goes back")
    on_clients = events[events["client_id"] >= 0]
    groups = {"computations": on_clients[on_clients["kind"].isin(COMPUTE)],
              "transmissions": on_clients[on_clients["kind"].isin(UPLINK + DOWNLINK)]}
    if not pipelined_clients:
        groups["events"] = on_clients[on_clients["kind"] != SERVER]
    for what, frame in groups.items():
        problems.extend(f"client {k}: {what} overlap in time" for k in _overlapping(frame))
    server = events[events["kind"] == SERVER]
    if len(_overlapping(server.assign(client_id=0))):
        problems.append("server steps overlap on the one server processor")
    return problems


def _band_problems(grants: pd.DataFrame, band_hz: dict[str, float]) -> list[str]:
    problems = []
    for (r, direction), frame in grants.groupby(["round", "direction"]):
        total_hz = frame["bandwidth_hz"].sum()
        band = band_hz[str(direction)]
        if total_hz > band * (1 + REL_TOL):
            problems.append(f"round {r}: {direction} sub-bands granted sum to {total_hz:.6g} Hz, "
                            f"more than the band's {band:.6g} Hz")
    return problems


def _transfer_problems(events: pd.DataFrame, grants: pd.DataFrame,
                       transfers: pd.DataFrame, match_grants: bool = True,
                       duplexing: Duplexing | None = None) -> list[str]:
    problems = []
    is_transfer = events["kind"].isin(UPLINK + DOWNLINK)
    if len(transfers) != is_transfer.sum() or set(transfers["event_index"]) != set(
            np.flatnonzero(is_transfer.to_numpy())):
        problems.append(f"{int(is_transfer.sum())} transfer events but {len(transfers)} "
                        f"recorded transfer rates")
    elif len(transfers):
        moved = events.iloc[transfers["event_index"].to_numpy()]
        if match_grants:
            problems.extend(_grant_problems(moved, grants, transfers))
        bad = _misfit_durations(moved, transfers["attempts"].to_numpy(),
                                transfers["rate_bps"].to_numpy(), _backhaul_s(transfers),
                                duplexing)
        if bad:
            problems.append(f"{bad} transfers do not last attempts x payload bits / their "
                            f"rate (cut ones: the bytes they got through)")
    return problems


def _grant_problems(moved: pd.DataFrame, grants: pd.DataFrame,
                    transfers: pd.DataFrame) -> list[str]:
    """Every transfer used the sub-band its client was granted in the transfer's round (one
    cut short before it got on the air, a network's waiting for its turn on a block, used
    none: completed 0, no bytes, bandwidth 0)."""
    direction = np.where(moved["kind"].isin(UPLINK), "uplink", "downlink")
    granted = grants.set_index(["round", "client_id", "direction"])["bandwidth_hz"]
    keys = pd.MultiIndex.from_arrays([moved["round"].to_numpy(),
                                      moved["client_id"].to_numpy(), direction])
    expected_hz = granted.reindex(keys).to_numpy()
    used_hz = transfers["bandwidth_hz"].to_numpy()
    wrong = expected_hz != used_hz
    if "completed" in moved:
        wrong &= ~((moved["completed"].to_numpy() == 0) & (used_hz == 0)
                   & (moved["payload_bytes"].to_numpy() == 0))
    if wrong.any():
        return [f"{int(np.sum(wrong))} transfers used another sub-band than their client was "
                f"granted that round"]
    return []


def _sum_problems(events: pd.DataFrame, rounds: pd.DataFrame) -> list[str]:
    problems = []
    kind = events["kind"]
    sums = pd.DataFrame({
        "uplink_bytes": events["payload_bytes"].where(kind.isin(UPLINK), 0),
        "downlink_bytes": events["payload_bytes"].where(kind.isin(DOWNLINK), 0),
        "client_flops": events["flops"].where(kind.isin(COMPUTE), 0),
        "server_flops": events["flops"].where(kind == SERVER, 0),
        "round": events["round"]}).groupby("round").sum().reindex(rounds["round"], fill_value=0)
    for column in sums.columns:
        bad = rounds.set_index("round")[column] != sums[column]
        if bad.any():
            problems.append(f"rounds.csv {column} differs from the sum over events.csv in "
                            f"rounds {list(bad[bad].index[:5])}")
    return problems


def _end_problems(events: pd.DataFrame, rounds: pd.DataFrame) -> list[str]:
    if len(rounds) and len(events):
        last = rounds["round"].iloc[-1]
        end = events.loc[events["round"] == last, "t_end_s"].max()
        if not np.isclose(rounds["sim_time_s"].iloc[-1], end, rtol=REL_TOL, atol=0):
            return [f"last round's sim_time_s {rounds['sim_time_s'].iloc[-1]!r} is not the end "
                    f"of its last event {end!r}"]
    return []


def check_radio(events: pd.DataFrame, rounds: pd.DataFrame, band_hz: dict[str, float],
                radio: RadioSettings, books_check_band: bool = False,
                duplexing: Duplexing | None = None) -> list[str]:
    """Problems in events.csv's radio and energy columns, recomputed from the columns alone:

    - every transfer lasts attempts x payload_bytes x 8 / rate_bps (relative 1e-9);
    - on an adaptive link, rate_bps = bandwidth_hz log2(1 + tx_power_w 10^(gain_db/10) /
      (N0 bandwidth_hz)) (relative 1e-9);
    - the sub-bands the round's transfers used sum to at most the band, in each direction
      (not where `books_check_band`: an asynchronous run's version is no unit of time, its
      clients' slots are checked instant by instant, scala_netsim.books.versions; a
      network's link checks its cells' blocks itself);
    - energy_j: tx_power_w x its airtime (attempts x bits / rate_bps) for uploads, kappa x
      flops x (FLOP/s)^2 for client computations, 0 for everything else; rounds.csv's energy
      columns are its sums.
    """
    kind = events["kind"]
    is_up, is_down = kind.isin(UPLINK).to_numpy(), kind.isin(DOWNLINK).to_numpy()
    problems = _rate_problems(events[is_up | is_down], None if books_check_band else band_hz,
                              radio, duplexing)
    problems.extend(_energy_problems(events, rounds, radio, is_up))
    return problems


def _rate_problems(moved: pd.DataFrame, band_hz: dict[str, float] | None,
                   radio: RadioSettings, duplexing: Duplexing | None = None) -> list[str]:
    problems = []
    bandwidth_hz, rate_bps = moved["bandwidth_hz"].to_numpy(), moved["rate_bps"].to_numpy()
    bad = _misfit_durations(moved, moved["attempts"].to_numpy(), rate_bps, _backhaul_s(moved),
                            duplexing)
    if bad:
        problems.append(f"events.csv: {bad} transfers do not last attempts x payload_bytes x 8 "
                        f"/ rate_bps (+ backhaul_s; cut ones, completed 0: the bytes they got "
                        f"through)")
    if radio.shannon_rates and len(moved):
        down_noise = (radio.noise_psd_w_per_hz if radio.downlink_noise_psd_w_per_hz is None
                      else radio.downlink_noise_psd_w_per_hz)
        noise = np.where(moved["kind"].isin(UPLINK).to_numpy(), radio.noise_psd_w_per_hz,
                         down_noise)
        snr = (moved["tx_power_w"].to_numpy() * 10.0 ** (moved["gain_db"].to_numpy() / 10.0)
               / (noise * bandwidth_hz))
        error = _relative_error(rate_bps, bandwidth_hz * np.log2(1.0 + snr))
        tolerance: np.ndarray | float = REL_TOL
        if "interference_dbm" in moved:      # a network: only the quiet ones at the SNR
            held = (None if duplexing is None
                    else duplexing.airtime_s(moved, _backhaul_s(moved), _harq_s(moved)))
            tolerance = REL_TOL + _clock_slack(moved, held)   # rates: bits over air time
            problems.extend(_sinr_problems(moved, snr, rate_bps, bandwidth_hz, tolerance))
            error = np.where(moved["interference_dbm"].to_numpy() == -np.inf, error, 0.0)
        if (error >= tolerance).any():
            problems.append(f"events.csv: {int((error >= tolerance).sum())} transfers' rate_bps "
                            f"is not bandwidth_hz log2(1 + tx_power_w 10^(gain_db/10) / (N0 "
                            f"bandwidth_hz)) (largest relative error {np.nanmax(error):.3g})")
    if band_hz is None:
        return problems
    used = moved.assign(direction=np.where(moved["kind"].isin(UPLINK), "uplink", "downlink"))
    per_client = used.groupby(["round", "direction", "client_id"])["bandwidth_hz"].max()
    for (r, direction), total_hz in per_client.groupby(level=[0, 1]).sum().items():
        if total_hz > band_hz[direction] * (1 + REL_TOL):
            problems.append(f"events.csv: round {r}: the {direction} sub-bands used sum to "
                            f"{total_hz:.6g} Hz, more than the band's "
                            f"{band_hz[direction]:.6g} Hz")
    return problems


def _backhaul_s(frame: pd.DataFrame) -> np.ndarray | float:
    """The time each transfer spent on a network's backhaul (0 without one)."""
    return frame["backhaul_s"].to_numpy() if "backhaul_s" in frame else 0.0


def _harq_s(frame: pd.DataFrame) -> np.ndarray | float:
    """The time each transfer's last transport block waited for its HARQ retransmissions
    (the NR link abstraction; 0 without it)."""
    return frame["harq_wait_s"].to_numpy() if "harq_wait_s" in frame else 0.0


def _sinr_problems(moved: pd.DataFrame, snr: np.ndarray, rate_bps: np.ndarray,
                   bandwidth_hz: np.ndarray, tolerance: np.ndarray | float) -> list[str]:
    """A network's transfers: the SINR is at most the SNR (at the recorded gain, power and
    sub-band), equal to it where nothing interfered, and the rate at most Shannon's at the
    SNR (give or take `tolerance`, relative)."""
    problems = []
    snr_db = 10.0 * np.log10(snr)
    sinr_db = moved["sinr_db"].to_numpy()
    quiet = moved["interference_dbm"].to_numpy() == -np.inf
    if (sinr_db > snr_db + 1e-9).any():
        problems.append(f"events.csv: {int((sinr_db > snr_db + 1e-9).sum())} transfers' sinr_db "
                        f"is above their SNR")
    if (np.abs(sinr_db - snr_db)[quiet] > 1e-9).any():
        problems.append("events.csv: transfers nothing interfered with have an sinr_db other "
                        "than their SNR")
    if (rate_bps > bandwidth_hz * np.log2(1.0 + snr) * (1 + tolerance)).any():
        problems.append("events.csv: transfers faster than Shannon's rate at their SNR")
    return problems


def _energy_problems(events: pd.DataFrame, rounds: pd.DataFrame, radio: RadioSettings,
                     is_up: np.ndarray) -> list[str]:
    problems = []
    kind = events["kind"]
    expected_j = np.zeros(len(events))
    sent = events[is_up]
    expected_j[is_up] = sent["tx_power_w"].to_numpy() * (
        sent["attempts"].to_numpy() * sent["payload_bytes"].to_numpy() * 8.0
        / sent["rate_bps"].to_numpy())
    computes = kind.isin(COMPUTE).to_numpy() & (events["client_id"].to_numpy() >= 0)
    f = radio.flops_per_s[events["client_id"].to_numpy()[computes]]
    expected_j[computes] = radio.energy_coefficient * events["flops"].to_numpy()[computes] * f * f
    energy_j = events["energy_j"].to_numpy()
    bad = np.abs(energy_j - expected_j) > REL_TOL * np.abs(expected_j)
    if bad.any():
        problems.append(f"events.csv: {int(bad.sum())} events' energy_j is not tx_power_w x "
                        f"attempts x payload bits / rate_bps (uploads), kappa x flops x "
                        f"(FLOP/s)^2 (client computations) or 0 (the rest)")
    if "client_energy_j" in rounds:
        sums = pd.DataFrame({
            "client_energy_j": energy_j,
            "client_transmit_energy_j": np.where(is_up, energy_j, 0.0),
            "client_compute_energy_j": np.where(is_up, 0.0, energy_j),
            "round": events["round"].to_numpy()}).groupby("round").sum().reindex(
                rounds["round"], fill_value=0.0)
        for column in sums.columns:
            error = _relative_error(rounds[column].to_numpy(), sums[column].to_numpy())
            if (error >= REL_TOL).any():
                problems.append(f"rounds.csv {column} differs from the sum of events.csv's "
                                f"energy_j in rounds "
                                f"{list(rounds['round'][error >= REL_TOL][:5])}")
    return problems


@dataclass(frozen=True)
class DropSettings:
    """What checking who contributed takes beyond the records: each client's label counts
    (clients.csv's label_<c>) and the round's aggregations (round, group, client_id, weight;
    None when the trainer reports none, e.g. a re-timing)."""

    label_counts: np.ndarray
    aggregations: pd.DataFrame | None = None


def check_drops(events: pd.DataFrame, rounds: pd.DataFrame, demands: pd.DataFrame,
                drops: DropSettings) -> list[str]:
    """Problems in the records of who the network dropped (a run whose clients can be
    dropped: events.csv has `completed` and `client_dropped` events, rounds.csv the
    num_selected ... label_bias_tv columns):

    - num_selected is the round's selected clients (its rows of demands.csv), num_dropped its
      client_dropped events, and num_selected = num_contributing + num_dropped;
    - contrib_label_<c> are the label counts summed over the contributors (selected, not
      dropped);
    - a dropped client has no event after its drop in that round (none ends later, none is
      recorded after it);
    - every aggregation's weights sum to 1; each average was over the round's contributors
      exactly (FedConcat's per-cluster averages: together over the contributors).
    """
    dropped = events[events["kind"] == EventKind.CLIENT_DROPPED.value]
    problems, contributors = _count_problems(dropped, rounds, demands, drops)
    problems.extend(_after_drop_problems(events, dropped))
    if drops.aggregations is not None:
        problems.extend(_aggregation_problems(drops.aggregations, contributors))
    return problems


def _count_problems(dropped: pd.DataFrame, rounds: pd.DataFrame, demands: pd.DataFrame,
                    drops: DropSettings) -> tuple[list[str], dict[int, list[int]]]:
    """The per-round counts and contributors' labels; -> (problems, contributors by round)."""
    problems = []
    by_round = rounds.set_index("round")
    selected = demands.groupby("round")["client_id"].apply(list)
    gone = dropped.groupby("round")["client_id"].apply(set)
    contributors = {}
    for r in by_round.index:
        chosen = selected.get(r, [])
        out = gone.get(r, set())
        contributors[r] = [k for k in chosen if k not in out]
        row = by_round.loc[r]
        if row["num_selected"] != len(chosen) or row["num_dropped"] != len(out) or \
                row["num_selected"] != row["num_contributing"] + row["num_dropped"]:
            problems.append(f"round {r}: num_selected {row['num_selected']}, num_contributing "
                            f"{row['num_contributing']}, num_dropped {row['num_dropped']} do "
                            f"not match its {len(chosen)} selected clients and {len(out)} "
                            f"client_dropped events")
        counts = (drops.label_counts[contributors[r]].sum(axis=0) if contributors[r]
                  else np.zeros(drops.label_counts.shape[1], dtype=int))
        recorded = row[[f"contrib_label_{c}" for c in range(len(counts))]].to_numpy()
        if not np.array_equal(recorded.astype(np.int64), counts.astype(np.int64)):
            problems.append(f"round {r}: contrib_label_* are not the contributors' label counts")
    return problems, contributors


def _after_drop_problems(events: pd.DataFrame, dropped: pd.DataFrame) -> list[str]:
    marks = pd.DataFrame({"round": dropped["round"], "client_id": dropped["client_id"],
                          "drop_s": dropped["t_end_s"],
                          "drop_at": np.flatnonzero(events["kind"].to_numpy()
                                                    == EventKind.CLIENT_DROPPED.value)})
    ordered = events[["round", "client_id", "t_end_s"]].assign(at=np.arange(len(events)))
    theirs = ordered.merge(marks, on=["round", "client_id"])     # the dropped clients' events
    theirs = theirs[theirs["at"] != theirs["drop_at"]]
    later = theirs[(theirs["t_end_s"] > theirs["drop_s"] * (1 + REL_TOL))
                   | (theirs["at"] > theirs["drop_at"])]
    return [f"round {r}: client {k} has {len(frame)} events after its drop"
            for (r, k), frame in later.groupby(["round", "client_id"])]


def _aggregation_problems(aggregations: pd.DataFrame,
                          contributors: Mapping[Any, list[int]]) -> list[str]:
    problems = []
    for (r, group), frame in aggregations.groupby(["round", "group"]):
        if abs(frame["weight"].sum() - 1.0) > REL_TOL:
            problems.append(f"round {r}: the {group} aggregation's weights sum to "
                            f"{float(frame['weight'].sum())!r}, not 1")
        if not str(group).startswith("cluster") and \
                sorted(frame["client_id"]) != sorted(contributors.get(r, [])):
            problems.append(f"round {r}: the {group} aggregation averaged clients "
                            f"{sorted(frame['client_id'])}, not the contributors "
                            f"{sorted(contributors.get(r, []))}")
    averaged = set(aggregations["round"])
    silent = [r for r, ks in contributors.items() if ks and r not in averaged]
    if silent:
        problems.append(f"rounds {silent[:5]}: contributors but no aggregation")
    clusters = aggregations[aggregations["group"].str.startswith("cluster")]
    for r, frame in clusters.groupby("round"):
        if sorted(frame["client_id"]) != sorted(contributors.get(r, [])):
            problems.append(f"round {r}: the cluster aggregations averaged clients "
                            f"{sorted(frame['client_id'])}, not the contributors")
    return problems
