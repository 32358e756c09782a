"""The books of a finished run, checked: every violation is reported, none is fixed.

Works on the tidy tables a run writes (events, rounds, clients), so it can check a run folder
as well as the rows still in memory."""

import numpy as np
import pandas as pd

import channel

UPLINK = ("activation_upload", "model_upload")
DOWNLINK = ("model_download", "gradient_download")
COMPUTE = ("client_forward", "client_backward")
REL_TOL = 1e-9


class InvariantError(AssertionError):
    """A run broke one of its invariants; `problems` lists them."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("run invariants violated:\n" + "\n".join(f"  {p}" for p in self.problems))


def _overlaps(frame: pd.DataFrame) -> int:
    """How many consecutive pairs (by start) of the given intervals overlap."""
    spans = frame.sort_values(["t_start_s", "t_end_s"])[["t_start_s", "t_end_s"]].to_numpy()
    if len(spans) < 2:
        return 0
    slack = REL_TOL * np.maximum(1.0, np.abs(spans[1:, 0]))
    return int(np.sum(spans[:-1, 1] > spans[1:, 0] + slack))


def _max_concurrent(frame: pd.DataFrame) -> int:
    """Largest number of the intervals in progress at one instant (ends before starts)."""
    if frame.empty:
        return 0
    points = np.concatenate([np.c_[frame["t_start_s"], np.ones(len(frame))],
                             np.c_[frame["t_end_s"], -np.ones(len(frame))]])
    order = np.lexsort((points[:, 1], points[:, 0]))  # at equal times, ends (-1) first
    return int(np.cumsum(points[order, 1]).max())


def check_run(events: pd.DataFrame, rounds: pd.DataFrame, clients: pd.DataFrame, network,
              pipelined_clients: bool = False) -> list:
    """Problems found (empty when the run's books balance).

    - the clock never goes back: events end after they start, rounds end in order;
    - a client's computations never overlap, nor do its transmissions, nor (unless the
      algorithm pipelines its clients, as SFL with local loss does) any two of its events;
      the server's steps never overlap (one processor);
    - at any moment the uplink (downlink) bandwidth in use is at most the cell's;
    - bytes and FLOPs per round equal the sums over the events; the last round's sim_time_s
      is the end of its last event;
    - every transfer lasts payload bits / the rate `channel` gives for that client's distance
      and bandwidth share (relative error below 1e-9).
    """
    problems = []
    if (events["t_end_s"] < events["t_start_s"]).any():
        problems.append(f"{int((events['t_end_s'] < events['t_start_s']).sum())} events end "
                        f"before they start")
    if (np.diff(rounds["sim_time_s"].to_numpy()) < 0).any():
        problems.append("rounds.csv: sim_time_s goes back")
    for k, own in events[events["client_id"] >= 0].groupby("client_id"):
        groups = {"computations": own[own["kind"].isin(COMPUTE)],
                  "transmissions": own[own["kind"].isin(UPLINK + DOWNLINK)]}
        if not pipelined_clients:
            groups["events"] = own[own["kind"] != "server_step"]
        for what, frame in groups.items():
            if _overlaps(frame):
                problems.append(f"client {k}: {what} overlap in time")
    if _overlaps(events[events["kind"] == "server_step"]):
        problems.append("server steps overlap on the one server processor")

    participants = rounds.set_index("round")["num_clients"]
    for direction, kinds, total_hz in (("uplink", UPLINK, network.uplink_bandwidth_hz),
                                       ("downlink", DOWNLINK, network.downlink_bandwidth_hz)):
        for r, frame in events[events["kind"].isin(kinds)].groupby("round"):
            in_use_hz = _max_concurrent(frame) * total_hz / participants[r]
            if in_use_hz > total_hz * (1 + REL_TOL):
                problems.append(f"round {r}: {direction} bandwidth in use {in_use_hz:.6g} Hz "
                                f"exceeds the cell's {total_hz:.6g} Hz")

    sums = events.groupby("round").apply(lambda e: pd.Series({
        "uplink_bytes": e.loc[e["kind"].isin(UPLINK), "payload_bytes"].sum(),
        "downlink_bytes": e.loc[e["kind"].isin(DOWNLINK), "payload_bytes"].sum(),
        "client_flops": e.loc[e["kind"].isin(COMPUTE), "flops"].sum(),
        "server_flops": e.loc[e["kind"] == "server_step", "flops"].sum()}),
        include_groups=False).reindex(rounds["round"], fill_value=0)
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

    transfers = events[events["kind"].isin(UPLINK + DOWNLINK)]
    if len(transfers):
        share = transfers["round"].map(participants).to_numpy(dtype=float)
        uplink = transfers["kind"].isin(UPLINK).to_numpy()
        gain = channel.db_to_linear(-clients.set_index("client_id").loc[
            transfers["client_id"], "pathloss_db"].to_numpy())
        bandwidth_hz = np.where(uplink, network.uplink_bandwidth_hz,
                                network.downlink_bandwidth_hz) / share
        power_w = np.where(uplink, network.client_tx_power_w, network.bs_tx_power_w / share)
        rate_bps = channel.shannon_rate_bps(bandwidth_hz, power_w, gain,
                                            network.noise_psd_dbm_per_hz)
        expected_s = transfers["payload_bytes"].to_numpy() * 8.0 / rate_bps
        duration_s = (transfers["t_end_s"] - transfers["t_start_s"]).to_numpy()
        error = np.abs(duration_s - expected_s) / np.maximum(expected_s, 1e-300)
        if (error >= REL_TOL).any():
            problems.append(f"{int((error >= REL_TOL).sum())} transfers do not last payload "
                            f"bits / channel rate (largest relative error {error.max():.3g})")
    return problems
