"""A TDD frame in the paper's cell (network.duplex, issue 49 item 1): one carrier, a
transfer's airtime passing in its direction's symbols only, an upload from its grant (K2);
the invariants hold, catch a transfer timed as if the frame were not there, and the keys'
bad values are refused naming the field."""

import numpy as np
import pandas as pd
import pytest

from channel import Direction
from scala_netsim import load_scenario
from scala_netsim.config.scenario import ScenarioError

from conftest import NETWORK

TDD = {"duplex": {"kind": "tdd", "pattern": "DDDSU", "special_slot": [10, 2, 2]}}


def transfers(run) -> pd.DataFrame:
    columns, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    return events[events["kind"].str.endswith(("upload", "download"))]


@pytest.mark.parametrize("algorithm", ["scala", "fedavg", "sfl_local_loss", "fedasync", "gas"])
def test_transfers_move_only_in_their_directions_symbols(make_run, algorithm):
    fdd = make_run(algorithm, network={"record_radio": True})
    tdd = make_run(algorithm, network=TDD)
    for run in (fdd, tdd):
        run.step()
        run.step()
    assert tdd.problems() == [] and fdd.problems() == []
    duplexing = tdd.duplexing()
    frame, k2_s = duplexing.frame, duplexing.k2_s
    assert k2_s == 0.5e-3                      # 30 kHz: a slot of 0.5 ms, K2 = 1 slot
    moved = transfers(tdd)
    airtime = moved["attempts"] * 8.0 * moved["payload_bytes"] / moved["rate_bps"]
    assert np.allclose(duplexing.airtime_s(moved), airtime, rtol=1e-9, atol=0)
    for _, e in moved.iterrows():
        direction = Direction.UPLINK if e["kind"].endswith("upload") else Direction.DOWNLINK
        # it ends in (or at the end of) one of its direction's windows, and no earlier:
        # the frame's inverse, from its grant
        ready = e["t_start_s"] + (k2_s if direction is Direction.UPLINK else 0.0)
        assert e["t_end_s"] == pytest.approx(frame.finish(direction, ready, airtime[_]),
                                             rel=1e-12)
        assert e["t_end_s"] - e["t_start_s"] >= airtime[_] * (1 - 1e-12)
    # the same rates as with paired bands (one carrier of the same width each way), longer
    # transfers: the uplink has 22.9 % of the air
    assert np.allclose(np.sort(transfers(fdd)["rate_bps"].to_numpy()),
                       np.sort(moved["rate_bps"].to_numpy()), rtol=1e-12, atol=0)
    assert tdd.env.now > fdd.env.now
    ups = moved[moved["kind"].str.endswith("upload")]
    stretch = (ups["t_end_s"] - ups["t_start_s"]).sum() / airtime[ups.index].sum()
    assert stretch > 1.0 / frame.share(Direction.UPLINK) * 0.5


def test_the_invariants_catch_a_transfer_timed_without_the_frame(make_run):
    run = make_run("fedavg", network=TDD)
    run.step()
    columns, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    from scala_netsim.books.invariants import check_radio

    radio = run.radio_settings()
    band = {"uplink": 20e6, "downlink": 20e6}
    rounds = pd.DataFrame(run.rows)
    assert check_radio(events, rounds, band, radio, duplexing=run.duplexing()) == []
    up = events.index[events["kind"] == "model_upload"][0]
    e = events.loc[up]
    events.loc[up, "t_end_s"] = e["t_start_s"] + 8.0 * e["payload_bytes"] / e["rate_bps"]
    assert any("do not last" in p
               for p in check_radio(events, rounds, band, radio, duplexing=run.duplexing()))


@pytest.mark.parametrize("overrides, message", [
    ({"network.duplex": {"kind": "tdd", "pattern": "DDXU"}},
     r"network\.duplex\.pattern: 'DDXU' has letters \['X'\]"),
    ({"network.duplex": {"kind": "tdd", "special_slot": [10, 2, 3]}},
     r"network\.duplex\.special_slot: \[10, 2, 3\] must be three counts"),
    ({"network.duplex": "tdd", "network.downlink_bandwidth_hz": 10e6},
     r"network\.duplex: tdd has one carrier.*must be equal"),
    ({"network.duplex": {"kind": "tdd", "k2_slots": -1}}, r"network\.duplex\.k2_slots"),
    ({"network.duplex": "half"}, r"network\.duplex\.kind"),
    ({"network.duplex": "tdd", "training.deadline_s": 5.0},
     r"network\.duplex: tdd in the paper's cell times whole transfers only"),
])
def test_bad_duplex_keys_are_refused_naming_the_field(overrides, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario("tests/golden/scenario.yaml", overrides)


def test_fdd_is_the_default_and_tdd_a_word_or_a_mapping():
    assert load_scenario("tests/golden/scenario.yaml").network.duplex.kind == "fdd"
    tdd = load_scenario("tests/golden/scenario.yaml", {"network.duplex": "tdd"}).network.duplex
    assert (tdd.kind, tdd.pattern, tdd.special_slot, tdd.k2_slots) == (
        "tdd", "DDDSU", (10, 2, 2), None)


def test_each_transfer_records_its_wait_for_the_frame(make_run):
    """events.csv's tdd_wait_s: a transfer's duration less its airtime (the wait for its grant
    and its direction's symbols); an upload waits at least its K2; computations wait none."""
    run = make_run("scala", network=TDD)
    run.step()
    columns, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    assert list(columns)[-1] == "tdd_wait_s"
    moved = events[events["kind"].str.endswith(("upload", "download"))]
    airtime = moved["attempts"] * 8.0 * moved["payload_bytes"] / moved["rate_bps"]
    duration = moved["t_end_s"] - moved["t_start_s"]
    assert np.allclose(moved["tdd_wait_s"], duration - airtime, rtol=0, atol=1e-12)
    ups = moved["kind"].str.endswith("upload")
    assert (moved.loc[ups, "tdd_wait_s"] >= run.duplexing().k2_s - 1e-12).all()
    assert (events.loc[~events.index.isin(moved.index), "tdd_wait_s"] == 0).all()


def test_a_tdd_run_is_re_timed_under_paired_bands(tmp_path):
    """A TDD run's records (its events.csv with tdd_wait_s) are a re-timing's source: the same
    learning, timed again with paired bands, to the run trained with them."""
    import scala_netsim as sn

    base = {"algorithms": ["fedavg"], "training.rounds": 2}
    tdd = sn.run(load_scenario("tests/golden/scenario.yaml",
                               {**base, "network.duplex": "tdd"}), out=tmp_path / "tdd",
                 echo=False, estimate=False)
    assert "tdd_wait_s" in tdd.events
    fdd = load_scenario("tests/golden/scenario.yaml", base)
    retimed = sn.run(fdd, out=tmp_path / "retimed", echo=False, estimate=False,
                     retime_from=tmp_path / "tdd", retime_only=True)
    trained = sn.run(fdd, out=tmp_path / "trained", echo=False, estimate=False)
    assert retimed.summary["retimed_from"].notna().all()
    assert retimed.rounds.equals(trained.rounds)
    assert retimed.summary["total_sim_time_s"].tolist() == trained.summary[
        "total_sim_time_s"].tolist()
    assert tdd.summary["total_sim_time_s"].iloc[0] > trained.summary["total_sim_time_s"].iloc[0]


@pytest.mark.parametrize("algorithm", ["scala", "fedavg"])
def test_a_network_of_cells_runs_on_the_frame(make_run, algorithm):
    """The network's air runs on each direction's symbol time: every transfer's symbols from
    its grant to its end (less its backhaul) give its bits at its recorded rate, its end lies
    in its direction's symbols, the air record's rates derived again (with the frame) match,
    and the invariants hold; the round takes longer than with paired bands."""
    from scala_netsim.books.air_rates import air_rate_problems

    sections = {"data": {"num_clients": 40}, "training": {"participation": 0.3}}
    fdd = make_run(algorithm, **sections, network=NETWORK)
    tdd = make_run(algorithm, **sections,
                   network={**NETWORK, **TDD, "backhaul": {"latency_s": 0.002}})
    for run in (fdd, tdd):
        run.step()
    assert tdd.problems() == []
    moved = transfers(tdd)
    airtime = 8.0 * moved["payload_bytes"] / moved["rate_bps"]
    duplexing = tdd.duplexing()
    assert np.allclose(duplexing.airtime_s(moved, moved["backhaul_s"].to_numpy()), airtime,
                       rtol=1e-9, atol=0)
    frame = duplexing.frame
    for _, e in moved.iterrows():
        direction = Direction.UPLINK if e["kind"].endswith("upload") else Direction.DOWNLINK
        air_end = e["t_end_s"] - (e["backhaul_s"] if direction is Direction.UPLINK else 0.0)
        x = air_end % frame.period_s
        w = frame.windows(direction)
        assert ((w[:, 0] - 1e-9 <= x) & (x <= w[:, 1] + 1e-9)).any() or min(
            x, frame.period_s - x) < 1e-9
    record = tdd.link.air_record()
    columns, rows = tdd.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    assert record.settings.frame == frame
    assert air_rate_problems(record.frame(), events, record.settings) == []
    assert tdd.env.now > fdd.env.now
