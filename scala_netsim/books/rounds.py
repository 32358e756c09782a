"""A round's row of rounds.csv (core.columns.ROUND_COLUMNS and what follows them), derived
from the round's events (the one place it is built), with its columns on the clients a
network dropped."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scala_netsim.core.columns import (
    CRITICAL_PATH_COLUMNS,
    DROP_COLUMNS,
    EVENT_COLUMNS,
    TOTAL_COLUMNS,
)
from scala_netsim.core.events import DROP_REASONS, EventKind

if TYPE_CHECKING:
    from scala_netsim.learn.contract import Evaluation

# Which critical-path bucket each event kind falls in.
CRITICAL_PATH_BUCKET = {
    EventKind.CLIENT_FORWARD: "compute_time_s",
    EventKind.CLIENT_BACKWARD: "compute_time_s",
    EventKind.ACTIVATION_UPLOAD: "uplink_time_s",
    EventKind.MODEL_UPLOAD: "uplink_time_s",
    EventKind.MODEL_DOWNLOAD: "downlink_time_s",
    EventKind.GRADIENT_DOWNLOAD: "downlink_time_s",
    EventKind.SERVER_STEP: "server_time_s",
}
# Which total of rounds.csv each event kind adds to: (column, True = its bytes, False = FLOPs).
TOTAL_OF = {
    EventKind.ACTIVATION_UPLOAD: ("uplink_bytes", True),
    EventKind.MODEL_UPLOAD: ("uplink_bytes", True),
    EventKind.MODEL_DOWNLOAD: ("downlink_bytes", True),
    EventKind.GRADIENT_DOWNLOAD: ("downlink_bytes", True),
    EventKind.CLIENT_FORWARD: ("client_flops", False),
    EventKind.CLIENT_BACKWARD: ("client_flops", False),
    EventKind.SERVER_STEP: ("server_flops", False),
    EventKind.CLIENT_DROPPED: None,   # a mark, no cost
    EventKind.SERVER_UPDATE: None,    # a mark, no cost
}
BUCKETS = CRITICAL_PATH_COLUMNS
# Positions in an event row (EventLog.rows, Event.as_row): rounds of a timing-only run of
# 10,000 clients have thousands of events, read here as the plain rows the log keeps.
T_START, T_END, KIND, PAYLOAD, FLOPS = (EVENT_COLUMNS.index(c) for c in (
    "t_start_s", "t_end_s", "kind", "payload_bytes", "flops"))


def critical_path_s(events: Sequence[Sequence], round_start_s: float,
                    round_end_s: float) -> dict[str, float]:
    """Seconds of the round's critical path spent in each bucket; they add up to the round's
    duration. `events` are the round's event rows (EventLog.rows).

    Walks back from the round's end: the event that ends at the current instant was on the
    critical path (every step starts the moment the step it waits for ends), so take it and
    continue from its start. Where no event ends at that instant (a wait in a queue) the gap
    to the latest earlier end counts as idle.
    """
    times = dict.fromkeys(BUCKETS, 0.0)
    ending_at: dict[float, Sequence] = {}
    for e in events:
        if e[T_END] > e[T_START]:
            ending_at.setdefault(e[T_END], e)   # the first logged event that ends then
    ends = sorted(ending_at)
    t = round_end_s
    while t > round_start_s:
        last = ending_at.get(t)
        if last is not None:
            times[CRITICAL_PATH_BUCKET[last[KIND]]] += last[T_END] - last[T_START]
            t = last[T_START]
            continue
        i = bisect.bisect_left(ends, t)
        previous = max(ends[i - 1], round_start_s) if i > 0 else round_start_s
        times["idle_time_s"] += t - previous
        t = previous
    return times


def round_row(round_: int, events: Sequence[Sequence], round_start_s: float,
              round_end_s: float, num_clients: int, evaluation: Evaluation | None = None,
              energy: dict[str, float] | None = None, drops: dict | None = None) -> dict:
    """One row of rounds.csv from the round's event rows (EventLog.rows; an event's kind may be
    the EventKind or its text, which hash and compare alike): bytes each way, FLOPs on clients
    and server, the critical path, the number of participants, the clients' energy when the
    run records it (`energy`, scala_netsim.books.radio.round_energy), who contributed when
    clients can be dropped (`drops`, drop_columns) and, in evaluated
    rounds, the test metrics (`evaluation`, an `Evaluation`; test_acc is NaN in the other
    rounds)."""
    totals = dict.fromkeys(TOTAL_COLUMNS, 0)
    for e in events:  # one pass
        total = TOTAL_OF[e[KIND]]
        if total is not None:
            column, moved = total
            totals[column] += e[PAYLOAD] if moved else e[FLOPS]
    row = {"round": round_, "sim_time_s": round_end_s,
           "round_time_s": round_end_s - round_start_s, **totals}
    row.update(critical_path_s(events, round_start_s, round_end_s))
    row["num_clients"] = num_clients
    if energy is not None:
        row.update(energy)
    if drops is not None:
        row.update(drops)
    row["test_acc"] = float("nan")
    if evaluation is not None:
        row.update(test_acc=evaluation.accuracy, test_loss=evaluation.loss,
                   **{f"acc_class_{c}": float(a) for c, a in enumerate(evaluation.per_class)})
    return {k: _plain(v) for k, v in row.items()}


def _plain(value: Any) -> Any:
    """numpy scalars -> Python numbers (rows are written to CSV and kept in checkpoints)."""
    return value.item() if isinstance(value, np.generic) else value


def drop_columns(selected: list[int], dropped: list[tuple[int, str]],
                 label_counts: np.ndarray) -> dict:
    """rounds.csv's columns on who the network dropped (when it can): how many clients were
    selected, contributed (were aggregated) and were dropped (in all and per reason), the
    contributors' label counts, and the total variation distance between the contributors'
    label distribution and the selected clients' (NaN when nobody contributed)."""
    gone = {k for k, _ in dropped}
    contributors = [k for k in selected if k not in gone]
    selected_counts = label_counts[selected].sum(axis=0)
    counts = (label_counts[contributors].sum(axis=0) if contributors
              else np.zeros_like(selected_counts))
    row: dict[str, Any] = dict(zip(DROP_COLUMNS, (len(selected), len(contributors),
                                                  len(dropped)), strict=True))
    row.update({f"num_dropped_{reason}": sum(r == reason for _, r in dropped)
                for reason in DROP_REASONS})
    row.update({f"contrib_label_{c}": int(n) for c, n in enumerate(counts)})
    row["label_bias_tv"] = (label_bias_tv(counts, selected_counts) if contributors
                            else math.nan)
    return row


def label_bias_tv(counts: np.ndarray, reference: np.ndarray) -> float:
    """Total variation distance 1/2 sum_c |p_c - q_c| between the label distributions of two
    count vectors."""
    p, q = np.asarray(counts, float), np.asarray(reference, float)
    return float(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
