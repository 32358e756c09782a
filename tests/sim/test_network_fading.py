"""Block fading in a network of cells (issue 50): every link of a transfer faded, the
interferers' included, the rates recomputed where a fading block begins (a transfer's start),
the fading record (fading.csv) from which the rates derive again, and the combination that
stays refused (fading with the NR link abstraction)."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import simpy

import channel
from channel import Direction
from scala_netsim.books.air_rates import air_rate_problems
from scala_netsim.books.blocks import fades_by_event
from scala_netsim.config.scenario import ScenarioError
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.fading import NetworkFading
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap

from conftest import NETWORK, events_of

#: the one block of a one-block band
ONE = np.array([0])


def faded_run(make_run, algorithm="scala", coherence="round", **network):
    return make_run(algorithm, data={"num_clients": 40}, training={"participation": 0.3},
                    network={**NETWORK, "fading": {"kind": "rayleigh", "coherence": coherence},
                             **network})


@pytest.mark.parametrize("coherence, scheduler", [("round", "static"),
                                                  ("transfer", "static"),
                                                  ("transfer", "round_robin")])
def test_a_faded_network_keeps_its_invariants_and_records_every_links_fade(
        make_run, coherence, scheduler):
    """Two rounds of SCALA with Rayleigh fading: every invariant holds (the rates derived again
    from the air and fading records among them), each transfer has a row of |h|^2 to every
    cell, and its recorded gain is its serving cell's coupling gain times its own fade."""
    run = faded_run(make_run, coherence=coherence, scheduler=scheduler)
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    record = run.link.air_record()
    cells = run.world.cell.network.coupling_linear.shape[1]
    fades = fades_by_event(record.fades, cells)
    moved = events[events["bandwidth_hz"] > 0]
    assert sorted(fades) == [(e, 1) for e in moved.index.tolist()]
    serving = run.world.cell.network.serving[moved["client_id"].to_numpy()]
    fade = np.array([fades[(e, 1)][c] for e, c in zip(moved.index, serving, strict=True)])
    large = run.world.cell.gain_linear[moved["client_id"].to_numpy()]
    assert np.allclose(10 ** (moved["gain_db"].to_numpy() / 10), large * fade, rtol=1e-12)
    per_client = pd.DataFrame({"round": moved["round"], "client": moved["client_id"],
                               "direction": moved["kind"].str.endswith("upload"),
                               "fade": fade})
    distinct = per_client.groupby(["round", "client", "direction"])["fade"].nunique()
    if coherence == "round":             # one fading block a client, direction and round
        assert (distinct == 1).all()
    else:                                # SCALA's T = 2 uploads of a round: two blocks
        assert (distinct > 1).any()


def test_the_rates_derived_again_need_the_fades_the_run_saw(make_run):
    """The fading record is what the rates derive from: with every fade of one transfer
    halved, its bits no longer add up."""
    run = faded_run(make_run)
    run.step()
    events = events_of(run)
    record = run.link.air_record()
    air = record.frame()
    assert air_rate_problems(air, events, record.settings) == []
    event = int(air["event_index"].iloc[0])
    fades = [(e, c, h2 / 2 if e == event else h2) for e, c, h2 in record.settings.fades]
    wrong = dataclasses.replace(record.settings, fades=fades)
    assert any(f"event {event} " in p for p in air_rate_problems(air, events, wrong))


def test_fading_rows_are_their_own_draws_whatever_came_before():
    """A row is named by (client, round, direction) and, per transfer, its place among the
    client's transfers of the round: the same whatever else was drawn, E|h|^2 = 1."""
    seed = np.random.SeedSequence(7)
    rayleigh = channel.Fading("rayleigh", coherence="transfer")
    a, b = NetworkFading(rayleigh, seed, 21), NetworkFading(rayleigh, seed, 21)
    a.begin_round(3)
    b.begin_round(3)
    b.row(Direction.UPLINK, 5)          # other draws first: client 5, and client 2 downlink
    b.row(Direction.DOWNLINK, 2)
    first = a.row(Direction.UPLINK, 2)
    assert first.shape == (21,) and np.array_equal(first, b.row(Direction.UPLINK, 2))
    assert not np.array_equal(a.row(Direction.UPLINK, 2), first)   # its next transfer's
    per_round = NetworkFading(channel.Fading("rayleigh"), seed, 21)
    per_round.begin_round(3)
    row = per_round.row(Direction.UPLINK, 2)
    assert np.array_equal(per_round.row(Direction.UPLINK, 2), row)
    per_round.begin_round(4)
    assert not np.array_equal(per_round.row(Direction.UPLINK, 2), row)
    many = NetworkFading(channel.Fading("rician", 6.0, "transfer"), seed, 20_000)
    assert abs(many.row(Direction.DOWNLINK, 0).mean() - 1.0) < 0.03


def test_a_faded_interferer_changes_the_victims_rate_where_its_next_block_begins():
    """By hand: client 0's upload to cell 0 on block 0, client 1 in cell 1 on the same block.
    Client 1 sends 1e5 bits in a fading block of |h|^2 = 0.5 on every link, then, from its
    end, 1e5 bits in one of 2.0: the victim's rate is log2(1 + S / (N + I)) with I its
    interferer's power times its coupling times the fade of the block on the air."""
    env = simpy.Environment()
    coupling = np.array([[1e-9, 1e-11], [2e-11, 1e-9]])   # clients x cells
    noise_w, block_hz, power_w = 1e-13, 360e3, 0.1
    air = Air(env, RadioMap(coupling), 1, block_hz, noise_w, uplink=True,
              interference=True)
    ends: dict[str, float] = {}
    victim_bits = 2e6

    def rate(signal_w: float, interference_w: float) -> float:
        return block_hz * math.log2(1 + signal_w / (noise_w + interference_w))

    def second(_: Flow) -> None:
        ends["first"] = env.now
        air.radio.post(air.direction, 1, np.full(coupling.shape[1], 2.0))
        air.add(Flow(1e5, env.now, lambda f: ends.setdefault("second", f.end)), 1, 1, ONE,
                power_w, coupling[1, 1] * 2.0)

    air.add(Flow(victim_bits, 0.0, lambda f: ends.setdefault("victim", f.end)), 0, 0, ONE,
            power_w, coupling[0, 0])
    air.radio.post(air.direction, 1, np.full(coupling.shape[1], 0.5))
    air.add(Flow(1e5, 0.0, second), 1, 1, ONE, power_w, coupling[1, 1] * 0.5)
    env.run()
    signal = power_w * coupling[0, 0]
    t1 = 1e5 / rate(power_w * coupling[1, 1] * 0.5, power_w * coupling[0, 1])
    t2 = t1 + 1e5 / rate(power_w * coupling[1, 1] * 2.0, power_w * coupling[0, 1])
    v1 = rate(signal, power_w * coupling[1, 0] * 0.5)
    v2 = rate(signal, power_w * coupling[1, 0] * 2.0)
    v3 = rate(signal, 0.0)
    left = victim_bits - v1 * t1 - v2 * (t2 - t1)
    assert left > 0                        # the victim outlasts both fading blocks
    assert ends["first"] == pytest.approx(t1, rel=1e-12)
    assert ends["second"] == pytest.approx(t2, rel=1e-12)
    assert ends["victim"] == pytest.approx(t2 + left / v3, rel=1e-12)


def test_a_faded_network_writes_its_fading_record_and_vouches_for_it(tmp_path):
    import json

    import scala_netsim as sn

    scenario = sn.load_scenario("tests/golden/scenario.yaml", {
        "algorithms": ["fedavg"], "timing_only": True, "training.rounds": 2,
        "network.pathloss": "3gpp_38901_uma", "network.layout": NETWORK["layout"],
        "network.fading": {"kind": "rayleigh", "coherence": "transfer"}})
    run = sn.run(scenario, out=tmp_path, echo=False).runs[0].folder
    fading = pd.read_csv(run / "fading.csv")
    assert tuple(fading.columns) == ("event_index", "cell", "power_gain")
    air = pd.read_csv(run / "air.csv")
    assert set(fading["event_index"]) == set(air["event_index"])
    assert (fading.groupby("event_index")["cell"].count() == 21).all()
    assert "fading.csv" in json.loads((run / "summary.json").read_text())["files_sha256"]


@pytest.mark.parametrize("coherence", ["round", "transfer"])
def test_fading_a_round_or_a_transfer_long_with_nr_is_refused_naming_both_keys(coherence):
    """Under the NR abstraction a transfer faded below its lowest MCS waits for its channel
    to change: blocks of time (tests/sim/test_network_time_fading.py), not a round's or its
    own."""
    from conftest import tiny_scenario

    if not channel.nr_link.have_sionna():
        pytest.skip("the nr key is refused first without Sionna")
    with pytest.raises(ScenarioError, match=rf"fading\.coherence: {coherence} with "
                                            rf"link_abstraction: nr.*never end.*coherence: "
                                            rf"time"):
        tiny_scenario("scala", network={**NETWORK, "link_abstraction": "nr",
                                        "bs_tx_power_w": 40.0,
                                        "fading": {"kind": "rayleigh",
                                                   "coherence": coherence}})


def test_a_faded_network_resumed_from_its_state_continues_the_same_records(make_run):
    """A checkpoint keeps the fading record; the rows need no stream state (each its own
    draw): a run restored after round 1 writes the uninterrupted run's events, rounds and
    fading record, and its checks over both rounds hold."""
    import copy

    whole = faded_run(make_run, coherence="transfer")
    whole.step()
    state = copy.deepcopy(whole.state_dict())
    whole.step()
    resumed = faded_run(make_run, coherence="transfer")
    resumed.load_state_dict(state)
    resumed.step()
    assert events_of(resumed).equals(events_of(whole))      # (NaN where nothing was sent)
    assert str(resumed.rows) == str(whole.rows)
    assert resumed.link.air_record().fades == whole.link.air_record().fades
    assert resumed.problems() == []


#: two clients, 0 in cell 0 and 1 in cell 1, on the same block from 0: their coupling, the
#: noise a block, the block, the power, the instant client 1's gains double, the bits
TWO = np.array([[1e-9, 3e-11], [2e-11, 1e-9]])
NOISE_W, BLOCK_HZ, POWER_W, T1, BITS = 1e-13, 360e3, 0.1, 0.01, 5e6


def two_transfers(radio: RadioMap, uplink: bool, change) -> dict[int, float]:
    """Both clients' transfers of BITS on the air from 0, `change(air)` at T1: their ends."""
    env = simpy.Environment()
    air = Air(env, radio, 1, BLOCK_HZ, NOISE_W, uplink=uplink, interference=True)
    ends: dict[int, float] = {}
    for k in (0, 1):
        air.add(Flow(BITS, 0.0, lambda f, k=k: ends.setdefault(k, f.end)), k, k, ONE,
                POWER_W, TWO[k, k])
    later = env.timeout(T1)
    later.callbacks.append(lambda _: change(air))
    env.run()
    return ends


def doubled_ends(uplink: bool) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """By hand, client 1's gains to both cells doubled at T1: each client's rate before and
    after, and each one's end (the first to end, then the other alone on its block)."""
    def rate(signal_w: float, interference_w: float) -> float:
        return BLOCK_HZ * math.log2(1 + signal_w / (NOISE_W + interference_w))

    def heard(k: int, gains: np.ndarray) -> float:      # the interference client k's gets
        return POWER_W * (gains[1 - k, k] if uplink else gains[k, 1 - k])

    after = TWO.copy()
    after[1] *= 2.0
    r = {k: rate(POWER_W * TWO[k, k], heard(k, TWO)) for k in (0, 1)}
    r2 = {k: rate(POWER_W * after[k, k], heard(k, after)) for k in (0, 1)}
    first = min((0, 1), key=lambda k: (BITS - r[k] * T1) / r2[k])
    t_first = T1 + (BITS - r[first] * T1) / r2[first]
    other = 1 - first
    left = BITS - r[other] * T1 - r2[other] * (t_first - T1)
    alone = rate(POWER_W * after[other, other], 0.0)
    return r, r2, {first: t_first, other: t_first + left / alone}


@pytest.mark.parametrize("uplink", [True, False])
def test_a_gain_that_changes_mid_transfer_rerates_it_and_what_the_others_hear(uplink):
    """The seam for mobility (Air.regain), by hand: client 0 in cell 0 and client 1 in cell 1
    on the same block, from 0; at t1 client 1's gains to both cells double. Its own rate
    changes then; on the uplink so does client 0's (it hears client 1 at the new gain), on
    the downlink client 0's does not (client 1's gains say what client 1 hears)."""
    ends = two_transfers(RadioMap(TWO), uplink,
                         lambda air: air.radio.post(air.direction, 1, np.full(2, 2.0)))
    r, r2, expected = doubled_ends(uplink)
    for k in (0, 1):
        assert ends[k] == pytest.approx(expected[k], rel=1e-12)
    if not uplink:
        assert r2[0] == r[0]
    else:
        assert r2[0] < r[0]


def test_arq_beside_nr_harq_is_refused_naming_both_keys_and_why():
    from conftest import tiny_scenario

    if not channel.nr_link.have_sionna():
        pytest.skip("the nr key is refused first without Sionna")
    with pytest.raises(ScenarioError,
                       match=r"link\.mode: fixed_rate with link_abstraction: nr: HARQ"):
        tiny_scenario("scala", network={
            **NETWORK, "link": {"mode": "fixed_rate", "target_rate_bps": 1e6},
            "link_abstraction": "nr", "bs_tx_power_w": 40.0})


def test_a_gain_changed_mid_transfer_holds_when_round_robin_regrants_its_blocks():
    """The seam under round robin, by hand: client 0 alone on both blocks of cell 0 (its power
    spread over them) from 0; at t1 its gain doubles; at t2 client 1 joins the cell and each
    gets one block. Client 0's block from then is rated at the doubled gain, not the one it
    joined with (a regrant takes the transfer's terms: Air.regain updates them)."""
    from scala_netsim.sim.network.schedulers import Request

    env = simpy.Environment()
    coupling = np.array([[1e-9], [1e-9]])
    noise_w, block_hz, power_w, t1, t2, bits = 1e-13, 360e3, 0.1, 0.01, 0.02, 2e6
    air = Air(env, RadioMap(coupling), 2, block_hz, noise_w, uplink=True,
              interference=False)
    ends: dict[int, float] = {}

    def join(k: int) -> None:
        flow = Flow(bits * (1 + 9 * k), env.now, lambda f: ends.setdefault(k, f.end))
        air.request(Request(flow, k, 0, coupling[k, 0],
                              lambda n: (power_w, power_w / n), 2))
    join(0)
    env.timeout(t1).callbacks.append(
        lambda _: air.radio.post(air.direction, 0, np.full(coupling.shape[1], 2.0)))
    env.timeout(t2).callbacks.append(lambda _: join(1))
    env.run()

    def rate(n: int, gain: float) -> float:
        return n * block_hz * math.log2(1 + power_w / n * gain / noise_w)
    g = coupling[0, 0]
    left = bits - rate(2, g) * t1 - rate(2, 2 * g) * (t2 - t1)
    assert left > 0
    assert ends[0] == pytest.approx(t2 + left / rate(1, 2 * g), rel=1e-12)


@pytest.mark.parametrize("uplink", [True, False])
def test_a_client_that_moves_mid_transfer_is_rerated_as_a_post_would(uplink):
    """RadioMap.move (issue 64), by hand: the case above, client 1's large-scale gains to
    both cells doubled at t1 by a move rather than a fading post: the same end instants;
    the drop's coupling stays, the gain to its serving cell and every direction's gains
    follow (times the fading row in force: 0.5 on the other direction), the movers told
    before the watchers."""
    coupling = TWO
    radio = RadioMap(coupling)
    direction = Direction.UPLINK if uplink else Direction.DOWNLINK
    other = Direction.DOWNLINK if uplink else Direction.UPLINK
    radio.post(other, 1, np.full(2, 0.5))
    told: list[tuple[str, int]] = []
    radio.on_move(lambda k: told.append(("moved", k)))
    radio.watch(direction, lambda k: told.append(("watched", k)))
    ends = two_transfers(radio, uplink, lambda _: radio.move(1, coupling[1] * 2.0))
    _, _, expected = doubled_ends(uplink)
    for k in (0, 1):
        assert ends[k] == pytest.approx(expected[k], rel=1e-12)
    assert radio.coupling.tolist() == coupling.tolist()
    assert radio.serving_gain(1) == 2e-9 and radio.large_scale(1).tolist() == [4e-11, 2e-9]
    assert radio.gains(direction)[1].tolist() == [4e-11, 2e-9]
    assert radio.gains(other)[1].tolist() == [2e-11, 1e-9]          # (times 0.5 in force)
    assert told[:2] == [("moved", 1), ("watched", 1)]
