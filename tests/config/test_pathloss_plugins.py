"""A path-loss model of the user's (issue 37): registered through the entry-point group
scala_netsim.pathloss (docs/examples/freespace.py, the extension guide's example) or by a
call in a script, built with the scenario's carrier frequency, accepted by a schema that was
made before it was registered, used by the command line, worker processes and the re-timer;
a model only this process knows is refused for worker processes with the reason, not a bare
BrokenProcessPool."""

import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import channel
import scala_netsim as sn
from scala_netsim.config.scenario import validate_scenario
from scala_netsim.runner.world import describe, pathloss_model

from conftest import ROOT, tiny_dataset, tiny_scenario
from golden_run import GOLDEN, run_golden

EXAMPLE = ROOT / "docs" / "examples" / "freespace.py"


def load_example():
    namespace: dict = {"__name__": "freespace_example"}
    exec(compile(EXAMPLE.read_text(), str(EXAMPLE), "exec"), namespace)
    return namespace["FreeSpace"]


@pytest.fixture
def registered(monkeypatch):
    """The example registered by a call, as a script would (undone after the test)."""
    monkeypatch.setattr(channel.PATHLOSS_MODELS, "_models", dict(channel.PATHLOSS_MODELS))
    monkeypatch.setattr(channel.PATHLOSS_MODELS, "runtime_only", set())
    return channel.register_pathloss(load_example())


def test_a_model_registered_after_import_is_built_with_the_scenarios_carrier(registered):
    scenario = tiny_scenario(network={"pathloss": "free_space", "carrier_frequency_hz": 3.5e9})
    model = pathloss_model(scenario.network)
    # Friis at 3.5 GHz, 100 m: 20 log10(4 pi d f / c), worked with the math module
    assert model.pathloss_db(100.0) == pytest.approx(
        20 * math.log10(4 * math.pi * 100 * 3.5e9 / 299_792_458.0), abs=1e-9)
    assert model.pathloss_db(100.0) == pytest.approx(83.33, abs=0.01)
    assert "path loss free_space at 3.5 GHz" in describe(scenario, tiny_dataset(), "cpu")
    from scala_netsim.runner.world import build_world

    world = build_world(scenario, tiny_dataset())
    np.testing.assert_allclose(world.cell.pathloss_db, model.pathloss_db(world.cell.distance_m))


def test_pathloss_names_carrier_and_typos_are_checked_with_the_scenario(registered):
    with pytest.raises(sn.ScenarioError, match=r"network.pathloss: must be one of "
                                               r"'3gpp_36814_macro', '3gpp_38901_uma', "
                                               r"'3gpp_38901_umi', '3gpp_38901_rma' or "
                                               r"'free_space', got "
                                               r"'free_spce'; did you mean 'free_space'\?"):
        tiny_scenario(network={"pathloss": "free_spce"})
    with pytest.raises(sn.ScenarioError, match=r"network.carrier_frequency_hz: "
                                               r"3gpp_36814_macro is defined at 2 GHz only, "
                                               r"got 3.5e\+09"):
        tiny_scenario(network={"carrier_frequency_hz": 3.5e9})
    assert validate_scenario({"name": "x", "algorithms": ["scala"]}).network.pathloss == \
        "3gpp_36814_macro"


def test_workers_are_not_asked_for_a_model_only_this_process_knows(registered, tmp_path):
    # issue 37: sn.run(jobs=2) died with a bare BrokenProcessPool
    scenario = tiny_scenario(network={"pathloss": "free_space"}, algorithms=["scala", "fedavg"])
    with pytest.raises(sn.RefusedError, match=r"'free_space' registered in this process only "
                                              r".* worker processes \(jobs > 1\) do not run "
                                              r"that call; register it through an entry "
                                              r"point"):
        sn.run(scenario, out=tmp_path, jobs=2, echo=False)
    assert not any(tmp_path.iterdir())   # nothing written


@pytest.mark.slow
def test_an_entry_point_model_runs_in_workers_and_the_retimer(tmp_path):
    site = tmp_path / "site"
    (site / "freespace-0.1.dist-info").mkdir(parents=True)
    (site / "freespace.py").write_text(EXAMPLE.read_text())
    (site / "freespace-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: freespace\nVersion: 0.1\n")
    (site / "freespace-0.1.dist-info" / "entry_points.txt").write_text(
        "[scala_netsim.pathloss]\nfree_space = freespace:FreeSpace\n")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, (str(site),
                                                       os.environ.get("PYTHONPATH"))))}
    radio = ["--set", "network.pathloss=free_space", "--set", "network.carrier_frequency_hz=3.5e9"]
    proc = run_golden(tmp_path / "out", "--set", "algorithms=[scala, fedavg]", *radio,
                      "--jobs", "2", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "path loss free_space at 3.5 GHz" in proc.stdout
    run = tmp_path / "out" / "golden" / "scala" / "seed3"
    # the same learning as the golden run, other radio times
    assert (run / "rounds.csv").read_bytes() != (GOLDEN / "scala" / "rounds.csv").read_bytes()
    ours, golden = (pd.read_csv(p / "rounds.csv") for p in (run, GOLDEN / "scala"))
    assert ours["test_acc"].tolist() == golden["test_acc"].tolist()
    assert ours["uplink_time_s"].sum() != golden["uplink_time_s"].sum()
    retimed = subprocess.run(
        [sys.executable, "-m", "scala_netsim.retime", str(run), "--out", str(tmp_path / "re"),
         "--set", "network.uplink_bandwidth_hz=5e6"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, **env})
    assert retimed.returncode == 0, retimed.stderr


def test_the_extension_guide_shows_the_example_as_it_is():
    guide = (ROOT / "docs" / "guides" / "extending.md").read_text()
    assert EXAMPLE.read_text().split('"""', 2)[2].strip() in guide
    assert '[project.entry-points."scala_netsim.pathloss"]' in guide
