"""FLOP counts measured from the real computation with torch's FlopCounterMode."""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


class FlopMeter:
    """Runs a computation and returns its FLOPs.

    The first call for a key (model part, step kind, batch size) runs under FlopCounterMode
    and caches the count; later calls with the same key run at full speed and reuse it.
    """

    def __init__(self) -> None:
        self._flops: dict[Hashable, int] = {}

    def run(self, key: Hashable, fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, int]:
        """(fn(*args, **kwargs), flops of that call)."""
        if key in self._flops:
            return fn(*args, **kwargs), self._flops[key]
        with FlopCounterMode(display=False) as counter:
            out = fn(*args, **kwargs)
        self._flops[key] = counter.get_total_flops()
        return out, self._flops[key]

    @property
    def counts(self) -> dict:
        return dict(self._flops)


def _identity(out: Any) -> torch.Tensor:
    return out


class MetaPlanner:
    """FLOPs and output size of a module's steps at a given batch size, counted on the meta
    device: shapes only, no data, no arithmetic and no effect on the real module (its running
    statistics, its random state). Counts equal FlopMeter's for the same computation.

    `activations_of` picks the tensor sent on from the module's output, `logits_of` the one a
    training step's cross-entropy is taken on (both the output itself by default).
    """

    def __init__(self, module: nn.Module, sample_shape: tuple[int, ...],
                 dtype: torch.dtype = torch.float32,
                 activations_of: Callable[[Any], torch.Tensor] = _identity,
                 logits_of: Callable[[Any], torch.Tensor] = _identity) -> None:
        self.module = copy.deepcopy(module).to("meta")
        self.sample_shape, self.dtype = tuple(sample_shape), dtype
        self.activations_of, self.logits_of = activations_of, logits_of
        self._forward: dict[int, tuple[int, int]] = {}
        self._train: dict[int, int] = {}

    def _input(self, batch_size: int) -> torch.Tensor:
        return torch.empty((batch_size, *self.sample_shape), dtype=self.dtype, device="meta")

    def forward(self, batch_size: int) -> tuple[int, int]:
        """(FLOPs, bytes of the activations) of one forward pass on `batch_size` samples."""
        if batch_size not in self._forward:
            with torch.no_grad(), FlopCounterMode(display=False) as counter:
                out = self.activations_of(self.module(self._input(batch_size)))
            self._forward[batch_size] = (counter.get_total_flops(),
                                         out.numel() * out.element_size())
        return self._forward[batch_size]

    def output_shape(self) -> tuple[int, ...]:
        """The shape of the activations one sample sends on (C x H x W at a cut)."""
        with torch.no_grad():
            return tuple(self.activations_of(self.module(self._input(1))).shape[1:])

    def train_step(self, batch_size: int) -> int:
        """FLOPs of forward, cross-entropy and backward on `batch_size` samples."""
        if batch_size not in self._train:
            with FlopCounterMode(display=False) as counter:
                logits = self.logits_of(self.module(self._input(batch_size)))
                labels = torch.empty(batch_size, dtype=torch.int64, device="meta")
                nn.functional.cross_entropy(logits, labels).backward()
            self.module.zero_grad(set_to_none=True)
            self._train[batch_size] = counter.get_total_flops()
        return self._train[batch_size]
