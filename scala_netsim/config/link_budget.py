"""The link budget's rules, asked before anything is written with the run's own numbers
(scala_netsim.runner.world: the command line's and the Python API's runs, the re-timer's):
the refusal of a drop (where each client stands) whose clients cannot decode under the NR
link abstraction (`undecodable_problem`), and the warning of a fixed-rate link whose target
a client at the cell edge cannot reach (`edge_rate_warning`)."""

from __future__ import annotations

import math

import numpy as np

import channel
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


def edge_rate_warning(network: NetworkConfig, model: channel.LinkModel,
                      pathloss: channel.PathLossModel) -> str | None:
    """For a fixed-rate link (`model`, the run's): a warning when a client at the cell edge
    (radius_m; in a hexagonal layout a site's corner, isd_m / sqrt 3, with no interference and
    no O2I loss; no shadowing, no fading; its loss by `pathloss`, the run's) could not reach
    network.link.target_rate_bps even on the whole band of a direction; it would then lose
    every transfer unless fading lifts its channel. None otherwise. (A warning, not a
    refusal: with fading or shadowing such a cell can work.)"""
    target_bps = network.link.target_rate_bps
    if (network.link.mode != "fixed_rate" or not isinstance(model, channel.AdaptiveShannonLink)
            or target_bps is None):
        return None   # (fixed_rate is a Shannon link with a target rate)
    # the edge: the paper's cell's radius, or a hexagonal site's corner (isd / sqrt 3)
    single = network.layout.kind == "single"
    edge_m = network.radius_m if single else network.layout.isd_m / math.sqrt(3)
    gain = float(channel.db_to_linear(-pathloss.pathloss_db(edge_m)))
    short = []
    for direction, band_hz in ((Direction.UPLINK, network.uplink_bandwidth_hz),
                               (Direction.DOWNLINK, network.downlink_bandwidth_hz)):
        capacity = model.capacity_bps(direction, gain, band_hz)
        if capacity < target_bps:
            short.append(f"{direction.value} {capacity:.4g} bit/s on all {band_hz:.4g} Hz")
    if not short:
        return None
    quiet = "" if single else ", no interference, no O2I loss"
    return (f"network.link.target_rate_bps: {target_bps:.4g} bit/s is above what a client at "
            f"the cell edge ({edge_m:.4g} m, no fading{quiet}) can reach: {'; '.join(short)}; "
            f"such clients lose every transfer unless fading lifts them")
