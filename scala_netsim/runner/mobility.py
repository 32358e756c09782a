"""Moving clients as a run builds them (network.mobility, issue 64): each client's path from
its drop point (channel.mobility, from a `mobility` stream of its own), its links carried
along it (channel.moving.MovingLinks, the fields from streams of their own), and what the
link needs besides (scala_netsim.sim.network.mobile.Mobile). All of it a function of the
scenario and the seed: a re-timing or a resume draws the same paths and fields."""

from __future__ import annotations

import math

import numpy as np

import channel
from channel.mobility import KMH, Area, Path, Walk
from channel.moving import MovingLinks
from scala_netsim.config.network import NetworkConfig
from scala_netsim.core.seeds import Seeds
from scala_netsim.sim.network.mobile import Antennas, Mobile

#: the share of the shortest correlation distance a client's links read that it walks
#: between two draws of its gains where network.mobility.update_m is null
UPDATE_SHARE = 0.5


def moving_clients(net: NetworkConfig, model: channel.pathloss.PathLossModel,
                   drop: channel.network.NetworkDrop, sites_xy: np.ndarray,
                   offsets: np.ndarray | None, seeds: Seeds) -> Mobile | None:
    """The clients of `drop` moving as network.mobility says (None: static). Indoor clients
    walk random waypoints inside their building at the pedestrian speed; outdoor ones walk
    the mobility's kind over the network, a share `vehicle_share` of them (drawn from the
    `mobility` stream's `vehicles` child) driving at the vehicle speed."""
    mob = net.mobility
    if not mob.moving:
        return None
    assert isinstance(model, channel.pathloss.Tr38901)   # (config.mobility refuses others)
    lay = net.layout
    area = Area(sites_xy, lay.isd_m, offsets)
    points = np.column_stack([drop.x_m, drop.y_m])
    indoor = np.asarray(drop.losses.indoor, dtype=bool)
    vehicle = ~indoor & (seeds.numpy("mobility", "vehicles").random(len(points))
                         < mob.vehicle_share)
    paths = []
    for k in range(len(points)):
        speed_kmh = mob.vehicle_speed_kmh if vehicle[k] else mob.pedestrian_speed_kmh
        walk = Walk("random_waypoint" if indoor[k] else mob.kind, speed_kmh * KMH,
                    mob.pause_s, mob.leg_m, mob.building_radius_m if indoor[k] else None)
        paths.append(Path(points[k], walk, area, seeds.numpy("mobility", "path", f"client{k}")))
    links = MovingLinks(model, sites_xy, offsets, points, drop.losses, paths,
                        lambda kind, site: seeds.numpy("mobility", kind, f"site{site}"))
    table = model.table
    d_los, d_nlos, d_o2i = table.shadowing_correlation_m
    outdoor_m = min(d_los, d_nlos, table.los_correlation_m)
    update_m = (np.where(indoor, d_o2i, outdoor_m) * UPDATE_SHARE if mob.update_m is None
                else np.full(len(points), mob.update_m))
    antennas = Antennas(drop.cells, sites_xy, offsets, lay.downtilt_deg,
                        getattr(model, "bs_height_m", 0.0), lay.panel_rows, lay.panel_columns,
                        vectors=links.vectors)
    blocks = channel.nr.resource_blocks(net.downlink_bandwidth_hz, net.subcarrier_spacing_hz)
    per_element_w = net.bs_tx_power_w / (blocks * channel.nr.SUBCARRIERS_PER_BLOCK)
    return Mobile(links, antennas, update_m, net.handover.event, net.handover.interruption_s,
                  10.0 * math.log10(per_element_w) + 30.0, net.handover.inactivity_s)
