"""Centralized training of a scenario's model on its whole training set: the ceiling that
split and federated training of the same model, recipe and number of server steps can hope
for (no label skew, no clients, no network). A diagnostic for the studies, not a product.

    python scripts/centralized.py scenarios/cellular_10pct.yaml --steps 2500 --out FILE.json
                                  [--set training.weight_decay=0 ...] [--eval-every 250]

Uses the scenario's model, learning rate, momentum, weight decay, gradient clipping and
batch size B (SCALA's server step takes one step on B samples, so its 500 rounds x T = 5 are
2,500 steps), draws batches uniformly with replacement from a generator seeded by the
scenario's seed, and writes the test accuracy every `--eval-every` steps as JSON
(atomically). Prints one line per evaluation.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch import nn

from scala_netsim.algorithms.common import SGD
from scala_netsim.config.scenario import load_scenario
from scala_netsim.core.results import write_json
from scala_netsim.learn.models import build_split_model
from scala_netsim.learn.training import evaluate
from scala_netsim.runner.world import scenario_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args()

    scenario = load_scenario(args.scenario, args.overrides)
    tr = scenario.training
    data = scenario_dataset(scenario, "cpu")
    model = nn.Sequential(*build_split_model(
        scenario.model.arch, scenario.model.split, data.in_channels, data.num_classes,
        torch.Generator().manual_seed(scenario.seed), image_size=data.image_size))
    optimizer = SGD(model.parameters(), grad_clip_norm=tr.grad_clip_norm, lr=tr.lr,
                    momentum=tr.momentum, weight_decay=tr.weight_decay)
    batches = torch.Generator().manual_seed(scenario.seed)
    record = {"scenario": str(args.scenario), "overrides": args.overrides,
              "arch": scenario.model.arch, "batch_size": tr.batch_size, "lr": tr.lr,
              "momentum": tr.momentum, "weight_decay": tr.weight_decay,
              "grad_clip_norm": tr.grad_clip_norm, "steps": [], "test_acc": [],
              "test_loss": [], "wall_time_s": 0.0}
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        idx = torch.randint(len(data.train_y), (tr.batch_size,), generator=batches)
        optimizer.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(data.train_x[idx]), data.train_y[idx]).backward()
        optimizer.step()
        if step % args.eval_every == 0 or step == args.steps:
            accuracy, _, loss = evaluate(model, data.test_x, data.test_y, data.num_classes)
            model.train()
            record["steps"].append(step)
            record["test_acc"].append(accuracy)
            record["test_loss"].append(loss)
            record["wall_time_s"] = time.perf_counter() - start
            write_json(Path(args.out), record)
            print(json.dumps({"step": step, "test_acc": accuracy, "test_loss": round(loss, 4),
                              "wall_s": round(record["wall_time_s"], 1)}), flush=True)


if __name__ == "__main__":
    main()
