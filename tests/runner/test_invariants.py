"""The run's books: a real round passes every check, and each kind of corruption is caught."""

import pandas as pd
import pytest

from scala_netsim.core.events import events_frame
from scala_netsim.runner.invariants import check_run
from scala_netsim.runner.metrics import round_row
from scala_netsim.sim.link import grants_frame, transfers_frame

from conftest import W_DL, W_UL
from conftest import two_client_scala as build

BAND_HZ = {"uplink": W_UL, "downlink": W_DL}


@pytest.fixture(scope="module")
def books():
    sim = build()
    sim.run_round(1, [0, 1])
    start = sim.env.now
    sim.run_round(2, [0, 1])
    rows = [round_row(1, [r for r in sim.log.rows if r[2] == 1], 0.0, start, 2),
            round_row(2, [r for r in sim.log.rows if r[2] == 2], start, sim.env.now, 2)]
    return (events_frame(sim.log.events), pd.DataFrame(rows), grants_frame(sim.link.grant_rows),
            transfers_frame(sim.link.transfers))


def check(books, pipelined=False):
    return check_run(*books, BAND_HZ, pipelined)


def test_a_real_run_balances(books):
    assert check(books) == []


def late(books, offset_s=1e7):
    """The same books with the clock started `offset_s` later: times keep their durations
    only to the rounding of the larger numbers."""
    events, rounds, grants, transfers = (frame.copy() for frame in books)
    events[["t_start_s", "t_end_s"]] += offset_s
    rounds["sim_time_s"] += offset_s
    return events, rounds, grants, transfers


def test_a_transfer_late_in_a_long_run_is_allowed_the_clocks_rounding(books):
    """Found in a 500-round timing-only ResNet-18 run at S1 (a 3.3 kB client model): at
    31,162 s of simulated time a millisecond transfer's duration is good to a few 1e-9 of
    itself, not 1e-9; here, at 1e7 s, to about 1e-6."""
    assert check(late(books)) == []
    events, rounds, grants, transfers = late(books)
    i = events.index[events.kind == "activation_upload"][0]
    events.loc[i, "t_end_s"] += 1e-4 * (events.loc[i, "t_end_s"] - events.loc[i, "t_start_s"])
    assert "do not last attempts x payload bits / their rate" in "\n".join(
        check((events, rounds, grants, transfers)))


def corrupted(books, change):
    copies = tuple(frame.copy() for frame in books)
    change(*copies)
    return "\n".join(check(copies))


def test_each_corruption_is_caught(books):
    def longer_upload(e, r, g, t):
        i = e.index[e.kind == "activation_upload"][0]
        e.loc[i, "t_end_s"] *= 1 + 1e-6
    assert "do not last attempts x payload bits / their rate" in corrupted(books, longer_upload)

    def wrong_rate(e, r, g, t):
        t.loc[3, "rate_bps"] *= 1.001
    assert "do not last attempts x payload bits / their rate" in corrupted(books, wrong_rate)

    def extra_bytes(e, r, g, t):
        e.loc[e.index[e.kind == "model_upload"][0], "payload_bytes"] += 1
    text = corrupted(books, extra_bytes)
    assert "uplink_bytes differs from the sum over events.csv in rounds [1]" in text

    def overlap(e, r, g, t):
        i = e.index[(e.kind == "client_forward") & (e.client_id == 0)][1]
        e.loc[i, "t_start_s"] -= 0.05
    text = corrupted(books, overlap)
    assert "client 0: computations overlap in time" in text

    def clock_back(e, r, g, t):
        r.loc[1, "sim_time_s"] = 0.0
    text = corrupted(books, clock_back)
    assert "sim_time_s goes back" in text and "is not the end of its last event" in text

    def too_much_band(e, r, g, t):
        g.loc[(g["round"] == 2) & (g["direction"] == "uplink"), "bandwidth_hz"] *= 1.5
    text = corrupted(books, too_much_band)
    assert ("round 2: uplink sub-bands granted sum to 1.5e+07 Hz, more than the band's "
            "1e+07 Hz") in text
    assert "transfers used another sub-band than their client was granted" in text

    def lost_rate(e, r, g, t):
        t.loc[t.index[-1], "event_index"] = t.loc[t.index[0], "event_index"]
    assert "transfer events but" in corrupted(books, lost_rate)


def test_pipelined_clients_may_upload_while_computing(books):
    events = books[0].copy()
    i = events.index[(events.kind == "client_forward") & (events.client_id == 1)][1]
    j = events.index[(events.kind == "activation_upload") & (events.client_id == 1)][0]
    events.loc[i, ["t_start_s", "t_end_s"]] = events.loc[j, ["t_start_s", "t_end_s"]].to_numpy()
    changed = (events, *books[1:])
    assert any("client 1: events overlap" in p for p in check(changed))
    assert not any("client 1" in p for p in check(changed, pipelined=True))
