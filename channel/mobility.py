"""Clients that move (issue 64, item 1), pure math: each client's path over the network as
a function of its own random stream alone, piecewise linear and drawn lazily, one leg at a
time as far as it is asked for, so that a client nobody asks about costs nothing and asking
in any order (a re-timing, a resume) gives the same path.

Two models of where a client goes next, both with a pause between legs:

- **random waypoint**: its next waypoint uniform over its area (the union of the network's
  hexagonal cells, or its building), a straight leg to it at its speed, then a pause (a leg
  between two waypoints may cut a corner of the hexagons' union, which is not convex: with
  wraparound the client is then seen at its image inside);
- **random direction**: a heading uniform in [0, 360) degrees and a leg's length uniform in
  [0, `leg_m`], then a pause; with wraparound the leg runs on across the network's edge and
  the client is seen at its image inside the network (`Area.wrap`), so the path stays
  straight and its length exact, the next leg leaving from that image; without, a leg that
  would end outside is drawn again.

An indoor client walks inside its building, a disk of `building_radius_m` around where it
was dropped (by random waypoint, whatever the model outdoors: its O2I loss is kept).
Lengths in metres, times in seconds, speeds in m/s (KMH converts); positions (x, y) in the
layout's frame (channel.layout)."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from channel import layout

#: m/s in a km/h
KMH = 1.0 / 3.6


@dataclass(frozen=True)
class Area:
    """Where an outdoor client may go: the union of the sites' hexagonal cells (inradius
    isd / 2), and with `offsets` (channel.layout.wraparound_offsets) the cluster's copies
    that tile the plane around it."""

    sites: np.ndarray
    isd_m: float
    offsets: np.ndarray | None = None

    def contains(self, point: np.ndarray) -> bool:
        """Whether `point` lies in the union of the cells (its nearest site's hexagon)."""
        vectors = np.asarray(point, float)[None, :] - self.sites
        nearest = int(np.argmin(np.hypot(vectors[:, 0], vectors[:, 1])))
        return bool(layout.in_hexagon(vectors[nearest][None, :], self.isd_m / 2)[0])

    def wrap(self, point: np.ndarray) -> np.ndarray:
        """The image of `point` inside the network: the point less the translations of the
        cluster copies it lies in (the copy of its nearest site image, again until that is
        the cluster itself: a point beyond the first ring of copies comes back too). Without
        offsets the point itself."""
        point = np.asarray(point, float)
        if self.offsets is None:
            return point
        images = self.sites[:, None, :] + self.offsets[None, :, :]          # (sites, 7, 2)
        for _ in range(64):      # a copy of the first ring at a time, until it is the cluster
            distance = np.hypot(*(point - images).transpose(2, 0, 1))
            _, image = np.unravel_index(int(np.argmin(distance)), distance.shape)
            if image == 0:
                return point
            point = point - self.offsets[image]
        raise ValueError(f"a point {point.tolist()} too far from the network to wrap")

    def waypoint(self, rng: np.random.Generator) -> np.ndarray:
        """A point uniform over the union of the cells (channel.layout's drop, no minimum
        distance: a path may pass under a mast)."""
        return layout.drop_uniform_in_hexagons(1, self.sites, self.isd_m, 0.0, rng)[0]


@dataclass(frozen=True)
class Walk:
    """How a client moves: `kind` random_waypoint or random_direction (outdoors), its speed
    (m/s), each pause uniform in `pause_s` (s), a random direction leg's length at most
    `leg_m`; `building_radius_m` set: an indoor client, random waypoints in the disk of
    that radius around its start."""

    kind: str
    speed_mps: float
    pause_s: tuple[float, float] = (0.0, 0.0)
    leg_m: float = 200.0
    building_radius_m: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("random_waypoint", "random_direction"):
            raise ValueError(f"mobility.kind: {self.kind!r} is not a model (allowed: "
                             f"random_waypoint, random_direction)")
        if not (math.isfinite(self.speed_mps) and self.speed_mps > 0):
            raise ValueError(f"mobility speed: must be a finite speed > 0 m/s, got "
                             f"{self.speed_mps!r}")
        if not (math.isfinite(self.leg_m) and self.leg_m > 0):
            raise ValueError(f"mobility.leg_m: must be a finite length > 0 m, got "
                             f"{self.leg_m!r}")
        if self.building_radius_m is not None and not (
                math.isfinite(self.building_radius_m) and self.building_radius_m > 0):
            raise ValueError(f"mobility.building_radius_m: must be a finite radius > 0 m, "
                             f"got {self.building_radius_m!r}")
        lo, hi = self.pause_s
        if not 0 <= lo <= hi or not math.isfinite(hi):
            raise ValueError(f"mobility.pause_s: must be [lo, hi] with 0 <= lo <= hi, got "
                             f"{list(self.pause_s)}")


@dataclass
class Path:
    """A client's path from `start` at time 0: legs, each (t_leave, t_arrive, from, to), the
    client standing at `to` from t_arrive until the next leg leaves. Drawn from `rng` as far
    as asked (`position`, `moved_m`, `when_moved`), never further."""

    start: np.ndarray
    walk: Walk
    area: Area
    rng: np.random.Generator
    #: (t_leave, t_arrive, x0, y0, x1, y1, metres moved before the leg) per leg drawn
    legs: list[tuple[float, float, float, float, float, float, float]] = field(
        default_factory=list)
    _leaves: list[float] = field(default_factory=list, repr=False)
    #: the metres walked by the end of each leg
    _ends: list[float] = field(default_factory=list, repr=False)

    def _draw(self) -> None:
        """One more leg: its pause first (none before the first), then its end."""
        if self.legs:
            _, t, _, _, x, y, _ = self.legs[-1]
            before = _walked(self.legs[-1])
            t += float(self.rng.uniform(*self.walk.pause_s))
        else:
            t, (x, y), before = 0.0, self.start, 0.0
        here = np.array([x, y], float)
        if self.walk.building_radius_m is None and self.walk.kind == "random_direction":
            # a leg leaves from the last one's end seen inside the network, so the unwrapped
            # path never drifts away from it (waypoints and buildings are inside already)
            here = self.area.wrap(here)
        if self.walk.building_radius_m is not None:
            radius = self.walk.building_radius_m * math.sqrt(float(self.rng.uniform()))
            angle = float(self.rng.uniform(0.0, 2.0 * math.pi))
            to = self.start + radius * np.array([math.cos(angle), math.sin(angle)])
        elif self.walk.kind == "random_waypoint":
            to = self.area.waypoint(self.rng)
        else:
            while True:        # (without wraparound, a leg that would end outside is drawn again)
                angle = float(self.rng.uniform(0.0, 2.0 * math.pi))
                to = here + float(self.rng.uniform(0.0, self.walk.leg_m)) * np.array(
                    [math.cos(angle), math.sin(angle)])
                if self.area.offsets is not None or self.area.contains(to):
                    break
        length = float(np.hypot(*(to - here)))
        self.legs.append((t, t + length / self.walk.speed_mps, float(here[0]), float(here[1]),
                          float(to[0]), float(to[1]), before))
        self._leaves.append(t)
        self._ends.append(_walked(self.legs[-1]))

    def _leg_at(self, t: float) -> int:
        """The index of the last leg that leaves by `t` (drawing until one leaves after)."""
        if t < 0:
            raise ValueError(f"a path starts at time 0, asked at {t!r}")
        while not self.legs or self.legs[-1][0] <= t:
            self._draw()
        return max(0, bisect.bisect_right(self._leaves, t) - 1)

    def _unwrapped(self, t: float) -> np.ndarray:
        t0, t1, x0, y0, x1, y1, _ = self.legs[self._leg_at(t)]
        share = 1.0 if t >= t1 else (t - t0) / (t1 - t0)
        return np.array([x0 + share * (x1 - x0), y0 + share * (y1 - y0)])

    def position(self, t: float) -> np.ndarray:
        """Where the client is at time `t` (its image inside the network under wraparound)."""
        return self.area.wrap(self._unwrapped(t))

    def moved_m(self, t: float) -> float:
        """The metres walked from time 0 to `t`."""
        t0, t1, x0, y0, x1, y1, before = self.legs[self._leg_at(t)]
        share = 1.0 if t >= t1 else (t - t0) / (t1 - t0)
        return before + share * math.hypot(x1 - x0, y1 - y0)

    def when_moved(self, metres: float) -> float:
        """The first time the client has walked `metres` in all (the instants at which its
        gains are updated every update_m metres): on the first leg whose end has them."""
        while not self._ends or self._ends[-1] < metres:
            self._draw()
        t0, _, _, _, _, _, before = self.legs[bisect.bisect_left(self._ends, metres)]
        return t0 + max(0.0, metres - before) / self.walk.speed_mps


def _walked(leg: tuple[float, float, float, float, float, float, float]) -> float:
    """The metres walked by the end of `leg`."""
    return leg[6] + math.hypot(leg[4] - leg[2], leg[5] - leg[3])


#: the speed of light (m/s)
LIGHT_MPS = 299_792_458.0


def doppler_hz(speed_mps: float, carrier_hz: float) -> float:
    """The largest Doppler shift of a client moving at `speed_mps` on `carrier_hz`, v f / c."""
    return speed_mps * carrier_hz / LIGHT_MPS


def coherence_time_s(speed_mps: float, carrier_hz: float) -> float:
    """The channel's coherence time at that speed, 0.423 / f_D (Rappaport, Wireless
    Communications, 2nd ed., eq. 5.40c: the geometric mean of the 50 %-correlation time
    9 / (16 pi f_D) and 1 / f_D): what fading in blocks of time may take as its block."""
    return 0.423 / doppler_hz(speed_mps, carrier_hz)
