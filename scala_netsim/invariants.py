"""The books of a run, checked: every violation is reported, none is fixed.

Works on tables (pandas) of what the run recorded: its events, its rounds, the sub-bands the
link granted each round and the rate each transfer was given. It checks the records against
each other, never against its own copy of the engine's formulas (the formulas themselves are
tested against hand-worked values in the test suite).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scala_netsim.events import CLIENT_COMPUTE_KINDS, DOWNLINK_KINDS, UPLINK_KINDS, EventKind

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


def _overlapping(frame: pd.DataFrame) -> np.ndarray:
    """Owners (client_id) with two intervals, consecutive by start, that overlap."""
    owner = frame["client_id"].to_numpy()
    start, end = frame["t_start_s"].to_numpy(), frame["t_end_s"].to_numpy()
    order = np.lexsort((end, start, owner))      # by owner, then start, then end
    owner, start, end = owner[order], start[order], end[order]
    slack = REL_TOL * np.maximum(1.0, np.abs(start[1:]))
    bad = (owner[1:] == owner[:-1]) & (end[:-1] > start[1:] + slack)
    return np.unique(owner[1:][bad])


def check_run(events: pd.DataFrame, rounds: pd.DataFrame, grants: pd.DataFrame,
              transfers: pd.DataFrame, band_hz: dict[str, float],
              pipelined_clients: bool = False) -> list[str]:
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
    - every transfer lasts payload bits / the rate it was given (relative error below 1e-9);
    - bytes and FLOPs per round equal the sums over the events; the last round's sim_time_s
      is the end of its last event.
    """
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

    for (r, direction), frame in grants.groupby(["round", "direction"]):
        total_hz = frame["bandwidth_hz"].sum()
        if total_hz > band_hz[direction] * (1 + REL_TOL):
            problems.append(f"round {r}: {direction} sub-bands granted sum to {total_hz:.6g} Hz, "
                            f"more than the band's {band_hz[direction]:.6g} Hz")

    is_transfer = events["kind"].isin(UPLINK + DOWNLINK)
    if len(transfers) != is_transfer.sum() or set(transfers["event_index"]) != set(
            np.flatnonzero(is_transfer.to_numpy())):
        problems.append(f"{int(is_transfer.sum())} transfer events but {len(transfers)} "
                        f"recorded transfer rates")
    elif len(transfers):
        moved = events.iloc[transfers["event_index"].to_numpy()]
        direction = np.where(moved["kind"].isin(UPLINK), "uplink", "downlink")
        granted = grants.set_index(["round", "client_id", "direction"])["bandwidth_hz"]
        keys = pd.MultiIndex.from_arrays([moved["round"].to_numpy(),
                                          moved["client_id"].to_numpy(), direction])
        expected_hz = granted.reindex(keys).to_numpy()
        used_hz = transfers["bandwidth_hz"].to_numpy()
        if not np.array_equal(expected_hz, used_hz):
            problems.append(f"{int(np.sum(expected_hz != used_hz))} transfers used another "
                            f"sub-band than their client was granted that round")
        expected_s = (transfers["attempts"].to_numpy() * moved["payload_bytes"].to_numpy()
                      * 8.0 / transfers["rate_bps"].to_numpy())
        duration_s = (moved["t_end_s"] - moved["t_start_s"]).to_numpy()
        error = np.abs(duration_s - expected_s) / np.maximum(expected_s, 1e-300)
        if (error >= REL_TOL).any():
            problems.append(f"{int((error >= REL_TOL).sum())} transfers do not last attempts x "
                            f"payload bits / their rate (largest relative error "
                            f"{error.max():.3g})")

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
    if len(rounds) and len(events):
        last = rounds["round"].iloc[-1]
        end = events.loc[events["round"] == last, "t_end_s"].max()
        if not np.isclose(rounds["sim_time_s"].iloc[-1], end, rtol=REL_TOL, atol=0):
            problems.append(f"last round's sim_time_s {rounds['sim_time_s'].iloc[-1]!r} is not "
                            f"the end of its last event {end!r}")
    return problems
