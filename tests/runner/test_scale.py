"""A thousand clients, trained for real, on a small slice of Fashion-MNIST; per-client state
kept only for the clients that took part."""

import pandas as pd
import torch

from scala_netsim.config.scenario import validate_scenario
from scala_netsim.core.events import EventKind, events_frame
from scala_netsim.learn.data import load_dataset
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world


def test_a_thousand_clients_at_one_percent_train_for_real():
    scenario = validate_scenario({
        "name": "thousand", "device": "cpu", "seed": 1,
        "data": {"num_clients": 1000, "partition": {"kind": "quantity", "alpha": 2},
                 "train_samples": 5000, "test_samples": 200},
        "training": {"rounds": 2, "local_iters": 2, "batch_size": 40, "participation": 0.01,
                     "eval_every": 1},
        "algorithms": ["scala"]})
    dataset = load_dataset("fashion_mnist", None, train_samples=5000, test_samples=200)
    world = build_world(scenario, dataset)
    assert len(world.client_indices) == 1000
    assert sum(len(ix) for ix in world.client_indices) <= 5000
    run = Run(scenario, "scala", world, torch.device("cpu"))
    while not run.finished:
        run.step()
    assert run.problems() == []
    rounds = pd.DataFrame(run.rows)
    assert rounds["num_clients"].tolist() == [10, 10]
    assert rounds["test_acc"].between(0, 1).all()
    events = events_frame(run.log.events)
    participants = set(events.loc[events["kind"] == EventKind.CLIENT_FORWARD.value, "client_id"])
    assert 10 < len(participants) <= 20
    # only clients that drew a batch hold sampler state (not one entry per client)
    assert set(run.trainer.sampler.state_dict()["epoch"]) == participants


def test_a_runs_memory_is_estimated_from_its_models_and_clients(fashion_slice):
    """Issue 47 (10): 100,000 clients a round died of memory after 86 s; now the estimate
    refuses such a run first. Each client training at once holds 3 copies of what it trains
    (its part, or the whole model in the federated family: measured 2.2 for FedAvg), each
    per-client server copy likewise, a kept optimiser state one copy per client of the data;
    a timing-only run meters with one trainer and holds none."""
    from scala_netsim.learn.models import build_split_model
    from scala_netsim.runner.estimate import BASE_BYTES, memory_bytes

    def scenario(**training):
        return validate_scenario({"name": "m", "data": {"num_clients": 100},
                                  "training": {"participation": 0.5, "rounds": 1,
                                               "local_iters": 1, **training}})

    client, server = build_split_model("alexnet", "S2", 1, 10, torch.Generator(),
                                       image_size=fashion_slice.image_size)
    c, s = (sum(p.numel() * 4 for p in m.parameters()) for m in (client, server))
    data = sum(t.numel() * t.element_size() for t in (fashion_slice.train_x,
                                                       fashion_slice.test_x))
    events = 50 * 8 * 200
    assert memory_bytes(scenario(), "fedavg", fashion_slice)[0] == (
        BASE_BYTES + 50 * 3 * (c + s) + events + data)
    assert memory_bytes(scenario(), "scala", fashion_slice)[0] == (
        BASE_BYTES + 50 * 3 * c + events + data)
    persistent = validate_scenario({**scenario().model_dump(mode="json"),
                                    "splitfed_v1": {"optimizer_state": "persistent"}})
    assert memory_bytes(persistent, "splitfed_v1", fashion_slice)[0] == (
        BASE_BYTES + 50 * 3 * (c + s) + 100 * (c + s) + events + data)
    timing = validate_scenario({**scenario().model_dump(mode="json"), "timing_only": True})
    assert memory_bytes(timing, "fedavg", fashion_slice)[0] == BASE_BYTES + events + data
