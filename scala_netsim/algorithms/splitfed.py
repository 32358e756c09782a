"""Split-learning baselines (SCALA-NOTES section 3): SplitFed V1/V2/V3, LLA-SFL, CS-SFL and
SFL with local loss. The math only; the SimPy engine decides when each step happens."""

import numpy as np
import torch
from torch import nn

from scala_netsim.algorithms.common import ClientSlots, TrainerBase, load_state_, state_tensors
from scala_netsim.algorithms.scala import SplitTrainerBase
from scala_netsim.losses import logit_adjusted_cross_entropy
from scala_netsim.messages import ActivationMessage, GradientMessage
from scala_netsim.models import init_linear_
from scala_netsim.training import evaluate, weighted_average_


class PerClientSplitTrainer(SplitTrainerBase):
    """Each client's activations are processed on their own, one server step per message.

    - `variant="v1"` (SplitFedV1; with `local_logit_adjust` LLA-SFL; with Fed-CBS selection
      CS-SFL): one server-side copy per participant, trained only on its activations; copies
      and client models are averaged (weighted by |D_k|) at the end of the round.
    - `variant="v2"` (SplitFedV2): ONE shared server model updated by each message at once, in
      the order they reach the server; client models averaged at the end of the round.
    - `variant="v3"` (SplitFedV3): server copies averaged; client models are never averaged,
      every client keeps its own (so no model is sent either way).
    """

    def __init__(self, client_model, server_model, *args, variant: str,
                 local_logit_adjust: bool = False, eval_clients=(), **kwargs):
        super().__init__(client_model, server_model, *args, **kwargs)
        if variant not in ("v1", "v2", "v3"):
            raise ValueError(f"variant must be v1, v2 or v3, got {variant!r}")
        self.variant = variant
        self.local_logit_adjust = local_logit_adjust
        self.sends_client_model = variant != "v3"
        if variant == "v2":
            # the one shared server model keeps its optimiser state across rounds
            self.server_optimizer = torch.optim.SGD(server_model.parameters(), **self.optim_args)
        else:
            self.server_slots = ClientSlots(server_model, self.optim_args)
            self._server_uploads = []
        self.own_models = {}             # v3: client id -> its own client-side model state
        self.eval_clients = list(eval_clients)

    def begin_round(self, selected) -> dict:
        sizes = super().begin_round(selected)
        if self.variant != "v2":
            self.server_slots.clear(len(selected))
            for k in selected:
                self.server_slots.load(k, state_tensors(self.server_model))
        return sizes

    def persistent_optimizers(self) -> dict:
        return {"server": self.server_optimizer} if self.variant == "v2" else {}

    def extra_state(self) -> dict:
        return {"own_models": dict(self.own_models)}

    def load_extra_state(self, state: dict) -> None:
        self.own_models = dict(state["own_models"])

    # --- v3: clients keep their own models -------------------------------------------
    def client_resume(self, k: int) -> None:
        """v3: client k continues from its own model (the initial one before its first round)."""
        self.slots.load(k, self.own_models.get(k, state_tensors(self.client_model)))

    def client_keep(self, k: int) -> None:
        """v3: client k keeps its trained model for its next round (a copy: slots are reused)."""
        self.own_models[k] = tuple(t.clone() for t in state_tensors(self.slots[k][0]))

    # --- server ----------------------------------------------------------------------
    def server_step_one(self, message: ActivationMessage):
        """One server step on one client's activations. -> (gradient message, FLOPs)."""
        return self.meter.run(("server_step", len(message.labels)), self._server_step_one,
                              message)

    def _server_step_one(self, message):
        k = message.client_id
        if self.variant == "v2":
            model, optimizer = self.server_model, self.server_optimizer
        else:
            model, optimizer = self.server_slots[k]
        activations = message.activations.detach().requires_grad_(True)
        logits = model(activations)
        if self.local_logit_adjust:
            loss = logit_adjusted_cross_entropy(logits, message.labels, self.client_log_priors[k])
        else:
            loss = nn.functional.cross_entropy(logits, message.labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        self.last_loss = loss.detach()
        return GradientMessage(k, message.local_iter, activations.grad)

    def end_round(self) -> None:
        if self.variant != "v3":
            self.aggregate_uploads(self.client_model)
        if self.variant != "v2":
            ids = list(self.client_batch_sizes)
            weighted_average_(self.server_model,
                              [state_tensors(self.server_slots[k][0]) for k in ids],
                              [self.sampler.num_samples(k) for k in ids])

    def evaluate(self, test_x, test_y):
        """v3: the mean over `eval_clients` of (own client model + averaged server model)."""
        if self.variant != "v3":
            return super().evaluate(test_x, test_y)
        model = nn.Sequential(self.slots.template, self.server_model)
        client_part = self.slots.template
        saved = state_tensors(client_part)
        saved = tuple(t.clone() for t in saved)
        results = []
        for k in self.eval_clients:
            load_state_(client_part, self.own_models.get(k, saved))
            results.append(evaluate(model, test_x, test_y, self.num_classes))
        load_state_(client_part, saved)
        acc = float(np.mean([r[0] for r in results]))
        per_class = np.mean([r[1] for r in results], axis=0)
        return acc, per_class, float(np.mean([r[2] for r in results]))


class ClientWithAuxHead(nn.Module):
    """A client-side model with a small auxiliary classifier at the cut layer
    (SFL with local loss, Han et al. 2021): Flatten + Linear."""

    def __init__(self, client_model: nn.Module, aux_linear: nn.Linear):
        super().__init__()
        self.body = client_model
        self.aux = nn.Sequential(nn.Flatten(), aux_linear)

    def forward(self, x):
        activations = self.body(x)
        return activations, self.aux(activations)


class LocalLossSplitTrainer(TrainerBase):
    """SFL with local loss: client k updates its model and aux head with a local
    cross-entropy and uploads activations and labels; it never waits for (nor receives) a
    gradient. The server trains its one shared part on the activations as they arrive. Client
    models and aux heads are averaged (weighted by |D_k|) at the end of the round."""

    sends_client_model = True

    def __init__(self, client_model: nn.Module, server_model: nn.Module, train_x, train_y,
                 client_indices, num_classes: int, *, aux_generator: torch.Generator, **kwargs):
        with torch.no_grad():
            numel = client_model(train_x[:1]).numel()
        linear = init_linear_(nn.Linear(numel, num_classes), aux_generator)
        self.client_template = ClientWithAuxHead(client_model, linear.to(train_x.device))
        self.client_model = client_model
        self.server_model = server_model
        super().__init__(train_x, train_y, client_indices, num_classes, **kwargs)
        self.server_optimizer = torch.optim.SGD(server_model.parameters(), **self.optim_args)

    def persistent_modules(self) -> dict:
        return {"client": self.client_template, "server": self.server_model}

    def persistent_optimizers(self) -> dict:
        return {"server": self.server_optimizer}

    def client_local_step(self, k: int, local_iter: int):
        """Client k's step on its local loss. -> (activation message, forward FLOPs, backward FLOPs)."""
        x, y = self.next_batch(k)
        model, optimizer = self.slots[k]
        (activations, aux_logits), forward_flops = self.meter.run(
            ("client_forward", len(y)), model, x)
        loss = nn.functional.cross_entropy(aux_logits, y)
        _, backward_flops = self.meter.run(("client_backward", len(y)), loss.backward)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return ActivationMessage(k, local_iter, activations.detach(), y), forward_flops, backward_flops

    def server_consume(self, message: ActivationMessage) -> int:
        """One step of the shared server part on one client's activations. -> FLOPs."""
        _, flops = self.meter.run(("server_step", len(message.labels)), self._server_step,
                                  message)
        return flops

    def _server_step(self, message):
        loss = nn.functional.cross_entropy(self.server_model(message.activations), message.labels)
        self.server_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.server_optimizer.step()
        self.last_loss = loss.detach()

    def global_model(self) -> nn.Module:
        return nn.Sequential(self.client_model, self.server_model)
