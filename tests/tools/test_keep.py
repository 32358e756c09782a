"""Run records kept in git (scala_netsim.tools.keep): CSV tables compressed (.xz), checkpoint
and model left out; the report and a re-timing rebuilt from the kept copy equal those from the
original, a run kept gzipped by an earlier version is read and kept again in today's form, and
a damaged kept file is refused with its name."""

import gzip
import json
import lzma
import shutil

import pandas as pd
import pytest

from analysis.report import write_report
from scala_netsim.core.files import RECORD_FILES, run_file
from scala_netsim.core.results import file_sha256
from scala_netsim.retime import main as retime_main
from scala_netsim.tools.keep import KeepError, keep_run, keep_study, main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kept(golden_run, tmp_path_factory):
    """The golden scenario's runs kept as a study's records are."""
    target = tmp_path_factory.mktemp("kept") / "results"
    copied = keep_study(golden_run.out, target)
    assert len(copied) == len(list(golden_run.out.glob("*/seed3")))
    assert (target / "sweep.json").read_bytes() == (golden_run.out / "sweep.json").read_bytes()
    return target


def test_a_kept_run_holds_compressed_tables_and_no_checkpoint_or_model(golden_run, kept):
    run = kept / "scala" / "seed3"
    names = sorted(p.name for p in run.iterdir())
    assert "checkpoint.pt" not in names and "model.pt" not in names
    assert {"rounds.csv.xz", "events.csv.xz", "demands.csv.xz", "clients.csv.xz",
            "summary.json", "scenario.yaml"} <= set(names)
    assert not [n for n in names if n.endswith((".csv", ".gz"))]
    original = golden_run.run_dir("scala")
    for name in RECORD_FILES:   # the digests of summary.json hold for the compressed copy
        assert run_file(run, name).name == name + ".xz"
        assert file_sha256(run_file(run, name)) == file_sha256(original / name)
        packed = (run / (name + ".xz")).read_bytes()
        assert lzma.decompress(packed) == (original / name).read_bytes()
    assert (run / "summary.json").read_bytes() == (original / "summary.json").read_bytes()


def test_a_run_kept_gzipped_is_read_and_keeps_again_to_todays_bytes(golden_run, kept,
                                                                    tmp_path):
    """A run kept by an earlier version (its tables NAME.csv.gz) is read where it is (its
    digests hold) and kept again gives the bytes of today's keep of the original run."""
    old = tmp_path / "old"
    shutil.copytree(kept / "fedavg" / "seed3", old)
    for packed in old.glob("*.csv.xz"):
        text = lzma.decompress(packed.read_bytes())
        packed.with_name(packed.name.replace(".xz", ".gz")).write_bytes(
            gzip.compress(text, compresslevel=9, mtime=0))
        packed.unlink()
    assert run_file(old, "events.csv").name == "events.csv.gz"
    digests = json.loads((old / "summary.json").read_text())["files_sha256"]
    for name in RECORD_FILES:
        assert file_sha256(run_file(old, name)) == digests[name]
    again = tmp_path / "again"
    keep_run(old, again)
    for path in (kept / "fedavg" / "seed3").iterdir():
        assert (again / path.name).read_bytes() == path.read_bytes(), path.name
    with pytest.raises(KeepError, match="into its own folder"):
        keep_run(again, again)


def test_a_trained_run_written_before_clients_csv_was_digested_is_kept_with_its_digest(
        golden_run, tmp_path):
    """Issue 61: 96 trained runs kept whole had no digest for their clients.csv; keeping such
    a run gives its summary one (what its copy is checked against)."""
    old = tmp_path / "old"
    shutil.copytree(golden_run.run_dir("scala"), old, ignore=shutil.ignore_patterns("*.pt"))
    summary = json.loads((old / "summary.json").read_text())
    del summary["files_sha256"]["clients.csv"]
    (old / "summary.json").write_text(json.dumps(summary, indent=2))
    keep_run(old, tmp_path / "kept")
    digests = json.loads((tmp_path / "kept" / "summary.json").read_text())["files_sha256"]
    assert digests["clients.csv"] == file_sha256(old / "clients.csv")


def test_keeping_again_copies_nothing_and_the_copy_is_the_same_bytes(golden_run, kept, tmp_path):
    assert keep_study(golden_run.out, kept) == []
    again = tmp_path / "again"
    keep_run(golden_run.run_dir("fedavg"), again)
    for path in (kept / "fedavg" / "seed3").iterdir():
        assert (again / path.name).read_bytes() == path.read_bytes(), path.name


def test_the_report_rebuilt_from_kept_records_equals_the_original(golden_run, kept, tmp_path):
    write_report(kept)
    original = tmp_path / "original"
    shutil.copytree(golden_run.out, original)
    write_report(original)
    ours, theirs = (pd.read_csv(d / "comparison.csv") for d in (kept, original))
    pd.testing.assert_frame_equal(ours, theirs)


def test_a_kept_run_re_times_exactly_as_the_original(golden_run, kept, tmp_path, capsys):
    outs = {}
    for name, source in (("kept", kept / "scala" / "seed3"),
                         ("original", golden_run.run_dir("scala"))):
        outs[name] = tmp_path / name
        assert retime_main([str(source), "--set", "network.uplink_bandwidth_hz=5e6",
                            "--out", str(outs[name])]) == 0
        assert "re-timed from" in capsys.readouterr().out
    for name in ("rounds.csv", "events.csv", "demands.csv"):
        assert (outs["kept"] / name).read_bytes() == (outs["original"] / name).read_bytes()
    slower = pd.read_csv(outs["kept"] / "rounds.csv")["sim_time_s"].iloc[-1]
    assert slower > json.loads((kept / "scala" / "seed3" / "summary.json").read_text())[
        "total_sim_time_s"]   # 5 MHz instead of 20: a longer clock, the same learning


def test_a_damaged_kept_file_is_refused_with_its_name(kept, tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(kept / "scala" / "seed3", damaged)
    events = damaged / "events.csv.xz"
    text = lzma.decompress(events.read_bytes())
    events.write_bytes(lzma.compress(text[: len(text) // 2]))
    assert retime_main([str(damaged), "--out", str(tmp_path / "out")]) == 2
    assert "events.csv" in capsys.readouterr().err
    with pytest.raises(KeepError, match="events.csv"):
        keep_run(damaged, tmp_path / "again")


def test_the_command_names_a_missing_folder(tmp_path, capsys):
    assert main([str(tmp_path / "nothing"), str(tmp_path / "kept")]) == 2
    assert "no such results folder" in capsys.readouterr().err


def test_a_study_of_other_points_is_re_timed_from_kept_records_training_nothing(kept, tmp_path,
                                                                               cli):
    """--retime-from: a sweep over the uplink whose learning settings are the kept runs' is
    re-timed from them, cell by cell; nothing is trained, the accuracies are the kept ones."""
    from golden_run import SCENARIO

    code, out, err = cli(SCENARIO, "--out", tmp_path, "--set", "name=wider",
                         "--set", "algorithms=[scala, fedavg]",
                         "--set", "sweep={network.uplink_bandwidth_hz: [5.0e6, 50.0e6]}",
                         "--retime-from", kept, "--no-progress", "--no-figures", "--no-report")
    assert code == 0, err
    runs = sorted((tmp_path / "wider").glob("*/*/seed3"))
    assert len(runs) == 4
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        source = (tmp_path / summary["retimed_from"]).resolve()   # (relative to --out)
        assert source == (kept / summary["algorithm"] / "seed3").resolve(), run
        kept_rounds = pd.read_csv(source / "rounds.csv.xz")
        rounds = pd.read_csv(run / "rounds.csv")
        assert rounds["test_acc"].equals(kept_rounds["test_acc"])
    assert code == 0 and "re-timed" in out
    assert cli(SCENARIO, "--out", tmp_path, "--retime-from", tmp_path / "nothing")[0] == 2


def test_a_trained_run_kept_for_its_findings_keeps_what_a_re_timed_one_does(golden_run,
                                                                             tmp_path):
    """--findings-only: a trained run no other study re-times keeps scenario.yaml, rounds.csv
    and summary.json (every file's digest, `kept: findings`); it reads as a slim kept run
    whose kept files the digests vouch for."""
    from scala_netsim.core.results import damaged_record, is_slim_kept

    target = tmp_path / "kept" / "fedavg" / "seed3"
    keep_run(golden_run.run_dir("fedavg"), target, findings_only=True)
    assert sorted(p.name for p in target.iterdir()) == ["rounds.csv.xz", "scenario.yaml",
                                                         "summary.json"]
    summary = json.loads((target / "summary.json").read_text())
    original = json.loads((golden_run.run_dir("fedavg") / "summary.json").read_text())
    assert summary["kept"] == "findings" and is_slim_kept(target, summary)
    assert summary["files_sha256"]["events.csv"] == original["files_sha256"]["events.csv"]
    assert damaged_record(target, summary["files_sha256"], slim=True) is None
    assert main([str(golden_run.out), str(tmp_path / "all"), "--findings-only"]) == 0
    assert not list((tmp_path / "all").rglob("events.csv.xz"))
    assert len(list((tmp_path / "all").rglob("summary.json"))) == len(
        list(golden_run.out.glob("*/seed3")))
