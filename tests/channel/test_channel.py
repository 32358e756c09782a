import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import channel


def test_unit_conversions():
    assert channel.dbm_to_w(30.0) == pytest.approx(1.0, rel=1e-12)
    assert channel.dbm_to_w(-174.0) == pytest.approx(10 ** (-20.4), rel=1e-12)
    assert channel.w_to_dbm(0.2) == pytest.approx(23.0103, abs=1e-4)
    assert channel.db_to_linear(3.0) == pytest.approx(1.99526, rel=1e-5)
    assert channel.linear_to_db(100.0) == pytest.approx(20.0, rel=1e-12)
    np.testing.assert_allclose(channel.w_to_dbm(channel.dbm_to_w([-30, 0, 23])), [-30, 0, 23])


def test_pathloss_3gpp_36814_macro_hand_values():
    pl = channel.Macro3gpp36814()
    assert pl.pathloss_db(500.0) == pytest.approx(116.78, abs=0.005)
    assert pl.pathloss_db(1000.0) == pytest.approx(128.1, abs=1e-12)
    assert pl.pathloss_db(35.0) == pytest.approx(128.1 + 37.6 * math.log10(0.035), abs=1e-12)
    assert pl.gain_linear(1000.0) == pytest.approx(10 ** (-12.81), rel=1e-12)
    assert channel.PATHLOSS_MODELS["3gpp_36814_macro"] is channel.Macro3gpp36814


def test_noise_and_shannon_rate_against_hand_computation():
    # -174 dBm/Hz over 1 MHz is -114 dBm
    assert channel.noise_power_w(-174.0, 1e6) == pytest.approx(10 ** (-14.4) * 1e-3, rel=1e-12)
    assert channel.w_to_dbm(channel.noise_power_w(-174.0, 1e6)) == pytest.approx(-114.0, abs=1e-9)
    # 0.2 W at 500 m on a 2 MHz sub-band, worked independently with the math module
    gain = 10 ** (-(128.1 + 37.6 * math.log10(0.5)) / 10)
    noise_w = 10 ** ((-174 - 30) / 10) * 2e6
    expected = 2e6 * math.log2(1 + 0.2 * gain / noise_w)
    got = channel.shannon_rate_bps(2e6, 0.2, channel.Macro3gpp36814().gain_linear(500.0), -174.0)
    assert got == pytest.approx(expected, rel=1e-12)
    assert got == pytest.approx(11.5e6, rel=0.01)  # about 17 dB SNR -> 5.75 bit/s/Hz
    assert channel.airtime_s(1_000_000, 8e6) == pytest.approx(1.0, rel=1e-12)


def demand(client_ids):
    n = len(client_ids)
    return channel.LinkDemand(np.asarray(client_ids), np.full(n, 1e-11), np.full(n, 8e6),
                              np.full(n, 0.1))


def test_equal_share_allocator_splits_the_band():
    shares = channel.EqualShareAllocator().allocate_hz(20e6, demand([3, 7, 9, 11]))
    assert shares.tolist() == [5e6] * 4
    assert channel.EqualShareAllocator().allocate_hz(20e6, demand([])).tolist() == []
    assert channel.ALLOCATORS["equal"] is channel.EqualShareAllocator


def test_adaptive_link_rate_and_the_base_stations_power_spread():
    link = channel.AdaptiveShannonLink(client_tx_power_w=0.2, bs_tx_power_w=1.0,
                                       downlink_bandwidth_hz=20e6, noise_psd_dbm_per_hz=-174.0)
    gain = channel.Macro3gpp36814().gain_linear(300.0)
    rng = np.random.default_rng(0)
    up = link.rate_bps(channel.Direction.UPLINK, gain, 2e6, 0.0, rng)
    down = link.rate_bps(channel.Direction.DOWNLINK, gain, 5e6, 0.0, rng)

    def noise_w(bandwidth_hz):
        return 10 ** ((-174 - 30) / 10) * bandwidth_hz

    assert up == pytest.approx(2e6 * math.log2(1 + 0.2 * gain / noise_w(2e6)), rel=1e-12)
    # a quarter of the band gets a quarter of the base station's power
    assert down == pytest.approx(5e6 * math.log2(1 + 0.25 * gain / noise_w(5e6)), rel=1e-12)
    assert link.rate_bps(channel.Direction.UPLINK, gain, 2e6, 17.0, rng) == up   # no fading
    assert channel.LINK_MODELS["adaptive"] is channel.AdaptiveShannonLink


def test_compute_time_and_flops_sampling():
    assert channel.compute_time_s(3e9, 1.5e9) == pytest.approx(2.0, rel=1e-12)
    f = channel.sample_flops_per_s(10_000, 1e9, 1e10, np.random.default_rng(0))
    assert f.min() >= 1e9 and f.max() <= 1e10
    assert f.mean() == pytest.approx(5.5e9, rel=0.02)
    with pytest.raises(ValueError, match="low <= high"):
        channel.sample_flops_per_s(3, 2e9, 1e9, np.random.default_rng(0))


def test_uniform_area_drop():
    rng = np.random.default_rng(1)
    d = channel.drop_clients_uniform_disk(200_000, 500.0, 0.0, rng)
    assert d.mean() == pytest.approx(2 * 500.0 / 3, rel=0.005)          # E[d] = 2R/3 on a disk
    assert np.mean(d <= 250.0) == pytest.approx(0.25, abs=0.005)          # area, not radius
    d = channel.drop_clients_uniform_disk(50_000, 500.0, 35.0, rng)
    assert d.min() >= 35.0 and d.max() <= 500.0
    r0, r = 35.0, 500.0
    assert d.mean() == pytest.approx(2 / 3 * (r**3 - r0**3) / (r**2 - r0**2), rel=0.01)
    with pytest.raises(ValueError, match="min_distance_m < radius_m"):
        channel.drop_clients_uniform_disk(3, 30.0, 35.0, rng)


positive = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(d1=st.floats(1.0, 5000.0), d2=st.floats(1.0, 5000.0), p1=positive, p2=positive,
       bandwidth_hz=st.floats(1e3, 1e8))
def test_rate_grows_with_power_and_shrinks_with_distance(d1, d2, p1, p2, bandwidth_hz):
    pl = channel.Macro3gpp36814()
    near, far = sorted((d1, d2))
    low, high = sorted((p1, p2))
    assert pl.pathloss_db(near) <= pl.pathloss_db(far)

    def rate(p, d):
        return channel.shannon_rate_bps(bandwidth_hz, p, pl.gain_linear(d), -174.0)

    assert rate(low, near) <= rate(high, near)
    assert rate(low, near) >= rate(low, far)
