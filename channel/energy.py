"""Energy a client spends: sending and computing.

Transmission: E = p * airtime, every attempt of a retransmitted transfer counted (the radio
is on for each).

Computation: the CMOS dynamic-power model of the wireless-FL literature, E = kappa * C * f^2
for C processor cycles at clock f (cycles/s), kappa the effective switched capacitance in
J s^2 / cycle^3 (typically 1e-28; Tran et al., "Federated Learning over Wireless Networks:
Optimization Model Design and Analysis", INFOCOM 2019; Yang et al., "Energy Efficient
Federated Learning Over Wireless Communication Networks", IEEE TWC 2021). Here a client's
capacity is in FLOP/s, not cycles/s: we take one FLOP per cycle, so C = FLOPs and f = the
client's FLOP/s, and E = kappa * FLOPs * (FLOP/s)^2. A processor doing n FLOPs a cycle would
have C = FLOPs / n and f = (FLOP/s) / n: the same formula with kappa / n^3.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def transmit_energy_j(tx_power_w: ArrayLike, airtime_s: ArrayLike) -> np.ndarray:
    """Joules to transmit at `tx_power_w` for `airtime_s` (all attempts)."""
    return np.asarray(tx_power_w, dtype=float) * np.asarray(airtime_s, dtype=float)


def compute_energy_j(energy_coefficient: ArrayLike, flops: ArrayLike,
                     flops_per_s: ArrayLike) -> np.ndarray:
    """Joules to execute `flops` at `flops_per_s`: kappa * FLOPs * (FLOP/s)^2 (module text)."""
    f = np.asarray(flops_per_s, dtype=float)
    return np.asarray(energy_coefficient, dtype=float) * np.asarray(flops, dtype=float) * f * f
