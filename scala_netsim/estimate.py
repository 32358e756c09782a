"""An estimate of the real (wall-clock) time of a scenario's runs on this machine, from the
measured time of training steps of the scenario's model."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import nn

from scala_netsim.algorithms.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario
from scala_netsim.data import Dataset
from scala_netsim.models import build_split_model


def _time_train_steps(model: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


def train_step_s(scenario: Scenario, dataset: Dataset, device: torch.device, batch_size: int,
                 steps: int = 3) -> float:
    """Seconds of one training step of the whole model on `batch_size` images (a throwaway
    model, lr 0), measured after one warm-up step."""
    client, server = build_split_model(scenario.model.arch, scenario.model.split,
                                       dataset.in_channels, dataset.num_classes,
                                       torch.Generator().manual_seed(0),
                                       image_size=dataset.image_size)
    model = nn.Sequential(client, server).to(device)
    batch = min(batch_size, len(dataset.train_y))
    x, y = dataset.train_x[:batch], dataset.train_y[:batch]
    _time_train_steps(model, x, y, 1)  # warm-up
    return _time_train_steps(model, x, y, steps)


@dataclass(frozen=True)
class StepCosts:
    """Measured seconds per training sample at the server batch B and at a client's B / (r K)."""

    server_batch_s: float
    client_batch_s: float

    @classmethod
    def measure(cls, scenario: Scenario, dataset: Dataset, device: torch.device) -> StepCosts:
        tr = scenario.training
        client_batch = max(1, tr.batch_size // scenario.num_participants)
        return cls(train_step_s(scenario, dataset, device, tr.batch_size) / tr.batch_size,
                   train_step_s(scenario, dataset, device, client_batch) / client_batch)


def run_time_s(scenario: Scenario, algorithm: str, num_test: int, costs: StepCosts) -> float:
    """Seconds of one algorithm's run: rounds x T x B training samples, plus evaluations.

    Algorithms with concatenated activations (SCALA, CA-SFL) run their server part on the
    whole batch B and do about 4/3 of a plain step's arithmetic (the extra input-only backward
    pass through the server part): 4/3 x the per-sample time at B. Every other algorithm
    computes everything at the clients' batch B_k, about one plain step per sample: the
    per-sample time at B_k, which is higher on CPUs (small convolutions use the cores less
    well). An evaluation is a forward pass over the test set (a third of a step per image).
    Overheads of the baselines' own (weight copies, FedDyn's extra arithmetic) are not counted.
    """
    tr = scenario.training
    concatenated = ALGORITHMS[algorithm].traits.barrier   # SCALA and CA-SFL
    per_sample_s = costs.server_batch_s * 4 / 3 if concatenated else costs.client_batch_s
    evals = tr.rounds // tr.eval_every + (tr.rounds % tr.eval_every != 0)
    eval_s = costs.server_batch_s / 3 * num_test
    return tr.rounds * tr.local_iters * tr.batch_size * per_sample_s + evals * eval_s


def format_duration(seconds: float) -> str:
    """Seconds as a short human duration: '42 s', '3.5 min', '2.1 h'."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 3 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
