"""Clients that move (channel.mobility): paths drawn lazily from a client's own stream,
piecewise linear at the walk's speed, inside the network (or the client's building), the
same whatever order they are asked in; checked against values computed by hand."""

import math

import numpy as np
import pytest

from channel import layout, mobility

SITES = layout.hexagonal_sites(7, 500.0)
OFFSETS = layout.wraparound_offsets(7, 500.0)
PEDESTRIAN = 3.0 * mobility.KMH


def path(kind: str = "random_waypoint", seed: int = 0, offsets=OFFSETS, **walk) -> mobility.Path:
    return mobility.Path(np.array([120.0, -40.0]),
                         mobility.Walk(kind, walk.pop("speed_mps", PEDESTRIAN), **walk),
                         mobility.Area(SITES, 500.0, offsets), np.random.default_rng(seed))


def test_a_leg_by_hand():
    """The first leg leaves the start at 0 toward its first waypoint at 3 km/h: at time t
    the client is t x 0.8333 m along the straight line, and stands at the waypoint after."""
    walk = path(pause_s=(10.0, 20.0))
    first = walk.position(0.0)
    assert first.tolist() == [120.0, -40.0]
    t0, t1, x0, y0, x1, y1, before = walk.legs[0]
    assert (t0, x0, y0, before) == (0.0, 120.0, -40.0, 0.0)
    length = math.hypot(x1 - x0, y1 - y0)
    assert t1 == pytest.approx(length / (3 / 3.6), rel=1e-12)
    half = walk.position(t1 / 2)
    assert half.tolist() == pytest.approx([(x0 + x1) / 2, (y0 + y1) / 2], rel=1e-12)
    assert walk.moved_m(t1 / 2) == pytest.approx(length / 2, rel=1e-12)
    # the pause: standing at the waypoint between 10 and 20 s
    walk.position(t1 + 25.0)                   # (draws the legs that leave by then)
    assert 10.0 <= walk.legs[1][0] - t1 <= 20.0
    assert walk.position(t1 + 5.0).tolist() == pytest.approx([x1, y1], rel=1e-12)
    assert walk.moved_m(t1 + 5.0) == pytest.approx(length, rel=1e-12)


@pytest.mark.parametrize("kind", ["random_waypoint", "random_direction"])
def test_the_speed_holds_on_every_leg_and_the_client_is_seen_in_the_network(kind):
    """(Under wraparound: a leg that cuts a corner of the hexagons is seen at its image.)"""
    walk = path(kind, pause_s=(0.0, 30.0))
    times = np.linspace(0.0, 20_000.0, 4001)
    points = np.array([walk.position(t) for t in times])
    assert all(mobility.Area(SITES, 500.0).contains(p) for p in points)
    moved = np.array([walk.moved_m(t) for t in times])
    assert (np.diff(moved) >= 0).all()
    # never faster than the walk, as fast while on a leg, and the metres its legs add up to
    assert (np.diff(moved) <= PEDESTRIAN * np.diff(times) * (1 + 1e-12)).all()
    legs = [leg for leg in walk.legs if leg[0] <= 20_000.0]
    for t0, t1, x0, y0, x1, y1, _ in legs:
        assert t1 - t0 == pytest.approx(math.hypot(x1 - x0, y1 - y0) / PEDESTRIAN, abs=1e-9)
    assert walk.moved_m(20_000.0) <= PEDESTRIAN * 20_000.0


def test_random_direction_crosses_the_edge_onto_its_image():
    """Legs of up to 2 km at 30 m/s: where a leg leaves the 7 sites the client is seen at
    the image of its straight path inside the network (the point less a sum of the cluster's
    translations), and the next leg leaves from that image, so over 20,000 s the straight
    path never drifts more than a leg from the network; every position seen is inside."""
    walk = path("random_direction", seed=3, leg_m=2_000.0, speed_mps=30.0)
    area = mobility.Area(SITES, 500.0)
    crossed = 0
    for t in np.linspace(0.0, 20_000.0, 4001):
        straight, seen = walk._unwrapped(t), walk.position(t)
        assert area.contains(seen)
        if np.hypot(*(straight - seen)) > 1e-9:
            crossed += 1
            # a lattice vector of the wraparound: integer axial steps of the translations
            steps = np.linalg.solve(OFFSETS[1:3].T, straight - seen)
            assert np.allclose(steps, np.round(steps), atol=1e-6)
        assert np.hypot(*straight) < 2_000.0 + 1_000.0
    assert crossed > 0
    # without wraparound every leg ends inside (a leg that would not is drawn again)
    closed = path("random_direction", seed=3, offsets=None, leg_m=2_000.0, speed_mps=30.0)
    closed.position(5_000.0)
    assert all(area.contains(np.array(leg[4:6])) for leg in closed.legs)


def test_an_indoor_client_walks_inside_its_building():
    walk = path(building_radius_m=25.0, pause_s=(5.0, 5.0))
    for t in np.linspace(0.0, 10_000.0, 501):
        assert np.hypot(*(walk.position(t) - np.array([120.0, -40.0]))) <= 25.0 + 1e-9


def test_a_path_is_the_same_asked_in_any_order_and_drawn_no_further_than_asked():
    """Asking for an hour from now first, or stepping there, gives the same path; a client
    asked only where it starts has drawn its first leg and the next (whose start says the
    first still holds), nothing more."""
    ahead, stepped = path(seed=7), path(seed=7)
    late = ahead.position(3_600.0)
    for t in np.linspace(0.0, 3_600.0, 37):
        stepped.position(t)
    assert late.tolist() == stepped.position(3_600.0).tolist()
    assert ahead.legs == stepped.legs
    idle = path(seed=7)
    idle.position(0.0)
    assert len(idle.legs) == 2
    assert path(seed=8).position(3_600.0).tolist() != late.tolist()


def test_when_moved_inverts_the_metres_walked():
    walk = path(pause_s=(0.0, 60.0))
    for metres in (0.0, 1.0, 37.5, 250.0, 1_000.0, 3_000.0):
        t = walk.when_moved(metres)
        assert walk.moved_m(t) == pytest.approx(metres, abs=1e-9)
        assert walk.moved_m(max(0.0, t - 1e-3)) < metres or metres == 0.0


@pytest.mark.parametrize(("walk", "message"), [
    (dict(kind="levy_flight", speed_mps=1.0), "mobility.kind: 'levy_flight' is not a model"),
    (dict(kind="random_waypoint", speed_mps=-1.0), "must be a finite speed > 0 m/s, got -1.0"),
    (dict(kind="random_waypoint", speed_mps=float("nan")), "finite speed > 0 m/s, got nan"),
    (dict(kind="random_waypoint", speed_mps=1.0, pause_s=(5.0, 1.0)), "0 <= lo <= hi"),
    (dict(kind="random_direction", speed_mps=1.0, leg_m=0.0), "mobility.leg_m: must be a"),
    (dict(kind="random_waypoint", speed_mps=1.0, building_radius_m=0.0),
     "mobility.building_radius_m: must be a finite radius > 0 m, got 0.0"),
])
def test_a_walk_that_cannot_be_is_refused(walk, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        mobility.Walk(**walk)


def test_doppler_and_coherence_time_by_hand():
    """3 km/h at 3.5 GHz: f_D = 0.8333 x 3.5e9 / 2.998e8 = 9.73 Hz, T_c = 0.423 / f_D =
    43.5 ms; 120 km/h: 389 Hz, 1.09 ms."""
    assert mobility.doppler_hz(PEDESTRIAN, 3.5e9) == pytest.approx(9.729, abs=1e-3)
    assert mobility.coherence_time_s(PEDESTRIAN, 3.5e9) == pytest.approx(0.04348, abs=1e-5)
    assert mobility.coherence_time_s(120 / 3.6, 3.5e9) == pytest.approx(1.087e-3, rel=1e-3)
