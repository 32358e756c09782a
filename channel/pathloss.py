"""Path-loss models. Each maps a distance in metres to a loss in dB.

A scenario names its model (`network.pathloss`) from `PATHLOSS_MODELS`: the built-in ones and
those of installed packages (entry-point group `scala_netsim.pathloss`, each entry naming a
`PathLossModel` subclass), loaded when the registry is first read. A model is built for a
scenario by `from_network(network)`, which gives it the scenario's radio settings (its
carrier frequency, `network.carrier_frequency_hz`)."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from channel import tr38901
from channel.network import LinkLosses
from channel.plugins import load_entry_points

ENTRY_POINT_GROUP = "scala_netsim.pathloss"


class PathLossModel(ABC):
    """Distance (m) -> path loss (dB); larger means weaker signal."""

    name: ClassVar[str]
    #: the carrier frequencies (Hz, low and high) the model is defined for; None: any
    carrier_range_hz: ClassVar[tuple[float, float] | None] = None

    @classmethod
    def from_network(cls, network: Any) -> PathLossModel:
        """The model for a scenario's `network` section. The default takes no setting; a
        model that needs one (the carrier frequency) overrides this."""
        return cls()

    @abstractmethod
    def pathloss_db(self, distance_m: np.ndarray | float) -> np.ndarray:
        """Path loss in dB at `distance_m` (scalar or array)."""

    def gain_linear(self, distance_m: np.ndarray | float) -> np.ndarray:
        """Channel power gain g = 10^(-PL/10)."""
        return np.power(10.0, -np.asarray(self.pathloss_db(distance_m)) / 10.0)

    def draw_links(self, d2d_m: np.ndarray, stream: Callable[..., np.random.Generator],
                   shadowing_std_db: float = 0.0, site_correlation: float = 0.0
                   ) -> LinkLosses:
        """The losses of every client's link to every site of a network, (clients, sites)
        distances: the model's path loss and, where `shadowing_std_db` > 0, log-normal
        shadowing drawn per link, site s's from `stream("shadowing", s)`: links to different
        sites fade independently, or correlated by `site_correlation` (`site_normals`). No
        LOS state, no O2I loss."""
        clients = d2d_m.shape[0]
        shadowing = np.zeros(d2d_m.shape)
        if shadowing_std_db > 0 and site_correlation > 0:
            shadowing = shadowing_std_db * site_normals(stream, clients, d2d_m.shape[1],
                                                        site_correlation)
        elif shadowing_std_db > 0:
            for s in range(d2d_m.shape[1]):
                shadowing[:, s] = stream("shadowing", s).normal(0.0, shadowing_std_db, clients)
        return LinkLosses(np.asarray(self.pathloss_db(d2d_m), dtype=float), shadowing,
                          np.zeros(d2d_m.shape, dtype=bool), np.zeros(clients),
                          np.zeros(clients, dtype=bool), np.full(clients, np.nan))


def site_normals(stream: Callable[..., np.random.Generator], clients: int, sites: int,
                 correlation: float) -> np.ndarray:
    """(clients, sites) standard normal shadowing draws whose links of one client to two
    sites correlate by `correlation` rho: sqrt(rho) Z_k + sqrt(1 - rho) Z_ks, Z_k the
    client's own draw (`stream("shadowing_common")`) shared by its links, Z_ks site s's
    (`stream("shadowing", s)`). 3GPP TR 36.814 (Table A.2.1.1.2-3) takes 0.5 between sites;
    the sectors of a site share its link, hence its draw."""
    common = stream("shadowing_common").normal(0.0, 1.0, clients)
    own = np.column_stack([stream("shadowing", s).normal(0.0, 1.0, clients)
                           for s in range(sites)])
    return np.sqrt(correlation) * common[:, None] + np.sqrt(1.0 - correlation) * own


class Macro3gpp36814(PathLossModel):
    """3GPP TR 36.814 macro-cell path loss, Table A.2.1.1.2-3 (2 GHz carrier):
    PL(d) = 128.1 + 37.6 log10(d / 1 km) dB.
    """

    name = "3gpp_36814_macro"
    carrier_range_hz = (2e9, 2e9)

    def pathloss_db(self, distance_m: np.ndarray | float) -> np.ndarray:
        distance_km = np.asarray(distance_m, dtype=float) / 1000.0
        return 128.1 + 37.6 * np.log10(distance_km)


@dataclass
class ClientPropagation:
    """What a per-client model drew for each client: the basic path loss (before O2I and
    shadowing), the shadowing, the O2I loss, the LOS and indoor states and the geometry."""

    pathloss_db: np.ndarray
    shadowing_db: np.ndarray
    o2i_db: np.ndarray
    los: np.ndarray
    indoor: np.ndarray
    d3d_m: np.ndarray
    h_ut_m: np.ndarray


class Tr38901(PathLossModel):
    """3GPP TR 38.901 path loss of one scenario (channel.tr38901) for the clients of a cell:
    each client is indoors with probability `indoor_share` (O2I loss of the `o2i` model, at
    the least of two U(0, m) indoor distances, m = 25 m, RMa 10 m), LOS or not by the LOS
    probability at its outdoor distance, with the table's shadow fading for its state.
    `pathloss_db(d)` (a distance alone: the cell-edge check) is the outdoor NLOS loss, the
    worse state."""

    table: ClassVar[tr38901.Scenario38901]
    carrier_range_hz = tr38901.FREQUENCY_RANGE_HZ
    per_client = True

    def __init__(self, carrier_hz: float, bs_height_m: float | None = None,
                 ut_height_m: float = 1.5, indoor_share: float = 0.8,
                 o2i: str = "low_loss", indoor_floors: bool = False) -> None:
        self.carrier_hz, self.ut_height_m = carrier_hz, ut_height_m
        self.bs_height_m = self.table.bs_height_m if bs_height_m is None else bs_height_m
        self.indoor_share, self.o2i = indoor_share, o2i
        #: indoor clients on a drawn floor (tr38901.draw_floors_m; UMa then draws each link's
        #: effective environment height), else every client at ut_height_m
        self.indoor_floors = indoor_floors

    @classmethod
    def from_network(cls, network: Any) -> PathLossModel:
        return cls(network.carrier_frequency_hz, network.bs_height_m, network.ut_height_m,
                   network.indoor_share, network.o2i, network.indoor_floors)

    def _heights(self, indoor: np.ndarray,
                 stream: Callable[..., np.random.Generator]) -> np.ndarray:
        """Each client's height: ut_height_m, or indoors a floor's (its own stream)."""
        h_ut = np.full(len(indoor), self.ut_height_m)
        if self.indoor_floors:
            h_ut = np.where(indoor, tr38901.draw_floors_m(len(indoor), stream("floors")), h_ut)
        return h_ut

    def _environment(self, d2d_m: np.ndarray, h_ut: np.ndarray,
                     rng: Callable[[], np.random.Generator]) -> np.ndarray | float:
        """UMa's effective environment heights on these links where clients have floors
        (drawn from `rng()`), else h_E = 1 m."""
        if not self.indoor_floors or self.table.name != "uma":
            return tr38901.EFFECTIVE_ENVIRONMENT_HEIGHT_M
        return tr38901.draw_environment_height_m(d2d_m, h_ut, rng())

    def pathloss_db(self, distance_m: np.ndarray | float) -> np.ndarray:
        return tr38901.pathloss_nlos_db(self.table, distance_m, self.carrier_hz,
                                        self.bs_height_m, self.ut_height_m)

    def draw_clients(self, d2d_m: np.ndarray,
                     stream: Callable[[str], np.random.Generator]) -> ClientPropagation:
        """Each client's draws, each kind from its own stream (`stream(name)`), so that one
        setting's change leaves the other draws as they were."""
        n = len(d2d_m)
        indoor = stream("indoor").random(n) < self.indoor_share
        d_in = np.where(indoor, tr38901.draw_indoor_distance_m(
            n, stream("indoor_distance"), self.table.indoor_distance_max_m), 0.0)
        h_ut = self._heights(indoor, stream)
        los = tr38901.draw_los(self.table, np.maximum(d2d_m - d_in, 0.0), h_ut, stream("los"))
        h_e = self._environment(d2d_m, h_ut, lambda: stream("environment"))
        args = (self.table, d2d_m, self.carrier_hz, self.bs_height_m, h_ut, h_e)
        basic = np.where(los, tr38901.pathloss_los_db(*args), tr38901.pathloss_nlos_db(*args))
        shadowing = stream("shadowing").normal(0.0, 1.0, n) * tr38901.shadowing_std_db(
            self.table, los, d2d_m, self.carrier_hz, self.bs_height_m, h_ut)
        wall = tr38901.o2i_building_loss_db(self.o2i, self.carrier_hz)
        o2i = np.where(indoor, wall + 0.5 * d_in + stream("o2i").normal(
            0.0, tr38901.O2I_STD_DB[self.o2i], n), 0.0)
        return ClientPropagation(basic, shadowing, o2i, los, indoor,
                                 tr38901.distance_3d_m(d2d_m, self.bs_height_m, h_ut), h_ut)

    def draw_links(self, d2d_m: np.ndarray, stream: Callable[..., np.random.Generator],
                   shadowing_std_db: float = 0.0, site_correlation: float = 0.0
                   ) -> LinkLosses:
        """A network's links (clients x sites distances): each client indoors or not, with
        its indoor distance and O2I loss, once (the same building whichever site it hears);
        each link its own LOS state (at the link's outdoor distance) and shadowing, site s's
        from `stream(name, s)`, independent across sites or correlated by `site_correlation`
        (`site_normals`; the table's sigma of each link's state scales its draw)."""
        clients, sites = d2d_m.shape
        indoor = np.asarray(stream("indoor").random(clients) < self.indoor_share, dtype=bool)
        d_in = np.where(indoor, tr38901.draw_indoor_distance_m(
            clients, stream("indoor_distance"), self.table.indoor_distance_max_m), 0.0)
        h_ut = self._heights(indoor, stream)
        wall = tr38901.o2i_building_loss_db(self.o2i, self.carrier_hz)
        o2i = np.where(indoor, wall + 0.5 * d_in + stream("o2i").normal(
            0.0, tr38901.O2I_STD_DB[self.o2i], clients), 0.0)
        basic, shadowing = np.empty(d2d_m.shape), np.empty(d2d_m.shape)
        los = np.empty(d2d_m.shape, dtype=bool)
        uniform, drawn, environment = (np.empty(d2d_m.shape) for _ in range(3))
        normals = (site_normals(stream, clients, sites, site_correlation)
                   if site_correlation > 0 else None)
        for s in range(sites):
            d = d2d_m[:, s]
            los[:, s], uniform[:, s] = tr38901.draw_los_uniform(
                self.table, np.maximum(d - d_in, 0.0), h_ut, stream("los", s))
            h_e = self._environment(d, h_ut, functools.partial(stream, "environment", s))
            environment[:, s] = h_e
            args = (self.table, d, self.carrier_hz, self.bs_height_m, h_ut, h_e)
            basic[:, s] = np.where(los[:, s], tr38901.pathloss_los_db(*args),
                                   tr38901.pathloss_nlos_db(*args))
            z = (stream("shadowing", s).normal(0.0, 1.0, clients) if normals is None
                 else normals[:, s])
            drawn[:, s] = z
            shadowing[:, s] = z * tr38901.shadowing_std_db(self.table, los[:, s], d,
                                                           self.carrier_hz, self.bs_height_m,
                                                           h_ut)
        return LinkLosses(basic, shadowing, los, o2i, indoor, h_ut, uniform, drawn,
                          environment, d_in)


    def moved_links(self, d2d_m: np.ndarray, los: np.ndarray, normals: np.ndarray,
                    environment_m: np.ndarray | float, drop: LinkLosses) -> LinkLosses:
        """The links of clients that moved (issue 64): each link's basic path loss at its
        new 2D distance `d2d_m` (clients x sites) in its LOS state `los`, its shadowing the
        standard normal `normals` (a spatially consistent field's values: channel.spatial)
        times its state's sigma; each client's indoor state, O2I loss and height kept from
        its `drop` (an indoor client moves inside its building), each link's effective
        environment height `environment_m` too. At the drop's own distances, states, normals
        and heights these are draw_links's losses to the bit (the same operations, element by
        element)."""
        h_ut = drop.h_ut_m
        # every site at once (element by element: the numbers of a site at a time)
        args = (self.table, d2d_m, self.carrier_hz, self.bs_height_m, h_ut[:, None],
                np.asarray(environment_m, float))
        basic = np.where(los, tr38901.pathloss_los_db(*args), tr38901.pathloss_nlos_db(*args))
        shadowing = normals * tr38901.shadowing_std_db(
            self.table, los, d2d_m, self.carrier_hz, self.bs_height_m, h_ut[:, None])
        return LinkLosses(basic, shadowing, np.asarray(los, dtype=bool), drop.o2i_db,
                          drop.indoor, h_ut, None, np.asarray(normals, float),
                          np.broadcast_to(environment_m, d2d_m.shape).astype(float),
                          drop.indoor_distance_m)


class Uma38901(Tr38901):
    """3GPP TR 38.901 urban macro (h_BS 25 m by default)."""

    name = "3gpp_38901_uma"
    table = tr38901.UMA


class Umi38901(Tr38901):
    """3GPP TR 38.901 urban micro, street canyon (h_BS 10 m by default)."""

    name = "3gpp_38901_umi"
    table = tr38901.UMI


class Rma38901(Tr38901):
    """3GPP TR 38.901 rural macro (h_BS 35 m by default; 0.5-30 GHz; low-loss O2I only)."""

    name = "3gpp_38901_rma"
    table = tr38901.RMA
    carrier_range_hz = tr38901.RMA.frequency_range_hz


class PathLossRegistry(Mapping[str, type[PathLossModel]]):
    """Path-loss model name -> class. The installed packages' models (entry-point group
    `scala_netsim.pathloss`) are loaded when the registry is first read; one that cannot be
    loaded is named in a warning and kept in `broken` with the reason, the others work. A
    model registered by a call in a running script (`register`, not an entry point) is in
    `runtime_only`: worker processes and Ray tasks, which do not run that script, lack it."""

    def __init__(self, *builtin: type[PathLossModel]) -> None:
        self._models = {model.name: model for model in builtin}
        self._plugins_loaded = False
        self.broken: dict[str, str] = {}
        self.runtime_only: set[str] = set()

    def _with_plugins(self) -> dict[str, type[PathLossModel]]:
        if not self._plugins_loaded:
            self._plugins_loaded = True     # (before: a plugin's import may read the registry)
            self.broken.update(load_entry_points(ENTRY_POINT_GROUP, "path-loss", self._add))
        return self._models

    def _add(self, model: Any) -> type[PathLossModel]:
        if not (isinstance(model, type) and issubclass(model, PathLossModel)):
            raise TypeError(f"a path-loss model must be a subclass of channel.PathLossModel, "
                            f"got {model!r}")
        name = getattr(model, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{model.__name__} must name itself: name = '...' (a class "
                            f"attribute)")
        if self._models.get(name, model) is not model:
            raise ValueError(f"path-loss model {name!r} is registered already")
        self._models[name] = model
        return model

    def register(self, model: type[PathLossModel]) -> type[PathLossModel]:
        """Add `model` in this process (a decorator too); worker processes do not see it:
        an entry point registers it everywhere."""
        self._with_plugins()
        self._add(model)
        self.runtime_only.add(model.name)
        return model

    def __getitem__(self, name: str) -> type[PathLossModel]:
        return self._with_plugins()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._with_plugins())

    def __len__(self) -> int:
        return len(self._with_plugins())


PATHLOSS_MODELS = PathLossRegistry(Macro3gpp36814, Uma38901, Umi38901, Rma38901)
register_pathloss = PATHLOSS_MODELS.register
