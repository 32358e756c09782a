"""GAS: generative activation-aided asynchronous split federated learning (Yang and Liu,
arXiv 2409.01251; the authors' code, github.com/eejiarong/GAS, read for what the paper leaves
open). The math only; the asynchronous split protocol (scala_netsim.sim.async_protocols) decides
when each step happens.

- Clients: Q train at once, each on the client-side model as it was when its download
  started. In each local iteration client k's activations go up; the server replies at once
  with their gradient through the server-side model as it is then, of client k's
  logit-adjusted loss (its local label prior, tau = 1: the code's client loss); the client
  steps. After T iterations its client-side model goes up.
- Activation buffer: every upload (detached) waits in it with a weight; when it holds
  `activation_buffer` uploads, the server (1) updates each label's running Gaussian (mean and
  covariance) from them (`LabelStatistics`), (2) when every label has statistics, tops each
  label up to `samples_per_label` samples with activations drawn from its Gaussian (a label
  with more real samples gets none), (3) takes one SGD step of the server-side model on the
  real and generated activations together (cross-entropy), and empties the buffer.
- Weights (the code's): a counter that starts at 1 and, at each client-side aggregation,
  grows by the number of server-side steps taken so far; a client starts with the counter's
  value and adds 1 after each of its iterations; each upload carries its client's weight
  then. The running statistics are weighted by them, so fresher activations count more.
- Model buffer: when it holds `model_buffer` client-side models they are averaged into the
  global client-side model, weighted by |D_k| as the paper writes it (the code averages them
  uniformly): one global version.

Departures, on purpose: every client has its own SGD optimiser, fresh at each start (the code
shares one momentum buffer among all clients); the covariance is diagonal by default (the
code's own option "if the activation size is large": a full one at AlexNet's 3,136-value cut
costs a 3,136 x 3,136 Cholesky factorisation per label per server step, about 0.26 s each
on one core here), `covariance: full` is the code's default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from scala_netsim.algorithms.async_trainers import AsyncSplitClients
from scala_netsim.algorithms.common import SGD
from scala_netsim.algorithms.scala import SplitTrainer
from scala_netsim.learn.contract import AppliedUpdate, AsyncSplitTrainer, ServerStep
from scala_netsim.learn.losses import logit_adjusted_cross_entropy
from scala_netsim.learn.messages import ActivationMessage, GradientMessage, ModelMessage
from scala_netsim.learn.training import grad_of

#: the code's regularisation added to a merged covariance (times the identity)
REGULARIZATION = 1e-5
#: the code's first jitter when a covariance is not positive definite (then x10, 100 tries)
JITTER_START, JITTER_TRIES = 1e-6, 100


class LabelStatistics:
    """Each label's running Gaussian of the (flattened) activations: weighted mean and
    covariance (`full`: d x d; `diagonal`: the variances), and the total weight behind them.

    A batch of a label with weights w_i: W' = sum w_i, m' = sum w_i x_i / W',
    C' = sum w_i (x_i - m')(x_i - m')^T / W'. The first batch sets (m, C, W) = (m', C', W');
    a later one merges with d = W / (W + W'):
    m'' = d m + (1 - d) m',
    C'' = d (C + (m'' - m)(m'' - m)^T) + (1 - d) (C' + (m'' - m')(m'' - m')^T) + 1e-5 I,
    W'' = W + W' (the authors' IncrementalStats)."""

    def __init__(self, num_classes: int, dim: int, covariance: str,
                 device: torch.device) -> None:
        self.full = covariance == "full"
        self.means = torch.zeros(num_classes, dim, device=device)
        shape = (num_classes, dim, dim) if self.full else (num_classes, dim)
        self.covariances = torch.zeros(shape, device=device)
        self.weights = [0.0] * num_classes

    @property
    def complete(self) -> bool:
        """Has every label statistics?"""
        return all(w > 0 for w in self.weights)

    def _outer(self, u: torch.Tensor) -> torch.Tensor:
        return torch.outer(u, u) if self.full else u * u

    @torch.no_grad()
    def update(self, features: torch.Tensor, labels: torch.Tensor,
               weights: torch.Tensor) -> None:
        """Merge a batch: `features` n x d, `labels` n, `weights` n (float)."""
        for c in labels.unique().tolist():
            mask = labels == c
            x, w = features[mask], weights[mask]
            total = float(w.sum())
            mean = (x * w[:, None]).sum(0) / total
            centred = x - mean
            cov = ((centred * w[:, None]).T @ centred if self.full
                   else (centred * centred * w[:, None]).sum(0)) / total
            old_weight = self.weights[c]
            if old_weight == 0:
                self.means[c], self.covariances[c] = mean, cov
            else:
                decay = old_weight / (old_weight + total)
                old_mean = self.means[c].clone()
                merged = decay * old_mean + (1 - decay) * mean
                regular = (REGULARIZATION * torch.eye(len(mean), device=mean.device)
                           if self.full else REGULARIZATION)
                old_cov = self.covariances[c]
                self.covariances[c] = (decay * (old_cov + self._outer(merged - old_mean))
                                       + (1 - decay) * (cov + self._outer(merged - mean))
                                       + regular)
                self.means[c] = merged
            self.weights[c] = old_weight + total

    @torch.no_grad()
    def sample(self, c: int, count: int, generator: torch.Generator) -> torch.Tensor:
        """`count` draws from label c's Gaussian (count x d): m + z L^T with z standard normal
        from `generator` and L the Cholesky factor of C (the code's jitter added when C is not
        positive definite), or m + z sqrt(diag C)."""
        mean, cov = self.means[c], self.covariances[c]
        z = torch.randn(count, len(mean), generator=generator).to(mean.device)
        if not self.full:
            return mean + z * cov.clamp(min=0).sqrt()
        factor, info = torch.linalg.cholesky_ex(cov)
        jitter, tries = JITTER_START, 0
        eye = torch.eye(len(mean), device=mean.device)
        while info.item() != 0:
            if tries == JITTER_TRIES:
                raise ValueError(f"GAS: label {c}'s covariance is not positive definite")
            factor, info = torch.linalg.cholesky_ex(cov + jitter * eye)
            jitter, tries = jitter * 10, tries + 1
        return mean + z @ factor.T

    def state_dict(self) -> dict:
        return {"means": self.means, "covariances": self.covariances,
                "weights": list(self.weights)}

    def load_state_dict(self, state: dict) -> None:
        self.means.copy_(state["means"])
        self.covariances.copy_(state["covariances"])
        self.weights = [float(w) for w in state["weights"]]


def statistics_flops(counts: Sequence[int], generated: Sequence[int], dim: int,
                     full: bool) -> int:
    """FLOPs of one server step's statistics and generation, by formula (a Cholesky
    factorisation and the sampling are not all seen by torch's FLOP counter): per label with
    n real and g generated samples, the weighted mean (3 n d), the covariance (full: 2 n d^2 +
    2 n d; diagonal: 4 n d), the merge (full: 8 d^2; diagonal: 8 d), and for generation the
    factorisation d^3 / 3 and the draws 2 g d^2 (diagonal: 2 g d)."""
    total = 0
    for n, g in zip(counts, generated, strict=True):
        if n:
            total += 3 * n * dim + (2 * n * dim * dim + 2 * n * dim if full else 4 * n * dim)
            total += 8 * dim * dim if full else 8 * dim
        if g:
            total += (dim ** 3 // 3 + 2 * g * dim * dim) if full else 2 * g * dim
    return total


class GAS(AsyncSplitClients, SplitTrainer, AsyncSplitTrainer):
    """GAS (module docstring): activation buffer, per-label Gaussians, generated activations
    topping each label up for the server's steps, logit-adjusted client loss, client-side
    models averaged from a model buffer."""

    def __init__(self, *args, activation_buffer: int | None = None,
                 model_buffer: int | None = None, samples_per_label: int | None = None,
                 covariance: str = "diagonal", generator_seed: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        q = self.concurrency
        #: the code's defaults: both buffers hold as many entries as clients train at once,
        #: and each label is topped up to the code's per-client batch (B / Q here)
        self.activation_buffer = activation_buffer or q
        self.model_buffer = model_buffer or q
        self.samples_per_label = samples_per_label or max(1, round(self.batch_size / q))
        self.server_optimizer = SGD(self.server_model.parameters(), **self.optim_args)
        self.cut_shape = tuple(self._planner.output_shape())
        self.statistics = LabelStatistics(self.num_classes, math.prod(self.cut_shape), covariance,
                                          self.train_x.device)
        self.generator = torch.Generator().manual_seed(generator_seed)
        self.activations: list[tuple[torch.Tensor, torch.Tensor, float]] = []
        self.models: list[ModelMessage] = []
        self.counter = 1            # the code's total_weight_count
        self.server_steps = 0       # server-side steps taken (the code's local_epoch)
        self.client_weights: dict[int, int] = {}
        #: label counts of the last server-side step's batch: (real, generated)
        self.last_step_labels: tuple[list[int], list[int]] | None = None

    @classmethod
    def from_setup(cls, setup: Any, config: Any = None, **extra: Any) -> GAS:
        return super().from_setup(setup, config,
                                  generator_seed=setup.seeds.seed("model", "gas_generator"),
                                  **extra)

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        if config is None:
            return {}
        return {"activation_buffer": config.activation_buffer,
                "model_buffer": config.model_buffer,
                "samples_per_label": config.samples_per_label,
                "covariance": config.covariance}

    def persistent_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"server": self.server_optimizer}

    def extra_state(self) -> dict:
        return {**super().extra_state(), "activations": list(self.activations),
                "models": [(m.client_id, m.tensors) for m in self.models],
                "counter": self.counter, "server_steps": self.server_steps,
                "client_weights": dict(self.client_weights),
                "statistics": self.statistics.state_dict(),
                "generator": self.generator.get_state(),
                "last_step_labels": self.last_step_labels}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state(state)
        self.activations = [(a, y, float(w)) for a, y, w in state["activations"]]
        self.models = [ModelMessage(int(k), tuple(t)) for k, t in state["models"]]
        self.counter, self.server_steps = int(state["counter"]), int(state["server_steps"])
        self.client_weights = {int(k): int(w) for k, w in state["client_weights"].items()}
        self.statistics.load_state_dict(state["statistics"])
        self.generator.set_state(state["generator"].cpu())   # a CPU generator's state
        self.last_step_labels = state["last_step_labels"]

    def client_start(self, k: int) -> None:
        super().client_start(k)
        self.client_weights[k] = self.counter

    # --- the server's reply to one upload, and its buffered step ---------------------------
    def server_step(self, uploads: Sequence[ActivationMessage]) -> ServerStep:
        (upload,) = uploads
        k = upload.client_id
        reply, flops = self.meter.run(("gas_client_gradient", len(upload.labels)),
                                      self._client_gradient, upload)
        self.activations.append((upload.activations.detach(), upload.labels,
                                 float(self.client_weights[k])))
        self.client_weights[k] += 1
        if len(self.activations) >= self.activation_buffer:
            flops += self._server_update()
        return ServerStep([reply], flops)

    def _client_gradient(self, upload: ActivationMessage) -> GradientMessage:
        """dl_k/dA_k through the server-side model as it is now, l_k client k's
        logit-adjusted cross-entropy; the server-side model is not stepped."""
        activations = upload.activations.detach().requires_grad_(True)
        loss = logit_adjusted_cross_entropy(self.server_model(activations), upload.labels,
                                            self.client_log_priors[upload.client_id])
        loss.backward(inputs=[activations])
        self.note_loss(loss)
        return self.wire.down(GradientMessage(upload.client_id, upload.local_iter,
                                              grad_of(activations)))

    def generated_counts(self, labels: torch.Tensor) -> list[int]:
        """How many activations each label gets drawn for a step whose real samples have
        `labels`: up to `samples_per_label` once every label has statistics, else none."""
        counts = torch.bincount(labels, minlength=self.num_classes).tolist()
        if not self.statistics.complete:
            return [0] * self.num_classes
        return [max(0, self.samples_per_label - n) for n in counts]

    def _server_update(self) -> int:
        """Statistics, generation and one server-side SGD step on the buffer. -> FLOPs."""
        features = torch.cat([a for a, _, _ in self.activations])
        labels = torch.cat([y for _, y, _ in self.activations])
        weights = torch.cat([torch.full((len(y),), w, device=y.device)
                             for _, y, w in self.activations])
        self.activations = []
        flat = features.flatten(1)
        self.statistics.update(flat, labels, weights)
        generated = self.generated_counts(labels)
        drawn = [self.statistics.sample(c, g, self.generator).view(g, *self.cut_shape)
                 for c, g in enumerate(generated) if g]
        batch = torch.cat([features, *drawn])
        targets = torch.cat([labels, *[torch.full((g,), c, dtype=labels.dtype,
                                                  device=labels.device)
                                       for c, g in enumerate(generated) if g]])
        real = torch.bincount(labels, minlength=self.num_classes).tolist()
        self.last_step_labels = (real, generated)
        _, flops = self.meter.run(("server_step", len(targets)), self._server_sgd, batch,
                                  targets)
        self.server_steps += 1
        return flops + statistics_flops(real, generated, flat.shape[1], self.statistics.full)

    def _server_sgd(self, batch: torch.Tensor, targets: torch.Tensor) -> None:
        loss = nn.functional.cross_entropy(self.server_model(batch), targets)
        self.server_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.server_optimizer.step()

    # --- the model buffer ----------------------------------------------------------------
    @torch.no_grad()
    def server_apply(self, message: ModelMessage) -> AppliedUpdate:
        """Buffer client k's model; when the buffer is full, the global client-side model is
        their |D_k|-weighted average (one version) and the weight counter grows by the
        server-side steps taken so far."""
        k, staleness, _ = self._arrived(message)
        del self.client_weights[k]
        self.models.append(message)
        if len(self.models) < self.model_buffer:
            return AppliedUpdate(self.version + 1, staleness, False)
        buffered = sorted(self.models, key=lambda m: m.client_id)
        self.aggregations = []
        self.average_into("client", self.client_model, [m.client_id for m in buffered],
                          [m.tensors for m in buffered])
        self.models = []
        self.version += 1
        self.counter += self.server_steps
        return AppliedUpdate(self.version, staleness, True,
                             tuple(m.client_id for m in buffered))
