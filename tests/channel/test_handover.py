"""Event A3 (channel.handover): a client driving from one site toward the next hands over at
the closed-form instant plus the time to trigger; a timer runs only while every measurement
meets the entering condition; values outside TS 38.331's sets are refused."""

import math

import numpy as np
import pytest

from channel import handover


def pathloss_db(d_m: np.ndarray) -> np.ndarray:
    """TR 36.814's macro path loss, 128.1 + 37.6 log10(d / 1 km)."""
    return 128.1 + 37.6 * np.log10(d_m / 1000.0)


def test_a_client_driving_toward_the_next_site_by_hand():
    """Sites at x = 0 and 500 m, the client from x = 100 m toward the second at 30 km/h, its
    RSRPs measured every metre (46 dBm less the path loss). A3 with offset 3 dB and
    hysteresis 1 dB enters where 37.6 log10(x / (500 - x)) > 4, x* = 500 r / (1 + r), r =
    10^(4 / 37.6): at the first update past x*; the handover 256 ms later."""
    speed = 30 / 3.6
    x = 100.0 + np.arange(0, 400)                      # a metre an update
    times = (x - 100.0) / speed
    rsrp = 46.0 - pathloss_db(np.column_stack([x, 500.0 - x]))
    event = handover.A3(offset_db=3.0, hysteresis_db=1.0, time_to_trigger_s=0.256)
    r = 10 ** (4 / 37.6)
    crossing = 500 * r / (1 + r)
    entered = math.floor(crossing) + 1.0               # the first whole metre past x*
    assert crossing == pytest.approx(280.47, abs=0.01)      # r = 1.2776
    when, target = handover.first_handover(times, rsrp, 0, event)
    assert target == 1
    assert when == pytest.approx((entered - 100.0) / speed + 0.256, abs=1e-12)


def test_a_timer_runs_only_while_every_measurement_meets_the_entering_condition():
    """TS 38.331 5.5.4.1: neighbour 1 enters at 0 (5 dB above the serving cell: > 3 dB of
    offset + 1 dB of hysteresis); held at 0.1 s too (4.5 dB), its timer expires at 0.256 s.
    At 0.1 s at 3 dB instead (inside the hysteresis band, but not entering) the timer stops:
    no handover; it starts again at 0.5 s (5 dB once more) and expires at 0.756 s."""
    event = handover.A3(offset_db=3.0, hysteresis_db=1.0, time_to_trigger_s=0.256)
    times = np.array([0.0, 0.1, 1.0])
    held = np.array([[-80.0, -75.0], [-80.0, -75.5], [-80.0, -75.5]])
    assert handover.first_handover(times, held, 0, event) == (0.256, 1)
    band = np.array([[-80.0, -75.0], [-80.0, -77.0], [-80.0, -77.0]])
    assert handover.first_handover(times, band, 0, event) is None
    again = np.array([[-80.0, -75.0], [-80.0, -77.0], [-80.0, -75.0], [-80.0, -75.0]])
    assert handover.first_handover(np.array([0.0, 0.1, 0.5, 2.0]), again, 0,
                                   event) == (0.756, 1)
    # a measurement at the very instant the timer expires comes after the handover
    assert handover.first_handover(np.array([0.0, 0.256]), band[:2], 0, event) == (0.256, 1)


def test_of_two_neighbours_due_at_once_the_stronger_is_the_target_and_timers_restart():
    event = handover.A3(offset_db=0.0, hysteresis_db=0.0, time_to_trigger_s=0.0)
    monitor = handover.A3Monitor(event, serving=0, cells=3)
    monitor.measure(2.0, np.array([-90.0, -85.0, -80.0]))
    assert monitor.due() == (2.0, 2)
    monitor.hand_over(2)
    assert monitor.due() is None and monitor.serving == 2
    monitor.measure(3.0, np.array([-90.0, -85.0, -80.0]))
    assert monitor.due() is None                        # nobody beats cell 2 now


@pytest.mark.parametrize(("keys", "message"), [
    (dict(time_to_trigger_s=0.3), "handover.time_to_trigger_s: must be one of TS 38.331's"),
    (dict(hysteresis_db=-1.0), "handover.hysteresis_db: must be in [0, 15] dB in steps of 0.5"),
    (dict(hysteresis_db=0.3), "handover.hysteresis_db: must be in [0, 15] dB"),
    (dict(offset_db=16.0), "handover.a3_offset_db: must be in [-15, 15] dB"),
    (dict(offset_db=float("nan")), "handover.a3_offset_db: must be in [-15, 15] dB"),
])
def test_values_outside_ts_38_331s_are_refused_naming_the_key(keys, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        handover.A3(**keys)
