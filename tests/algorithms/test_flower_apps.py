"""A user's own Flower ClientApp on the run's clock (issue 65): flower.client_app, with the
example app of docs/examples/flower (an MLP 784 -> 64 -> 10 on its own share of
Fashion-MNIST)."""

import importlib.util
import json
import subprocess
import sys

import pandas as pd
import pytest
import torch

import scala_netsim as sn

from conftest import ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("flwr") is None,
                                reason="the optional extra: pip install -e '.[flower]'")

QUICK = ROOT / "scenarios" / "quickstart.yaml"
APP = {"client_app": "my_app:app", "initial_arrays": "my_app:initial_arrays",
       "evaluate_fn": "my_app:evaluate"}
TINY = {"data.train_samples": 600, "data.test_samples": 100, "data.num_clients": 10,
        "training.participation": 0.3, "training.local_iters": 2, "training.batch_size": 30,
        "training.eval_every": 1, "model.arch": "alexnet14", "algorithms": ["flower"],
        "flower": APP}
#: the MLP's weights and biases, float32
MODEL_BYTES = (784 * 64 + 64 + 64 * 10 + 10) * 4
#: one step on a batch of 32, counted: forward 2*32*784*64 + 2*32*64*10; backward the
#: second layer's weight and input gradients (2 x 2*32*64*10) and the first's weight gradient
FORWARD, BACKWARD = 2 * 32 * 784 * 64 + 2 * 32 * 64 * 10, 2 * 2 * 32 * 64 * 10 + 2 * 32 * 784 * 64


@pytest.fixture(autouse=True)
def _app_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "examples" / "flower"))


def run(out, rounds, **keys):
    sn.run(sn.load_scenario(QUICK, {**TINY, "training.rounds": rounds, **keys}), out=out,
           echo=False)
    return out / "quickstart/flower/seed0"


def test_a_users_clientapp_trains_on_the_clock_with_its_bytes_and_counted_flops(tmp_path):
    folder = run(tmp_path, 3)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "completed"
    events = pd.read_csv(folder / "events.csv")
    transfers = events[events.kind.isin(["model_download", "model_upload"])]
    assert (transfers.payload_bytes == MODEL_BYTES).all() and len(transfers) == 3 * 3 * 2
    # counted around the call: two steps' FLOPs at local iteration 0, none at 1
    forward = events[events.kind == "client_forward"].set_index("local_iter").flops
    backward = events[events.kind == "client_backward"].set_index("local_iter").flops
    assert (forward.loc[0] == 2 * FORWARD).all() and (forward.loc[1] == 0).all()
    assert (backward.loc[0] == 2 * BACKWARD).all() and (backward.loc[1] == 0).all()
    # the run's accuracy is the app's evaluate_fn on its own test images
    rounds = pd.read_csv(folder / "rounds.csv")
    assert rounds["round"].tolist() == [1, 2, 3]
    assert rounds.test_acc.between(0.2, 1).all() and rounds.test_acc.iloc[-1] > 0.4


def test_a_resumed_users_app_keeps_its_clients_context_state(tmp_path):
    """The app seeds its draws from the rounds a client has trained, which it keeps in its
    Context's state: a resume that lost it would draw other batches. Under an allocator that
    reads the clients' compute demand, their last calls' FLOPs are kept too."""
    keys = {"training.checkpoint_every": 2, "training.participation": 0.5,
            "network.allocation": "min_max_latency"}
    folder = run(tmp_path, 4, **keys)
    whole = {name: (folder / name).read_bytes()
             for name in ("rounds.csv", "events.csv", "demands.csv")}
    (folder / "summary.json").unlink()        # as if stopped after round 2's checkpoint
    run(tmp_path, 4, **keys)
    assert json.loads((folder / "summary.json").read_text())["resumed_from_round"] == 4 - 2
    for name, data in whole.items():
        assert (folder / name).read_bytes() == data, name
    demands = pd.read_csv(folder / "demands.csv")
    assert (demands.compute_flops > 0).any()
    checkpoint = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert len(checkpoint["run"]["trainer"]["contexts"]) > 0


@pytest.mark.parametrize(("flower", "says"), [
    ({"client_app": "my_app:app"},
     r"(?s)flower.initial_arrays: a user's ClientApp needs it .*flower.evaluate_fn"),
    ({**APP, "client_app": "my_app:nothing"},
     r"flower.client_app: cannot import 'my_app:nothing'"),
    ({**APP, "client_app": "my_app:Net"}, r"flower.client_app: 'my_app:Net' is a type, not a "
                                          r"flwr ClientApp"),
    ({**APP, "client_app": "my_app"}, r"flower.client_app: module:attribute expected"),
    ({"evaluate_fn": "my_app:evaluate"},
     r"flower.evaluate_fn: only with flower.client_app"),
    ({"train_config": {"lr": 0.1}}, r"flower.train_config: only with flower.client_app"),
    ({**APP, "train_config": {"local-steps": 3}},
     r"flower.train_config: \['local-steps'\] are set each round by the run "
     r"\(training.local_iters\)"),
])
def test_a_users_app_named_wrongly_is_refused_naming_the_key(flower, says):
    with pytest.raises(sn.ScenarioError, match=says):
        sn.load_scenario(QUICK, {**TINY, "flower": flower})


def test_the_rounds_train_config_reaches_the_users_app(tmp_path):
    """A ServerApp's train_config: the example app takes its learning rate from it, so at
    rate 0 the global model (and its accuracy) never moves."""
    moving = pd.read_csv(run(tmp_path / "a", 2) / "rounds.csv").test_acc
    still = pd.read_csv(run(tmp_path / "b", 2, flower={**APP, "train_config": {"lr": 0.0}})
                        / "rounds.csv").test_acc
    assert still.nunique() == 1 and moving.nunique() == 2


def test_a_users_app_is_not_timed_without_running_it():
    with pytest.raises(sn.ScenarioError, match=r"timing_only: a user's ClientApp"):
        sn.load_scenario(QUICK, {**TINY, "timing_only": True})


def test_the_guides_example_runs_its_app_on_a_7_site_nr_network(tmp_path):
    """docs/examples/flower/run_my_app.py (the guide's): FedAdam over the example app on the
    mobility study's network (7 sites, TDD, NR, round robin, other users' traffic)."""
    script = ROOT / "docs" / "examples" / "flower" / "run_my_app.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "my_flower_app/flower/seed0"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["rounds"] == 10
    scenario = sn.load_scenario(folder / "scenario.yaml")
    assert scenario.network.link_abstraction == "nr" and scenario.flower.strategy == "FedAdam"
    assert pd.read_csv(folder / "rounds.csv").test_acc.dropna().iloc[-1] > 0.5
    assert "model_upload" in done.stdout
    # FedAdam's float64 aggregate (flwr 1.42 under NumPy 2) goes down as the model's float32
    downloads = pd.read_csv(folder / "events.csv").query("kind == 'model_download'")
    assert len(downloads) > 10 and (downloads.payload_bytes == MODEL_BYTES).all()


def test_a_users_app_reporting_other_steps_than_the_rounds_is_an_error(tmp_path, monkeypatch):
    """An app that reports three steps' FLOPs in a round of two: named, client and round."""
    (tmp_path / "three_steps.py").write_text(
        "from flwr.app import MetricRecord\n"
        "from flwr.clientapp import ClientApp\n"
        "import my_app\n"
        "app = ClientApp()\n"
        "@app.train()\n"
        "def train(message, context):\n"
        "    reply = my_app.app(message, context)\n"
        "    metrics = dict(reply.content['metrics'])\n"
        "    reply.content['metrics'] = MetricRecord({**metrics, 'flops-forward': [1, 1, 1],\n"
        "                                             'flops-backward': [2, 2, 2]})\n"
        "    return reply\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from scala_netsim.flower.grid import FlowerAppError

    with pytest.raises(FlowerAppError, match=r"flower: client \d+ \(node \d+\) in round 1: "
                                             r"its reply reports 3 steps' FLOPs, the round "
                                             r"has local-steps 2"):
        run(tmp_path, 1, flower={**APP, "client_app": "three_steps:app"})


def test_the_run_says_whose_clients_the_strategy_aggregates():
    from scala_netsim.runner.world import describe, scenario_dataset

    scenario = sn.load_scenario(QUICK, TINY)
    lines = describe(scenario, scenario_dataset(scenario, "cpu"), "cpu").splitlines()
    assert ("  flower: strategy FedAvg over the ClientApp my_app:app (its own model and data: "
            "the data line above only numbers its clients; accuracy from my_app:evaluate)"
            in lines)
    flower = sn.load_scenario(QUICK, {**TINY, "flower": {"strategy": "FedAdam",
                                                         "options": {"eta": 0.01}}}).flower
    assert flower.describe() == ("strategy FedAdam {'eta': 0.01} over the package's clients "
                                 "(the model and data above)")
    plain = sn.load_scenario(QUICK)
    assert "flower" not in describe(plain, scenario_dataset(plain, "cpu"), "cpu")


def test_an_aggregate_comes_back_in_the_global_models_dtypes():
    """flwr's averages are float64: a float32 array goes back to float32, an integer one is
    rounded to the nearest (an average of 7s may be 6.999999999999999), not cut."""
    import numpy as np
    from flwr.app import Array

    from scala_netsim.flower.apps import _as_dtype

    assert _as_dtype(Array(np.array([6.999999999999999])), "int64").numpy().tolist() == [7]
    back = _as_dtype(Array(np.array([0.1, 0.2])), "float32")
    assert back.dtype == "float32" and back.numpy().tolist() == [np.float32(0.1),
                                                                  np.float32(0.2)]
    same = Array(np.ones(2, dtype=np.float32))
    assert _as_dtype(same, "float32") is same
