"""Same numbers twice, resume after a SIGKILL, Ctrl-C, and checkpoints that are refused."""

import filecmp
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--set", "data.train_samples=2000", "--set", "data.test_samples=200",
        "--set", "data.num_clients=20", "--set", "training.participation=0.25",
        "--set", "training.local_iters=2", "--set", "training.batch_size=40",
        "--set", "training.eval_every=2", "--set", "training.checkpoint_every=2",
        "--set", "algorithms=[scala, splitfed_v2]", "--no-progress"]


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "scala_netsim", "scenarios/quickstart.yaml",
                           *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, **kwargs)


def files(out, algorithm):
    return Path(out) / "quickstart" / algorithm / "seed0"


def checkpoint_round(path):
    try:
        return torch.load(path, weights_only=True)["round"]
    except Exception:  # not there yet
        return 0


def test_same_seed_gives_byte_identical_tables_and_the_trace_ignores_machine_speed(tmp_path):
    assert cli("--out", tmp_path / "a", *TINY, "--set", "training.rounds=4").returncode == 0
    env = dict(os.environ, OMP_NUM_THREADS="1")  # another speed of the same machine
    assert cli("--out", tmp_path / "b", *TINY, "--set", "training.rounds=4", env=env).returncode == 0
    for algorithm in ("scala", "splitfed_v2"):
        a, b = files(tmp_path / "a", algorithm), files(tmp_path / "b", algorithm)
        assert filecmp.cmp(a / "clients.csv", b / "clients.csv", shallow=False)
        assert filecmp.cmp(a / "events.csv", b / "events.csv", shallow=False)
        timing = ["round", "sim_time_s", "uplink_bytes", "downlink_bytes", "client_flops",
                  "server_flops", "compute_time_s", "uplink_time_s", "downlink_time_s"]
        pd.testing.assert_frame_equal(pd.read_csv(a / "rounds.csv")[timing],
                                      pd.read_csv(b / "rounds.csv")[timing])
    assert cli("--out", tmp_path / "c", *TINY, "--set", "training.rounds=4").returncode == 0
    for algorithm in ("scala", "splitfed_v2"):
        a, c = files(tmp_path / "a", algorithm), files(tmp_path / "c", algorithm)
        for name in ("rounds.csv", "events.csv", "clients.csv"):
            assert filecmp.cmp(a / name, c / name, shallow=False), name


def test_resume_after_sigkill_gives_the_uninterrupted_files(tmp_path):
    rounds = ["--set", "training.rounds=10"]
    assert cli("--out", tmp_path / "whole", *TINY, *rounds).returncode == 0

    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "scala_netsim", "scenarios/quickstart.yaml",
                             "--out", str(out), *TINY, *rounds], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint = files(out, "splitfed_v2") / "checkpoint.pt"
    deadline = time.time() + 300
    while checkpoint_round(checkpoint) < 4 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 4 <= checkpoint_round(checkpoint) < 10, "the run was not killed half way"
    assert not (files(out, "splitfed_v2") / "summary.json").exists()

    resumed = cli("--out", out, *TINY, *rounds, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "scala: already completed, skipped" in resumed.stdout
    for algorithm in ("scala", "splitfed_v2"):
        for name in ("rounds.csv", "events.csv", "clients.csv"):
            assert filecmp.cmp(files(tmp_path / "whole", algorithm) / name,
                               files(out, algorithm) / name, shallow=False), (algorithm, name)


def test_checkpoint_of_another_scenario_is_refused(tmp_path):
    assert cli("--out", tmp_path, *TINY, "--set", "training.rounds=3").returncode == 0
    before = (files(tmp_path, "scala") / "rounds.csv").read_bytes()
    other = cli("--out", tmp_path, *TINY, "--set", "training.rounds=3", "--set", "training.lr=0.02")
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert "hold runs of another scenario" in other.stderr and "--force" in other.stderr
    assert (files(tmp_path, "scala") / "rounds.csv").read_bytes() == before   # nothing lost
    # a checkpoint that is not ours, or was written for other settings, is refused as well
    folder = files(tmp_path, "scala")
    (folder / "summary.json").unlink()
    checkpoint = folder / "checkpoint.pt"
    data = torch.load(checkpoint, weights_only=True)
    data["identity"] = "0" * 64
    torch.save(data, checkpoint)
    foreign = cli("--out", tmp_path, *TINY, "--set", "training.rounds=3")
    assert foreign.returncode == 2 and "Traceback" not in foreign.stderr
    assert "written by another scenario, algorithm or scala_netsim version" in foreign.stderr
    checkpoint.write_bytes(b"not a checkpoint")
    damaged = cli("--out", tmp_path, *TINY, "--set", "training.rounds=3")
    assert damaged.returncode == 2 and "not a readable scala_netsim checkpoint" in damaged.stderr
    forced = cli("--out", tmp_path, *TINY, "--set", "training.rounds=3", "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads((folder / "summary.json").read_text())["status"] == "completed"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "scala_netsim", "scenarios/quickstart.yaml",
                             "--out", str(out), *TINY, "--set", "training.rounds=200"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoint = files(out, "scala") / "checkpoint.pt"
    deadline = time.time() + 300
    while checkpoint_round(checkpoint) < 2 and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "every file written is complete" in stderr and "same command again" in stderr
    assert "Traceback" not in stderr
    rounds = pd.read_csv(files(out, "scala") / "rounds.csv")   # still a valid table
    assert rounds["round"].iloc[0] == 1


def test_a_diverging_algorithm_stops_and_the_others_still_run(tmp_path):
    proc = cli("--out", tmp_path, *TINY, "--set", "training.rounds=4",
               "--set", "algorithms=[fedprox, fedavg]", "--set", "fedprox.mu=1e30")
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"fedprox: diverged at round (\d+)", proc.stdout)
    assert match and int(match.group(1)) < 4
    assert "fedavg: completed" in proc.stdout
    comparison = pd.read_csv(tmp_path / "quickstart" / "comparison.csv").set_index("algorithm")
    assert comparison.loc["fedprox", "status"] == f"diverged at round {match.group(1)}"
    assert comparison.loc["fedavg", "status"] == "completed"
    rounds = pd.read_csv(files(tmp_path, "fedprox") / "rounds.csv")
    assert rounds["round"].iloc[-1] == int(match.group(1))
