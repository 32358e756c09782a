"""Every client's links to every site as the clients move (issue 64, item 2), pure math:
the drop's 38.901 links (channel.pathloss.Tr38901.draw_links) carried along the clients'
paths (channel.mobility), with each link's LOS state and shadowing spatially consistent
(channel.spatial) and started from the drop's own draws.

Per site s, fields shared by every client (a place's shadowing from a site is the place's):
one for the LOS state (the scenario's LOS correlation distance, 7.6.3.3) and one for the
shadowing of each kind of link (LOS, NLOS, O2I: Table 7.5-6's correlation distances, an
indoor client's links the O2I one whatever their state). A client's link to site s reads
them at the site plus the link's vector to the client from the site's nearest image (so the
link is the one the drop's geometry takes, wraparound or not), each made to pass through
the drop's own draw at the drop point (spatial.Through: the shadowing normal; the LOS
uniform through Phi^-1): at the drop point the drop's links, and from there on the fields'.
A link whose LOS state flips reads the other shadowing field from then (its sigma changes
with its state anyway). The client's indoor state, O2I loss, height and indoor distance, and
each link's effective environment height, stay the drop's (an indoor client moves inside its
building). Distances in metres, times in seconds.

Two things a moving link does not keep: shadowing correlated between sites
(`shadowing_site_correlation`: each site's fields are drawn apart, so that correlation fades
as the client moves away from its drop point), and continuity where its nearest image
changes under wraparound (its reading point then jumps by a cluster's translation, so its
LOS state and shadowing are drawn afresh there, far from its site, while its path loss
stays continuous)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.special import ndtr, ndtri

from channel import layout, tr38901
from channel.mobility import Path
from channel.network import LinkLosses, geometry_of
from channel.pathloss import Tr38901
from channel.spatial import Field, Fields


class MovingLinks:
    """The links of clients dropped at `points` with `drop` (draw_links's LinkLosses, which
    keep the draws a link moves on from), who then follow `paths` (one a client), under the
    38.901 `model`; the fields drawn from `stream(kind, site)` (kind: 'los', 'shadowing_los',
    'shadowing_nlos', 'shadowing_o2i'), each its own stream."""

    def __init__(self, model: Tr38901, sites_xy: np.ndarray, offsets: np.ndarray | None,
                 points: np.ndarray, drop: LinkLosses, paths: Sequence[Path],
                 stream: Callable[[str, int], np.random.Generator]) -> None:
        if drop.los_uniform is None or drop.shadowing_normal is None:
            raise ValueError("moving links need a 38.901 drop's own draws (LinkLosses."
                             "los_uniform and shadowing_normal)")
        self.model, self.sites, self.offsets = model, sites_xy, offsets
        self.points, self.drop, self.paths = np.asarray(points, float), drop, paths
        table = model.table
        d_los, d_nlos, d_o2i = table.shadowing_correlation_m
        sites = len(sites_xy)
        self._fields = {
            kind: Fields([Field.draw(d, stream(kind, s)) for s in range(sites)])
            for kind, d in (("los", table.los_correlation_m), ("shadowing_los", d_los),
                            ("shadowing_nlos", d_nlos), ("shadowing_o2i", d_o2i))}
        self._last_vectors: tuple[bytes, np.ndarray] = (b"", np.zeros((0, sites, 2)))
        # where each link was read at the drop: its site plus its vector to the client
        self._origins = self._reading_points(self.points)
        #: each client's fields at its links' origins, by kind (sites,): drawn when first asked
        self._at_origin: dict[int, dict[str, np.ndarray]] = {}

    def _reading_points(self, points: np.ndarray) -> np.ndarray:
        """(clients, sites, 2): each site's position plus its nearest image's vector to the
        client, the point a link reads its site's fields at."""
        return self.sites[None, :, :] + self.vectors(points)

    def vectors(self, points: np.ndarray) -> np.ndarray:
        """(points, sites, 2) each site's nearest image's vector to each point
        (layout.nearest_image; the last points' kept: a move asks for them thrice)."""
        points = np.asarray(points, float)
        key = points.tobytes()
        if self._last_vectors[0] != key:
            self._last_vectors = (key, layout.nearest_image(points, self.sites, self.offsets))
        return self._last_vectors[1]

    def _at_origins(self, k: int, kind: str) -> np.ndarray:
        """Client k's `kind` fields at its links' origins (sites,), drawn when first asked."""
        values = self._at_origin.setdefault(k, {})
        if kind not in values:
            values[kind] = self._fields[kind](self._origins[k])
        return values[kind]

    def losses(self, clients: np.ndarray, points: np.ndarray) -> LinkLosses:
        """The links of `clients` standing at `points` ((n, 2)), as the module's docstring
        says: at the drop points the drop's losses (to the bit where asked for every client
        at once; a row alone may differ in the last bit, NumPy's vector paths differing from
        its scalar ones)."""
        clients = np.asarray(clients, dtype=np.int64)
        drop = self.drop
        assert drop.los_uniform is not None and drop.shadowing_normal is not None
        assert drop.indoor_distance_m is not None and drop.environment_m is not None
        geometry = geometry_of(self.vectors(points))
        reading = self._reading_points(np.asarray(points, float))
        indoor = drop.indoor[clients]
        d_in = drop.indoor_distance_m[clients]
        h_ut = drop.h_ut_m[clients]
        n, sites = geometry.d2d_m.shape
        los, normals = np.empty((n, sites), bool), np.empty((n, sites))
        for i, k in enumerate(clients.tolist()):
            probability = tr38901.los_probability(
                self.model.table, np.maximum(geometry.d2d_m[i] - d_in[i], 0.0), h_ut[i])
            los[i], normals[i] = self._states(k, reading[i], probability, bool(indoor[i]))
        part = LinkLosses(drop.pathloss_db[clients], drop.shadowing_db[clients],
                          drop.los[clients], drop.o2i_db[clients], indoor, h_ut,
                          drop.los_uniform[clients], drop.shadowing_normal[clients],
                          drop.environment_m[clients], d_in)
        return self.model.moved_links(geometry.d2d_m, los, normals,
                                      drop.environment_m[clients], part)

    def _states(self, k: int, at: np.ndarray, probability: np.ndarray,
                indoor: bool) -> tuple[np.ndarray, np.ndarray]:
        """Client k's links read at `at` ((sites, 2)): each one's LOS state (its LOS
        probability there `probability`) and its shadowing's standard normal, every site at
        once (spatial.Through's rho value + G(r) - rho G(origin), the field of its kind);
        the drop's own where a link reads its drop point."""
        drop = self.drop
        assert drop.los_uniform is not None and drop.shadowing_normal is not None
        origin = self._origins[k]
        at_drop = np.all(at == origin, axis=1)
        distance = np.hypot(*(at - origin).T)

        def through(kind: str, value: np.ndarray) -> np.ndarray:
            fields = self._fields[kind]
            rho = np.exp(-distance / fields.d_corr_m)
            return rho * value + (fields(at) - rho * self._at_origins(k, kind))
        state = ndtr(through("los", ndtri(drop.los_uniform[k]))) < probability
        los = np.where(at_drop, drop.los[k], state)
        normal = drop.shadowing_normal[k]
        if indoor:
            moved = through("shadowing_o2i", normal)
        else:
            moved = np.where(los, through("shadowing_los", normal),
                             through("shadowing_nlos", normal))
        return los, np.where(at_drop, normal, moved)

    def at(self, t: float, clients: np.ndarray | None = None) -> tuple[np.ndarray, LinkLosses]:
        """Where `clients` (all by default) stand at time `t`, and their links there."""
        clients = (np.arange(len(self.paths)) if clients is None
                   else np.asarray(clients, dtype=np.int64))
        points = np.array([self.paths[k].position(t) for k in clients.tolist()])
        return points, self.losses(clients, points)

