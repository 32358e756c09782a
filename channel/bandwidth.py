"""Bandwidth allocators: split a band among the clients that use it in a round."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass(frozen=True)
class LinkDemand:
    """What the clients sharing a band need from it in a round, one entry per client (arrays
    aligned with `client_ids`): each client's large-scale power gain, the bits it sends in one
    local step over this band, and the compute time before it sends them."""

    client_ids: np.ndarray
    gain_linear: np.ndarray
    payload_bits: np.ndarray
    compute_time_s: np.ndarray

    def __len__(self) -> int:
        return len(self.client_ids)


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


ALLOCATORS: dict[str, type[BandwidthAllocator]] = {a.name: a for a in (EqualShareAllocator,)}
