"""A network of hexagonal sites (3GPP TR 38.901 7.2 layouts, ITU-R M.2412 test environments):
site positions for 1, 7 or 19 sites at an inter-site distance, the wraparound images that
make every site see the same neighbours, uniform drops over the network's hexagonal cells,
the sector antenna element of 38.901 Table 7.3-1 and the array factors of its panel (7.3).
Pure NumPy; lengths in metres, angles in degrees (azimuth from the x axis,
counter-clockwise; zenith from the vertical)."""

from __future__ import annotations

import functools

import numpy as np

RINGS = {1: 0, 7: 1, 19: 2}           # sites -> rings of sites around the centre one
SECTOR_AZIMUTHS_DEG = (30.0, 150.0, 270.0)
SQRT3 = np.sqrt(3.0)


def _axial_to_xy(q: np.ndarray, r: np.ndarray, isd_m: float) -> np.ndarray:
    """Axial hexagon coordinates (q, r) -> x, y: neighbouring sites are isd_m apart."""
    return np.column_stack([isd_m * (q + r / 2), isd_m * (SQRT3 / 2) * r])


def _axial_ring(radius: int) -> list[tuple[int, int]]:
    """The axial coordinates at hexagonal distance `radius`, counter-clockwise from (radius, 0)."""
    if radius == 0:
        return [(0, 0)]
    steps = [(-1, 1), (-1, 0), (0, -1), (1, -1), (1, 0), (0, 1)]   # around the ring
    q, r = radius, 0
    ring = []
    for dq, dr in steps:
        for _ in range(radius):
            ring.append((q, r))
            q, r = q + dq, r + dr
    return ring


def hexagonal_sites(sites: int, isd_m: float) -> np.ndarray:
    """(sites, 2) positions: the centre site, then each ring counter-clockwise."""
    if sites not in RINGS:
        raise ValueError(f"layout.sites: must be 1, 7 or 19, got {sites}")
    if isd_m <= 0:
        raise ValueError(f"layout.isd_m: must be > 0, got {isd_m}")
    axial = [c for radius in range(RINGS[sites] + 1) for c in _axial_ring(radius)]
    q, r = (np.array(v, dtype=float) for v in zip(*axial, strict=True))
    return _axial_to_xy(q, r, isd_m)


def wraparound_offsets(sites: int, isd_m: float) -> np.ndarray:
    """(7, 2) translations of the whole cluster: none, and the six neighbouring copies. A
    cluster of R rings (N = 3R(R+1) + 1 sites) repeats at the axial vector (2R + 1, -R) and
    its rotations by 60 degrees, sqrt(N) ISD away."""
    rings = RINGS[sites]
    q, r = 2 * rings + 1, -rings
    shifts = [(0, 0)]
    for _ in range(6):
        shifts.append((q, r))
        q, r = -r, q + r                     # a rotation by 60 degrees in axial coordinates
    sq, sr = (np.array(v, dtype=float) for v in zip(*shifts, strict=True))
    return _axial_to_xy(sq, sr, isd_m)


def nearest_image(points: np.ndarray, sites: np.ndarray,
                  offsets: np.ndarray | None = None) -> np.ndarray:
    """(points, sites, 2) vectors from each site (or its nearest wraparound image, where
    `offsets` are given) to each point."""
    points, sites = np.asarray(points, dtype=float), np.asarray(sites, dtype=float)
    if offsets is None:
        return points[:, None, :] - sites[None, :, :]
    # (points, sites, images, 2)
    vectors = points[:, None, None, :] - (sites[None, :, None, :] + offsets[None, None, :, :])
    nearest = np.argmin(np.hypot(vectors[..., 0], vectors[..., 1]), axis=2)
    return np.take_along_axis(vectors, nearest[:, :, None, None], axis=2)[:, :, 0, :]


def drop_uniform_in_hexagons(n: int, sites: np.ndarray, isd_m: float, min_distance_m: float,
                             rng: np.random.Generator) -> np.ndarray:
    """(n, 2) points uniform over the union of the sites' hexagonal cells (each cell the
    points nearer its site than any other: a hexagon of inradius isd/2), none closer than
    min_distance_m to a site. Drawn by rejection in each point's uniformly chosen cell, which
    takes at least 9 % of the draws while the circle of min_distance_m fits in the hexagon
    (min_distance_m < isd_m / 2); refused otherwise (it might never end)."""
    if not min_distance_m < isd_m / 2:
        raise ValueError(f"layout.isd_m: must be > 2 x min_distance_m = {2 * min_distance_m:g} "
                         f"m, got {isd_m:g}")
    out = np.empty((n, 2))
    circumradius = isd_m / SQRT3
    filled = 0
    while filled < n:
        k = n - filled
        site = rng.integers(0, len(sites), k)
        local = rng.uniform(-circumradius, circumradius, (k, 2))
        inside = in_hexagon(local, isd_m / 2) & (np.hypot(*local.T) >= min_distance_m)
        accepted = sites[site[inside]] + local[inside]
        out[filled:filled + len(accepted)] = accepted
        filled += len(accepted)
    return out


def in_hexagon(local: np.ndarray, inradius: float) -> np.ndarray:
    """Whether points (relative to the centre) lie in the hexagon whose flat sides face its
    neighbours: |projection| <= inradius on the three directions to the neighbours."""
    inside = np.ones(len(local), dtype=bool)
    for angle in (0.0, 60.0, 120.0):
        direction = np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle))])
        inside &= np.abs(local @ direction) <= inradius + 1e-9
    return inside


def sector_gain_db(azimuth_deg: np.ndarray, boresight_deg: float,
                   zenith_deg: np.ndarray | float = 90.0, tilt_deg: float = 90.0) -> np.ndarray:
    """The 38.901 antenna element (Table 7.3-1): A_H = -min(12 (phi/65)^2, 30), A_V =
    -min(12 ((theta - theta_tilt)/65)^2, 30), A = 8 dBi - min(-(A_H + A_V), 30), phi the
    azimuth off the boresight wrapped to [-180, 180), theta the zenith angle (90 degrees:
    the horizon, the default tilt being none)."""
    phi = (np.asarray(azimuth_deg, dtype=float) - boresight_deg + 180.0) % 360.0 - 180.0
    horizontal = -np.minimum(12 * (phi / 65.0) ** 2, 30.0)
    vertical = -np.minimum(12 * ((np.asarray(zenith_deg) - tilt_deg) / 65.0) ** 2, 30.0)
    return 8.0 - np.minimum(-(horizontal + vertical), 30.0)


#: the array factor's floor (power): a column's exact nulls kept finite for the decibels
COLUMN_FLOOR = 1e-30


def array_factor(psi: np.ndarray, elements: int) -> np.ndarray:
    """The power of a uniform line of `elements` elements whose phases step by `psi` from one to
    the next, |sum_m exp(j psi m)|^2 / M = sin^2(M psi / 2) / (M sin^2(psi / 2)): M where psi is
    a multiple of 2 pi (the beam), 0 at its nulls."""
    half = np.sin(psi / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(half) < 1e-12, float(elements),
                        np.sin(elements * psi / 2.0) ** 2 / (elements * half ** 2))


def column_gain_db(zenith_deg: np.ndarray | float, tilt_deg: float, rows: int,
                   spacing_wavelengths: float = 0.5) -> np.ndarray:
    """The gain (dB) of a vertical column of `rows` elements `spacing_wavelengths` apart,
    phased to steer its beam to the zenith angle `tilt_deg` (TR 38.901 7.3's panel, M rows
    and N = 1 column; Table 7.8-1's calibration antenna: M = 10, d_V = 0.5 wavelengths,
    electrical tilt 102 degrees), toward zenith angles `zenith_deg`: the array factor at
    psi = 2 pi d (cos theta - cos theta_tilt): M (10 log10 M dB) on the beam, 0 where
    M d (cos theta - cos theta_tilt) is a nonzero integer (floored at COLUMN_FLOOR). At half a
    wavelength apart it averages 1 over the sphere (the power radiated is the element's,
    pointed)."""
    psi = 2.0 * np.pi * spacing_wavelengths * (np.cos(np.radians(np.asarray(zenith_deg, float)))
                                               - np.cos(np.radians(tilt_deg)))
    return 10.0 * np.log10(np.maximum(array_factor(psi, rows), COLUMN_FLOOR))


def row_gain(u: np.ndarray | float, steer_u: np.ndarray | float, columns: int,
             spacing_wavelengths: float = 0.5) -> np.ndarray:
    """The power gain of a horizontal row of `columns` elements `spacing_wavelengths` apart
    (TR 38.901 7.3's panel, N columns), its beam steered to the direction whose u = sin(theta)
    sin(phi) is `steer_u` (phi the azimuth off the boresight), toward directions `u`: the array
    factor at psi = 2 pi d (u - steer_u), N on the beam."""
    psi = 2.0 * np.pi * spacing_wavelengths * (np.asarray(u, float) - np.asarray(steer_u, float))
    return array_factor(psi, columns)


#: the sector's half-width (degrees off the boresight) over which a cell steers its beams
SECTOR_HALF_WIDTH_DEG = 60.0
#: the grid of u on which mean_row_gain tabulates, and the steering azimuths it averages over
_U_POINTS, _STEER_POINTS = 4001, 1920


@functools.lru_cache(maxsize=16)
def _mean_row_table(columns: int, tilt_deg: float,
                    spacing_wavelengths: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(-1.0, 1.0, _U_POINTS)
    step = 2.0 * SECTOR_HALF_WIDTH_DEG / _STEER_POINTS
    azimuth = -SECTOR_HALF_WIDTH_DEG + step * (np.arange(_STEER_POINTS) + 0.5)
    steer = np.sin(np.radians(tilt_deg)) * np.sin(np.radians(azimuth))
    table = np.empty(_U_POINTS)
    for start in range(0, _U_POINTS, 500):          # (a few MB at a time)
        part = grid[start:start + 500, None]
        table[start:start + 500] = row_gain(part, steer[None, :], columns,
                                            spacing_wavelengths).mean(axis=1)
    return grid, table


def mean_row_gain(u: np.ndarray, columns: int, tilt_deg: float,
                  spacing_wavelengths: float = 0.5) -> np.ndarray:
    """The row's power gain toward directions `u` averaged over where the cell points it: at
    the zenith angle `tilt_deg` and an azimuth uniform over the sector (+-60 degrees off the
    boresight), what a link to a cell that serves other clients sees over time. The mean over
    1,920 steering azimuths (the midpoints of sixteenths of a degree) tabulated on 4,001
    values of u in [-1, 1] and interpolated linearly (within 1e-5 of the exact mean)."""
    grid, table = _mean_row_table(columns, float(tilt_deg), float(spacing_wavelengths))
    return np.interp(np.asarray(u, float), grid, table)
