"""The network's air (scala_netsim.sim.network.air, its numbers in channel.network_grid) against the
reference: a pool that recomputes every rate in the network from all transfers in flight
(channel.network.transfer_rates) whenever one starts or ends, as the network link did before
the air kept its state block by block. Random networks, both directions, with and without
interference: every transfer's end, rate, SINR, interference and their time averages agree
to 1e-9; the interference on every block agrees with a long-double sum."""

import math

import numpy as np
import pytest
import simpy

import channel
from channel import network_grid as grid
from scala_netsim.sim.network import air as air_module
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.pool import Flow, Pool
from scala_netsim.sim.network.radio_map import RadioMap

BLOCK_HZ = 360e3
NOISE_W = 4e-21 * BLOCK_HZ            # -174 dBm/Hz over a block


def network(seed: int, clients: int = 40, cells: int = 6) -> np.ndarray:
    """Coupling gains (clients x cells), -140 to -60 dB."""
    rng = np.random.default_rng(seed)
    return 10.0 ** (-rng.uniform(60.0, 140.0, (clients, cells)) / 10.0)


class ExactPool(Pool):
    """The reference pool, ending a flow where the air does: what is left of its bits is
    below the float error of the arithmetic (the backhaul's pool allows a nanosecond)."""

    @staticmethod
    def crossed(bits: np.ndarray, rate: np.ndarray, now: float) -> np.ndarray:
        return bits <= 4 * grid.EPS * rate * abs(now) + 1e-6


def schedule(seed: int, gains: np.ndarray, blocks: int, slices: int = 2,
             transfers: tuple[int, int] = (2, 6), scattered: bool = False) -> list[list[tuple]]:
    """Per (cell, slice of its blocks): transfers one after another, each (gap before it s,
    client, its blocks, power W, bits). A slice is a range of blocks, or (`scattered`) a set
    drawn at random, not a range."""
    rng = np.random.default_rng(seed + 1)
    queues = []
    for c in range(gains.shape[1]):
        cuts = np.sort(rng.choice(np.arange(1, blocks), slices - 1, replace=False))
        edges = [0, *cuts.tolist(), blocks]
        order = rng.permutation(blocks) if scattered else np.arange(blocks)
        for first, end in zip(edges[:-1], edges[1:], strict=True):
            mine = np.sort(order[first:end])
            queue = []
            for _ in range(int(rng.integers(*transfers))):
                k = int(rng.integers(len(gains)))
                queue.append((float(rng.choice([0.0, rng.uniform(0, 0.02)])), k, c, mine,
                              float(rng.uniform(0.05, 0.2)), float(rng.uniform(1e4, 2e6))))
            queues.append(queue)
    return queues


def run(queues: list[list[tuple]], gains: np.ndarray, blocks: int, uplink: bool,
        interference: bool, reference: bool) -> list[Flow]:
    env = simpy.Environment()
    sets = [mine for queue in queues for _, _, _, mine, _, _ in queue]
    held = np.zeros((len(sets), blocks), dtype=bool)      # each transfer's blocks, a row
    for i, mine in enumerate(sets):
        held[i, mine] = True
    if reference:
        def rates(static: np.ndarray):
            client = static[:, 0].astype(np.int64)
            mine = held[static[:, 2].astype(np.int64)]
            transfers = channel.network.Transfers(
                static[:, 1].astype(np.int64), mine.argmax(axis=1), mine.sum(axis=1),
                static[:, 3], static[:, 4], gains[client], mine)
            out = channel.network.transfer_rates(transfers, blocks, BLOCK_HZ,
                                                 NOISE_W / BLOCK_HZ, interference, uplink)
            return out.rate_bps, out.sinr, out.interference_w
        pool = ExactPool(env, rates, 5)
    else:
        air = Air(env, RadioMap(gains), blocks, BLOCK_HZ, NOISE_W, uplink, interference)
    flows: list[Flow] = []

    def serve(queue: list[tuple], index: int):
        for i, (gap, k, c, mine, power_w, bits) in enumerate(queue, index):
            yield env.timeout(gap)
            done = env.event()
            flow = Flow(bits, env.now, lambda _, done=done: done.succeed())
            flows.append(flow)
            gain = float(gains[k, c])
            if reference:
                pool.add(flow, (k, c, i, power_w, gain))
            else:
                air.add(flow, k, c, mine, power_w, gain)
            yield done

    index = 0
    for queue in queues:
        env.process(serve(queue, index))
        index += len(queue)
    env.run()
    return flows


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("uplink", [True, False])
@pytest.mark.parametrize("interference", [True, False])
def test_every_transfer_crosses_as_the_whole_network_recomputed_says(seed, uplink,
                                                                      interference):
    gains, blocks = network(seed), 8
    queues = schedule(seed, gains, blocks)
    ours = run(queues, gains, blocks, uplink, interference, reference=False)
    theirs = run(queues, gains, blocks, uplink, interference, reference=True)
    assert len(ours) == len(theirs) == sum(map(len, queues))
    assert any(f.varied for f in ours) == interference
    for a, b in zip(ours, theirs, strict=True):
        assert a.start == pytest.approx(b.start, rel=1e-9)
        assert a.end == pytest.approx(b.end, rel=1e-9)
        for name in ("rate", "sinr", "interference_w", "sinr_area", "interference_area"):
            assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-9, abs=1e-30)
        if not interference:   # alone on its blocks: the closed-form Shannon rate, exactly
            assert a.interference_w == 0.0 and not a.varied


@pytest.mark.parametrize("uplink", [True, False])
def test_transfers_on_sets_of_blocks_not_ranges_cross_as_the_network_recomputed_says(uplink):
    """Each slice of a cell's blocks a set drawn at random (a scheduler's allocation need
    not be a range): the same agreement, interfered, on 12 blocks in 3 slices."""
    gains, blocks = network(5), 12
    queues = schedule(5, gains, blocks, slices=3, scattered=True)
    assert any(np.ptp(q[0][3]) >= len(q[0][3]) for q in queues)       # some not a range
    ours = run(queues, gains, blocks, uplink, True, reference=False)
    theirs = run(queues, gains, blocks, uplink, True, reference=True)
    assert len(ours) == len(theirs) == sum(map(len, queues))
    for a, b in zip(ours, theirs, strict=True):
        assert a.end == pytest.approx(b.end, rel=1e-9)
        for name in ("rate", "sinr", "interference_w", "sinr_area", "interference_area"):
            assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-9, abs=1e-30)


@pytest.mark.parametrize("uplink", [True, False])
def test_a_crowded_network_crosses_as_the_whole_network_recomputed_says(uplink):
    """30 cells of 24 blocks in 8 slices each, 4-8 transfers a slice: up to 240 in flight."""
    gains, blocks = network(9, clients=600, cells=30), 24
    queues = schedule(9, gains, blocks, slices=8, transfers=(4, 9))
    ours = run(queues, gains, blocks, uplink, True, reference=False)
    theirs = run(queues, gains, blocks, uplink, True, reference=True)
    assert len(ours) == len(theirs) > 1000
    for a, b in zip(ours, theirs, strict=True):
        assert a.end == pytest.approx(b.end, rel=1e-9)
        assert a.rate == pytest.approx(b.rate, rel=1e-9)
        # the reference takes each transfer's own signal (up to 80 dB above the rest here)
        # from the total on its block, and loses digits of the interference (3.5e-9 of it
        # measured); the air sums the others
        for name in ("sinr", "interference_w"):
            assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-8), name


@pytest.mark.parametrize("uplink", [True, False])
def test_the_interference_on_every_block_is_the_long_double_sum(uplink):
    """Strong own signals beside weak interferers: each holder's interference on each block
    is summed from the other cells' holders, never the total less its own signal."""
    rng = np.random.default_rng(5)
    cells, blocks = 12, 6
    gains = 10.0 ** (-rng.uniform(120.0, 160.0, (cells, cells)) / 10.0)
    np.fill_diagonal(gains, 10.0 ** (-4.5))        # 115 dB above the others at most
    env = simpy.Environment()
    air = Air(env, RadioMap(gains), blocks, BLOCK_HZ, NOISE_W, uplink, True)
    for c in range(cells):
        air.add(Flow(1e9, 0.0, lambda _: None), c, c, np.arange(blocks), float(rng.uniform(0.1, 1)),
                float(gains[c, c]))
    env.run(until=1e-3)
    got = air.grids[grid.INTERFERENCE_GRID]
    per_block = np.array([air.flows[air.holder[c, 0], grid.PER_BLOCK_W]
                          for c in range(cells)], dtype=np.longdouble)
    g = gains.astype(np.longdouble)
    for c in range(cells):
        others = [j for j in range(cells) if j != c]
        exact = sum(per_block[j] * (g[j, c] if uplink else g[c, j]) for j in others)
        assert np.all(np.abs(got[c] - exact) <= 4 * np.finfo(float).eps * exact)


def test_the_starts_of_one_instant_are_settled_once(monkeypatch):
    calls = []
    settle = grid.settle
    monkeypatch.setattr(air_module.grid, "settle",
                        lambda *args: calls.append(args[0]) or settle(*args))
    gains = network(3, clients=20, cells=4)
    env = simpy.Environment()
    air = Air(env, RadioMap(gains), 10, BLOCK_HZ, NOISE_W, True, True)
    ends = []
    for k in range(20):          # 5 clients a cell, 2 blocks each, all at 0
        c = k % 4
        air.add(Flow(1e5 * (k + 1), 0.0, lambda f: ends.append(f.end)), k, c,
                np.arange(2 * (k // 4), 2 * (k // 4) + 2), 0.2, float(gains[k, c]))
    assert len(air) == 20
    env.run()
    assert len(ends) == 20 and len(air) == 0
    assert calls[0] == 0.0 and calls.count(0.0) == 1     # 20 starts, one settling
    assert len(calls) <= 1 + 20                            # then one for each end at most


def test_a_transfer_on_a_block_its_cell_has_given_away_is_refused():
    gains = network(4, clients=3, cells=2)
    env = simpy.Environment()
    air = Air(env, RadioMap(gains), 4, BLOCK_HZ, NOISE_W, True, True)
    air.add(Flow(1e5, 0.0, lambda _: None), 0, 0, np.arange(3), 0.2, float(gains[0, 0]))
    with pytest.raises(RuntimeError, match=r"blocks \[2, 3\] of cell 0, not all free"):
        air.add(Flow(1e5, 0.0, lambda _: None), 1, 0, np.array([2, 3]), 0.2,
                float(gains[1, 0]))
    with pytest.raises(RuntimeError, match=r"blocks \[3, 4\] of cell 1"):
        air.add(Flow(1e5, 0.0, lambda _: None), 1, 1, np.array([3, 4]), 0.2,
                float(gains[1, 1]))
    with pytest.raises(RuntimeError, match=r"blocks \[2, 1\] of cell 1"):   # not increasing
        air.add(Flow(1e5, 0.0, lambda _: None), 1, 1, np.array([2, 1]), 0.2,
                float(gains[1, 1]))
    air.add(Flow(1e5, 0.0, lambda _: None), 1, 1, np.arange(4), 0.2, float(gains[1, 1]))
    env.run()
    assert len(air) == 0 and math.isinf(grid.soonest(air.flows)[0])
