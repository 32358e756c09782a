"""Radio and compute models of the paper's cell and of a network of cells: pure math over
numbers. The engine asks these models for rates, shares and durations and turns them into
simulated time. Swappable models are registered by the name a scenario uses:
`PATHLOSS_MODELS`, `LINK_MODELS`, `ALLOCATORS`.

What it imports: NumPy; SciPy (`scipy.optimize.brentq` and `scipy.special.lambertw` for the
min-max latency allocator, `scipy.special.exp1` for the ergodic Rayleigh capacity,
`scipy.special.ndtr` for a spatially consistent LOS state); numba, the
compiled kernels of `network_grid` and `nr_link`; the standard library (plugins by
`importlib.metadata` entry points). Torch and Sionna only inside `nr_link.sionna_tables` and
`nr_link.tables`, on first use under the NR link abstraction, to read Sionna's tables into
NumPy once a process (the optional extra `[sionna]`). Never SimPy, pydantic or scala_netsim.
"""

from channel import (
    handover,
    layout,
    mobility,
    moving,
    network,
    nr,
    nr_link,
    spatial,
    tdd,
    tr38901,
)
from channel.bandwidth import (
    ALLOCATORS,
    BandwidthAllocator,
    EqualShareAllocator,
    LinkDemand,
    MinMaxLatencyAllocator,
    ProportionalAllocator,
)
from channel.compute import compute_time_s, sample_flops_per_s
from channel.fading import FADING_KINDS, Fading, fading_power_gain, shadowing_db
from channel.geometry import drop_clients_uniform_disk
from channel.link import LINK_MODELS, AdaptiveShannonLink, Direction, FixedRateLink, LinkModel
from channel.pathloss import (
    PATHLOSS_MODELS,
    ClientPropagation,
    Macro3gpp36814,
    PathLossModel,
    register_pathloss,
)
from channel.radio import airtime_s, noise_power_w, shannon_rate_bps, snr_linear
from channel.units import db_to_linear, dbm_to_w, linear_to_db, w_to_dbm

__all__ = [
    "FADING_KINDS",
    "ALLOCATORS",
    "LINK_MODELS",
    "PATHLOSS_MODELS",
    "AdaptiveShannonLink",
    "BandwidthAllocator",
    "Direction",
    "EqualShareAllocator",
    "Fading",
    "FixedRateLink",
    "LinkDemand",
    "LinkModel",
    "MinMaxLatencyAllocator",
    "ProportionalAllocator",
    "Macro3gpp36814",
    "PathLossModel",
    "ClientPropagation",
    "handover",
    "layout",
    "mobility",
    "moving",
    "network",
    "nr",
    "nr_link",
    "spatial",
    "tdd",
    "tr38901",
    "register_pathloss",
    "airtime_s",
    "compute_time_s",
    "db_to_linear",
    "dbm_to_w",
    "drop_clients_uniform_disk",
    "fading_power_gain",
    "linear_to_db",
    "noise_power_w",
    "sample_flops_per_s",
    "shadowing_db",
    "shannon_rate_bps",
    "snr_linear",
    "w_to_dbm",
]
