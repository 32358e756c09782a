"""Placement of clients in the cell."""

import numpy as np


def drop_clients_uniform_disk(num_clients: int, radius_m: float, min_distance_m: float,
                              rng: np.random.Generator):
    """Drop clients uniformly over the AREA of the annulus min_distance_m <= d <= radius_m
    around a base station at the origin.

    Inverse-CDF sampling: P(d <= r) = (r^2 - r0^2) / (R^2 - r0^2), so
    d = sqrt(r0^2 + U (R^2 - r0^2)). Returns (distance_m, x_m, y_m) arrays.
    """
    if not 0 <= min_distance_m < radius_m:
        raise ValueError(
            f"need 0 <= min_distance_m < radius_m, got min_distance_m={min_distance_m}, "
            f"radius_m={radius_m}"
        )
    u = rng.random(num_clients)
    distance_m = np.sqrt(min_distance_m**2 + u * (radius_m**2 - min_distance_m**2))
    angle_rad = rng.uniform(0.0, 2.0 * np.pi, num_clients)
    return distance_m, distance_m * np.cos(angle_rad), distance_m * np.sin(angle_rad)
