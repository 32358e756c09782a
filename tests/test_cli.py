"""The command line, run as a user runs it: in a subprocess, on small slices of real data."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--set", "data.train_samples=2000", "--set", "data.test_samples=500",
         "--set", "training.rounds=2", "--set", "training.eval_every=1", "--no-progress"]
ROUND_COLUMNS = ["round", "sim_time_s", "test_acc", "uplink_bytes", "downlink_bytes",
                 "client_flops", "server_flops", "compute_time_s", "uplink_time_s",
                 "downlink_time_s", "server_time_s"]
EVENT_COLUMNS = ["t_start_s", "t_end_s", "round", "local_iter", "client_id", "kind",
                 "payload_bytes", "flops"]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "scala_netsim", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_end_to_end_run_writes_the_results_layout(tmp_path):
    proc = run_cli("scenarios/cellular_10pct.yaml", "--out", tmp_path, *SMALL, "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert "estimated run time on this machine" in proc.stdout
    assert f"results: {tmp_path / 'cellular_10pct'}" in proc.stdout
    algorithms = ["scala", "splitfed_v1", "splitfed_v2", "sfl_local_loss", "fedavg", "fedprox", "fedlc"]
    for algorithm in algorithms:
        folder = tmp_path / "cellular_10pct" / algorithm / "seed0"
        for name in ("rounds.csv", "events.csv", "clients.csv", "scenario.yaml", "summary.json",
                     "accuracy_vs_time.png", "accuracy_vs_rounds.png", "latency_breakdown.png"):
            assert (folder / name).stat().st_size > 0, name
        rounds = pd.read_csv(folder / "rounds.csv")
        events = pd.read_csv(folder / "events.csv")
        clients = pd.read_csv(folder / "clients.csv")
        summary = json.loads((folder / "summary.json").read_text())
        assert set(ROUND_COLUMNS) <= set(rounds.columns)
        assert list(events.columns) == EVENT_COLUMNS
        assert rounds["round"].tolist() == [1, 2] and rounds["test_acc"].between(0, 1).all()
        # per-round totals equal the sums over the events
        up = events[events.kind.isin(["activation_upload", "model_upload"])].groupby("round").payload_bytes.sum()
        assert rounds.set_index("round")["uplink_bytes"].equals(up)
        assert rounds["sim_time_s"].iloc[-1] == pytest.approx(events["t_end_s"].max(), rel=1e-12)
        # 10 of 100 clients per round, 5 local iterations
        assert (events.kind == "client_forward").sum() == 2 * 10 * 5
        assert len(clients) == 100 and {"client_id", "distance_m", "pathloss_db", "flops_per_s",
                                        "num_samples", "label_0", "label_9"} <= set(clients.columns)
        assert ((clients.filter(like="label_") > 0).sum(axis=1) == 2).all()  # alpha = 2
        assert summary["algorithm"] == algorithm and summary["status"] == "completed"
        assert summary["best_acc"] >= summary["final_acc"] - 1e-12
        assert summary["total_sim_time_s"] == pytest.approx(rounds["sim_time_s"].iloc[-1])
        assert summary["uplink_bytes"] == rounds["uplink_bytes"].sum()
        # same seed: the same cell and partition for every algorithm
        pd.testing.assert_frame_equal(clients, pd.read_csv(
            tmp_path / "cellular_10pct" / "scala" / "seed0" / "clients.csv"))
    scala_events = pd.read_csv(tmp_path / "cellular_10pct" / "scala" / "seed0" / "events.csv")
    assert (scala_events.kind == "server_step").sum() == 2 * 5     # ONE step per iteration
    v1_events = pd.read_csv(tmp_path / "cellular_10pct" / "splitfed_v1" / "seed0" / "events.csv")
    assert (v1_events.kind == "server_step").sum() == 2 * 5 * 10   # one per client and iteration
    comparison = pd.read_csv(tmp_path / "cellular_10pct" / "comparison.csv")
    assert sorted(comparison["algorithm"]) == sorted(algorithms)
    assert {"final_acc", "best_acc", "time_to_0.6_s", "time_to_0.7_s", "time_to_0.8_s",
            "uplink_bytes", "downlink_bytes", "client_flops", "server_flops"} <= set(comparison.columns)
    assert comparison.set_index("algorithm").loc["fedavg", "server_flops"] == 0
    for figure in ("accuracy_vs_time.png", "accuracy_vs_rounds.png"):
        assert (tmp_path / "cellular_10pct" / figure).stat().st_size > 0


@pytest.mark.parametrize("scenario", sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml")))
def test_every_scenario_file_runs(tmp_path, scenario):
    """One round of each file, its sweep left out (every sweep cell is validated by
    test_every_study_sweep_expands_to_valid_cells)."""
    proc = run_cli(f"scenarios/{scenario}", "--out", tmp_path, *SMALL, "--set", "training.rounds=1",
                   "--set", "sweep={}", "--no-report")
    assert proc.returncode == 0, proc.stderr
    name = scenario.removesuffix(".yaml")
    assert list((tmp_path / name).glob("*/seed0/summary.json"))


@pytest.mark.parametrize("args, message", [
    (["scenarios/missing.yaml"], "scenario file not found"),
    (["scenarios/quickstart.yaml", "--set", "network.uplink_bandwidth_hz=-5"],
     "network.uplink_bandwidth_hz: must be > 0.0, got -5"),
    (["scenarios/quickstart.yaml", "--set", "training.rounds"], "expected dotted.key=value"),
    (["scenarios/quickstart.yaml", "--set", "training.rounds=[1"], "--set training.rounds: value '[1' is not valid YAML"),
    (["scenarios/quickstart.yaml", "--set", "algorithms=[scala, fedsgd]"], "algorithms.1: must be one of"),
    (["scenarios/quickstart.yaml", "--set", "model.split=S9"], "model.split: must be one of 'S1'"),
    (["scenarios/quickstart.yaml", "--set", "data.dataset=mnist"], "data.dataset: must be one of 'fashion_mnist', 'cifar10'"),
    (["scenarios/quickstart.yaml", "--set", "data.dataset=cifar10"], "data.data_dir: required for cifar10"),
    (["scenarios/quickstart.yaml", "--set", "data.data_dir=/no/such/dir"],
     "apt-get install dataset-fashion-mnist"),
])
def test_bad_input_exits_2_with_a_message_and_no_traceback(tmp_path, args, message):
    earlier = tmp_path / "quickstart" / "scala" / "seed0" / "rounds.csv"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("round,test_acc\n1,0.5\n")
    proc = run_cli(*args, "--out", tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert earlier.read_text() == "round,test_acc\n1,0.5\n"         # nothing written is lost
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["rounds.csv"]


def test_unwritable_output_directory_is_refused_before_any_work(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me")
    proc = run_cli("scenarios/quickstart.yaml", "--out", blocker / "results")
    assert proc.returncode == 2
    assert "--out: cannot write results" in proc.stderr and "Traceback" not in proc.stderr
    assert blocker.read_text() == "keep me"


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_refused():
    proc = run_cli("scenarios/quickstart.yaml", "--device", "cuda")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "device: 'cuda' was asked for but no CUDA GPU is available" in proc.stderr


@pytest.mark.parametrize("scenario, cells", [("local_iters", 36), ("participation", 36),
                                             ("split_points", 15), ("bandwidth", 36)])
def test_every_study_sweep_expands_to_valid_cells(tmp_path, scenario, cells):
    from scala_netsim.scenario import load_scenario
    from scala_netsim.sweep import expand_sweep

    expanded = expand_sweep(load_scenario(ROOT / "scenarios" / f"{scenario}.yaml"), tmp_path)
    assert len(expanded) == cells
    assert len({c.folder for c in expanded}) == cells
