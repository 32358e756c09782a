"""An estimate of the real (wall-clock) time of a scenario's runs on this machine, from the
measured time of training steps of the scenario's model."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario
from scala_netsim.learn.data import Dataset
from scala_netsim.learn.models import build_split_model
from scala_netsim.learn.training import grad_of


def synchronize(device: torch.device) -> None:
    """Wait for the kernels queued on a GPU (it runs them after the calls return)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(step: Callable[[], None], device: torch.device, steps: int) -> float:
    """Seconds of one call of `step`, averaged over `steps` calls after one warm-up call."""
    step()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(device)
    return (time.perf_counter() - start) / steps


def _parts(scenario: Scenario, dataset: Dataset, device: torch.device
           ) -> tuple[nn.Module, nn.Module]:
    """A throwaway (client, server) pair of the scenario's model on `device`."""
    client, server = build_split_model(scenario.model.arch, scenario.model.split,
                                       dataset.in_channels, dataset.num_classes,
                                       torch.Generator().manual_seed(0),
                                       image_size=dataset.image_size)
    return client.to(device), server.to(device)


def train_step_s(scenario: Scenario, dataset: Dataset, device: torch.device, batch_size: int,
                 steps: int = 3) -> float:
    """Seconds of one training step of the whole model on `batch_size` images (a throwaway
    model, lr 0), measured after one warm-up step."""
    model = nn.Sequential(*_parts(scenario, dataset, device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    batch = min(batch_size, len(dataset.train_y))
    x, y = dataset.train_x[:batch], dataset.train_y[:batch]

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return _timed(step, device, steps)


def concatenated_step_s(scenario: Scenario, dataset: Dataset, device: torch.device,
                        steps: int = 3) -> float:
    """Seconds of one local iteration of SCALA's pattern (a throwaway model, lr 0): each of
    the round's clients runs its part forward on B / (r K) images, the server part steps on
    the concatenated activations (a backward pass for its weights, an input-only one for the
    activations' gradient), each client runs its part backward. Measured, not derived from a
    whole-model step: on a GPU the clients' small batches cost kernel launches, not FLOPs."""
    client, server = _parts(scenario, dataset, device)
    clients = scenario.num_participants
    batch = max(1, min(scenario.training.batch_size // clients, len(dataset.train_y)))
    x, y = dataset.train_x[:batch], dataset.train_y[:batch].repeat(clients)
    client_optimizer = torch.optim.SGD(client.parameters(), lr=0.0)
    server_optimizer = torch.optim.SGD(server.parameters(), lr=0.0)

    def iteration() -> None:
        outputs = [client(x) for _ in range(clients)]
        activations = torch.cat([out.detach() for out in outputs]).requires_grad_(True)
        loss = nn.functional.cross_entropy(server(activations), y)
        server_optimizer.zero_grad()
        loss.backward(retain_graph=True, inputs=list(server.parameters()))
        loss.backward(inputs=[activations])
        server_optimizer.step()
        client_optimizer.zero_grad()
        for out, grad in zip(outputs, grad_of(activations).split(batch), strict=True):
            out.backward(grad)
        for _ in range(clients):   # one step per client model (here all the one part)
            client_optimizer.step()

    return _timed(iteration, device, steps)


@dataclass(frozen=True)
class StepCosts:
    """Measured seconds per training sample at the server batch B, at a client's B / (r K),
    and in a local iteration of the concatenated-activations pattern (SCALA, CA-SFL)."""

    server_batch_s: float
    client_batch_s: float
    concatenated_s: float

    @classmethod
    def measure(cls, scenario: Scenario, dataset: Dataset, device: torch.device) -> StepCosts:
        tr = scenario.training
        client_batch = max(1, tr.batch_size // scenario.num_participants)
        return cls(train_step_s(scenario, dataset, device, tr.batch_size) / tr.batch_size,
                   train_step_s(scenario, dataset, device, client_batch) / client_batch,
                   concatenated_step_s(scenario, dataset, device)
                   / (client_batch * scenario.num_participants))


def run_time_s(scenario: Scenario, algorithm: str, num_test: int, costs: StepCosts) -> float:
    """Seconds of one algorithm's run: rounds x T x B training samples, plus evaluations.

    Algorithms with concatenated activations (SCALA, CA-SFL): the per-sample time of their
    own pattern, measured (StepCosts.concatenated_s). Every other algorithm
    computes everything at the clients' batch B_k, about one plain step per sample: the
    per-sample time at B_k, which is higher on CPUs (small convolutions use the cores less
    well). An evaluation is a forward pass over the test set (a third of a step per image).
    Overheads of the baselines' own (weight copies, FedDyn's extra arithmetic) are not counted.
    """
    tr = scenario.training
    concatenated = ALGORITHMS[algorithm].traits.barrier   # SCALA and CA-SFL
    per_sample_s = costs.concatenated_s if concatenated else costs.client_batch_s
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
