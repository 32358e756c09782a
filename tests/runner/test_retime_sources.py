"""Issue 61: what a re-timing says of its source, and what it refuses to do unasked. A damaged
source or one without scenario.yaml is named with what a source needs, never told to delete
itself; a run whose learning depends on the order of its server's steps is not trained by a
command named re-time unless asked (--train-if-diverged)."""

import shutil
import sys

import pytest

import scala_netsim as sn
from scala_netsim.core.files import EVENTS_CSV, SCENARIO_YAML

from golden_run import SCENARIO

pytestmark = pytest.mark.slow   # trains two 2-round runs (about 10 s)

NARROW = {"network.uplink_bandwidth_hz": 2e6}
WIDE = ["--set", "network.uplink_bandwidth_hz=20e6"]
QUIET = ["--no-progress", "--no-figures", "--no-report", "--no-estimate"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The golden scenario's FedAvg and SplitFedV2 trained under a 2 MHz uplink: under 20 MHz
    SplitFedV2's server takes the uploads in another order (its learning depends on it)."""
    out = tmp_path_factory.mktemp("trained")
    scenario = sn.load_scenario(SCENARIO, {**NARROW, "algorithms": ["fedavg", "splitfed_v2"]})
    sn.run(scenario, out, echo=False, estimate=False)
    return out / "golden"


def retime(*args):
    from scala_netsim.retime import main

    return main([str(a) for a in args])


def test_a_damaged_source_is_named_as_a_source_and_not_told_to_delete_itself(cli, trained,
                                                                              tmp_path):
    kept = tmp_path / "kept"
    shutil.copytree(trained, kept)
    run = kept / "fedavg" / "seed3"
    with open(run / EVENTS_CSV, "a") as events:
        events.write("x\n")
    code, _, err = cli(SCENARIO, "--out", tmp_path / "out", "--retime-from", kept,
                       "--retime-only", "--set", "algorithms=[fedavg]", *WIDE, *QUIET)
    assert code == 2
    assert (f"    {run}/events.csv: not the file its run wrote (its SHA-256 differs from the one "
            f"in summary.json): damaged, edited or from another run; a damaged source is "
            f"skipped, never re-timed from: restore its files (a run kept in git: git "
            f"checkout -- {run})\n") in err
    assert "--force" not in err and "delete" not in err
    assert not (tmp_path / "out").exists()


def test_a_source_without_its_scenario_says_what_a_source_needs(cli, trained, tmp_path,
                                                                capsys):
    kept = tmp_path / "kept"
    shutil.copytree(trained, kept)
    run = kept / "fedavg" / "seed3"
    (run / SCENARIO_YAML).unlink()
    needs = ("holds no scenario.yaml; a run to re-time from is a finished run's folder as its "
             "run wrote it: scenario.yaml (the settings it was trained with), summary.json and "
             "its record files (rounds.csv, events.csv, demands.csv)")
    code, _, err = cli(SCENARIO, "--out", tmp_path / "out", "--retime-from", kept,
                       "--retime-only", "--set", "algorithms=[fedavg]", *WIDE, *QUIET)
    assert code == 2
    assert f"    {run}: {needs}\n" in err and "Errno" not in err
    assert retime(run, *WIDE, "--out", tmp_path / "again") == 2
    err = capsys.readouterr().err
    assert err == f"error: {run}: {needs}\n"
    assert not (tmp_path / "again").exists()


def test_retime_refuses_to_train_a_run_whose_timeline_diverged_unless_asked(trained, tmp_path,
                                                                           capsys):
    source, out = trained / "splitfed_v2" / "seed3", tmp_path / "wide"
    assert retime(source, *WIDE, "--out", out) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(
        f"error: {source}: cannot be re-timed (round 2: the server takes client ")
    assert ("splitfed_v2's learning depends on that order); training it would take about as "
            "long as its source's training did (") in captured.err
    assert " for 2 rounds); nothing was written." in captured.err
    assert captured.err.endswith(
        f"; nothing was written. To train it under the new settings:\n"
        f"  {sys.executable} -m scala_netsim.retime {source} --set "
        f"network.uplink_bandwidth_hz=20e6 "
        f"--out {out} --train-if-diverged\n")
    assert not out.exists()
    assert retime(source, *WIDE, "--out", out, "--train-if-diverged") == 0
    assert f"{out}: trained for real (--train-if-diverged);" in capsys.readouterr().out
    # FedAvg's learning does not depend on the order: re-timed with or without the flag
    assert retime(trained / "fedavg" / "seed3", *WIDE, "--out", tmp_path / "fedavg") == 0
    assert "re-timed from" in capsys.readouterr().out


def test_retime_from_refuses_to_train_a_point_whose_re_timing_diverged_unless_asked(
        cli, trained, tmp_path):
    """The CLI's --retime-from promises re-timings: a point whose re-timing from a kept run
    diverges is not trained unasked either (--retime-only refused it already)."""
    args = [SCENARIO, "--out", tmp_path / "out", "--retime-from", trained,
            "--set", "algorithms=[fedavg, splitfed_v2]", *WIDE, *QUIET]
    code, out, err = cli(*args)
    assert code == 2
    source = trained / "splitfed_v2" / "seed3"
    assert err.startswith(
        "error: --retime-from: these points' re-timings from its runs diverged (their learning "
        "depends on the order of the server's steps), and training them would take as long as "
        "their sources' trainings did; they were not trained (the others are done):\n"
        f"  splitfed_v2: not re-timed from {source}: round 2: the server takes client ")
    assert err.endswith("\nno comparison or report was written; to train them, run the same "
                        "command again with --train-if-diverged (the finished points are "
                        "skipped)\n")
    assert "fedavg: re-timed, " in out and "training it for real" not in out
    run = tmp_path / "out" / "golden" / "splitfed_v2" / "seed3"
    assert not run.exists() or not any(run.iterdir())   # nothing its replay wrote is left
    code, out, err = cli(*args, "--train-if-diverged")
    assert code == 0, err
    assert (f"splitfed_v2: not re-timed from {source}: round 2: the server takes client "
            in out) and "; training it for real" in out
    assert "fedavg: already completed, skipped" in out
    assert (run / "summary.json").is_file()
