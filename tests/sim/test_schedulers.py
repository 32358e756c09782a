"""The proportional-fair scheduler (network.scheduler: proportional_fair, issue 62 item 3): its
shares and average; by hand, two clients of one cell whose gains alternate in blocks of time,
the scheduler's choices and both transfers' ends in closed form, and round robin's ends
against them; the book of its decisions checked (pf_book), and a book tampered with (a block
idle while a request waits, an average off its closed form, the blocks out of order)
reported; in a network run under fading in blocks of time, every invariant, its own from its
book among them, no block idle while a transfer of its cell waits, and the air record's rates
derived again."""

import math

import numpy as np
import pytest
import simpy

from channel import Direction
from channel.network import proportional_fair_average, proportional_fair_shares
from scala_netsim.sim.network import pf_book
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.schedulers import ProportionalFair, Request, RoundRobin

from conftest import NETWORK as SEVEN_SITES
from conftest import per_instant_air

BLOCK_HZ = 360e3
NOISE_W = 4e-21 * BLOCK_HZ            # -174 dBm/Hz over a block
BLOCKS, POWER_W = 4, 0.2
G_HIGH, G_LOW = 1e-10, 1e-12          # a client's gain in its good and its bad blocks of time
T_C = 0.05                            # a block of time (s)
SLOT_S, BETA = 1e-3, 0.98


def test_the_shares_go_by_metric_each_taking_what_it_can_use():
    assert proportional_fair_shares(10, [10, 10, 10], [1.0, 3.0, 2.0]) == [0, 10, 0]
    assert proportional_fair_shares(10, [4, 6, 3], [1.0, 3.0, 2.0]) == [1, 6, 3]
    assert proportional_fair_shares(10, [4, 3, 2], [1.0, 3.0, 2.0]) == [4, 3, 2]  # 1 idle
    assert proportional_fair_shares(4, [4, 4], [1.0, 1.0]) == [4, 0]     # a tie: in order


def test_the_average_moves_slot_by_slot_in_closed_form():
    average = 5.0
    for _ in range(7):
        average = BETA * average + (1 - BETA) * 2.0
    assert proportional_fair_average(5.0, 2.0, BETA, 7) == pytest.approx(average, rel=1e-12)
    assert proportional_fair_average(5.0, 2.0, BETA, 0) == 5.0


def rate(n: int, gain: float) -> float:
    """Shannon on n blocks with the power spread over them, nobody interfering."""
    return n * BLOCK_HZ * math.log2(1 + POWER_W / n * gain / NOISE_W)


def alternating(scheduler_of) -> tuple[dict[int, float], Air, dict[int, Flow]]:
    """Clients 0 and 1 of cell 0 upload from 0; client 0's gain is high in even blocks of
    time and low in odd ones, client 1's the other way round (posted on the radio map at
    every boundary, client 0 first). Client 0 sends 1.5 R_hi T_c bits, client 1 R_hi T_c +
    0.5 R_lo T_c + 0.25 R_hi T_c. -> each client's end, the air and the flows."""
    env = simpy.Environment()
    radio = RadioMap(np.array([[G_HIGH], [G_LOW]]), np.array([0, 0]))
    air = Air(env, radio, BLOCKS, BLOCK_HZ, NOISE_W, True, True)
    air.scheduler = scheduler_of(air)
    r_hi, r_lo = rate(BLOCKS, G_HIGH), rate(BLOCKS, G_LOW)
    bits = {0: 1.5 * r_hi * T_C, 1: r_hi * T_C + 0.5 * r_lo * T_C + 0.25 * r_hi * T_C}
    ended: dict[int, float] = {}
    flows = {}
    for k in (0, 1):
        flow = flows[k] = Flow(bits[k], 0.0, lambda f, k=k: ended.__setitem__(k, env.now))
        air.request(Request(flow, k, 0, radio.gain(Direction.UPLINK, k),
                            lambda n: (POWER_W, POWER_W / n), BLOCKS))

    def boundary(i: int) -> None:
        for k in (0, 1):
            high = (i + k) % 2 == 0
            radio.post(Direction.UPLINK, k, np.array([1.0 if high else G_LOW / G_HIGH])
                       if k == 0 else np.array([G_HIGH / G_LOW if high else 1.0]))
        env.timeout(T_C).callbacks.append(lambda _: boundary(i + 1))
    env.timeout(T_C).callbacks.append(lambda _: boundary(1))
    env.run(until=10 * T_C)
    return ended, air, flows


def test_proportional_fair_serves_each_client_in_its_good_blocks_by_hand():
    """At 0 both metrics are 1 (an average starts at the client's own rate): client 0, first,
    wins all four blocks and client 1 waits. From T_c client 1's average has decayed by
    beta^(T_c / slot) while client 0's stood at R_hi: client 1 wins, and client 0 waits on
    the air; from 2 T_c the other way round. Client 0 ends at 2.5 T_c, having sent in its two
    good blocks; client 1 then has the blocks alone in its bad one, 0.5 T_c at R_lo, and
    ends 0.25 T_c into its next good one, at 3.25 T_c."""
    ended, air, flows = alternating(
        lambda air: ProportionalFair(BLOCKS, air.quiet_rate, BETA, SLOT_S))
    assert ended[0] == pytest.approx(2.5 * T_C, rel=1e-9)
    assert ended[1] == pytest.approx(3.25 * T_C, rel=1e-9)
    # every stretch on all four blocks: client 0 in [0, T_c) and [2 T_c, 2.5 T_c), client 1
    # in [T_c, 2 T_c) and [2.5 T_c, 3.25 T_c) (alone from 2.5 T_c, in its bad block); each
    # waits, parked on the air, while the other holds them
    spans = {k: [(n, round(t0 / T_C, 9), round(t1 / T_C, 9))
                 for _, n, t0, t1, _, _ in flows[k].stretches if t1 > t0] for k in (0, 1)}
    assert spans == {0: [(4, 0.0, 1.0), (0, 1.0, 2.0), (4, 2.0, 2.5)],
                     1: [(4, 1.0, 2.0), (0, 2.0, 2.5), (4, 2.5, 3.25)]}
    # parked a third of its air time: its SINR is averaged over the time it held blocks
    assert flows[0].held_s == pytest.approx(2.5 * T_C, rel=1e-9)
    assert flows[0].blocks_s == pytest.approx(1.5 * T_C, rel=1e-9)
    # the metrics behind the choices, from the averages as stated
    r_hi, r_lo = rate(BLOCKS, G_HIGH), rate(BLOCKS, G_LOW)
    keep = BETA ** (T_C / SLOT_S)
    assert r_lo / r_hi < r_lo / (keep * r_lo)                  # T_c: client 1 wins
    average_1 = keep * (keep * r_lo) + (1 - keep) * r_hi       # 2 T_c: client 0 wins
    assert r_hi / average_1 < r_hi / (keep * r_hi)
    # client 1's average at its end: parked 2-2.5 T_c, 2.5-3 T_c at R_lo (alone), 3-3.25 T_c
    # at R_hi
    average_1 = proportional_fair_average(average_1, 0.0, BETA, 0.5 * T_C / SLOT_S)
    average_1 = proportional_fair_average(average_1, r_lo, BETA, 0.5 * T_C / SLOT_S)
    average_1 = proportional_fair_average(average_1, r_hi, BETA, 0.25 * T_C / SLOT_S)
    assert air.scheduler.average(0, 1) == pytest.approx(average_1, rel=1e-9)


def test_round_robin_splits_the_blocks_whatever_the_gains_and_ends_later():
    """The same transfers under round robin: two blocks each while both are in progress,
    whatever the gains; both end later than under proportional fair."""
    fair, _, _ = alternating(
        lambda air: ProportionalFair(BLOCKS, air.quiet_rate, BETA, SLOT_S))
    equal, _, flows = alternating(lambda air: RoundRobin(BLOCKS))
    first_end = min(equal.values())
    for k in (0, 1):
        assert {n for _, n, t0, t1, _, _ in flows[k].stretches
                if t0 < first_end and t1 > t0} == {2}
    assert equal[0] > fair[0] and equal[1] > fair[1]


def decided() -> ProportionalFair:
    """A scheduler of 4 blocks at 1 bit/s a block times a client's gain, after four decisions
    of cell 0: clients 0 (cap 4) and 1 (cap 2) at 0 (a tie: client 0 takes all 4); 0, 1 and 2
    (cap 3) at 10 ms (2 blocks to 1, 2 to 0, none to 2); 1 and 2 at 20 ms (3 to 2, 1 to 1;
    client 0's average moves on meanwhile); 0, 1 and 2 at 30 ms (all 4 to 0)."""
    scheduler = ProportionalFair(BLOCKS, lambda r, n: n * r.gain, BETA, SLOT_S)
    caps, gains = {0: 4, 1: 2, 2: 3}, {0: 3.0, 1: 2.0, 2: 5.0}
    for now, clients in ((0.0, (0, 1)), (0.01, (0, 1, 2)), (0.02, (1, 2)), (0.03, (0, 1, 2))):
        requests = [Request(Flow(1.0, now, lambda f: None), k, 0, gains[k] * (1 + now),
                            lambda n: (POWER_W, POWER_W / n), caps[k]) for k in clients]
        scheduler.assign(0, requests, [], now)        # (all waiting)
    return scheduler


def tamper(scheduler: ProportionalFair, row: int, column: int, value: float) -> None:
    scheduler.book.rows[row * len(pf_book.ROW_COLUMNS) + column] = value


def test_the_book_of_decisions_keeps_every_invariant():
    scheduler = decided()
    assert len(scheduler.book) == 4
    table = scheduler.book.table()
    assert table[:, pf_book.BLOCKS].tolist() == [4, 0, 2, 2, 0, 1, 3, 4, 0, 0]
    assert scheduler.problems() == []


def test_a_block_left_idle_while_a_request_waits_is_reported():
    scheduler = decided()
    tamper(scheduler, 0, pf_book.BLOCKS, 3)     # client 0 got 3 of 4, client 1 (cap 2) none
    assert scheduler.problems() == [
        "proportional fair, cell 0 at 0.0 s: 3 blocks handed out of 4, where the requests' "
        "caps [4, 2] use 4"]


def test_an_average_off_its_closed_form_is_reported():
    scheduler = decided()
    table = scheduler.book.table()
    average = table[3, pf_book.AFTER] * 1.001   # client 1 at 10 ms; its metric follows it
    tamper(scheduler, 3, pf_book.AFTER, average)
    tamper(scheduler, 3, pf_book.METRIC, table[3, pf_book.RATE] / average)
    problems = scheduler.problems()
    assert problems and all("as stated" in p for p in problems)
    assert problems[0].startswith("proportional fair, cell 0 at 0.01 s: client 1's average "
                                  "after the update is")
    assert any(p.startswith("proportional fair, cell 0 at 0.02 s: client 1's average before")
               for p in problems)


def test_blocks_out_of_order_and_a_metric_not_the_rate_over_the_average_are_reported():
    scheduler = decided()
    tamper(scheduler, 3, pf_book.METRIC, 1e-3)     # client 1 at 10 ms got 2, below client 0's
    problems = scheduler.problems()
    assert any("client 0 (request 0, metric 1.01) got 2 of its 4 blocks while client 1 "
               "(request 1, metric 0.001) got 2" in p for p in problems)
    assert any("client 1's metric is 0.001, not its rate" in p for p in problems)


def test_the_problems_listed_stop_at_five_and_say_how_many():
    scheduler = decided()
    for row in range(len(scheduler.book.table())):
        tamper(scheduler, row, pf_book.METRIC, -1.0)
    problems = scheduler.problems()
    assert len(problems) == 6 and problems[-1].startswith("proportional fair: ")
    assert problems[-1].endswith("problems in all")
    assert pf_book.decision_problems(scheduler.book, BLOCKS, BETA, SLOT_S) == problems


NETWORK = {**SEVEN_SITES, "carrier_frequency_hz": 3.5e9, "scheduler": "proportional_fair",
           "fading": {"kind": "rayleigh", "coherence": "time", "coherence_s": 0.02}}


@pytest.mark.slow
def test_a_network_run_under_proportional_fair_keeps_every_invariant(make_run):
    sections = {"data": {"num_clients": 40}, "training": {"participation": 0.5}}
    run = make_run("scala", **sections, network=NETWORK)
    robin = make_run("scala", **sections, network={**NETWORK, "scheduler": "round_robin"})
    for r in (run, robin):
        r.step()
    assert run.problems() == []
    # the proportional-fair scheduler's own invariants, from the book of its decisions
    for direction in Direction:
        scheduler = run.link.scheduler(direction)
        assert isinstance(scheduler, ProportionalFair) and len(scheduler.book) > 0
        assert scheduler.problems() == []
    frame = per_instant_air(run)
    # it chose differently from round robin: some transfer held all its cell's blocks
    assert (frame["blocks"] == frame["cap_blocks"]).any()
    assert run.env.now != robin.env.now
    # and the run's check reports a broken one: a metric that is not the rate over the average
    run.link.scheduler(Direction.UPLINK).book.rows[pf_book.METRIC] = -1.0
    assert any(p.startswith("uplink: proportional fair, cell ") and "metric is -1.0" in p
               for p in run.problems())


@pytest.mark.slow
def test_a_proportional_fair_run_whose_sets_of_blocks_are_not_ranges_derives_again(make_run):
    """One site of 3 cells, about 7 of the round's clients a cell, NR caps below the band:
    placing the blocks moving as few as it can (channel.network.kept_blocks), the scheduler
    gives some stretch a set of blocks that is not a range, recorded a row a run of it; the
    rates derive again from the record, and every invariant holds."""
    layout = {**NETWORK["layout"], "sites": 1}
    run = make_run("scala", data={"num_clients": 40}, training={"participation": 0.5},
                   network={**NETWORK, "layout": layout, "link_abstraction": "nr",
                            "bs_tx_power_w": 40.0})
    run.step()
    assert run.problems() == []
    frame = per_instant_air(run)
    again = frame.duplicated(["event_index", "start_s"], keep=False)
    assert again.any()
    for _, runs in frame[again].groupby(["event_index", "start_s"]):
        ends = (runs["first_block"] + runs["blocks"]).to_numpy()
        assert (runs["first_block"].to_numpy()[1:] > ends[:-1]).all()     # gaps between


def test_a_book_with_no_decision_has_no_problem():
    """Review of issue 64: a proportional-fair scheduler that never decided (every client of
    the direction dropped before it sent: a deadline shorter than the downloads) broke its
    book's reading."""
    from scala_netsim.sim.network.pf_book import DecisionBook, decision_problems

    assert DecisionBook().decisions() == []
    assert decision_problems(DecisionBook(), 10, 0.98, 1e-3) == []
