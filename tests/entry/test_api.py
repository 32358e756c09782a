"""The Python API (scala_netsim.api): load a scenario with overrides, run it, read the frames;
open a folder the CLI wrote; bad input raises what the CLI prints."""

import json

import pandas as pd
import pytest

import scala_netsim as sn
from scala_netsim.api import RefusedError
from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.registry import ALGORITHMS

from golden_run import GOLDEN, SCENARIO


def test_load_scenario_takes_a_file_or_a_mapping_and_python_or_yaml_overrides():
    from_file = sn.load_scenario(SCENARIO, {"training.rounds": 1, "algorithms": ["fedavg"]})
    assert from_file.training.rounds == 1 and from_file.algorithms == ["fedavg"]
    assert sn.load_scenario(SCENARIO, ["training.rounds=1", "algorithms=[fedavg]"]) == from_file
    document = from_file.model_dump(mode="json")
    assert sn.load_scenario(document, {"network.uplink_bandwidth_hz": 5e6}
                            ).network.uplink_bandwidth_hz == 5e6
    assert document["network"]["uplink_bandwidth_hz"] != 5e6   # the mapping is not changed


def test_bad_input_raises_the_scenario_error_the_cli_prints():
    with pytest.raises(ScenarioError) as caught:
        sn.load_scenario(SCENARIO, {"training.rounds": 0, "model.split": "S9"})
    text = str(caught.value)
    assert "training.rounds: must be >= 1, got 0" in text
    assert "model.split:" in text and "'S9'" in text
    with pytest.raises(ScenarioError, match="'rounds' is not a section"):
        sn.load_scenario(SCENARIO, {"training.rounds.x": 1})
    with pytest.raises(RefusedError, match="^jobs: must be a whole number >= 1, got 0$"):
        sn.run(SCENARIO, jobs=0)
    with pytest.raises(RefusedError, match="^executor: allowed: local, ray; got 'dask'$"):
        sn.run(SCENARIO, executor="dask")
    # a notebook catches them by the package's names
    assert sn.ScenarioError is ScenarioError and sn.RefusedError is RefusedError


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("api")
    scenario = sn.load_scenario(SCENARIO, {"algorithms": ["scala", "fedavg"],
                                           "training.rounds": 2})
    return scenario, out, sn.run(scenario, out=out, echo=False)


def test_run_returns_the_frames_of_its_runs(tiny):
    scenario, out, results = tiny
    assert results.folder == out / "golden"
    assert sorted(r.algorithm for r in results.runs) == ["fedavg", "scala"]
    summary = results.summary.set_index("algorithm")
    assert list(summary["status"]) == ["completed", "completed"]
    rounds = results.rounds
    assert list(rounds.columns[:2]) == ["algorithm", "seed"]
    assert rounds.groupby("algorithm").size().to_dict() == {"fedavg": 2, "scala": 2}
    # the frames are the run folders' files, read back
    scala_rounds = pd.read_csv(out / "golden" / "scala" / "seed3" / "rounds.csv")
    pd.testing.assert_frame_equal(
        rounds[rounds.algorithm == "scala"].drop(columns=["algorithm", "seed"])
        .reset_index(drop=True), scala_rounds)
    assert {"activation_upload", "gradient_download"} <= set(
        results.events.query("algorithm == 'scala'")["kind"])
    assert summary.loc["scala", "total_sim_time_s"] == rounds.query(
        "algorithm == 'scala'")["sim_time_s"].iloc[-1]
    comparison = results.comparison
    assert sorted(comparison["algorithm"]) == ["fedavg", "scala"]
    assert (out / "golden" / "comparison.csv").is_file()   # written by the run


def test_a_second_run_skips_finished_runs_and_figures_are_drawn_on_demand(tiny, capsys):
    scenario, out, results = tiny
    before = (out / "golden" / "scala" / "seed3" / "summary.json").read_text()
    again = sn.run(scenario, out=out)
    assert "already completed, skipped" in capsys.readouterr().out
    assert (out / "golden" / "scala" / "seed3" / "summary.json").read_text() == before
    paths = again.figures()
    assert paths and all(p.is_file() and p.suffix == ".png" for p in paths)
    assert (out / "golden" / "scala" / "seed3" / "accuracy_vs_time.png").is_file() or any(
        (out / "golden" / "scala" / "seed3").glob("*.png"))


def test_a_folder_of_another_scenario_is_refused_and_kept(tiny):
    scenario, out, _ = tiny
    other = sn.load_scenario(scenario.model_dump(mode="json"), {"training.lr": 0.5})
    before = (out / "golden" / "scala" / "seed3" / "rounds.csv").read_bytes()
    with pytest.raises(RefusedError, match="hold runs of another scenario"):
        sn.run(other, out=out, echo=False)
    assert (out / "golden" / "scala" / "seed3" / "rounds.csv").read_bytes() == before


def test_open_results_reads_a_folder_the_cli_wrote():
    results = sn.open_results(GOLDEN)   # the golden runs: the CLI's files, kept in the repo
    assert len(results.runs) == len(ALGORITHMS)   # every algorithm's golden run
    fedavg = (results.rounds.query("algorithm == 'fedavg'").drop(columns=["algorithm", "seed"])
              .dropna(axis=1, how="all"))   # (the columns only asynchronous runs have)
    pd.testing.assert_frame_equal(fedavg.reset_index(drop=True),
                                  pd.read_csv(GOLDEN / "fedavg" / "rounds.csv"))
    summary = json.loads((GOLDEN / "scala" / "summary.json").read_text())
    row = results.summary.set_index("algorithm").loc["scala"]
    assert row["best_acc"] == summary["best_acc"] and row["seed"] == 3
    with pytest.raises(FileNotFoundError, match="no finished run here"):
        sn.open_results(GOLDEN / "no_such_folder")


def test_every_keyword_of_run_reaches_its_option(monkeypatch, tmp_path):
    # Options gained retime_from after retime; run() built it by position, so progress went
    # to retime_from, force to progress, ..., and echo=False to report (found by mypy)
    import scala_netsim.api as api

    seen = {}
    monkeypatch.setattr(api, "run_scenario",
                        lambda scenario, out, options: seen.setdefault("options", options))
    given = dict(jobs=3, executor="ray", retime=False, progress=True, force=True, figures=True,
                 report=True, echo=False, ray_address="auto", ray_cpus_per_run=2,
                 retime_from=tmp_path)
    sn.run(SCENARIO, out=tmp_path, **given)
    assert {name: getattr(seen["options"], name) for name in given} == given
