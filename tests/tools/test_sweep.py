"""Sweeps: expansion into points, folder names, skipping finished points, --jobs, Ray, the
closed-form communication of a round, and the report built from a sweep."""

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from analysis.figures import crossings, time_to_target_figure
from analysis.tradeoff import pareto_front
from scala_netsim.books.rounds import round_row
from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.scenario import validate_scenario
from scala_netsim.learn.models import build_split_model, state_bytes
from scala_netsim.tools.sweep import expand_sweep, setting_folder_name

from conftest import ROOT

QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
#: (AlexNet-14, a quarter of the authors' AlexNet's step: the model is not what is tested)
TINY = ["--set", "model.arch=alexnet14",
        "--set", "data.train_samples=1000", "--set", "data.test_samples=200",
        "--set", "data.num_clients=10", "--set", "training.participation=0.3",
        "--set", "training.batch_size=30", "--set", "training.rounds=2",
        "--set", "training.eval_every=1", "--no-progress"]


def scenario(**extra):
    return validate_scenario({"name": "s", "algorithms": ["scala", "fedavg"], **extra})


# --- expansion -------------------------------------------------------------------------
def test_sweep_expands_to_every_combination_times_every_algorithm(tmp_path):
    points = expand_sweep(scenario(sweep={"training.local_iters": [1, 5],
                                         "network.uplink_bandwidth_hz": ["5.0e6", 2e7],
                                         "seed": [0, 1]}), tmp_path)
    assert len(points) == 2 * 2 * 2 * 2
    folders = {c.folder.relative_to(tmp_path).as_posix() for c in points}
    assert "s/scala/local_iters=5,uplink_bandwidth_hz=5000000/seed1" in folders
    assert "s/fedavg/local_iters=1,uplink_bandwidth_hz=20000000/seed0" in folders
    assert len(folders) == len(points)
    point = next(c for c in points if c.folder.as_posix().endswith(
        "scala/local_iters=5,uplink_bandwidth_hz=5000000/seed1"))
    # each point is a complete scenario: one algorithm, the swept values in place, no sweep
    assert point.scenario.algorithms == ["scala"] and point.scenario.sweep == {}
    assert point.scenario.training.local_iters == 5 and point.scenario.seed == 1
    assert point.scenario.network.uplink_bandwidth_hz == 5e6           # YAML text -> float
    assert dict(point.setting) == {"training.local_iters": 5, "network.uplink_bandwidth_hz": 5e6,
                                  "seed": 1}


def test_a_swept_mapping_gets_a_short_name_the_same_in_folders_and_labels(tmp_path):
    """Issue 47 (12): a sweep over network.layout named each point by the whole mapping
    (folder names of about 90 characters, panel titles running into each other): a long
    value is its first entry and a digest, in the folder and in the report's labels alike."""
    from analysis.runs import _fmt_value, _hashable

    layouts = [{"kind": "single"},
               {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3,
                "wraparound": True},
               {"kind": "hexagonal", "sites": 19, "isd_m": 500.0, "sectors": 3,
                "wraparound": True}]
    points = expand_sweep(scenario(algorithms=["scala"], sweep={"network.layout": layouts,
                                                                "seed": [0]}), tmp_path)
    names = [c.folder.parent.name for c in points]
    # (a point's setting is the value as validated: the whole layout, its defaults filled in)
    assert re.fullmatch(r"layout=single-[0-9a-f]{6}", names[0])
    assert all(re.fullmatch(r"layout=hexagonal-[0-9a-f]{6}", n) for n in names[1:])
    assert len(set(names)) == 3 and max(map(len, names)) <= 24
    for point, name in zip(points, names, strict=True):
        value = dict(point.setting)["network.layout"]
        assert f"layout={_fmt_value(_hashable(value))}" == name


def test_without_a_sweep_each_algorithm_is_one_point_in_the_usual_folder(tmp_path):
    points = expand_sweep(scenario(), tmp_path)
    assert [c.folder for c in points] == [tmp_path / "s" / "scala" / "seed0",
                                        tmp_path / "s" / "fedavg" / "seed0"]
    seeds_only = expand_sweep(scenario(sweep={"seed": [3, 4]}), tmp_path)
    assert {c.folder.relative_to(tmp_path).as_posix() for c in seeds_only} == {
        "s/scala/seed3", "s/scala/seed4", "s/fedavg/seed3", "s/fedavg/seed4"}


def test_list_values_can_be_swept(tmp_path):
    flops = [[1e9, 1e10], [2e9, 2e10]]
    points = expand_sweep(scenario(sweep={"compute.client_flops_per_s": flops}), tmp_path)
    assert {c.folder.parent.name for c in points} == {"client_flops_per_s=1000000000~10000000000",
                                                     "client_flops_per_s=2000000000~20000000000"}
    assert {c.scenario.compute.client_flops_per_s for c in points} == {(1e9, 1e10), (2e9, 2e10)}


def test_folder_names_use_whole_keys_when_short_names_clash():
    setting = (("network.uplink_bandwidth_hz", 1e6), ("x.uplink_bandwidth_hz", 2.0),
               ("model.split", "S3"), ("seed", 2))
    assert setting_folder_name(setting) == ("network.uplink_bandwidth_hz=1000000,"
                                            "x.uplink_bandwidth_hz=2,split=S3")


def test_named_cases_set_several_keys_together_and_name_the_folder(tmp_path):
    cases = {"plain": {"network.fading": {"kind": "none"}},
             "arq": {"network.fading": {"kind": "rayleigh", "coherence": "transfer"},
                     "network.link": {"mode": "fixed_rate", "target_rate_bps": 1e6}}}
    points = expand_sweep(scenario(sweep={"channel": cases, "seed": [0, 1]}), tmp_path)
    assert len(points) == 2 * 2 * 2
    by_case = {(c.algorithm, dict(c.setting)["channel"], c.scenario.seed): c for c in points}
    arq = by_case[("scala", "arq", 1)]
    assert arq.folder.relative_to(tmp_path).as_posix() == "s/scala/channel=arq/seed1"
    assert arq.setting == (("channel", "arq"), ("seed", 1))
    assert arq.scenario.network.link.mode == "fixed_rate"
    assert arq.scenario.network.fading.coherence == "transfer"
    plain = by_case[("fedavg", "plain", 0)].scenario.network
    assert plain.link.mode == "adaptive" and plain.fading.kind == "none"


@pytest.mark.parametrize("sweep, message", [
    ({"network": {"a": {"network.allocation": "equal"}}},
     "sweep: 'network' names cases: it must be a name of your own"),
    ({"cases": {"a": {}}}, "sweep.cases.a: a case sets at least one dotted key"),
    ({"cases": {"a": {"name": "other"}}}, "'name' cannot be swept"),
    ({"cases": {"a": {"network.link": {"mode": "fixed_rate"}}}},
     "sweep point cases=a: network.link.target_rate_bps: required with mode fixed_rate"),
    ({"training.local_iters": [1, 0]},
     "sweep point training.local_iters=0: training.local_iters: must be >= 1, got 0"),
    ({"training.local_iter": [1]}, "training.local_iter"),
    ({"algorithms": [["scala"]]}, "'algorithms' cannot be swept"),
    ({"training.rounds": []}, "sweep.training.rounds"),
    ({"training.lr": [0.1, "0.1"]}, "would share the folder"),
    ({"training.lr.x": [1]}, "sweep training.lr.x: 'lr' is not a section"),
])
def test_bad_sweeps_are_refused_with_the_point_named(tmp_path, sweep, message):
    with pytest.raises(ScenarioError) as err:
        expand_sweep(scenario(sweep=sweep), tmp_path)
    assert message in str(err.value)


# --- running sweeps --------------------------------------------------------------------
@pytest.mark.slow
def test_tiny_sweep_with_two_jobs_then_rerun_skips_then_force(cli, tmp_path):
    sweep = ["--set", "sweep={training.local_iters: [1, 2], seed: [0, 1]}",
             "--set", "algorithms=[scala, fedavg]"]
    shown = [a for a in TINY if a != "--no-progress"]
    code, out, err = cli(QUICKSTART, "--out", tmp_path, *shown, *sweep, "--jobs", "2")
    assert code == 0, err
    # issue 37: progress under --jobs, one bar over the runs, and an estimate of the spread
    assert "runs finished: 100%" in err and "8/8" in err
    assert re.search(r"estimated run time: .+ for 8 run\(s\) spread over 2 jobs, \d+ torch "
                     r"thread\(s\) each, measured on this machine \(.+ one after another\)",
                     out), out
    root = tmp_path / "quickstart"
    summaries = sorted(root.rglob("summary.json"))
    assert len(summaries) == 8
    for path in summaries:
        summary = json.loads(path.read_text())
        assert summary["status"] == "completed"
        rel = path.parent.relative_to(root).as_posix()
        local_iters = summary["setting"]["training.local_iters"]
        assert rel == f"{summary['algorithm']}/local_iters={local_iters}/seed{summary['seed']}"
        assert len(pd.read_csv(path.parent / "rounds.csv")) == 2
    index = json.loads((root / "sweep.json").read_text())
    assert index["sweep"] == {"training.local_iters": [1, 2], "seed": [0, 1]}
    assert len(index["points"]) == 8
    # the report of the sweep: every figure, every table row filled
    report = (root / "report.md").read_text()
    for figure in ("accuracy_vs_time.png", "accuracy_vs_rounds.png", "effect_local_iters.png",
                   "latency_accuracy.png"):
        assert (root / "figures" / figure).stat().st_size > 10_000, figure
        assert f"(figures/{figure})" in report
    tables = [line for line in report.splitlines() if line.startswith("| scala") or
              line.startswith("| fedavg")]
    assert len(tables) == 3 * 4                       # 4 groups (algorithm x T) per table
    for row in tables:
        points = [c.strip() for c in row.strip("|").split("|")]
        assert all(points) and "nan" not in row, row
    # run again: every point is skipped, nothing rewritten
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("rounds.csv")}
    code, out, err = cli(QUICKSTART, "--out", tmp_path, *TINY, *sweep)
    assert code == 0, err
    assert out.count("already completed, skipped") == 8
    assert stamps == {p: p.stat().st_mtime_ns for p in root.rglob("rounds.csv")}
    # a point deleted half way is the only one run; --force reruns everything
    (root / "fedavg/local_iters=2/seed1/summary.json").unlink()
    code, out, err = cli(QUICKSTART, "--out", tmp_path, *TINY, *sweep)
    assert out.count("already completed, skipped") == 7
    assert "fedavg training.local_iters=2 seed=1: completed" in out
    # (on the points of T = 1, seed 0: completed, and run again)
    code, out, err = cli(QUICKSTART, "--out", tmp_path, *TINY, "--set",
                         "sweep={training.local_iters: [1], seed: [0]}",
                         "--set", "algorithms=[scala, fedavg]", "--force", "--no-report",
                         "--no-figures")
    assert code == 0 and "skipped" not in out
    assert out.count(": completed") == 2


@pytest.mark.slow
def test_analysis_command_rebuilds_the_report_and_refuses_an_empty_folder(golden_run, tmp_path,
                                                                          capsys):
    from analysis.__main__ import main

    root = tmp_path / "golden"
    shutil.copytree(golden_run.out, root)
    assert not (root / "report.md").exists()
    assert main([str(root)]) == 0
    assert (root / "report.md").is_file() and (root / "figures" / "latency_accuracy.png").is_file()
    report = (root / "report.md").read_text()
    assert report.count("| fedconcat |") == 4              # one row in each table
    # whom the asynchronous servers listened to, from the run folders' own files
    section = report.split("## Asynchronous servers")[1].split("\n## ")[0]
    rows = {line.split(" | ")[0][2:]: line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| algorithm")}
    for algorithm in ("fedasync", "fedbuff", "async_sfl", "gas"):
        folder = root / algorithm / "seed3"
        summary = json.loads((folder / "summary.json").read_text())
        rounds, clients = pd.read_csv(folder / "rounds.csv"), pd.read_csv(folder / "clients.csv")
        taken = np.array([rounds[f"contrib_label_{c}"].sum() for c in range(10)], float)
        data = np.array([clients[f"label_{c}"].sum() for c in range(10)], float)
        bias = 0.5 * np.abs(taken / taken.sum() - data / data.sum()).sum()
        final = rounds.dropna(subset=["test_acc"]).iloc[-1]
        worst = min(final[f"acc_class_{c}"] for c in range(10))
        assert rows[algorithm].split(" | ")[1:] == [
            str(summary["rounds"]), f"{summary['staleness_mean']:.2f}",
            str(summary["staleness_max"]), f"{summary['updates_per_client_mean']:.2f}",
            f"{summary['updates_per_client_min']}-{summary['updates_per_client_max']}",
            f"{100 * summary['clients_without_update']:.0f}",
            f"{summary['updates_compute_correlation']:.2f}",
            f"{summary['updates_gain_correlation']:.2f}", f"{bias:.3f}", f"{100 * worst:.2f}",
            f"{100 * summary['final_acc']:.2f} |"]
    assert rows["scala"].split(" | ")[2:10] == ["-"] * 8     # synchronous: no staleness
    assert main([str(tmp_path / "nothing")]) == 2
    assert "no such results folder" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ray_executor_runs_two_points_on_a_local_ray_instance(tmp_path):
    pytest.importorskip("ray", reason="the optional extra: pip install -e '.[ray]'")
    # Ray's command line under this interpreter (a venv may see Ray's package but not its script)
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"]
    port = _free_port()
    env_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")   # Ray's socket paths must be short
    start = subprocess.run([*ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2",
                            "--include-dashboard=false", f"--temp-dir={env_dir}",
                            "--disable-usage-stats"], capture_output=True, text=True, timeout=300)
    assert start.returncode == 0, start.stderr
    try:
        proc = subprocess.run([sys.executable, "-m", "scala_netsim", str(QUICKSTART), "--out",
                               str(tmp_path / "out"), *TINY, "--set", "sweep={seed: [0, 1]}",
                               "--no-figures", "--executor", "ray",
                               "--ray-address", f"127.0.0.1:{port}"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        # issue 37: progress per point under Ray: submitted, started, finished
        assert "2 run(s) submitted to Ray, 2 at a time" in proc.stdout
        assert proc.stdout.count("started on the cluster") == 2, proc.stdout
        assert proc.stdout.count(": completed, best accuracy") == 2
        for seed in (0, 1):
            summary = json.loads((tmp_path / "out/quickstart/scala" / f"seed{seed}" /
                                  "summary.json").read_text())
            assert summary["status"] == "completed" and summary["seed"] == seed
        assert (tmp_path / "out/quickstart/report.md").is_file()
    finally:
        subprocess.run([*ray_cli, "stop", "--force"], capture_output=True, timeout=300)
        shutil.rmtree(env_dir, ignore_errors=True)


# --- closed-form communication ---------------------------------------------------------
@pytest.mark.parametrize("local_iters", [1, 3])
def test_bytes_per_round_equal_the_closed_form(make_run, local_iters):
    """SCALA: per client, T activations (float32) and T label vectors (int64) up, T gradients
    (activation-sized) down, and the client model once each way. FL: the whole model each way."""
    for algorithm in ("scala", "fedavg"):
        run = make_run(algorithm, training={"local_iters": local_iters, "batch_size": 40})
        client, server = build_split_model("alexnet14", "S2", 1, 10, torch.Generator())
        activation_bytes = 4 * 192 * 2 * 2       # per sample: the S2 output, 192 x 2 x 2 float32
        for r, selected in enumerate(([0, 3, 7], [1, 2, 9]), start=1):
            start, first = run.env.now, len(run.log)
            run.protocol.run_round(r, selected)
            row = round_row(r, run.log.rows[first:], start, run.env.now, len(selected))
            sizes = run.trainer.client_batch_sizes
            assert sorted(sizes) == sorted(selected) and sum(sizes.values()) == 40
            if algorithm == "scala":
                expected = sum(local_iters * (2 * activation_bytes * b + 8 * b)
                               for b in sizes.values())
                expected += 2 * state_bytes(client) * len(selected)
            else:
                expected = 2 * (state_bytes(client) + state_bytes(server)) * len(selected)
            assert row["uplink_bytes"] + row["downlink_bytes"] == expected, (algorithm, r)


def test_pareto_front_and_crossings_on_constructed_points():
    points = [(10, 80), (20, 85), (15, 70), (30, 84), (5, 60), (10, 79)]
    assert pareto_front(points) == [4, 0, 1]                  # (5,60), (10,80), (20,85)
    x = np.array([1e5, 1e6, 1e7])
    a, b = np.array([10.0, 4.0, 3.0]), np.array([5.0, 5.0, 5.0])
    (cx,) = crossings(x, a, b, log_x=True)
    assert 1e5 < cx < 1e6 and np.isclose(np.log10(cx), 5 + 5 / 6)
    assert crossings(x, a, a + 1, log_x=False) == []
    assert crossings(x, a, a, log_x=False) == []                  # equal everywhere
    assert crossings(x, a, np.array([10.0, 3.0, 3.0]), log_x=False) == []   # touch, no cross
    assert crossings(np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 9.0]),
                     np.array([2.0, 5.0, 4.0]), log_x=False) == [2.0]


def test_time_to_accuracy_curves_and_their_crossovers_on_constructed_runs(tmp_path):
    key = "network.uplink_bandwidth_hz"
    bands = [1e5, 1e6, 1e7]
    times = {("scala", 0.7): [100.0, 50.0, 40.0], ("fedavg", 0.7): [80.0, 60.0, 30.0],
             ("scala", 0.8): [200.0, 90.0, 80.0], ("fedavg", 0.8): [np.nan] * 3,
             ("scala", 0.85): [np.nan, np.nan, 90.0], ("fedavg", 0.85): [np.nan, 500.0, 250.0],
             ("scala", 0.9): [np.nan, 300.0, 100.0], ("fedavg", 0.9): [np.nan, 400.0, 200.0]}
    runs = pd.DataFrame([{"algorithm": a, "seed": 0, key: b,
                          **{f"time_to_{t:g}_s": times[(a, t)][i] for t in (0.7, 0.8, 0.85, 0.9)}}
                         for a in ("scala", "fedavg") for i, b in enumerate(bands)])
    runs[f"time_to_{0.95:g}_s"] = np.nan                      # reached by no run: no panel
    path = tmp_path / "t.png"
    texts = time_to_target_figure(runs, key, [key], [0.7, 0.8, 0.85, 0.9, 0.95], path)
    assert path.stat().st_size > 10_000
    # 70 %: 100 > 80 then 50 < 60 then 40 > 30: two crossings, fedavg first at the top
    (seventy,) = [t for t in texts if t.startswith("70 %")]
    assert seventy.startswith("70 %: scala and fedavg cross at uplink_bandwidth_hz ≈ ")
    assert seventy.count("MHz") == 2 and seventy.endswith("(fedavg first above)")
    assert "80 %: only scala reaches it, not fedavg" in texts
    assert "90 %: scala before fedavg at every uplink_bandwidth_hz where both reach it " \
           "(1-10 MHz); no crossover" in texts
    assert "85 %: scala before fedavg at the only uplink_bandwidth_hz where both reach it " \
           "(10 MHz); no crossover" in texts
    assert not [t for t in texts if t.startswith("95 %")]


def test_accuracy_at_equal_simulated_time_on_constructed_runs():
    """The equal-time table: per group the best accuracy evaluated by each instant, seeds
    without an evaluation by then counted apart; no section without one common budget."""
    from analysis.compare import accuracy_by_time
    from analysis.report import equal_time_lines

    curves = {"a/0": np.array([[10, 100.0, 0.5], [20, 200.0, 0.4], [30, 400.0, 0.7]]),
              "a/1": np.array([[10, 250.0, 0.6], [20, 390.0, 0.8]]),
              "b/0": np.array([[5, 50.0, 0.2], [6, 410.0, 0.9]])}
    assert np.isnan(accuracy_by_time(curves["a/0"], 99.9))            # none made yet
    assert accuracy_by_time(curves["a/0"], 200.0) == 0.5          # best, not latest
    assert accuracy_by_time(curves["a/0"], 400.0) == 0.7
    runs = pd.DataFrame([
        {"algorithm": "a", "seed": 0, "folder": "a/0", "total_sim_time_s": 400.0},
        {"algorithm": "a", "seed": 1, "folder": "a/1", "total_sim_time_s": 390.0},
        {"algorithm": "b", "seed": 0, "folder": "b/0", "total_sim_time_s": 410.0}])
    runs["time_budget_s"] = 400.0
    lines = equal_time_lines(runs, curves, [])
    assert lines[0] == "## Accuracy at equal simulated time"
    table = [line for line in "\n".join(lines).splitlines() if line.startswith("| ")]
    assert table[0].split(" | ")[1:3] == ["best acc by 33 s (%)", "best acc by 67 s (%)"]
    # a by 100 and 200 s: seed 0 only (50 %, its best); by 300 s both (50, 60); by 400 s 70, 80
    assert table[1] == ("| a | no evaluation yet | no evaluation yet | 50.00 (1/2) | "
                        "50.00 (1/2) | 55.00 ± 7.07 | 75.00 ± 7.07 | 395 ± 7 |")
    assert table[2] == "| b | no evaluation yet | 20.00 | 20.00 | 20.00 | 20.00 | 20.00 | 410 |"
    runs.loc[2, "time_budget_s"] = 500.0
    assert equal_time_lines(runs, curves, []) == []
    runs["time_budget_s"] = None
    assert equal_time_lines(runs, curves, []) == []


def test_the_accuracy_figure_puts_every_algorithm_of_a_setting_in_one_panel_on_one_axis(
        tmp_path):
    """accuracy_vs_time.png compares algorithms at equal simulated time: one panel per
    setting with every algorithm in it, every panel on the same x range (issue 37: the
    asynchronous study's figure had a panel per algorithm, each with its own x range)."""
    import matplotlib.pyplot as plt

    from analysis.figures import accuracy_figure

    key = "training.local_iters"
    rows, curves = [], {}
    for algorithm, t, seed, end in [("scala", 10, 0, 100.0), ("scala", 5, 0, 50.0),
                                    ("scala", 5, 1, 52.0), ("fedavg", 5, 0, 900.0),
                                    ("fedavg", 10, 0, 1800.0)]:
        folder = f"{algorithm}/t={t}/seed{seed}"
        rows.append({"algorithm": algorithm, "seed": seed, key: t, "folder": folder,
                     "total_sim_time_s": end})
        curves[folder] = np.array([[r, end * r / 4, 0.1 + 0.1 * r + 0.01 * seed]
                                   for r in range(5)])
    runs = pd.DataFrame(rows)
    drawn = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, path, **kwargs):
        drawn[path] = [(ax.get_title(), [line.get_label() for line in ax.get_lines()],
                        ax.get_xlim()) for ax in fig.axes if ax.get_visible()]
        return real_savefig(fig, path, **kwargs)

    plt.Figure.savefig = keep
    try:
        path = tmp_path / "a.png"
        chosen = accuracy_figure(runs, curves, [key], path, over_time=True)
    finally:
        plt.Figure.savefig = real_savefig
    assert chosen == {"panels": "setting", "colorbar": None, "log_x": True}
    panels = drawn[path]
    assert [title for title, _, _ in panels] == ["local_iters=10", "local_iters=5"]
    for _, labels, _ in panels:          # every algorithm in every panel, once
        assert [label for label in labels if not label.startswith("_")] == ["scala", "fedavg"]
    assert len({xlim for _, _, xlim in panels}) == 1                       # one x axis
    assert path.stat().st_size > 10_000


def _constructed_sweep(bands, end_times):
    """Runs of scala and fedavg over `bands` with accuracy curves ending at `end_times`."""
    key = "network.uplink_bandwidth_hz"
    rows, curves = [], {}
    for a, algorithm in enumerate(("scala", "fedavg")):
        for band, end in zip(bands, end_times[a], strict=True):
            folder = f"{algorithm}/{band:g}/seed0"
            rows.append({"algorithm": algorithm, "seed": 0, key: band, "folder": folder,
                         "total_sim_time_s": end})
            curves[folder] = np.array([[r, end * r / 10, 0.1 + 0.07 * r] for r in range(11)])
    return key, pd.DataFrame(rows), curves


def test_a_numeric_sweep_of_many_values_gets_a_colour_map_and_decades_a_log_axis(tmp_path):
    """The accuracy figures of a study with many points: a colour bar instead of a legend of
    a dozen lines, a log time axis where the runs' times span decades; few values keep
    distinct colours and a legend, times within a decade a linear axis."""
    from analysis.figures import accuracy_figure
    from analysis.style import log_time_axis, setting_colors

    bands = [1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7]
    key, runs, curves = _constructed_sweep(bands, [[5e4 / b * 1e3 for b in bands],
                                                   [5e5 / b * 1e3 for b in bands]])
    path = tmp_path / "a.png"
    assert accuracy_figure(runs, curves, [key], path, over_time=True) == \
        {"panels": "algorithm", "colorbar": key, "log_x": True}
    assert path.stat().st_size > 10_000
    assert accuracy_figure(runs, curves, [key], tmp_path / "r.png", over_time=False) == \
        {"panels": "algorithm", "colorbar": key, "log_x": False}   # rounds: never a log axis
    few = [1e6, 2e6, 5e6]
    key, runs, curves = _constructed_sweep(few, [[300.0, 250.0, 200.0], [900.0, 700.0, 500.0]])
    assert accuracy_figure(runs, curves, [key], tmp_path / "f.png", over_time=True) == \
        {"panels": "setting", "colorbar": None, "log_x": False}
    colors = setting_colors([(b,) for b in bands], [key])
    assert colors.scale is not None and len(set(colors.colors.values())) == len(bands)
    assert setting_colors([("a",), ("b",), ("c",), ("d",), ("e",)], ["channel"]).scale is None
    assert setting_colors([(b, 320) for b in bands], [key, "training.batch_size"]).scale is None
    assert log_time_axis([10.0, 99.0]) is False and log_time_axis([10.0, 100.0]) is True
    assert log_time_axis([0.0, float("nan"), 5.0]) is False


def test_a_log_axis_labels_plain_numbers_and_its_2s_and_5s_only_when_it_spans_few_decades():
    """A log time axis over a decade and a half labels 0.2, 0.5, 2, 5 besides its decades (a
    single decade label does not say where the points are); over several decades only the
    decades are labelled, and never as 10 to a power."""
    import matplotlib.pyplot as plt

    from analysis.style import set_log_x, tick_text

    def labels(low, high):
        figure, ax = plt.subplots()
        set_log_x(ax)
        ax.set_xlim(low, high)
        figure.canvas.draw()
        axis = ax.xaxis
        texts = {kind: [tick.label1.get_text() for tick, value in zip(ticks, locations, strict=True)
                        if tick.label1.get_text() and low <= value <= high]
                 for kind, ticks, locations in (
                     ("major", axis.get_major_ticks(), axis.get_majorticklocs()),
                     ("minor", axis.get_minor_ticks(), axis.get_minorticklocs()))}
        plt.close(figure)
        return texts

    narrow = labels(0.15, 1.1)
    assert narrow["major"] == ["1"] and narrow["minor"] == ["0.2", "0.5"]
    wide = labels(1.0, 5000.0)
    assert wide["major"] == ["1", "10", "100", "1000"] and wide["minor"] == []
    assert [tick_text(v) for v in (0.2, 5.0, 3000.0, 1e5)] == ["0.2", "5", "3000", "100000"]


def test_trade_off_labels_keep_off_each_other_off_other_points_and_inside_the_axes():
    """Labels of points close together: none overlaps another or covers a neighbour's marker,
    and a label pushed below the axes goes to the nearest free line above instead."""
    import matplotlib.pyplot as plt

    from analysis.tradeoff import place_labels

    figure, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    points = [(1.0, 80.0), (1.1, 79.9), (1.3, 79.8), (3.0, 10.0), (3.0, 10.0), (3.0, 10.0)]
    ax.plot(*zip(*points, strict=True), "o", ms=5)
    ax.set_ylim(5, 90)
    figure.draw_without_rendering()
    place_labels(ax, [(x, y, f"label {i}", "k") for i, (x, y) in enumerate(points[:3])],
                 avoid=points[:3])
    place_labels(ax, [(x, y, f"not reached {i}", "gray") for i, (x, y) in
                      enumerate(points[3:])], 6, True)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = [text.get_window_extent(renderer) for text in ax.texts]
    assert len(boxes) == 6
    for i, box in enumerate(boxes):
        assert box.y0 >= ax.bbox.y0 - 1, ax.texts[i].get_text()
        assert not any(box.overlaps(other) for other in boxes[i + 1:]), ax.texts[i].get_text()
    markers = [ax.transData.transform(point) for point in points[:3]]
    for box in boxes[:3]:
        assert not any(box.x0 < mx < box.x1 and box.y0 < my < box.y1 for mx, my in markers)
    plt.close(figure)


@pytest.mark.slow
def test_a_radio_sweep_of_named_cases_is_re_timed_and_reports_energy(cli, tmp_path):
    """Channel cases differing only in the network: one training per algorithm, the other
    cases re-timed; the files carry the radio and energy columns and the report their table
    and the energy-accuracy figure."""
    cases = ("sweep={channel: {plain: {network.record_radio: true}, "
             "faded: {network.fading: {kind: rayleigh, coherence: transfer}, "
             "network.link: {mode: fixed_rate, target_rate_bps: 1.0e6, max_attempts: 30}, "
             "network.allocation: min_max_latency}}}")
    code, out, err = cli(QUICKSTART, "--out", tmp_path, *TINY, "--set", cases,
                         "--set", "algorithms=[scala, fedavg]",
                         "--set", "network.shadowing_std_db=8")
    assert code == 0, err
    assert "2 point(s) differ from another only in network.*/compute.*" in out
    root = tmp_path / "quickstart"
    for algorithm in ("scala", "fedavg"):
        plain, faded = (root / algorithm / f"channel={c}" / "seed0" for c in ("plain", "faded"))
        summary = json.loads((faded / "summary.json").read_text())
        assert summary["retimed_from"] and summary["status"] == "completed"
        assert summary["client_energy_j"] == pytest.approx(
            summary["client_transmit_energy_j"] + summary["client_compute_energy_j"])
        events = pd.read_csv(faded / "events.csv")
        assert list(events.columns[-6:]) == ["bandwidth_hz", "gain_db", "rate_bps", "attempts",
                                             "tx_power_w", "energy_j"]
        a, b = (pd.read_csv(f / "rounds.csv") for f in (plain, faded))
        assert a["test_acc"].tolist() == b["test_acc"].tolist()     # the same learning
        # the same computations (summed in another order: the events end in another order)
        assert b["client_compute_energy_j"].to_numpy() == pytest.approx(
            a["client_compute_energy_j"].to_numpy(), rel=1e-12)
        assert not (a["round_time_s"] == b["round_time_s"]).all()   # another timeline
    comparison = pd.read_csv(root / "comparison.csv")
    assert {"client_energy_j", "energy_to_0.6_j"} <= set(comparison.columns)
    report = (root / "report.md").read_text()
    assert "## Round latency and energy" in report and "client energy / round (J)" in report
    assert (root / "figures" / "energy_accuracy.png").stat().st_size > 10_000
    assert "(figures/energy_accuracy.png)" in report


@pytest.mark.slow
def test_a_study_run_in_parts_is_indexed_and_reported_as_one(cli, tmp_path):
    """Two invocations on one --out, each for one algorithm (as a long study is run in the
    background): sweep.json lists the points of both, so the report has both; a point whose
    run folder is gone is not listed any more."""
    once = [a if a != "training.rounds=2" else "training.rounds=1" for a in TINY] + [
        "--no-figures"]
    assert cli(QUICKSTART, "--out", tmp_path, *once, "--set", "algorithms=[scala]")[0] == 0
    assert cli(QUICKSTART, "--out", tmp_path, *once, "--set", "algorithms=[fedavg]")[0] == 0
    root = tmp_path / "quickstart"
    index = json.loads((root / "sweep.json").read_text())
    assert index["algorithms"] == ["fedavg", "scala"]
    assert [(c["algorithm"], c["folder"]) for c in index["points"]] == [
        ("scala", "scala/seed0"), ("fedavg", "fedavg/seed0")]
    report = (root / "report.md").read_text()
    assert report.count("| scala |") == report.count("| fedavg |") >= 3   # every table
    shutil.rmtree(root / "scala")
    code, stdout, _ = cli(QUICKSTART, "--out", tmp_path, *once, "--set", "algorithms=[fedavg]")
    assert code == 0 and "already completed, skipped" in stdout
    index = json.loads((root / "sweep.json").read_text())
    assert [c["algorithm"] for c in index["points"]] == ["fedavg"]


def test_ray_with_no_cluster_at_the_address_exits_2_and_writes_nothing(cli, tmp_path):
    # issue 37: Ray's ConnectionError traceback, exit 1, and sweep.json already written
    pytest.importorskip("ray", reason="the optional extra: pip install -e '.[ray]'")
    address = f"127.0.0.1:{_free_port()}"   # nobody listens there
    code, out, err = cli(QUICKSTART, "--out", tmp_path / "out", *TINY, "--executor", "ray",
                         "--ray-address", address)
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"error: --ray-address {address}: cannot connect to a Ray cluster")
    assert "ray start --head" in err and "nothing was written" in err
    assert not (tmp_path / "out").exists() and out == ""


def test_the_estimate_spreads_the_runs_over_the_executors_slots(monkeypatch):
    from scala_netsim.runner import estimate
    from scala_netsim.tools.sweep import expand_sweep

    # in the order submitted, each to the worker that comes free first: 5+3 | 4+3+3
    assert estimate.makespan_s([5.0, 4.0, 3.0, 3.0, 3.0], 2) == 10.0
    assert estimate.makespan_s([5.0, 4.0], 1) == 9.0
    measured = []

    def fake_measure(cls, scenario, dataset, device, threads=None):
        measured.append(threads)
        return estimate.StepCosts(0.001, 0.001, 0.001)

    monkeypatch.setattr(estimate.StepCosts, "measure", classmethod(fake_measure))
    points = expand_sweep(scenario(sweep={"seed": [0, 1]}), Path("/tmp/none"))
    dataset = type("D", (), {"test_y": [0] * 100})()
    each = estimate.run_time_s(points[0].scenario, "scala", 100, estimate.StepCosts(
        0.001, 0.001, 0.001))
    line = estimate.estimate_line(points[0].scenario, points, points, {}, dataset, "cpu",
                                  estimate.Spread(3, 2, "the Ray cluster's 3 slot(s) of 2 CPU(s)"))
    assert measured == [2]                      # timed with the threads each point will have
    assert line.startswith("estimated run time: ") and "for 4 run(s) spread over the Ray " in line
    assert estimate.estimate_line(points[0].scenario, points, points, {}, dataset, "cpu", None) == \
        "no run-time estimate (--no-estimate)"
    assert len(points) == 4 and each > 0
