"""A network's air as its run folder records it: coupling.csv, each client's coupling gain to
every cell at the drop (written with cells.csv: `coupling_rows`), and what deriving every
transfer's rate again needs (books.blocks.AirSettings), read back from the folder's files
alone (`air_settings_of`): scenario.yaml (the bands, the noise, interference, the TDD frame,
the NR tables, the fading and its seed), coupling.csv (the gains) and fading.csv (each
transfer's |h|^2 to every cell), the same settings the run's link checked itself with
(NetworkLink.air_record), the coupling to the bit; with moving clients, mobility.csv's
moves, each one's gains drawn again from its position through the scenario's moving links."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import channel
from scala_netsim.books.blocks import AirSettings
from scala_netsim.books.moves import Moves
from scala_netsim.config.scenario import Scenario, validate_scenario
from scala_netsim.core.columns import COUPLING_COLUMNS, FADING_ATTEMPT_COLUMNS, MOVE_COLUMNS
from scala_netsim.core.errors import DamagedRunError
from scala_netsim.core.files import (
    COUPLING_CSV,
    FADING_CSV,
    MOBILITY_CSV,
    SCENARIO_YAML,
    run_file,
)
from scala_netsim.core.results import damaged_hint, read_record, read_written_yaml
from scala_netsim.core.seeds import Seeds
from scala_netsim.runner.world import network_cell, network_settings
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.network.fading import NetworkFading, blocks_of_time
from scala_netsim.sim.network.nr import NrBlocks
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.settings import NetworkSettings
from scala_netsim.sim.network.traffic import LoadTerms, fluid_load, load_terms


def coupling_rows(cell: Cell) -> list[tuple[int, int, float]] | None:
    """coupling.csv's rows (core.columns.COUPLING_COLUMNS) of a network's drop: client by
    client, cell by cell, each coupling gain as the float the radio map holds (written with
    Python's shortest repr, which reads back to the same bits), and after the clients any
    other users' (network.traffic: user u as client_id clients + u, the radio map's rows);
    None: one cell."""
    if cell.network is None:
        return None
    coupling = RadioMap.of(cell).coupling
    clients, cells = coupling.shape
    return list(zip(np.repeat(np.arange(clients), cells).tolist(),
                    np.tile(np.arange(cells), clients).tolist(), coupling.ravel().tolist(),
                    strict=True))


def read_coupling(folder: Path | str) -> np.ndarray:
    """A network run's coupling gains (clients x cells, linear) from its coupling.csv;
    DamagedRunError when the file is missing or not a whole table of clients by cells in
    order."""
    table = read_record(folder, COUPLING_CSV)
    path = run_file(folder, COUPLING_CSV)
    if tuple(table.columns) != COUPLING_COLUMNS:
        raise DamagedRunError(f"{path}: columns {list(table.columns)}, not "
                              f"{list(COUPLING_COLUMNS)}; {damaged_hint(folder)}")
    client, cell = table["client_id"].to_numpy(), table["cell"].to_numpy()
    cells = int(cell.max()) + 1 if len(table) else 0
    clients = len(table) // cells if cells else 0
    if (not len(table) or clients * cells != len(table)
            or not np.array_equal(client, np.repeat(np.arange(clients), cells))
            or not np.array_equal(cell, np.tile(np.arange(cells), clients))):
        raise DamagedRunError(f"{path}: not every client's gain to every cell, client by "
                              f"client and cell by cell; {damaged_hint(folder)}")
    return table["coupling_linear"].to_numpy(dtype=float).reshape(clients, cells)


def air_settings_of(folder: Path | str) -> AirSettings:
    """What deriving a network run's rates again needs (books.air_rates.air_rate_problems, with
    air.csv and events.csv), from its folder's files alone: NetworkLink.air_record's
    settings, built from scenario.yaml, coupling.csv and fading.csv (its rows, where the run
    faded by the round or the transfer), and under fading in blocks of time each block's
    row drawn again from the scenario's seed, as the run drew it."""
    folder = Path(folder)
    scenario = validate_scenario(read_written_yaml(folder / SCENARIO_YAML))
    s = network_settings(scenario)
    coupling = read_coupling(folder)
    section = scenario.network.fading
    fading = channel.Fading(section.kind, section.k_factor_db, section.coherence,
                            section.coherence_s)
    fades: list[tuple] = []
    fade_key = ""
    if run_file(folder, FADING_CSV).is_file():
        table = read_record(folder, FADING_CSV)
        fades = list(table.itertuples(index=False, name=None))
        fade_key = "attempt" if tuple(table.columns) == FADING_ATTEMPT_COLUMNS else ""
    network_fading = (NetworkFading(fading, Seeds(scenario.seed).sequence("fading"),
                                    coupling.shape[1]) if fading.fades else None)
    coherence_s, draw_block = blocks_of_time(network_fading)
    terms = _load_terms(scenario, s, coupling)
    load_floor, load_share = fluid_load(terms, s)
    moves = _moves(folder, scenario)
    return AirSettings(
        blocks={d.value: n for d, n in s.blocks.items()}, block_hz=s.block_hz,
        noise_w={d.value: s.noise_w_per_hz(d) * s.block_hz for d in channel.Direction},
        interference=s.interference, coupling=coupling, frame=s.frame,
        nr=None if s.nr is None else {d.value: t for d, t in s.nr.tables.items()},
        fades=fades, fade_key=fade_key, coherence_s=coherence_s, draw_block=draw_block,
        load_floor=load_floor, load_share=load_share, moves=moves,
        moved_floor=None if terms is None or moves is None else terms.moved_floor)


def _moves(folder: Path, scenario: Scenario) -> Moves | None:
    """A moving network's moves (mobility.csv), each one's gains drawn again from its
    position and cell through the scenario's moving links (the world's, from its seed);
    None where its clients stood still."""
    if not run_file(folder, MOBILITY_CSV).is_file():
        return None
    table = read_record(folder, MOBILITY_CSV)
    if tuple(table.columns) != MOVE_COLUMNS:
        raise DamagedRunError(f"{run_file(folder, MOBILITY_CSV)}: columns "
                              f"{list(table.columns)}, not {list(MOVE_COLUMNS)}; "
                              f"{damaged_hint(folder)}")
    network = network_cell(scenario, Seeds(scenario.seed)).network
    assert network is not None and network.mobile is not None    # (it moved its clients)
    mobile = network.mobile
    rows = [(int(k), float(t), float(x), float(y), float(w), int(c))
            for k, t, x, y, w, c in table.itertuples(index=False, name=None)]
    return Moves(rows, mobile.coupling_at)


def _load_terms(scenario: Scenario, settings: NetworkSettings,
                coupling: np.ndarray) -> LoadTerms | None:
    """Other users' load (network.traffic) as the run's link built it, from the coupling
    of its clients and then its users (coupling.csv): None without traffic."""
    if settings.traffic is None:
        return None
    radio = RadioMap(coupling)
    return load_terms(radio, scenario.data.num_clients, settings, settings.traffic,
                      NrBlocks(radio, settings).cap)
