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
