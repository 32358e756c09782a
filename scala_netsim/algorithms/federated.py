"""Federated baselines (SCALA-NOTES section 4): the whole model trains on the client.

FedAvg, and the variants that change one hook of it: FedProx (a proximal term on the
gradient), FedDyn (FedProx plus a dynamic linear term), FedLC and FedLA (the logits of the
local loss), FedDecorr (a feature penalty in the local loss). FedConcat has its own round
structure. Fed-CBS is FedAvg with another client selection (see the registry). The math only;
the SimPy engine decides when each step happens."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np
import torch
from scipy.cluster.vq import kmeans2
from torch import nn

from scala_netsim.algorithms.common import (
    ClientData,
    ClientSlots,
    SGDSettings,
    TrainerBase,
    TrainerSetup,
    state_tensors,
)
from scala_netsim.learn.contract import Evaluation, FederatedTrainer, LocalStep, StepDemand
from scala_netsim.learn.flops import MetaPlanner
from scala_netsim.learn.messages import ModelMessage
from scala_netsim.learn.models import features_and_head, init_linear_
from scala_netsim.learn.training import evaluate, grad_of


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


#: a LocalSGD class's own type (what its from_setup returns)
LocalSGDT = TypeVar("LocalSGDT", bound="LocalSGD")


class LocalSGD(TrainerBase):
    """A client's T local SGD steps of cross-entropy on the whole model: FedAvg's learning,
    which the round's FedAvg and the asynchronous FL trainers
    (scala_netsim.algorithms.async_trainers) both take. Variants override `local_loss` (the
    data term) or `adjust_gradients` (a weight regulariser's gradient, added before the SGD
    step)."""

    def __init__(self, features: nn.Module, head: nn.Module, data: ClientData, sgd: SGDSettings,
                 batch_seed: int, extra_weight_decay: float = 0.0) -> None:
        self.features, self.head = features, head
        self.model = nn.Sequential(features, head)
        super().__init__(self.model, data, sgd, batch_seed, extra_weight_decay)
        self._planner = MetaPlanner(self.model, data.train_x.shape[1:], data.train_x.dtype)

    @classmethod
    def from_setup(cls: type[LocalSGDT], setup: TrainerSetup,
                   config: Any = None) -> LocalSGDT:
        """The trainer on the scenario's data and model (the initial weights every algorithm
        starts from) and optimiser, with `hyper_parameters(config)` for the constructor."""
        return cls(*features_and_head(*setup.split_model()), setup.data, setup.sgd,
                   setup.batch_seed(), **cls.hyper_parameters(config))

    def local_loss(self, k: int, features: torch.Tensor, logits: torch.Tensor,
                   labels: torch.Tensor) -> torch.Tensor:
        """The data term of client k's local objective: cross-entropy."""
        return nn.functional.cross_entropy(logits, labels)

    def adjust_gradients(self, k: int, model: nn.Module) -> None:
        """Change client k's gradients before its SGD step (nothing in FedAvg)."""

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        """One local SGD step of client k."""
        x, y = self.next_batch(k)
        model, optimizer = self.slots[k]
        body, head = cast(nn.Sequential, model)   # (features, head): LocalSGD's model
        (features, logits), forward_flops = self.meter.run(
            ("client_forward", len(y)), lambda inp: (lambda f: (f, head(f)))(body(inp)), x)
        loss = self.local_loss(k, features, logits, y)
        _, backward_flops = self.meter.run(("client_backward", len(y)), loss.backward)
        self.adjust_gradients(k, model)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.note_loss(loss)
        return LocalStep(forward_flops, backward_flops)

    def step_demand(self, k: int) -> StepDemand:
        """The model up and down; the FLOPs of one cross-entropy step on the whole model."""
        model_bytes = self.model_bytes()
        return StepDemand(model_bytes, model_bytes,
                          self._planner.train_step(self.client_batch_sizes[k]))

    def global_model(self) -> nn.Module:
        return self.model


class FedAvg(LocalSGD, FederatedTrainer):
    """FedAvg: T local SGD steps of cross-entropy on the whole model (LocalSGD), then the
    uploads averaged weighted by |D_k|."""


class FedLC(FedAvg):
    """FedLC: cross-entropy on logits f_y - tau n_{k,y}^(-1/4) (classes absent locally
    excluded)."""

    def __init__(self, *args, tau: float = 1.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.tau = tau

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"tau": config.tau}

    def local_loss(self, k: int, features: torch.Tensor, logits: torch.Tensor,
                   labels: torch.Tensor) -> torch.Tensor:
        calibration = fedlc_calibration(self.client_label_counts[k], self.tau)
        return nn.functional.cross_entropy(logits - calibration, labels)


class FedLA(FedAvg):
    """FedLA: cross-entropy on logits + log P_k (client k's local label prior)."""

    def local_loss(self, k: int, features: torch.Tensor, logits: torch.Tensor,
                   labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits + self.client_log_priors[k], labels)


class FedDecorr(FedAvg):
    """FedDecorr: cross-entropy + coef * the decorrelation penalty of the 256 penultimate
    features."""

    def __init__(self, *args, coef: float = 0.1, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.decorr_coef = coef

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"coef": config.coef}

    def local_loss(self, k: int, features: torch.Tensor, logits: torch.Tensor,
                   labels: torch.Tensor) -> torch.Tensor:
        loss = nn.functional.cross_entropy(logits, labels)
        return loss + self.decorr_coef * decorrelation_penalty(features)


class FedProx(FedAvg):
    """FedProx: cross-entropy + mu/2 ||w - w_g||^2, w_g the global model of the round.

    The regulariser's gradient mu (w - w_g) is added in closed form (no autograd graph over
    the 2.5 M weights): its mu w part rides on the optimiser's fused weight decay
    (grad + wd w) and `adjust_gradients` subtracts the anchor mu w_g.
    """

    def __init__(self, *args, mu: float = 0.01, **kwargs) -> None:
        super().__init__(*args, **{**kwargs, "extra_weight_decay": mu})
        self.coef = mu
        self._global_params: list[torch.Tensor] = []
        self._anchors: dict = {}

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"mu": config.mu}

    def begin_round(self, selected: Sequence[int]) -> None:
        self._global_params = [p.detach().clone() for p in self.model.parameters()]
        self._anchors = {}
        super().begin_round(selected)

    def anchor(self, k: int) -> list[torch.Tensor]:
        """coef * w_g, fixed for the round (one for every client)."""
        if None not in self._anchors:
            self._anchors[None] = [self.coef * g for g in self._global_params]
        return self._anchors[None]

    @torch.no_grad()
    def adjust_gradients(self, k: int, model: nn.Module) -> None:
        for p, anchor in zip(model.parameters(), self.anchor(k), strict=True):
            grad_of(p).sub_(anchor)


class FedDyn(FedProx):
    """FedDyn (Acar et al. 2021): FedProx with coefficient alpha plus a linear term
    -<w, h_k>, where client k's h_k (kept on the client: nothing extra on the wire) follows
    grad L_k(w_k^t) = grad L_k(w_k^{t-1}) - alpha (w_k^t - w^{t-1}); the server keeps h and
    sets w <- mean_k w_k - h / alpha."""

    def __init__(self, *args, alpha: float = 0.01, **kwargs) -> None:
        super().__init__(*args, mu=alpha, **kwargs)
        self.dyn_alpha = alpha
        self._dyn_client_grads: dict[int, list[torch.Tensor]] = {}
        self._dyn_server_h = [torch.zeros_like(p) for p in self.model.parameters()]
        self._num_clients = self.data.num_clients

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"alpha": config.alpha}

    def extra_state(self) -> dict:
        return {"client_grads": dict(self._dyn_client_grads), "server_h": list(self._dyn_server_h)}

    def load_extra_state(self, state: dict) -> None:
        self._dyn_client_grads = dict(state["client_grads"])
        self._dyn_server_h = list(state["server_h"])

    def anchor(self, k: int) -> list[torch.Tensor]:
        """alpha * w_g + h_k, fixed for client k's round: together with the alpha w of the
        weight decay the step adds alpha (w - w_g) - h_k, the gradient of
        alpha/2 ||w - w_g||^2 - <w, h_k>."""
        if k not in self._anchors:
            anchor = [self.coef * g for g in self._global_params]
            if k in self._dyn_client_grads:
                anchor = [a.add_(h) for a, h in zip(anchor, self._dyn_client_grads[k], strict=True)]
            self._anchors[k] = anchor
        return self._anchors[k]

    def client_model_upload(self, k: int) -> ModelMessage:
        # grad L_k(w_k^t) = grad L_k(w_k^{t-1}) - alpha (w_k^t - w^{t-1}), kept on the client
        params = [p.detach() for p in self.slots[k][0].parameters()]
        if k not in self._dyn_client_grads:
            self._dyn_client_grads[k] = [torch.zeros_like(p) for p in params]
        with torch.no_grad():   # in place: this client's terms are ~10 MB a round each
            for h, p, g in zip(self._dyn_client_grads[k], params, self._global_params, strict=True):
                h.sub_(p, alpha=self.dyn_alpha).add_(g, alpha=self.dyn_alpha)
        return super().client_model_upload(k)

    def end_round(self) -> None:
        # FedDyn server: h <- h - alpha/K sum_k (w_k - w); w <- mean_k w_k - h/alpha
        uploads = [m.tensors for m in self._uploads]
        if not uploads:   # every client dropped: the model and h stay as they are
            return
        self.aggregations.extend(("client", m.client_id, 1 / len(uploads)) for m in self._uploads)
        position = {name: i for i, name in enumerate(self.model.state_dict())}  # of uploads
        with torch.no_grad():
            for (name, p), g, h in zip(self.model.named_parameters(), self._global_params,
                                       self._dyn_server_h, strict=True):
                total = _sum_at(uploads, position[name])
                # sum_k (w_k - w) = total - n w
                h.sub_(total - len(uploads) * g, alpha=self.dyn_alpha / self._num_clients)
                p.copy_(total.div_(len(uploads))).sub_(h, alpha=1 / self.dyn_alpha)
            for name, b in self.model.named_buffers():  # BatchNorm statistics: their mean
                if b.is_floating_point():                # (its batch counter: the first's)
                    b.copy_(_sum_at(uploads, position[name]).div_(len(uploads)))
                else:
                    b.copy_(uploads[0][position[name]])


def _sum_at(uploads: Sequence[Sequence[torch.Tensor]], i: int) -> torch.Tensor:
    """sum_k uploads[k][i], in upload order (a new tensor)."""
    total = uploads[0][i].clone()
    for u in uploads[1:]:
        total.add_(u[i])
    return total


class FedConcat(TrainerBase, FederatedTrainer):
    """FedConcat (Diao, Li and He, AAAI 2024).

    Clients are clustered by K-means on their normalised label distributions. For the first
    `encoder_rounds` rounds each participant trains its cluster's model (FedAvg inside each
    cluster). Then the K feature extractors are frozen and concatenated, every client gets them
    once, computes the features of its data once, and a linear classifier on the concatenated
    features is trained with FedAvg, only the classifier going up and down each round.

    Before the classifier stage there is no single global model: the reported test accuracy
    is then the mean of the cluster models' accuracies weighted by the clusters' data.
    """

    fixed_step_costs = False   # its messages change from the encoder to the classifier stage

    def __init__(self, cluster_models: Sequence[tuple[nn.Module, nn.Module]], data: ClientData,
                 sgd: SGDSettings, batch_seed: int, *, encoder_rounds: int,
                 cluster_rng: np.random.Generator, classifier_generator: torch.Generator) -> None:
        self.cluster_models = [nn.Sequential(f, h) for f, h in cluster_models]
        super().__init__(self.cluster_models[0], data, sgd, batch_seed)
        counts = self.client_label_counts.cpu().numpy().astype(float)
        distributions = counts / counts.sum(axis=1, keepdims=True)
        num_clusters = len(self.cluster_models)
        _, self.cluster_of = kmeans2(distributions, num_clusters, minit="++", seed=cluster_rng)
        self.encoder_rounds = encoder_rounds
        head = self.cluster_models[0][1]
        if not isinstance(head, nn.Linear):
            raise TypeError(f"FedConcat: a cluster model's head must be a Linear layer (its "
                            f"features go to the classifier), got {type(head).__name__}")
        feature_dim = head.in_features
        device = self.train_x.device
        self.classifier = init_linear_(nn.Linear(num_clusters * feature_dim, self.num_classes),
                                       classifier_generator).to(device)
        self.classifier_slots = ClientSlots(self.classifier, self.optim_args)
        self.round = 0
        self._has_encoders: set[int] = set()
        self._features = torch.zeros(len(self.train_y), num_clusters * feature_dim, device=device)
        self._has_features: set[int] = set()
        self._encoder_planner = MetaPlanner(self.cluster_models[0], data.train_x.shape[1:],
                                            data.train_x.dtype)
        self._classifier_planner = MetaPlanner(self.classifier, (num_clusters * feature_dim,))

    @classmethod
    def from_setup(cls, setup: TrainerSetup, config: Any = None) -> FedConcat:
        # cluster 0 starts from the initial weights every algorithm starts from
        models = [features_and_head(*(setup.split_model() if c == 0 else
                                      setup.split_model(f"fedconcat_cluster{c}")))
                  for c in range(config.clusters)]
        encoder_rounds = max(1, round(config.encoder_round_fraction * setup.rounds))
        return cls(models, setup.data, setup.sgd, setup.batch_seed(),
                   encoder_rounds=encoder_rounds,
                   cluster_rng=setup.seeds.numpy("partition", "fedconcat_clusters"),
                   classifier_generator=setup.torch_generator("model", "fedconcat_classifier"))

    def persistent_modules(self) -> dict[str, nn.Module]:
        modules: dict[str, nn.Module] = {f"cluster{c}": m
                                         for c, m in enumerate(self.cluster_models)}
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

    def concatenated_features(self, x: torch.Tensor) -> torch.Tensor:
        return ConcatenatedFeatures([m[0] for m in self.cluster_models])(x)

    def begin_round(self, selected: Sequence[int]) -> None:
        self.round += 1
        super().begin_round(selected)
        self.classifier_slots.clear(len(selected))

    def client_model_download(self, k: int) -> ModelMessage:
        if not self.classifier_stage:
            return self.wire.model(ModelMessage(
                k, state_tensors(self.cluster_models[self.cluster_of[k]])))
        tensors = state_tensors(self.classifier)
        if k not in self._has_encoders:  # the frozen encoders travel once per client
            tensors = sum((state_tensors(m[0]) for m in self.cluster_models), ()) + tensors
        return self.wire.model(ModelMessage(k, tensors))

    def client_receive_model(self, message: ModelMessage) -> None:
        k = message.client_id
        if not self.classifier_stage:
            self.slots.load(k, message.tensors)
            return
        self._has_encoders.add(k)
        n = len(state_tensors(self.classifier))
        self.classifier_slots.load(k, message.tensors[-n:])

    @torch.no_grad()
    def _extract_features(self, k: int) -> None:
        idx = self.sampler.indices(k).to(self.train_x.device)
        for start in range(0, len(idx), 1000):
            part = idx[start:start + 1000]
            self._features[part] = self.concatenated_features(self.train_x[part])
        self._has_features.add(k)

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        """A local step of the cluster model, or of the classifier on the client's features
        (the one-time feature pass counts as forward FLOPs)."""
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
        self.note_loss(loss)
        return LocalStep(forward_flops, backward_flops)

    def client_model_upload(self, k: int) -> ModelMessage:
        if not self.classifier_stage:
            return self.wire.model(ModelMessage(k, state_tensors(self.slots[k][0])))
        return self.wire.model(ModelMessage(k, state_tensors(self.classifier_slots[k][0])))

    def end_round(self) -> None:
        if self.classifier_stage:
            self.aggregate_uploads(self.classifier)
            return
        for c, model in enumerate(self.cluster_models):
            members = [m for m in self._uploads if self.cluster_of[m.client_id] == c]
            self.average_into(f"cluster{c}", model, [m.client_id for m in members],
                              [m.tensors for m in members])

    def step_demand(self, k: int) -> StepDemand:
        """What client k trains, up and down (the encoders too, the first time they come
        down), and the FLOPs of one cross-entropy step on it (the one-time feature pass not
        included)."""
        batch = self.client_batch_sizes[k]
        download_bytes = self.client_model_download(k).payload_bytes
        if not self.classifier_stage:
            return StepDemand(download_bytes, download_bytes,
                              self._encoder_planner.train_step(batch))
        upload_bytes = self.wire.model_bytes(state_tensors(self.classifier))
        return StepDemand(upload_bytes, download_bytes,
                          self._classifier_planner.train_step(batch))

    def global_model(self) -> nn.Module:
        """The concatenated (frozen) feature extractors, then the classifier."""
        return nn.Sequential(ConcatenatedFeatures([m[0] for m in self.cluster_models]),
                             self.classifier)

    def evaluate(self, test_x: torch.Tensor, test_y: torch.Tensor) -> Evaluation:
        if self.classifier_stage:
            return super().evaluate(test_x, test_y)
        sizes = np.bincount(self.cluster_of, weights=[self.sampler.num_samples(k) for k in
                                                      range(len(self.cluster_of))],
                            minlength=len(self.cluster_models))
        results = [evaluate(m, test_x, test_y, self.num_classes) for m in self.cluster_models]
        w = sizes / sizes.sum()
        # math.fsum, not np.dot: BLAS picks its dot kernel by processor (with or without
        # fused multiply-adds), and the last bit of the mean differed from machine to machine
        return Evaluation(math.fsum(float(wi) * r[0] for wi, r in zip(w, results, strict=True)),
                          np.average([r[1] for r in results], axis=0, weights=w),
                          math.fsum(float(wi) * r[2] for wi, r in zip(w, results, strict=True)))


class ConcatenatedFeatures(nn.Module):
    """The features of several extractors side by side."""

    def __init__(self, extractors: Sequence[nn.Module]) -> None:
        super().__init__()
        self.extractors = nn.ModuleList(extractors)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([e(x) for e in self.extractors], dim=1)
