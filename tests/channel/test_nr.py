"""Resource blocks (TS 38.101-1 Table 5.3.2-1) and uplink power control (TS 38.213)."""

import math

import numpy as np
import pytest

from channel import nr


def test_resource_blocks_of_the_table_and_outside_it():
    assert nr.resource_blocks(20e6, 15e3) == 106      # 19.08 of 20 MHz
    assert nr.resource_blocks(20e6, 30e3) == 51
    assert nr.resource_blocks(100e6, 30e3) == 273
    assert nr.resource_blocks(5e6, 15e3) == 25
    # not in the table: whole blocks in 90 % of the band: 0.9 x 1e6 / 180e3 = 5
    assert nr.resource_blocks(1e6, 15e3) == 5
    assert nr.resource_blocks(200e3, 15e3) == 1
    with pytest.raises(ValueError, match="bandwidth: 100000 Hz holds no whole resource block "
                                         "at 15 kHz spacing"):
        nr.resource_blocks(1e5, 15e3)
    with pytest.raises(ValueError, match="subcarrier_spacing_hz: must be 15e3, 30e3 or 60e3"):
        nr.resource_blocks(20e6, 120e3)


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
