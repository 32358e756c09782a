"""Placement of clients in the cell."""

import numpy as np


def drop_clients_uniform_disk(num_clients: int, radius_m: float, min_distance_m: float,
                              rng: np.random.Generator) -> np.ndarray:
    """Drop clients uniformly over the AREA of the annulus min_distance_m <= d <= radius_m
    around a base station at the origin.

    Inverse-CDF sampling: P(d <= r) = (r^2 - r0^2) / (R^2 - r0^2), so
    d = sqrt(r0^2 + U (R^2 - r0^2)). Returns the distances in metres. (Only the distance
    matters to an isotropic cell; the angle would be uniform on [0, 2 pi).)
    """
    if not 0 <= min_distance_m < radius_m:
        raise ValueError(
            f"need 0 <= min_distance_m < radius_m, got min_distance_m={min_distance_m}, "
            f"radius_m={radius_m}"
        )
    u = rng.random(num_clients)
    return np.sqrt(min_distance_m**2 + u * (radius_m**2 - min_distance_m**2))
