"""The run's books: a real round passes every check, and each kind of corruption is caught."""

import numpy as np
import pandas as pd
import pytest

from scala_netsim.engine import EVENT_COLUMNS
from scala_netsim.invariants import check_run
from scala_netsim.metrics import round_row
from scala_netsim.scenario import validate_scenario

from test_engine import DIST_M, N0_DBM, P_BS, P_UE, W_DL, W_UL, build


@pytest.fixture(scope="module")
def books():
    env, log, protocol = build()
    protocol.run_round(1, [0, 1])
    start = env.now
    protocol.run_round(2, [0, 1])
    rows = [round_row(1, [e for e in log.rows if e[2] == 1], 0.0, start),
            round_row(2, [e for e in log.rows if e[2] == 2], start, env.now)]
    for row in rows:
        row["num_clients"] = 2
    events = pd.DataFrame(log.rows, columns=EVENT_COLUMNS)
    clients = pd.DataFrame({"client_id": [0, 1], "distance_m": DIST_M,
                            "pathloss_db": 128.1 + 37.6 * np.log10(np.asarray(DIST_M) / 1000)})
    network = validate_scenario({"name": "x", "network": {
        "uplink_bandwidth_hz": W_UL, "downlink_bandwidth_hz": W_DL, "client_tx_power_w": P_UE,
        "bs_tx_power_w": P_BS, "noise_psd_dbm_per_hz": N0_DBM}}).network
    return events, pd.DataFrame(rows), clients, network


def test_a_real_run_balances(books):
    assert check_run(*books) == []


def corrupted(books, change):
    events, rounds, clients, network = books
    events, rounds = events.copy(), rounds.copy()
    change(events, rounds)
    return "\n".join(check_run(events, rounds, clients, network))


def test_each_corruption_is_caught(books):
    def longer_upload(e, r):
        i = e.index[e.kind == "activation_upload"][0]
        e.loc[i, "t_end_s"] *= 1 + 1e-6
    assert "do not last payload bits / channel rate" in corrupted(books, longer_upload)

    def extra_bytes(e, r):
        e.loc[e.index[e.kind == "model_upload"][0], "payload_bytes"] += 1
    text = corrupted(books, extra_bytes)
    assert "uplink_bytes differs from the sum over events.csv in rounds [1]" in text

    def overlap(e, r):
        i = e.index[(e.kind == "client_forward") & (e.client_id == 0)][1]
        e.loc[i, "t_start_s"] -= 0.05
    text = corrupted(books, overlap)
    assert "client 0: computations overlap in time" in text or "client 0: events overlap" in text

    def clock_back(e, r):
        r.loc[1, "sim_time_s"] = 0.0
    text = corrupted(books, clock_back)
    assert "sim_time_s goes back" in text and "is not the end of its last event" in text

    def fewer_participants(e, r):
        r["num_clients"] = 1   # each transfer would then claim the whole band
    text = corrupted(books, fewer_participants)
    assert "uplink bandwidth in use" in text


def test_pipelined_clients_may_upload_while_computing(books):
    events, rounds, clients, network = books
    events = events.copy()
    i = events.index[(events.kind == "client_forward") & (events.client_id == 1)][1]
    j = events.index[(events.kind == "activation_upload") & (events.client_id == 1)][0]
    events.loc[i, ["t_start_s", "t_end_s"]] = events.loc[j, ["t_start_s", "t_end_s"]].to_numpy()
    assert any("client 1: events overlap" in p for p in check_run(events, rounds, clients, network))
    assert not any("client 1" in p for p in check_run(events, rounds, clients, network,
                                                      pipelined_clients=True))
