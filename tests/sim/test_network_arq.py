"""A fixed-rate link with retransmissions (ARQ) in a network of cells (issue 50, item 2;
scala_netsim.sim.network.arq): by hand, an attempt that an interferer in the next cell
pushes into outage for part of its time and the retransmission that gets through alone, and
a transfer lost after all its attempts; end to end, runs whose books balance with every
attempt's verdict derived again from the air record."""

import math

import numpy as np
import pandas as pd
import pytest
import simpy
from test_network_link import BLOCK_HZ, COUPLING_DB, Message, two_cells

import channel
from channel import Direction
from scala_netsim.books.air_rates import air_rate_problems
from scala_netsim.core.columns import EVENT_COLUMNS
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.link import TransferLost
from scala_netsim.sim.network.link import NetworkLink, NetworkSettings

from conftest import NETWORK, events_of

RATE_BPS = 20e6
PAYLOAD = 400_000


def arq_link(cell, max_attempts: int) -> tuple[simpy.Environment, NetworkLink, EventLog]:
    env, log = simpy.Environment(), EventLog()
    settings = NetworkSettings({Direction.UPLINK: 20, Direction.DOWNLINK: 20}, BLOCK_HZ,
                               1e-13 / BLOCK_HZ, 0.2, 1.0)
    model = channel.FixedRateLink(0.2, 1.0, 20 * BLOCK_HZ, -174.0, RATE_BPS, max_attempts)
    link = NetworkLink(env, cell, settings, channel.EqualShareAllocator(), model, log,
                       drops=Drops())
    ids = np.arange(2)
    demand = channel.LinkDemand(ids, cell.gain_linear, np.zeros(2), np.zeros(2))
    link.begin_round(1, {Direction.UPLINK: demand, Direction.DOWNLINK: demand})
    return env, link, log


def upload(env, link, k: int, payload_bytes: int, ends: dict) -> None:
    def go():
        try:
            yield link.upload(Message(k, payload_bytes), EventKind.MODEL_UPLOAD, 0)
            ends[k] = env.now
        except TransferLost:
            ends[k] = ("lost", env.now)
    env.process(go())


def the_pair(max_attempts: int):
    """Clients 0 and 1 upload from 0 at RATE_BPS, 0 the payload, 1 half of it, each on all 20
    blocks of its own cell: -> the cells, the link, its log, and when each was done."""
    cell = two_cells(COUPLING_DB)
    env, link, log = arq_link(cell, max_attempts)
    ends: dict = {}
    upload(env, link, 0, PAYLOAD, ends)
    upload(env, link, 1, PAYLOAD // 2, ends)
    env.run()
    return cell, link, log, ends


def rates_by_hand(cell) -> tuple[float, float, float]:
    """Client 0 alone and beside client 1, client 1 beside client 0 (bit/s on 20 blocks)."""
    p, noise = 0.2 / 20, 1e-13
    g0, g1 = cell.gain_linear
    i0, i1 = p * 10 ** -10.5, p * 10 ** -11.0
    return (20 * BLOCK_HZ * math.log2(1 + p * g0 / noise),
            20 * BLOCK_HZ * math.log2(1 + p * g0 / (noise + i0)),
            20 * BLOCK_HZ * math.log2(1 + p * g1 / (noise + i1)))


def events_with_radio(link, log) -> pd.DataFrame:
    events = pd.DataFrame([tuple(r) for r in log.rows], columns=list(EVENT_COLUMNS))
    events["completed"] = [0 if i in set(log.cut) else 1 for i in range(len(log.rows))]
    rows = {r[0]: r for r in link.transfer_rows}
    events["rate_bps"] = [rows[i][2] for i in range(len(events))]
    events["attempts"] = [rows[i][3] for i in range(len(events))]
    events["tx_power_w"] = [rows[i][5] for i in range(len(events))]
    return events


def test_an_attempt_an_interferer_pushes_into_outage_is_sent_again_and_gets_through():
    """Clients 0 and 1 upload at 20 Mbit/s from 0, each on all 20 blocks of its cell; client 1
    (half the payload, SINR 10 beside client 0: 24.9 Mbit/s) gets through at T/2. Client 0's
    first attempt hears client 1 for its first half (12.7 Mbit/s of capacity) and is alone for
    the second (24.9 Mbit/s): its mutual information falls short of its bits although its
    capacity is above the rate at its end, so it is sent again and gets through alone at 2T."""
    cell, link, log, ends = the_pair(max_attempts=3)
    alone0, both0, both1 = rates_by_hand(cell)
    bits, t = 8.0 * PAYLOAD, 8.0 * PAYLOAD / RATE_BPS
    assert both1 > RATE_BPS and alone0 > RATE_BPS > both0
    first = both0 * t / 2 + alone0 * t / 2           # client 0's first attempt
    assert first < bits <= alone0 * t
    assert ends[1] == pytest.approx(t / 2, rel=1e-12)
    assert ends[0] == pytest.approx(2 * t, rel=1e-12)
    rows = {log.rows[r[0]][4]: r for r in link.transfer_rows}
    assert [rows[k][2:4] for k in (0, 1)] == [(RATE_BPS, 2), (RATE_BPS, 1)]
    air = link.air_record().frame()
    assert list(air.columns)[-1] == "attempt"
    mine = air[air["event_index"] == rows[0][0]]
    assert mine["attempt"].tolist() == [1, 2]
    assert mine[["start_s", "end_s"]].to_numpy().ravel() == pytest.approx([0.0, t, t, 2 * t],
                                                                          rel=1e-12)
    events = events_with_radio(link, log)
    record = link.air_record()
    assert air_rate_problems(air, events, record.settings) == []
    # told that the first attempt got through (one attempt), the records no longer agree
    one = events.assign(attempts=np.where(events["client_id"] == 0, 1, events["attempts"]))
    one_air = air[(air["event_index"] != rows[0][0]) | (air["attempt"] == 1)]
    problems = air_rate_problems(one_air, one, record.settings)
    assert any("got through" in p for p in problems)
    assert link.problems() == []


def test_a_transfer_whose_every_attempt_fails_is_lost_and_recorded_whole_and_cut():
    """With one attempt, client 0's upload above is lost at T: its process gets
    TransferLost, its record says it sent its payload once and was not completed."""
    cell, link, log, ends = the_pair(max_attempts=1)
    t = 8.0 * PAYLOAD / RATE_BPS
    assert ends[0] == ("lost", pytest.approx(t, rel=1e-12))
    assert ends[1] == pytest.approx(t / 2, rel=1e-12)
    events = events_with_radio(link, log)
    lost = events[events["client_id"] == 0].iloc[0]
    assert (lost["completed"], lost["payload_bytes"], lost["attempts"]) == (0, PAYLOAD, 1)
    assert lost["t_end_s"] == pytest.approx(t, rel=1e-12)
    record = link.air_record()
    assert air_rate_problems(link.air_record().frame(), events, record.settings) == []


def arq_run(make_run, scheduler: str = "static", fading: str = "none", **training):
    return make_run("fedavg", data={"num_clients": 40},
                    training={"participation": 0.3, **training},
                    network={**NETWORK, "scheduler": scheduler,
                             "fading": {"kind": fading, "coherence": "transfer"},
                             "link": {"mode": "fixed_rate", "target_rate_bps": 2e7,
                                      "max_attempts": 3}})


@pytest.mark.parametrize("scheduler, fading", [("static", "none"), ("round_robin", "none"),
                                               ("static", "rayleigh"),
                                               ("round_robin", "rayleigh")])
def test_a_network_with_a_fixed_rate_link_keeps_its_invariants(make_run, scheduler, fading):
    """Two rounds of FedAvg at 20 Mbit/s, three attempts: transfers sent again, some lost
    (their clients dropped), every invariant holding, each attempt's verdict derived again
    from the air record (and under per-transfer fading from each attempt's own fading row)."""
    run = arq_run(make_run, scheduler, fading)
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    moved = events[events["bandwidth_hz"] > 0]
    assert (moved["rate_bps"] == 2e7).all()
    assert (moved["attempts"] > 1).any()
    assert (events["kind"] == "client_dropped").any()
    air = run.link.air_record().frame()
    per_event = air.groupby("event_index")["attempt"].max()
    assert (per_event == moved.loc[per_event.index, "attempts"]).all()
    if fading != "none":
        fades = pd.DataFrame(run.link.air_record().fades,
                             columns=["event_index", "cell", "power_gain", "attempt"])
        drawn = fades.groupby("event_index")["attempt"].max()
        assert (drawn == moved.loc[drawn.index, "attempts"]).all()
        twice = fades[fades["attempt"] == 2]["event_index"].iloc[0]
        first, second = (fades[(fades["event_index"] == twice) & (fades["attempt"] == a)]
                         ["power_gain"].to_numpy() for a in (1, 2))
        assert not np.array_equal(first, second)       # a fresh fade for the retransmission


def test_a_deadline_cuts_a_fixed_rate_transfer_between_its_attempts(make_run):
    run = arq_run(make_run, "round_robin", deadline_s=2.0)
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    cut = events[(events["completed"] == 0) & (events["bandwidth_hz"] > 0)]
    assert len(cut) > 0


def test_the_cell_edge_warning_takes_a_hexagonal_sites_corner():
    """The warning for an unreachable fixed rate measures a network's edge at a site's corner
    (isd / sqrt 3: 289 m at 500 m), not the paper's cell's radius, and says what it leaves
    out."""
    from scala_netsim.runner.world import cell_edge_warning

    from conftest import tiny_scenario

    def warning(rate_bps: float) -> str | None:
        return cell_edge_warning(tiny_scenario("fedavg", network={
            **NETWORK, "link": {"mode": "fixed_rate", "target_rate_bps": rate_bps}}))
    assert warning(1e6) is None
    assert "(288.7 m, no fading, no interference, no O2I loss)" in warning(2e8)
