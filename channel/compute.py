"""Compute model: FLOP/s capacities and compute durations."""

import numpy as np
from numpy.typing import ArrayLike


def compute_time_s(flops: ArrayLike, flops_per_s: ArrayLike) -> np.ndarray:
    """Seconds to execute `flops` floating-point operations at `flops_per_s`."""
    return np.asarray(flops, dtype=float) / np.asarray(flops_per_s, dtype=float)


def sample_flops_per_s(num_clients: int, low_flops_per_s: float, high_flops_per_s: float,
                       rng: np.random.Generator) -> np.ndarray:
    """Per-client FLOP/s capacities drawn uniformly in [low, high]."""
    if not 0 < low_flops_per_s <= high_flops_per_s:
        raise ValueError(
            f"need 0 < low <= high, got low={low_flops_per_s}, high={high_flops_per_s}"
        )
    return rng.uniform(low_flops_per_s, high_flops_per_s, num_clients)
