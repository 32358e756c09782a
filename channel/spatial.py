"""Spatially consistent random fields (issue 64, item 2), pure math: a Gaussian field over the
plane whose correlation between two points d metres apart is exp(-d / d_corr), TR 38.901's
model for the large-scale parameters of a moving client (7.5 Table 7.5-6 and 7.6.3.1: the
shadow fading's correlation distance), and the LOS state drawn from it (7.6.3.3).

A field is a sum of M cosines, G(r) = sqrt(2 / M) sum_m cos(k_m . r + phi_m), its wave
vectors k_m drawn from the 2D spectrum of exp(-|r| / d) (S(k) proportional to
(1 + (k d)^2)^(-3/2): |k| = sqrt(1 / (1 - u)^2 - 1) / d for u uniform in [0, 1), the
direction uniform) and its phases phi_m uniform: E[G(r) G(r + s)] = E[cos(k . s)] =
exp(-|s| / d), exactly over the draw of the field, and G is Gaussian as M grows (Rice's sum of
sinusoids). So a field is a function of the position alone: a client's shadowing wherever it
stands, whenever asked, the same (a path that comes back finds it again), with nothing on a
grid and nothing stored per client. Lengths in metres."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

#: cosines a field sums (its values' distribution within a few per cent of the normal's)
COMPONENTS = 256


@dataclass(frozen=True)
class Field:
    """A unit-variance Gaussian field of correlation distance `d_corr_m` (one realization:
    its wave vectors (M, 2) in rad/m and phases (M,))."""

    d_corr_m: float
    waves: np.ndarray
    phases: np.ndarray

    @classmethod
    def draw(cls, d_corr_m: float, rng: np.random.Generator,
             components: int = COMPONENTS) -> Field:
        """A realization from `rng` (its own stream: the same stream, the same field)."""
        if not d_corr_m > 0:
            raise ValueError(f"correlation distance: must be > 0 m, got {d_corr_m!r}")
        u = rng.uniform(0.0, 1.0, components)
        radius = np.sqrt(1.0 / (1.0 - u) ** 2 - 1.0) / d_corr_m
        angle = rng.uniform(0.0, 2.0 * np.pi, components)
        waves = radius[:, None] * np.column_stack([np.cos(angle), np.sin(angle)])
        return cls(float(d_corr_m), waves, rng.uniform(0.0, 2.0 * np.pi, components))

    def __call__(self, points: np.ndarray) -> np.ndarray:
        """The field at (n, 2) points (or one (2,) point: a 0-d array)."""
        points = np.asarray(points, float)
        # element by element (not a matrix product, whose rounding depends on how many points
        # are asked at once): a point's value is the same number however it is asked
        phase = (points[..., 0:1] * self.waves[:, 0] + points[..., 1:2] * self.waves[:, 1]
                 + self.phases)
        return np.sqrt(2.0 / len(self.phases)) * np.cos(phase).sum(axis=-1)


class Fields:
    """Several fields of one correlation distance (one a site), each read at its own point
    at once: `fields(points)` with points (..., len(fields), 2) is field j at points[..., j,
    :] for every j, the same numbers as each field asked alone (element by element, each
    field's sum over its own cosines)."""

    def __init__(self, fields: list[Field]) -> None:
        self.d_corr_m = fields[0].d_corr_m
        if any(f.d_corr_m != self.d_corr_m for f in fields):
            raise ValueError("Fields: one correlation distance for all")
        self.waves = np.stack([f.waves for f in fields])          # (fields, M, 2)
        self.phases = np.stack([f.phases for f in fields])        # (fields, M)
        self._scale = np.sqrt(2.0 / self.phases.shape[1])

    def __len__(self) -> int:
        return len(self.phases)

    def __getitem__(self, j: int) -> Field:
        return Field(self.d_corr_m, self.waves[j], self.phases[j])

    def __call__(self, points: np.ndarray) -> np.ndarray:
        points = np.asarray(points, float)
        phase = (points[..., 0:1] * self.waves[..., 0] + points[..., 1:2] * self.waves[..., 1]
                 + self.phases)
        return self._scale * np.cos(phase).sum(axis=-1)


@dataclass(frozen=True)
class Through:
    """A field made to pass through `value` at `origin`: G'(r) = rho(r) value + G(r) -
    rho(r) G(origin), rho(r) = exp(-|r - origin| / d_corr) (simple kriging on one point). For
    G unit-variance with correlation rho and `value` standard normal and independent of G,
    G' has G's correlation exactly (Var G'(r) = rho^2 + 1 - rho^2; Cov(G'(r), G'(s)) =
    rho_r rho_s + C(r, s) - 2 rho_r rho_s + rho_r rho_s = C(r, s)). So a client that starts
    to move keeps the shadowing its drop drew where it stood, and the field takes it on from
    there: a run with mobility and one without share their drop."""

    field: Field
    origin: np.ndarray
    value: float

    def __call__(self, points: np.ndarray) -> np.ndarray:
        points = np.asarray(points, float)
        offset = points - self.origin
        rho = np.exp(-np.hypot(offset[..., 0], offset[..., 1]) / self.field.d_corr_m)
        return rho * self.value + (self.field(points) - rho * self.field(self.origin))


def shadowing_db(field: Field | Through, sigma_db: float, points: np.ndarray) -> np.ndarray:
    """Shadow fading (dB) of standard deviation `sigma_db` at `points`: sigma times the
    field (one field a link, whose correlation distance is its scenario's and LOS state's,
    Table 7.5-6)."""
    return sigma_db * field(points)


def los_state(field: Field | Through, probability: np.ndarray,
              points: np.ndarray) -> np.ndarray:
    """The LOS state at `points` where the LOS probability is `probability` (38.901 Table
    7.4.2-1 at each point's distance): LOS where Phi(G) < probability, Phi the normal CDF
    and G a field of the LOS state's correlation distance (7.6.3.3: a spatially consistent
    uniform variable compared with the probability), so a point is LOS with its probability
    (as far as the field's values are normal: a sum of cosines, nearly) and two points near
    each other mostly share their state."""
    return ndtr(field(points)) < np.asarray(probability, float)
