"""Asynchronous federated learning: FedAsync (Xie et al., "Asynchronous Federated
Optimization", arXiv 1903.03934) and FedBuff (Nguyen et al., "Federated Learning with
Buffered Asynchronous Aggregation", AISTATS 2022, arXiv 2106.06639); and the plain
asynchronous split baseline, async_sfl (GAS, the generative one, is in algorithms.gas).

A client downloads the global model as it is when its download starts (the snapshot is
taken then, whatever the server applies while the bytes are in the air), trains T local SGD
steps on its own data with a fresh optimiser, and uploads; the server takes the upload when
it arrives. Staleness is the number of versions the server applied between the client's
download and its upload's arrival.

Batch size: in a synchronous round the batch B is split among the n clients in proportion
to their data; here Q clients train at once, so client k trains on
B_k = max(1, round(B |D_k| / (Q mean_j |D_j|))) samples a step, the share it would have in
an average round of Q clients.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import torch
from torch import nn

from scala_netsim.algorithms.common import SGD, ClientSlots, TrainerBase, TrainerSetup
from scala_netsim.algorithms.federated import LocalSGD
from scala_netsim.algorithms.scala import SplitTrainer
from scala_netsim.algorithms.splitfed import SharedServer
from scala_netsim.learn.contract import (
    AppliedUpdate,
    AsyncFederatedTrainer,
    AsyncSplitTrainer,
)
from scala_netsim.learn.messages import ModelMessage
from scala_netsim.learn.models import features_and_head


class AsyncSlots(ClientSlots):
    """Each client in flight trains its own copy of the model (with a fresh optimiser over
    all its parameters); a copy is reused when its client has finished (`release`), not
    when a round begins."""

    def __init__(self, template: nn.Module, optimizer_args: dict) -> None:
        super().__init__(template, optimizer_args)
        self._free: list[nn.Module] = []

    @torch.no_grad()
    def load(self, k: int, tensors: Iterable[torch.Tensor],
             parameters: Callable[[nn.Module], Iterable[nn.Parameter]] | None = None
             ) -> tuple[nn.Module, torch.optim.Optimizer]:
        model = self._free.pop() if self._free else copy.deepcopy(self.template)
        for dst, src in zip(model.state_dict().values(), tensors, strict=True):
            dst.copy_(src)
        params = model.parameters() if parameters is None else parameters(model)
        self._active[k] = (model, SGD(params, **self.optimizer_args))
        return self._active[k]

    def release(self, k: int) -> None:
        self._free.append(self._active.pop(k)[0])

    def __contains__(self, k: int) -> bool:
        return k in self._active

    def state_dict(self) -> dict:
        """The models and optimisers of the clients in flight (a checkpoint's)."""
        return {k: {"model": m.state_dict(), "optimizer": o.state_dict()}
                for k, (m, o) in self._active.items()}

    def load_state_dict(self, state: dict) -> None:
        for k, saved in state.items():
            self.load(k, tuple(saved["model"].values()))
            self._active[k][1].load_state_dict(saved["optimizer"])


class AsyncClients(TrainerBase):
    """What every asynchronous trainer does for its clients (before the learning it takes
    from a round trainer's: LocalSGD, SharedServer, SplitTrainer): each client in flight
    trains its own copy of the global model `client_template` (the whole model for FL, the
    client-side part for split learning), downloaded as it was when its download started;
    the server's `version` counts the global versions made; `_arrived` tells the staleness
    of an arriving model."""

    fixed_step_costs = False     # the clock decides what is learned: nothing to time alone
    slots: AsyncSlots

    def __init__(self, *args, concurrency: int = 1, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.version = 0
        self.concurrency = concurrency
        self.slots = AsyncSlots(self.client_template, self.slots.optimizer_args)
        self.downloaded: dict[int, tuple[int, tuple[torch.Tensor, ...]]] = {}
        sizes = [self.sampler.num_samples(k) for k in range(len(self.data.client_indices))]
        self._mean_samples = sum(sizes) / len(sizes)

    def client_start(self, k: int) -> None:
        share = self.sampler.num_samples(k) / (self.concurrency * self._mean_samples)
        self.client_batch_sizes[k] = max(1, round(self.batch_size * share))

    def client_model_download(self, k: int) -> ModelMessage:
        """The global model now, copied (the server may change it before the bytes arrive),
        and the version it is."""
        tensors = tuple(t.detach().clone() for t in self.client_template.state_dict().values())
        self.downloaded[k] = (self.version, tensors)
        return self.wire.model(ModelMessage(k, tensors))

    def client_receive_model(self, message: ModelMessage) -> None:
        self.slots.load(message.client_id, message.tensors)

    def client_model_upload(self, k: int) -> ModelMessage:
        """Client k's trained model, copied: its slot is given to the next client as soon
        as the model is in, while the server may keep the model (GAS's model buffer)."""
        message = super().client_model_upload(k)
        return dataclasses.replace(message, tensors=tuple(t.clone() for t in message.tensors))

    def _arrived(self, message: ModelMessage) -> tuple[int, int, tuple[torch.Tensor, ...]]:
        """(client, staleness, the tensors it downloaded) of an arriving upload; its slot
        is freed."""
        k = message.client_id
        version, base = self.downloaded.pop(k)
        self.slots.release(k)
        del self.client_batch_sizes[k]
        return k, self.version - version, base

    def extra_state(self) -> dict:
        """The version, and what the clients in flight hold: their models and optimisers,
        what they downloaded, their batch sizes."""
        return {"version": self.version, "slots": self.slots.state_dict(),
                "downloaded": dict(self.downloaded),
                "batch_sizes": dict(self.client_batch_sizes)}

    def load_extra_state(self, state: dict) -> None:
        self.version = int(state["version"])
        self.slots.load_state_dict(state["slots"])
        self.downloaded = {int(k): (int(v), tuple(t)) for k, (v, t) in
                           state["downloaded"].items()}
        self.client_batch_sizes = {int(k): int(b) for k, b in state["batch_sizes"].items()}


class StalenessMixing(AsyncClients):
    """FedAsync's server rule (a mixin of an asynchronous trainer): each arriving model is
    mixed into the global one, w <- (1 - a s(tau)) w + a s(tau) w_k, with
    s(tau) = (tau + 1)^(-exponent) (the paper's polynomial staleness function; exponent 0.5
    its choice). Integer buffers are kept."""

    def __init__(self, *args, alpha: float = 0.6, staleness_exponent: float = 0.5,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.alpha, self.staleness_exponent = alpha, staleness_exponent

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"alpha": config.alpha, "staleness_exponent": config.staleness_exponent}

    def mixing_weight(self, staleness: int) -> float:
        """a s(tau)."""
        return self.alpha * (staleness + 1.0) ** (-self.staleness_exponent)

    @torch.no_grad()
    def server_apply(self, message: ModelMessage) -> AppliedUpdate:
        k, staleness, _ = self._arrived(message)
        weight = self.mixing_weight(staleness)
        for w, w_k in zip(self.client_template.state_dict().values(), message.tensors,
                          strict=True):
            if w.is_floating_point():
                w.lerp_(w_k.to(w.dtype), weight)   # w + weight (w_k - w)
        self.version += 1
        self.aggregations = [("client", k, weight)]
        return AppliedUpdate(self.version, staleness, True, (k,))


AsyncFedAvgT = TypeVar("AsyncFedAvgT", bound="AsyncFedAvg")
AsyncSplitClientsT = TypeVar("AsyncSplitClientsT", bound="AsyncSplitClients")


class AsyncFedAvg(AsyncClients, LocalSGD, AsyncFederatedTrainer):
    """The client side of the asynchronous FL algorithms (FedAvg's local steps, LocalSGD, on
    the model downloaded); abstract: subclasses say what the server does with an upload
    (`server_apply`, the contract's)."""

    @classmethod
    def from_setup(cls: type[AsyncFedAvgT], setup: TrainerSetup,
                   config: Any = None) -> AsyncFedAvgT:
        return cls(*features_and_head(*setup.split_model()), setup.data, setup.sgd,
                   setup.batch_seed(), concurrency=setup.concurrency,
                   **cls.hyper_parameters(config))


class FedAsync(StalenessMixing, AsyncFedAvg):
    """FedAsync: each upload is mixed into the global model when it arrives
    (StalenessMixing)."""


class FedBuff(AsyncFedAvg):
    """FedBuff: each arriving upload's delta w_k - (the model it downloaded) goes into a
    buffer; when the buffer holds K of them the server applies their mean times the server
    learning rate, w <- w + eta_g mean(deltas), and empties the buffer."""

    def __init__(self, *args, buffer_size: int = 5, server_lr: float = 1.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.buffer_size, self.server_lr = buffer_size, server_lr
        self.buffer: list[tuple[int, tuple[torch.Tensor, ...]]] = []

    def extra_state(self) -> dict:
        return {**super().extra_state(), "buffer": list(self.buffer)}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state(state)
        self.buffer = [(int(k), tuple(delta)) for k, delta in state["buffer"]]

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"buffer_size": config.buffer_size, "server_lr": config.server_lr}

    @torch.no_grad()
    def server_apply(self, message: ModelMessage) -> AppliedUpdate:
        k, staleness, base = self._arrived(message)
        self.buffer.append((k, tuple(w_k - w0 for w_k, w0 in zip(message.tensors, base,
                                                                   strict=True))))
        if len(self.buffer) < self.buffer_size:
            return AppliedUpdate(self.version + 1, staleness, False)
        for i, w in enumerate(self.model.state_dict().values()):
            if w.is_floating_point():
                total = torch.stack([delta[i] for _, delta in self.buffer]).sum(0)
                w.add_(total / len(self.buffer), alpha=self.server_lr)
        contributors = tuple(k for k, _ in self.buffer)
        self.aggregations = [("client", c, 1.0 / len(self.buffer)) for c in contributors]
        self.buffer = []
        self.version += 1
        return AppliedUpdate(self.version, staleness, True, contributors)


class AsyncSplitClients(AsyncClients, SplitTrainer):
    """The asynchronous split trainers' construction: the scenario's split model, with Q and
    the algorithm's hyper-parameters."""

    @classmethod
    def from_setup(cls: type[AsyncSplitClientsT], setup: TrainerSetup, config: Any = None,
                   **extra: Any) -> AsyncSplitClientsT:
        return cls(*setup.split_model(), setup.data, setup.sgd, setup.batch_seed(),
                   concurrency=setup.concurrency, **cls.hyper_parameters(config), **extra)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._inputs: dict[int, torch.Tensor] = {}

    def next_batch(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = super().next_batch(k)
        self._inputs[k] = x     # a checkpoint remakes the activations awaiting a gradient
        return x, y

    def client_backward(self, reply: Any) -> int:
        self._inputs.pop(reply.client_id)
        return super().client_backward(reply)

    def extra_state(self) -> dict:
        """Also the inputs of the activations awaiting their gradient (the graph from them
        to the client model is made again on resuming: the same forward pass, the same
        bits)."""
        return {**super().extra_state(), "inputs": dict(self._inputs)}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state(state)
        self._inputs = {int(k): x for k, x in state["inputs"].items()}
        for k, x in self._inputs.items():
            model = self.slots[k][0]
            buffers = [b.clone() for b in model.buffers()]   # (BatchNorm's, moved once already)
            self._pending[k] = model(x)
            with torch.no_grad():
                for b, saved in zip(model.buffers(), buffers, strict=True):
                    b.copy_(saved)


class AsyncSFL(StalenessMixing, AsyncSplitClients, SharedServer, AsyncSplitTrainer):
    """async_sfl, the plain asynchronous split baseline: ONE server-side model stepped on each
    client's activations when the server processor takes them (SplitFedV2's server, its order
    decided by arrival; cross-entropy; its optimiser kept), the gradient sent back; after T
    iterations the client's client-side model is mixed into the global one FedAsync's way
    (StalenessMixing, under the algorithm's own section)."""
