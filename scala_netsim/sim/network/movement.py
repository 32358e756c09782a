"""Clients that move on the radio map (issue 64), a SimPy process a client: while a client is
followed (connected: selected for a round or with a transfer in flight), every `update_m`
metres it walks its links are drawn again where it stands (channel.moving.MovingLinks, then
its coupling gains by the network's antennas, its serving cell kept) and posted on the radio
map (RadioMap.move), which re-rates what it has on the air; never per slot. A client not
followed costs nothing: when it is followed again, its gains are first brought to where it
stands then. Each move is recorded (client, time, position, walked metres), for the books
to draw the same gains again (which they do not yet: they read the drop's coupling). Not yet
wired into a run: nothing builds a Movement outside the tests (docs/model/network.md, "The
seam for mobility"). A followed client's process never ends by itself: run the environment
until an instant, or unfollow it."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator

import numpy as np
import simpy

from channel.moving import MovingLinks
from channel.network import LinkLosses
from scala_netsim.sim.network.radio_map import RadioMap

#: a move's record: client, time (s), x and y (m), metres walked since the drop
MOVE_COLUMNS = ("client_id", "t_s", "x_m", "y_m", "walked_m")
#: the coupling gains (linear, to every cell) of clients at points, their links given
Couple = Callable[[np.ndarray, np.ndarray, LinkLosses], np.ndarray]


class Movement:
    """The moves of the radio map `radio`'s clients along `links`' paths, each posted as the
    coupling row `couple` gives for the client where it stands, every `update_m` metres
    walked while it is followed."""

    def __init__(self, env: simpy.Environment, radio: RadioMap, links: MovingLinks,
                 couple: Couple, update_m: float) -> None:
        if not (math.isfinite(update_m) and update_m > 0):
            raise ValueError(f"mobility.update_m: must be a finite distance > 0 m, got "
                             f"{update_m!r}")
        self.env, self.radio, self.links = env, radio, links
        self.couple, self.update_m = couple, float(update_m)
        self.rows: list[tuple[int, float, float, float, float]] = []
        self._followed: dict[int, simpy.Process] = {}
        #: each client's metres walked at its last move (0: the drop)
        self._walked: dict[int, float] = {}
        #: each client's last step moved at, a whole number of update_m from the drop (an
        #: integer, so that a step's metres never round back onto the last one's)
        self._step: dict[int, int] = {}

    def follow(self, client: int) -> None:
        """From now on keep `client`'s gains where it stands: moved at once if it has walked
        since its last move, then every update_m metres until `unfollow`."""
        if client in self._followed:
            return
        walked = self.links.paths[client].moved_m(self.env.now)
        if walked > self._walked.get(client, 0.0):
            self._move(client, walked)
        self._followed[client] = self.env.process(self._walk(client))

    def unfollow(self, client: int) -> None:
        """No more moves for `client` until it is followed again (its gains stay as last
        posted)."""
        process = self._followed.pop(client, None)
        if process is not None and process.is_alive:
            process.interrupt()

    def _walk(self, client: int) -> Generator[simpy.Event, None, None]:
        path = self.links.paths[client]
        try:
            while True:
                step = self._step.get(client, 0) + 1
                while step * self.update_m <= self._walked.get(client, 0.0):
                    step += 1           # (past where a catch-up on following left it)
                at = path.when_moved(step * self.update_m)
                yield self.env.timeout(max(0.0, at - self.env.now))
                self._move(client, step * self.update_m)
                self._step[client] = step
        except simpy.Interrupt:
            return

    def _move(self, client: int, walked: float) -> None:
        """Post `client`'s coupling where it stands now, having walked `walked` metres."""
        clients = np.array([client])
        points, losses = self.links.at(self.env.now, clients)
        row = self.couple(clients, points, losses)[0]
        self.radio.move(client, row)
        self._walked[client] = walked
        self.rows.append((client, float(self.env.now), float(points[0, 0]),
                          float(points[0, 1]), float(walked)))
