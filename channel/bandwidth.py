"""Bandwidth allocators: split a band among the clients that use it in a round."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.optimize import brentq
from scipy.special import lambertw


@dataclass(frozen=True)
class LinkDemand:
    """What the clients sharing a band need from it in a round, one entry per client (arrays
    aligned with `client_ids`): each client's power gain for the round, the bits it sends in
    one local step over this band, and the compute time before it sends them; and the radio
    settings that make a sub-band of b Hz a rate, r_k(b) = b log2(1 + p_k(b) g_k / (N0 b)):
    the transmit power `tx_power_w` (a client's own power, or with `constant_psd` the power
    spread evenly over the whole band, so that a sub-band gets the share b / W of it: the base
    station's downlink) and the noise PSD N0. Allocators that only count clients need none of
    the radio settings."""

    client_ids: np.ndarray
    gain_linear: np.ndarray
    payload_bits: np.ndarray
    compute_time_s: np.ndarray
    tx_power_w: np.ndarray | None = None
    noise_psd_w_per_hz: float | None = None
    constant_psd: bool = False

    def __len__(self) -> int:
        return len(self.client_ids)

    def with_radio(self, radio: tuple[float, float, bool] | None) -> LinkDemand:
        """The demand with a link model's radio settings (LinkModel.allocation_radio: transmit
        power, noise PSD, whether the power is spread over the band), every client at that
        power; itself where the model has none."""
        if radio is None:
            return self
        power_w, noise_psd_w_per_hz, constant_psd = radio
        return dataclasses.replace(self, tx_power_w=np.full(len(self), power_w),
                                   noise_psd_w_per_hz=noise_psd_w_per_hz,
                                   constant_psd=constant_psd)

    def subset(self, mask: np.ndarray) -> LinkDemand:
        """The entries where `mask` holds (a cell's clients of a network's round)."""
        return dataclasses.replace(
            self, client_ids=self.client_ids[mask], gain_linear=self.gain_linear[mask],
            payload_bits=self.payload_bits[mask], compute_time_s=self.compute_time_s[mask],
            tx_power_w=None if self.tx_power_w is None else self.tx_power_w[mask])

    def rate_bps(self, bandwidth_hz: np.ndarray, total_bandwidth_hz: float) -> np.ndarray:
        """Each client's Shannon rate on the sub-bands `bandwidth_hz`."""
        b = np.asarray(bandwidth_hz, dtype=float)
        if self.tx_power_w is None or self.noise_psd_w_per_hz is None:
            raise ValueError("this allocator needs the link's tx_power_w and noise_psd_w_per_hz")
        if self.constant_psd:   # p_k(b) = P b / W: the SNR does not depend on b
            snr = self.tx_power_w * self.gain_linear / (self.noise_psd_w_per_hz
                                                        * total_bandwidth_hz)
            return b * np.log2(1.0 + snr)
        with np.errstate(divide="ignore"):
            return b * np.log2(1.0 + self.tx_power_w * self.gain_linear
                               / (self.noise_psd_w_per_hz * b))

    def bandwidth_for_rate_hz(self, rate_bps: np.ndarray, total_bandwidth_hz: float) -> np.ndarray:
        """The sub-band on which each client's rate is `rate_bps` (inf where no sub-band
        gives it: a client of fixed power never exceeds p g / (N0 ln 2) bit/s).

        Fixed power: b ln(1 + a/b) = R ln 2 with a = p g / N0. With s = R ln 2 / a < 1 and
        z = 1 + a/b this is ln z = s (z - 1), whose root other than z = 1 is
        z = -W_{-1}(-s e^(-s)) / s (Lambert W, lower branch), so b = a / (z - 1).
        Constant PSD: r = b log2(1 + snr), linear in b."""
        rate = np.asarray(rate_bps, dtype=float)
        if self.constant_psd:
            return rate / self.rate_bps(np.ones_like(rate), total_bandwidth_hz)
        a = self.tx_power_w * self.gain_linear / self.noise_psd_w_per_hz
        s = rate * np.log(2.0) / a
        out = np.full_like(s, np.inf)
        ok = s < 1.0
        sk = s[ok]
        z = -lambertw(-sk * np.exp(-sk), k=-1).real / sk
        out[ok] = a[ok] / (z - 1.0)
        out[rate <= 0] = 0.0
        return out


class BandwidthAllocator(ABC):
    """Total band (Hz) and the clients' demand -> each client's orthogonal sub-band (Hz)."""

    name: ClassVar[str]

    @abstractmethod
    def allocate_hz(self, total_bandwidth_hz: float, demand: LinkDemand) -> np.ndarray:
        """Sub-band of each client of `demand` (aligned with demand.client_ids), summing to at
        most `total_bandwidth_hz`."""


class EqualShareAllocator(BandwidthAllocator):
    """Orthogonal equal shares: b_k = W / |C| for every client of the round."""

    name = "equal"

    def allocate_hz(self, total_bandwidth_hz: float, demand: LinkDemand) -> np.ndarray:
        if not len(demand):
            return np.zeros(0)
        return np.full(len(demand), float(total_bandwidth_hz) / len(demand))


class ProportionalAllocator(BandwidthAllocator):
    """Shares proportional to the airtime each client would need at an equal share:
    b_k = W t_k / sum_j t_j with t_k = bits_k / r_k(W/n) (a client with a weak channel or a
    large payload gets more; the "traffic-and-channel-aware" proportional rule of the FDMA
    literature). Falls back to equal shares when no client sends anything in a step."""

    name = "proportional"

    def allocate_hz(self, total_bandwidth_hz: float, demand: LinkDemand) -> np.ndarray:
        n = len(demand)
        equal = np.full(n, float(total_bandwidth_hz) / n) if n else np.zeros(0)
        if not n or not np.any(demand.payload_bits > 0):
            return equal
        airtime = demand.payload_bits / demand.rate_bps(equal, total_bandwidth_hz)
        return total_bandwidth_hz * airtime / airtime.sum()


class MinMaxLatencyAllocator(BandwidthAllocator):
    """The shares that minimise the latest finish of one local step,
    max_k (c_k + bits_k / r_k(b_k)) subject to sum_k b_k = W (c_k: the compute before the
    send). At the optimum every client finishes at the same time T (a client finishing
    earlier could give up bandwidth), so T is the root of sum_k b_k(T) = W, where b_k(T), the
    sub-band on which client k finishes at T, falls as T grows; T is found by a scalar root
    finder (`scipy.optimize.brentq`, bracketed by max c_k and the equal shares' finish time)
    and each b_k(T) in closed form (LinkDemand.bandwidth_for_rate_hz), as in the min-max
    delay FDMA allocations of the wireless-FL literature (e.g. Chen et al., "A Joint
    Learning and Communications Framework for Federated Learning over Wireless Networks",
    IEEE TWC 2021). Falls back to equal shares when some client sends nothing in a step (it
    would get no band for its model transfers)."""

    name = "min_max_latency"

    def allocate_hz(self, total_bandwidth_hz: float, demand: LinkDemand) -> np.ndarray:
        n = len(demand)
        if not n:
            return np.zeros(0)
        equal = np.full(n, float(total_bandwidth_hz) / n)
        bits, compute_s = demand.payload_bits, demand.compute_time_s
        if np.any(bits <= 0):
            return equal
        t_low = float(compute_s.max())
        t_high = float(np.max(compute_s + bits / demand.rate_bps(equal, total_bandwidth_hz)))

        def shares(t: float) -> np.ndarray:
            with np.errstate(divide="ignore"):
                rate = np.where(t > compute_s, bits / np.maximum(t - compute_s, 0.0), np.inf)
            return demand.bandwidth_for_rate_hz(rate, total_bandwidth_hz)

        def excess(t: float) -> float:
            return float(min(shares(t).sum(), 1e300)) - total_bandwidth_hz

        if excess(t_high) >= 0:   # the equal shares are already optimal (or all alike)
            return equal
        t = brentq(excess, t_low * (1 + 1e-15) + 1e-300, t_high, xtol=1e-300, rtol=1e-15,
                   maxiter=500)
        b = shares(t)
        return b * (total_bandwidth_hz / b.sum())


ALLOCATORS: dict[str, type[BandwidthAllocator]] = {
    a.name: a for a in (EqualShareAllocator, ProportionalAllocator, MinMaxLatencyAllocator)}
