"""Split-learning baselines (SCALA-NOTES section 3): SplitFed V1/V2/V3, LLA-SFL and SFL with
local loss (CS-SFL is SplitFedV1 with Fed-CBS selection, see the registry). The math only; the
SimPy engine decides when each step happens."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from scala_netsim.algorithms.common import (
    SGD,
    ClientData,
    ClientSlots,
    SGDSettings,
    TrainerBase,
    TrainerSetup,
    load_state_,
    state_tensors,
)
from scala_netsim.algorithms.scala import SplitTrainer
from scala_netsim.learn.contract import (
    Evaluation,
    KeptModelSplitTrainer,
    LocalLossTrainer,
    LocalStep,
    PerClientSplitTrainer,
    ServerStep,
    StepDemand,
)
from scala_netsim.learn.flops import MetaPlanner
from scala_netsim.learn.losses import logit_adjusted_cross_entropy
from scala_netsim.learn.messages import ActivationMessage, GradientMessage
from scala_netsim.learn.models import init_linear_
from scala_netsim.learn.training import evaluate, grad_of


class PerClientServer(SplitTrainer):
    """Each client's activations get their own server step: `server_step` receives one
    upload, steps the server model that serves that client and replies with its gradient."""

    @abstractmethod
    def server_model_for(self, k: int) -> tuple[nn.Module, torch.optim.Optimizer]:
        """The server model (and its optimiser) that serves client k."""

    def server_loss(self, k: int, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The server's loss on client k's minibatch: cross-entropy."""
        return nn.functional.cross_entropy(logits, labels)

    def server_step(self, uploads: Sequence[ActivationMessage]) -> ServerStep:
        (upload,) = uploads
        reply, flops = self.meter.run(("server_step", len(upload.labels)), self._server_step,
                                      upload)
        return ServerStep([reply], flops)

    def _server_step(self, upload: ActivationMessage) -> GradientMessage:
        k = upload.client_id
        model, optimizer = self.server_model_for(k)
        activations = upload.activations.detach().requires_grad_(True)
        loss = self.server_loss(k, model(activations), upload.labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        self.note_loss(loss)
        return self.wire.down(GradientMessage(k, upload.local_iter, grad_of(activations)))


class ServerCopies(PerClientServer):
    """One server-side copy per participant, trained only on its activations, the copies
    averaged (weighted by |D_k|) at the end of the round; their optimisers start fresh, or
    (optimizer_state: persistent) each takes up the state the copy serving the same client
    had at the end of that client's previous round. A copy sees only its client's steps, so
    the order of the server steps does not matter."""

    server_order_matters = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.server_slots = ClientSlots(self.server_model, self.optim_args,
                                        self.keep_optimizer_state)

    def kept_slots(self) -> dict[str, ClientSlots]:
        return {**super().kept_slots(), "server": self.server_slots}

    def begin_round(self, selected: Sequence[int]) -> None:
        super().begin_round(selected)
        self.server_slots.clear(len(selected))
        for k in selected:
            self.server_slots.load(k, state_tensors(self.server_model))

    def server_model_for(self, k: int) -> tuple[nn.Module, torch.optim.Optimizer]:
        return self.server_slots[k]

    def average_server_copies(self) -> None:
        """The server copies of the clients that were not dropped, |D_k|-weighted."""
        ids = self.contributors()
        self.average_into("server", self.server_model,
                          ids, [state_tensors(self.server_slots[k][0]) for k in ids])


class SplitFedV1(ServerCopies, PerClientSplitTrainer):
    """SplitFedV1: server copies and client models both averaged at the end of the round."""

    def end_round(self) -> None:
        self.aggregate_uploads(self.client_model)
        self.average_server_copies()


class LLASFL(SplitFedV1):
    """LLA-SFL: SplitFedV1 whose server loss adjusts the logits with client k's local prior."""

    def server_loss(self, k: int, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return logit_adjusted_cross_entropy(logits, labels, self.client_log_priors[k])


class SharedServer(PerClientServer):
    """ONE shared server model updated by each upload at once, in the order they reach the
    server, keeping its optimiser state: SplitFedV2's server, which async_sfl's
    (scala_netsim.algorithms.async_trainers) is too."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.server_optimizer = SGD(self.server_model.parameters(), **self.optim_args)

    def server_model_for(self, k: int) -> tuple[nn.Module, torch.optim.Optimizer]:
        return self.server_model, self.server_optimizer

    def persistent_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"server": self.server_optimizer}


class SplitFedV2(SharedServer, PerClientSplitTrainer):
    """SplitFedV2: ONE shared server model updated by each upload at once, in the order they
    reach the server (SharedServer); it keeps its optimiser state across rounds. Client
    models averaged at the end of the round."""


class SplitFedV3(ServerCopies, KeptModelSplitTrainer):
    """SplitFedV3: server copies averaged; client models are never averaged, every client
    keeps its own (so no model is sent either way). Test accuracy is the mean over
    `eval_clients` clients of their own client model followed by the averaged server model."""

    def __init__(self, *args, eval_clients: Sequence[int] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.own_models: dict[int, tuple[torch.Tensor, ...]] = {}
        self.eval_clients = list(eval_clients)

    @classmethod
    def from_setup(cls, setup: TrainerSetup, config: Any = None, **extra: Any) -> SplitFedV3:
        rng = setup.seeds.numpy("selection", "splitfed_v3_eval_clients")
        num_clients = setup.data.num_clients
        count = min(config.eval_clients, num_clients)
        eval_clients = sorted(rng.choice(num_clients, count, replace=False))
        return super().from_setup(setup, config, eval_clients=eval_clients, **extra)

    def extra_state(self) -> dict:
        return {"own_models": dict(self.own_models)}

    def load_extra_state(self, state: dict) -> None:
        self.own_models = dict(state["own_models"])

    def client_resume(self, k: int) -> None:
        """Client k continues from its own model (the initial one before its first round)."""
        self.slots.load(k, self.own_models.get(k, state_tensors(self.client_model)))

    def client_keep(self, k: int) -> None:
        """Client k keeps its trained model for its next round (a copy: slots are reused)."""
        self.own_models[k] = tuple(t.clone() for t in state_tensors(self.slots[k][0]))

    def end_round(self) -> None:
        self.average_server_copies()

    def evaluate(self, test_x: torch.Tensor, test_y: torch.Tensor) -> Evaluation:
        model = nn.Sequential(self.slots.template, self.server_model)
        client_part = self.slots.template
        saved = tuple(t.clone() for t in state_tensors(client_part))
        results = []
        for k in self.eval_clients:
            load_state_(client_part, self.own_models.get(k, saved))
            results.append(evaluate(model, test_x, test_y, self.num_classes))
        load_state_(client_part, saved)
        return Evaluation(float(np.mean([r[0] for r in results])),
                          np.mean([r[1] for r in results], axis=0),
                          float(np.mean([r[2] for r in results])))


class ClientWithAuxHead(nn.Module):
    """A client-side model with a small auxiliary classifier at the cut layer
    (SFL with local loss, Han et al. 2021): Flatten + Linear."""

    def __init__(self, client_model: nn.Module, aux_linear: nn.Linear) -> None:
        super().__init__()
        self.body = client_model
        self.aux = nn.Sequential(nn.Flatten(), aux_linear)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        activations = self.body(x)
        return activations, self.aux(activations)


class SFLLocalLoss(TrainerBase, LocalLossTrainer):
    """SFL with local loss: client k updates its model and aux head with a local
    cross-entropy and uploads activations and labels; it never waits for (nor receives) a
    gradient. The server trains its part on the activations: one shared part stepped on each
    upload in the order the server takes them, its optimiser kept across rounds (`server`
    shared), or a copy per participant trained on its client's activations alone, the copies
    averaged (weighted by |D_k|) at the end of the round (per_client, SplitFedV1's way). Client
    models and aux heads are averaged (weighted by |D_k|) at the end of the round."""

    def __init__(self, client_model: nn.Module, server_model: nn.Module, data: ClientData,
                 sgd: SGDSettings, batch_seed: int, *,
                 aux_generator: torch.Generator, per_client_server: bool = False) -> None:
        # Sized on the meta device: a real forward would move BatchNorm's running statistics.
        cut_shape = MetaPlanner(client_model, data.train_x.shape[1:],
                                data.train_x.dtype).output_shape()
        linear = init_linear_(nn.Linear(math.prod(cut_shape), data.num_classes), aux_generator)
        super().__init__(ClientWithAuxHead(client_model, linear.to(data.train_x.device)), data,
                         sgd, batch_seed)
        self.client_model = client_model
        self.server_model = server_model
        self.server_optimizer = SGD(server_model.parameters(), **self.optim_args)
        #: per_client: the round's server copies (None: the one shared server part)
        self.server_slots = (ClientSlots(server_model, self.optim_args,
                                         sgd.keep_optimizer_state)
                             if per_client_server else None)
        self._planner = MetaPlanner(self.client_template, data.train_x.shape[1:],
                                    data.train_x.dtype, activations_of=lambda out: out[0],
                                    logits_of=lambda out: out[1])

    @classmethod
    def from_setup(cls, setup: TrainerSetup, config: Any = None) -> SFLLocalLoss:
        return cls(*setup.split_model(), setup.data, setup.sgd, setup.batch_seed(),
                   aux_generator=setup.torch_generator("model", "sfl_aux_head"),
                   per_client_server=config is not None and config.server == "per_client")

    @classmethod
    def learns_server_order(cls, config: Any) -> bool:
        """Only the shared server part learns from the order of the steps."""
        return config is None or config.server == "shared"

    def persistent_modules(self) -> dict[str, nn.Module]:
        return {"client": self.client_template, "server": self.server_model}

    def persistent_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {} if self.server_slots is not None else {"server": self.server_optimizer}

    def kept_slots(self) -> dict[str, ClientSlots]:
        return {**super().kept_slots(),
                **({} if self.server_slots is None else {"server": self.server_slots})}

    def begin_round(self, selected: Sequence[int]) -> None:
        super().begin_round(selected)
        if self.server_slots is not None:
            self.server_slots.clear(len(selected))
            for k in selected:
                self.server_slots.load(k, state_tensors(self.server_model))

    def end_round(self) -> None:
        super().end_round()
        if self.server_slots is not None:   # the copies of the clients not dropped
            ids = self.contributors()
            self.average_into("server", self.server_model,
                              ids, [state_tensors(self.server_slots[k][0]) for k in ids])

    @classmethod
    def trained_client_part(cls, client: nn.Module, server: nn.Module,
                            sample_shape: Sequence[int], config: Any,
                            state: dict[str, torch.Tensor]) -> nn.Module:
        """The client body (what goes up) of `state`, which also holds the aux head."""
        body = {k.removeprefix("body."): v for k, v in state.items() if k.startswith("body.")}
        return super().trained_client_part(client, server, sample_shape, config, body)

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        """Client k's step on its local loss; it uploads the step's activations."""
        x, y = self.next_batch(k)
        model, optimizer = self.slots[k]
        (activations, aux_logits), forward_flops = self.meter.run(
            ("client_forward", len(y)), model, x)
        loss = nn.functional.cross_entropy(aux_logits, y)
        _, backward_flops = self.meter.run(("client_backward", len(y)), loss.backward)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return LocalStep(forward_flops, backward_flops,
                         self.wire.up(ActivationMessage(k, local_iter, activations.detach(), y)))

    def server_step(self, uploads: Sequence[ActivationMessage]) -> ServerStep:
        """One step of the shared server part on one client's activations; no reply."""
        (upload,) = uploads
        _, flops = self.meter.run(("server_step", len(upload.labels)), self._server_step,
                                  upload)
        return ServerStep([], flops)

    def _server_step(self, upload: ActivationMessage) -> None:
        model, optimizer = (
            (self.server_model, self.server_optimizer) if self.server_slots is None
            else self.server_slots[upload.client_id])
        loss = nn.functional.cross_entropy(model(upload.activations), upload.labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        self.note_loss(loss)

    def step_demand(self, k: int) -> StepDemand:
        """Activations and labels up after a whole local step; the model down (nothing else
        comes down)."""
        batch = self.client_batch_sizes[k]
        _, activation_bytes = self._planner.forward(batch)
        label_bytes = batch * self.train_y.element_size()
        activation_bytes = self.wire.up_bytes(activation_bytes, self.train_x.element_size())
        return StepDemand(activation_bytes + label_bytes, self.model_bytes(),
                          self._planner.train_step(batch))

    def global_model(self) -> nn.Module:
        return nn.Sequential(self.client_model, self.server_model)
