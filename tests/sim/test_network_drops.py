"""Deadlines and over-selection in a network of cells (issue 50): a dropped client's transfer
is cut wherever its bits are (on the air its blocks go to the others at that instant), is
recorded as not completed with the bytes it got through, and the rules of docs/model/drops.md
hold, with every rate derived again from the air record."""

import numpy as np
import pandas as pd
import pytest

NETWORK = {"layout": {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3},
           "pathloss": "3gpp_38901_uma"}


def events_of(run) -> pd.DataFrame:
    names, rows = run.event_table()
    return pd.DataFrame(rows, columns=list(names))


@pytest.mark.parametrize("algorithm, training, scheduler", [
    ("fedavg", {"deadline_s": 4.0}, "static"),
    ("fedavg", {"deadline_s": 4.0}, "round_robin"),
    ("scala", {"deadline_s": 1.0}, "static"),
    ("scala", {"over_selection": 0.5}, "round_robin"),
    ("splitfed_v2", {"deadline_s": 1.0}, "round_robin"),
])
def test_a_network_with_deadlines_keeps_its_invariants(make_run, algorithm, training,
                                                       scheduler):
    run = make_run(algorithm, data={"num_clients": 40},
                   training={"participation": 0.3, **training},
                   network={**NETWORK, "scheduler": scheduler})
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    dropped = events[events["kind"] == "client_dropped"]
    cut = events[(events["completed"] == 0) & (events["bandwidth_hz"] > 0)]
    assert len(dropped) > 0 and len(cut) > 0      # some cut on the air


@pytest.mark.parametrize("deadline_s", [0.05, 2.0])
def test_a_deadline_cuts_transfers_on_the_backhaul_and_on_the_air_after_it(make_run,
                                                                             deadline_s):
    """With a backhaul behind every cell: at 0.05 s every download is cut on the backhaul
    (nothing reached the air: the air record is empty), at 2 s some on the air after it
    (their backhaul time is the crossing's, not up to the cut). The books balance."""
    run = make_run("fedavg", data={"num_clients": 40},
                   training={"participation": 0.3, "deadline_s": deadline_s},
                   network={**NETWORK, "backhaul": {"latency_s": 0.01, "bandwidth_bps": 1e8}})
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    cut = events[(events["completed"] == 0) & events["kind"].str.endswith("download")]
    assert len(cut) > 0
    assert (len(run.link.air_rows) == 0) == (deadline_s < 0.1)


@pytest.mark.parametrize("algorithm", ["scala", "fedavg"])
def test_a_cell_with_more_clients_than_blocks_under_a_deadline(make_run, algorithm):
    """12 clients of a round on a cell of 5 blocks, taken in turns: a dropped client's
    transfer gives up its turn, or its block to the next in turn; the books balance."""
    run = make_run(algorithm, data={"num_clients": 40},
                   training={"participation": 0.3, "deadline_s": 6.0},
                   network={**NETWORK, "layout": {"kind": "hexagonal", "sites": 1,
                                                  "sectors": 1},
                            "uplink_bandwidth_hz": 2e6, "downlink_bandwidth_hz": 2e6})
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    assert (events["kind"] == "client_dropped").any()
    assert len(run.link.turn_rows) > 0


def test_a_transfer_cut_at_its_deadline_frees_blocks_that_the_other_then_uses():
    """By hand, round robin on cell 0 of 8 blocks: A and B from 0, 4 blocks each; A is cut at
    t_cut (Air.remove: the bits it moved so far come back), and B has all 8 from then."""
    import simpy
    from test_round_robin import BLOCK_HZ, NOISE_W, quiet_rate

    from scala_netsim.sim.air import Air, Shared
    from scala_netsim.sim.pool import Flow

    env = simpy.Environment()
    gains = np.array([[1e-10], [3e-11]])
    air = Air(env, gains, 8, BLOCK_HZ, NOISE_W, True, True)
    power, bits, t_cut = 0.2, 3e6, 0.01
    ended: dict[str, float] = {}
    flows = {}
    for name, k in (("a", 0), ("b", 1)):
        flows[name] = Flow(bits, 0.0, lambda f, name=name: ended.__setitem__(name, env.now))
        air.add_shared(Shared(flows[name], k, 0, float(gains[k, 0]),
                              lambda n: (power, power / n), 8))
    moved = {}
    cut = env.timeout(t_cut)
    cut.callbacks.append(lambda _: moved.__setitem__("a", air.remove(flows["a"])))
    env.run()
    ga, gb = gains[0, 0], gains[1, 0]
    assert "a" not in ended                       # cut: it never crosses
    assert moved["a"] == pytest.approx(quiet_rate(4, power, ga) * t_cut, rel=1e-12)
    left_b = bits - quiet_rate(4, power, gb) * t_cut
    assert ended["b"] == pytest.approx(t_cut + left_b / quiet_rate(8, power, gb), rel=1e-12)
    assert [s[:2] for s in flows["b"].stretches] == [[4, 4], [0, 8]]
    assert flows["a"].end == t_cut and flows["a"].stretches[-1][3] == t_cut


def test_a_deadline_under_the_nr_link_abstraction_keeps_its_invariants(make_run):
    """Cut transfers under NR: the MCS and TBLER of the time they sent, no HARQ wait after a
    cut, the rates derived again with the lookups."""
    import channel

    if not channel.nr_link.have_sionna():
        pytest.skip("the NR link abstraction reads Sionna's tables")
    run = make_run("scala", data={"num_clients": 40},
                   training={"participation": 0.3, "deadline_s": 1.0},
                   network={**NETWORK, "link_abstraction": "nr", "bs_tx_power_w": 40.0,
                            "scheduler": "round_robin"})
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    assert ((events["completed"] == 0) & (events["bandwidth_hz"] > 0)).any()


def test_a_transfer_cut_in_its_harq_wait_got_its_whole_payload_through(make_run):
    """Under NR with a long HARQ round trip (20,000 slots) a deadline lands in transfers'
    HARQ waits: their air time is over, so each is recorded with its whole payload, its blocks
    and the part of the wait it waited (the invariants' bound on a cut transfer's duration
    counts that wait)."""
    import channel

    if not channel.nr_link.have_sionna():
        pytest.skip("the NR link abstraction reads Sionna's tables")
    run = make_run("scala", data={"num_clients": 40},
                   training={"participation": 0.3, "deadline_s": 2.0},
                   network={**NETWORK, "link_abstraction": "nr", "bs_tx_power_w": 40.0,
                            "scheduler": "round_robin", "harq_rtt_slots": 20000})
    run.step()
    run.step()
    assert run.problems() == []
    events = events_of(run)
    full = events[events["completed"] == 1].groupby("kind")["payload_bytes"].max()
    waited = events[(events["completed"] == 0) & (events["harq_wait_s"] > 0)]
    assert len(waited) > 0
    assert (waited["payload_bytes"].to_numpy() == full[waited["kind"]].to_numpy()).all()
    assert (waited["bandwidth_hz"] > 0).all()
