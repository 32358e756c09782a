"""The world a run lives in, shared by the scenario's algorithms: the partition, the dropped
cell, the link model, the round rules, the trainer's setup; and the dataset of a cell, loaded once
per process, with deterministic kernels."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

import channel
from scala_netsim.algorithms.common import ClientData, SGDSettings, TrainerSetup
from scala_netsim.algorithms.config import AlgorithmConfig
from scala_netsim.books.duplexing import Duplexing
from scala_netsim.config.link_budget import edge_rate_warning, undecodable_problem
from scala_netsim.config.network import NetworkConfig
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario
from scala_netsim.core.catalog import NATIVE_SIZE_ARCHS
from scala_netsim.core.columns import CELL_COLUMNS, CLIENT_COLUMNS, CLIENT_TAIL_COLUMNS
from scala_netsim.core.seeds import Seeds
from scala_netsim.learn.compression import Wire
from scala_netsim.learn.contract import Trainer
from scala_netsim.learn.data import Dataset, load_dataset
from scala_netsim.learn.partition import label_counts, make_partition
from scala_netsim.runner.mobility import moving_clients
from scala_netsim.sim.cell import BackgroundUsers, Cell, NetworkView
from scala_netsim.sim.drops import RoundRules
from scala_netsim.sim.network.nr import NrBlocks
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.settings import NetworkSettings, NrLink, TrafficSettings


@dataclass
class World:
    """What every algorithm of a scenario shares: the same partition and the same cell."""

    dataset: Dataset
    client_indices: list[np.ndarray]
    label_counts: np.ndarray
    cell: Cell
    seeds: Seeds


def client_partition(scenario: Scenario, dataset: Dataset) -> list[np.ndarray]:
    """Each client's training-sample indices, reproducibly from the seed (PartitionError when
    the partition cannot be made, e.g. a client would get no sample).

    The last few partitions are kept (the CLI checks a scenario's partition before it runs,
    then builds the run's world from it; 10,000 clients' take seconds), keyed by the dataset
    object, which the entry holds so that its id cannot be reused by another."""
    part = scenario.data.partition
    key = (id(dataset), part.model_dump_json(), scenario.data.num_clients, scenario.seed)
    hit = _PARTITIONS.pop(key, None)
    if hit is None:
        hit = (dataset, make_partition(
            part.kind, dataset.train_y.cpu().numpy(), scenario.data.num_clients,
            dataset.num_classes, Seeds(scenario.seed).numpy("partition"),
            alpha=getattr(part, "alpha", None), beta=getattr(part, "beta", None),
            samples_per_client=getattr(part, "samples_per_client", None)))
    _PARTITIONS[key] = hit                      # most recently used last
    while len(_PARTITIONS) > 4:
        del _PARTITIONS[next(iter(_PARTITIONS))]
    return hit[1]


_PARTITIONS: dict[tuple, tuple[Dataset, list[np.ndarray]]] = {}


def pathloss_model(network: NetworkConfig) -> channel.PathLossModel:
    """The scenario's path-loss model, built with its radio settings (its carrier)."""
    return channel.PATHLOSS_MODELS[network.pathloss].from_network(network)


def build_world(scenario: Scenario, dataset: Dataset) -> World:
    """Partition the training set and drop the clients, reproducibly from the seed."""
    seeds = Seeds(scenario.seed)
    labels = dataset.train_y.cpu().numpy()
    client_indices = client_partition(scenario, dataset)
    net, comp = scenario.network, scenario.compute
    if net.layout.kind == "hexagonal":
        return World(dataset, client_indices,
                     label_counts(labels, client_indices, dataset.num_classes),
                     network_cell(scenario, seeds), seeds)
    distance_m = channel.drop_clients_uniform_disk(
        scenario.data.num_clients, net.radius_m, net.min_distance_m,
        seeds.numpy("drop"))
    model = pathloss_model(net)
    shadowing_db: np.ndarray | None
    o2i_db: np.ndarray | None = None
    drawn_columns: dict[str, np.ndarray] = {}
    if isinstance(model, channel.pathloss.Tr38901):   # per-client LOS, indoor, shadowing
        drawn = model.draw_clients(distance_m, lambda name: seeds.numpy("propagation", name))
        pathloss_db, shadowing_db, o2i_db = drawn.pathloss_db, drawn.shadowing_db, drawn.o2i_db
        drawn_columns = {"d3d_m": drawn.d3d_m, "h_ut_m": drawn.h_ut_m,
                         "los": drawn.los.astype(int), "indoor": drawn.indoor.astype(int)}
    else:
        pathloss_db = model.pathloss_db(distance_m)
        # its own stream: the same draws whatever the algorithm or the other settings
        shadowing_db = (channel.shadowing_db(net.shadowing_std_db, scenario.data.num_clients,
                                             seeds.numpy("shadowing"))
                        if net.shadowing_std_db > 0 else None)
    cell = Cell(
        distance_m=distance_m,
        pathloss_db=pathloss_db,
        flops_per_s=channel.sample_flops_per_s(scenario.data.num_clients, *comp.client_flops_per_s,
                                               seeds.numpy("flops")),
        server_flops_per_s=comp.server_flops_per_s,
        uplink_bandwidth_hz=net.uplink_bandwidth_hz,
        downlink_bandwidth_hz=net.downlink_bandwidth_hz,
        shadowing_db=shadowing_db, o2i_db=o2i_db, drawn=drawn_columns,
    )
    return World(dataset, client_indices, label_counts(labels, client_indices, dataset.num_classes),
                 cell, seeds)


def network_cell(scenario: Scenario, seeds: Seeds) -> Cell:
    """The clients of a hexagonal layout: dropped uniformly over the sites' hexagons (the
    `drop` stream), every link's losses drawn (the `propagation` stream: a client's indoor
    state and O2I loss once, each link's LOS state and shadowing from the site's own child),
    each client served by its strongest cell; the Cell holds the serving link."""
    net, comp, n = scenario.network, scenario.compute, scenario.data.num_clients
    lay = net.layout
    sites_xy = channel.layout.hexagonal_sites(lay.sites, lay.isd_m)
    offsets = (channel.layout.wraparound_offsets(lay.sites, lay.isd_m)
               if lay.wraparound and lay.sites > 1 else None)
    points = channel.layout.drop_uniform_in_hexagons(n, sites_xy, lay.isd_m, net.min_distance_m,
                                                     seeds.numpy("drop"))

    model = pathloss_model(net)
    drop = _dropped(net, model, points, sites_xy, offsets, seeds)
    d2d_m, losses = drop.on_serving_link(drop.geometry.d2d_m), drop.losses
    drawn = {"serving_cell": drop.serving, "x_m": drop.x_m, "y_m": drop.y_m, "d2d_m": d2d_m}
    if isinstance(model, channel.pathloss.Tr38901):
        drawn.update(d3d_m=channel.tr38901.distance_3d_m(d2d_m, model.bs_height_m,
                                                         losses.h_ut_m),
                     h_ut_m=losses.h_ut_m, los=drop.on_serving_link(losses.los).astype(int),
                     indoor=losses.indoor.astype(int))
    antenna_db = drop.antenna_db[np.arange(n), drop.serving]
    return Cell(
        distance_m=d2d_m, pathloss_db=drop.on_serving_link(losses.pathloss_db),
        flops_per_s=channel.sample_flops_per_s(n, *comp.client_flops_per_s,
                                               seeds.numpy("flops")),
        server_flops_per_s=comp.server_flops_per_s,
        uplink_bandwidth_hz=net.uplink_bandwidth_hz,
        downlink_bandwidth_hz=net.downlink_bandwidth_hz,
        shadowing_db=drop.on_serving_link(losses.shadowing_db), o2i_db=losses.o2i_db,
        drawn=drawn, antenna_gain_db=antenna_db,
        network=NetworkView(drop.cells, drop.serving, channel.db_to_linear(drop.coupling_db),
                            background_users(net, model, sites_xy, offsets, seeds),
                            moving_clients(net, model, drop, sites_xy, offsets, seeds)))


def _dropped(net: NetworkConfig, model: channel.pathloss.PathLossModel, points: np.ndarray,
             sites_xy: np.ndarray, offsets: np.ndarray | None, seeds: Seeds,
             *stream_names: str) -> channel.network.NetworkDrop:
    """The links of points in the network's layout, their losses drawn from the
    `propagation` stream (under the `traffic` stream's `stream_names` child for other
    users): a point's indoor state and O2I loss once, each link's LOS state and shadowing
    from its site's own child."""
    lay = net.layout

    def stream(name: str, site: int | None = None) -> np.random.Generator:
        names = (name,) if site is None else (name, f"site{site}")
        return (seeds.numpy("traffic", *stream_names, *names) if stream_names
                else seeds.numpy("propagation", *names))

    return channel.network.drop_network(
        channel.network.hexagonal_cells(lay.sites, lay.isd_m, lay.sectors), points, sites_xy,
        offsets, lambda d2d_m: draw_links(model, d2d_m, stream, net),
        lay.downtilt_deg, getattr(model, "bs_height_m", 0.0), lay.panel_rows,
        lay.panel_columns)


def background_users(net: NetworkConfig, model: channel.pathloss.PathLossModel,
                     sites_xy: np.ndarray, offsets: np.ndarray | None,
                     seeds: Seeds) -> BackgroundUsers | None:
    """Other users (network.traffic), users_per_cell x the cells of them dropped as the
    clients are, uniformly over the sites' hexagons, each served by its strongest cell (so a
    cell holds users_per_cell of them on average), from the `traffic` stream alone: the
    clients' drop and links are the same with or without them. None without traffic."""
    if not net.traffic.on:
        return None
    lay = net.layout
    n = net.traffic.users * lay.sites * lay.sectors
    points = channel.layout.drop_uniform_in_hexagons(n, sites_xy, lay.isd_m, net.min_distance_m,
                                                     seeds.numpy("traffic", "drop"))
    drop = _dropped(net, model, points, sites_xy, offsets, seeds, "propagation")
    return BackgroundUsers(drop.x_m, drop.y_m, drop.serving,
                           channel.db_to_linear(drop.coupling_db),
                           drop.on_serving_link(drop.losses.los).astype(bool),
                           drop.losses.indoor.astype(bool))


def draw_links(model: channel.pathloss.PathLossModel, d2d_m: np.ndarray,
               stream: Callable[..., np.random.Generator],
               net: NetworkConfig) -> channel.network.LinkLosses:
    """The model's links; the site correlation is passed only when asked for, so that a
    model of the user's written before it existed keeps working without it."""
    if net.shadowing_site_correlation > 0:
        return model.draw_links(d2d_m, stream, net.shadowing_std_db,
                                site_correlation=net.shadowing_site_correlation)
    return model.draw_links(d2d_m, stream, net.shadowing_std_db)


def network_settings(scenario: Scenario) -> NetworkSettings:
    """What the network's link (scala_netsim.sim.network.link) takes from the scenario."""
    net = scenario.network
    spacing = net.subcarrier_spacing_hz
    pc, backhaul = net.power_control, net.backhaul
    return NetworkSettings(
        blocks={channel.Direction.UPLINK: channel.nr.resource_blocks(net.uplink_bandwidth_hz,
                                                                     spacing),
                channel.Direction.DOWNLINK: channel.nr.resource_blocks(
                    net.downlink_bandwidth_hz, spacing)},
        block_hz=channel.nr.SUBCARRIERS_PER_BLOCK * spacing,
        noise_psd_w_per_hz=float(channel.dbm_to_w(net.noise_psd_dbm_per_hz
                                                  + net.bs_noise_figure_db)),
        downlink_noise_psd_w_per_hz=float(channel.dbm_to_w(net.noise_psd_dbm_per_hz
                                                           + net.client_noise_figure_db)),
        client_tx_power_w=net.client_tx_power_w, bs_tx_power_w=net.bs_tx_power_w,
        interference=net.interference,
        power_control=None if pc is None else (pc.p0_dbm, pc.alpha),
        backhaul=None if backhaul is None else (backhaul.latency_s, backhaul.bandwidth_bps),
        duplexing=duplexing(scenario), nr=nr_link(scenario), scheduler=net.scheduler,
        pf_beta=net.pf_beta, slot_s=channel.tdd.slot_s(spacing),
        traffic=traffic_settings(scenario))


def traffic_settings(scenario: Scenario) -> TrafficSettings | None:
    """What the network's link takes of network.traffic (None: none), the seed of its
    arrivals from the `traffic` stream."""
    traffic = scenario.network.traffic
    if not traffic.on:
        return None
    directions = tuple(channel.Direction(d) for d in traffic.directions)
    return TrafficSettings(
        traffic.kind, directions, 8.0 * traffic.file_bytes,
        {d: traffic.load_of(d.value) for d in directions},
        Seeds(scenario.seed).seed("traffic", "arrivals"), traffic.record_files,
        traffic.model == "fluid")


#: the HARQ round trip with paired bands where network.harq_rtt_slots is not given (slots)
HARQ_RTT_SLOTS_FDD = 4


def nr_link(scenario: Scenario) -> NrLink | None:
    """The NR link abstraction's lookups, HARQ cap and round trip (network.link_abstraction:
    nr; None: Shannon rates). The round trip by default: 4 slots with paired bands, the
    pattern's period under TDD (a retransmission waits for its direction's slots again)."""
    net = scenario.network
    if net.link_abstraction != "nr":
        return None
    slot_s = channel.tdd.slot_s(net.subcarrier_spacing_hz)
    rtt = net.harq_rtt_slots
    if rtt is None:
        rtt = len(net.duplex.pattern) if net.duplex.kind == "tdd" else HARQ_RTT_SLOTS_FDD
    tables = {d: channel.nr_link.tables(d, net.mcs_table, channel.nr.resource_blocks(
        getattr(net, f"{d.value}_bandwidth_hz"), net.subcarrier_spacing_hz), slot_s,
        net.bler_target) for d in channel.Direction}
    return NrLink(tables, net.harq_max_transmissions, rtt * slot_s, net.mcs_table)


def duplexing(scenario: Scenario) -> Duplexing | None:
    """The scenario's TDD frame with an upload's grant delay K2 in seconds; None for paired
    bands (network.duplex)."""
    duplex, spacing = scenario.network.duplex, scenario.network.subcarrier_spacing_hz
    if duplex.kind != "tdd":
        return None
    slot_s = channel.tdd.slot_s(spacing)
    k2 = channel.tdd.default_k2_slots(spacing) if duplex.k2_slots is None else duplex.k2_slots
    return Duplexing(channel.tdd.TddFrame(duplex.pattern, duplex.special_slot, slot_s),
                     k2 * slot_s)


def cells_frame(cell: Cell) -> pd.DataFrame | None:
    """cells.csv of a network: each cell's site, position and boresight (None: one cell)."""
    if cell.network is None:
        return None
    cells = cell.network.cells
    return pd.DataFrame(dict(zip(CELL_COLUMNS, (np.arange(len(cells)), cells.site, cells.x_m,
                                                cells.y_m, cells.azimuth_deg), strict=True)))


def link_model(scenario: Scenario) -> channel.LinkModel:
    """The scenario's link model (network.link.mode), with the cell's radio settings."""
    net = scenario.network
    radio: dict[str, Any] = {
        "client_tx_power_w": net.client_tx_power_w, "bs_tx_power_w": net.bs_tx_power_w,
        "downlink_bandwidth_hz": net.downlink_bandwidth_hz,
        "noise_psd_dbm_per_hz": net.noise_psd_dbm_per_hz,
        "bs_noise_figure_db": net.bs_noise_figure_db,
        "client_noise_figure_db": net.client_noise_figure_db}
    if net.link.mode == "fixed_rate":
        radio.update(target_rate_bps=net.link.target_rate_bps,
                     max_attempts=net.link.max_attempts)
    return channel.LINK_MODELS[net.link.mode](**radio)


def cell_edge_warning(scenario: Scenario) -> str | None:
    """For a fixed-rate link, scala_netsim.config.link_budget.edge_rate_warning read with the
    run's own link and path-loss models; None otherwise."""
    if scenario.network.link.mode != "fixed_rate":
        return None
    return edge_rate_warning(scenario.network, link_model(scenario),
                             pathloss_model(scenario.network))


def undecodable_clients(scenario: Scenario) -> str | None:
    """Under the NR link abstraction: the drop's clients that can decode no MCS even without
    interference (the rule: scala_netsim.config.link_budget.undecodable_problem), found by
    dropping them as the run will (the same seed streams), so that the run is refused before
    any file is written. None where every client decodes, or under Shannon rates."""
    if scenario.network.link_abstraction != "nr":
        return None
    settings = network_settings(scenario)
    assert settings.nr is not None
    network = network_cell(scenario, Seeds(scenario.seed)).network
    assert network is not None     # (the clients alone: other users out of coverage get no
    #                                traffic, network.traffic)
    blocks = NrBlocks(RadioMap(network.coupling_linear, network.serving), settings)
    for direction, tables in settings.nr.tables.items():
        problem = undecodable_problem(scenario.network, direction,
                                      blocks.best_snr_db(direction),
                                      tables.lowest_sinr_db()[1:])
        if problem is not None:
            return problem
    return None


def undecodable_drops(points: list[tuple[str, Scenario]]) -> list[str]:
    """`undecodable_clients` of each drop (a network and seed) of the (label, scenario)
    points, as `label: problem` for the first point of that drop."""
    problems, seen = [], set()
    for label, scenario in points:
        drop = (scenario.network.model_dump_json(), scenario.seed, scenario.data.num_clients)
        if scenario.network.link_abstraction != "nr" or drop in seen:
            continue
        seen.add(drop)
        problem = undecodable_clients(scenario)
        if problem is not None:
            problems.append(f"{label}: {problem}")
    return problems


def clients_frame(world: World) -> pd.DataFrame:
    """clients.csv: the drop (core.columns.CLIENT_COLUMNS, what the cell drew, then
    CLIENT_TAIL_COLUMNS and the label counts)."""
    head = (np.arange(len(world.client_indices)), world.cell.distance_m,
            world.cell.pathloss_db)     # the basic loss, before shadowing and O2I
    tail = (world.cell.flops_per_s, [len(ix) for ix in world.client_indices])
    frame = pd.DataFrame({
        **dict(zip(CLIENT_COLUMNS, head, strict=True)),
        **({} if world.cell.shadowing_db is None else {"shadowing_db": world.cell.shadowing_db}),
        **({} if world.cell.o2i_db is None else {"o2i_db": world.cell.o2i_db}),
        **({} if world.cell.antenna_gain_db is None
           else {"antenna_gain_db": world.cell.antenna_gain_db}),
        **world.cell.drawn,
        **dict(zip(CLIENT_TAIL_COLUMNS, tail, strict=True)),
    })
    for y in range(world.label_counts.shape[1]):
        frame[f"label_{y}"] = world.label_counts[:, y]
    return frame


def round_rules(scenario: Scenario, section: AlgorithmConfig | None = None) -> RoundRules:
    """The scenario's deadlines and over-selection for the engine, and the server's order
    of the algorithm whose scenario section is `section`."""
    tr = scenario.training
    keep = scenario.num_participants if scenario.num_selected > scenario.num_participants else None
    return RoundRules(tr.deadline_s, tr.step_deadline_s, keep,
                      section is not None and section.sequential_server())


def trainer_setup(scenario: Scenario, world: World, device: torch.device,
                  section: AlgorithmConfig | None = None) -> TrainerSetup:
    """What the scenario's trainers are built from (scala_netsim.algorithms.common);
    `section`: the algorithm's scenario section (its optimizer_state)."""
    tr, ds = scenario.training, world.dataset
    return TrainerSetup(
        data=ClientData(ds.train_x, ds.train_y, world.client_indices, ds.num_classes),
        sgd=SGDSettings(scenario.selected_batch_size, tr.lr, tr.momentum, tr.weight_decay,
                        tr.grad_clip_norm,
                        section is not None and section.keeps_optimizer_state()),
        arch=scenario.model.arch, split=scenario.model.split, in_channels=ds.in_channels,
        rounds=tr.rounds, seeds=world.seeds, device=device, concurrency=scenario.concurrency)


def use_wire(trainer: Trainer, scenario: Scenario) -> None:
    """Give the trainer the scenario's compression (scala_netsim.learn.compression)."""
    c = scenario.compression
    if (c.uplink, c.downlink, c.models) == ("none", "none", "none"):
        return
    trainer.use_wire(Wire.of(c.uplink, c.downlink, c.models, c.topk_fraction))


# --- the dataset of a cell, loaded once per process, and deterministic kernels ------------
_DATASETS: dict[tuple, Dataset] = {}


def scenario_dataset(scenario: Scenario, device: torch.device | str) -> Dataset:
    """The scenario's dataset on `device`, loaded once per process."""
    d = scenario.data
    pad_to_32 = scenario.model.arch not in NATIVE_SIZE_ARCHS
    key = (d.dataset, d.data_dir, d.train_samples, d.test_samples, pad_to_32, str(device))
    if key not in _DATASETS:
        _DATASETS[key] = load_dataset(d.dataset, d.data_dir, d.train_samples,
                                      d.test_samples, pad_to_32).to(device)
    return _DATASETS[key]


def deterministic(device: torch.device) -> None:
    """Same scenario and seed, same numbers: deterministic kernels (CUDA also needs a fixed
    cuBLAS workspace; some CUDA kernels have no deterministic version and then only warn)."""
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=device.type == "cuda")
    # Deterministic mode also fills every fresh tensor with NaN, a debugging aid for reading
    # uninitialised memory that costs ~5 % of a small training step here; results do not
    # depend on it.
    # (torch sets this module attribute through a module subclass its stubs do not declare)
    torch.utils.deterministic.fill_uninitialized_memory = False  # type: ignore[attr-defined]


def describe(scenario: Scenario, dataset: Dataset, device: torch.device) -> str:
    """The scenario in a few lines: what the command line prints before it runs."""
    tr, net, comp, data = scenario.training, scenario.network, scenario.compute, scenario.data
    part = data.partition
    part_text = part.kind + "".join(f" {k}={v}" for k, v in part.model_dump().items()
                                    if k != "kind")
    return "\n".join([
        f"scenario {scenario.name} (seed {scenario.seed}, device {device})",
        f"  data: {data.dataset}, {len(dataset.train_y)} train / {len(dataset.test_y)} test "
        f"images, "
        f"{data.num_clients} clients, partition {part_text}",
        f"  model: {scenario.model.arch} split {scenario.model.split}",
        f"  training: {', '.join(scenario.algorithms)}; "
        + (f"until {tr.time_budget_s:g} s of simulated time (at most {tr.rounds} rounds)"
           if tr.time_budget_s is not None else f"{tr.rounds} rounds")
        + f" x {tr.local_iters} local iterations, B = {tr.batch_size}, "
        f"{scenario.num_participants} clients per round, lr {tr.lr}, momentum {tr.momentum}"
        + (f"; asynchronous: {scenario.concurrency} clients at once"
           if any(ALGORITHMS[a].traits.asynchronous for a in scenario.algorithms) else ""),
        *([f"  flower: {scenario.flower.describe()}"]  # type: ignore[attr-defined]
          if "flower" in scenario.algorithms else []),
        f"  cell: radius {net.radius_m:g} m, uplink {net.uplink_bandwidth_hz / 1e6:g} MHz at "
        f"{net.client_tx_power_w:g} W, downlink {net.downlink_bandwidth_hz / 1e6:g} MHz at "
        f"{net.bs_tx_power_w:g} W, noise {net.noise_psd_dbm_per_hz:g} dBm/Hz"
        + (f" (noise figures: base station {net.bs_noise_figure_db:g} dB, clients "
           f"{net.client_noise_figure_db:g} dB)"
           if net.bs_noise_figure_db or net.client_noise_figure_db else "") + ", path loss "
        f"{net.pathloss} at {net.carrier_frequency_hz / 1e9:g} GHz",
        *network_lines(scenario),
        f"  compute: clients {comp.client_flops_per_s[0]:.3g}..{comp.client_flops_per_s[1]:.3g} "
        f"FLOP/s, server {comp.server_flops_per_s:.3g} FLOP/s",
    ])


def network_lines(scenario: Scenario) -> list[str]:
    """describe()'s line on a network of cells (none for the single cell)."""
    net = scenario.network
    lay = net.layout
    if lay.kind == "single":
        return []
    blocks = channel.nr.resource_blocks(net.uplink_bandwidth_hz, net.subcarrier_spacing_hz)
    pc, backhaul = net.power_control, net.backhaul
    return [f"  network: {lay.sites} sites x {lay.sectors} sector(s), ISD {lay.isd_m:g} m"
            f"{', wraparound' if lay.wraparound and lay.sites > 1 else ''} (radius_m unused), "
            f"interference {'on' if net.interference else 'off'}, {blocks} uplink blocks of "
            f"{12 * net.subcarrier_spacing_hz / 1e3:g} kHz a cell, "
            + ("fixed client power" if pc is None
               else f"power control P0 {pc.p0_dbm:g} dBm alpha {pc.alpha:g}")
            + ("" if backhaul is None else f", backhaul {backhaul.latency_s * 1e3:g} ms "
               f"{backhaul.bandwidth_bps / 1e9:g} Gbit/s")] + traffic_lines(net)


def traffic_lines(net: NetworkConfig) -> list[str]:
    """describe()'s line on other users' traffic (none without)."""
    traffic = net.traffic
    if not traffic.on:
        return []
    what = ("full buffer" if traffic.kind == "full_buffer" else
            f"FTP model 3, {traffic.file_bytes / 1e6:g} MB files at offered load "
            + ", ".join(f"{traffic.load_of(d):g} {d}" for d in traffic.directions)
            + (" in its mean (fluid)" if traffic.model == "fluid" else ""))
    return [f"  traffic: {traffic.users} other user{'' if traffic.users == 1 else 's'} a cell "
            f"on average, {what}, "
            f"{' and '.join(traffic.directions)}"
            + ("; every file recorded" if traffic.record_files else "")]
