"""Learning pieces shared by the algorithms: minibatch sampling, batch sizes, aggregation and
evaluation. Nothing here knows about simulated time.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn


class ClientSampler:
    """Draws each client's minibatches without replacement, epoch after epoch.

    Every client walks through a random permutation of its sample indices and takes a new one
    when it is used up. Client k's e-th permutation is drawn from its own generator, seeded
    from (seed, k, e) alone: what a client draws never depends on when the other clients
    draw, so the order in which the simulated clock interleaves clients cannot change what
    is learned (the premise of re-timing a run, scala_netsim.runner.replay). Only the clients that
    have drawn keep state: their permutation, position in it and epoch count.
    """

    def __init__(self, client_indices: Sequence[np.ndarray], seed: int,
                 device: torch.device | str) -> None:
        # NumPy arrays, made tensors when used: 100,000 clients' tensors took a second
        self._indices = [np.asarray(ix, dtype=np.int64) for ix in client_indices]
        self._seed = int(seed)
        self._order: dict[int, torch.Tensor] = {}
        self._cursor: dict[int, int] = {}
        self._epoch: dict[int, int] = {}
        self._device = device

    def num_samples(self, k: int) -> int:
        return len(self._indices[k])

    def indices(self, k: int) -> torch.Tensor:
        """All of client k's sample indices (into the training set)."""
        return torch.from_numpy(self._indices[k])

    def _permutation(self, k: int, epoch: int) -> torch.Tensor:
        seed = np.random.SeedSequence(self._seed, spawn_key=(k, epoch)).generate_state(
            1, dtype=np.uint64)[0] >> 1
        generator = torch.Generator().manual_seed(int(seed))
        return self.indices(k)[torch.randperm(len(self._indices[k]), generator=generator)]

    def next_batch(self, k: int, batch_size: int) -> torch.Tensor:
        """Sample indices (into the training set, on the device) of client k's next minibatch."""
        taken = []
        while batch_size > 0:
            if k not in self._order or self._cursor[k] == len(self._indices[k]):
                epoch = self._epoch.get(k, -1) + 1
                self._order[k], self._cursor[k] = self._permutation(k, epoch), 0
                self._epoch[k] = epoch
            n = min(batch_size, len(self._indices[k]) - self._cursor[k])
            taken.append(self._order[k][self._cursor[k]:self._cursor[k] + n])
            self._cursor[k] += n
            batch_size -= n
        batch = taken[0] if len(taken) == 1 else torch.cat(taken)
        return batch.to(self._device, non_blocking=True)

    def state_dict(self) -> dict:
        """Everything needed to continue drawing the same batches (for checkpoints): each
        drawing client's epoch and position (its permutation follows from them)."""
        return {"epoch": dict(self._epoch), "cursor": dict(self._cursor)}

    def load_state_dict(self, state: dict) -> None:
        self._epoch, self._cursor = dict(state["epoch"]), dict(state["cursor"])
        self._order = {k: self._permutation(k, e) for k, e in self._epoch.items()}


def grad_of(tensor: torch.Tensor) -> torch.Tensor:
    """The gradient a backward pass left on `tensor` (a leaf that requires it)."""
    if tensor.grad is None:
        raise RuntimeError("no gradient reached the tensor: backward was not run through it")
    return tensor.grad


def apportion_batch_sizes(num_samples: Sequence[int], total_batch_size: int) -> list[int]:
    """B_k proportional to |D_k| with sum B_k = B (largest remainder), every B_k >= 1.

    SCALA-NOTES section 2: B_k = |D_k| B / sum_j |D_j|, rounded so the server batch is exactly B.
    """
    samples = np.asarray(num_samples, dtype=float)
    if total_batch_size < len(samples):
        raise ValueError(
            f"training.batch_size ({total_batch_size}) must be at least the number of "
            f"participating clients ({len(samples)})"
        )
    exact = samples * total_batch_size / samples.sum()
    sizes = np.maximum(np.floor(exact).astype(int), 1)
    # Hand out (or take back) the rounding difference by largest (smallest) remainder.
    remainder = exact - sizes
    diff = total_batch_size - sizes.sum()
    order = np.argsort(-remainder if diff > 0 else remainder, kind="stable")
    i = 0
    while diff != 0:
        k = order[i % len(order)]
        if diff > 0:
            sizes[k] += 1
            diff -= 1
        elif sizes[k] > 1:
            sizes[k] -= 1
            diff += 1
        i += 1
    return sizes.tolist()


@torch.no_grad()
def to_device(value: Any, device: torch.device) -> Any:
    """`value` with every tensor in it (through dicts, lists and tuples) on `device`."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_device(v, device) for v in value)
    return value


def weighted_average_(target: nn.Module, sources: Sequence[Sequence[torch.Tensor]],
                      weights: Sequence[float]) -> None:
    """target <- sum_k w_k source_k / sum_k w_k over every parameter and buffer (FedAvg)."""
    total = float(sum(weights))
    fractions = [w / total for w in weights]
    source_states = [list(s) for s in sources]
    for i, dst in enumerate(target.state_dict().values()):
        if not dst.is_floating_point():  # counters (e.g. BatchNorm's): take the first source
            dst.copy_(source_states[0][i])
            continue
        average = source_states[0][i] * fractions[0]
        for state, fraction in zip(source_states[1:], fractions[1:], strict=True):
            average.add_(state[i], alpha=fraction)
        dst.copy_(average)


@torch.inference_mode()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, num_classes: int,
             batch_size: int = 1000) -> tuple[float, np.ndarray, float]:
    """(accuracy, per-class accuracy array, mean cross-entropy) of `model` on (x, y)."""
    was_training = model.training
    model.eval()
    correct = torch.zeros(num_classes, dtype=torch.int64, device=y.device)
    loss_sum = 0.0
    for start in range(0, len(y), batch_size):
        logits = model(x[start:start + batch_size])
        yb = y[start:start + batch_size]
        loss_sum += nn.functional.cross_entropy(logits, yb, reduction="sum").item()
        hits = logits.argmax(1) == yb
        correct += torch.bincount(yb[hits], minlength=num_classes)
    model.train(was_training)
    totals = torch.bincount(y, minlength=num_classes).clamp_min(1)
    per_class = (correct.double() / totals.double()).cpu().numpy()
    return correct.sum().item() / len(y), per_class, loss_sum / len(y)
