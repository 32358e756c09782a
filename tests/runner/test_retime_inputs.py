"""Issue 47: the re-timer and --retime-from under a researcher's inputs. Nothing lost or
mixed (an --out that holds a run), nothing silent (which points matched a run to re-time
from, which did not and why, before anything trains; --retime-only trains none), no device
asked of a re-timing, and a damaged kept run named in one line (exit 2, scala_netsim.Error),
never a traceback."""

import json
import shutil

import pytest

import scala_netsim as sn
from scala_netsim.core.files import CELLS_CSV, COUPLING_CSV, SUMMARY_JSON
from scala_netsim.tools.keep import keep_run

from conftest import ROOT
from golden_run import SCENARIO

pytestmark = pytest.mark.slow


def retime(*args):
    from scala_netsim.retime import main

    return main([str(a) for a in args])


def test_an_out_that_holds_a_run_is_refused_and_force_leaves_nothing_of_it(golden_run,
                                                                          tmp_path, capsys):
    """A re-timing into a network writes cells.csv (and coupling.csv); one into the paper's
    cell, --force'd over it, must not leave them beside its own files (the report read it)."""
    source, out = golden_run.run_dir("fedavg"), tmp_path / "out"
    network = ["--set", "network.layout={kind: hexagonal, sites: 1, sectors: 3}",
               "--set", "network.pathloss=3gpp_38901_uma"]
    assert retime(source, *network, "--out", out) == 0
    assert (out / CELLS_CSV).is_file() and (out / COUPLING_CSV).is_file()
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    assert retime(source, "--set", "network.uplink_bandwidth_hz=5e6", "--out", out) == 2
    assert "holds a run (scenario.yaml" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == written     # nothing touched
    assert retime(source, "--set", "network.uplink_bandwidth_hz=5e6", "--out", out,
                  "--force") == 0
    assert not (out / CELLS_CSV).exists() and not (out / COUPLING_CSV).exists()
    summary = json.loads((out / SUMMARY_JSON).read_text())
    assert summary["setting"] == {"network.uplink_bandwidth_hz": 5e6}


def test_a_run_trained_on_a_gpu_re_times_on_a_machine_without_one(golden_run, tmp_path):
    """The headline's FedAvg seed 2 and the split-point runs were trained on a GPU."""
    source = tmp_path / "trained_on_gpu"
    shutil.copytree(golden_run.run_dir("scala"), source)
    summary = json.loads((source / SUMMARY_JSON).read_text())
    (source / SUMMARY_JSON).write_text(json.dumps({**summary, "device": "cuda"}))
    assert retime(source, "--set", "network.uplink_bandwidth_hz=5e6", "--out",
                  tmp_path / "out") == 0
    assert json.loads((tmp_path / "out" / SUMMARY_JSON).read_text())["device"] == "cpu"


@pytest.fixture
def kept(golden_run, tmp_path):
    """The golden SCALA and FedAvg runs as kept in git (tables compressed)."""
    root = tmp_path / "kept"
    for algorithm in ("scala", "fedavg"):
        keep_run(golden_run.run_dir(algorithm), root / algorithm / "seed3")
    return root


def test_retime_from_says_which_points_matched_and_retime_only_trains_none(cli, kept, tmp_path):
    bandwidth = ["--set", "network.uplink_bandwidth_hz=5e6", "--set", "algorithms=[scala, fedavg]",
                 "--no-figures", "--no-report", "--no-estimate", "--no-progress"]
    code, out, err = cli(SCENARIO, "--out", tmp_path / "a", "--retime-from", kept,
                         "--retime-only", *bandwidth)
    assert code == 0, err
    assert f"--retime-from {kept}: 2 of 2 point(s) to run re-timed from its runs" in out
    for algorithm in ("scala", "fedavg"):   # each point with the kept run it came from
        assert f"  {algorithm} <- {kept / algorithm / 'seed3'}\n" in out
    assert out.count(": re-timed, ") == 2
    # other learning settings: said before anything trains, each point with why; refused
    code, out, err = cli(SCENARIO, "--out", tmp_path / "b", "--retime-from", kept,
                         "--retime-only", "--set", "training.rounds=3", *bandwidth)
    assert code == 2
    assert "--retime-only: these points match no run to re-time from" in err
    assert (f"  scala: no training of scala with its learning settings; the nearest, "
            f"{kept / 'scala' / 'seed3'}, differs in training.rounds") in err
    assert not (tmp_path / "b").exists()
    # without --retime-only the same report comes first, then the training
    code, out, err = cli(SCENARIO, "--out", tmp_path / "c", "--retime-from", kept,
                         "--set", "training.rounds=1", *bandwidth)
    assert code == 0, err
    assert "0 of 2 point(s) to run re-timed from its runs; 2 trained:" in out
    assert out.index("differs in training.rounds") < out.index(": completed, ")


def test_a_damaged_kept_run_is_named_never_a_traceback(cli, kept, tmp_path, capsys):
    from analysis.__main__ import main as analysis_main

    (kept / "scala" / "seed3" / SUMMARY_JSON).write_text('{"status": "compl')
    assert analysis_main([str(kept)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"{kept / 'scala' / 'seed3' / SUMMARY_JSON}" in err
    with pytest.raises(sn.Error, match="summary.json: not a summary this package wrote"):
        assert sn.open_results(kept).summary is None
    (kept / "scala").rename(tmp_path / "set_aside")
    events = kept / "fedavg" / "seed3" / "events.csv.xz"
    events.write_bytes(events.read_bytes()[: len(events.read_bytes()) // 2])     # cut short
    assert analysis_main([str(kept)]) == 2
    assert "events.csv.xz: not readable" in capsys.readouterr().err
    with pytest.raises(sn.Error, match=r"events\.csv\.xz: not readable .*restore it"):
        assert sn.open_results(kept).events is None
    # --retime-from names the damaged run it skips, and trains nothing under --retime-only
    code, out, err = cli(SCENARIO, "--out", tmp_path / "out", "--retime-from", kept,
                         "--retime-only", "--set", "algorithms=[fedavg]", "--no-estimate")
    assert code == 2
    assert f"skipped under {kept} (1):" in err and "events.csv.xz: not readable" in err
    assert not (tmp_path / "out").exists()


def test_a_retiming_whose_clients_decode_nothing_is_refused_before_anything_is_written(
        tmp_path, capsys):
    """Issue 61 (1): as the command line's runs, a re-timing under the NR link abstraction
    whose drop leaves clients below every MCS is bad input (exit 2, no traceback), refused
    before --out is made."""
    pytest.importorskip("sionna.sys", reason="the optional extra [sionna] (Python 3.11+)")
    source = ROOT / "docs" / "studies" / "cellular_10pct" / "results" / "fedavg" / "seed0"
    out = tmp_path / "out"
    assert retime(source, "--out", out, "--set", "network.layout={kind: hexagonal, sites: 7, "
                  "isd_m: 500.0, sectors: 3, wraparound: true}", "--set",
                  "network.pathloss=3gpp_38901_uma", "--set", "network.carrier_frequency_hz=3.5e9",
                  "--set", "network.link_abstraction=nr") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: network.link_abstraction: nr: 2 client(s) can decode no MCS "
                          "of the 256qam table on the downlink") and "Traceback" not in err
    assert not out.exists()
