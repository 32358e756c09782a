"""Fading in blocks of time in a network of cells (network.fading.coherence: time; issue 50,
item 1): every client's row of |h|^2 to every cell drawn afresh at each boundary of a block
of coherence_s seconds while its transfer is on the air, the rates recomputed there (its own
and those of the transfers that hear it). By hand, a faded interferer changing a victim's rate
at a block boundary; end to end under both schedulers, a fixed-rate link and the NR link
abstraction (which only blocks of time let fade: a transfer below its lowest MCS waits for
the next block), every rate derived again from the air and fading records."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import simpy
from test_network_link import BLOCK_HZ, COUPLING_DB, Message, two_cells

import channel
from channel import Direction
from scala_netsim.books.air_rates import air_rate_problems
from scala_netsim.config.scenario import ScenarioError
from scala_netsim.core.columns import EVENT_COLUMNS
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.sim.network.fading import NetworkFading
from scala_netsim.sim.network.link import NetworkLink, NetworkSettings

from conftest import NETWORK, events_of

COHERENCE_S = 0.05
PAYLOAD = 400_000


def timed_pair() -> tuple[NetworkLink, EventLog, dict]:
    """Clients 0 and 1 upload PAYLOAD from 0, each on all 20 blocks of its own cell, under
    Rayleigh fading in blocks of 50 ms."""
    cell = two_cells(COUPLING_DB)
    env, log = simpy.Environment(), EventLog()
    settings = NetworkSettings({Direction.UPLINK: 20, Direction.DOWNLINK: 20}, BLOCK_HZ,
                               1e-13 / BLOCK_HZ, 0.2, 1.0)
    model = channel.AdaptiveShannonLink(0.2, 1.0, 20 * BLOCK_HZ, -174.0)
    fading = NetworkFading(channel.Fading("rayleigh", None, "time", COHERENCE_S),
                           np.random.SeedSequence(7), 2)
    link = NetworkLink(env, cell, settings, channel.EqualShareAllocator(), model, log,
                       fading=fading)
    ids = np.arange(2)
    demand = channel.LinkDemand(ids, cell.gain_linear, np.zeros(2), np.zeros(2))
    link.begin_round(1, {Direction.UPLINK: demand, Direction.DOWNLINK: demand})
    ends: dict = {}

    def go(k: int):
        yield link.upload(Message(k, PAYLOAD), EventKind.MODEL_UPLOAD, 0)
        ends[k] = env.now
    for k in (0, 1):
        env.process(go(k))
    env.run()
    return link, log, ends


def test_a_faded_interferer_changes_a_victims_rate_at_a_block_boundary():
    """By hand from each block's row (drawn as the run drew it: a function of the stream,
    the client, the block and the direction): in each block b each upload's rate is
    20 B_rb log2(1 + p g_kk h_k(b)[k] / (N + p g_jk h_j(b)[k])), the other's fade on the link to
    this cell in the denominator; integrated block by block (and alone once the other is
    done) they give both ends, to 1e-12. The interferer's fade changes the victim's rate at
    every boundary: its rate in block 1 differs from block 0 by the interferer's row alone."""
    link, log, ends = timed_pair()
    coupling = link.radio.coupling
    again = NetworkFading(channel.Fading("rayleigh", None, "time", COHERENCE_S),
                          np.random.SeedSequence(7), 2)
    fade = {(k, b): again.row_in_block(Direction.UPLINK, k, b) for k in (0, 1)
            for b in range(20)}
    p, noise, bits = 0.2 / 20, 1e-13, 8.0 * PAYLOAD

    def rate(k: int, block: int, alone: bool) -> float:
        j = 1 - k
        heard = 0.0 if alone else p * coupling[j, k] * fade[(j, block)][k]
        return 20 * BLOCK_HZ * math.log2(1 + p * coupling[k, k] * fade[(k, block)][k]
                                         / (noise + heard))
    left, t, done = {0: bits, 1: bits}, 0.0, {}
    while len(done) < 2:
        block = math.floor(t / COHERENCE_S + 1e-9)
        on = [k for k in (0, 1) if k not in done]
        r = {k: rate(k, block, len(on) == 1) for k in on}
        step = min([(block + 1) * COHERENCE_S - t] + [left[k] / r[k] for k in on])
        for k in on:
            left[k] -= r[k] * step
            if left[k] <= 1e-6 * bits:
                done[k] = t + step
        t += step
    assert ends == pytest.approx(done, rel=1e-12)
    assert min(ends.values()) > 2 * COHERENCE_S           # both saw three blocks or more
    # the victim's rate moved at the first boundary with the interferer's row
    assert rate(0, 1, False) != rate(0, 0, False)
    events = pd.DataFrame([tuple(r) for r in log.rows], columns=list(EVENT_COLUMNS))
    events = events.assign(tx_power_w=0.2, rate_bps=[r[2] for r in link.transfer_rows],
                           completed=1)
    record = link.air_record()
    assert record.fades == [] and record.settings.coherence_s == COHERENCE_S
    assert air_rate_problems(record.frame(), events, record.settings) == []
    # the interferer's row of block 1 halved: its bits and the victim's no longer add up
    draw = record.settings.draw_block

    def halved(k: int, block: int, direction: str) -> np.ndarray:
        return draw(k, block, direction) / (2.0 if (k, block) == (1, 1) else 1.0)
    problems = air_rate_problems(record.frame(), events,
                                 dataclasses.replace(record.settings, draw_block=halved))
    assert {p.split(" ")[1] for p in problems} == {"0", "1"}


@pytest.mark.parametrize("network", [
    {"scheduler": "static"},
    {"scheduler": "round_robin"},
    {"link": {"mode": "fixed_rate", "target_rate_bps": 2e7, "max_attempts": 3}},
    {"scheduler": "round_robin", "link_abstraction": "nr", "bs_tx_power_w": 40.0},
], ids=["static", "round_robin", "fixed_rate", "nr"])
def test_a_network_faded_in_blocks_of_time_keeps_its_invariants(make_run, network):
    """Two rounds of SCALA with Rayleigh fading in blocks of 50 ms: transfers that span
    several blocks, every invariant holding (the rates and attempts' verdicts derived again
    block by block, each block's row drawn again)."""
    if network.get("link_abstraction") == "nr" and not channel.nr_link.have_sionna():
        pytest.skip("the NR link abstraction needs Sionna")
    run = make_run("scala", data={"num_clients": 40}, training={"participation": 0.3},
                   network={**NETWORK, **network, "fading": {
                       "kind": "rayleigh", "coherence": "time", "coherence_s": COHERENCE_S}})
    run.step()
    run.step()
    assert run.problems() == []
    record = run.link.air_record()
    assert record.fades == []              # drawn again by the checks, not recorded
    air = record.frame()
    assert ((air["end_s"] - air["start_s"]) > 2 * COHERENCE_S).any()   # across blocks


@pytest.mark.parametrize("fading, message", [
    ({"kind": "rayleigh", "coherence": "time"}, r"coherence_s: required with coherence time"),
    ({"kind": "rayleigh", "coherence_s": 0.05},
     r"coherence_s: only with coherence: time \(a fading block's length in time\), got "
     r"coherence_s 0.05 with no coherence \(the default is round\); set coherence: time, or "
     r"leave coherence_s out"),
    ({"kind": "rayleigh", "coherence": "time", "coherence_s": 1e-6},
     r"coherence_s: must be from 0.0001 to 1000 \(s; .*got 1e-6"),
])
def test_bad_coherence_keys_name_the_field(fading, message):
    from conftest import tiny_scenario

    with pytest.raises(ScenarioError, match=message):
        tiny_scenario("scala", network={**NETWORK, "fading": fading})


def test_the_paper_cell_refuses_fading_in_blocks_of_time_naming_both_keys():
    from conftest import tiny_scenario

    with pytest.raises(ScenarioError, match=r"network\.fading\.coherence: time needs a "
                                            r"network of cells \(network\.layout\.kind: "
                                            r"hexagonal"):
        tiny_scenario("scala", network={"fading": {"kind": "rayleigh", "coherence": "time",
                                                   "coherence_s": 0.05}})


TIME = {"kind": "rayleigh", "coherence": "time", "coherence_s": COHERENCE_S}


@pytest.mark.parametrize("algorithm, training, sections", [
    ("gas", {"rounds": 6}, {"gas": {"model_buffer": 2, "activation_buffer": 2}}),
    ("scala", {"deadline_s": 1.0}, {}),
], ids=["asynchronous", "deadline"])
def test_blocks_of_time_compose_with_asynchronous_clients_and_deadlines(
        make_run, algorithm, training, sections):
    """GAS's versions overlapping on the round-robin air, and SCALA's transfers cut at a
    deadline (their blocks of time stop with them), faded in blocks of time: the books
    balance."""
    run = make_run(algorithm, data={"num_clients": 40},
                   training={"participation": 0.3, **training},
                   network={**NETWORK, "scheduler": "round_robin", "fading": TIME},
                   **sections)
    for _ in range(training.get("rounds", 2)):
        run.step()
    assert run.problems() == []
    assert run.link.air_rows


def test_a_run_faded_in_blocks_of_time_resumes_to_the_same_records(make_run):
    """A checkpoint after round 1 of a fixed-rate link faded in blocks of time: the resumed
    run writes the uninterrupted run's events and air record (each block's row its own
    draw: no stream state to save)."""
    import copy

    def fixed_rate_run():
        return make_run("scala", data={"num_clients": 40}, training={"participation": 0.3},
                        network={**NETWORK, "fading": TIME, "link": {
                            "mode": "fixed_rate", "target_rate_bps": 2e7, "max_attempts": 3}})
    whole = fixed_rate_run()
    whole.step()
    state = copy.deepcopy(whole.state_dict())
    whole.step()
    resumed = fixed_rate_run()
    resumed.load_state_dict(state)
    resumed.step()
    assert events_of(resumed).equals(events_of(whole))
    assert resumed.link.air_rows == whole.link.air_rows
    assert resumed.problems() == []
