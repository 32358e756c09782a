"""Radio and compute models of one cell: pure math over numbers (NumPy/SciPy only).

Nothing here knows about SimPy or torch; the engine asks these functions for rates and
durations and turns them into simulated time.
"""

from channel.units import db_to_linear, linear_to_db, dbm_to_w, w_to_dbm
from channel.pathloss import PathLossModel, Macro3gpp36814, PATHLOSS_MODELS, make_pathloss
from channel.geometry import drop_clients_uniform_disk
from channel.radio import noise_power_w, snr_linear, shannon_rate_bps, airtime_s
from channel.bandwidth import BandwidthAllocator, EqualShareAllocator
from channel.compute import compute_time_s, sample_flops_per_s

__all__ = [
    "db_to_linear",
    "linear_to_db",
    "dbm_to_w",
    "w_to_dbm",
    "PathLossModel",
    "Macro3gpp36814",
    "PATHLOSS_MODELS",
    "make_pathloss",
    "drop_clients_uniform_disk",
    "noise_power_w",
    "snr_linear",
    "shannon_rate_bps",
    "airtime_s",
    "BandwidthAllocator",
    "EqualShareAllocator",
    "compute_time_s",
    "sample_flops_per_s",
]
