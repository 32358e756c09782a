"""Unit conversions between decibels, dBm and watts."""

import numpy as np
from numpy.typing import ArrayLike


def db_to_linear(x_db: ArrayLike) -> np.ndarray:
    """Power ratio from decibels: 10^(x/10)."""
    return np.power(10.0, np.asarray(x_db, dtype=float) / 10.0)


def linear_to_db(x_linear: ArrayLike) -> np.ndarray:
    """Decibels from a power ratio: 10 log10(x)."""
    return 10.0 * np.log10(np.asarray(x_linear, dtype=float))


def dbm_to_w(x_dbm: ArrayLike) -> np.ndarray:
    """Watts from dBm (0 dBm = 1 mW)."""
    return db_to_linear(np.asarray(x_dbm, dtype=float) - 30.0)


def w_to_dbm(x_w: ArrayLike) -> np.ndarray:
    """dBm from watts."""
    return linear_to_db(x_w) + 30.0
