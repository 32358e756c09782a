"""Clients that move on the radio map (issue 64), a SimPy process a client: while a client is
followed (connected: from a transfer until it goes idle, scala_netsim.sim.network.mobile),
every `update_m`
metres it walks its links are drawn again where it stands (channel.moving.MovingLinks, then
its coupling gains by the network's antennas toward its serving cell) and posted on the radio
map (RadioMap.move), which re-rates what it has on the air; never per slot. A client not
followed costs nothing: followed again, its gains are first brought to where it stands then
(always, moved or not, so that what a followed client's gains are depends on its position
alone: a run resumed from a checkpoint finds them as the uninterrupted run). Each move is
recorded (client, time, position, metres walked, the serving cell the gains were coupled
toward), so the books draw the same gains again; a change of serving cell (a handover, a
re-selection) couples the last move's links toward the new cell and is recorded as a move of
no metres (`recouple`). A followed client's process never ends by itself: run the
environment until an instant, or unfollow it."""

from __future__ import annotations

from collections.abc import Callable, Generator

import numpy as np
import simpy

from channel.moving import MovingLinks
from channel.network import LinkLosses
from scala_netsim.sim.network.radio_map import RadioMap

#: the coupling gains (linear, to every cell) of clients at points, their links given
Couple = Callable[[np.ndarray, np.ndarray, LinkLosses], np.ndarray]
#: told after each move: the client, where it stands and its links there
Moved = Callable[[int, np.ndarray, LinkLosses], None]


class Movement:
    """The moves of the radio map `radio`'s clients along `links`' paths, each posted as the
    coupling row `couple` gives for the client where it stands, every `update_m` metres
    walked while it is followed (one distance, or one a client), `moved` told after each."""

    def __init__(self, env: simpy.Environment, radio: RadioMap, links: MovingLinks,
                 couple: Couple, update_m: float | np.ndarray,
                 moved: Moved | None = None) -> None:
        steps = np.broadcast_to(np.asarray(update_m, dtype=float), (len(links.paths),))
        bad = ~(np.isfinite(steps) & (steps > 0))
        if bad.any():
            raise ValueError(f"mobility.update_m: must be a finite distance > 0 m, got "
                             f"{float(steps[bad][0])!r}")
        self.env, self.radio, self.links = env, radio, links
        self.couple, self.moved = couple, moved
        self.update_m = steps.tolist()
        #: its moves (core.columns.MOVE_COLUMNS)
        self.rows: list[tuple[int, float, float, float, float, int]] = []
        #: each followed client's last move: where it stood and its links there
        self._last: dict[int, tuple[np.ndarray, LinkLosses]] = {}
        self._followed: dict[int, simpy.Process] = {}
        #: each client's metres walked at its last move (0: the drop)
        self._walked: dict[int, float] = {}
        #: each client's last step moved at, a whole number of update_m from the drop (an
        #: integer, so that a step's metres never round back onto the last one's)
        self._step: dict[int, int] = {}

    def follow(self, client: int) -> None:
        """From now on keep `client`'s gains where it stands: moved there at once, then every
        update_m metres until `unfollow`."""
        if client in self._followed:
            return
        self._move(client, self.links.paths[client].moved_m(self.env.now))
        self._followed[client] = self.env.process(self._walk(client))

    @property
    def followed(self) -> list[int]:
        return list(self._followed)

    def unfollow(self, client: int) -> None:
        """No more moves for `client` until it is followed again (its gains stay as last
        posted)."""
        process = self._followed.pop(client, None)
        self._last.pop(client, None)
        if process is not None and process.is_alive:
            process.interrupt()

    def recouple(self, client: int) -> None:
        """A followed client's serving cell changed on the map: its gains coupled again from
        its last move's links, toward the new cell (a beam follows its cell), recorded as a
        move of no metres now."""
        points, losses = self._last[client]
        self._post(client, points, losses, self._walked[client])

    def _walk(self, client: int) -> Generator[simpy.Event, None, None]:
        path, update_m = self.links.paths[client], self.update_m[client]
        try:
            while True:
                step = self._step.get(client, 0) + 1
                while step * update_m <= self._walked.get(client, 0.0):
                    step += 1           # (past where a catch-up on following left it)
                at = path.when_moved(step * update_m)
                yield self.env.timeout(max(0.0, at - self.env.now))
                self._move(client, step * update_m)
                self._step[client] = step
        except simpy.Interrupt:
            return

    def _move(self, client: int, walked: float) -> None:
        """Post `client`'s coupling where it stands now, having walked `walked` metres."""
        points, losses = self.links.at(self.env.now, np.array([client]))
        self._last[client] = (points, losses)
        self._post(client, points, losses, walked)
        if self.moved is not None:
            self.moved(client, points, losses)

    def _post(self, client: int, points: np.ndarray, losses: LinkLosses,
              walked: float) -> None:
        row = self.couple(np.array([client]), points, losses)[0]
        self.radio.move(client, row)
        self._walked[client] = walked
        self.rows.append((client, float(self.env.now), float(points[0, 0]),
                          float(points[0, 1]), float(walked), self.radio.serving_cell(client)))
