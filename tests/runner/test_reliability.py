"""The timing trace ignores the machine's speed, resume after a SIGKILL, Ctrl-C, checkpoints
that are refused, and divergence. (Same scenario, same bytes: tests/runner/test_golden.py.)"""

import filecmp
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import torch

from conftest import ROOT
from golden_run import GOLDEN, run_golden

pytestmark = pytest.mark.slow
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
#: (AlexNet-14, a quarter of the authors' AlexNet's step: the model is not what is tested)
TINY = ["--set", "model.arch=alexnet14",
        "--set", "data.train_samples=2000", "--set", "data.test_samples=200",
        "--set", "data.num_clients=20", "--set", "training.participation=0.25",
        "--set", "training.local_iters=2", "--set", "training.batch_size=40",
        "--set", "training.eval_every=2", "--set", "training.checkpoint_every=2",
        "--no-progress", "--no-report", "--no-figures"]
#: TINY's algorithms where a test names none of its own (a key is given once: issue 61)
PAIR = ["--set", "algorithms=[scala, splitfed_v2]"]


def files(out, algorithm):
    return Path(out) / "quickstart" / algorithm / "seed0"


def checkpoint_round(path):
    try:
        return torch.load(path, weights_only=True)["round"]
    except Exception:  # not there yet
        return 0


def wait_until(done: Callable[[], bool], seconds: float) -> None:
    """Poll `done` every 50 ms until it holds or `seconds` have passed (the test then checks)."""
    deadline = time.time() + seconds
    while not done() and time.time() < deadline:
        time.sleep(0.05)


def kill_half_way(out: Path, args: list[str], algorithm: str, rounds: int) -> None:
    """Start the CLI, SIGKILL it once `algorithm`'s checkpoint holds round 4 or later, and
    check that it was killed half way (a checkpoint, no summary)."""
    proc = subprocess.Popen([sys.executable, "-m", "scala_netsim", str(QUICKSTART),
                             "--out", str(out), *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint = files(out, algorithm) / "checkpoint.pt"
    wait_until(lambda: checkpoint_round(checkpoint) >= 4 or proc.poll() is not None, 300)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 4 <= checkpoint_round(checkpoint) < rounds, "the run was not killed half way"
    assert not (files(out, algorithm) / "summary.json").exists()


def test_the_timing_trace_ignores_the_machines_speed(tmp_path):
    """One thread instead of two: the timeline (events.csv, the time, byte and FLOP columns)
    is byte for byte the golden one, since it comes from FLOP counts and tensor sizes."""
    algorithms = ["scala", "splitfed_v2", "sfl_local_loss", "fedavg"]
    proc = run_golden(tmp_path, "--set", f"algorithms=[{', '.join(algorithms)}]",
                      env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    timing = ["round", "sim_time_s", "round_time_s", "uplink_bytes", "downlink_bytes",
              "client_flops", "server_flops", "compute_time_s", "uplink_time_s",
              "downlink_time_s", "server_time_s", "idle_time_s", "num_clients"]
    for algorithm in algorithms:
        run_dir = tmp_path / "golden" / algorithm / "seed3"
        golden_events = (GOLDEN / algorithm / "events.csv").read_bytes()
        assert (run_dir / "events.csv").read_bytes() == golden_events
        pd.testing.assert_frame_equal(pd.read_csv(run_dir / "rounds.csv")[timing],
                                      pd.read_csv(GOLDEN / algorithm / "rounds.csv")[timing])


def test_resume_after_sigkill_gives_the_uninterrupted_files(cli, tmp_path):
    """A deadline run (round and step deadlines under shadowing and per-transfer Rayleigh
    fading, so that who is dropped changes from round to round) killed half way and resumed
    writes the files of the uninterrupted run."""
    rounds = [*PAIR, "--set", "training.rounds=10", "--set", "training.deadline_s=1.4",
              "--set", "training.step_deadline_s=0.6", "--set", "network.shadowing_std_db=8",
              "--set", "network.fading={kind: rayleigh, coherence: transfer}"]
    assert cli(QUICKSTART, "--out", tmp_path / "whole", *TINY, *rounds)[0] == 0

    out = tmp_path / "killed"
    kill_half_way(out, [*TINY, *rounds], "splitfed_v2", 10)

    code, stdout, stderr = cli(QUICKSTART, "--out", out, *TINY, *rounds)
    assert code == 0, stderr
    assert "scala: already completed, skipped" in stdout
    summary = json.loads((files(out, "splitfed_v2") / "summary.json").read_text())
    assert 4 <= summary["resumed_from_round"] < 10 and summary["status"] == "completed"
    # one record of the machine per invocation that trained it, from the round it started at
    machines = summary["machines"]
    assert [m["from_round"] for m in machines] == [0, summary["resumed_from_round"]]
    assert all(m["torch_threads"] == torch.get_num_threads() and m["processor"]
               and m["cores"] == os.cpu_count() for m in machines)
    for algorithm in ("scala", "splitfed_v2"):
        dropped = pd.read_csv(files(out, algorithm) / "rounds.csv")["num_dropped"]
        assert 0 < dropped.sum() < 50, (algorithm, dropped.tolist())   # some, not all
        for name in ("rounds.csv", "events.csv", "clients.csv"):
            assert filecmp.cmp(files(tmp_path / "whole", algorithm) / name,
                               files(out, algorithm) / name, shallow=False), (algorithm, name)


def test_an_asynchronous_run_killed_half_way_resumes_to_the_uninterrupted_files(cli, tmp_path):
    """GAS (clients in flight at every checkpoint, the server processor's queue, its buffers
    and generator) killed with SIGKILL after version 4 or later and resumed writes the
    uninterrupted run's files byte for byte."""
    gas = [*TINY, "--set", "algorithms=[gas]", "--set", "training.rounds=12",
           "--set", "training.concurrency=4", "--set", "gas={model_buffer: 2}"]
    assert cli(QUICKSTART, "--out", tmp_path / "whole", *gas)[0] == 0

    out = tmp_path / "killed"
    kill_half_way(out, gas, "gas", 12)

    code, _, stderr = cli(QUICKSTART, "--out", out, *gas)
    assert code == 0, stderr
    summary = json.loads((files(out, "gas") / "summary.json").read_text())
    assert 4 <= summary["resumed_from_round"] < 12 and summary["status"] == "completed"
    for name in ("rounds.csv", "events.csv", "clients.csv"):
        assert filecmp.cmp(files(tmp_path / "whole", "gas") / name, files(out, "gas") / name,
                           shallow=False), name


def test_checkpoint_of_another_scenario_is_refused(cli, tmp_path):
    three = ["--set", "training.rounds=3", "--set", "algorithms=[scala]"]
    assert cli(QUICKSTART, "--out", tmp_path, *TINY, *three)[0] == 0
    before = (files(tmp_path, "scala") / "rounds.csv").read_bytes()
    code, _, err = cli(QUICKSTART, "--out", tmp_path, *TINY, *three, "--set", "training.lr=0.02")
    assert code == 2
    assert "hold runs of another scenario" in err and "--force" in err
    assert (files(tmp_path, "scala") / "rounds.csv").read_bytes() == before   # nothing lost
    # a checkpoint that is not ours, or was written for other settings, is refused as well
    folder = files(tmp_path, "scala")
    (folder / "summary.json").unlink()
    checkpoint = folder / "checkpoint.pt"
    data = torch.load(checkpoint, weights_only=True)
    data["identity"] = "0" * 64
    torch.save(data, checkpoint)
    code, _, err = cli(QUICKSTART, "--out", tmp_path, *TINY, *three)
    assert code == 2 and "written by another scenario, algorithm or scala_netsim version" in err
    checkpoint.write_bytes(b"not a checkpoint")
    code, _, err = cli(QUICKSTART, "--out", tmp_path, *TINY, *three)
    assert code == 2 and "not a readable scala_netsim checkpoint" in err
    code, _, err = cli(QUICKSTART, "--out", tmp_path, *TINY, *three, "--force")
    assert code == 0, err
    assert json.loads((folder / "summary.json").read_text())["status"] == "completed"
    assert (folder / "rounds.csv").read_bytes() == before


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "scala_netsim", str(QUICKSTART),
                             "--out", str(out), *TINY, *PAIR, "--set", "training.rounds=200"],
                            cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a suite started as a background job ignores SIGINT, and so would
                            # the child (Python then installs no KeyboardInterrupt handler)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    checkpoint = files(out, "scala") / "checkpoint.pt"
    wait_until(lambda: checkpoint_round(checkpoint) >= 2, 300)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "every file written is complete" in stderr and "same command again" in stderr
    assert "Traceback" not in stderr
    rounds = pd.read_csv(files(out, "scala") / "rounds.csv")   # still a valid table
    assert rounds["round"].iloc[0] == 1


def children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def alive(pid: int) -> bool:
    try:  # a zombie (state Z) has exited and waits only to be reaped
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_with_jobs_stops_the_worker_processes_too(tmp_path):
    """kill, timeout or a batch scheduler's SIGTERM stops a --jobs run as Ctrl-C does: the
    worker processes do not go on training (into folders a rerun would also write)."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "scala_netsim", str(QUICKSTART),
                             "--out", str(out), *TINY, *PAIR, "--set", "training.rounds=200",
                             "--jobs", "2"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints = [files(out, a) / "checkpoint.pt" for a in ("scala", "splitfed_v2")]
    wait_until(lambda: min(map(checkpoint_round, checkpoints)) >= 2 or proc.poll() is not None,
               300)
    workers = children(proc.pid)
    assert len(workers) >= 2   # the two cells' workers (and multiprocessing's resource tracker)
    try:
        proc.send_signal(signal.SIGTERM)
        wait_until(lambda: not any(map(alive, [proc.pid, *workers])), 60)
        assert not any(map(alive, workers)), [p for p in workers if alive(p)]
    finally:  # orphans would hold the pipes open (and train on)
        for pid in filter(alive, [proc.pid, *workers]):
            os.kill(pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "every file written is complete" in stderr and "same command again" in stderr
    assert min(map(checkpoint_round, checkpoints)) >= 2   # still readable: they resume


def test_rewriting_the_growing_tables_is_paced_by_what_it_costs(make_run, tmp_path, monkeypatch):
    """flush(run) after an evaluated round is skipped until FLUSH_PACE x the last rewrite's
    duration has passed; flush(run, now=True) (checkpoints, the end) always writes."""
    from scala_netsim.runner.writer import RunWriter

    run = make_run("fedavg", training={"rounds": 3})
    monkeypatch.setattr(RunWriter, "FLUSH_PACE", 1e9)  # any rewrite: the next one in decades
    writer = RunWriter(tmp_path, run.scenario, run.world)
    run.step()
    writer.flush(run)                                   # the first flush writes
    run.step()
    writer.flush(run)                                   # too soon: skipped
    assert len(pd.read_csv(tmp_path / "rounds.csv")) == 1
    run.step()
    writer.flush(run, now=True)
    assert len(pd.read_csv(tmp_path / "rounds.csv")) == 3
    assert len(pd.read_csv(tmp_path / "events.csv")) == len(run.log)


def test_rows_are_written_as_pandas_writes_their_table(tmp_path):
    """events.csv and demands.csv are written from the log's rows with the csv module: the
    bytes pandas would write for the same table, on values of every kind the log holds."""
    import numpy as np

    from scala_netsim.core.results import write_csv, write_rows_csv

    columns = ("t_start_s", "t_end_s", "round", "kind", "payload_bytes", "flops")
    rows = [(0.0, 1e-07, 1, "model_download", 123_456_789_012, 0),
            (0.1 + 0.2, 2.5e17, 2, "server_step", 0, np.int64(9_007_199_254_740_993)),
            (np.float64(1 / 3), 1234.5, 3, "client_forward", 7, 5)]
    for name, data in (("rows", rows), ("empty", [])):
        write_rows_csv(tmp_path / f"{name}.csv", columns, data)
        write_csv(tmp_path / f"{name}_pandas.csv", pd.DataFrame(data, columns=list(columns)))
        assert ((tmp_path / f"{name}.csv").read_bytes()
                == (tmp_path / f"{name}_pandas.csv").read_bytes())


def test_a_diverging_algorithm_stops_and_the_others_still_run(cli, tmp_path):
    code, out, err = cli(QUICKSTART, "--out", tmp_path, *TINY, "--set", "training.rounds=4",
                         "--set", "algorithms=[fedprox, fedavg]", "--set", "fedprox.mu=1e30")
    assert code == 0, err
    match = re.search(r"fedprox: diverged at round (\d+)", out)
    assert match and int(match.group(1)) < 4
    assert "fedavg: completed" in out
    comparison = pd.read_csv(tmp_path / "quickstart" / "comparison.csv").set_index("algorithm")
    assert comparison.loc["fedprox", "status"] == f"diverged at round {match.group(1)}"
    assert comparison.loc["fedavg", "status"] == "completed"
    rounds = pd.read_csv(files(tmp_path, "fedprox") / "rounds.csv")
    assert rounds["round"].iloc[-1] == int(match.group(1))
