"""The network's link (scala_netsim.sim.network.link) on hand-built cells: two interfering
uploads whose piecewise-constant rates and finish times are computed by hand, a backhaul
shared by two transfers, power control, a cell with more clients than blocks whose clients
take turns, and the blocks' books."""

import math
from typing import NamedTuple

import numpy as np
import pytest
import simpy

import channel
from channel import Direction
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.sim.cell import Cell, NetworkView
from scala_netsim.sim.network.link import (
    NetworkLink,
    NetworkSettings,
    block_problems,
    turn_problems,
)

BLOCK_HZ = 360e3
NOISE_PSD = 1e-13 / BLOCK_HZ          # 1e-13 W per block
GAIN_DB = np.array([100.0, 97.0])     # the clients' losses to their serving cells


class Message(NamedTuple):
    client_id: int
    payload_bytes: int


def two_cells(coupling_db: np.ndarray, serving=(0, 1)) -> Cell:
    """Two clients, each served by its own cell (or as `serving` says), one site each."""
    cells = channel.network.Cells(np.array([0, 1]), np.array([0.0, 500.0]), np.zeros(2),
                                  np.full(2, np.nan))
    return Cell(np.array([100.0, 100.0]), GAIN_DB.copy(), np.array([1e9, 1e9]), 1e13, 20e6,
                20e6, network=NetworkView(cells, np.array(serving),
                                          channel.db_to_linear(coupling_db)))


def make_link(cell: Cell, interference: bool = True, backhaul=None, power_control=None,
              blocks: int = 20) -> tuple[simpy.Environment, NetworkLink, EventLog]:
    env, log = simpy.Environment(), EventLog()
    settings = NetworkSettings({Direction.UPLINK: blocks, Direction.DOWNLINK: blocks}, BLOCK_HZ,
                               NOISE_PSD, 0.2, 1.0, interference, power_control, backhaul)
    model = channel.AdaptiveShannonLink(0.2, 1.0, blocks * BLOCK_HZ, -174.0)
    link = NetworkLink(env, cell, settings, channel.EqualShareAllocator(), model, log)
    ids = np.arange(len(cell.distance_m))
    demand = channel.LinkDemand(ids, cell.gain_linear, np.zeros(len(ids)), np.zeros(len(ids)))
    link.begin_round(1, {Direction.UPLINK: demand, Direction.DOWNLINK: demand})
    return env, link, log


def upload_at(env, link, start_s: float, k: int, payload_bytes: int, ends: dict) -> None:
    def go():
        yield env.timeout(start_s)
        yield link.upload(Message(k, payload_bytes), EventKind.MODEL_UPLOAD, 0)
        ends[k] = env.now
    env.process(go())


# client 0 heard at cell 1 at -110 dB, client 1 heard at cell 0 at -105 dB
COUPLING_DB = np.array([[-100.0, -110.0], [-105.0, -97.0]])


def test_two_interfering_uploads_by_hand():
    """Client 0 starts alone at 0 on all 20 blocks of cell 0; client 1 starts at 1 ms on all
    20 blocks of cell 1; from then on each interferes with the other on every block, until
    client 1 (the stronger) is done and client 0 finishes alone again."""
    cell = two_cells(COUPLING_DB)
    env, link, log = make_link(cell)
    ends: dict[int, float] = {}
    upload_at(env, link, 0.0, 0, 400_000, ends)
    upload_at(env, link, 0.001, 1, 400_000, ends)
    env.run()
    p = 0.2 / 20                               # W per block
    g0, g1 = cell.gain_linear
    noise = 1e-13
    i0, i1 = p * 10 ** -10.5, p * 10 ** -11.0  # client 1 at cell 0, client 0 at cell 1
    alone0 = 20 * BLOCK_HZ * math.log2(1 + p * g0 / noise)           # SNR 10
    both0 = 20 * BLOCK_HZ * math.log2(1 + p * g0 / (noise + i0))     # SINR 2.4
    both1 = 20 * BLOCK_HZ * math.log2(1 + p * g1 / (noise + i1))     # SINR 10
    bits = 8 * 400_000
    end1 = 0.001 + bits / both1
    left0 = bits - alone0 * 0.001 - both0 * (end1 - 0.001)
    assert left0 > 0                           # client 0 is still sending when 1 is done
    end0 = end1 + left0 / alone0
    assert ends[1] == pytest.approx(end1, rel=1e-12)
    assert ends[0] == pytest.approx(end0, rel=1e-12)
    row = {log.rows[r[0]][4]: r for r in link.transfer_rows}
    # each row: the mean rate over its air time, the time-averaged SINR and interference
    snr0, sinr0 = p * g0 / noise, p * g0 / (noise + i0)
    interfered = end1 - 0.001
    mean_sinr0 = ((end0 - interfered) * snr0 + interfered * sinr0) / end0
    assert row[0][2] == pytest.approx(bits / end0, rel=1e-12)
    assert 10 ** (row[0][6] / 10) == pytest.approx(mean_sinr0, rel=1e-12)
    assert 10 ** ((row[0][7] - 30) / 10) == pytest.approx(20 * i0 * interfered / end0,
                                                          rel=1e-12)
    # client 1 was interfered with all along: its SINR and interference are constant
    assert 10 ** (row[1][6] / 10) == pytest.approx(p * g1 / (noise + i1), rel=1e-12)
    assert 10 ** ((row[1][7] - 30) / 10) == pytest.approx(20 * i1, rel=1e-12)
    assert [r[8] for r in link.transfer_rows] == [0.0, 0.0]         # no backhaul
    assert sorted(e[:2] for e in log.rows) == [(0.0, ends[0]), (0.001, ends[1])]
    assert link.problems() == []


def test_without_interference_each_upload_runs_at_its_snr_throughout():
    cell = two_cells(COUPLING_DB)
    env, link, log = make_link(cell, interference=False)
    ends: dict[int, float] = {}
    upload_at(env, link, 0.0, 0, 400_000, ends)
    upload_at(env, link, 0.001, 1, 400_000, ends)
    env.run()
    snr = 0.2 / 20 * cell.gain_linear / 1e-13
    rate = 20 * BLOCK_HZ * np.log2(1 + snr)
    assert ends[0] == pytest.approx(8 * 400_000 / rate[0], rel=1e-12)
    assert ends[1] == pytest.approx(0.001 + 8 * 400_000 / rate[1], rel=1e-12)
    for row in link.transfer_rows:
        k = log.rows[row[0]][4]
        assert row[6] == 10 * math.log10(snr[k])         # SINR = SNR, to the bit
        assert row[7] == -math.inf


def test_two_uploads_of_one_cell_share_its_blocks_and_its_backhaul():
    """Both clients in cell 0: 10 blocks each, no interference between them; both air
    transfers end together, then they cross the cell's backhaul at half its bandwidth each,
    then its latency."""
    coupling = np.array([[-100.0, -130.0], [-100.0, -130.0]])
    cell = Cell(np.array([100.0, 100.0]), np.array([100.0, 100.0]), np.array([1e9, 1e9]), 1e13,
                20e6, 20e6, network=NetworkView(
                    channel.network.Cells(np.array([0, 1]), np.array([0.0, 500.0]), np.zeros(2),
                                          np.full(2, np.nan)),
                    np.array([0, 0]), channel.db_to_linear(coupling)))
    env, link, _ = make_link(cell, backhaul=(0.002, 1e8))
    assert [r[4:] for r in link.block_rows if r[2] == "uplink"] == [(0, 10), (10, 10)]
    ends: dict[int, float] = {}
    upload_at(env, link, 0.0, 0, 1_000_000, ends)
    upload_at(env, link, 0.0, 1, 1_000_000, ends)
    env.run()
    bits = 8e6
    air = bits / (10 * BLOCK_HZ * math.log2(1 + 0.2 / 10 * cell.gain_linear[0] / 1e-13))
    backhaul = bits / (1e8 / 2) + 0.002
    assert ends[0] == pytest.approx(air + backhaul, rel=1e-12)
    assert ends[1] == ends[0]
    assert [r[8] for r in link.transfer_rows] == pytest.approx([backhaul] * 2, rel=1e-12)
    assert [r[7] for r in link.transfer_rows] == [-math.inf] * 2    # one cell: no interference


def test_a_download_crosses_the_backhaul_first():
    cell = two_cells(COUPLING_DB)
    env, link, log = make_link(cell, backhaul=(0.001, 1e9))
    done = []

    def go():
        yield link.download(Message(1, 125_000), EventKind.MODEL_DOWNLOAD, 0)
        done.append(env.now)
    env.process(go())
    env.run()
    # the base station spreads 1 W over its 20 blocks: 0.05 W a block
    air = 1e6 / (20 * BLOCK_HZ * math.log2(1 + 0.05 * cell.gain_linear[1] / 1e-13))
    assert done[0] == pytest.approx(1e6 / 1e9 + 0.001 + air, rel=1e-12)
    assert link.transfer_rows[0][8] == pytest.approx(0.002, rel=1e-12)


def test_open_loop_power_control_compensates_the_path_loss():
    cell = two_cells(COUPLING_DB)
    _, link, _ = make_link(cell, power_control=(-90.0, 0.8))
    # P = min(23 dBm, -90 + 10 log10(20) + 0.8 x 100) = -10 + 13.01 = 3.01 dBm for client 0
    assert link.power_w(Direction.UPLINK, 0, 20) == pytest.approx(
        10 ** ((-90 + 10 * math.log10(20) + 0.8 * 100.0 - 30) / 10), rel=1e-9)
    _, full, _ = make_link(cell, power_control=(-60.0, 1.0))
    assert full.power_w(Direction.UPLINK, 0, 20) == pytest.approx(0.2)   # capped at P_max
    assert full.power_w(Direction.DOWNLINK, 0, 5) == pytest.approx(1.0 * 5 / 20)


def test_the_block_books_catch_a_cell_that_hands_out_too_much():
    assert block_problems([(1, 0, "uplink", 0, 0, 10), (1, 1, "uplink", 0, 10, 10)],
                          {"uplink": 20}) == []
    overlap = block_problems([(1, 0, "uplink", 0, 0, 11), (1, 1, "uplink", 0, 10, 10)],
                             {"uplink": 20})
    assert overlap == ["round 1: cell 0 granted a uplink block twice"]
    beyond = block_problems([(1, 0, "uplink", 3, 15, 10)], {"uplink": 20})
    assert beyond == ["round 1: client 0 was granted uplink blocks 15..24, outside its cell's 20"]
    # two cells may hand out the same blocks
    assert block_problems([(1, 0, "uplink", 0, 0, 20), (1, 1, "uplink", 1, 0, 20)],
                          {"uplink": 20}) == []


def one_cell(gain_db) -> Cell:
    """len(gain_db) clients, all served by cell 0 (cell 1 hears them at -150 dB)."""
    n = len(gain_db)
    coupling = np.column_stack([-np.asarray(gain_db, dtype=float), np.full(n, -150.0)])
    cells = channel.network.Cells(np.array([0, 1]), np.array([0.0, 500.0]), np.zeros(2),
                                  np.full(2, np.nan))
    return Cell(np.full(n, 100.0), np.asarray(gain_db, dtype=float), np.full(n, 1e9), 1e13,
                20e6, 20e6, network=NetworkView(cells, np.zeros(n, dtype=int),
                                                channel.db_to_linear(coupling)))


def test_more_clients_than_blocks_take_turns_first_come_first_served():
    """Three clients of one cell on its two blocks: client i gets block i mod 2, so clients 0
    and 2 share block 0. All three start at 0; client 2 waits until client 0 is done (its
    event starts then: the wait is idle time) and then sends on the block at its own rate;
    the shared blocks' grants and turns are booked, and the books hold."""
    cell = one_cell([100.0, 97.0, 103.0])
    env, link, log = make_link(cell, blocks=2)
    assert link.block_rows == []          # no client of the cell holds a block alone
    assert [r for r in link.shared_rows if r[2] == "uplink"] == [
        (1, 0, "uplink", 0, 0), (1, 1, "uplink", 0, 1), (1, 2, "uplink", 0, 0)]
    ends: dict[int, float] = {}
    for k in range(3):
        upload_at(env, link, 0.0, k, 250_000, ends)
    env.run()
    bits = 8 * 250_000
    # each client puts its whole 0.2 W on its one block; nothing interferes (one cell)
    rate = BLOCK_HZ * np.log2(1 + 0.2 * cell.gain_linear / 1e-13)
    assert ends[0] == pytest.approx(bits / rate[0], rel=1e-12)
    assert ends[1] == pytest.approx(bits / rate[1], rel=1e-12)
    assert ends[2] == pytest.approx(bits / rate[0] + bits / rate[2], rel=1e-12)
    event = {row[4]: row for row in log.rows}
    assert event[2][0] == ends[0]         # client 2's transfer starts when block 0 is free
    row = {log.rows[r[0]][4]: r for r in link.transfer_rows}
    assert row[2][1] == BLOCK_HZ and row[2][2] == pytest.approx(rate[2], rel=1e-12)
    assert sorted(link.turn_rows, key=lambda t: t[4]) == [
        (1, "uplink", 0, 0, 0, 0.0, ends[0]), (1, "uplink", 0, 1, 1, 0.0, ends[1]),
        (1, "uplink", 0, 0, 2, ends[0], ends[2])]
    assert link.problems() == []
    # the band's sum counts block 0 once: two blocks in all per direction
    up = [r for r in link.band_grant_rows() if r[2] == "uplink"]
    assert sum(r[3] for r in up) == 2 * BLOCK_HZ


def test_the_turn_books_catch_an_overlap_and_a_block_also_granted_alone():
    shared = [(1, 0, "uplink", 0, 0), (1, 2, "uplink", 0, 0)]
    turns = [(1, "uplink", 0, 0, 0, 0.0, 1.0), (1, "uplink", 0, 0, 2, 1.0, 2.0)]
    assert turn_problems(shared, turns, [], {"uplink": 2}) == []
    overlap = [(1, "uplink", 0, 0, 0, 0.0, 1.0), (1, "uplink", 0, 0, 2, 0.5, 2.0)]
    assert turn_problems(shared, overlap, [], {"uplink": 2}) == [
        "round 1: cell 0's uplink block 0 carried two transfers at once"]
    alone = [(1, 5, "uplink", 0, 0, 1)]
    assert turn_problems(shared, turns, alone, {"uplink": 2}) == [
        "round 1: cell 0's uplink block 0 is taken in turns and granted alone"] * 2
    assert turn_problems([(1, 0, "uplink", 0, 2)], [], [], {"uplink": 2}) == [
        "round 1: client 0 takes turns on uplink block 2, outside its cell's 2"]


def test_an_asynchronous_upload_in_one_cell_interferes_with_a_transfer_in_the_next():
    """By hand (issue 50): an asynchronous run's versions overlap on the air. Client 0 uploads
    for version 1 from 0, alone on all 20 blocks of cell 0 (round robin grants a lone
    transfer the cell's band); client 1 uploads for version 2 from 1 ms in cell 1, on all 20
    of its blocks: each interferes with the other until client 1 is done, then client 0
    finishes alone. The same closed form as the synchronous pair above, and the air record's
    rates derive again."""
    import pandas as pd

    from scala_netsim.books.air_rates import air_rate_problems

    cell = two_cells(COUPLING_DB)
    env, log = simpy.Environment(), EventLog()
    settings = NetworkSettings({Direction.UPLINK: 20, Direction.DOWNLINK: 20}, BLOCK_HZ,
                               NOISE_PSD, 0.2, 1.0, scheduler="round_robin")
    model = channel.AdaptiveShannonLink(0.2, 1.0, 20 * BLOCK_HZ, -174.0)
    link = NetworkLink(env, cell, settings, channel.EqualShareAllocator(), model, log)
    ends: dict[int, float] = {}

    def client(k: int, version: int, start_s: float):
        yield env.timeout(start_s)
        link.begin_version(version)
        link.assign(k, {Direction.UPLINK: 1.0, Direction.DOWNLINK: 1.0})
        yield link.upload(Message(k, 400_000), EventKind.ACTIVATION_UPLOAD, 0)
        ends[k] = env.now

    env.process(client(0, 1, 0.0))
    env.process(client(1, 2, 0.001))
    env.run()
    p, noise = 0.2 / 20, 1e-13
    g0, g1 = cell.gain_linear
    i0, i1 = p * 10 ** -10.5, p * 10 ** -11.0
    alone0 = 20 * BLOCK_HZ * math.log2(1 + p * g0 / noise)
    both0 = 20 * BLOCK_HZ * math.log2(1 + p * g0 / (noise + i0))
    both1 = 20 * BLOCK_HZ * math.log2(1 + p * g1 / (noise + i1))
    bits = 8 * 400_000
    end1 = 0.001 + bits / both1
    left0 = bits - alone0 * 0.001 - both0 * (end1 - 0.001)
    assert left0 > 0
    assert ends[1] == pytest.approx(end1, rel=1e-12)
    assert ends[0] == pytest.approx(end1 + left0 / alone0, rel=1e-12)
    from scala_netsim.core.columns import EVENT_COLUMNS

    events = pd.DataFrame([tuple(r) for r in log.rows], columns=list(EVENT_COLUMNS))
    # each carries the version being built when it ended, as the cell's link records them
    assert dict(zip(events["client_id"], events["round"], strict=True)) == {0: 2, 1: 2}
    record = link.air_record()
    events = events.assign(tx_power_w=0.2, rate_bps=[r[2] for r in link.transfer_rows],
                           completed=1)
    assert air_rate_problems(record.frame(), events, record.settings) == []
    assert link.problems() == []
