"""Bandwidth allocators: split a band among the clients that transmit in a round."""

from abc import ABC, abstractmethod



class BandwidthAllocator(ABC):
    """Total band (Hz) and the transmitting clients -> each client's sub-band (Hz)."""

    @abstractmethod
    def allocate_hz(self, total_bandwidth_hz: float, client_ids) -> dict:
        """Map each client id in `client_ids` to its bandwidth in Hz."""


class EqualShareAllocator(BandwidthAllocator):
    """Orthogonal equal shares: b_k = W / |C| for every transmitting client."""

    def allocate_hz(self, total_bandwidth_hz, client_ids):
        client_ids = list(client_ids)
        if not client_ids:
            return {}
        share_hz = float(total_bandwidth_hz) / len(client_ids)
        return {k: share_hz for k in client_ids}


