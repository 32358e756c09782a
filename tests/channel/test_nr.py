"""Resource blocks (TS 38.101-1 Table 5.3.2-1) and uplink power control (TS 38.213)."""

import math

import numpy as np
import pytest

from channel import nr


def test_resource_blocks_of_the_table_and_below_it():
    assert nr.resource_blocks(20e6, 15e3) == 106      # 19.08 of 20 MHz
    assert nr.resource_blocks(20e6, 30e3) == 51
    assert nr.resource_blocks(100e6, 30e3) == 273
    assert nr.resource_blocks(5e6, 15e3) == 25
    # below the table's narrowest carrier: whole blocks in 90 % of the band: 0.9 x 1e6 /
    # 180e3 = 5; the network study's 2.8 MHz at 30 kHz: 7
    assert nr.resource_blocks(2.8e6, 30e3) == 7
    assert nr.resource_blocks(1e6, 15e3) == 5
    assert nr.resource_blocks(200e3, 15e3) == 1
    with pytest.raises(ValueError, match="bandwidth: 100000 Hz holds no whole resource block "
                                         "at 15 kHz spacing"):
        nr.resource_blocks(1e5, 15e3)
    with pytest.raises(ValueError, match="subcarrier_spacing_hz: must be 15e3, 30e3 or 60e3"):
        nr.resource_blocks(20e6, 120e3)


def test_every_carrier_of_the_table_gives_its_blocks():
    """TS 38.101-1 Table 5.3.2-1 (FR1), N_RB by subcarrier spacing and channel bandwidth."""
    table = {15e3: ([5, 10, 15, 20, 25, 30, 40, 50], [25, 52, 79, 106, 133, 160, 216, 270]),
             30e3: ([5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100],
                    [11, 24, 38, 51, 65, 78, 106, 133, 162, 189, 217, 245, 273]),
             60e3: ([10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100],
                    [11, 18, 24, 31, 38, 51, 65, 79, 93, 107, 121, 135])}
    for spacing_hz, (bands_mhz, blocks) in table.items():
        assert [nr.resource_blocks(b * 1e6, spacing_hz) for b in bands_mhz] == blocks


@pytest.mark.parametrize("bandwidth_hz, spacing_hz, allowed", [
    (100e6, 15e3, "100 MHz at 15 kHz subcarrier spacing is no NR channel bandwidth (TS 38.101-1 "
                  "Table 5.3.2-1, FR1); allowed at 15 kHz: 5, 10, 15, 20, 25, 30, 40 or 50 MHz "
                  "(25 to 270 resource blocks), or less than 5 MHz (a part of a 5 MHz carrier: "
                  "the whole blocks in 90 % of the band); got 1e+08"),
    (200e6, 30e3, "allowed at 30 kHz: 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90 or 100 MHz "
                  "(11 to 273 resource blocks), or less than 5 MHz"),
    (60e6, 15e3, "60 MHz at 15 kHz subcarrier spacing is no NR channel bandwidth"),
    (7e6, 30e3, "7 MHz at 30 kHz subcarrier spacing is no NR channel bandwidth"),
    (5e6 + 1, 30e3, "5.000001 MHz at 30 kHz"),
    (110e6, 60e3, "allowed at 60 kHz: 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90 or 100 MHz "
                  "(11 to 135 resource blocks), or less than 10 MHz"),
])
def test_a_band_no_nr_carrier_has_is_refused_naming_the_allowed(bandwidth_hz, spacing_hz,
                                                                allowed):
    """Issue 61 (3): 100 MHz at 15 kHz gave 500 blocks by 90 % of the band; no carrier has
    more than the table's (at most 273)."""
    with pytest.raises(ValueError) as refused:
        nr.resource_blocks(bandwidth_hz, spacing_hz)
    assert allowed in str(refused.value)


def test_open_loop_power_control_by_hand():
    # P0 = -100 dBm, alpha = 0.8, 10 blocks, PL = 110 dB: -100 + 10 + 88 = -2 dBm
    assert nr.uplink_tx_power_dbm(110.0, 10, -100.0, 0.8, 23.0) == pytest.approx(-2.0)
    # a far client is held at P_max = 23 dBm (the paper's 0.2 W)
    assert nr.uplink_tx_power_dbm(150.0, 10, -80.0, 1.0, 23.0) == pytest.approx(23.0)
    # full compensation equalises the received power P - PL below P_max
    pl = np.array([90.0, 100.0, 110.0])
    received = nr.uplink_tx_power_dbm(pl, 5, -110.0, 1.0, 23.0) - pl
    np.testing.assert_allclose(received, -110.0 + 10 * math.log10(5))
    with pytest.raises(ValueError, match=r"power_control.alpha: must be in \[0, 1\], got 1.2"):
        nr.uplink_tx_power_dbm(100.0, 1, -100.0, 1.2, 23.0)
