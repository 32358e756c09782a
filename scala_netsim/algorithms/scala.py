"""SCALA and CA-SFL: split federated learning with concatenated activations
(SCALA-NOTES section 2), and the client side every split algorithm shares. The math only; the
SimPy engine decides when each step happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import torch
from torch import nn

from scala_netsim.algorithms.common import (
    SGD,
    ClientData,
    SGDSettings,
    TrainerBase,
    TrainerSetup,
)
from scala_netsim.learn.contract import ConcatSplitTrainer, Forward, ServerStep, StepDemand
from scala_netsim.learn.flops import MetaPlanner
from scala_netsim.learn.losses import label_prior, log_prior, logit_adjusted_cross_entropy
from scala_netsim.learn.messages import ActivationMessage, GradientMessage
from scala_netsim.learn.models import init_layers_
from scala_netsim.learn.privacy import inversion_decoder
from scala_netsim.learn.training import grad_of

#: a split trainer class's own type (what its from_setup returns)
SplitTrainerT = TypeVar("SplitTrainerT", bound="SplitTrainer")


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
    def from_setup(cls: type[SplitTrainerT], setup: TrainerSetup, config: Any = None,
                   **extra: Any) -> SplitTrainerT:
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
        self.server_optimizer = SGD(self.server_model.parameters(), **self.optim_args)

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
                for m, g in zip(uploads, grad_of(activations).split(sizes), strict=True)]


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


def with_bottleneck(client_model: nn.Module, server_model: nn.Module, sample_shape: Sequence[int],
                    channels: int, stride: int, generator: torch.Generator
                    ) -> tuple[nn.Sequential, nn.Sequential]:
    """SCALA-PE's bottleneck at the cut (ResSFL's "C{channels}S{stride}" without ReLU): the
    client part ends in a 3x3 convolution to `channels` channels with `stride`, the server
    part starts with its mirror back to the cut's channels (a 3x3 convolution, or a stride-2
    transposed convolution); both initialised from `generator`."""
    cut_channels = MetaPlanner(client_model, tuple(sample_shape)).output_shape()[0]
    down = nn.Conv2d(cut_channels, channels, 3, stride=stride, padding=1)
    up = (nn.Conv2d(channels, cut_channels, 3, padding=1) if stride == 1 else
          nn.ConvTranspose2d(channels, cut_channels, 3, stride=2, padding=1, output_padding=1))
    init_layers_([down, up], generator)
    device = next(client_model.parameters()).device
    return (nn.Sequential(*client_model.children(), down.to(device)),
            nn.Sequential(up.to(device), *server_model.children()))


class SCALAPE(SCALA):
    """SCALA-PE (SCALA journal section 5.7, the two mechanisms of ResSFL, Li et al. CVPR
    2022): a bottleneck at the cut (with_bottleneck), which also shrinks what is sent, and on
    every client a simulated inversion model, a decoder trained alongside (Adam 1e-3) to
    rebuild the client's (normalised) images from its activations. The client-side loss is
    SCALA's minus `coef` times that decoder's reconstruction MSE, so the client model is
    pushed toward activations the decoder cannot invert (ResSFL's MSE form). Each client's
    decoder stays on the client (nothing sent; kept from round to round, in checkpoints);
    its work (the penalty's forward and backward, the decoder's own step) is metered into the
    client's backward FLOPs and timed as client computation."""

    def __init__(self, *args, coef: float = 0.3, decoder_width: int = 64,
                 decoder_seed: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.coef, self.decoder_width, self.decoder_seed = coef, decoder_width, decoder_seed
        self.activation_shape = self._planner.output_shape()
        self.decoders: dict[int, tuple[nn.Module, torch.optim.Optimizer]] = {}
        self._inputs: dict[int, torch.Tensor] = {}

    @classmethod
    def from_setup(cls, setup: TrainerSetup, config: Any = None, **extra: Any) -> SCALAPE:
        client, server = with_bottleneck(
            *setup.split_model(), setup.data.train_x.shape[1:], config.bottleneck_channels,
            config.bottleneck_stride, setup.torch_generator("model", "scala_pe_bottleneck"))
        return cls(client, server, setup.data, setup.sgd, setup.batch_seed(), coef=config.coef,
                   decoder_width=config.decoder_width,
                   decoder_seed=setup.seeds.seed("model", "scala_pe_decoder"))

    @classmethod
    def trained_client_part(cls, client: nn.Module, server: nn.Module,
                            sample_shape: Sequence[int], config: Any,
                            state: dict[str, torch.Tensor]) -> nn.Module:
        """The split model's client part ending in the bottleneck, as `state` left it."""
        client, _ = with_bottleneck(client, server, sample_shape, config.bottleneck_channels,
                                    config.bottleneck_stride, torch.Generator())
        return super().trained_client_part(client, server, sample_shape, config, state)

    def decoder(self, k: int) -> tuple[nn.Module, torch.optim.Optimizer]:
        """Client k's simulated inversion model and its optimiser (made at its first round)."""
        if k not in self.decoders:
            decoder = inversion_decoder(self.activation_shape, self.train_x.shape[1],
                                        self.train_x.shape[-1], self.decoder_width,
                                        sigmoid=False)
            init_layers_([decoder], torch.Generator().manual_seed(self.decoder_seed + k))
            decoder = decoder.to(self.train_x.device)
            self.decoders[k] = (decoder, torch.optim.Adam(decoder.parameters(), lr=1e-3))
        return self.decoders[k]

    def next_batch(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = super().next_batch(k)
        self._inputs[k] = x   # the decoder's target when the gradient comes back
        return x, y

    def client_backward(self, reply: GradientMessage) -> int:
        k = reply.client_id
        model, optimizer = self.slots[k]
        activations, images = self._pending.pop(k), self._inputs.pop(k)
        _, flops = self.meter.run(("client_backward", len(activations)), self._private_backward,
                                  model, activations, reply.gradients, images, *self.decoder(k))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return flops

    def _private_backward(self, model: nn.Module, activations: torch.Tensor,
                          gradients: torch.Tensor, images: torch.Tensor, decoder: nn.Module,
                          decoder_optimizer: torch.optim.Optimizer) -> None:
        decoder.eval()   # the penalty: the decoder as it is now, its statistics untouched
        penalty = -self.coef * nn.functional.mse_loss(decoder(activations), images)
        torch.autograd.backward([activations, penalty], [gradients, None],
                                inputs=list(model.parameters()))
        decoder.train()  # the simulated attacker learns from this step's pairs
        loss = nn.functional.mse_loss(decoder(activations.detach()), images)
        decoder_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        decoder_optimizer.step()

    def drop_client(self, k: int) -> None:
        super().drop_client(k)
        self._inputs.pop(k, None)

    def extra_state(self) -> dict:
        return {"decoders": {k: {"model": d.state_dict(), "optimizer": o.state_dict()}
                             for k, (d, o) in self.decoders.items()}}

    def load_extra_state(self, state: dict) -> None:
        self.decoders = {}
        for k, saved in state["decoders"].items():
            decoder, optimizer = self.decoder(int(k))
            decoder.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
