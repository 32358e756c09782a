"""Per-round figures derived from the event rows of one round."""

import bisect

# Which critical-path bucket each event kind falls in.
CRITICAL_PATH_BUCKET = {
    "client_forward": "compute_time_s",
    "client_backward": "compute_time_s",
    "activation_upload": "uplink_time_s",
    "model_upload": "uplink_time_s",
    "model_download": "downlink_time_s",
    "gradient_download": "downlink_time_s",
    "server_step": "server_time_s",
}
BUCKETS = ("compute_time_s", "uplink_time_s", "downlink_time_s", "server_time_s", "idle_time_s")
UPLINK_KINDS = ("activation_upload", "model_upload")
DOWNLINK_KINDS = ("model_download", "gradient_download")


def critical_path_s(events, round_start_s: float, round_end_s: float) -> dict:
    """Seconds of the round's critical path spent in each bucket; they add up to the round's
    duration.

    Walks back from the round's end: the event that ends at the current instant was on the
    critical path (every step starts the moment the step it waits for ends), so take it and
    continue from its start. Where no event ends at that instant (a wait in a queue) the gap
    to the latest earlier end counts as idle.
    """
    times = {b: 0.0 for b in BUCKETS}
    ending_at = {}
    for e in events:
        if e[1] > e[0]:
            ending_at.setdefault(e[1], e)    # the first logged event that ends at that instant
    ends = sorted(ending_at)
    t = round_end_s
    while t > round_start_s:
        e = ending_at.get(t)
        if e is not None:
            times[CRITICAL_PATH_BUCKET[e[5]]] += e[1] - e[0]
            t = e[0]
            continue
        i = bisect.bisect_left(ends, t)
        previous = max(ends[i - 1], round_start_s) if i > 0 else round_start_s
        times["idle_time_s"] += t - previous
        t = previous
    return times


def round_row(round_: int, events, round_start_s: float, round_end_s: float) -> dict:
    """Totals of one round: bytes each way, FLOPs on clients and server, critical path."""
    row = {
        "round": round_,
        "sim_time_s": round_end_s,
        "round_time_s": round_end_s - round_start_s,
        "uplink_bytes": sum(e[6] for e in events if e[5] in UPLINK_KINDS),
        "downlink_bytes": sum(e[6] for e in events if e[5] in DOWNLINK_KINDS),
        "client_flops": sum(e[7] for e in events if e[5] in ("client_forward", "client_backward")),
        "server_flops": sum(e[7] for e in events if e[5] == "server_step"),
    }
    row.update(critical_path_s(events, round_start_s, round_end_s))
    return row
