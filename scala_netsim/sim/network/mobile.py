"""Moving clients and their handovers in a run (issue 64): what the world gives the link
(`Mobile`: the clients' moving links, the network's antennas, the update distances, TS
38.331's event A3 and the interruption) and the link's part (`Mobility`).

A client is connected from its first transfer (`connect`) until it has had nothing in flight
for the inactivity timer's time, or a round begins with nothing of it in flight (`quiet`,
`release`): while connected it is followed on the radio map
(scala_netsim.sim.network.movement: its links drawn again every update_m metres it walks)
and at each of its moves it measures every cell's RSRP: its coupling gain to the cell by the
cell's column alone (the SSB's, no beam toward it: the gain the drop picks the strongest
cell by) plus the cell's power on a resource element (dBm), unfiltered (no layer-3 filter:
each measurement in force until the next). Event A3 (channel.handover.A3Monitor) arms a
timer when a neighbour's entering condition starts to hold; a later move where it no longer
holds stops it; one that runs the time to trigger hands the client over to that neighbour:
recorded (core.columns.HANDOVER_COLUMNS), the link told first (it takes the client's
transfers off the air: `NetworkLink._handing_over`), then the map's serving cell set and the
client's gains coupled toward the new cell's beam, and the client moves no bits for
`interruption_s` (`interrupted_until`). A connected client with nothing in flight for
`inactivity_s` (RRC's inactivity timer) goes idle, as every connected client with nothing in
flight does when a round (or an asynchronous run's version) begins. A client connecting
(idle until now) re-selects the strongest cell by the same RSRPs, with no interruption (an
idle client camps on the best cell: TS 38.304's cell re-selection taken as done by the time
it next sends)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from channel import db_to_linear
from channel.handover import A3, A3Monitor
from channel.moving import MovingLinks
from channel.network import Cells, LinkLosses, couple_with_beam, geometry_of, link_geometry
from scala_netsim.sim.network.movement import Movement
from scala_netsim.sim.network.radio_map import RadioMap


@dataclass(frozen=True)
class Antennas:
    """The network's antennas as channel.network.couple takes them: what the coupling of a
    link at a point is, toward a serving cell's beam, and by each cell's column alone."""

    cells: Cells
    sites_xy: np.ndarray
    offsets: np.ndarray | None
    downtilt_deg: float | None
    bs_height_m: float
    panel_rows: int | None
    panel_columns: int | None
    #: each site's nearest image's vector to points (MovingLinks.vectors, which keeps the
    #: last; None: computed here)
    vectors: Callable[[np.ndarray], np.ndarray] | None = None
    #: the last links' coupling (both kinds), and the links themselves (held, so that their
    #: id in the key is theirs)
    _last: dict = field(default_factory=dict, compare=False, repr=False)

    def coupling_db(self, points: np.ndarray, losses: LinkLosses, serving: np.ndarray,
                    beam: bool = True) -> np.ndarray:
        """(clients, cells) coupling gains (dB) of links `losses` at `points`: with `beam`
        the panel's beam toward each client from its `serving` cell (drop_network's), else
        each cell's column alone. The last links' numbers are kept: a move asks for both."""
        key = (points.tobytes(), id(losses), np.asarray(serving).tobytes())
        if self._last.get("key") != key:
            geometry = (link_geometry(points, self.sites_xy, self.offsets) if self.vectors is None
                         else geometry_of(self.vectors(points)))
            _, column, _, gain = couple_with_beam(
                self.cells, geometry, losses, self.downtilt_deg, self.bs_height_m,
                self.panel_rows, self.panel_columns, serving)
            self._last.update(key=key, losses=losses, column=column,
                              beam=column if gain is None else column + gain)
        return self._last["beam" if beam else "column"]


@dataclass(frozen=True)
class Mobile:
    """What a run with moving clients gives its link (the module's docstring): each client's
    moving links, the antennas, each client's update distance (m), the A3 event, the
    interruption (s) and each cell's power on a resource element (dBm, RSRP's reference)."""

    links: MovingLinks
    antennas: Antennas
    update_m: np.ndarray
    event: A3
    interruption_s: float
    reference_dbm: float
    #: a client with nothing in flight this long goes idle (RRC's inactivity timer, s)
    inactivity_s: float = 10.0

    def coupling_at(self, client: int, point: np.ndarray, serving: int) -> np.ndarray:
        """Client's coupling gains (linear, to every cell) standing at `point`, its beam from
        `serving`: what a move row of mobility.csv says the map held (drawn again)."""
        points = np.asarray(point, float)[None, :]
        losses = self.links.losses(np.array([client]), points)
        return db_to_linear(self.antennas.coupling_db(points, losses, np.array([serving])))[0]

    def rsrp_at(self, client: int, point: np.ndarray) -> np.ndarray:
        """Client's RSRP from every cell standing at `point` (dBm): each cell's column gain
        plus its reference power (drawn again, as the handovers were decided on)."""
        points = np.asarray(point, float)[None, :]
        losses = self.links.losses(np.array([client]), points)
        column = self.antennas.coupling_db(points, losses, np.zeros(1, np.int64), beam=False)
        return column[0] + self.reference_dbm

    def position(self, client: int, t: float) -> np.ndarray:
        """Where client stands at instant t (its path's)."""
        return self.links.paths[client].position(t)


#: the link's part in a handover: told (client, target cell, interruption in s) before the
#: map changes
HandingOver = Callable[[int, int, float], None]


class Mobility:
    """The link's moving clients on the radio map `radio` (the module's docstring)."""

    def __init__(self, env: simpy.Environment, radio: RadioMap, mobile: Mobile,
                 handing_over: HandingOver) -> None:
        self.env, self.radio, self.mobile = env, radio, mobile
        self.handing_over = handing_over
        self.movement = Movement(env, radio, mobile.links, self._couple, mobile.update_m,
                                 self._measured)
        self.handover_rows: list[tuple] = []
        #: each client's end of its last handover's interruption (s)
        self.interrupted_until: dict[int, float] = {}
        self._monitors: dict[int, A3Monitor] = {}
        self._rsrp: dict[int, np.ndarray] = {}
        #: each connected client's armed timer: (its expiry, target)
        self._armed: dict[int, tuple[float, int]] = {}
        #: each connected client with nothing in flight: when its inactivity timer runs out
        self._idle_at: dict[int, float] = {}

    @property
    def move_rows(self) -> list[tuple]:
        return self.movement.rows

    def _couple(self, clients: np.ndarray, points: np.ndarray,
                losses: LinkLosses) -> np.ndarray:
        serving = self.radio.serving[clients]
        return db_to_linear(self.mobile.antennas.coupling_db(points, losses, serving))

    def connect(self, client: int) -> None:
        """Client has a transfer to make: from now connected (followed, measured), having
        re-selected the strongest cell where it stands; nothing if it is connected already."""
        client = int(client)
        self._idle_at.pop(client, None)
        if client in self._monitors:
            return
        self.movement.follow(client)         # (moved now: its RSRPs measured, `_measured`)
        best = int(np.argmax(self._rsrp[client]))
        if best != self.radio.serving_cell(client):
            self.radio.serve(client, best)
            self.movement.recouple(client)
        monitor = A3Monitor(self.mobile.event, best, self.radio.num_cells)
        self._monitors[client] = monitor
        monitor.measure(self.env.now, self._rsrp[client])
        self._arm(client)

    def release(self, busy: set[int]) -> None:
        """Every connected client with nothing in flight (not in `busy`) idle from now: no
        longer followed or measured, its timers stopped."""
        for client in [k for k in self._monitors if k not in busy]:
            self._idle(client)

    def _idle(self, client: int) -> None:
        self.movement.unfollow(client)
        del self._monitors[client]
        self._armed.pop(client, None)
        self._idle_at.pop(client, None)

    def quiet(self, client: int) -> None:
        """Client has nothing in flight from now: idle when its inactivity timer runs out,
        unless a transfer connects it again before."""
        if client not in self._monitors:
            return
        at = self._idle_at[client] = self.env.now + self.mobile.inactivity_s
        self.env.timeout(self.mobile.inactivity_s).callbacks.append(
            lambda _: self._idle(client) if self._idle_at.get(client) == at else None)

    def interruption_left(self, client: int) -> float:
        """The time left of client's handover interruption (s; 0: none)."""
        return max(0.0, self.interrupted_until.get(client, 0.0) - self.env.now)

    def _measured(self, client: int, points: np.ndarray, losses: LinkLosses) -> None:
        """Client moved: its RSRPs measured there, A3's timers run or stopped, the first to
        expire armed."""
        column = self.mobile.antennas.coupling_db(points, losses,
                                                  self.radio.serving[[client]], beam=False)
        self._rsrp[client] = column[0] + self.mobile.reference_dbm
        monitor = self._monitors.get(client)
        if monitor is None:
            return
        monitor.measure(self.env.now, self._rsrp[client])
        self._arm(client)

    def _arm(self, client: int) -> None:
        due = self._monitors[client].due()
        if due is None:
            self._armed.pop(client, None)
            return
        if self._armed.get(client) == due:
            return
        self._armed[client] = due
        timer = self.env.timeout(max(0.0, due[0] - self.env.now))
        timer.callbacks.append(lambda _: self._expired(client, due))

    def _expired(self, client: int, due: tuple[float, int]) -> None:
        """A timer ran its time to trigger, unless a later move stopped it (or re-armed
        another, or the client went idle): the handover to its target."""
        if self._armed.get(client) != due:
            return
        del self._armed[client]
        monitor = self._monitors[client]
        source, target = monitor.serving, due[1]
        rsrp = monitor.rsrp_dbm
        interruption = self.mobile.interruption_s
        self.handover_rows.append((client, float(self.env.now), int(source), int(target),
                                   float(rsrp[source]), float(rsrp[target]), interruption))
        self.interrupted_until[client] = self.env.now + interruption
        self.handing_over(client, target, interruption)
        self.radio.serve(client, target)
        self.movement.recouple(client)
        monitor.hand_over(target)
        monitor.measure(self.env.now, rsrp)
        self._arm(client)

    # --- checkpoints: between rounds (the next one's begin releases every client) ---------
    def state(self) -> dict:
        """What a resumed run needs: the records so far, every client's large-scale gains
        and serving cell on the map, the interruptions (saved between rounds, or in an
        asynchronous run with nothing in flight: NetworkLink.in_flight counts a transfer in
        a handover's interruption too)."""
        return {"moves": list(self.movement.rows), "handovers": list(self.handover_rows),
                "large": self.radio.large_scale_all().tolist(),
                "serving": self.radio.serving.tolist(),
                "interrupted_until": dict(self.interrupted_until)}

    def load_state(self, state: dict) -> None:
        self.movement.rows[:] = [tuple(r) for r in state["moves"]]
        self.handover_rows[:] = [tuple(r) for r in state["handovers"]]
        self.interrupted_until = dict(state["interrupted_until"])
        large, serving = np.asarray(state["large"]), np.asarray(state["serving"])
        moved = np.flatnonzero((serving != self.radio.serving)
                               | (large != self.radio.large_scale_all()).any(axis=1))
        for client in moved.tolist():
            self.radio.serve(client, int(serving[client]))
            self.radio.move(client, large[client])
