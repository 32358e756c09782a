"""Links that follow the clients (channel.moving): at the drop points the drop's links to the
bit; a step of half a metre changes a link's shadowing little and its LOS state rarely; far
from the drop the links are the model's again (shadowing standard normal, LOS at its
probability); a drop without its draws is refused."""

import numpy as np
import pytest

from channel import layout, mobility, moving, network, pathloss, tr38901

SITES = layout.hexagonal_sites(7, 500.0)
OFFSETS = layout.wraparound_offsets(7, 500.0)


def stream(name, site=None):
    return np.random.default_rng([11, sum(map(ord, name)), 99 if site is None else site])


def links(clients: int = 60, kind: str = "random_direction", speed: float = 3 / 3.6):
    points = layout.drop_uniform_in_hexagons(clients, SITES, 500.0, 35.0,
                                             np.random.default_rng(4))
    uma = pathloss.Uma38901(3.5e9, indoor_floors=True)
    d2d = network.link_geometry(points, SITES, OFFSETS).d2d_m
    drop = uma.draw_links(d2d, stream)
    area = mobility.Area(SITES, 500.0, OFFSETS)
    paths = [mobility.Path(points[k], mobility.Walk(
        kind, speed, building_radius_m=25.0 if drop.indoor[k] else None), area,
        np.random.default_rng([5, k])) for k in range(clients)]
    return moving.MovingLinks(uma, SITES, OFFSETS, points, drop, paths,
                              lambda kind, s: stream(f"field {kind}", s)), drop, points


def test_at_the_drop_points_the_links_are_the_drops_to_the_bit():
    links_, drop, points = links()
    again = links_.losses(np.arange(60), points)
    for name in ("pathloss_db", "shadowing_db", "los", "o2i_db", "indoor", "h_ut_m"):
        assert np.array_equal(getattr(again, name), getattr(drop, name)), name
    where, at_zero = links_.at(0.0)
    assert np.array_equal(where, points)
    assert np.array_equal(at_zero.pathloss_db, drop.pathloss_db)


def test_half_a_metre_on_the_links_change_little():
    """Each outdoor client half a metre along its path (0.6 s at 3 km/h): its distance to
    each site changes by at most 0.5 m, the shadowing normal of a link that kept its state
    by little (the field's correlation exp(-0.5 / 37) at least: |dz| under 0.5 for nearly
    all), the LOS state of few links (well under 5 %)."""
    links_, drop, points = links()
    outdoor = np.flatnonzero(~drop.indoor)
    where, moved = links_.at(0.6, outdoor)
    assert np.all(np.hypot(*(where - points[outdoor]).T) <= 0.5 + 1e-9)
    d_before = network.link_geometry(points[outdoor], SITES, OFFSETS).d2d_m
    d_after = network.link_geometry(where, SITES, OFFSETS).d2d_m
    assert np.all(np.abs(d_after - d_before) <= 0.5 + 1e-9)
    kept = moved.los == drop.los[outdoor]
    assert kept.mean() > 0.95
    dz = np.abs(moved.shadowing_normal - drop.shadowing_normal[outdoor])[kept]
    assert np.mean(dz < 0.5) > 0.95
    assert np.all(dz > 0)                     # moved, not frozen at the drop's draws


def test_far_from_the_drop_the_links_are_the_models_again():
    """Vehicles at 30 m/s after 2,000 s (60 km of random direction): the outdoor links'
    shadowing normals are standard normal and the share of LOS links is the mean of their
    LOS probabilities, each within 4 standard errors over the links."""
    links_, drop, _ = links(clients=200, speed=30.0)
    outdoor = np.flatnonzero(~drop.indoor)
    where, far = links_.at(2_000.0, outdoor)
    z = far.shadowing_normal.ravel()
    n = len(z)
    assert n > 200
    assert abs(z.mean()) < 4 / np.sqrt(n) and abs(z.std() - 1) < 4 * np.sqrt(0.5 / n)
    d2d = network.link_geometry(where, SITES, OFFSETS).d2d_m
    probability = tr38901.los_probability(tr38901.UMA, d2d, far.h_ut_m[:, None])
    spread = np.sqrt(np.mean(probability * (1 - probability)) / n)
    assert abs(far.los.mean() - probability.mean()) < 4 * spread
    # and no longer the drop's: uncorrelated with its draws
    start = drop.shadowing_normal[outdoor].ravel()
    assert abs(np.corrcoef(z, start)[0, 1]) < 4 / np.sqrt(n)


def test_a_drop_without_its_draws_is_refused():
    points = np.array([[100.0, 0.0]])
    plain = pathloss.Macro3gpp36814().draw_links(np.full((1, 7), 300.0), stream)
    with pytest.raises(ValueError, match="moving links need a 38.901 drop's own draws"):
        moving.MovingLinks(pathloss.Uma38901(3.5e9), SITES, OFFSETS, points, plain, [],
                           stream)


def test_the_coupling_at_the_drop_points_is_the_drops_with_its_panel_and_beam():
    """uma_n78's antennas (12 degree tilt, 10 rows, 8 columns): the drop's coupling (its own
    serving cells) from the moving links at the drop points, to the bit; 100 m on, each
    client's serving link keeps its beam's 9.03 dB over the column's."""
    links_, drop, points = links()
    cells = network.hexagonal_cells(7, 500.0, 3)
    dropped = network.drop_network(cells, points, SITES, OFFSETS, lambda d2d_m: drop,
                                   12.0, 25.0, 10, 8)
    geometry = network.link_geometry(points, SITES, OFFSETS)
    antenna, coupling, serving = network.couple(
        cells, geometry, links_.losses(np.arange(60), points), 12.0, 25.0, 10, 8,
        dropped.serving)
    assert np.array_equal(coupling, dropped.coupling_db)
    assert np.array_equal(serving, dropped.serving)
    # a kilometre on, where a client's strongest cell is no longer the one it is given, the
    # beam stays on the given cell: 9.03 dB over the column there, the sector mean elsewhere
    where, moved = links_.at(1_200.0)
    geometry = network.link_geometry(where, SITES, OFFSETS)
    beam, with_beam, _ = network.couple(cells, geometry, moved, 12.0, 25.0, 10, 8,
                                        dropped.serving)
    column, alone, _ = network.couple(cells, geometry, moved, 12.0, 25.0, 10, None,
                                      dropped.serving)
    strongest = np.argmax(alone, axis=1)
    changed = np.flatnonzero(strongest != dropped.serving)
    assert len(changed) > 0
    for k in changed.tolist():
        given, best = dropped.serving[k], strongest[k]
        assert beam[k, given] - column[k, given] == pytest.approx(10 * np.log10(8), abs=1e-9)
        assert beam[k, best] - column[k, best] < 10 * np.log10(8) - 1.0
