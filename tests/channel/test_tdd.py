"""The TDD frame (channel.tdd): the shares of the deployed patterns, the direction's time in
any interval against a symbol-by-symbol count, and `finish` as its inverse, in closed form at
any clock (issue 49, item 1: the frame's mathematics)."""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from channel.link import Direction
from channel.tdd import TddFrame, slot_s

UP, DOWN = Direction.UPLINK, Direction.DOWNLINK


def frame(pattern="DDDSU", special=(10, 2, 2), spacing=30e3) -> TddFrame:
    return TddFrame(pattern, special, slot_s(spacing))


def test_the_deployed_patterns_give_the_uplink_its_known_share():
    assert frame().share(UP) == 16 / 70            # 22.9 %
    assert frame().share(DOWN) == 52 / 70
    assert frame("DDDDDDDSUU", (6, 4, 4)).share(UP) == 32 / 140
    assert frame("DDDDDDDSUU").share(UP) == 30 / 140   # 21.4 %
    assert slot_s(30e3) == 0.5e-3 and slot_s(15e3) == 1e-3 and slot_s(60e3) == 0.25e-3
    assert frame().period_s == pytest.approx(2.5e-3, rel=1e-15)


def test_the_windows_lie_in_the_directions_symbols():
    f = frame()
    symbol = f.slot_s / 14
    # DDDSU, S = 10:2:2: downlink slots 0-2 and the S slot's first 10 symbols, one window;
    # the uplink: the S slot's last 2 symbols and slot 4, one window
    assert np.allclose(f.windows(DOWN), [[0.0, 3 * f.slot_s + 10 * symbol]], rtol=0, atol=1e-18)
    assert np.allclose(f.windows(UP), [[3 * f.slot_s + 12 * symbol, 5 * f.slot_s]], rtol=0,
                       atol=1e-18)


def by_symbols(f: TddFrame, direction: Direction, t0: float, t1: float, n: int = 20) -> float:
    """The direction's time in [t0, t1) summed over a fine grid of each symbol: the reference."""
    symbol = f.slot_s / 14
    own = "D" if direction is DOWN else "U"
    down, guard, _ = f.special_slot
    total = 0.0
    first, last = math.floor(t0 / symbol), math.ceil(t1 / symbol)
    for s in range(first, last):
        slot, k = divmod(s, 14)
        letter = f.pattern[slot % len(f.pattern)]
        mine = letter == own or (letter == "S" and (k < down if direction is DOWN
                                                    else k >= down + guard))
        if mine:
            total += max(0.0, min(t1, (s + 1) * symbol) - max(t0, s * symbol))
    return total


@settings(max_examples=60, deadline=None)
@given(pattern=st.text("DSU", min_size=1, max_size=10).filter(lambda p: "S" in p or (
           "D" in p and "U" in p)),
       t0=st.floats(0, 0.05), length=st.floats(0, 0.02))
def test_the_usable_time_equals_a_symbol_count(pattern, t0, length):
    f = frame(pattern, (4, 2, 8))
    for direction in (UP, DOWN):
        got = f.usable_s(direction, t0, t0 + length)
        assert got == pytest.approx(by_symbols(f, direction, t0, t0 + length), abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(t0=st.floats(0, 5000.0), need=st.floats(0, 0.05))
@example(t0=2536.302734375, need=1e-15)   # the remainder rounded above the period's total
def test_finish_is_the_inverse_of_the_usable_time(t0, need):
    f = frame()
    for direction in (UP, DOWN):
        end = f.finish(direction, t0, need)
        assert end >= t0
        scale = 1e-9 * max(need, f.slot_s) + 4 * np.spacing(t0 + 1.0)
        assert f.usable_s(direction, t0, end) == pytest.approx(need, abs=scale)
        if need > 0:   # the earliest such instant: it ends inside one of its windows
            x = (end % f.period_s)
            w = f.windows(direction)
            at_period_edge = min(x, f.period_s - x) < 1e-12
            assert ((w[:, 0] - 1e-12 <= x) & (x <= w[:, 1] + 1e-12)).any() or at_period_edge


def test_a_long_transfer_takes_its_bits_over_the_rate_times_its_share():
    """The referee of NR-NOTES: a long uplink transfer lasts B / (C f_UL) to 1e-9."""
    f = frame()
    bits, rate = 8 * 50e6, 20e6
    duration = f.finish(UP, 0.0, bits / rate)
    assert duration == pytest.approx(bits / (rate * f.share(UP)), rel=1e-9 * 50)
    # a transfer that becomes ready in a downlink slot waits for the uplink symbols
    start = f.finish(UP, 0.0, 0.0)
    assert start == 0.0 and f.finish(UP, 0.0, 1e-9) > f.windows(UP)[0, 0]
    assert f.next_symbol(UP, 0.0) == f.windows(UP)[0, 0] and f.next_symbol(DOWN, 0.0) == 0.0
    assert f.next_symbol(DOWN, f.windows(DOWN)[0, 1]) == pytest.approx(f.period_s, rel=1e-15)


@pytest.mark.parametrize("pattern, special, message", [
    ("DDXU", (10, 2, 2), r"pattern: 'DDXU' has letters \['X'\]"),
    ("", (10, 2, 2), r"pattern: '' has letters none"),
    ("DDDSU", (10, 2, 3), r"special_slot: \[10, 2, 3\] must be three counts"),
    ("DDDD", (10, 2, 2), r"has no uplink symbol"),
    ("DDDSD", (12, 2, 0), r"has no uplink symbol"),
])
def test_a_bad_frame_is_refused_naming_the_field(pattern, special, message):
    with pytest.raises(ValueError, match=message):
        TddFrame(pattern, special, 0.5e-3)
    with pytest.raises(ValueError, match="20 kHz|is not 15 kHz"):
        slot_s(20e3)
