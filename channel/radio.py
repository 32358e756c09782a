"""Noise, SNR and Shannon rate on an orthogonal (FDMA) sub-band."""

import numpy as np
from numpy.typing import ArrayLike

from channel.units import dbm_to_w


def noise_power_w(noise_psd_dbm_per_hz: ArrayLike, bandwidth_hz: ArrayLike) -> np.ndarray:
    """Thermal noise power N0 * b in watts, N0 given in dBm/Hz."""
    return dbm_to_w(noise_psd_dbm_per_hz) * np.asarray(bandwidth_hz, dtype=float)


def snr_linear(tx_power_w: ArrayLike, gain_linear: ArrayLike, noise_psd_dbm_per_hz: ArrayLike,
               bandwidth_hz: ArrayLike) -> np.ndarray:
    """Received SNR p g / (N0 b) on a sub-band of `bandwidth_hz`."""
    return (np.asarray(tx_power_w, dtype=float) * gain_linear
            / noise_power_w(noise_psd_dbm_per_hz, bandwidth_hz))


def shannon_rate_bps(bandwidth_hz: ArrayLike, tx_power_w: ArrayLike, gain_linear: ArrayLike,
                     noise_psd_dbm_per_hz: ArrayLike) -> np.ndarray:
    """Shannon capacity r = b log2(1 + p g / (N0 b)) in bit/s."""
    snr = snr_linear(tx_power_w, gain_linear, noise_psd_dbm_per_hz, bandwidth_hz)
    return np.asarray(bandwidth_hz, dtype=float) * np.log2(1.0 + snr)


def airtime_s(payload_bytes: ArrayLike, rate_bps: ArrayLike) -> np.ndarray:
    """Seconds to send `payload_bytes` at `rate_bps`."""
    return np.asarray(payload_bytes, dtype=float) * 8.0 / np.asarray(rate_bps, dtype=float)
