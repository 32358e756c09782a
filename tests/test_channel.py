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
    assert channel.make_pathloss("3gpp_36814_macro").name == "3gpp_36814_macro"
    with pytest.raises(ValueError, match="unknown path-loss model 'free_space'.*3gpp_36814_macro"):
        channel.make_pathloss("free_space")


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


def test_equal_share_allocator_splits_the_band():
    alloc = channel.EqualShareAllocator().allocate_hz(20e6, [3, 7, 9, 11])
    assert alloc == {3: 5e6, 7: 5e6, 9: 5e6, 11: 5e6}
    assert channel.EqualShareAllocator().allocate_hz(20e6, []) == {}


def test_compute_time_and_flops_sampling():
    assert channel.compute_time_s(3e9, 1.5e9) == pytest.approx(2.0, rel=1e-12)
    f = channel.sample_flops_per_s(10_000, 1e9, 1e10, np.random.default_rng(0))
    assert f.min() >= 1e9 and f.max() <= 1e10
    assert f.mean() == pytest.approx(5.5e9, rel=0.02)
    with pytest.raises(ValueError, match="low <= high"):
        channel.sample_flops_per_s(3, 2e9, 1e9, np.random.default_rng(0))


def test_uniform_area_drop():
    rng = np.random.default_rng(1)
    d, x, y = channel.drop_clients_uniform_disk(200_000, 500.0, 0.0, rng)
    assert d.mean() == pytest.approx(2 * 500.0 / 3, rel=0.005)          # E[d] = 2R/3 on a disk
    np.testing.assert_allclose(np.hypot(x, y), d, rtol=1e-12)
    assert np.mean(d <= 250.0) == pytest.approx(0.25, abs=0.005)          # area, not radius
    d, _, _ = channel.drop_clients_uniform_disk(50_000, 500.0, 35.0, rng)
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
    rate = lambda p, d: channel.shannon_rate_bps(bandwidth_hz, p, pl.gain_linear(d), -174.0)
    assert rate(low, near) <= rate(high, near)
    assert rate(low, near) >= rate(low, far)
