"""Handover while a transfer is on the air (issue 64, items 3 and 4), by hand: a client
driving along the line from one site toward the next at 30 km/h, its gains TR 36.814's
128.1 + 37.6 log10(d / km) (no shadowing) drawn again every 5 m, uploads alone on the
network under round robin. Event A3 (offset 3 dB, hysteresis 1 dB) first holds at the
first update past x* = 500 r / (1 + r) m, r = 10^(4 / 37.6); 256 ms later it is handed over;
50 ms without data; then the rest of its bits on the target cell's blocks. Its end instant,
the handover's, the bits before and after (adding up to its payload to 1e-9), the records,
and the rates derived again from them, all against the sum of its piecewise-constant rates
written out here."""

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
import simpy

import channel
from channel import Direction
from channel.handover import A3
from scala_netsim.books.air_rates import air_bits, air_rate_problems
from scala_netsim.core.columns import EVENT_COLUMNS
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.sim.cell import Cell, NetworkView
from scala_netsim.sim.network.link import NetworkLink, NetworkSettings
from scala_netsim.sim.network.mobile import Mobile

BLOCK_HZ, BLOCKS, NOISE_W = 360e3, 20, 1e-13
SITES = np.array([[0.0, 0.0], [500.0, 0.0]])
X0, SPEED, UPDATE_M = 250.0, 30 / 3.6, 5.0
TTT, INTERRUPTION = 0.256, 0.05
PAYLOAD = 20_000_000


class Message(NamedTuple):
    client_id: int
    payload_bytes: int


def gain_db(x: float) -> np.ndarray:
    """The client's coupling gains (dB) to both cells standing at (x, 0)."""
    d = np.abs(SITES[:, 0] - x)
    return -(128.1 + 37.6 * np.log10(d / 1000.0))


class Line:
    """The client's path: along the x axis from X0 at SPEED."""

    def moved_m(self, t: float) -> float:
        return SPEED * t

    def when_moved(self, metres: float) -> float:
        return metres / SPEED

    def position(self, t: float) -> np.ndarray:
        return np.array([X0 + SPEED * t, 0.0])


class LineLinks:
    """MovingLinks' part that a run reads: paths, and the links where a client stands (here
    its point itself, which the antennas below turn into gains)."""

    paths = [Line()]

    def losses(self, clients, points):
        return np.asarray(points, float)

    def at(self, t, clients=None):
        points = np.array([self.paths[0].position(t)])
        return points, self.losses(clients, points)


class OmniCells:
    """Two omnidirectional cells: the coupling is minus the path loss, beam or not."""

    def coupling_db(self, points, losses, serving, beam=True):
        return np.stack([gain_db(float(x)) for x, _ in points])


def driving_link(backhaul=None, drops=None):
    """The link of the driving client (its cells, round robin, the moves): -> env, it, log."""
    cell = Cell(np.array([X0]), np.array([0.0]), np.array([1e9]), 1e13, 20e6, 20e6,
                network=NetworkView(channel.network.Cells(np.array([0, 1]), SITES[:, 0],
                                                          SITES[:, 1], np.full(2, np.nan)),
                                    np.array([0]), channel.db_to_linear(gain_db(X0))[None]))
    settings = NetworkSettings({Direction.UPLINK: BLOCKS, Direction.DOWNLINK: BLOCKS},
                               BLOCK_HZ, NOISE_W / BLOCK_HZ, 0.2, 1.0, backhaul=backhaul,
                               scheduler="round_robin")
    mobile = Mobile(LineLinks(), OmniCells(), np.array([UPDATE_M]), A3(3.0, 1.0, TTT),
                    INTERRUPTION, 0.0)
    env, log = simpy.Environment(), EventLog()
    link = NetworkLink(env, cell, settings, channel.EqualShareAllocator(),
                       channel.AdaptiveShannonLink(0.2, 1.0, 20e6, -174.0), log, drops=drops,
                       mobile=mobile)
    demand = channel.LinkDemand(np.arange(1), cell.gain_linear, np.zeros(1), np.zeros(1))
    link.begin_round(1, {d: demand for d in Direction})
    return env, link, log


def driving_upload():
    """The upload from 0 on the link: -> env, link, log, its end."""
    env, link, log = driving_link()
    ends = {}

    def go():
        yield link.upload(Message(0, PAYLOAD), EventKind.MODEL_UPLOAD, 0)
        ends[0] = env.now
    env.process(go())
    env.run(until=60.0)
    return env, link, log, ends[0]


def by_hand():
    """The handover's instant, its step, the bits moved before it, and the upload's end."""
    r = 10 ** (4.0 / 37.6)
    x_star = 500.0 * r / (1.0 + r)
    step = math.floor((x_star - X0) / UPDATE_M) + 1            # the first update past x*
    t_handover = step * UPDATE_M / SPEED + TTT

    def rate(step_: int, cell: int) -> float:    # 20 blocks, 0.2 W over them, alone
        g = 10 ** (gain_db(X0 + step_ * UPDATE_M)[cell] / 10)
        return BLOCKS * BLOCK_HZ * math.log2(1 + 0.2 / BLOCKS * g / NOISE_W)

    at = lambda j: j * UPDATE_M / SPEED           # noqa: E731 (update j's instant)
    before = sum(rate(j, 0) * (at(j + 1) - at(j)) for j in range(step))
    before += rate(step, 0) * (t_handover - at(step))
    left, t, j = 8.0 * PAYLOAD - before, t_handover + INTERRUPTION, step
    while left > rate(j, 1) * (at(j + 1) - t):
        left -= rate(j, 1) * (at(j + 1) - t)
        t, j = at(j + 1), j + 1
    return t_handover, step, before, t + left / rate(j, 1)


def test_a_transfer_spanning_a_handover_ends_where_its_rates_say():
    env, link, log, end = driving_upload()
    t_handover, step, before, expected_end = by_hand()
    mobility = link.mobility
    ((client, t, source, target, rsrp_source, rsrp_target, interruption),) = (
        mobility.handover_rows)
    assert (client, source, target, interruption) == (0, 0, 1, INTERRUPTION)
    assert t == pytest.approx(t_handover, rel=1e-12)
    # the RSRPs it was handed over on: its last measurement's, the update at `step`
    assert [rsrp_source, rsrp_target] == pytest.approx(
        gain_db(X0 + step * UPDATE_M).tolist(), rel=1e-12)
    assert rsrp_target - rsrp_source > 3.0 + 1.0 > (
        np.diff(gain_db(X0 + (step - 1) * UPDATE_M))[0])
    assert end == pytest.approx(expected_end, rel=1e-9)
    # its air record: cell 0 until the handover, cell 1 from the interruption's end
    air = link.air_record().frame()
    first, second = air[air["cell"] == 0], air[air["cell"] == 1]
    assert first["end_s"].max() == pytest.approx(t_handover, rel=1e-12)
    assert second["start_s"].min() == pytest.approx(t_handover + INTERRUPTION, rel=1e-12)
    # the bits before and after, derived again from the air record, add up to its payload;
    # those before, by hand
    settings = link.air_record().settings
    bits, _ = air_bits(air, air["tx_power_w"].to_numpy(), np.zeros(len(air), int), True,
                       settings)
    assert bits[air["cell"].to_numpy() == 0].sum() == pytest.approx(before, rel=1e-9)
    assert bits.sum() == pytest.approx(8.0 * PAYLOAD, rel=1e-9)
    events = pd.DataFrame(log.rows, columns=list(EVENT_COLUMNS))
    transfers = pd.DataFrame(link.transfer_rows, columns=list(link._books.columns))
    events = events.assign(**{c: transfers[c].to_numpy() for c in
                              ("rate_bps", "tx_power_w", "handovers", "attempts")})
    assert events["handovers"].tolist() == [1]
    assert air_rate_problems(air, events, settings) == []
    rate_bps = transfers["rate_bps"].iloc[0]
    held = (first["end_s"] - first["start_s"]).sum() + (second["end_s"] - second["start_s"]).sum()
    assert rate_bps * held == pytest.approx(8.0 * PAYLOAD, rel=1e-9)
    moves = pd.DataFrame(mobility.move_rows, columns=["client_id", "t_s", "x_m", "y_m",
                                                      "walked_m", "serving_cell"])
    at_handover = moves[moves["t_s"] == t]
    assert (moves["serving_cell"].iloc[:step + 1] == 0).all()
    # the move at the handover: the last update's point, coupled toward the new cell
    assert at_handover["serving_cell"].tolist()[-1] == 1
    assert before < 8.0 * PAYLOAD


def test_a_download_cut_after_its_handover_keeps_its_backhaul_time_and_counts_in_flight():
    """Review of issue 64: a download across a backhaul (0.5 s and 1 Gbit/s), handed over at
    4.456 s and cut by a drop at 6 s, spent 0.5 s and its bits' time on the backhaul, not up
    to its second air time; while it waits out the interruption it is in flight (an
    asynchronous run is not saved then)."""
    from scala_netsim.sim.drops import Drops

    drops = Drops()
    drops.begin(1, [0])
    env, link, log = driving_link(backhaul=(0.5, 1e9), drops=drops)
    link.download(Message(0, PAYLOAD), EventKind.MODEL_DOWNLOAD, 0)
    t_handover = by_hand()[0]
    seen = {}

    def watch():
        yield env.timeout(t_handover + INTERRUPTION / 2)
        seen["in_flight"] = link.in_flight
        yield env.timeout(6.0 - env.now)
        drops.cut(0)
    env.process(watch())
    env.run(until=10.0)
    assert seen["in_flight"] == 1
    transfers = pd.DataFrame(link.transfer_rows, columns=list(link._books.columns))
    assert transfers["handovers"].tolist() == [1]
    assert transfers["backhaul_s"].iloc[0] == pytest.approx(0.5 + 8.0 * PAYLOAD / 1e9,
                                                            rel=1e-12)
    assert log.rows[0][1] == pytest.approx(6.0, rel=1e-12)
