"""Other users' traffic (network.traffic, issue 63 item 2): by hand, a full-buffer user and a
learning client under round robin in one cell; FTP model 3's measured load in a lone cell
against its offered load, within its sampling error; a network run keeps every invariant
(no block idle while anyone has data, every rate and every file's bits derived again from
the records) with both kinds and both work-conserving schedulers; a run's files."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import simpy

from channel import Direction
from scala_netsim.books.blocks import round_robin_problems
from scala_netsim.books.traffic import background_air, traffic_frame, with_background
from scala_netsim.sim.cell import BackgroundUsers
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.schedulers import Request, RoundRobin
from scala_netsim.sim.network.settings import NetworkSettings, TrafficSettings
from scala_netsim.sim.network.traffic import Background, load_terms

from conftest import NETWORK as SEVEN_SITES
from conftest import events_of

BLOCK_HZ = 360e3
NOISE_W = 4e-21 * BLOCK_HZ            # -174 dBm/Hz over a block
BLOCKS = 8


def one_cell(gains: np.ndarray, users: int, settings: TrafficSettings, power_w: float,
             uplink_power: bool = True) -> tuple[simpy.Environment, dict, Background]:
    """Clients' rows then `users` background users' rows of `gains` (rows x 1 cell): both
    airs of one cell of BLOCKS blocks under round robin, and the background on them. Each
    sends `power_w`: on the uplink spread over its blocks, on the downlink a block's each."""
    env = simpy.Environment()
    radio = RadioMap(gains)
    airs = {d: Air(env, radio, BLOCKS, BLOCK_HZ, NOISE_W, d is Direction.UPLINK, True)
            for d in Direction}
    for air in airs.values():
        air.scheduler = RoundRobin(BLOCKS)
    first = len(gains) - users

    def powers(d: Direction, n: int) -> tuple[float, float]:
        return (power_w, power_w / n) if d is Direction.UPLINK else (power_w * n, power_w)

    def request_of(flow: Flow, d: Direction, k: int) -> Request:
        return Request(flow, k, 0, float(gains[k, 0]), lambda n: powers(d, n), BLOCKS)

    dropped = BackgroundUsers(np.zeros(users), np.zeros(users), np.zeros(users, np.int64),
                              gains[first:], np.zeros(users, bool), np.zeros(users, bool))
    link = NetworkSettings({d: BLOCKS for d in Direction}, BLOCK_HZ, NOISE_W / BLOCK_HZ,
                           power_w, power_w * BLOCKS)
    terms = load_terms(radio, first, link, settings, lambda d, k: BLOCKS)
    return env, airs, Background(env, settings, dropped, first, airs, request_of, lambda d: 1.0,
                                 terms)


def shannon(n: int, per_block_w: float, gain: float) -> float:
    return n * BLOCK_HZ * math.log2(1 + per_block_w * gain / NOISE_W)


def test_a_full_buffer_user_leaves_a_client_half_the_blocks_and_its_upload_the_closed_form():
    """Cell of 8 blocks: the full-buffer user (row 1) on the air from 0; the client's upload
    (row 0) from t0: 4 blocks each (the user joined first: blocks 0-3), the upload ends at
    t0 + bits / rate(4 blocks, its 0.2 W over them); the user then has all 8 again, and what
    it delivered is its rate's integral."""
    gains = np.array([[1e-10], [4e-11]])
    settings = TrafficSettings("full_buffer", (Direction.UPLINK,), record_files=True)
    env, airs, background = one_cell(gains, 1, settings, 0.2)
    bits, t0, power = 3e6, 0.02, 0.2
    ended = {}

    def upload(_: simpy.Event) -> None:
        flow = Flow(bits, env.now, lambda f: ended.setdefault("client", env.now))
        airs[Direction.UPLINK].request(Request(flow, 0, 0, 1e-10, lambda n: (power, power / n),
                                               BLOCKS))
        ended["flow"] = flow
    env.timeout(t0).callbacks.append(upload)
    env.run(until=0.5)
    end = t0 + bits / shannon(4, power / 4, 1e-10)
    assert ended["client"] == pytest.approx(end, rel=1e-12)
    client = ended["flow"]
    assert [(s[0].tolist(), s[1]) for s in client.stretches] == [([4, 5, 6, 7], 4)]
    rows, air_rows = background.record()
    user = 4e-11
    delivered = (shannon(8, power / 8, user) * t0 + shannon(4, power / 4, user) * (end - t0)
                 + shannon(8, power / 8, user) * (0.5 - end))
    assert len(rows) == 1 and math.isinf(rows[0][5]) and math.isnan(rows[0][8])
    assert rows[0][9] == pytest.approx(delivered, rel=1e-12)
    # its stretches: all 8, the first 4 while the client sent, all 8 again
    assert [(r[3], r[4], r[5], r[6]) for r in air_rows] == [
        (0, 8, 0.0, t0), (0, 4, t0, pytest.approx(end, rel=1e-12)),
        (0, 8, pytest.approx(end, rel=1e-12), 0.5)]
    (c, d, users, covered, rate, files, done, got, block_s), = [
        r for r in background.load_rows() if r[1] == "uplink"]
    assert (users, covered, files, done) == (1, 1, 0, 0)
    assert got == pytest.approx(delivered, rel=1e-12)
    assert block_s == pytest.approx(8 * t0 + 4 * (end - t0) + 8 * (0.5 - end), rel=1e-12)


def test_ftp3_files_take_the_offered_share_of_a_lone_cells_blocks():
    """A lone cell's downlink (every block at the same power: a rate grows with the blocks,
    so a file holds its block-seconds whatever it shares), 5 users, offered load 0.5 of 4
    Mbit files: over 3,000 s of files the blocks' time they took is 0.5 within 4 standard
    deviations of its sampling error (compound Poisson: lambda T E[s^2], s a file's
    block-seconds), and each file took S / R_u of the time alone."""
    gains = np.array([[1e-10], [3e-11], [1e-11], [5e-12], [2e-12], [1e-12]])
    settings = TrafficSettings("ftp3", (Direction.DOWNLINK,), 4e6, {Direction.DOWNLINK: 0.5},
                               seed=7,
                               record_files=True)
    env, airs, background = one_cell(gains, 5, settings, 0.01)
    horizon = 3000.0
    env.run(until=horizon)
    (_, _, users, covered, rate, files, done, got, block_s), = background.load_rows()
    load = block_s / (BLOCKS * horizon)
    seconds = np.array([4e6 / shannon(BLOCKS, 0.01, g) for g in gains[1:, 0]])  # alone, each
    assert rate == pytest.approx(0.5 / np.mean(seconds), rel=1e-12)            # lambda
    sigma = math.sqrt(rate * horizon * np.mean((BLOCKS * seconds) ** 2)) / (BLOCKS * horizon)
    assert files > 1000 and abs(load - 0.5) < 4 * sigma, (load, sigma, files)
    rows, _ = background.record()
    table = traffic_frame(rows)
    assert len(table) == files and (table["end_s"].notna().sum() == done)
    finished = table[table["end_s"].notna()]
    assert (finished["delivered_bits"] == 4e6).all()
    assert got == pytest.approx(finished["delivered_bits"].sum()
                                + table.loc[table["end_s"].isna(), "delivered_bits"].sum())
    # a user's files one after another, first come first served
    for _, mine in table.groupby("user"):
        starts, ends = mine["start_s"].to_numpy(), mine["end_s"].to_numpy()
        assert (mine["arrival_s"].to_numpy() <= starts).all()
        assert (starts[1:] >= ends[:-1]).all()


def test_the_seed_draws_the_same_files_and_another_seed_others():
    gains = np.array([[1e-10], [3e-11], [1e-11]])
    tables = []
    for seed in (3, 3, 4):
        settings = TrafficSettings("ftp3", (Direction.DOWNLINK,), 4e6,
                                   {Direction.DOWNLINK: 0.3}, seed=seed,
                                   record_files=True)
        env, _, background = one_cell(gains, 2, settings, 0.01)
        env.run(until=20.0)
        tables.append(traffic_frame(background.record()[0]))
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert not tables[0]["arrival_s"].equals(tables[2]["arrival_s"])


NETWORK = {**SEVEN_SITES, "layout": {"kind": "hexagonal", "sites": 1, "isd_m": 500.0, "sectors": 3},
           "carrier_frequency_hz": 3.5e9, "bs_tx_power_w": 40.0}


@pytest.mark.slow
@pytest.mark.parametrize("scheduler,traffic", [
    ("round_robin", {"kind": "full_buffer", "users_per_cell": 2}),
    ("round_robin", {"kind": "ftp3", "offered_load": 0.5, "users_per_cell": 4}),
    ("proportional_fair", {"kind": "ftp3", "offered_load": 0.7, "users_per_cell": 3,
                           "directions": ["uplink"]}),
])
def test_a_network_run_with_other_users_keeps_every_invariant(make_run, scheduler, traffic):
    """Timing only, 3 cells, every file recorded: run.problems() derives every learning
    transfer's and every file's bits again from the air records (both together), finds no
    block idle while anyone of its cell has data, none held twice; the background shares
    the cells' blocks with the learning."""
    run = make_run("scala", data={"num_clients": 20}, training={"participation": 0.3},
                   timing_only=True,
                   network={**NETWORK, "scheduler": scheduler,
                            "traffic": {**traffic, "record_files": True}})
    run.step()
    run.step()
    assert run.problems() == []
    files, files_air = run.link.background.record()
    frame = with_background(run.link.air_record().frame(), files_air)
    assert (frame["event_index"] < 0).any() and (frame["event_index"] >= 0).any()
    # a learning transfer shared its cell's blocks with a background file (proportional fair:
    # in turns, one parked while the other holds them all)
    assert _shared(frame)
    if traffic["kind"] == "ftp3":
        assert traffic_frame(files)["end_s"].notna().sum() > 10


def _shared(frame: pd.DataFrame) -> bool:
    """Were a learning transfer and a background file on the air of one cell and direction at
    once (holding blocks, or parked)?"""
    for _, rows in frame.groupby(["cell", "direction"]):
        learning, other = rows[rows["event_index"] >= 0], rows[rows["event_index"] < 0]
        for start, end in zip(learning["start_s"], learning["end_s"], strict=True):
            if ((other["start_s"] < end) & (other["end_s"] > start)).any():
                return True
    return False


@pytest.mark.slow
def test_the_checks_catch_a_missing_background_stretch(make_run):
    """Without a file's stretch the cell's blocks idle while the learning waits or the
    rates derived again miss an interferer: the checks say so."""
    run = make_run("fedavg", data={"num_clients": 20}, training={"participation": 0.3},
                   timing_only=True,
                   network={**NETWORK, "scheduler": "round_robin",
                            "traffic": {"kind": "full_buffer", "record_files": True}})
    run.step()
    files_air = run.link.background.record()[1]
    frame = with_background(run.link.air_record().frame(), files_air[1:])
    problems = round_robin_problems(frame, run.link.air_record().settings.blocks)
    assert problems and "idle" in problems[0]
    assert background_air(files_air)["event_index"].max() == -1
    assert len(events_of(run)) > 0


@pytest.mark.parametrize("model", ["files", "fluid"])
def test_a_long_download_gets_what_the_files_leave_of_a_lone_cell(model):
    """A lone cell's downlink at offered load 0.5 (no interference: every block at the same
    power, so a file holds its block-seconds whatever it shares): a download of 600 s alone
    on all blocks takes 1,200 s, in the files' mean exactly (model fluid: half the blocks'
    time), and with every file simulated within 4 standard deviations of the files'
    block-seconds over its time (what the files take, the download does not get)."""
    gains = np.array([[1e-10], [3e-11], [1e-11], [5e-12], [2e-12], [1e-12]])
    settings = TrafficSettings("ftp3", (Direction.DOWNLINK,), 4e6, {Direction.DOWNLINK: 0.5},
                               seed=11,
                               fluid=model == "fluid")
    env, airs, background = one_cell(gains, 5, settings, 0.01)
    rate = shannon(BLOCKS, 0.01, 1e-10)
    bits, start = 600.0 * rate, 50.0
    ended = {}

    def download(_: simpy.Event) -> None:
        floor_w, share = background.fluid_terms(Direction.DOWNLINK, 0, 0)
        flow = Flow(bits, env.now, lambda f: ended.setdefault("at", env.now))
        airs[Direction.DOWNLINK].request(Request(flow, 0, 0, 1e-10,
                                                 lambda n: (0.01 * n, 0.01), BLOCKS,
                                                 floor_w, share))
    env.timeout(start).callbacks.append(download)
    env.run(until=start + 2000.0)
    took = ended["at"] - start
    if model == "fluid":
        assert background.fluid_terms(Direction.DOWNLINK, 0, 0) == (0.0, 0.5)
        assert took == pytest.approx(1200.0, rel=1e-12)
        return
    seconds = np.array([4e6 / shannon(BLOCKS, 0.01, g) for g in gains[1:, 0]])
    arrivals = 0.5 / np.mean(seconds)
    sigma = math.sqrt(arrivals * took * np.mean(seconds ** 2))    # the files' seconds in it
    assert abs((took - 600.0) - 0.5 * took) < 4 * sigma, (took, sigma)
    assert sigma < 0.05 * took


@pytest.mark.slow
def test_a_fluid_load_run_derives_its_rates_again_from_its_files_alone(make_run, tmp_path):
    """Model fluid in 3 interfering cells: every learning transfer's rate derives again from
    the run's files alone (the load's interference and share rebuilt from scenario.yaml and
    coupling.csv, the users' rows after the clients'), and not without them; load.csv gives
    each cell the offered load; the learning is slower than with no other users."""
    from scala_netsim.books.air_rates import air_rate_problems
    from scala_netsim.core.files import AIR_CSV, EVENTS_CSV, LOAD_CSV
    from scala_netsim.core.results import read_csv, read_record
    from scala_netsim.runner.air_files import air_settings_of
    from scala_netsim.runner.writer import RunWriter

    def run_with(traffic: dict, folder):
        run = make_run("scala", data={"num_clients": 20}, training={"participation": 0.3},
                       timing_only=True,
                       network={**NETWORK, "scheduler": "round_robin", "traffic": traffic})
        writer = RunWriter(folder, run.scenario, run.world)
        while not run.finished:
            run.step()
        writer.flush(run, now=True)
        assert run.problems() == []
        return run

    quiet = run_with({"kind": "none"}, tmp_path / "none")
    run = run_with({"kind": "ftp3", "offered_load": 0.5, "model": "fluid"}, tmp_path / "fluid")
    assert run.env.now > quiet.env.now
    settings = air_settings_of(tmp_path / "fluid")
    own = run.link.air_record().settings
    for d in ("uplink", "downlink"):
        assert settings.load_floor[d].tobytes() == own.load_floor[d].tobytes()
        assert np.array_equal(settings.load_share[d], own.load_share[d])
        assert (own.load_floor[d] > 0).any() and set(own.load_share[d]) == {0.5}
    air, events = read_record(tmp_path / "fluid", AIR_CSV), read_record(tmp_path / "fluid",
                                                                         EVENTS_CSV)
    assert air_rate_problems(air, events, settings) == []
    assert air_rate_problems(air, events, dataclasses.replace(settings, load_floor=None,
                                                              load_share=None))
    load = read_csv(tmp_path / "fluid" / LOAD_CSV)
    assert np.allclose(load["load"], 0.5) and (load["files"] == 0).all()
    assert ((load["learning_share"] > 0) & (load["idle_share"] < 0.5)).all()


def test_a_lone_cells_files_carry_the_offered_load_in_a_timing_only_run(make_run):
    """A timing-only run's network (one site, one sector: nobody interferes), its learning
    silent for 600 s: the downlink's files (every block at the cell's power: a file holds
    its block-seconds whatever it shares) take the offered 0.4 of the blocks' time within 4
    standard deviations of the compound-Poisson sampling error, lambda E[s^2] T, s a file's
    block-seconds alone (S / R_u on all the blocks, R_u from the load terms)."""
    run = make_run("fedavg", data={"num_clients": 20}, training={"participation": 0.3},
                   timing_only=True,
                   network={**NETWORK, "layout": {"kind": "hexagonal", "sites": 1,
                                                  "sectors": 1},
                            "scheduler": "round_robin",
                            "traffic": {"kind": "ftp3", "offered_load": 0.4,
                                        "directions": ["downlink"]}})
    horizon = 600.0
    run.env.run(until=horizon)
    background = run.link.background
    (_, _, users, covered, rate, files, done, _, block_s), = background.load_rows()
    alone = background.terms.alone[Direction.DOWNLINK]
    seconds = 4e6 / alone[alone > 0]                      # each covered user's file, alone
    assert rate == pytest.approx(0.4 / np.mean(seconds), rel=1e-12)
    load = block_s / (run.link.settings.blocks[Direction.DOWNLINK] * horizon)
    sigma = math.sqrt(rate * horizon * np.mean(seconds ** 2)) / horizon
    assert files > 1000 and covered == users == 10
    assert abs(load - 0.4) < 4 * sigma and sigma < 0.02, (load, sigma)
