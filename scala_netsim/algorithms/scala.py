"""SCALA and CA-SFL: split federated learning with concatenated activations
(SCALA-NOTES section 2). The math only; the SimPy engine decides when each step happens.
"""

import copy

import torch
from torch import nn

from scala_netsim.flops import FlopMeter
from scala_netsim.losses import label_prior, log_prior, logit_adjusted_cross_entropy
from scala_netsim.messages import ActivationMessage, GradientMessage, ModelMessage
from scala_netsim.training import ClientSampler, apportion_batch_sizes, weighted_average_


class ConcatSplitTrainer:
    """One server-side model trained on the concatenation of all participating clients'
    activations, one server step per local iteration.

    With `logit_adjust=True` this is SCALA: the server's loss adjusts the logits with the prior
    of the concatenated batch, and the gradient returned to client k is that of client k's own
    loss adjusted with its local prior P_k (eq. 15). With `logit_adjust=False` it is CA-SFL
    (Minibatch-SFL): plain cross-entropy on both sides.
    """

    def __init__(self, client_model: nn.Module, server_model: nn.Module, train_x, train_y,
                 client_indices, num_classes: int, *, batch_size: int, lr: float,
                 momentum: float, weight_decay: float, logit_adjust: bool,
                 generator: torch.Generator):
        self.client_model = client_model
        self.server_model = server_model
        self.train_x, self.train_y = train_x, train_y
        self.num_classes = num_classes
        self.batch_size = batch_size
        self.logit_adjust = logit_adjust
        self._optim_args = dict(lr=lr, momentum=momentum, weight_decay=weight_decay)
        device = train_x.device
        self.sampler = ClientSampler(client_indices, generator, device)
        # The server-side optimiser keeps its momentum across rounds (SCALA-NOTES section 1).
        self.server_optimizer = torch.optim.SGD(server_model.parameters(), **self._optim_args)
        self.client_log_priors = torch.stack([
            log_prior(label_prior(train_y[torch.as_tensor(ix, device=device)], num_classes))
            for ix in client_indices
        ])
        self.meter = FlopMeter()
        self._slot_models = []           # reusable client-model copies, one per participant
        self._clients = {}               # client id -> (model, optimiser) this round
        self._pending = {}               # client id -> activations whose graph awaits gradients
        self._uploads = []               # client models received at the end of the round
        self.client_batch_sizes = {}
        self.last_server_loss = None     # loss of the latest server step (a 0-d tensor)

    # --- round structure -------------------------------------------------------------
    def begin_round(self, selected) -> dict:
        """Assign each selected client its batch size B_k proportional to |D_k|."""
        sizes = apportion_batch_sizes([self.sampler.num_samples(k) for k in selected],
                                      self.batch_size)
        self.client_batch_sizes = dict(zip(selected, sizes))
        while len(self._slot_models) < len(selected):
            self._slot_models.append(copy.deepcopy(self.client_model))
        self._clients.clear()
        self._uploads.clear()
        return dict(self.client_batch_sizes)

    def client_model_download(self, k: int) -> ModelMessage:
        """The global client-side model as sent to client k."""
        return ModelMessage(k, tuple(t.detach() for t in self.client_model.state_dict().values()))

    @torch.no_grad()
    def client_receive_model(self, message: ModelMessage) -> None:
        """Client k loads the downloaded model; its optimiser starts fresh each round."""
        model = self._slot_models[len(self._clients)]
        for dst, src in zip(model.state_dict().values(), message.tensors):
            dst.copy_(src)
        optimizer = torch.optim.SGD(model.parameters(), **self._optim_args)
        self._clients[message.client_id] = (model, optimizer)

    def client_forward(self, k: int, local_iter: int):
        """Client k draws a minibatch and computes A_k = h(w_c,k; X_k). -> (message, FLOPs)."""
        batch_size = self.client_batch_sizes[k]
        idx = self.sampler.next_batch(k, batch_size)
        model, _ = self._clients[k]
        activations, flops = self.meter.run(("client_forward", batch_size), model,
                                            self.train_x[idx])
        self._pending[k] = activations
        return ActivationMessage(k, local_iter, activations.detach(), self.train_y[idx]), flops

    def server_step(self, messages):
        """One SGD step of the server-side model on the concatenated activations.
        -> (gradient messages in the order of `messages`, FLOPs)."""
        total = sum(len(m.labels) for m in messages)
        grads, flops = self.meter.run(("server_step", total), self._server_step, messages)
        return grads, flops

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
        activation_grads = activations.grad
        self.server_optimizer.step()
        self.last_server_loss = server_loss.detach()
        return [GradientMessage(m.client_id, m.local_iter, g)
                for m, g in zip(messages, activation_grads.split(sizes))]

    def client_backward(self, message: GradientMessage) -> int:
        """Client k backpropagates G_k through h and takes one SGD step. -> FLOPs."""
        k = message.client_id
        model, optimizer = self._clients[k]
        activations = self._pending.pop(k)
        _, flops = self.meter.run(("client_backward", self.client_batch_sizes[k]),
                                  activations.backward, message.gradients)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return flops

    def client_model_upload(self, k: int) -> ModelMessage:
        """Client k's trained client-side model, sent up after T local iterations."""
        model, _ = self._clients[k]
        return ModelMessage(k, tuple(t.detach() for t in model.state_dict().values()))

    def server_receive_model(self, message: ModelMessage) -> None:
        self._uploads.append(message)

    def end_round(self) -> None:
        """w_c = sum_k |D_k| w_c,k / sum_k |D_k| over the uploaded client models."""
        weights = [self.sampler.num_samples(m.client_id) for m in self._uploads]
        weighted_average_(self.client_model, [m.tensors for m in self._uploads], weights)

    def global_model(self) -> nn.Module:
        """The full model (global client part, then server part) for evaluation."""
        return nn.Sequential(self.client_model, self.server_model)
