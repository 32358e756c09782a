"""A researcher's first day (issue 37): every failure a clear message, exit 2, nothing written
or lost; results a user can trust; the Python API's errors under one base. Each test failed
on the code before its fix."""

import json
import os
import stat
import subprocess
import sys

import pytest

import scala_netsim as sn

from conftest import ROOT

QUICK = ROOT / "scenarios" / "quickstart.yaml"
SMALL = ["--set", "data.train_samples=1000", "--set", "data.test_samples=100",
         "--set", "training.rounds=1", "--set", "training.local_iters=1", "--no-progress",
         "--no-figures", "--no-report"]


@pytest.fixture
def finished(cli, tmp_path):
    """A finished one-round quickstart run: (the results root, its run folder)."""
    code, out, err = cli(QUICK, "--out", tmp_path, *SMALL)
    assert code == 0, err
    return tmp_path, tmp_path / "quickstart" / "scala" / "seed0"


def test_an_out_that_cannot_be_created_is_refused_in_one_line(cli, tmp_path):
    # os.access says yes to root under /proc; the run then died in a traceback
    code, out, err = cli(QUICK, "--out", "/proc/scala_netsim_results", *SMALL)
    assert code == 2
    assert err.startswith("error: --out: cannot write results under '/proc/scala_netsim_results'")
    assert "Traceback" not in err and out == ""


def test_a_corrupt_summary_is_named_with_what_to_do(cli, finished):
    root, run = finished
    (run / "summary.json").write_text('{"status": "completed", ')
    code, _, err = cli(QUICK, "--out", root, *SMALL)
    assert code == 2
    assert f"{run / 'summary.json'}: not a summary this package wrote" in err
    assert "delete it" in err and "--force" in err
    assert (run / "summary.json").read_text() == '{"status": "completed", '   # nothing lost


def test_a_damaged_finished_run_is_refused_not_skipped(cli, finished):
    root, run = finished
    rounds = run / "rounds.csv"
    rounds.write_text(rounds.read_text()[:-20])          # truncated
    code, out, err = cli(QUICK, "--out", root, *SMALL)
    assert code == 2
    assert "already completed, skipped" not in out
    assert f"{run}/rounds.csv: not the file its run wrote" in err and "--force" in err
    # nor is it analysed into a report that silently loses columns
    from analysis.__main__ import main as analysis_main

    assert analysis_main([str(root / "quickstart")]) == 2
    # --force trains it again
    code, out, err = cli(QUICK, "--out", root, *SMALL, "--force")
    assert code == 0, err


def test_a_key_given_twice_is_refused_with_both_lines(cli, tmp_path):
    scenario = tmp_path / "twice.yaml"
    scenario.write_text("name: twice\nseed: 0\ntraining:\n  rounds: 1\nseed: 1\n")
    code, _, err = cli(scenario, "--out", tmp_path / "out")
    assert code == 2
    assert "key 'seed' is given twice, on line 2 and on line 5" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("setting, message", [
    ("training.rounds=true", "training.rounds: must be a whole number, got true (a boolean)"),
    ("network.uplink_bandwidth_hz=false",
     "network.uplink_bandwidth_hz: must be a number, got false (a boolean)"),
    ("training.deadline_s=true", "training.deadline_s: must be a number, got true"),
    ("timing_only=1", "timing_only: must be true or false, got 1"),
    # an algorithm's own section too (FedProx ran with mu = 1.0)
    ("fedprox.mu=true", "fedprox.mu: must be a number, got true (a boolean)"),
    ("sweep={training.rounds: 5}",
     "sweep.training.rounds: must be a list of values (e.g. [5, 10]) or named cases"),
    ("data.partition.kind=dirchlet", "got 'dirchlet'; did you mean 'dirichlet'?"),
    ("algorithms=[scalaa]", "got 'scalaa'; did you mean 'scala'?"),
])
def test_a_value_of_the_wrong_kind_is_refused_saying_what_is_allowed(cli, tmp_path, setting,
                                                                      message):
    code, _, err = cli(QUICK, "--set", setting, "--out", tmp_path / "out")
    assert code == 2 and message in err, err
    assert "union" not in err and "list[any]" not in err   # no pydantic internals
    assert not (tmp_path / "out").exists()


def test_a_folder_given_as_the_scenario_is_called_a_folder(cli, tmp_path):
    code, _, err = cli(ROOT / "scenarios", "--out", tmp_path / "out")
    assert code == 2
    assert "'" + str(ROOT / "scenarios") + "' is a folder, not a scenario file" in err
    assert "quickstart.yaml" not in err or "it holds" in err


def test_result_files_get_the_users_umask_as_figures_do(cli, tmp_path):
    before = os.umask(0o022)
    try:
        code, _, err = cli(QUICK, "--out", tmp_path, *SMALL)
    finally:
        os.umask(before)
    assert code == 0, err
    run = tmp_path / "quickstart" / "scala" / "seed0"
    from scala_netsim.core.results import FILE_MODE

    for name in ("summary.json", "rounds.csv", "events.csv", "scenario.yaml"):
        assert stat.S_IMODE((run / name).stat().st_mode) == FILE_MODE, name
    assert 0o666 & ~before == FILE_MODE


def test_a_run_too_small_to_estimate_says_why(cli, tmp_path):
    code, out, err = cli(QUICK, "--out", tmp_path, *SMALL)
    assert code == 0, err
    assert "no run-time estimate: 1 local step(s) in all" in out


def test_every_error_of_the_api_derives_from_scala_netsim_error():
    errors = ["ScenarioError", "RefusedError", "DataNotFoundError", "PartitionError",
              "CheckpointError", "RecordError", "DamagedRunError"]
    for name in errors:
        assert issubclass(getattr(sn, name), sn.Error), name
    assert set(errors) | {"Error", "run", "load_scenario", "open_results", "Results"} \
        <= set(dir(sn))
    with pytest.raises(sn.Error, match="training.rounds: must be >= 1"):
        sn.load_scenario(QUICK, {"training.rounds": 0})
    from analysis.runs import ReportError
    from scala_netsim.tools.attack import AttackError
    from scala_netsim.tools.keep import KeepError

    assert all(issubclass(e, sn.Error) for e in (ReportError, AttackError, KeepError))


def test_importing_the_api_names_loads_no_torch():
    code = ("import sys, scala_netsim as sn; sn.Error; sn.ScenarioError; dir(sn); "
            "print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert proc.stdout.strip() == "False"


def test_a_summary_that_is_not_an_object_is_named(tmp_path):
    from scala_netsim.core.results import read_summary

    path = tmp_path / "summary.json"
    path.write_text(json.dumps([1, 2]))
    with pytest.raises(sn.DamagedRunError, match="a JSON list, not an object"):
        read_summary(path)


def test_drop_checkpoints_deletes_a_finished_runs_checkpoint(cli, tmp_path):
    every = [a if a != "training.rounds=1" else "training.rounds=2" for a in SMALL] + [
        "--set", "training.checkpoint_every=1"]      # (a key given once: issue 61)
    code, _, err = cli(QUICK, "--out", tmp_path, *every)
    assert code == 0, err
    kept = tmp_path / "quickstart" / "scala" / "seed0" / "checkpoint.pt"
    assert kept.is_file()                       # by default a finished run keeps its own
    code, _, err = cli(QUICK, "--out", tmp_path / "dropped", *every,
                       "--drop-checkpoints")
    assert code == 0, err
    run = tmp_path / "dropped" / "quickstart" / "scala" / "seed0"
    assert (run / "summary.json").is_file() and not (run / "checkpoint.pt").exists()


class _Interrupting:
    """A module whose names cannot be read before Ctrl-C comes (torch still importing)."""

    def __getattr__(self, name):
        raise KeyboardInterrupt


def test_ctrl_c_while_torch_imports_exits_130_naming_the_interpreter(cli, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setitem(sys.modules, "scala_netsim.api", _Interrupting())
    code, out, err = cli(QUICK, "--out", tmp_path, *SMALL)
    assert code == 130
    assert "Traceback" not in err and "interrupted; every file written is complete" in err
    assert f"  {sys.executable} -m scala_netsim {QUICK} --out {tmp_path}" in err


def test_a_resumed_run_says_so_and_counts_what_is_left(cli, tmp_path):
    every = [a if a != "training.rounds=1" else "training.rounds=2" for a in SMALL] + [
        "--set", "training.checkpoint_every=1"]      # (a key given once: issue 61)
    code, _, err = cli(QUICK, "--out", tmp_path, *every)
    assert code == 0, err
    run = tmp_path / "quickstart" / "scala" / "seed0"
    first = json.loads((run / "summary.json").read_text())
    (run / "summary.json").unlink()      # as if stopped after round 1's checkpoint
    import time

    import torch

    before = torch.load(run / "checkpoint.pt", weights_only=True)["wall_time_s"]
    start = time.perf_counter()
    code, out, err = cli(QUICK, "--out", tmp_path, *every)
    second = time.perf_counter() - start
    assert code == 0, err
    assert f"scala: resuming from round 1 of 2 ({run})" in out
    again = json.loads((run / "summary.json").read_text())
    assert again["resumed_from_round"] == 1 and again["final_acc"] == first["final_acc"]
    # the wall time adds up every invocation that worked on the run: the first's share up
    # to its checkpoint and what the second took (at most its whole invocation)
    assert before > 0 and before < again["wall_time_s"] <= before + second
    assert len(again["machines"]) == 2 and again["machines"][1]["from_round"] == 1


@pytest.mark.slow
def test_the_readmes_first_command_prints_what_the_readme_says(cli, tmp_path):
    import re
    import shlex

    readme = (ROOT / "README.md").read_text()
    command = next(line.strip() for line in readme.splitlines()
                   if line.strip().startswith(".venv/bin/python -m scala_netsim"
                                              " scenarios/quickstart.yaml --set training.rounds=5"))
    args = shlex.split(command)[3:]
    args[args.index("--out") + 1] = str(tmp_path)
    code, out, err = cli(*[ROOT / a if a.startswith("scenarios/") else a for a in args],
                         "--no-progress")
    assert code == 0, err
    quoted = re.search(r"`(scala: completed, best\s+accuracy [^`]*)`", readme).group(1)
    quoted = " ".join(quoted.split())
    line = next(line for line in out.splitlines() if line.startswith("scala: completed"))
    # the simulated time and the round are the clock's (any machine); the accuracy is the
    # learning's, bit-identical at the README's thread count only
    assert "(round 5)" in line and "simulated time 21.5 s" in line and "(round 5)" in quoted
    assert "simulated time 21.5 s" in quoted
    assert "estimated run time on this machine:" in out


def test_curves_that_coincide_say_so_and_are_drawn_in_other_styles():
    import numpy as np

    from analysis.style import LINE_STYLES, legend_labels

    fedavg = [np.array([[0.0, 0.1], [5.0, 0.5]])]
    curves = {"fedavg": fedavg, "fedprox": [fedavg[0].copy()],
              "scala": [np.array([[0.0, 0.1], [5.0, 0.7]])]}
    assert legend_labels(curves) == {"fedavg": "fedavg",
                                     "fedprox": "fedprox (the same curve as fedavg)",
                                     "scala": "scala"}
    assert len(set(map(str, LINE_STYLES))) == len(LINE_STYLES) > 1


def test_a_round_axis_has_ticks_on_whole_rounds_only():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis.style import round_axis

    fig, ax = plt.subplots()
    ax.plot([1, 2], [0.1, 0.2])          # a two-round run: ticks were at 1.25 and 1.5
    round_axis(ax.xaxis)
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if 1 <= t <= 2]
    plt.close(fig)
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_a_scenario_without_a_model_section_trains_the_authors_alexnet():
    from scala_netsim.config.scenario import validate_scenario

    scenario = validate_scenario({"name": "no_model", "algorithms": ["scala"]})
    assert (scenario.model.arch, scenario.model.split) == ("alexnet", "S2")
    assert "`alexnet` (the default" in (ROOT / "docs" / "guides" / "scenarios.md").read_text()


def test_the_docs_show_the_guard_and_every_allowed_training_key():
    # issue 37: the Python API guide ran sn.run(jobs=2) at a script's top level (it fails
    # under spawn), and the bad-input guide's list of keys lacked concurrency, time_budget_s
    from scala_netsim.config.sections import TrainingConfig

    guide = (ROOT / "docs" / "guides" / "python-api.md").read_text()
    assert guide.index('if __name__ == "__main__":') < guide.index("jobs=2")
    listed = " ".join((ROOT / "docs" / "guides" / "bad-input.md").read_text().split())
    allowed = listed.split("training.rouns: unknown key; did you mean 'rounds'? (allowed: ")[1]
    assert allowed.split(")")[0].split(", ") == list(TrainingConfig.model_fields)
