"""The SimPy engine against a timeline worked out by hand for 2 clients and 2 iterations."""

import math

import numpy as np
import pytest
import simpy
import torch

from channel import EqualShareAllocator
from scala_netsim.algorithms.scala import ConcatSplitTrainer
from scala_netsim.engine import SERVER_ID, Cell, ConcatSplitProtocol, EventLog
from scala_netsim.metrics import BUCKETS, round_row
from scala_netsim.models import build_split_model

DIST_M = (100.0, 400.0)
FLOPS_PER_S = (2e9, 5e9)
SERVER_FLOPS_PER_S = 1e13
W_UL, W_DL, P_UE, P_BS, N0_DBM = 10e6, 20e6, 0.2, 1.0, -174.0
B_K = (3, 5)          # |D_k| = 6 and 10, B = 8
LOCAL_ITERS = 2


def rate_bps(bandwidth_hz, power_w, distance_m):
    """Independent re-implementation: b log2(1 + p g / (N0 b)) with 3GPP 36.814 macro loss."""
    gain = 10 ** (-(128.1 + 37.6 * math.log10(distance_m / 1000)) / 10)
    noise_w = 10 ** ((N0_DBM - 30) / 10) * bandwidth_hz
    return bandwidth_hz * math.log2(1 + power_w * gain / noise_w)


def conv_flops(b, c_in, c_out, k, hw):
    return 2 * b * c_out * hw * hw * c_in * k * k


def build(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(16, 1, 32, 32, generator=g)
    y = torch.randint(10, (16,), generator=g)
    client, server = build_split_model("alexnet14", "S2", 1, 10, g)
    trainer = ConcatSplitTrainer(client, server, x, y, [np.arange(6), np.arange(6, 16)], 10,
                                 batch_size=8, lr=0.01, momentum=0.9, weight_decay=0.0,
                                 logit_adjust=True, generator=g)
    pathloss_db = 128.1 + 37.6 * np.log10(np.asarray(DIST_M) / 1000)
    cell = Cell(np.asarray(DIST_M), pathloss_db, np.asarray(FLOPS_PER_S), SERVER_FLOPS_PER_S,
                W_UL, W_DL, P_UE, P_BS, N0_DBM)
    env = simpy.Environment()
    log = EventLog()
    protocol = ConcatSplitProtocol(env, cell, trainer, log, EqualShareAllocator(), LOCAL_ITERS)
    return env, log, protocol


def hand_timeline():
    """{(local_iter, client_id, kind): (t_start_s, t_end_s, payload_bytes, flops)}."""
    model_bytes = 4 * (64 * 1 * 121 + 64 + 192 * 64 * 25 + 192)
    up = [rate_bps(W_UL / 2, P_UE, d) for d in DIST_M]
    down = [rate_bps(W_DL / 2, P_BS / 2, d) for d in DIST_M]   # BS power spread over the band
    fwd = [conv_flops(b, 1, 64, 11, 8) + conv_flops(b, 64, 192, 5, 4) for b in B_K]
    bwd = [conv_flops(b, 1, 64, 11, 8) + 2 * conv_flops(b, 64, 192, 5, 4) for b in B_K]
    rest = conv_flops(8, 384, 256, 3, 2) + conv_flops(8, 256, 256, 3, 2) + 2 * 8 * 256 * 10
    server_fwd = conv_flops(8, 192, 384, 3, 2) + rest
    server_flops = 3 * server_fwd + rest
    act = [b * 768 * 4 + b * 8 for b in B_K]       # float32 activations + int64 labels
    grad = [b * 768 * 4 for b in B_K]
    events, t = {}, [0.0, 0.0]
    for k in (0, 1):
        events[(-1, k, "model_download")] = (0.0, model_bytes * 8 / down[k], model_bytes, 0)
        t[k] = model_bytes * 8 / down[k]
    for it in range(LOCAL_ITERS):
        for k in (0, 1):
            events[(it, k, "client_forward")] = (t[k], t[k] + fwd[k] / FLOPS_PER_S[k], 0, fwd[k])
            t[k] += fwd[k] / FLOPS_PER_S[k]
            events[(it, k, "activation_upload")] = (t[k], t[k] + act[k] * 8 / up[k], act[k], 0)
            t[k] += act[k] * 8 / up[k]
        s = max(t)                                   # barrier on all activations
        e = s + server_flops / SERVER_FLOPS_PER_S
        events[(it, SERVER_ID, "server_step")] = (s, e, 0, server_flops)
        for k in (0, 1):
            events[(it, k, "gradient_download")] = (e, e + grad[k] * 8 / down[k], grad[k], 0)
            t[k] = e + grad[k] * 8 / down[k]
            events[(it, k, "client_backward")] = (t[k], t[k] + bwd[k] / FLOPS_PER_S[k], 0, bwd[k])
            t[k] += bwd[k] / FLOPS_PER_S[k]
    for k in (0, 1):
        events[(-1, k, "model_upload")] = (t[k], t[k] + model_bytes * 8 / up[k], model_bytes, 0)
    return events


def test_two_client_two_iteration_timeline_equals_hand_computation():
    env, log, protocol = build()
    protocol.run_round(1, [0, 1])
    expected = hand_timeline()
    got = {(r[3], r[4], r[5]): (r[0], r[1], r[6], r[7]) for r in log.rows}
    assert set(got) == set(expected) and len(log.rows) == len(expected) == 2 + 2 * 2 * 4 + 2 + 2
    for key, (t0, t1, payload, flops) in expected.items():
        g0, g1, g_payload, g_flops = got[key]
        assert (g_payload, g_flops) == (payload, flops), key
        assert g0 == pytest.approx(t0, rel=1e-12, abs=1e-15), key
        assert g1 == pytest.approx(t1, rel=1e-12), key
    assert env.now == pytest.approx(max(v[1] for v in expected.values()), rel=1e-12)


def test_round_row_sums_events_and_the_critical_path_fills_the_round():
    env, log, protocol = build()
    protocol.run_round(1, [0, 1])
    row = round_row(1, log.rows, 0.0, env.now)
    assert row["uplink_bytes"] == sum(r[6] for r in log.rows if r[5] in ("activation_upload", "model_upload"))
    assert row["downlink_bytes"] == sum(r[6] for r in log.rows if r[5] in ("model_download", "gradient_download"))
    assert row["server_flops"] == sum(r[7] for r in log.rows if r[4] == SERVER_ID)
    assert sum(row[b] for b in BUCKETS) == pytest.approx(env.now, rel=1e-12)
    assert row["idle_time_s"] == 0.0 and row["server_time_s"] > 0
    # second round starts where the first ended and trains on
    start = env.now
    protocol.run_round(2, [0, 1])
    assert min(r[0] for r in log.rows if r[2] == 2) == start


def test_events_of_one_client_never_overlap():
    env, log, protocol = build()
    protocol.run_round(1, [0, 1])
    for k in (0, 1):
        spans = sorted((r[0], r[1]) for r in log.rows if r[4] == k)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
