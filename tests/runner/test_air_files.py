"""Issue 62: a network run records each client's coupling gain to every cell at the drop
(coupling.csv, digested), so that every transfer's rate, an interfered one's included, derives
again from the run folder's files alone (scala_netsim.runner.air_files.air_settings_of): the
coupling read back is the radio map's to the bit, and the rates derived with it match the
records."""

import dataclasses
import json

import numpy as np
import pytest

from scala_netsim.books.air_rates import air_rate_problems
from scala_netsim.core.columns import COUPLING_COLUMNS
from scala_netsim.core.errors import DamagedRunError
from scala_netsim.core.files import AIR_CSV, COUPLING_CSV, EVENTS_CSV, SUMMARY_JSON
from scala_netsim.core.results import file_sha256, read_csv, read_record
from scala_netsim.runner.air_files import air_settings_of, read_coupling
from scala_netsim.runner.writer import RunWriter

from conftest import NETWORK

FADING = {"none": None, "transfer": {"kind": "rayleigh", "coherence": "transfer"},
          "time": {"kind": "rayleigh", "coherence": "time", "coherence_s": 0.05}}


def written_run(make_run, folder, network):
    """A timing-only SCALA run of 40 clients in the 7-site network, run to its end and its
    folder written as execute_run writes it."""
    run = make_run("scala", data={"num_clients": 40}, training={"participation": 0.3},
                   network=network, timing_only=True)
    writer = RunWriter(folder, run.scenario, run.world)
    while not run.finished:
        run.step()
    writer.flush(run, now=True)
    writer.summary({"status": "completed"})
    assert run.problems() == []
    return run


@pytest.mark.parametrize("fading", FADING)
def test_an_interfered_network_run_derives_its_rates_again_from_its_files_alone(
        make_run, tmp_path, fading):
    network = {**NETWORK, "interference": True}
    if FADING[fading] is not None:
        network["fading"] = FADING[fading]
    run = written_run(make_run, tmp_path, network)
    radio = run.link.radio
    table = read_csv(tmp_path / COUPLING_CSV)
    assert tuple(table.columns) == COUPLING_COLUMNS
    assert len(table) == radio.num_clients * radio.num_cells == 40 * 21
    digests = json.loads((tmp_path / SUMMARY_JSON).read_text())["files_sha256"]
    assert digests[COUPLING_CSV] == file_sha256(tmp_path / COUPLING_CSV)

    settings = air_settings_of(tmp_path)
    # the radio map's coupling, to the bit
    assert settings.coupling.shape == radio.coupling.shape
    assert settings.coupling.tobytes() == radio.coupling.tobytes()
    # the rest as the link checked itself with
    own = run.link.air_record().settings
    for field in ("blocks", "block_hz", "noise_w", "interference", "fade_key", "coherence_s"):
        assert getattr(settings, field) == getattr(own, field), field
    assert np.array_equal(np.asarray(settings.fades, float), np.asarray(own.fades, float))
    assert (len(settings.fades) > 0) == (fading == "transfer")
    assert (settings.draw_block is not None) == (fading == "time")

    air, events = read_record(tmp_path, AIR_CSV), read_record(tmp_path, EVENTS_CSV)
    assert air_rate_problems(air, events, settings) == []
    # the interference needs every cell's gain: the gains to the cells that serve no one
    # doubled, the interfered transfers' rates no longer match their records
    louder = settings.coupling.copy()
    others = np.ones(louder.shape, dtype=bool)
    others[np.arange(len(louder)), radio.serving] = False
    louder[others] *= 2.0
    assert air_rate_problems(air, events, dataclasses.replace(settings, coupling=louder))


def test_a_run_in_one_cell_writes_no_coupling_record(make_run, tmp_path):
    run = make_run("fedavg", timing_only=True)
    RunWriter(tmp_path, run.scenario, run.world)
    assert (tmp_path / "clients.csv").is_file()
    assert not (tmp_path / COUPLING_CSV).exists()


def test_a_coupling_record_with_a_gain_missing_is_refused_naming_it(make_run, tmp_path):
    run = make_run("fedavg", data={"num_clients": 40}, network=NETWORK, timing_only=True)
    RunWriter(tmp_path, run.scenario, run.world)
    assert read_coupling(tmp_path).tobytes() == run.link.radio.coupling.tobytes()
    lines = (tmp_path / COUPLING_CSV).read_text().splitlines(keepends=True)
    (tmp_path / COUPLING_CSV).write_text("".join(lines[:5] + lines[6:]))
    with pytest.raises(DamagedRunError, match=r"coupling\.csv: not every client's gain"):
        read_coupling(tmp_path)


def test_a_moving_run_derives_its_rates_again_from_its_files_alone(make_run, tmp_path):
    """Clients driving at 120 km/h under round robin with other users' load in its mean:
    mobility.csv's moves, drawn again through the scenario's moving links, give every rate
    (each moved client's downlink floor too); a move's position shifted by a metre does
    not."""
    network = {**NETWORK, "scheduler": "round_robin",
               "traffic": {"kind": "ftp3", "offered_load": 0.3, "model": "fluid"},
               "mobility": {"kind": "random_waypoint", "vehicle_share": 1.0,
                            "vehicle_speed_kmh": 120.0}}
    run = written_run(make_run, tmp_path, network)
    assert len(run.link.mobility.handover_rows) > 0
    settings = air_settings_of(tmp_path)
    air, events = read_record(tmp_path, AIR_CSV), read_record(tmp_path, EVENTS_CSV)
    assert air_rate_problems(air, events, settings) == []
    rows = list(settings.moves.rows)
    clients = events["client_id"].to_numpy()[air["event_index"].to_numpy()]
    on_air = [j for j, (k, t, *_) in enumerate(rows)
              if ((clients == k) & (air["start_s"] < t) & (air["end_s"] > t)).any()]
    i = on_air[0]                      # (a move while its client was on the air)
    k, t, x, y, walked, cell = rows[i]
    rows[i] = (k, t, x + 1.0, y, walked, cell)
    shifted = dataclasses.replace(settings, moves=type(settings.moves)(
        rows, settings.moves.coupling_at))
    assert air_rate_problems(air, events, shifted) != []
