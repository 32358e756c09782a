"""The SimPy engine against a timeline worked out by hand for 2 clients and 2 iterations."""

import math

import pytest

from channel import Direction
from scala_netsim.books.rounds import BUCKETS, round_row
from scala_netsim.core.events import SERVER_ID, EventKind
from scala_netsim.sim.protocols import PerClientSplitProtocol

from conftest import (
    B_K,
    DIST_M,
    FLOPS_PER_S,
    LOCAL_ITERS,
    N0_DBM_PER_HZ,
    P_BS,
    P_UE,
    SERVER_FLOPS_PER_S,
    W_DL,
    W_UL,
)
from conftest import two_client_scala as build


def rate_bps(bandwidth_hz, power_w, distance_m):
    """Independent re-implementation: b log2(1 + p g / (N0 b)) with 3GPP 36.814 macro loss."""
    gain = 10 ** (-(128.1 + 37.6 * math.log10(distance_m / 1000)) / 10)
    noise_w = 10 ** ((N0_DBM_PER_HZ - 30) / 10) * bandwidth_hz
    return bandwidth_hz * math.log2(1 + power_w * gain / noise_w)


def conv_flops(b, c_in, c_out, k, hw):
    return 2 * b * c_out * hw * hw * c_in * k * k


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
    sim = build()
    sim.run_round(1, [0, 1])
    expected = hand_timeline()
    got = {(e.local_iter, e.client_id, e.kind.value): e for e in sim.log.events}
    assert set(got) == set(expected) and len(sim.log) == len(expected) == 2 + 2 * 2 * 4 + 2 + 2
    for key, (t0, t1, payload, flops) in expected.items():
        event = got[key]
        assert (event.payload_bytes, event.flops, event.round) == (payload, flops, 1), key
        assert event.t_start_s == pytest.approx(t0, rel=1e-12, abs=1e-15), key
        assert event.t_end_s == pytest.approx(t1, rel=1e-12), key
    assert sim.env.now == pytest.approx(max(v[1] for v in expected.values()), rel=1e-12)


def test_the_link_records_each_grant_and_the_rate_of_each_transfer():
    sim = build()
    sim.run_round(1, [0, 1])
    assert sorted((g.client_id, g.direction.value, g.bandwidth_hz) for g in sim.link.grants) == [
        (0, "downlink", W_DL / 2), (0, "uplink", W_UL / 2),
        (1, "downlink", W_DL / 2), (1, "uplink", W_UL / 2)]
    transfers = [e for e in sim.log.events if e.kind.is_transfer]
    assert [t.event_index for t in sim.link.transfers] == [
        i for i, e in enumerate(sim.log.events) if e.kind.is_transfer]
    for event, record in zip(transfers, sim.link.transfers, strict=False):
        power = P_UE if event.kind.is_uplink else P_BS / 2
        assert record.rate_bps == pytest.approx(
            rate_bps(record.bandwidth_hz, power, DIST_M[event.client_id]), rel=1e-12)


def test_the_allocator_is_told_each_clients_gain_payload_and_compute_time():
    sim = build()
    sim.protocol.trainer.begin_round([0, 1])
    demands = sim.protocol.demands([0, 1])
    up = demands[Direction.UPLINK]
    assert up.client_ids.tolist() == [0, 1]
    assert up.payload_bits.tolist() == [8 * (b * 768 * 4 + b * 8) for b in B_K]
    forward = [conv_flops(b, 1, 64, 11, 8) + conv_flops(b, 64, 192, 5, 4) for b in B_K]
    assert up.compute_time_s.tolist() == pytest.approx(
        [f / s for f, s in zip(forward, FLOPS_PER_S, strict=True)])
    gain = [10 ** (-(128.1 + 37.6 * math.log10(d / 1000)) / 10) for d in DIST_M]
    assert up.gain_linear.tolist() == pytest.approx(gain, rel=1e-12)


def test_critical_path_fills_the_round_and_the_next_round_starts_where_it_ended():
    sim = build()
    sim.run_round(1, [0, 1])
    row = round_row(1, sim.log.rows, 0.0, sim.env.now, 2)
    assert sum(row[b] for b in BUCKETS) == pytest.approx(sim.env.now, rel=1e-12)
    assert row["idle_time_s"] == 0.0 and row["server_time_s"] > 0
    # the critical path of SCALA's round: the slower client's chain plus the server steps
    assert row["server_time_s"] == pytest.approx(
        sum(e.duration_s for e in sim.log.events if e.kind is EventKind.SERVER_STEP), rel=1e-12)
    start = sim.env.now
    sim.run_round(2, [0, 1])
    assert min(e.t_start_s for e in sim.log.events if e.round == 2) == start


def test_events_of_one_client_never_overlap():
    sim = build()
    sim.run_round(1, [0, 1])
    for k in (0, 1):
        spans = sorted((e.t_start_s, e.t_end_s) for e in sim.log.events if e.client_id == k)
        assert all(a_end <= b_start
                   for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))


def test_each_client_has_its_own_link_stream_the_same_whatever_the_algorithm():
    a, b = build(), build()
    assert a.link.rng(1).random() == b.link.rng(1).random()
    assert build().link.rng(0).random() != build().link.rng(1).random()


def test_a_protocol_refuses_a_trainer_of_another_pattern():
    with pytest.raises(TypeError, match="PerClientSplitProtocol needs a PerClientSplitTrainer, "
                                        "got SCALA"):
        build(PerClientSplitProtocol)


@pytest.mark.parametrize("varies, draws", [(False, False), (True, True)])
def test_the_link_asks_the_model_once_a_round_unless_the_rate_varies_per_transfer(varies,
                                                                                  draws):
    import numpy as np

    from channel import AdaptiveShannonLink

    asked = []

    class Counting(AdaptiveShannonLink):
        varies_per_transfer = varies

        def rate_bps(self, direction, gain_linear, bandwidth_hz, time_s, rng):
            asked.append((direction, time_s, rng))
            return super().rate_bps(direction, gain_linear, bandwidth_hz, time_s, rng)

    Counting.draws = draws
    reference = build()
    reference.run_round(1, [0, 1])
    sim = build()
    model = sim.link.model
    sim.link.model = Counting(model.client_tx_power_w, model.bs_tx_power_w,
                              model.downlink_bandwidth_hz, model.noise_psd_dbm_per_hz)
    sim.run_round(1, [0, 1])
    transfers = [e for e in sim.log.events if e.kind.is_transfer]
    assert sim.log.rows == reference.log.rows          # the same timeline either way
    assert len(asked) == (len(transfers) if varies else 4)   # else once per (client, direction)
    assert all(isinstance(rng, np.random.Generator) if draws else rng is None
               for _, _, rng in asked)
    if varies:   # asked at each transfer's start
        assert sorted(t for _, t, _ in asked) == sorted(e.t_start_s for e in transfers)
