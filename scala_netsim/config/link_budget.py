"""The network's one rule that needs its drop (where each client stands): under the NR link
abstraction every client must decode some MCS, on some number of blocks with no
interference, in each direction, else its transfers would never end. The drop's numbers come
from scala_netsim.runner.world.undecodable_clients, which asks before anything is written
(the command line's and the Python API's runs, the re-timer's)."""

from __future__ import annotations

import numpy as np

from channel import Direction
from scala_netsim.config.network import NetworkConfig


def undecodable_problem(network: NetworkConfig, direction: Direction, snr_db: np.ndarray,
                        lowest_db: np.ndarray) -> str | None:
    """None, or the problem of `direction`'s clients that decode nothing: `snr_db` (clients,
    blocks 1..N), each client's SNR a block on its serving cell on n blocks with no
    interference (dB); `lowest_db` (blocks 1..N), the SINR the table's lowest MCS needs on n
    blocks (dB, channel.nr_link.LinkTables.lowest_sinr_db). The problem names the first such
    clients, their best SNR a block, the lowest MCS's threshold and what would let them."""
    never = np.flatnonzero(~(snr_db >= lowest_db[None, :]).any(axis=1))
    if not len(never):
        return None
    best = snr_db[never].max(axis=1)
    names = ", ".join(f"{k} ({b:.1f} dB)" for k, b in
                      zip(never[:5].tolist(), best[:5].tolist(), strict=True))
    pc = network.power_control
    if direction is Direction.DOWNLINK:
        power = f"raise network.bs_tx_power_w ({network.bs_tx_power_w:g} W)"
    elif pc is None:
        power = f"raise network.client_tx_power_w ({network.client_tx_power_w:g} W)"
    else:
        power = (f"raise network.power_control.p0_dbm ({pc.p0_dbm:g} dBm) or alpha "
                 f"({pc.alpha:g}), or network.client_tx_power_w "
                 f"({network.client_tx_power_w:g} W), the power they are capped at")
    table = "" if network.mcs_table == "64qam" else "the 64qam table, "
    return (f"network.link_abstraction: nr: {len(never)} client(s) can decode no MCS of the "
            f"{network.mcs_table} table on the {direction.value} even without interference, "
            f"on any number of blocks (best SNR a block): {names}; the table's lowest MCS "
            f"needs {lowest_db.min():.2f} dB at bler_target {network.bler_target:g}; {power}, "
            f"or use {table}a higher bler_target or a smaller layout.isd_m")
