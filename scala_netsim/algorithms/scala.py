"""SCALA and CA-SFL: split federated learning with concatenated activations
(SCALA-NOTES section 2), and the client side every split algorithm shares. The math only; the
SimPy engine decides when each step happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from scala_netsim.algorithms.common import ClientData, SGDSettings, TrainerBase, TrainerSetup
from scala_netsim.algorithms.contract import ConcatSplitTrainer, Forward, ServerStep, StepDemand
from scala_netsim.flops import MetaPlanner
from scala_netsim.losses import label_prior, log_prior, logit_adjusted_cross_entropy
from scala_netsim.messages import ActivationMessage, GradientMessage


class SplitTrainer(TrainerBase):
    """Client side of split learning: client k computes A_k = h(w_c,k; X_k), later receives
    dl/dA_k and takes one SGD step on w_c,k. The server part is `server_model`."""

    def __init__(self, client_model: nn.Module, server_model: nn.Module, data: ClientData,
                 sgd: SGDSettings, batch_seed: int) -> None:
        super().__init__(client_model, data, sgd, batch_seed)
        self.client_model = client_model
        self.server_model = server_model
        self._pending: dict[int, torch.Tensor] = {}  # client -> activations awaiting gradients
        self._planner = MetaPlanner(client_model, data.train_x.shape[1:], data.train_x.dtype)

    @classmethod
    def from_setup(cls, setup: TrainerSetup, config: Any = None, **extra: Any) -> SplitTrainer:
        """The trainer on the scenario's data and split model (the initial weights every
        algorithm starts from) and optimiser; `extra` goes to the constructor."""
        return cls(*setup.split_model(), setup.data, setup.sgd, setup.batch_seed(), **extra)

    def client_forward(self, k: int, local_iter: int) -> Forward:
        """Client k draws a minibatch and computes its activations."""
        x, y = self.next_batch(k)
        model, _ = self.slots[k]
        activations, flops = self.meter.run(("client_forward", len(y)), model, x)
        self._pending[k] = activations
        return Forward(self.wire.up(ActivationMessage(k, local_iter, activations.detach(), y)),
                       flops)

    def client_backward(self, reply: GradientMessage) -> int:
        """Client k backpropagates G_k through its model and takes one SGD step. -> FLOPs."""
        k = reply.client_id
        _, optimizer = self.slots[k]
        activations = self._pending.pop(k)
        _, flops = self.meter.run(("client_backward", len(activations)),
                                  activations.backward, reply.gradients)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return flops

    def drop_client(self, k: int) -> None:
        super().drop_client(k)
        self._pending.pop(k, None)   # its gradient never comes

    def step_demand(self, k: int) -> StepDemand:
        """Activations and labels up, their gradient down, after the client forward pass."""
        batch = self.client_batch_sizes[k]
        flops, activation_bytes = self._planner.forward(batch)
        label_bytes = batch * self.train_y.element_size()
        element_size = self.train_x.element_size()
        return StepDemand(self.wire.up_bytes(activation_bytes, element_size) + label_bytes,
                          self.wire.down_bytes(activation_bytes, element_size), flops)

    def global_model(self) -> nn.Module:
        """The full model (global client part, then server part) for evaluation."""
        return nn.Sequential(self.client_model, self.server_model)

    def persistent_modules(self) -> dict[str, nn.Module]:
        return {"client": self.client_template, "server": self.server_model}


class CASFL(SplitTrainer, ConcatSplitTrainer):
    """CA-SFL (Minibatch-SFL): one server-side model trained on the concatenation of all
    participating clients' activations, one server step per local iteration, plain
    cross-entropy on both sides. The server's optimiser keeps its momentum across rounds
    (SCALA-NOTES section 1)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.server_optimizer = torch.optim.SGD(self.server_model.parameters(), **self.optim_args)

    def persistent_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"server": self.server_optimizer}

    def losses(self, logits: torch.Tensor, labels: torch.Tensor, owner: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """(the server's loss, each sample's loss in its client's objective); `owner` is the
        client id of each sample. CA-SFL: cross-entropy for both."""
        per_sample = nn.functional.cross_entropy(logits, labels, reduction="none")
        return per_sample.mean(), per_sample

    def server_step(self, uploads: Sequence[ActivationMessage]) -> ServerStep:
        """One SGD step of the server-side model on the concatenated activations; a gradient
        for every upload, in their order."""
        total = sum(len(m.labels) for m in uploads)
        replies, flops = self.meter.run(("server_step", total), self._server_step, uploads)
        return ServerStep(replies, flops)

    def _server_step(self, uploads: Sequence[ActivationMessage]) -> list[GradientMessage]:
        activations = torch.cat([m.activations for m in uploads]).requires_grad_(True)
        labels = torch.cat([m.labels for m in uploads])
        sizes = [len(m.labels) for m in uploads]
        logits = self.server_model(activations)
        # Client k's loss is the mean over its own slice, so sum_k l_k weights each sample by
        # 1/B_k; the server forward is per sample, so d(sum_k l_k)/dA_k = dl_k/dA_k.
        counts = torch.as_tensor(sizes, device=labels.device)
        sample_weight = torch.repeat_interleave(1.0 / counts.to(logits.dtype), counts)
        owner = torch.repeat_interleave(
            torch.as_tensor([m.client_id for m in uploads], device=labels.device), counts)
        server_loss, per_sample = self.losses(logits, labels, owner)
        clients_loss = (per_sample * sample_weight).sum()
        # Two backward passes over the one graph: weights from the server's loss, then the
        # activations' gradient (input-only, no weight gradients) from the clients' losses.
        self.server_optimizer.zero_grad(set_to_none=True)
        server_loss.backward(retain_graph=True, inputs=list(self.server_model.parameters()))
        clients_loss.backward(inputs=[activations])
        self.server_optimizer.step()
        self.note_loss(server_loss)
        return [self.wire.down(GradientMessage(m.client_id, m.local_iter, g))
                for m, g in zip(uploads, activations.grad.split(sizes), strict=True)]


class SCALA(CASFL):
    """SCALA: CA-SFL whose server loss adjusts the logits with the label prior of the
    concatenated batch, while the gradient returned to client k is that of client k's own loss
    adjusted with its local prior P_k (eq. 15)."""

    def losses(self, logits: torch.Tensor, labels: torch.Tensor, owner: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        server_loss = logit_adjusted_cross_entropy(
            logits, labels, log_prior(label_prior(labels, self.num_classes)))
        per_sample = logit_adjusted_cross_entropy(
            logits, labels, self.client_log_priors[owner], reduction="none")
        return server_loss, per_sample
