"""Client selection policies: which clients take part in a round. Any algorithm can use any
policy; each draws from its own NumPy generator."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class ClientSelector(ABC):
    """Chooses `num_selected` of the clients for a round."""

    #: whether the choice depends on the network (gains, rates, timings); none does yet. A
    #: run of a policy that does is never re-timed in another cell (scala_netsim.runner.replay)
    uses_network: ClassVar[bool] = False

    @classmethod
    @abstractmethod
    def from_label_counts(cls, label_counts: np.ndarray, config: Any = None) -> ClientSelector:
        """The policy for clients whose label counts are the rows of `label_counts`, with the
        algorithm's scenario section `config`."""

    @abstractmethod
    def select(self, num_selected: int, rng: np.random.Generator) -> list[int]:
        """Client ids of the round's participants, in increasing order."""


class RandomSelector(ClientSelector):
    """Uniform sampling without replacement (the SCALA paper's selection)."""

    def __init__(self, num_clients: int) -> None:
        self.num_clients = num_clients

    @classmethod
    def from_label_counts(cls, label_counts: np.ndarray, config: Any = None) -> RandomSelector:
        return cls(len(label_counts))

    def select(self, num_selected: int, rng: np.random.Generator) -> list[int]:
        return sorted(rng.choice(self.num_clients, size=num_selected, replace=False).tolist())


def qcid(label_counts: np.ndarray) -> float:
    """Quadratic class-imbalance degree of a pooled set: sum_c (alpha_c - 1/C)^2, alpha the
    pooled class proportions (Fed-CBS, Zhang et al., ICML 2023)."""
    pooled = label_counts.sum(axis=0) if label_counts.ndim == 2 else label_counts
    alpha = pooled / pooled.sum()
    return float(np.sum((alpha - 1.0 / len(alpha)) ** 2))


class FedCBSSelector(ClientSelector):
    """Fed-CBS class-balanced selection [our reading of the public code].

    A set is built one client at a time: candidate c joins with probability proportional to
    QCID(S + c)^-beta, the exponent beta rising linearly from `beta_start` to `beta_end` over
    the picks; this is repeated `trials` times and the set with the lowest QCID is kept.
    """

    def __init__(self, label_counts: np.ndarray, trials: int = 3, beta_start: float = 1.0,
                 beta_end: float = 10.0) -> None:
        self.label_counts = np.asarray(label_counts, dtype=float)
        self.trials, self.beta_start, self.beta_end = trials, beta_start, beta_end

    @classmethod
    def from_label_counts(cls, label_counts: np.ndarray, config: Any = None) -> FedCBSSelector:
        """`config` holds trials, beta_start and beta_end (a FedCBSConfig)."""
        return cls(label_counts, trials=config.trials, beta_start=config.beta_start,
                   beta_end=config.beta_end)

    def _one_set(self, num_selected: int, rng: np.random.Generator) -> list[int]:
        chosen, pooled = [], np.zeros(self.label_counts.shape[1])
        available = np.ones(len(self.label_counts), dtype=bool)
        for pick in range(num_selected):
            beta = self.beta_start + (self.beta_end - self.beta_start) * (
                pick / max(num_selected - 1, 1))
            candidates = np.flatnonzero(available)
            trial_pools = pooled + self.label_counts[candidates]
            proportions = trial_pools / trial_pools.sum(axis=1, keepdims=True)
            q = np.sum((proportions - 1.0 / proportions.shape[1]) ** 2, axis=1)
            # work in log space: q^-beta overflows for nearly balanced sets
            log_w = -beta * np.log(np.maximum(q, 1e-300))
            w = np.exp(log_w - log_w.max())
            c = candidates[rng.choice(len(candidates), p=w / w.sum())]
            chosen.append(int(c))
            pooled += self.label_counts[c]
            available[c] = False
        return sorted(chosen)

    def select(self, num_selected: int, rng: np.random.Generator) -> list[int]:
        sets = [self._one_set(num_selected, rng) for _ in range(self.trials)]
        return min(sets, key=lambda s: qcid(self.label_counts[s]))
