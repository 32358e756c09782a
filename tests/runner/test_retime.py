"""Train once, re-time many: a re-timed point must be byte for byte the point trained for real,
reorderings that change learning must be caught, and bad records refused.

The golden scenario swept over the uplink (2 MHz, then 20 MHz): the sweep trains the 2 MHz
points and re-times the 20 MHz ones from them, which must then be the golden files, the golden
scenario's runs trained for real at 20 MHz (tests/golden/).
"""

import json
import shutil

import pandas as pd
import pytest

from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.core.files import RECORD_FILES
from scala_netsim.core.results import file_sha256
from scala_netsim.runner.replay import Record, RecordError

from conftest import ROOT
from golden_run import GOLDEN, run_golden, run_pinned

pytestmark = pytest.mark.slow

SWEEP = "sweep={network.uplink_bandwidth_hz: [2.0e6, 20.0e6]}"
SOURCE, TARGET = "uplink_bandwidth_hz=2000000", "uplink_bandwidth_hz=20000000"
ORDER_SENSITIVE = sorted(a for a, spec in ALGORITHMS.items() if spec.trainer.server_order_matters
                         and spec.protocol.__name__ in ("PerClientSplitProtocol",
                                                        "LocalLossProtocol"))
# the clock decides what they learn: every point of theirs is trained, never re-timed
ASYNCHRONOUS = ALGORITHMS.with_trait("asynchronous")
RETIMED = sorted(set(ALGORITHMS) - set(ASYNCHRONOUS))


@pytest.fixture(scope="session")
def sweeps(tmp_path_factory):
    """(root of the sweep, its stdout): the 2 MHz points trained, the 20 MHz ones re-timed."""
    out = tmp_path_factory.mktemp("retimed")
    proc = run_golden(out, "--set", SWEEP)
    assert proc.returncode == 0, proc.stderr
    return out / "golden", proc.stdout


def test_the_sweep_trains_one_point_per_trajectory_and_re_times_the_other(sweeps):
    _, stdout = sweeps
    assert f"{len(RETIMED)} point(s) differ from another only in network.*/compute.*" in stdout
    # the 2 MHz points, and both points of each asynchronous algorithm
    assert (f"for {len(ALGORITHMS) + len(ASYNCHRONOUS)} run(s) one after another"
            in stdout)
    for algorithm in set(RETIMED) - set(ORDER_SENSITIVE):
        assert f"{algorithm} network.uplink_bandwidth_hz=20000000: re-timed, " in stdout
    for algorithm in ASYNCHRONOUS:
        assert f"{algorithm} network.uplink_bandwidth_hz=20000000: completed, " in stdout


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_a_re_timed_point_is_byte_identical_to_the_point_trained_for_real(sweeps, algorithm):
    """(An asynchronous algorithm's 20 MHz point is trained: byte-identical all the same.)"""
    """The 20 MHz point against the golden files, the golden scenario trained at 20 MHz."""
    root, _ = sweeps
    got, want = root / algorithm / TARGET / "seed3", GOLDEN / algorithm
    for name in RECORD_FILES:
        assert (got / name).read_bytes() == (want / name).read_bytes(), name
    summary = json.loads((got / "summary.json").read_text())
    direct = json.loads((want / "summary.json").read_text())
    for key in ("status", "final_acc", "best_acc", "best_round", "total_sim_time_s",
                "uplink_bytes", "downlink_bytes", "client_flops", "server_flops",
                "files_sha256"):
        assert summary[key] == direct[key], key
    # the timeline did change: 20 MHz instead of the source's 2 MHz
    source = json.loads((root / algorithm / SOURCE / "seed3" / "summary.json").read_text())
    assert summary["total_sim_time_s"] < source["total_sim_time_s"]
    if algorithm in ORDER_SENSITIVE or algorithm in ASYNCHRONOUS:   # trained for real
        assert summary["retimed_from"] is None
    else:
        assert summary["retimed_from"] == f"golden/{algorithm}/{SOURCE}/seed3"
        assert direct["retimed_from"] is None


def test_a_reordering_of_server_steps_is_caught_and_the_point_trained(sweeps):
    """SplitFedV2 and SFL with local loss step one shared server model per upload: at 20 MHz
    the uploads reach the server in another order than at 2 MHz, so those points are trained
    for real."""
    _, stdout = sweeps
    assert ORDER_SENSITIVE == ["sfl_local_loss", "splitfed_v2"]
    for algorithm in ORDER_SENSITIVE:
        line = next(x for x in stdout.splitlines()
                    if x.startswith(f"{algorithm} network.uplink_bandwidth_hz=20000000: not "
                                    f"re-timed"))
        assert "the server takes client" in line and "training it for real" in line
        assert f"{algorithm}'s learning depends on that order" in line


def copy_run(golden_run, algorithm, tmp_path):
    folder = tmp_path / algorithm
    shutil.copytree(golden_run.run_dir(algorithm), folder)
    return folder


def test_a_damaged_events_file_is_refused(golden_run, tmp_path):
    folder = copy_run(golden_run, "scala", tmp_path)
    lines = (folder / "events.csv").read_text().splitlines(keepends=True)
    (folder / "events.csv").write_text("".join(lines[:-3]))   # cut short
    with pytest.raises(RecordError, match="events.csv: not the file its run wrote"):
        Record.load(folder)


def test_a_foreign_events_file_is_refused_even_with_matching_digests(golden_run, tmp_path):
    """FedAvg's record in SCALA's folder, its digests written into the summary: the replay
    itself finds that the protocol asks for steps the record does not hold."""
    from scala_netsim.runner.loop import Run
    from scala_netsim.runner.replay import replay_trainer
    from scala_netsim.runner.world import build_world, scenario_dataset

    folder = copy_run(golden_run, "scala", tmp_path)
    for name in ("events.csv", "demands.csv", "rounds.csv"):
        shutil.copy(golden_run.run_dir("fedavg") / name, folder / name)
    summary = json.loads((folder / "summary.json").read_text())
    summary["files_sha256"] = {n: file_sha256(folder / n) for n in RECORD_FILES}
    (folder / "summary.json").write_text(json.dumps(summary))
    record = Record.load(folder)
    import torch

    world = build_world(record.scenario, scenario_dataset(record.scenario, "cpu"))
    run = Run(record.scenario, "scala", world, torch.device("cpu"), replay_trainer(record))
    with pytest.raises(RecordError, match="which the record does not hold"):
        run.step()


def test_retime_refuses_what_is_not_a_finished_run(golden_run, tmp_path, capsys):
    from scala_netsim.retime import main

    folder = copy_run(golden_run, "fedavg", tmp_path)
    out = tmp_path / "out"
    assert main([str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "no such run folder" in capsys.readouterr().err
    summary = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**summary, "status": "invariant violation"}))
    assert main([str(folder), "--out", str(out)]) == 2
    assert "not a finished run (status 'invariant violation'" in capsys.readouterr().err
    (folder / "summary.json").unlink()
    assert main([str(folder), "--out", str(out)]) == 2
    assert "not a finished run (no summary.json" in capsys.readouterr().err
    assert not out.exists()


def test_retime_refuses_a_change_of_learning_settings(golden_run, tmp_path, capsys):
    from scala_netsim.retime import main

    code = main([str(golden_run.run_dir("scala")), "--set", "training.lr=0.5",
                 "--set", "network.radius_m=300", "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "differ in training.lr" in err and "only network.* and compute.*" in err


def test_retime_writes_a_run_folder_timed_under_the_new_cell(golden_run, tmp_path, capsys):
    from scala_netsim.retime import main

    source = golden_run.run_dir("fedavg")
    out = tmp_path / "fedavg_slow"
    assert main([str(source), "--set", "compute.client_flops_per_s=[1.0e8, 2.0e8]",
                 "--out", str(out)]) == 0
    assert "re-timed from" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert (out / summary["retimed_from"]).resolve() == source.resolve()
    assert summary["setting"] == {"compute.client_flops_per_s": [1.0e8, 2.0e8]}
    slow, fast = (pd.read_csv(f / "rounds.csv") for f in (out, source))
    assert slow["test_acc"].tolist() == fast["test_acc"].tolist()
    assert (slow["compute_time_s"] > 10 * fast["compute_time_s"]).all()


def test_a_timing_only_run_has_the_timeline_of_the_real_run(golden_run, tmp_path):
    """Times, bytes and FLOPs of every event equal the real run's, with no accuracy."""
    algorithms = ["scala", "splitfed_v2", "sfl_local_loss", "splitfed_v3", "fedprox", "fedavg"]
    proc = run_golden(tmp_path, "--timing-only", "--set", f"algorithms=[{', '.join(algorithms)}]",
                      figures=True)
    assert proc.returncode == 0, proc.stderr
    for algorithm in algorithms:
        got = tmp_path / "golden" / algorithm / "seed3"
        for name in ("events.csv", "demands.csv"):
            assert (got / name).read_bytes() == (golden_run.run_dir(algorithm) / name).read_bytes()
        assert "test_acc" not in pd.read_csv(got / "rounds.csv").columns
        summary = json.loads((got / "summary.json").read_text())
        assert summary["timing_only"] is True and "final_acc" not in summary
        assert [p.name for p in got.glob("*.png")] == ["latency_breakdown.png"]
        assert not (got / "checkpoint.pt").exists()   # written at the end, never checkpointed
    # the report and the comparison draw no accuracy: nothing was measured
    root = tmp_path / "golden"
    assert "results: " in proc.stdout and "accuracy_vs_time.png" not in proc.stdout
    assert not list(root.glob("accuracy_vs_*.png")) + list((root / "figures").glob("acc*"))
    from analysis.report import write_report

    report = write_report(root).read_text()
    assert "## Simulated time" in report and "acc (%)" not in report
    assert "0 trained, 6 timed without training (timing only)." in report
    assert "Latency-accuracy" not in report


def test_timing_only_refuses_an_algorithm_whose_messages_change(golden_run, tmp_path):
    proc = run_golden(tmp_path, "--timing-only", "--set", "algorithms=[fedconcat]")
    assert proc.returncode == 2
    assert "timing_only: fedconcat cannot be timed without training" in proc.stderr


def test_a_cell_with_the_radio_model_re_times_byte_identical_to_its_training(golden_run,
                                                                             tmp_path):
    """Shadowing, per-transfer fading, fixed-rate ARQ and min-max allocation change only the
    timeline: the golden runs re-timed under them equal the same point trained for real, radio
    and energy columns included. (splitfed_v2's server order changes under them, so the
    re-timer trains it for real when asked, --train-if-diverged: it runs pinned like the real
    run, whose bits it must match.)"""
    radio = ["network.shadowing_std_db=8", "network.allocation=min_max_latency",
             "network.fading={kind: rayleigh, coherence: transfer}",
             "network.link={mode: fixed_rate, target_rate_bps: 1.0e6, max_attempts: 30}"]
    algorithms = ["scala", "splitfed_v2", "fedavg"]
    real = run_golden(tmp_path / "real", "--set", f"algorithms=[{', '.join(algorithms)}]",
                      *(a for item in radio for a in ("--set", item)))
    assert real.returncode == 0, real.stderr
    for algorithm in algorithms:
        out = tmp_path / "retimed" / algorithm
        proc = run_pinned("scala_netsim.retime", golden_run.run_dir(algorithm),
                          *(a for item in radio for a in ("--set", item)), "--out", out,
                          "--train-if-diverged")
        assert proc.returncode == 0, proc.stderr
        want = tmp_path / "real" / "golden" / algorithm / "seed3"
        for name in RECORD_FILES:
            assert (out / name).read_bytes() == (want / name).read_bytes(), (algorithm, name)
        assert "energy_j" in (out / "events.csv").read_text().splitlines()[0]


@pytest.mark.slow
def test_the_headlines_kept_scala_run_re_times_at_5_mhz_from_its_records_in_git(tmp_path,
                                                                                 capsys):
    """Issue 38: a committed run (gzipped records, no checkpoint) is re-timed exactly under
    another point: the same learning, round by round, under a quarter of the uplink band."""
    from scala_netsim.core.files import ROUNDS_CSV, run_file
    from scala_netsim.core.results import read_csv
    from scala_netsim.retime import main

    source = ROOT / "docs" / "studies" / "cellular_10pct" / "results" / "scala" / "seed0"
    out = tmp_path / "scala_5mhz"
    assert main([str(source), "--set", "network.uplink_bandwidth_hz=5e6", "--out",
                 str(out)]) == 0
    assert "re-timed from" in capsys.readouterr().out
    narrow, kept = (read_csv(run_file(f, ROUNDS_CSV)) for f in (out, source))
    assert len(narrow) == len(kept) == 500
    assert narrow["test_acc"].equals(kept["test_acc"]) and kept["test_acc"].notna().sum() == 50
    assert narrow["uplink_bytes"].equals(kept["uplink_bytes"])
    assert narrow["sim_time_s"].iloc[-1] > kept["sim_time_s"].iloc[-1]
    # a quarter of the band, but its noise a quarter too (6 dB more SNR): about 3x the airtime
    ratio = narrow["uplink_time_s"].sum() / kept["uplink_time_s"].sum()
    assert 2.5 < ratio < 4, ratio


@pytest.mark.slow
def test_a_network_run_re_times_byte_identical_to_its_training(tmp_path):
    """A network of cells changes only the timeline: the golden scenario trained in one
    3-sector site with interference off, re-timed with it on from its records (the SINR
    columns included), equals the same network trained for real with interference on."""
    network = ["network.pathloss=3gpp_38901_uma",
               "network.layout={kind: hexagonal, sites: 1, sectors: 3}"]
    sets = [a for item in network for a in ("--set", item)]
    algorithms = "--set", "algorithms=[scala]"   # (FedAvg's network re-timing: test_nr_network)
    quiet = run_golden(tmp_path / "quiet", *algorithms, *sets,
                       "--set", "network.interference=false")
    real = run_golden(tmp_path / "real", *algorithms, *sets, "--set", "network.interference=true")
    assert quiet.returncode == 0 and real.returncode == 0, quiet.stderr + real.stderr
    for algorithm in ("scala",):
        out = tmp_path / "retimed" / algorithm
        proc = run_pinned("scala_netsim.retime", tmp_path / "quiet" / "golden" / algorithm /
                          "seed3", *sets, "--set", "network.interference=true", "--out", out)
        assert proc.returncode == 0, proc.stderr
        want = tmp_path / "real" / "golden" / algorithm / "seed3"
        for name in RECORD_FILES:
            assert (out / name).read_bytes() == (want / name).read_bytes(), (algorithm, name)
        assert "sinr_db" in (out / "events.csv").read_text().splitlines()[0]
