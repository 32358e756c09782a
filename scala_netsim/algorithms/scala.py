"""SCALA and CA-SFL: split federated learning with concatenated activations
(SCALA-NOTES section 2). The math only; the SimPy engine decides when each step happens.
"""

import torch
from torch import nn

from scala_netsim.algorithms.common import TrainerBase
from scala_netsim.losses import label_prior, log_prior, logit_adjusted_cross_entropy
from scala_netsim.messages import ActivationMessage, GradientMessage


class SplitTrainerBase(TrainerBase):
    """Client side of split learning: client k computes A_k = h(w_c,k; X_k), later receives
    dl/dA_k and takes one SGD step on w_c,k."""

    def __init__(self, client_model: nn.Module, server_model: nn.Module, *args, **kwargs):
        self.client_template = client_model
        self.client_model = client_model
        self.server_model = server_model
        super().__init__(*args, **kwargs)
        self._pending = {}               # client id -> activations whose graph awaits gradients

    def client_forward(self, k: int, local_iter: int):
        """Client k draws a minibatch and computes its activations. -> (message, FLOPs)."""
        x, y = self.next_batch(k)
        model, _ = self.slots[k]
        activations, flops = self.meter.run(("client_forward", len(y)), model, x)
        self._pending[k] = activations
        return ActivationMessage(k, local_iter, activations.detach(), y), flops

    def client_backward(self, message: GradientMessage) -> int:
        """Client k backpropagates G_k through its model and takes one SGD step. -> FLOPs."""
        k = message.client_id
        _, optimizer = self.slots[k]
        activations = self._pending.pop(k)
        _, flops = self.meter.run(("client_backward", len(activations)),
                                  activations.backward, message.gradients)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return flops

    def global_model(self) -> nn.Module:
        """The full model (global client part, then server part) for evaluation."""
        return nn.Sequential(self.client_model, self.server_model)

    def persistent_modules(self) -> dict:
        return {"client": self.client_template, "server": self.server_model}


class ConcatSplitTrainer(SplitTrainerBase):
    """One server-side model trained on the concatenation of all participating clients'
    activations, one server step per local iteration.

    With `logit_adjust=True` this is SCALA: the server's loss adjusts the logits with the prior
    of the concatenated batch, and the gradient returned to client k is that of client k's own
    loss adjusted with its local prior P_k (eq. 15). With `logit_adjust=False` it is CA-SFL
    (Minibatch-SFL): plain cross-entropy on both sides.
    """

    def __init__(self, client_model, server_model, *args, logit_adjust: bool, **kwargs):
        super().__init__(client_model, server_model, *args, **kwargs)
        self.logit_adjust = logit_adjust
        # The server-side optimiser keeps its momentum across rounds (SCALA-NOTES section 1).
        self.server_optimizer = torch.optim.SGD(server_model.parameters(), **self.optim_args)

    def persistent_optimizers(self) -> dict:
        return {"server": self.server_optimizer}

    def server_step(self, messages):
        """One SGD step of the server-side model on the concatenated activations.
        -> (gradient messages in the order of `messages`, FLOPs)."""
        total = sum(len(m.labels) for m in messages)
        return self.meter.run(("server_step", total), self._server_step, messages)

    def _server_step(self, messages):
        activations = torch.cat([m.activations for m in messages]).requires_grad_(True)
        labels = torch.cat([m.labels for m in messages])
        sizes = [len(m.labels) for m in messages]
        logits = self.server_model(activations)
        # Client k's loss is the mean over its own slice, so sum_k l_k weights each sample by
        # 1/B_k; the server forward is per sample, so d(sum_k l_k)/dA_k = dl_k/dA_k.
        counts = torch.as_tensor(sizes, device=labels.device)
        sample_weight = torch.repeat_interleave(1.0 / counts.to(logits.dtype), counts)
        if self.logit_adjust:
            server_loss = logit_adjusted_cross_entropy(
                logits, labels, log_prior(label_prior(labels, self.num_classes)))
            owner = torch.repeat_interleave(
                torch.as_tensor([m.client_id for m in messages], device=labels.device), counts)
            per_sample = logit_adjusted_cross_entropy(
                logits, labels, self.client_log_priors[owner], reduction="none")
        else:
            per_sample = nn.functional.cross_entropy(logits, labels, reduction="none")
            server_loss = per_sample.mean()
        clients_loss = (per_sample * sample_weight).sum()
        # Two backward passes over the one graph: weights from the server's loss, then the
        # activations' gradient (input-only, no weight gradients) from the clients' losses.
        self.server_optimizer.zero_grad(set_to_none=True)
        server_loss.backward(retain_graph=True, inputs=list(self.server_model.parameters()))
        clients_loss.backward(inputs=[activations])
        self.server_optimizer.step()
        self.last_loss = server_loss.detach()
        return [GradientMessage(m.client_id, m.local_iter, g)
                for m, g in zip(messages, activations.grad.split(sizes))]
