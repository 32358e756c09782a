"""Large-scale shadowing, small-scale block fading, outage and retransmission: draws and the
closed forms they are tested against.

Shadowing is log-normal: X ~ N(0, sigma^2) dB added to a client's path loss, drawn once at the
drop (3GPP TR 36.814, Table A.2.1.1.2-3: sigma = 8 dB for the macro cell). Fading multiplies
the received power by |h|^2: Rayleigh |h|^2 ~ Exp(1); Rician with K factor K (the power of the
line-of-sight path over the scattered power), h = sqrt(K/(K+1)) + sqrt(1/(K+1)) CN(0, 1), so
that E|h|^2 = 1 in both (Goldsmith, "Wireless Communications", 2005, sections 3.2.1-3.2.2).

A fixed-rate transmission of R bit/s on b Hz fails (outage) when the instantaneous capacity
b log2(1 + snr |h|^2) is below R; over Rayleigh fading that happens with probability
P_out = 1 - exp(-(2^(R/b) - 1) / snr) (Goldsmith, section 4.2.2; snr = p g / (N0 b) the mean
SNR). With ARQ and a fresh draw per attempt, attempts are geometric, truncated at M.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import exp1

FADING_KINDS = ("none", "rayleigh", "rician")


def shadowing_db(std_db: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Log-normal shadowing: `size` draws of N(0, std_db^2) in dB (zeros when std_db is 0,
    without drawing)."""
    if std_db < 0:
        raise ValueError(f"shadowing standard deviation must be >= 0 dB, got {std_db}")
    if std_db == 0:
        return np.zeros(size)
    return rng.normal(0.0, std_db, size)


def fading_power_gain(kind: str, rng: np.random.Generator | None, size: int | None = None,
                      k_factor_db: float | None = None) -> float | np.ndarray:
    """Small-scale power gains |h|^2 with E|h|^2 = 1: `kind` none (1, no draw), rayleigh
    (Exp(1)) or rician (K factor `k_factor_db`)."""
    if kind == "none":
        return 1.0 if size is None else np.ones(size)
    if rng is None:
        raise ValueError(f"{kind} fading draws its gains: it needs a random generator")
    if kind == "rayleigh":
        return rng.exponential(1.0, size)
    if kind == "rician":
        if k_factor_db is None:
            raise ValueError("rician fading needs k_factor_db")
        k = 10.0 ** (k_factor_db / 10.0)
        scattered = rng.normal(0.0, np.sqrt(0.5), (2,) if size is None else (2, size))
        real = np.sqrt(k / (k + 1)) + np.sqrt(1 / (k + 1)) * scattered[0]
        imag = np.sqrt(1 / (k + 1)) * scattered[1]
        return real * real + imag * imag
    raise ValueError(f"fading kind must be one of {FADING_KINDS}, got {kind!r}")


@dataclass(frozen=True)
class Fading:
    """Block fading of a cell: `kind` (FADING_KINDS), the Rician K factor in dB, and its
    `coherence`: "round" (one draw per client, direction and round: the channel is constant
    over a round), "transfer" (a fresh draw for every transfer) or, in a network of cells,
    "time" (a fresh draw per client and direction every `coherence_s` seconds, blocks
    [i coherence_s, (i + 1) coherence_s) of the clock)."""

    kind: str = "none"
    k_factor_db: float | None = None
    coherence: str = "round"
    coherence_s: float | None = None

    def draw(self, rng: np.random.Generator | None) -> float:
        """One power gain |h|^2."""
        return float(fading_power_gain(self.kind, rng, k_factor_db=self.k_factor_db))

    @property
    def fades(self) -> bool:
        return self.kind != "none"

    @property
    def per_round(self) -> bool:
        """One draw per client, direction and round."""
        return self.fades and self.coherence == "round"

    @property
    def per_time(self) -> bool:
        """A fresh draw per client and direction every `coherence_s` seconds."""
        return self.fades and self.coherence == "time"

    def block(self, time_s: float) -> int:
        """The fading block of time holding instant `time_s` (per_time)."""
        assert self.coherence_s is not None
        return math.floor(time_s / self.coherence_s)

    def block_start(self, block: int) -> float:
        """When fading block `block` of time begins (per_time)."""
        assert self.coherence_s is not None
        return block * self.coherence_s

    @property
    def per_transfer(self) -> bool:
        """A fresh draw for every transfer (and every attempt of one)."""
        return self.fades and self.coherence == "transfer"


def required_snr(rate_bps: ArrayLike, bandwidth_hz: ArrayLike) -> np.ndarray:
    """The SNR at which b log2(1 + snr) = R: 2^(R/b) - 1."""
    return np.expm1(np.asarray(rate_bps, dtype=float) / np.asarray(bandwidth_hz, dtype=float)
                    * np.log(2.0))


def rayleigh_outage_probability(rate_bps: ArrayLike, bandwidth_hz: ArrayLike,
                                mean_snr: ArrayLike) -> np.ndarray:
    """P(b log2(1 + snr |h|^2) < R) for |h|^2 ~ Exp(1): 1 - exp(-(2^(R/b) - 1) / snr)."""
    return -np.expm1(-required_snr(rate_bps, bandwidth_hz) / np.asarray(mean_snr, dtype=float))


def mean_attempts(outage_probability: ArrayLike, max_attempts: int) -> np.ndarray:
    """E[attempts] of ARQ with independent attempts, stopping at the first success or after
    `max_attempts`: sum_{i<M} p^i = (1 - p^M) / (1 - p) (-> 1 / (1 - p) as M grows)."""
    p = np.asarray(outage_probability, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = -np.expm1(max_attempts * np.log(p)) / (1.0 - p)
    return np.where(p >= 1.0, float(max_attempts), np.where(p <= 0.0, 1.0, mean))


def ergodic_rayleigh_capacity_bps(bandwidth_hz: ArrayLike, mean_snr: ArrayLike) -> np.ndarray:
    """E[b log2(1 + snr |h|^2)] for |h|^2 ~ Exp(1): b e^(1/snr) E1(1/snr) / ln 2."""
    x = 1.0 / np.asarray(mean_snr, dtype=float)
    return np.asarray(bandwidth_hz, dtype=float) * np.exp(x) * exp1(x) / np.log(2.0)
