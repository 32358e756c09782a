"""5G NR numbers the network model uses: resource blocks per channel bandwidth (TS 38.101-1
Table 5.3.2-1, FR1) and uplink open-loop power control (TS 38.213 7.1.1). Pure numbers."""

from __future__ import annotations

import math

import numpy as np

SUBCARRIERS_PER_BLOCK = 12
#: TS 38.101-1 Table 5.3.2-1: N_RB by (subcarrier spacing, channel bandwidth), FR1
MAX_BLOCKS = {
    15e3: {5e6: 25, 10e6: 52, 15e6: 79, 20e6: 106, 25e6: 133, 30e6: 160, 40e6: 216, 50e6: 270},
    30e3: {5e6: 11, 10e6: 24, 15e6: 38, 20e6: 51, 25e6: 65, 30e6: 78, 40e6: 106, 50e6: 133,
           60e6: 162, 70e6: 189, 80e6: 217, 90e6: 245, 100e6: 273},
    60e3: {10e6: 11, 15e6: 18, 20e6: 24, 25e6: 31, 30e6: 38, 40e6: 51, 50e6: 65, 60e6: 79,
           70e6: 93, 80e6: 107, 90e6: 121, 100e6: 135},
}
#: below the table's narrowest carrier of a spacing, a band is a part of that carrier (a
#: bandwidth part of whole blocks, TS 38.211 4.4.5): the share of the band its blocks may fill,
#: the table's lowest (5 MHz at 15 kHz: 25 blocks x 180 kHz = 90 % of the band)
OCCUPANCY_OUTSIDE_TABLE = 0.9


def resource_blocks(bandwidth_hz: float, subcarrier_spacing_hz: float) -> int:
    """The resource blocks of a channel: the table's N_RB for a channel bandwidth it lists at
    that spacing; a band narrower than the spacing's narrowest listed channel is a part of
    that carrier, the whole blocks (12 subcarriers) that fit in 90 % of it. ValueError naming
    what is allowed where the spacing is not 15, 30 or 60 kHz, the band is no carrier of the
    table (100 MHz at 15 kHz, 200 MHz at 30 kHz, 7 MHz at 30 kHz) or holds no whole block."""
    if subcarrier_spacing_hz not in MAX_BLOCKS:
        raise ValueError(f"subcarrier_spacing_hz: must be 15e3, 30e3 or 60e3, got "
                         f"{subcarrier_spacing_hz:g}")
    carriers = MAX_BLOCKS[subcarrier_spacing_hz]
    listed = carriers.get(float(bandwidth_hz))
    if listed is not None:
        return listed
    narrowest_hz = min(carriers)
    spacing = f"{subcarrier_spacing_hz / 1e3:g} kHz"
    if bandwidth_hz > narrowest_hz:
        bands = [f"{b / 1e6:g}" for b in carriers]
        raise ValueError(
            f"{bandwidth_hz / 1e6:.7g} MHz at {spacing} subcarrier spacing is no NR channel "
            f"bandwidth (TS 38.101-1 Table 5.3.2-1, FR1); allowed at {spacing}: "
            f"{', '.join(bands[:-1])} or {bands[-1]} MHz ({min(carriers.values())} to "
            f"{max(carriers.values())} resource blocks), or less than "
            f"{narrowest_hz / 1e6:g} MHz (a part of a {narrowest_hz / 1e6:g} MHz carrier: the "
            f"whole blocks in 90 % of the band); got {bandwidth_hz:g}")
    blocks = math.floor(OCCUPANCY_OUTSIDE_TABLE * bandwidth_hz
                        / (SUBCARRIERS_PER_BLOCK * subcarrier_spacing_hz) + 1e-9)
    if blocks < 1:
        block_hz = SUBCARRIERS_PER_BLOCK * subcarrier_spacing_hz / OCCUPANCY_OUTSIDE_TABLE
        raise ValueError(f"bandwidth: {bandwidth_hz:g} Hz holds no whole resource block at "
                         f"{spacing} spacing (at least {block_hz:g} Hz)")
    return blocks


def uplink_tx_power_dbm(pathloss_db: np.ndarray | float, num_blocks: np.ndarray | int,
                        p0_dbm: float, alpha: float, p_max_dbm: float) -> np.ndarray:
    """Open-loop uplink power control (TS 38.213 7.1.1, PUSCH, no closed-loop term):
    P = min(P_max, P0 + 10 log10(M_RB) + alpha PL) dBm, M_RB the blocks the transfer uses,
    PL the path loss it compensates (alpha in [0, 1]: full compensation at 1)."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"power_control.alpha: must be in [0, 1], got {alpha:g}")
    wanted = p0_dbm + 10 * np.log10(np.asarray(num_blocks, dtype=float)) + alpha * np.asarray(
        pathloss_db, dtype=float)
    return np.minimum(p_max_dbm, wanted)
