"""The books of an asynchronous run (scala_netsim.sim.async_protocols), checked from what it
recorded: events.csv (with its `version` and `staleness` columns), rounds.csv (one row per
global version) and the sub-band each transfer used."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scala_netsim.books.rounds import BUCKETS
from scala_netsim.core.events import EventKind

REL_TOL = 1e-9


def check_asynchronous(events: pd.DataFrame, rounds: pd.DataFrame, transfers: pd.DataFrame,
                       band_hz: dict[str, float], concurrency: int,
                       slots: bool = True) -> list[str]:
    """Problems found (empty when the books balance):

    - versions increase by one from 1; each server_update's `version` is the version being
      built when it arrived (its `round`);
    - staleness >= 0, and equal to the number of versions made between the client's download
      start and its upload's arrival (rounds.csv's sim_time_s of each version);
    - no client trains twice at once (from its download's start to its update), and at most
      `concurrency` (Q) clients train at any time;
    - every transfer used a slot of 1/Q of its band, so that the sub-bands in use never sum
      to more than the band (`slots`: a single cell's; a network's round-robin air grants
      blocks per transfer and checks them itself, books.blocks).
    """
    problems = []
    versions = rounds["round"].to_numpy()
    if not np.array_equal(versions, np.arange(1, len(versions) + 1)):
        problems.append("rounds.csv: the global versions do not increase by one from 1")
    updates = events[events["kind"] == EventKind.SERVER_UPDATE.value]
    if (updates["version"] != updates["round"]).any():
        problems.append("server_update rows whose version is not the version being built")
    if (updates["staleness"] < 0).any():
        problems.append(f"{int((updates['staleness'] < 0).sum())} updates with negative "
                        f"staleness")
    problems.extend(_flight_problems(events, updates, rounds["sim_time_s"].to_numpy(),
                                     concurrency))
    if slots:
        problems.extend(_slot_problems(events, transfers, band_hz, concurrency))
    return problems


def _flights(events: pd.DataFrame, updates: pd.DataFrame) -> pd.DataFrame:
    """One row per finished training of a client: its download's start, its update's time,
    its recorded staleness."""
    downloads = events[events["kind"] == EventKind.MODEL_DOWNLOAD.value]
    rows = []
    for k, mine in updates.groupby("client_id"):
        starts = downloads.loc[downloads["client_id"] == k, "t_start_s"].to_numpy()
        for t, staleness in zip(mine["t_end_s"], mine["staleness"], strict=True):
            before = starts[starts < t]
            rows.append((k, before.max() if len(before) else np.nan, t, staleness))
    return pd.DataFrame(rows, columns=["client_id", "start_s", "end_s", "staleness"])


def _flight_problems(events: pd.DataFrame, updates: pd.DataFrame, made_s: np.ndarray,
                     concurrency: int) -> list[str]:
    problems = []
    flights = _flights(events, updates)
    if flights["start_s"].isna().any():
        problems.append("an update from a client that downloaded nothing before it")
        return problems
    expected = [int(((made_s > start) & (made_s < end)).sum())
                for start, end in zip(flights["start_s"], flights["end_s"], strict=True)]
    wrong = int((flights["staleness"].to_numpy() != np.asarray(expected)).sum())
    if wrong:
        problems.append(f"{wrong} updates whose staleness is not the number of versions made "
                        f"between their client's download and their arrival")
    for k, mine in flights.sort_values("start_s").groupby("client_id"):
        if (mine["start_s"].to_numpy()[1:] < mine["end_s"].to_numpy()[:-1]).any():
            problems.append(f"client {k} trains twice at once")
    # the clients in flight at any instant: starts add one, ends take one (an end first
    # when both happen at one instant: the next client starts when the last one ends)
    in_flight = events[events["kind"] == EventKind.MODEL_DOWNLOAD.value]
    marks = sorted([(t, 1) for t in in_flight["t_start_s"]] +
                   [(t, -1) for t in updates["t_end_s"]])
    most = max(np.cumsum([m for _, m in marks]), default=0)
    if most > concurrency:
        problems.append(f"{most} clients in flight at once, more than Q = {concurrency}")
    return problems


def _slot_problems(events: pd.DataFrame, transfers: pd.DataFrame, band_hz: dict[str, float],
                   concurrency: int) -> list[str]:
    if not len(transfers):
        return []
    moved = events.iloc[transfers["event_index"].to_numpy()]
    uplink = [kind.value for kind in EventKind if kind.is_uplink]
    direction = np.where(moved["kind"].isin(uplink), "uplink", "downlink")
    slot = np.array([band_hz[d] / concurrency for d in direction])
    used = transfers["bandwidth_hz"].to_numpy()
    bad = int((np.abs(used - slot) > REL_TOL * slot).sum())
    return [f"{bad} transfers did not use a slot of 1/Q of their band"] if bad else []


def listening_summary(updates: dict[int, tuple[int, int]], client_of: list[int],
                      flops_per_s: np.ndarray, gain_linear: np.ndarray) -> dict:
    """summary.json's figures on whom an asynchronous server listened to: the updates each
    client contributed (mean, min and max over the clients, and the share of the clients that
    contributed none), their Pearson correlation with the clients' compute speed and with their
    channel gain in dB (fast and well-placed clients finish more often), and the mean and
    maximum staleness. `updates`: event index -> (version, staleness) of each server_update;
    `client_of`: each event's client."""
    counts = np.zeros(len(flops_per_s))
    for index in updates:
        counts[client_of[index]] += 1
    staleness = np.array([s for _, s in updates.values()], dtype=float)

    def correlation(x: np.ndarray) -> float:
        return float(np.corrcoef(counts, x)[0, 1]) if counts.std() > 0 else float("nan")

    return {"updates_per_client_mean": float(counts.mean()),
            "updates_per_client_min": int(counts.min()),
            "updates_per_client_max": int(counts.max()),
            "clients_without_update": float((counts == 0).mean()),
            "updates_compute_correlation": correlation(np.asarray(flops_per_s, float)),
            "updates_gain_correlation": correlation(10 * np.log10(gain_linear)),
            "staleness_mean": float(staleness.mean()) if len(staleness) else float("nan"),
            "staleness_max": int(staleness.max()) if len(staleness) else 0}


def version_row(row: dict, taken: list[tuple[int, int]], contributors: list[int],
                label_counts: np.ndarray, in_flight: int) -> dict:
    """An asynchronous run's row of rounds.csv: a round's row (bytes, FLOPs, time since the
    last version) without the critical path (clients overlap; no chain of steps made the
    version), with the arrivals since the last version, their staleness (mean and maximum),
    the clients in flight when it was made, and the label counts of the data its contributors
    trained on (their whole local data)."""
    row = {k: v for k, v in row.items() if k not in BUCKETS}
    staleness = [s for _, s in taken]
    counts = label_counts[contributors].sum(axis=0)
    row.update({"num_arrivals": len(taken), "staleness_mean": float(np.mean(staleness)),
                "staleness_max": int(max(staleness)), "in_flight": in_flight})
    row.update({f"contrib_label_{c}": int(n) for c, n in enumerate(counts)})
    return row
