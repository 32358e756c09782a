"""Every registered algorithm's results, byte for byte, against the golden files, and the
results layout of that one CLI run.

A change that claims not to alter results must pass this unchanged. A change that alters
results on purpose regenerates the files (`python tests/golden_run.py`) in the same commit.
"""

import json

import pandas as pd
import pytest

from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.core.columns import ASYNC_COLUMNS, EVENT_COLUMNS
from scala_netsim.core.results import read_csv

from golden_run import COMPARED, GOLDEN, comparable

GOLDEN_ALGORITHMS = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())
pytestmark = pytest.mark.slow


def test_every_registered_algorithm_has_golden_files():
    assert sorted(ALGORITHMS) == GOLDEN_ALGORITHMS


@pytest.mark.parametrize("algorithm", GOLDEN_ALGORITHMS)
@pytest.mark.parametrize("name", COMPARED)
def test_results_are_byte_identical_to_the_golden_files(golden_run, algorithm, name):
    got = comparable(golden_run.run_dir(algorithm), name)
    assert got == (GOLDEN / algorithm / name).read_bytes(), (
        f"{algorithm}/{name} differs from tests/golden/{algorithm}/{name}")


SYNCHRONOUS = [a for a in GOLDEN_ALGORITHMS if not ALGORITHMS[a].traits.asynchronous]


@pytest.mark.parametrize("algorithm", SYNCHRONOUS)
def test_each_run_folder_holds_the_results_layout(golden_run, algorithm):
    folder = golden_run.run_dir(algorithm)
    for name in ("rounds.csv", "events.csv", "demands.csv", "clients.csv", "scenario.yaml",
                 "summary.json",
                 "accuracy_vs_time.png", "accuracy_vs_rounds.png", "latency_breakdown.png"):
        assert (folder / name).stat().st_size > 0, name
    rounds = read_csv(folder / "rounds.csv")
    events = read_csv(folder / "events.csv")
    summary = json.loads((folder / "summary.json").read_text())
    assert tuple(events.columns) == EVENT_COLUMNS
    assert list(rounds.columns[:13]) == [
        "round", "sim_time_s", "round_time_s", "uplink_bytes", "downlink_bytes", "client_flops",
        "server_flops", "compute_time_s", "uplink_time_s", "downlink_time_s", "server_time_s",
        "idle_time_s", "num_clients"]
    assert rounds["round"].tolist() == [1, 2] and rounds["test_acc"].between(0, 1).all()
    assert (rounds["num_clients"] == 3).all()
    # the critical path splits each round's duration exactly
    buckets = rounds[["compute_time_s", "uplink_time_s", "downlink_time_s", "server_time_s",
                      "idle_time_s"]].sum(axis=1)
    pd.testing.assert_series_equal(buckets, rounds["round_time_s"], check_names=False,
                                   rtol=1e-12)
    assert summary["algorithm"] == algorithm and summary["status"] == "completed"
    assert summary["total_sim_time_s"] == rounds["sim_time_s"].iloc[-1] == events["t_end_s"].max()
    uplink = events.kind.isin(["activation_upload", "model_upload"])
    assert summary["uplink_bytes"] == events.loc[uplink, "payload_bytes"].sum()
    assert summary["best_acc"] >= summary["final_acc"]
    # 3 clients a round, 2 local iterations: one forward pass per client and iteration
    assert (events.kind == "client_forward").sum() == 2 * 3 * 2


@pytest.mark.parametrize("algorithm", ALGORITHMS.with_trait("asynchronous"))
def test_an_asynchronous_run_folder_holds_one_row_per_version(golden_run, algorithm):
    """No round, no critical path: rows per global version, a server_update per arrival with
    its version and staleness, whom the server listened to in the summary."""
    folder = golden_run.run_dir(algorithm)
    for name in ("rounds.csv", "events.csv", "demands.csv", "clients.csv", "scenario.yaml",
                 "summary.json", "accuracy_vs_time.png", "accuracy_vs_rounds.png"):
        assert (folder / name).stat().st_size > 0, name
    assert not (folder / "latency_breakdown.png").exists()
    rounds = read_csv(folder / "rounds.csv")
    events = read_csv(folder / "events.csv")
    summary = json.loads((folder / "summary.json").read_text())
    assert tuple(events.columns) == EVENT_COLUMNS + ASYNC_COLUMNS
    assert rounds["round"].tolist() == [1, 2] and "compute_time_s" not in rounds
    updates = events[events.kind == "server_update"]
    assert updates["version"].max() == 2 and (updates["staleness"] >= 0).all()
    assert len(updates) == rounds["num_arrivals"].sum()
    assert summary["staleness_max"] == updates["staleness"].max()
    assert summary["total_sim_time_s"] == rounds["sim_time_s"].iloc[-1]


def test_the_algorithms_share_the_cell_and_partition_and_differ_in_pattern(golden_run):
    clients = read_csv(golden_run.run_dir("scala") / "clients.csv")
    assert len(clients) == 10 and ((clients.filter(like="label_") > 0).sum(axis=1) == 2).all()
    for algorithm in GOLDEN_ALGORITHMS:
        pd.testing.assert_frame_equal(clients,
                                      read_csv(golden_run.run_dir(algorithm) / "clients.csv"))
    server_steps = {
        a: (read_csv(golden_run.run_dir(a) / "events.csv").kind == "server_step").sum()
        for a in GOLDEN_ALGORITHMS}
    assert server_steps["scala"] == server_steps["ca_sfl"] == 2 * 2          # ONE per iteration
    for per_client in ("splitfed_v1", "splitfed_v2", "splitfed_v3", "lla_sfl", "cs_sfl",
                       "sfl_local_loss"):
        assert server_steps[per_client] == 2 * 2 * 3                         # one per client
    for federated in ("fedavg", "fedprox", "fedlc", "fedla", "feddyn", "feddecorr", "fedconcat",
                      "fedcbs"):
        assert server_steps[federated] == 0


def test_the_command_reports_and_compares(golden_run):
    stdout = golden_run.proc.stdout
    assert "estimated run time on this machine" in stdout
    assert f"results: {golden_run.out}" in stdout
    for algorithm in GOLDEN_ALGORITHMS:
        assert f"{algorithm}: completed, best accuracy" in stdout
    comparison = read_csv(golden_run.out / "comparison.csv").set_index("algorithm")
    assert sorted(comparison.index) == GOLDEN_ALGORITHMS
    assert {"final_acc", "best_acc", "time_to_0.6_s", "time_to_0.7_s", "time_to_0.8_s",
            "uplink_bytes", "downlink_bytes", "client_flops", "server_flops"
            } <= set(comparison.columns)
    assert comparison.loc["fedavg", "server_flops"] == 0
    for figure in ("accuracy_vs_time.png", "accuracy_vs_rounds.png"):
        assert (golden_run.out / "figures" / figure).stat().st_size > 0
        assert not (golden_run.out / figure).exists()
