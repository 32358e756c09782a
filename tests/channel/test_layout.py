"""Hexagonal sites, wraparound and the sector antenna (issue 39, the layout's geometry)."""

import math

import numpy as np
import pytest

from channel import layout

ISD = 500.0


def pairwise(points, other=None):
    other = points if other is None else other
    return np.hypot(*(points[:, None, :] - other[None, :, :]).transpose(2, 0, 1))


def test_seven_and_nineteen_sites_sit_on_a_hexagonal_grid():
    seven = layout.hexagonal_sites(7, ISD)
    assert seven[0].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(np.hypot(*seven[1:].T), ISD)
    nineteen = layout.hexagonal_sites(19, ISD)
    from_centre = np.sort(np.hypot(*nineteen.T))
    np.testing.assert_allclose(from_centre, [0] + [ISD] * 6 + [math.sqrt(3) * ISD] * 6
                               + [2 * ISD] * 6, atol=1e-9)
    d = pairwise(nineteen)
    assert d[d > 0].min() == pytest.approx(ISD)              # nearest neighbours ISD apart
    assert layout.hexagonal_sites(1, ISD).tolist() == [[0.0, 0.0]]
    with pytest.raises(ValueError, match="layout.sites: must be 1, 7 or 19, got 12"):
        layout.hexagonal_sites(12, ISD)
    with pytest.raises(ValueError, match="layout.isd_m: must be > 0, got 0"):
        layout.hexagonal_sites(7, 0)


@pytest.mark.parametrize("sites", [7, 19])
def test_with_wraparound_every_site_sees_the_centres_neighbours(sites):
    positions = layout.hexagonal_sites(sites, ISD)
    offsets = layout.wraparound_offsets(sites, ISD)
    np.testing.assert_allclose(np.hypot(*offsets[1:].T), math.sqrt(sites) * ISD)
    vectors = layout.nearest_image(positions, positions, offsets)
    distances = np.sort(np.hypot(vectors[..., 0], vectors[..., 1]), axis=1)
    centre = np.sort(pairwise(positions[:1], positions)[0])
    for row in distances:      # the edge sites' neighbours, through the images, as the centre's
        np.testing.assert_allclose(row, centre, atol=1e-6)
    # without wraparound an edge site has fewer neighbours at ISD
    plain = np.sort(pairwise(positions), axis=1)
    assert (np.isclose(plain[-1], ISD)).sum() < 6


def test_drops_are_uniform_over_the_cells_and_keep_the_minimum_distance():
    sites = layout.hexagonal_sites(7, ISD)
    points = layout.drop_uniform_in_hexagons(70_000, sites, ISD, 35.0, np.random.default_rng(0))
    d = pairwise(points, sites)
    nearest = d.min(axis=1)
    assert nearest.min() >= 35.0
    assert nearest.max() <= ISD / math.sqrt(3) + 1e-6          # inside a cell's hexagon
    shares = np.bincount(d.argmin(axis=1), minlength=7) / len(points)
    np.testing.assert_allclose(shares, 1 / 7, atol=0.01)
    # uniform over the hexagon: the mean distance to the site is the hexagon's, taken on a
    # fine grid of the same hexagon
    grid = np.stack(np.meshgrid(*[np.linspace(-ISD, ISD, 801)] * 2), -1).reshape(-1, 2)
    inside = layout.in_hexagon(grid, ISD / 2) & (np.hypot(*grid.T) >= 35.0)
    assert nearest.mean() == pytest.approx(np.hypot(*grid[inside].T).mean(), rel=0.01)


def test_the_sector_antenna_element_of_table_7_3_1():
    assert layout.sector_gain_db(30.0, 30.0) == pytest.approx(8.0)      # boresight: 8 dBi
    assert layout.sector_gain_db(30.0 + 32.5, 30.0) == pytest.approx(5.0)   # -3 dB at 65/2
    assert layout.sector_gain_db(210.0, 30.0) == pytest.approx(-22.0)   # 30 dB front-to-back
    assert layout.sector_gain_db(350.0, 30.0) == pytest.approx(8 - 12 * (40 / 65) ** 2)
    # off the horizon, below a 12-degree downtilt (zenith 102): the vertical term adds
    assert layout.sector_gain_db(30.0, 30.0, 90.0, 102.0) == pytest.approx(
        8 - 12 * (12 / 65) ** 2)


# --- Sionna as the referee (the optional extra [sionna]) -----------------------------------
def rotate(points: np.ndarray, degrees: float) -> np.ndarray:
    a = np.radians(degrees)
    return points @ np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])


@pytest.mark.parametrize("sites", [7, 19])
def test_sites_and_wraparound_distances_agree_with_sionna(sites):
    """Sionna's HexGrid (sionna.sys, sionna-no-rt 2.x) draws the same grid turned by 30
    degrees (its first neighbour is north-west, ours east): the same site positions, and for
    the users it drops, the same wraparound distance to every site."""
    sys = pytest.importorskip("sionna.sys", reason="the optional extra [sionna] (Python 3.11+)")
    grid = sys.HexGrid(num_rings=layout.RINGS[sites], isd=500.0, precision="double")
    theirs = grid.cell_loc[:, :2].numpy()
    ours = rotate(layout.hexagonal_sites(sites, 500.0), 30.0)
    # the same positions, matched site by site
    match = np.argmin(np.hypot(*(theirs[:, None, :] - ours[None, :, :]).transpose(2, 0, 1)),
                      axis=1)
    assert sorted(match.tolist()) == list(range(sites))
    assert np.allclose(theirs, ours[match], atol=1e-9)
    ut_loc, _, distance = grid(1, 4, 35.0)
    users = ut_loc[0, ..., :2].reshape(-1, 2).numpy()
    expected = distance[0].reshape(-1, sites).numpy()            # (users, sionna's sites)
    vectors = layout.nearest_image(rotate(users, -30.0), layout.hexagonal_sites(sites, 500.0),
                                   layout.wraparound_offsets(sites, 500.0))
    mine = np.hypot(vectors[..., 0], vectors[..., 1])[:, match]
    assert np.allclose(mine, expected, rtol=1e-9, atol=1e-6)


def test_a_column_of_ten_elements_steered_to_102_degrees_by_hand():
    """TR 38.901 Table 7.8-1's antenna, M = 10 rows half a wavelength apart, electrical tilt
    102 degrees: 10 dB on the beam, its nulls where 10 x 0.5 (cos theta - cos 102) is a
    nonzero integer, the closed form equal to the sum of the rows' phasors, and at half a
    wavelength the power it radiates the element's (its mean over the sphere 1)."""
    tilt = 102.0
    assert layout.column_gain_db(tilt, tilt, 10) == pytest.approx(10.0)
    null = math.degrees(math.acos(math.cos(math.radians(tilt)) + 1 / (10 * 0.5)))
    assert layout.column_gain_db(null, tilt, 10) == pytest.approx(-300.0)   # (floored)
    zenith = np.random.default_rng(0).uniform(0, 180, 200)
    phase = 2 * np.pi * 0.5 * (np.cos(np.radians(zenith)) - math.cos(math.radians(tilt)))
    summed = np.abs(np.exp(1j * np.outer(phase, np.arange(10))).sum(axis=1)) ** 2 / 10
    assert np.allclose(10 ** (layout.column_gain_db(zenith, tilt, 10) / 10), summed,
                       rtol=1e-9, atol=1e-12)
    theta = np.linspace(0.0, np.pi, 200_001)        # mean over the sphere: sin-weighted
    linear = 10 ** (layout.column_gain_db(np.degrees(theta), tilt, 10) / 10)
    assert np.trapezoid(linear * np.sin(theta), theta) / 2 == pytest.approx(1.0, abs=1e-6)


def test_a_panel_sector_points_its_beam_at_the_downtilt_and_keeps_its_element_level():
    """With a column the element is not tilted (the column tilts the beam): a client seen at
    the downtilt on the boresight gets 8 dBi of the element at 12 degrees below its horizon
    (-12 (12/65)^2 dB) plus the column's 10 dB."""
    from channel import network

    cells = network.hexagonal_cells(1, 500.0, 3)
    azimuth = np.array([[30.0]])                     # cell 0's boresight
    zenith = np.array([[102.0]])                     # 12 degrees below the horizon
    gain = network.antenna_gain_db(cells, azimuth, zenith, 12.0, panel_rows=10)[0, 0]
    assert gain == pytest.approx(8.0 - 12 * (12 / 65) ** 2 + 10.0)
    alone = network.antenna_gain_db(cells, azimuth, zenith, 12.0)[0, 0]
    assert alone == pytest.approx(8.0)               # the element tilted itself: on its peak


def test_indoor_floors_and_umas_environment_height_as_table_7_2_1_and_its_note_draw_them():
    """Floors: 1.5 to 22.5 m in steps of 3, E[h_UT] = 3 (E[n_fl] - 1) + 1.5 = 9 m (E[n_fl] =
    (E[N_fl] + 1)/2 = 3.5). h_E: 1 m below 13 m or within 18 m; at 22.5 m and 100 m,
    C = 5/4 exp(-2/3) (0.95)^1.5 and h_E = 1 m with probability 1/(1 + C), else one of 12, 15,
    18 and 21 m, evenly."""
    from channel import tr38901

    rng = np.random.default_rng(0)
    h = tr38901.draw_floors_m(200_000, rng)
    assert set(np.unique(h)) == {1.5 + 3 * k for k in range(8)}
    assert h.mean() == pytest.approx(9.0, abs=0.03)
    assert (tr38901.draw_environment_height_m(np.full(1000, 300.0), np.full(1000, 10.5),
                                              rng) == 1.0).all()
    assert (tr38901.draw_environment_height_m(np.full(1000, 15.0), np.full(1000, 22.5),
                                              rng) == 1.0).all()
    h_e = tr38901.draw_environment_height_m(np.full(200_000, 100.0), np.full(200_000, 22.5),
                                            rng)
    c = 1.25 * math.exp(-100 / 150) * 0.95 ** 1.5
    assert (h_e == 1.0).mean() == pytest.approx(1 / (1 + c), abs=0.005)
    assert set(np.unique(h_e[h_e > 1])) == {12.0, 15.0, 18.0, 21.0}
    # the breakpoint with h_E = 1 m everywhere is the one without it
    d_bp = tr38901.breakpoint_distance_m(3.5e9, 25.0, np.array([1.5, 22.5]))
    assert np.allclose(d_bp, tr38901.breakpoint_distance_m(3.5e9, 25.0, np.array([1.5, 22.5]),
                                                           np.ones(2)))


def test_a_row_of_eight_columns_steered_to_a_client_by_hand():
    """TR 38.901 7.3's panel, N = 8 columns half a wavelength apart: 9.03 dB (8) toward the
    client it is steered to, the closed form equal to the sum of the columns' phasors, and
    the gain averaged over the sector's steering directions equal to the integral of the
    phasors' power over a uniform azimuth in +-60 degrees (scipy's quad, by another route);
    over all u in [-1, 1] that average is 1: the row points the power, it adds none."""
    from scipy.integrate import quad

    assert layout.row_gain(0.3, 0.3, 8) == pytest.approx(8.0)
    u, steer = np.random.default_rng(1).uniform(-1, 1, (2, 200))
    phase = 2 * np.pi * 0.5 * (u - steer)
    summed = np.abs(np.exp(1j * np.outer(phase, np.arange(8))).sum(axis=1)) ** 2 / 8
    assert np.allclose(layout.row_gain(u, steer, 8), summed, rtol=1e-9, atol=1e-12)
    scale = math.sin(math.radians(102.0))

    def phasors(a: float, x: float) -> float:
        psi = 2 * np.pi * 0.5 * (x - scale * math.sin(math.radians(a)))
        return float(np.abs(np.exp(1j * psi * np.arange(8)).sum()) ** 2 / 8)

    for x in (-0.95, -0.4, 0.0, 0.2, 0.87):
        exact = quad(phasors, -60, 60, args=(x,), limit=400, epsabs=1e-12)[0] / 120
        assert layout.mean_row_gain(np.array([x]), 8, 102.0)[0] == pytest.approx(exact,
                                                                                    rel=1e-5)
    every_u = np.linspace(-1, 1, 400_001)
    assert np.trapezoid(layout.mean_row_gain(every_u, 8, 102.0), every_u) / 2 == pytest.approx(
        1.0, abs=1e-4)
