"""Federated baselines (SCALA-NOTES section 4): the whole model trains on the client.

FedAvg, FedProx, FedLC, FedLA, FedDyn, FedDecorr (one trainer, the local loss differs) and
FedConcat. Fed-CBS is FedAvg with another client selection (scala_netsim.selection). The
math only; the SimPy engine decides when each step happens."""

import numpy as np
import torch
from scipy.cluster.vq import kmeans2
from torch import nn

from scala_netsim.algorithms.common import ClientSlots, TrainerBase, state_tensors
from scala_netsim.messages import ModelMessage
from scala_netsim.models import init_linear_
from scala_netsim.training import evaluate, weighted_average_

LOCAL_LOSSES = ("fedavg", "fedprox", "fedlc", "fedla", "feddyn", "feddecorr")


def fedlc_calibration(label_counts: torch.Tensor, tau: float) -> torch.Tensor:
    """FedLC's logit shift tau * n_{k,y}^(-1/4), +inf for classes absent locally (so the
    calibrated logit f_y - shift is -inf: excluded from the softmax) [FedLC code]."""
    counts = label_counts.to(torch.float32)
    return torch.where(counts > 0, tau * counts.clamp_min(1).pow(-0.25),
                       torch.full_like(counts, float("inf")))


def decorrelation_penalty(features: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """FedDecorr: mean squared off-diagonal entry of the batch correlation matrix of the
    features (standardised per dimension over the batch)."""
    n, d = features.shape
    z = features - features.mean(0)
    z = z / (z.pow(2).mean(0) + eps).sqrt()
    corr = z.T @ z / n
    off_diagonal = corr.pow(2).sum() - corr.diagonal().pow(2).sum()
    return off_diagonal / (d * (d - 1))


class FederatedTrainer(TrainerBase):
    """Full-model local training, T SGD steps per round, weighted averaging.

    `loss` picks the local objective: fedavg (cross-entropy), fedprox (+ mu/2 ||w - w_g||^2),
    fedlc (logits f_y - tau n_{k,y}^(-1/4)), fedla (logits + log P_k), feddyn (dynamic
    regulariser, Acar et al. 2021), feddecorr (+ coef * decorrelation penalty).
    """

    sends_client_model = True

    def __init__(self, features: nn.Module, head: nn.Module, *args, loss: str = "fedavg",
                 mu: float = 0.01, tau: float = 1.0, dyn_alpha: float = 0.01,
                 decorr_coef: float = 0.1, **kwargs):
        if loss not in LOCAL_LOSSES:
            raise ValueError(f"loss must be one of {LOCAL_LOSSES}, got {loss!r}")
        self.features, self.head = features, head
        self.model = nn.Sequential(features, head)
        self.client_template = self.model
        super().__init__(*args, **kwargs)
        self.loss_kind, self.mu, self.tau = loss, mu, tau
        self.dyn_alpha, self.decorr_coef = dyn_alpha, decorr_coef
        self._global_params = []
        if loss == "feddyn":
            self._dyn_client_grads = {}  # client id -> its linear term (list of tensors)
            self._dyn_server_h = [torch.zeros_like(p) for p in self.model.parameters()]
            self._num_clients = len(self.client_label_counts)
        if loss in ("fedprox", "feddyn"):
            # the coef * w part of the regulariser's gradient rides on the optimiser's fused
            # weight decay (grad + wd * w); `_add_regulariser_grad_` subtracts the anchor
            coef = mu if loss == "fedprox" else dyn_alpha
            args = {**self.optim_args, "weight_decay": self.optim_args["weight_decay"] + coef}
            self.slots = ClientSlots(self.client_template, args)

    def extra_state(self) -> dict:
        if self.loss_kind != "feddyn":
            return {}
        return {"client_grads": dict(self._dyn_client_grads), "server_h": list(self._dyn_server_h)}

    def load_extra_state(self, state: dict) -> None:
        if self.loss_kind == "feddyn":
            self._dyn_client_grads = dict(state["client_grads"])
            self._dyn_server_h = list(state["server_h"])

    def begin_round(self, selected) -> dict:
        self._global_params = [p.detach().clone() for p in self.model.parameters()]
        self._anchors = {}
        return super().begin_round(selected)

    def _anchor(self, k):
        """coef * w_g (+ h_k for FedDyn), fixed for client k's round, so that a step adds the
        regulariser's gradient coef * w - anchor with two in-place operations per tensor."""
        key = k if self.loss_kind == "feddyn" else None   # FedProx: one anchor for all
        if key not in self._anchors:
            coef = self.mu if self.loss_kind == "fedprox" else self.dyn_alpha
            anchor = [coef * g for g in self._global_params]
            if self.loss_kind == "feddyn" and k in self._dyn_client_grads:
                anchor = [a.add_(h) for a, h in zip(anchor, self._dyn_client_grads[k])]
            self._anchors[key] = anchor
        return self._anchors[key]

    def client_local_step(self, k: int, local_iter: int):
        """One local SGD step of client k. -> (forward FLOPs, backward FLOPs)."""
        x, y = self.next_batch(k)
        model, optimizer = self.slots[k]
        body, head = model
        (features, logits), forward_flops = self.meter.run(
            ("client_forward", len(y)), lambda inp: (lambda f: (f, head(f)))(body(inp)), x)
        loss = self._local_loss(k, features, logits, y)
        _, backward_flops = self.meter.run(("client_backward", len(y)), loss.backward)
        self._add_regulariser_grad_(k, model)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.last_loss = loss.detach()
        return forward_flops, backward_flops

    def _local_loss(self, k, features, logits, labels):
        """The data term of client k's local objective (the weight regularisers of FedProx and
        FedDyn enter through their gradient, `_add_regulariser_grad_`)."""
        ce = nn.functional.cross_entropy
        kind = self.loss_kind
        if kind == "fedlc":
            calibration = fedlc_calibration(self.client_label_counts[k], self.tau)
            return ce(logits - calibration, labels)
        if kind == "fedla":
            return ce(logits + self.client_log_priors[k], labels)
        loss = ce(logits, labels)
        if kind == "feddecorr":
            loss = loss + self.decorr_coef * decorrelation_penalty(features)
        return loss

    @torch.no_grad()
    def _add_regulariser_grad_(self, k, model) -> None:
        """Add the gradient of the weight regulariser in closed form (no autograd graph over
        the 2.5 M weights): FedProx's and FedDyn's mu/2 ||w - w_g||^2 gives mu (w - w_g);
        FedDyn's linear term -<w, h_k> gives -h_k. Together: mu w - anchor_k, of which the
        optimiser adds mu w as weight decay (see __init__) and this subtracts the anchor."""
        if self.loss_kind not in ("fedprox", "feddyn"):
            return
        for p, anchor in zip(model.parameters(), self._anchor(k)):
            p.grad.sub_(anchor)

    def client_model_upload(self, k: int) -> ModelMessage:
        if self.loss_kind == "feddyn":
            # grad L_k(w_k^t) = grad L_k(w_k^{t-1}) - alpha (w_k^t - w^{t-1}), kept on the client
            params = [p.detach() for p in self.slots[k][0].parameters()]
            if k not in self._dyn_client_grads:
                self._dyn_client_grads[k] = [torch.zeros_like(p) for p in params]
            with torch.no_grad():   # in place: this client's terms are ~10 MB a round each
                for h, p, g in zip(self._dyn_client_grads[k], params, self._global_params):
                    h.sub_(p, alpha=self.dyn_alpha).add_(g, alpha=self.dyn_alpha)
        return super().client_model_upload(k)

    def end_round(self) -> None:
        if self.loss_kind != "feddyn":
            self.aggregate_uploads(self.model)
            return
        # FedDyn server: h <- h - alpha/K sum_k (w_k - w); w <- mean_k w_k - h/alpha
        uploads = [m.tensors for m in self._uploads]
        with torch.no_grad():
            for i, (p, g, h) in enumerate(zip(self.model.parameters(), self._global_params,
                                              self._dyn_server_h)):
                total = uploads[0][i].clone()
                for u in uploads[1:]:
                    total.add_(u[i])
                # sum_k (w_k - w) = total - n w
                h.sub_(total - len(uploads) * g, alpha=self.dyn_alpha / self._num_clients)
                p.copy_(total.div_(len(uploads))).sub_(h, alpha=1 / self.dyn_alpha)

    def global_model(self) -> nn.Module:
        return self.model


class FedConcatTrainer(TrainerBase):
    """FedConcat (Diao, Li and He, AAAI 2024).

    Clients are clustered by K-means on their normalised label distributions. For the first
    `encoder_rounds` rounds each participant trains its cluster's model (FedAvg inside each
    cluster). Then the K feature extractors are frozen and concatenated, every client gets them
    once, computes the features of its data once, and a linear classifier on the concatenated
    features is trained with FedAvg, only the classifier going up and down each round.

    Before the classifier stage there is no single global model: the reported test accuracy
    is then the mean of the cluster models' accuracies weighted by the clusters' data.
    """

    sends_client_model = True

    def __init__(self, cluster_models, *args, encoder_rounds: int,
                 cluster_rng: np.random.Generator, classifier_generator: torch.Generator,
                 **kwargs):
        self.cluster_models = [nn.Sequential(f, h) for f, h in cluster_models]
        self.client_template = self.cluster_models[0]
        super().__init__(*args, **kwargs)
        counts = self.client_label_counts.cpu().numpy().astype(float)
        distributions = counts / counts.sum(axis=1, keepdims=True)
        num_clusters = len(self.cluster_models)
        _, self.cluster_of = kmeans2(distributions, num_clusters, minit="++", seed=cluster_rng)
        self.encoder_rounds = encoder_rounds
        feature_dim = self.cluster_models[0][1].in_features
        device = self.train_x.device
        self.classifier = init_linear_(nn.Linear(num_clusters * feature_dim, self.num_classes),
                                       classifier_generator).to(device)
        self.classifier_slots = ClientSlots(self.classifier, self.optim_args)
        self.round = 0
        self._has_encoders = set()
        self._features = torch.zeros(len(self.train_y), num_clusters * feature_dim, device=device)
        self._has_features = set()

    def persistent_modules(self) -> dict:
        modules = {f"cluster{c}": m for c, m in enumerate(self.cluster_models)}
        modules["classifier"] = self.classifier
        return modules

    def extra_state(self) -> dict:
        return {"round": self.round, "has_encoders": sorted(self._has_encoders),
                "has_features": sorted(self._has_features)}

    def load_extra_state(self, state: dict) -> None:
        self.round = state["round"]
        self._has_encoders = set(state["has_encoders"])
        for k in state["has_features"]:  # recomputed (same values), not stored: 4 B x 1280 a sample
            self._extract_features(k)

    @property
    def classifier_stage(self) -> bool:
        return self.round > self.encoder_rounds

    def concatenated_features(self, x):
        return self.global_model()[0](x)

    def begin_round(self, selected) -> dict:
        self.round += 1
        sizes = super().begin_round(selected)
        self.classifier_slots.clear(len(selected))
        return sizes

    def client_model_download(self, k: int) -> ModelMessage:
        if not self.classifier_stage:
            return ModelMessage(k, state_tensors(self.cluster_models[self.cluster_of[k]]))
        tensors = state_tensors(self.classifier)
        if k not in self._has_encoders:  # the frozen encoders travel once per client
            tensors = sum((state_tensors(m[0]) for m in self.cluster_models), ()) + tensors
        return ModelMessage(k, tensors)

    def client_receive_model(self, message: ModelMessage) -> None:
        k = message.client_id
        if not self.classifier_stage:
            self.slots.load(k, message.tensors)
            return
        self._has_encoders.add(k)
        n = len(state_tensors(self.classifier))
        self.classifier_slots.load(k, message.tensors[-n:])

    @torch.no_grad()
    def _extract_features(self, k):
        idx = self.sampler.indices(k).to(self.train_x.device)
        for start in range(0, len(idx), 1000):
            part = idx[start:start + 1000]
            self._features[part] = self.concatenated_features(self.train_x[part])
        self._has_features.add(k)

    def client_local_step(self, k: int, local_iter: int):
        """-> (forward FLOPs, backward FLOPs); the one-time feature pass counts as forward."""
        if not self.classifier_stage:
            x, y = self.next_batch(k)
            model, optimizer = self.slots[k]
            logits, forward_flops = self.meter.run(("client_forward", len(y)), model, x)
            loss = nn.functional.cross_entropy(logits, y)
        else:
            extra = 0
            if k not in self._has_features:
                _, extra = self.meter.run(("feature_pass", self.sampler.num_samples(k)),
                                          self._extract_features, k)
            idx = self.sampler.next_batch(k, self.client_batch_sizes[k])
            y = self.train_y[idx]
            model, optimizer = self.classifier_slots[k]
            logits, forward_flops = self.meter.run(("classifier_forward", len(y)), model,
                                                   self._features[idx])
            forward_flops += extra
            loss = nn.functional.cross_entropy(logits, y)
        _, backward_flops = self.meter.run(("client_backward", len(y), self.classifier_stage),
                                           loss.backward)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.last_loss = loss.detach()
        return forward_flops, backward_flops

    def client_model_upload(self, k: int) -> ModelMessage:
        if not self.classifier_stage:
            return ModelMessage(k, state_tensors(self.slots[k][0]))
        return ModelMessage(k, state_tensors(self.classifier_slots[k][0]))

    def end_round(self) -> None:
        if self.classifier_stage:
            self.aggregate_uploads(self.classifier)
            return
        for c, model in enumerate(self.cluster_models):
            members = [m for m in self._uploads if self.cluster_of[m.client_id] == c]
            if members:
                weighted_average_(model, [m.tensors for m in members],
                                  [self.sampler.num_samples(m.client_id) for m in members])

    def global_model(self) -> nn.Module:
        """The concatenated (frozen) feature extractors, then the classifier."""
        return nn.Sequential(ConcatenatedFeatures([m[0] for m in self.cluster_models]),
                             self.classifier)

    def evaluate(self, test_x, test_y):
        if self.classifier_stage:
            return super().evaluate(test_x, test_y)
        sizes = np.bincount(self.cluster_of, weights=[self.sampler.num_samples(k) for k in
                                                      range(len(self.cluster_of))],
                            minlength=len(self.cluster_models))
        results = [evaluate(m, test_x, test_y, self.num_classes) for m in self.cluster_models]
        w = sizes / sizes.sum()
        return (float(np.dot(w, [r[0] for r in results])),
                np.average([r[1] for r in results], axis=0, weights=w),
                float(np.dot(w, [r[2] for r in results])))


class ConcatenatedFeatures(nn.Module):
    """The features of several extractors side by side."""

    def __init__(self, extractors):
        super().__init__()
        self.extractors = nn.ModuleList(extractors)

    def forward(self, x):
        return torch.cat([e(x) for e in self.extractors], dim=1)
