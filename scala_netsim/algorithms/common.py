"""Pieces every trainer shares: its inputs, per-round client model copies, minibatches, FLOP
metering, weighted aggregation, evaluation and checkpoint state. No simulated time here."""

from __future__ import annotations

import bisect
import copy
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from scala_netsim.core.seeds import Seeds
from scala_netsim.learn.compression import Wire
from scala_netsim.learn.contract import Evaluation, ExchangesModels, Trainer
from scala_netsim.learn.flops import FlopMeter
from scala_netsim.learn.losses import log_prior
from scala_netsim.learn.messages import ModelMessage
from scala_netsim.learn.models import build_split_model
from scala_netsim.learn.training import (
    ClientSampler,
    apportion_batch_sizes,
    evaluate,
    weighted_average_,
)

#: a trainer class's own type (what its from_setup returns)
TrainerT = TypeVar("TrainerT", bound="TrainerBase")


@dataclass(frozen=True)
class ClientData:
    """The training set held in memory and which samples each client holds."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    client_indices: Sequence[np.ndarray]
    num_classes: int

    @property
    def num_clients(self) -> int:
        return len(self.client_indices)


@dataclass(frozen=True)
class SGDSettings:
    """Server minibatch B (split into B_k proportional to |D_k|) and the SGD optimiser."""

    batch_size: int
    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0
    grad_clip_norm: float | None = None
    #: do the clients' optimisers (and per-client server copies') keep their state (the
    #: momentum) from one of a client's rounds to its next? (the algorithm's
    #: `optimizer_state`: persistent; per_round starts each round's optimiser afresh)
    keep_optimizer_state: bool = False

    def optimizer_args(self, extra_weight_decay: float = 0.0) -> dict:
        """Keyword arguments of `SGD`."""
        # fused: one kernel per step for all parameters (same update, ~40 % less optimiser
        # time on CPU, which matters for the many small per-client steps of the baselines)
        return dict(lr=self.lr, momentum=self.momentum,
                    weight_decay=self.weight_decay + extra_weight_decay, fused=True,
                    grad_clip_norm=self.grad_clip_norm)


class SGD(torch.optim.SGD):
    """torch's SGD that first clips the gradients of its parameters to a global L2 norm of at
    most `grad_clip_norm` (torch.nn.utils.clip_grad_norm_; None: no clipping). Each party
    clips its own part before its step: a client its client part, the server its server
    part, as the SCALA authors' code does (max_norm 10)."""

    def __init__(self, params: Iterable[nn.Parameter], grad_clip_norm: float | None = None,
                 **kwargs: Any) -> None:
        super().__init__(params, **kwargs)
        self.grad_clip_norm = grad_clip_norm

    def step(self, closure: Callable | None = None) -> Any:
        if self.grad_clip_norm is not None:
            nn.utils.clip_grad_norm_([p for group in self.param_groups for p in group["params"]],
                                     self.grad_clip_norm)
        return super().step(closure)


@dataclass(frozen=True)
class TrainerSetup:
    """What an algorithm's `from_setup` builds its trainer from: the data, the optimiser, the
    model to split and the seeds of the scenario."""

    data: ClientData
    sgd: SGDSettings
    arch: str
    split: str
    in_channels: int
    rounds: int
    seeds: Seeds
    device: torch.device
    #: Q, the clients an asynchronous algorithm keeps training at once
    concurrency: int = 1

    def split_model(self, *names: str) -> tuple[nn.Sequential, nn.Sequential]:
        """(client part, server part) of the scenario's model, initialised from the "model"
        seed stream (the initial weights every algorithm starts from), or from its child
        stream named by `names`."""
        client, server = build_split_model(self.arch, self.split, self.in_channels,
                                           self.data.num_classes,
                                           self.torch_generator("model", *names),
                                           image_size=self.data.train_x.shape[-1])
        return client.to(self.device), server.to(self.device)

    def torch_generator(self, stream: str, *names: str) -> torch.Generator:
        """A torch generator on a named seed stream (scala_netsim.core.seeds)."""
        return torch.Generator().manual_seed(self.seeds.seed(stream, *names))

    def batch_seed(self) -> int:
        """The seed of every client's minibatches (each client draws its own stream of it)."""
        return self.seeds.seed("batches")


def state_tensors(module: nn.Module) -> tuple[torch.Tensor, ...]:
    """A module's parameters and buffers as sent over the air (detached, not copied)."""
    return tuple(t.detach() for t in module.state_dict().values())


@torch.no_grad()
def load_state_(module: nn.Module, tensors: Iterable[torch.Tensor]) -> None:
    for dst, src in zip(module.state_dict().values(), tensors, strict=True):
        dst.copy_(src)


class ClientSlots:
    """The models the round's participants train: reusable copies of a template module, each
    loaded from a downloaded message and given a new SGD optimiser. Its state (the momentum)
    starts fresh every round (clients receive a fresh model, SCALA-NOTES section 1) unless
    `keep_state`: then each client's optimiser takes up the state its optimiser had at the end
    of that client's previous round (optimizer_state: persistent), which the slots keep per
    client (`state_dict` for checkpoints)."""

    def __init__(self, template: nn.Module, optimizer_args: dict,
                 keep_state: bool = False) -> None:
        self.template, self.optimizer_args = template, optimizer_args
        self.keep_state = keep_state
        self._copies: list[nn.Module] = []
        self._active: dict[int, tuple[nn.Module, torch.optim.Optimizer]] = {}
        #: client -> its optimiser's momentum buffers (one per parameter, None before its
        #: first step) as its last round ended; only with keep_state
        self._kept: dict[int, list[torch.Tensor | None]] = {}

    def clear(self, count: int) -> None:
        self._keep_active()
        while len(self._copies) < count:
            self._copies.append(copy.deepcopy(self.template))
        self._active.clear()

    def _keep_active(self) -> None:
        """Keep the state of the optimisers in use (keep_state only)."""
        if self.keep_state:
            for k, (_, optimizer) in self._active.items():
                self._kept[k] = _momentum_buffers(optimizer)

    def load(self, k: int, tensors: Iterable[torch.Tensor],
             parameters: Callable[[nn.Module], Iterable[nn.Parameter]] | None = None
             ) -> tuple[nn.Module, torch.optim.Optimizer]:
        """Client k's model, loaded with `tensors`; the optimiser covers `parameters(model)`
        (default: all of them)."""
        model = self._copies[len(self._active)]
        load_state_(model, tensors)
        params = model.parameters() if parameters is None else parameters(model)
        optimizer = SGD(params, **self.optimizer_args)
        if k in self._kept:
            _load_momentum_buffers(optimizer, self._kept[k])
        self._active[k] = (model, optimizer)
        return self._active[k]

    def __getitem__(self, k: int) -> tuple[nn.Module, torch.optim.Optimizer]:
        return self._active[k]

    def kept_state(self) -> dict[int, list[torch.Tensor | None]]:
        """The optimiser state kept per client (empty unless keep_state), taken between
        rounds (for checkpoints; AsyncSlots's state_dict is its clients in flight)."""
        self._keep_active()
        return dict(self._kept)

    def load_kept_state(self, state: dict[int, list[torch.Tensor | None]]) -> None:
        self._kept = {int(k): list(buffers) for k, buffers in state.items()}


def _momentum_buffers(optimizer: torch.optim.Optimizer) -> list[torch.Tensor | None]:
    """The SGD momentum buffer of each parameter of `optimizer` (None where it has none yet)."""
    return [optimizer.state[p].get("momentum_buffer") if p in optimizer.state else None
            for group in optimizer.param_groups for p in group["params"]]


def _load_momentum_buffers(optimizer: torch.optim.Optimizer,
                           buffers: Sequence[torch.Tensor | None]) -> None:
    """Give a new SGD optimiser the momentum buffers another one left (a client's earlier
    round): its first step then continues them instead of starting from the gradient."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if len(params) != len(buffers):
        raise ValueError(f"kept optimiser state for {len(buffers)} parameters, the model has "
                         f"{len(params)}")
    for p, buffer in zip(params, buffers, strict=True):
        if buffer is not None:
            optimizer.state[p]["momentum_buffer"] = buffer.to(p.device)


def client_label_counts(train_y: torch.Tensor, client_indices: Sequence[np.ndarray],
                        num_classes: int) -> torch.Tensor:
    """K x N label counts of the clients' samples, in one bincount (10,000 clients' own
    bincounts took seconds)."""
    sizes = torch.as_tensor([len(ix) for ix in client_indices], device=train_y.device)
    owner = torch.repeat_interleave(torch.arange(len(client_indices), device=train_y.device),
                                    sizes)
    samples = torch.as_tensor(np.concatenate(client_indices), device=train_y.device)
    flat = torch.bincount(owner * num_classes + train_y[samples],
                          minlength=len(client_indices) * num_classes)
    return flat.view(len(client_indices), num_classes)


class TrainerBase(Trainer, ExchangesModels):
    """Batch sizes, sampling, priors, metering, model exchange, aggregation, evaluation and
    checkpoint state, shared by all algorithms.

    `client_template` is the module a client trains and sends (its global copy); the default
    round downloads it to every participant and averages the uploads back into it, weighted
    by |D_k| (FedAvg). Subclasses override the hooks they change.
    """

    fixed_step_costs = True   # FLOPs metered per (step kind, batch size); sizes from shapes
    #: how messages cross the air (scala_netsim.learn.compression): plain unless the run
    #: gives the scenario's compression (use_wire)
    wire: Wire = Wire()

    def use_wire(self, wire: Wire) -> None:
        self.wire = wire

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        """Constructor arguments taken from the algorithm's scenario section (none here)."""
        return {}

    def __init__(self, client_template: nn.Module, data: ClientData, sgd: SGDSettings,
                 batch_seed: int, extra_weight_decay: float = 0.0) -> None:
        self.client_template = client_template
        self.data = data
        self.train_x, self.train_y = data.train_x, data.train_y
        self.num_classes = data.num_classes
        self.batch_size = sgd.batch_size
        self.optim_args = sgd.optimizer_args()
        device = data.train_x.device
        self.sampler = ClientSampler(data.client_indices, batch_seed, device)
        self.client_label_counts = client_label_counts(data.train_y, data.client_indices,
                                                       data.num_classes)
        counts = self.client_label_counts.to(torch.float32)
        self.client_log_priors = log_prior(counts / counts.sum(1, keepdim=True))
        self.meter = FlopMeter()
        self.keep_optimizer_state = sgd.keep_optimizer_state
        self.slots = ClientSlots(client_template, sgd.optimizer_args(extra_weight_decay),
                                 sgd.keep_optimizer_state)
        self.client_batch_sizes: dict[int, int] = {}
        self._uploads: list[ModelMessage] = []
        self.dropped: set[int] = set()   # the round's clients the network dropped
        #: the round's aggregations: (what was averaged, client, its weight); the weights of
        #: each sum to 1 over the clients averaged (checked by the run's invariants)
        self.aggregations: list[tuple[str, int, float]] = []

    @classmethod
    def trained_client_part(cls, client: nn.Module, server: nn.Module,
                            sample_shape: Sequence[int], config: Any,
                            state: dict[str, torch.Tensor]) -> nn.Module:
        """The client part whose output goes up, holding a finished run's weights: `state`
        is model.pt's "client" (scala_netsim.runner.writer.save_final_model), `client` and
        `server` a freshly built split model of the run's scenario, `config` the algorithm's
        scenario section. Algorithms whose client part is not the split model's override it (the
        attack, scala_netsim.attack, loads runs through it)."""
        client.load_state_dict(state)
        return client

    def begin_round(self, selected: Sequence[int]) -> None:
        """Assign each selected client its batch size B_k proportional to |D_k|."""
        sizes = apportion_batch_sizes([self.sampler.num_samples(k) for k in selected],
                                      self.batch_size)
        self.client_batch_sizes = dict(zip(selected, sizes, strict=True))
        self.slots.clear(len(selected))
        self._uploads.clear()
        self.dropped = set()
        self.aggregations = []

    def drop_client(self, k: int) -> None:
        self.dropped.add(k)

    def contributors(self) -> list[int]:
        """The round's clients the network did not drop, in the order they were selected."""
        return [k for k in self.client_batch_sizes if k not in self.dropped]

    def average_into(self, group: str, target: nn.Module, client_ids: Sequence[int],
                     sources: Sequence[Sequence[torch.Tensor]]) -> None:
        """target <- the |D_k|-weighted average of `sources` (client_ids' models); nothing
        when there is none (a round in which every client was dropped keeps the model)."""
        if not client_ids:
            return
        weights = [self.sampler.num_samples(k) for k in client_ids]
        weighted_average_(target, sources, weights)
        total = float(sum(weights))
        self.aggregations.extend((group, int(k), w / total)
                                 for k, w in zip(client_ids, weights, strict=True))

    def next_batch(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = self.sampler.next_batch(k, self.client_batch_sizes[k])
        return self.train_x[idx], self.train_y[idx]

    # --- model exchange ------------------------------------------------------------------
    def client_model_download(self, k: int) -> ModelMessage:
        """The global model part a client trains, as sent to client k."""
        return self.wire.model(ModelMessage(k, state_tensors(self.client_template)))

    def client_receive_model(self, message: ModelMessage) -> None:
        self.slots.load(message.client_id, message.tensors)

    def client_model_upload(self, k: int) -> ModelMessage:
        """Client k's trained model, sent up at the end of the round."""
        return self.wire.model(ModelMessage(k, state_tensors(self.slots[k][0])))

    def server_receive_model(self, message: ModelMessage) -> None:
        # kept in client-id order, not arrival order: the aggregate's floating-point sums
        # must not depend on which upload the clock delivered first
        bisect.insort(self._uploads, message, key=lambda m: m.client_id)

    def aggregate_uploads(self, target: nn.Module, group: str = "client") -> None:
        """target <- sum_k |D_k| w_k / sum_k |D_k| over the uploaded models (FedAvg): those of
        the clients that were not dropped; unchanged when there is none."""
        self.average_into(group, target, [m.client_id for m in self._uploads],
                          [m.tensors for m in self._uploads])

    def end_round(self) -> None:
        self.aggregate_uploads(self.client_template)

    def model_bytes(self) -> int:
        """Bytes of the client model as sent either way."""
        return self.wire.model_bytes(state_tensors(self.client_template))

    # --- evaluation ----------------------------------------------------------------------
    @abstractmethod
    def global_model(self) -> nn.Module:
        """The model evaluated on the test set."""

    def evaluate(self, test_x: torch.Tensor, test_y: torch.Tensor) -> Evaluation:
        """(accuracy, per-class accuracy, mean loss) of the global model."""
        return Evaluation(*evaluate(self.global_model(), test_x, test_y, self.num_classes))

    # --- checkpoints: taken between rounds, when no step is pending ---------------------
    def persistent_modules(self) -> dict[str, nn.Module]:
        """Modules whose weights outlive a round, by name."""
        return {"client": self.client_template}

    def persistent_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Optimisers whose state outlives a round, by name."""
        return {}

    def kept_slots(self) -> dict[str, ClientSlots]:
        """Per-client models whose optimisers may keep their state across rounds, by name."""
        return {"client": self.slots}

    def extra_state(self) -> dict:
        """Other state that outlives a round (tensors, numbers, lists and dicts of them)."""
        return {}

    def load_extra_state(self, state: dict) -> None:
        """Restore what `extra_state` returned."""

    def state_dict(self) -> dict:
        return {"modules": {n: m.state_dict() for n, m in self.persistent_modules().items()},
                "optimizers": {n: o.state_dict()
                               for n, o in self.persistent_optimizers().items()},
                "sampler": self.sampler.state_dict(), "extra": self.extra_state(),
                "kept_optimizers": {n: slots.kept_state()
                                    for n, slots in self.kept_slots().items()}}

    def load_state_dict(self, state: dict) -> None:
        for name, module in self.persistent_modules().items():
            module.load_state_dict(state["modules"][name])
        for name, optimizer in self.persistent_optimizers().items():
            optimizer.load_state_dict(state["optimizers"][name])
        self.sampler.load_state_dict(state["sampler"])
        self.load_extra_state(state["extra"])
        for name, slots in self.kept_slots().items():
            slots.load_kept_state(state["kept_optimizers"][name])

