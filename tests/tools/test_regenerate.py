"""Issue 46's records budget: a re-timed or timing-only run is kept slim (scenario.yaml,
rounds.csv, summary.json with the digests of every file it wrote), and
`python -m scala_netsim.tools.regenerate` writes its other files again to those digests."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scala_netsim.core.errors import DamagedRunError
from scala_netsim.core.files import SLIM_FILES
from scala_netsim.core.results import check_finished_run, is_slim_kept
from scala_netsim.tools.keep import keep_run
from scala_netsim.tools.regenerate import RegenerateError, regenerate_run, slim_runs, source_of

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "docs" / "studies"
#: the cheapest kept point of each study kept slim
SLIM_CELLS = [STUDIES / "network" / "results" / "fedavg" / "cell=paper_cell" / "seed0",
              STUDIES / "network" / "load" / "fedavg" / "load=m1,interference=false" / "seed0",
              STUDIES / "fading" / "results" / "scala" / "channel=rayleigh_round" / "seed0",
              STUDIES / "allocation" / "results" / "fedavg" / "allocation=proportional" / "seed0"]


def kept_files(run: Path) -> set[str]:
    return {p.name.removesuffix(".xz") for p in run.iterdir()}


def test_the_re_timed_and_timing_only_studies_are_kept_slim():
    for study in ("network/results", "network/load", "fading/results", "allocation/results"):
        runs = slim_runs(STUDIES / study)
        assert len(runs) >= 6, study
        for run in runs:
            assert kept_files(run) == set(SLIM_FILES), run
            summary = json.loads((run / "summary.json").read_text())
            assert {"rounds.csv", "events.csv", "demands.csv", "clients.csv"} <= set(
                summary["files_sha256"])
            check_finished_run(run, summary)   # what it keeps is what its run wrote
    # trained runs keep their records
    trained = STUDIES / "cellular_10pct" / "results" / "scala" / "seed0"
    assert not is_slim_kept(trained, json.loads((trained / "summary.json").read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("run", SLIM_CELLS, ids=lambda p: p.parts[-4])
def test_a_slim_kept_run_regenerates_to_its_digests(tmp_path, run):
    """A network run kept before coupling.csv was written (issue 62) regenerates to the
    digests it has: its regeneration writes coupling.csv, which its summary does not name."""
    regenerate_run(run, tmp_path / "run")
    written = {p.name for p in (tmp_path / "run").iterdir()}
    assert {"events.csv", "demands.csv", "clients.csv"} <= written
    assert ("coupling.csv" in written) == ("cells.csv" in written)   # a network's
    assert "coupling.csv" not in json.loads((run / "summary.json").read_text())["files_sha256"]


@pytest.mark.slow
def test_a_run_with_other_users_load_regenerates_to_its_digests(tmp_path):
    """Issue 63: the operator study's FedAvg under the fluid model at the loads FTP model 3's
    files carry regenerates to every digest its summary holds, the coupling of its clients
    and then its background users and load.csv among them (regenerate_run checks them)."""
    run = STUDIES / "operator" / "results" / "fedavg" / "case=load_30" / "seed2"
    digests = json.loads((run / "summary.json").read_text())["files_sha256"]
    assert {"coupling.csv", "air.csv", "load.csv"} <= set(digests)
    regenerate_run(run, tmp_path / "run")
    assert {"coupling.csv", "air.csv", "load.csv"} <= {p.name for p in
                                                        (tmp_path / "run").iterdir()}


def test_a_regeneration_that_differs_is_refused_naming_the_file(tmp_path):
    run = tmp_path / "docs" / "studies" / "x" / "results" / "fedavg" / "seed0"
    run.mkdir(parents=True)
    source = SLIM_CELLS[3]
    for name in ("scenario.yaml", "rounds.csv.xz"):
        (run / name).write_bytes((source / name).read_bytes())
    summary = json.loads((source / "summary.json").read_text())
    summary["retimed_from"] = str(Path("..") / "docs" / "studies" / "cellular_10pct" /
                                  "results" / "fedavg" / "seed0")
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(RegenerateError, match="holds no finished run"):
        source_of(run, summary["retimed_from"])
    with pytest.raises(RegenerateError, match="names no kept run"):
        source_of(run, "/somewhere/else/fedavg/seed0")


def test_keep_slims_a_re_timed_run_and_adds_the_digests_it_lacked(tmp_path):
    """Keeping a re-timed run kept in full by an earlier version: its summary gains the
    digests of clients.csv, and the copy keeps the slim files only; a damaged one is
    refused as before."""
    regenerated = tmp_path / "docs" / "studies" / "s" / "results" / "run"
    source = SLIM_CELLS[3]
    regenerate_run(source, regenerated)
    summary = json.loads((regenerated / "summary.json").read_text())
    summary["files_sha256"].pop("clients.csv")          # as an earlier version wrote it
    (regenerated / "summary.json").write_text(json.dumps(summary))
    kept = tmp_path / "kept"
    keep_run(regenerated, kept)
    assert kept_files(kept) == set(SLIM_FILES)
    digests = json.loads((kept / "summary.json").read_text())["files_sha256"]
    assert digests == json.loads((source / "summary.json").read_text())["files_sha256"]
    (kept / "rounds.csv.xz").write_bytes(b"damaged")
    with pytest.raises(DamagedRunError, match="rounds.csv.xz: not readable"):
        check_finished_run(kept, json.loads((kept / "summary.json").read_text()))


def test_the_command_refuses_an_out_inside_the_kept_records(tmp_path):
    kept = SLIM_CELLS[0].parent.parent
    proc = subprocess.run([sys.executable, "-m", "scala_netsim.tools.regenerate", str(kept),
                           "--out", str(kept / "regenerated")], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 2 and "inside the kept records" in proc.stderr
    assert not (kept / "regenerated").exists()
