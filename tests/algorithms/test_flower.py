"""Flower's strategies over the package's clients (issue 65): `algorithms: [flower]`."""

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

import scala_netsim as sn

from conftest import ROOT

QUICK = ROOT / "scenarios" / "quickstart.yaml"
TINY = {"data.train_samples": 600, "data.test_samples": 100, "data.num_clients": 10,
        "training.participation": 0.3, "training.local_iters": 2, "training.batch_size": 30,
        "training.eval_every": 1, "model.arch": "alexnet14"}
STRATEGIES = ("FedAvg", "FedProx", "FedAvgM", "FedAdam", "FedYogi", "FedAdagrad", "QFedAvg",
              "FedTrimmedAvg", "FedMedian", "Krum", "MultiKrum", "Bulyan")
#: the tests that run Flower (the refusal below runs without it)
needs_flower = pytest.mark.skipif(importlib.util.find_spec("flwr") is None,
                                  reason="the optional extra: pip install -e '.[flower]'")


def test_without_the_extra_a_flower_scenario_is_refused_saying_what_to_install(monkeypatch):
    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "flwr" else find(name, *a))
    with pytest.raises(sn.ScenarioError, match=r"flower: Flower is not installed: pip "
                                               r"install -e '\.\[flower\]' \(flwr 1\.42\)"):
        sn.load_scenario(QUICK, {"algorithms": ["flower"]})


def run(out: Path, rounds: int, **keys) -> Path:
    scenario = sn.load_scenario(QUICK, {**TINY, "training.rounds": rounds, **keys})
    sn.run(scenario, out=out, echo=False)
    return out / "quickstart"


def weights(folder: Path) -> torch.Tensor:
    state = torch.load(folder / "model.pt", weights_only=True)["modules"]
    return torch.cat([t.flatten().double() for part in state.values()
                      for t in part.values()])


@needs_flower
def test_flowers_fedavg_is_the_packages_fedavg_to_the_bit_on_the_clock(tmp_path):
    """The same clients (the run's selection stream), the same bytes, FLOPs and times to the
    bit; the weights after 3 rounds within float32 round-off of the averaging (flwr averages
    in NumPy, the package in torch: 2e-8 measured, weights of order 0.1)."""
    root = run(tmp_path, 3, algorithms=["fedavg", "flower"])
    for name in ("events.csv", "rounds.csv", "clients.csv"):
        assert ((root / "fedavg/seed0" / name).read_bytes()
                == (root / "flower/seed0" / name).read_bytes()), name
    gap = (weights(root / "fedavg/seed0") - weights(root / "flower/seed0")).abs().max()
    assert 0 < gap < 1e-6


#: three rounds of 5 clients selected, the first 3 to finish kept (over-selection: 2 dropped
#: a round, their replies never aggregated)
DROPPING = {**TINY, "training.rounds": 3, "training.over_selection": 0.5}


@pytest.fixture(scope="module")
def fedavg_dropping(tmp_path_factory):
    """The package's FedAvg under DROPPING: the clock every strategy's run must have."""
    out = tmp_path_factory.mktemp("fedavg")
    sn.run(sn.load_scenario(QUICK, {**DROPPING, "algorithms": ["fedavg"]}), out=out,
           echo=False)
    return out / "quickstart/fedavg/seed0"


@needs_flower
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_trains_on_the_clock_and_aggregates_its_own_way(tmp_path, strategy,
                                                                     fedavg_dropping):
    """Under DROPPING the run's invariants hold (events, rounds, drops: a violation fails
    the run); the clock is FedAvg's (what a strategy does with the weights changes no byte,
    FLOP or second); the weights are FedAvg's only where the strategy's defaults make it
    FedAvg."""
    results = sn.run(sn.load_scenario(QUICK, {**DROPPING, "algorithms": ["flower"],
                                              "flower": {"strategy": strategy}}),
                     out=tmp_path, echo=False)
    assert results.summary["status"].tolist() == ["completed"]
    folder = tmp_path / "quickstart/flower/seed0"
    events = pd.read_csv(folder / "events.csv")
    assert (events.kind == "client_dropped").sum() == 3 * 2
    assert (fedavg_dropping / "events.csv").read_bytes() == (folder / "events.csv").read_bytes()
    gap = (weights(folder) - weights(fedavg_dropping)).abs().max()
    # at their defaults FedProx (mu 0) and FedAvgM (no server momentum) are FedAvg
    assert (gap < 1e-6) == (strategy in ("FedAvg", "FedProx", "FedAvgM")), float(gap)


@needs_flower
def test_a_resumed_fedadam_run_gives_the_uninterrupted_runs_model(tmp_path):
    """FedAdam's moments outlive a round: saved in the checkpoint and restored."""
    keys = {"algorithms": ["flower"], "flower": {"strategy": "FedAdam"},
            "training.checkpoint_every": 2}
    root = run(tmp_path, 3, **keys)
    folder = root / "flower/seed0"
    whole, model = (folder / "rounds.csv").read_bytes(), weights(folder)
    (folder / "summary.json").unlink()        # as if stopped after round 2's checkpoint
    run(tmp_path, 3, **keys)
    assert json.loads((folder / "summary.json").read_text())["resumed_from_round"] == 2
    assert (folder / "rounds.csv").read_bytes() == whole
    assert torch.equal(weights(folder), model)
    # and the moments matter: the same checkpoint without them resumes to another model
    checkpoint = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert checkpoint["round"] == 2 and set(checkpoint["run"]["trainer"]["extra"]["strategy"]) \
        == {"m_t", "v_t"}
    checkpoint["run"]["trainer"]["extra"]["strategy"] = {}
    torch.save(checkpoint, folder / "checkpoint.pt")
    (folder / "summary.json").unlink()
    run(tmp_path, 3, **keys)
    assert not torch.equal(weights(folder), model)


@needs_flower
def test_options_the_run_sets_or_the_strategy_lacks_are_refused():
    with pytest.raises(sn.ScenarioError, match=r"flower.options: fraction_train are the run's"):
        sn.load_scenario(QUICK, {"algorithms": ["flower"],
                                 "flower": {"options": {"fraction_train": 0.5}}})
    with pytest.raises(sn.ScenarioError, match=r"flower.options: FedAdam takes .*eta.*, got "
                                               r"\['etaa'\]"):
        sn.load_scenario(QUICK, {"algorithms": ["flower"],
                                 "flower": {"strategy": "FedAdam", "options": {"etaa": 0.1}}})


@needs_flower
def test_a_timing_only_flower_run_keeps_fedavgs_clock(tmp_path):
    """A timing-only run meters each batch size with one client (a round of another number
    of clients than the run's): the strategy samples each round's number."""
    results = sn.run(sn.load_scenario(QUICK, {**TINY, "training.rounds": 2, "timing_only": True,
                                              "algorithms": ["fedavg", "flower"],
                                              "flower": {"strategy": "FedAdam"}}),
                     out=tmp_path, echo=False)
    assert results.summary["status"].tolist() == ["completed", "completed"]
    root = tmp_path / "quickstart"
    assert ((root / "fedavg/seed0/events.csv").read_bytes()
            == (root / "flower/seed0/events.csv").read_bytes())


@needs_flower
@pytest.mark.parametrize("strategy", ["QFedAvg", "FedAdam"])
def test_batchnorms_counters_stay_out_of_the_strategys_arithmetic(tmp_path, strategy):
    """ResNet-18's num_batches_tracked (int64): QFedAvg's scaling of it raised, FedAdam moved
    it; the global model takes the first reply's counter, its floats the strategy's."""
    root = run(tmp_path, 1, algorithms=["flower"], flower={"strategy": strategy},
               **{"model.arch": "resnet18", "training.local_iters": 1})
    state = torch.load(root / "flower/seed0/model.pt", weights_only=True)["modules"]
    counters = [t for part in state.values() for n, t in part.items()
                if n.endswith("num_batches_tracked")]
    assert counters and all(int(t) == 1 for t in counters)


DAMPED = '''
import numpy as np
from flwr.app import ArrayRecord
from flwr.serverapp.strategy import FedAvg


class Damped(FedAvg):
    """FedAvg whose global model moves share x decay^rounds of the way to the replies'
    average, `rounds` the rounds it aggregated (its state from round to round, a NumPy
    scalar in its extra_state)."""

    def __init__(self, *, share: float = 0.5, decay: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.share, self.decay, self.rounds, self.current = share, decay, 0, None

    def configure_train(self, server_round, arrays, config, grid):
        self.current = arrays.to_torch_state_dict()
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        average, metrics = super().aggregate_train(server_round, replies)
        share = self.share * self.decay ** self.rounds
        self.rounds += 1
        mean = average.to_torch_state_dict()
        return ArrayRecord({k: self.current[k] + share * (mean[k] - self.current[k])
                            for k in mean}), metrics

    def extra_state(self):
        return {"rounds": np.int64(self.rounds), "history": (1.0, 2.0)}

    def load_extra_state(self, state):
        self.rounds = int(state["rounds"])


class Forgetful(Damped):
    extra_state = None


class Picky(FedAvg):
    """Leaves the last client it sampled out of the round."""

    def configure_train(self, server_round, arrays, config, grid):
        return list(super().configure_train(server_round, arrays, config, grid))[:-1]


class Broken(FedAvg):
    def aggregate_train(self, server_round, replies):
        raise KeyError("accuracy")


class HalfForgetful(Damped):
    load_extra_state = None
'''


@pytest.fixture
def user_strategy(tmp_path, monkeypatch):
    (tmp_path / "my_strategy.py").write_text(DAMPED)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@needs_flower
def test_a_users_strategy_by_import_path_aggregates_its_way_on_fedavgs_clock(user_strategy):
    """Damped with share 1 is FedAvg (weights to round-off); with share 0.5 it is not; the
    clock is FedAvg's either way."""
    full = run(user_strategy / "full", 2, algorithms=["fedavg", "flower"],
               flower={"strategy": "my_strategy:Damped", "options": {"share": 1.0}})
    half = run(user_strategy / "half", 2, algorithms=["flower"],
               flower={"strategy": "my_strategy:Damped", "options": {"share": 0.5}})
    assert ((full / "fedavg/seed0/events.csv").read_bytes()
            == (full / "flower/seed0/events.csv").read_bytes()
            == (half / "flower/seed0/events.csv").read_bytes())
    fedavg = weights(full / "fedavg/seed0")
    assert (weights(full / "flower/seed0") - fedavg).abs().max() < 1e-6
    assert (weights(half / "flower/seed0") - fedavg).abs().max() > 1e-4


@needs_flower
def test_a_users_strategy_resumes_with_its_own_state_or_is_refused(user_strategy):
    keys = {"algorithms": ["flower"], "training.checkpoint_every": 2,
            "flower": {"strategy": "my_strategy:Damped", "options": {"decay": 0.5}}}
    root = run(user_strategy, 3, **keys)
    folder = root / "flower/seed0"
    whole, model = (folder / "rounds.csv").read_bytes(), weights(folder)
    checkpoint = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert int(checkpoint["run"]["trainer"]["extra"]["user_strategy"]["rounds"]) == 2
    (folder / "summary.json").unlink()        # as if stopped after round 2's checkpoint
    run(user_strategy, 3, **keys)
    assert json.loads((folder / "summary.json").read_text())["resumed_from_round"] == 2
    assert (folder / "rounds.csv").read_bytes() == whole
    assert torch.equal(weights(folder), model)
    # and the state matters: without it (rounds back at 0) the resumed run ends elsewhere
    checkpoint["run"]["trainer"]["extra"]["user_strategy"]["rounds"] = torch.tensor(0)
    torch.save(checkpoint, folder / "checkpoint.pt")
    (folder / "summary.json").unlink()
    run(user_strategy, 3, **keys)
    assert not torch.equal(weights(folder), model)
    # a strategy keeping state it does not save, or cannot load: its run is not resumed
    for name in ("Forgetful", "HalfForgetful"):
        keys["flower"] = {"strategy": f"my_strategy:{name}"}
        other = run(user_strategy / name, 3, **keys) / "flower/seed0"
        (other / "summary.json").unlink()
        with pytest.raises(sn.RefusedError, match=rf"flower.strategy: my_strategy:{name} does "
                                                  rf"not define both extra_state\(\) .* round "
                                                  rf"2: its run cannot resume"):
            run(user_strategy / name, 3, **keys)


@needs_flower
def test_every_strategy_flwr_exports_runs_or_is_refused_with_its_reason():
    from flwr.serverapp import strategy as strategies

    from scala_netsim.algorithms.config import FLOWER_NOT_OFFERED, FLOWER_STRATEGIES

    exported = {name for name in strategies.__all__ if name not in ("Result", "Strategy")}
    assert exported == set(FLOWER_STRATEGIES) | set(FLOWER_NOT_OFFERED)
    assert not set(FLOWER_STRATEGIES) & set(FLOWER_NOT_OFFERED)


@needs_flower
@pytest.mark.parametrize(("strategy", "says"), [
    ("FedNope", r"flower.strategy: one of FedAvg, .*, or a user's strategy as module:Class, "
                r"got 'FedNope'"),
    ("DifferentialPrivacyServerSideFixedClipping",
     r"flower.strategy: 'DifferentialPrivacyServerSideFixedClipping' does not run here: the "
     r"differential-privacy wrappers wrap a strategy .*; one of FedAvg, .* does, or a user's "
     r"subclass of FedAvg as module:Class"),
    ("FedXgbCyclic", r"flower.strategy: 'FedXgbCyclic' does not run here: the XGBoost "
                     r"strategies exchange trees, not the arrays of a model"),
    ("my_strategy:Nothing", r"flower.strategy: cannot import 'my_strategy:Nothing'"),
    ("my_strategy:np", r"flower.strategy: 'my_strategy:np' is not a subclass of flwr's FedAvg"),
])
def test_a_strategy_that_is_not_one_is_refused_naming_the_key(user_strategy, strategy, says):
    with pytest.raises(sn.ScenarioError, match=says):
        sn.load_scenario(QUICK, {**TINY, "algorithms": ["flower"],
                                 "flower": {"strategy": strategy}})


@needs_flower
@pytest.mark.parametrize(("strategy", "says"), [
    ("Picky", r"flower: round 1: Picky.configure_train addressed clients \[\d+, \d+\]; the run "
              r"selected \[\d+, \d+, \d+\]"),
    ("Broken", r"flower: round 1: Broken.aggregate_train raised KeyError: 'accuracy'"),
])
def test_a_strategy_addressing_other_clients_or_failing_to_aggregate_names_the_round(
        user_strategy, strategy, says):
    from scala_netsim.flower.grid import FlowerAppError

    with pytest.raises(FlowerAppError, match=says):
        run(user_strategy, 1, algorithms=["flower"],
            flower={"strategy": f"my_strategy:{strategy}"})
