"""Pieces every trainer shares: per-round client model copies, minibatches, FLOP metering,
weighted aggregation and evaluation. No simulated time here."""

import copy
from abc import ABC, abstractmethod

import torch
from torch import nn

from scala_netsim.flops import FlopMeter
from scala_netsim.losses import label_prior, log_prior
from scala_netsim.messages import ModelMessage
from scala_netsim.training import ClientSampler, apportion_batch_sizes, evaluate, weighted_average_


def state_tensors(module: nn.Module) -> tuple:
    """A module's parameters and buffers as sent over the air (detached, not copied)."""
    return tuple(t.detach() for t in module.state_dict().values())


@torch.no_grad()
def load_state_(module: nn.Module, tensors) -> None:
    for dst, src in zip(module.state_dict().values(), tensors):
        dst.copy_(src)


class ClientSlots:
    """The models the round's participants train: reusable copies of a template module, each
    loaded from a downloaded message and given a fresh SGD optimiser (no momentum carried from
    round to round: clients receive a fresh model, SCALA-NOTES section 1)."""

    def __init__(self, template: nn.Module, optim_args: dict):
        self.template, self.optim_args = template, optim_args
        self._copies, self._active = [], {}

    def clear(self, count: int) -> None:
        while len(self._copies) < count:
            self._copies.append(copy.deepcopy(self.template))
        self._active.clear()

    def load(self, k: int, tensors, parameters=None):
        """Client k's model, loaded with `tensors`; the optimiser covers `parameters(model)`
        (default: all of them)."""
        model = self._copies[len(self._active)]
        load_state_(model, tensors)
        params = model.parameters() if parameters is None else parameters(model)
        self._active[k] = (model, torch.optim.SGD(params, **self.optim_args))
        return self._active[k]

    def __getitem__(self, k: int):
        return self._active[k]


class TrainerBase(ABC):
    """Batch sizes, sampling, priors, metering and aggregation shared by all algorithms.

    Subclasses set `self.client_template` (the module a client trains and sends) before
    calling `super().__init__`.
    """

    def __init__(self, train_x, train_y, client_indices, num_classes: int, *, batch_size: int,
                 lr: float, momentum: float, weight_decay: float, generator: torch.Generator):
        self.train_x, self.train_y = train_x, train_y
        self.num_classes = num_classes
        self.batch_size = batch_size
        # fused: one kernel per step for all parameters (same update, ~40 % less optimiser
        # time on CPU, which matters for the many small per-client steps of the baselines)
        self.optim_args = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, fused=True)
        device = train_x.device
        self.sampler = ClientSampler(client_indices, generator, device)
        self.client_log_priors = torch.stack([
            log_prior(label_prior(train_y[torch.as_tensor(ix, device=device)], num_classes))
            for ix in client_indices
        ])
        self.client_label_counts = torch.stack([
            torch.bincount(train_y[torch.as_tensor(ix, device=device)], minlength=num_classes)
            for ix in client_indices
        ])
        self.meter = FlopMeter()
        self.slots = ClientSlots(self.client_template, self.optim_args)
        self.client_batch_sizes = {}
        self._uploads = []
        self.last_loss = None            # latest training loss (0-d tensor), for divergence checks

    def begin_round(self, selected) -> dict:
        """Assign each selected client its batch size B_k proportional to |D_k|."""
        sizes = apportion_batch_sizes([self.sampler.num_samples(k) for k in selected],
                                      self.batch_size)
        self.client_batch_sizes = dict(zip(selected, sizes))
        self.slots.clear(len(selected))
        self._uploads.clear()
        return dict(self.client_batch_sizes)

    def next_batch(self, k: int):
        idx = self.sampler.next_batch(k, self.client_batch_sizes[k])
        return self.train_x[idx], self.train_y[idx]

    def client_model_download(self, k: int) -> ModelMessage:
        """The global model part a client trains, as sent to client k."""
        return ModelMessage(k, state_tensors(self.client_template))

    def client_receive_model(self, message: ModelMessage) -> None:
        self.slots.load(message.client_id, message.tensors)

    def client_model_upload(self, k: int) -> ModelMessage:
        """Client k's trained model, sent up at the end of the round."""
        return ModelMessage(k, state_tensors(self.slots[k][0]))

    def server_receive_model(self, message: ModelMessage) -> None:
        self._uploads.append(message)

    def aggregate_uploads(self, target: nn.Module) -> None:
        """target <- sum_k |D_k| w_k / sum_k |D_k| over the uploaded models (FedAvg)."""
        weights = [self.sampler.num_samples(m.client_id) for m in self._uploads]
        weighted_average_(target, [m.tensors for m in self._uploads], weights)

    def end_round(self) -> None:
        self.aggregate_uploads(self.client_template)

    @abstractmethod
    def global_model(self) -> nn.Module:
        """The model evaluated on the test set."""

    # --- checkpoints: taken between rounds, when no step is pending ---------------------
    def persistent_modules(self) -> dict:
        """Modules whose weights outlive a round, by name."""
        return {"client": self.client_template}

    def persistent_optimizers(self) -> dict:
        """Optimisers whose state outlives a round, by name."""
        return {}

    def extra_state(self) -> dict:
        """Other state that outlives a round (tensors, numbers, lists and dicts of them)."""
        return {}

    def load_extra_state(self, state: dict) -> None:
        """Restore what `extra_state` returned."""

    def state_dict(self) -> dict:
        return {"modules": {n: m.state_dict() for n, m in self.persistent_modules().items()},
                "optimizers": {n: o.state_dict()
                               for n, o in self.persistent_optimizers().items()},
                "sampler": self.sampler.state_dict(), "extra": self.extra_state()}

    def load_state_dict(self, state: dict) -> None:
        for name, module in self.persistent_modules().items():
            module.load_state_dict(state["modules"][name])
        for name, optimizer in self.persistent_optimizers().items():
            optimizer.load_state_dict(state["optimizers"][name])
        self.sampler.load_state_dict(state["sampler"])
        self.load_extra_state(state["extra"])

    def evaluate(self, test_x, test_y):
        """(accuracy, per-class accuracy, mean loss) of the global model."""
        return evaluate(self.global_model(), test_x, test_y, self.num_classes)
