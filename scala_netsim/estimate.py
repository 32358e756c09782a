"""A quick estimate of a scenario's real run time on this machine."""

import time

import torch
from torch import nn

from scala_netsim.models import build_split_model


def _time_train_steps(model: nn.Module, x, y, steps: int) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


def train_step_s(scenario, dataset, device, steps: int = 3) -> float:
    """Seconds of one full-model training step on batch B (throwaway model), measured."""
    client, server = build_split_model(scenario.model.arch, scenario.model.split,
                                       dataset.in_channels, dataset.num_classes,
                                       torch.Generator().manual_seed(0))
    model = nn.Sequential(client, server).to(device)
    batch = min(scenario.training.batch_size, len(dataset.train_y))
    x, y = dataset.train_x[:batch], dataset.train_y[:batch]
    _time_train_steps(model, x, y, 1)  # warm-up
    return _time_train_steps(model, x, y, steps)


def run_time_s(scenario, num_test: int, step_s: float, step_batch: int) -> float:
    """Seconds of one algorithm's run, from the measured time of a step on `step_batch`.

    A SCALA iteration does about 4/3 of a plain step's arithmetic (the extra input-only
    backward pass through the server part); evaluation is a forward pass over the test set.
    """
    tr = scenario.training
    per_sample_s = step_s / step_batch
    evals = tr.rounds // tr.eval_every + (tr.rounds % tr.eval_every != 0)
    eval_s = per_sample_s / 3 * num_test
    return tr.rounds * tr.local_iters * tr.batch_size * per_sample_s * 4 / 3 + evals * eval_s


def estimate_run_time_s(scenario, dataset, device, steps: int = 3) -> float:
    """Seconds for all of the scenario's algorithms, one after another."""
    step_s = train_step_s(scenario, dataset, device, steps)
    batch = min(scenario.training.batch_size, len(dataset.train_y))
    return run_time_s(scenario, len(dataset.test_y), step_s, batch) * len(scenario.algorithms)


def format_duration(seconds: float) -> str:
    """Seconds as a short human duration: '42 s', '3.5 min', '2.1 h'."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 3 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
