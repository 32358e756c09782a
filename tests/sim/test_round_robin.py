"""The round-robin scheduler (network.scheduler: round_robin, issue 49 item 3): a cell's
blocks split among its transfers in progress instant by instant, by hand on two transfers,
one starting later; the shares with caps; in a network run every invariant holds, no block
idles while a transfer of its cell and direction is in progress, and the air record's rates
derive again from the stretches."""

import math

import numpy as np
import pytest
import simpy

from channel import network_grid as grid
from channel.network import round_robin_shares
from scala_netsim.books.blocks import round_robin_problems
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.schedulers import Request

from conftest import NETWORK as SEVEN_SITES
from conftest import per_instant_air

BLOCK_HZ = 360e3
NOISE_W = 4e-21 * BLOCK_HZ            # -174 dBm/Hz over a block
NETWORK = {**SEVEN_SITES, "carrier_frequency_hz": 3.5e9, "scheduler": "round_robin"}


def test_shares_are_equal_whole_blocks_in_join_order_and_respect_caps():
    assert round_robin_shares(51, [51, 51, 51]) == [17, 17, 17]
    assert round_robin_shares(10, [51, 51, 51]) == [4, 3, 3]
    assert round_robin_shares(10, [1, 51, 51]) == [1, 5, 4]      # the capped one's left over
    assert round_robin_shares(10, [2, 3]) == [2, 3]              # all capped: 5 blocks idle
    assert round_robin_shares(3, [9, 9, 9]) == [1, 1, 1]
    with pytest.raises(ValueError, match="at most one each"):
        round_robin_shares(2, [1, 1, 1])


def quiet_rate(n: int, power_w: float, gain: float) -> float:
    """Shannon on n blocks with the power spread over them, nobody interfering."""
    return n * BLOCK_HZ * math.log2(1 + power_w / n * gain / NOISE_W)


def test_two_transfers_one_starting_later_end_at_hand_computed_times():
    """Cell 0 of 8 blocks: A (client 0) alone from 0 on all 8; B (client 1) from t1 = 0.01 s:
    4 blocks each; A ends, then B has all 8 again. The ends by hand."""
    env = simpy.Environment()
    gains = np.array([[1e-10], [3e-11]])
    air = Air(env, RadioMap(gains), 8, BLOCK_HZ, NOISE_W, True, True)
    power, bits_a, bits_b, t1 = 0.2, 2e6, 3e6, 0.01
    ended: dict[str, float] = {}

    def start(name: str, k: int, bits: float) -> Flow:
        flow = Flow(bits, env.now, lambda f: ended.__setitem__(name, env.now))
        air.request(Request(flow, k, 0, float(gains[k, 0]), lambda n: (power, power / n), 8))
        return flow

    a = start("a", 0, bits_a)
    later = env.timeout(t1)
    later.callbacks.append(lambda _: start("b", 1, bits_b))
    env.run()
    ga, gb = gains[0, 0], gains[1, 0]
    left_a = bits_a - quiet_rate(8, power, ga) * t1
    a_end = t1 + left_a / quiet_rate(4, power, ga)
    left_b = bits_b - quiet_rate(4, power, gb) * (a_end - t1)
    b_end = a_end + left_b / quiet_rate(8, power, gb)
    assert ended["a"] == pytest.approx(a_end, rel=1e-12)
    assert ended["b"] == pytest.approx(b_end, rel=1e-12)
    assert [(s[0].tolist(), s[1]) for s in a.stretches] == [(list(range(8)), 8),
                                                             ([0, 1, 2, 3], 4)]
    assert a.stretches[0][2:4] == [0.0, t1]


@pytest.mark.parametrize("uplink", [True, False])
def test_a_cells_split_recomputes_other_cells_only_where_what_it_sends_changed(uplink):
    """Three cells of 6 blocks, one transfer in each; at t1 a second joins cell 0, which
    splits its blocks. On the downlink a cell sends the same power a block whoever receives,
    so the other cells' transfers are not touched (their last change stays at 0); on the
    uplink the sending client and its power a block change, so they are. Either way every
    block's interference and SINR equal, to the bit, what recomputing every block of the
    network from scratch gives."""
    rng = np.random.default_rng(11)
    gains = 10.0 ** (-rng.uniform(90.0, 130.0, (4, 3)) / 10.0)
    env = simpy.Environment()
    air = Air(env, RadioMap(gains), 6, BLOCK_HZ, NOISE_W, uplink, True)
    power = 0.2 if uplink else 1.0

    def start(k: int, c: int) -> None:
        flow = Flow(1e9, env.now, lambda _: None)
        air.request(Request(flow, k, c, float(gains[k, c]),
                              lambda n: (power * n / 6, power / n if uplink else power / 6),
                              6))
    for k in range(3):
        start(k, k)
    later = env.timeout(0.01)
    later.callbacks.append(lambda _: start(3, 0))
    env.run(until=0.02)
    others = [int(air.holder[c, 0]) for c in (1, 2)]
    marks = air.flows[others, grid.MARK]
    assert (marks == 0.01).all() if uplink else (marks == 0.0).all()
    fresh = air.grids.copy()
    fresh[grid.SENT_W_GRID], fresh[grid.SENT_CLIENT_GRID] = math.nan, math.nan
    dirty = np.ones_like(air.dirty)
    grid.settle(0.02, air.holder, fresh, dirty, air.gains, air.ints, air.owned,
                air.flows.copy(), NOISE_W, BLOCK_HZ, uplink, True, grid.Nr.of(None))
    for plane in (grid.INTERFERENCE_GRID, grid.SINR_GRID):
        assert np.array_equal(fresh[plane], air.grids[plane])


def test_a_transfer_beyond_the_cells_blocks_waits_for_one():
    env = simpy.Environment()
    gains = np.array([[1e-10]] * 3)
    air = Air(env, RadioMap(gains), 2, BLOCK_HZ, NOISE_W, True, True)
    ended: dict[int, float] = {}
    for k in range(3):
        flow = Flow(1e6, 0.0, lambda f, k=k: ended.__setitem__(k, env.now))
        air.request(Request(flow, k, 0, 1e-10, lambda n: (0.2, 0.2 / n), 2))
    env.run()
    one = 1e6 / quiet_rate(1, 0.2, 1e-10)
    assert ended[0] == pytest.approx(one, rel=1e-12) and ended[1] == ended[0]
    # the third waited for the first block to come free, then had both
    assert ended[2] == pytest.approx(one + 1e6 / quiet_rate(2, 0.2, 1e-10), rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["scala"])
def test_a_network_run_keeps_every_invariant_and_no_block_idles(make_run, algorithm):
    sections = {"data": {"num_clients": 40}, "training": {"participation": 0.5}}
    static = make_run(algorithm, **sections, network={**NETWORK, "scheduler": "static"})
    run = make_run(algorithm, **sections, network=NETWORK)
    for r in (static, run):
        r.step()
        r.step()
    assert run.problems() == []
    frame = per_instant_air(run)
    # a transfer's blocks changed while it was on the air
    assert frame.groupby("event_index").size().max() > 1
    # work-conserving: a round takes no longer than with blocks held for the round
    assert run.env.now < static.env.now


@pytest.mark.slow
def test_transfers_beyond_a_cells_blocks_wait_and_the_books_balance(make_run):
    """A cell of 5 blocks and more transfers in progress than that: the later ones wait for
    a block (their clients idle) and every invariant holds."""
    run = make_run("scala", data={"num_clients": 40},
                   training={"participation": 0.5, "batch_size": 40},
                   network={**NETWORK, "layout": {"kind": "hexagonal", "sites": 1,
                                                  "sectors": 1},
                            "uplink_bandwidth_hz": 2.0e6, "downlink_bandwidth_hz": 2.0e6})
    run.step()
    assert set(run.link.settings.blocks.values()) == {5}
    assert run.problems() == []
    frame = run.link.air_record().frame()
    assert (frame["blocks"] == 1).any()


@pytest.mark.slow
def test_the_invariant_catches_an_idle_block(make_run):
    run = make_run("fedavg", data={"num_clients": 40}, training={"participation": 0.5},
                   network=NETWORK)
    run.step()
    frame = run.link.air_record().frame()
    one = frame.index[frame["blocks"] > 1][0]
    broken = frame.copy()
    broken.loc[one, "blocks"] -= 1
    problems = round_robin_problems(broken, run.link.air_record().settings.blocks)
    assert problems and "idle" in problems[0]
