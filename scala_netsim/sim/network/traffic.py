"""Other users' traffic on a network's air (network.traffic, config.traffic): background users
who share each cell's blocks with the learning's transfers under the work-conserving
scheduler and interfere in the other cells as any transfer does.

Background user u is the radio map's row clients + u (its coupling gains to every cell, its
serving cell, its power control: a client's). Each of its transfers is a `File` asking its
cell's scheduler for blocks on the air of its direction, as a learning transfer does (its
power, cap and gain the link's for that row):

- `full_buffer`: from the link's first instant each user has one file of infinite bits in
  each direction of `directions`, on the air for the whole run (what it delivered: the
  integral of its rate, the air's `moved`);
- `ftp3`: 3GPP FTP model 3 (TR 36.889): files of `file_bits` arrive at each cell
  as a Poisson process of rate lambda, each for one of the cell's users drawn at random; a
  user sends its files one after another, first come first served. lambda makes the cell's
  offered load rho its share of the blocks' time when every cell carries rho (the load
  coupling of LTE network planning, Siomina and Yuan, IEEE Trans. Wireless Commun. 11(6),
  2012, at its fixed point): a file of S bits for user u, alone in its cell, takes S / R_u
  of the direction's time on its blocks (R_u: its rate there on all the blocks it can use,
  Air.quiet_rate, with every other cell's interference on every block weighted by rho: on
  the downlink at the cell's power a block, on the uplink at the mean its background users
  would be heard with), so lambda = rho x share / (S x mean_u 1 / R_u), `share` the
  direction's share of the time (1 with paired bands, the frame's under TDD). Where a rate
  grows with the blocks (the downlink's fixed power a block) the blocks' time the files take
  is then rho in a lone cell (none interfering: rho at its SNR), and near it in a network,
  whose interference comes and goes rather than staying at its mean (load.csv gives what
  each cell carried). The learning's transfers slow the files but take none of that time.

A user whose rate alone on its blocks is 0 (under the NR abstraction, below the lowest MCS:
out of coverage) gets no traffic; `covered` counts the others. Each file's row (core.
columns.TRAFFIC_COLUMNS) and its stretches on the air (TRAFFIC_AIR_COLUMNS, as air.csv's rows
under a per-instant scheduler) are recorded when it ends, and those of the files still on the
air up to now whenever the records are asked for (`record`), without touching the air's
numbers: a flush in the middle of a run changes nothing of it."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import numpy as np
import simpy

from channel import Direction
from scala_netsim.sim.cell import BackgroundUsers
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.rows import block_runs
from scala_netsim.sim.network.schedulers import Request
from scala_netsim.sim.network.settings import TrafficSettings


@dataclass
class File:
    """One transfer of a background user: its number, the user's row of the radio map, its
    cell and direction, its bits (inf: full buffer), when it arrived, when it asked for
    blocks (its user's previous file over) and when it ended (NaN: not yet)."""

    number: int
    user: int
    cell: int
    direction: Direction
    bits: float
    arrival: float
    start: float = math.nan
    end: float = math.nan
    flow: Flow | None = field(default=None, repr=False)


#: a background transfer's request to its cell's scheduler: (flow, direction, user's row)
RequestOf = Callable[[Flow, Direction, int], Request]


class Background:
    """The background users' files on the airs (see the module's docstring). `first`: the
    radio map's row of user 0; `request_of(flow, direction, row)`: the scheduler's request
    of a transfer of that row, as the link makes it for a client."""

    def __init__(self, env: simpy.Environment, settings: TrafficSettings,
                 users: BackgroundUsers, first: int, airs: dict[Direction, Air],
                 request_of: RequestOf, frame_share: Callable[[Direction], float]) -> None:
        self.env, self.settings, self.airs, self.request_of = env, settings, airs, request_of
        self.first = first
        #: when the traffic began (the link's first instant)
        self.began = env.now
        self.serving = np.asarray(users.serving, dtype=np.int64)
        num_cells = airs[Direction.UPLINK].gains.shape[1]
        #: recording each file (`record_files`): the rows of every file that ended
        #: (TRAFFIC_COLUMNS) and of every stretch of a file's on the air so far, folded
        #: (TRAFFIC_AIR_COLUMNS)
        self.rows: list[tuple] = []
        self.air_rows: list[tuple] = []
        self._queues: dict[tuple[Direction, int], deque[File]] = {}
        self._active: dict[tuple[Direction, int], File] = {}
        self._files = 0
        #: per (cell, direction): users, covered users, arrival rate (1/s), files arrived,
        #: files ended, the bits they delivered, and the block-seconds of the folded
        #: stretches (of the direction's time)
        self.cells: dict[tuple[int, Direction], list[float]] = {}
        for d_index, d in enumerate(settings.directions):
            alone, loaded = self._rates(d)
            for c in range(num_cells):
                mine = np.flatnonzero(self.serving == c)
                covered = mine[alone[mine] > 0]
                arrivals = self._arrival_rate(loaded[covered], frame_share(d))
                self.cells[(c, d)] = [len(mine), len(covered), arrivals, 0, 0, 0.0, 0.0]
                if settings.kind == "full_buffer":
                    for u in covered.tolist():
                        self._arrive(u, d, math.inf)
                elif arrivals > 0:
                    rng = np.random.default_rng([settings.seed, d_index, c])
                    env.process(self._arrivals(c, d, arrivals, covered, rng))

    def _rates(self, d: Direction) -> tuple[np.ndarray, np.ndarray]:
        """Each user's rate alone in its cell on all the blocks it can use (bit/s of the
        direction's time): with no interference, and with every other cell sending on every
        block the offered load's share of the time (its background users' power a block, on
        the uplink their mean as the cell hears it; none where the network has no
        interference)."""
        air = self.airs[d]
        requests = [self.request_of(Flow(0.0, 0.0, _nothing), d, self.first + u)
                    for u in range(len(self.serving))]
        blocks = [min(r.cap, air.num_blocks) for r in requests]
        alone = np.array([air.quiet_rate(r, n) for r, n in zip(requests, blocks, strict=True)])
        if not air.interference:
            return alone, alone
        per_block = np.array([r.powers(n)[1] for r, n in zip(requests, blocks, strict=True)])
        gains = air.gains[self.first:self.first + len(self.serving)]    # users x cells
        cells = gains.shape[1]
        if d is Direction.DOWNLINK:     # every other cell at its power a block
            heard = gains * per_block[:, None]
            interference = heard.sum(axis=1) - heard[np.arange(len(heard)), self.serving]
        else:                           # each other cell's users, on average, at this cell
            sent = np.zeros((cells, cells))
            for c in range(cells):
                mine = np.flatnonzero((self.serving == c) & (alone > 0))
                if len(mine):
                    sent[c] = (gains[mine] * per_block[mine, None]).mean(axis=0)
            at = sent.sum(axis=0) - np.diag(sent)      # at each cell, from the others
            interference = at[self.serving]
        load = self.settings.offered_load      # each other cell busy that share of the time
        loaded = np.array([air.quiet_rate(r, n, load * float(i)) for r, n, i in zip(
            requests, blocks, interference.tolist(), strict=True)])
        return alone, loaded

    def _arrival_rate(self, rates: np.ndarray, share: float) -> float:
        """FTP model 3's lambda for a cell whose covered users have `rates` with every other
        cell loaded (the module's docstring; those with none left out); 0 without users or
        load, and for full buffer."""
        s = self.settings
        rates = rates[rates > 0]
        if s.kind != "ftp3" or not len(rates) or s.offered_load <= 0:
            return 0.0
        return s.offered_load * share / (s.file_bits * float(np.mean(1.0 / rates)))

    def _arrivals(self, cell: int, d: Direction, rate: float, users: np.ndarray,
                  rng: np.random.Generator) -> Generator[simpy.Event, None, None]:
        while True:
            yield self.env.timeout(rng.exponential(1.0 / rate))
            self.cells[(cell, d)][3] += 1
            self._arrive(int(users[rng.integers(len(users))]), d, self.settings.file_bits)

    def _arrive(self, u: int, d: Direction, bits: float) -> None:
        cell = int(self.serving[u])
        f = File(self._files, self.first + u, cell, d, bits, self.env.now)
        self._files += 1
        if (d, u) in self._active:
            self._queues.setdefault((d, u), deque()).append(f)
        else:
            self._start(u, f)

    def _start(self, u: int, f: File) -> None:
        f.start = self.env.now
        f.flow = Flow(f.bits, self.env.now, lambda flow: self._over(u, f))
        self._active[(f.direction, u)] = f
        self.airs[f.direction].request(self.request_of(f.flow, f.direction, f.user))

    def _over(self, u: int, f: File) -> None:
        """File f's bits have crossed: its stretches folded, its row recorded, and its
        user's next file asks for blocks."""
        assert f.flow is not None
        f.end = self.env.now
        self._fold(f, f.flow.stretches)
        book = self.cells[(f.cell, f.direction)]
        book[4] += 1
        book[5] += f.bits
        if self.settings.record_files:
            self.rows.append(self._row(f, f.bits))
        del self._active[(f.direction, u)]
        queue = self._queues.get((f.direction, u))
        if queue:
            self._start(u, queue.popleft())

    def fold(self) -> None:
        """Every file on the air's stretches that have ended folded into the books (its
        block-seconds, and recording each file its air rows), the open one kept: a
        full-buffer user's file, on the air all run, holds a stretch for every change of its
        cell's blocks (the link folds them as each round begins)."""
        for f in self._active.values():
            assert f.flow is not None
            stretches = f.flow.stretches
            if len(stretches) > 1 and math.isnan(stretches[-1][3]):
                self._fold(f, stretches[:-1])
                del stretches[:-1]

    def _fold(self, f: File, stretches: list[list]) -> None:
        """Stretches of f that have ended into the books (see `fold`)."""
        book, air = self.cells[(f.cell, f.direction)], self.airs[f.direction]
        book[6] += self._block_s(air, stretches, math.nan)
        if self.settings.record_files:
            self.air_rows.extend(self._air_rows(f, stretches, math.nan))

    @staticmethod
    def _block_s(air: Air, stretches: list[list], now: float) -> float:
        """Blocks x time (the direction's, under TDD) over stretches, one still open taken
        to `now`."""
        frame, total = air.frame, 0.0
        for _, n, t0, t1, _, _ in stretches:
            end = now if math.isnan(t1) else t1
            if n > 0 and end > t0:
                total += n * (end - t0 if frame is None else
                              frame.cumulative(air.direction, end)
                              - frame.cumulative(air.direction, t0))
        return total

    def _row(self, f: File, delivered: float) -> tuple:
        return (f.number, f.user - self.first, f.user, f.cell, f.direction.value, f.bits,
                f.arrival, f.start, f.end, delivered)

    @staticmethod
    def _air_rows(f: File, stretches: list[list], now: float) -> list[tuple]:
        """Stretches of f as rows (TRAFFIC_AIR_COLUMNS), one still open closed at `now`."""
        value = f.direction.value
        return [(f.number, f.cell, value, first, n, t0, now if math.isnan(t1) else t1, p, cap)
                for held, _, t0, t1, p, cap in stretches
                if (now if math.isnan(t1) else t1) > t0 for first, n in block_runs(held)]

    def record(self) -> tuple[list[tuple], list[tuple]]:
        """Recording each file (`record_files`): the file rows and air rows so far: those of
        the files that ended and the stretches folded, then those of the files on the air or
        waiting for blocks up to now (their end NaN, what they delivered so far), in the
        order of their numbers; read without changing anything. Else none."""
        if not self.settings.record_files:
            return [], []
        now = self.env.now
        rows, air_rows = list(self.rows), list(self.air_rows)
        for f in sorted(self._active.values(), key=lambda f: f.number):
            assert f.flow is not None
            rows.append(self._row(f, self.airs[f.direction].moved(f.flow)))
            air_rows.extend(self._air_rows(f, f.flow.stretches, now))
        return rows, air_rows

    @property
    def offered_load(self) -> float | None:
        """FTP model 3's offered load (None: full buffer)."""
        return self.settings.offered_load if self.settings.kind == "ftp3" else None

    def load_rows(self) -> list[tuple]:
        """Per cell and direction up to now, in order of direction then cell: its users,
        those covered, its files' arrival rate (1/s), the files arrived and ended, the bits
        delivered and the block-seconds its files held (of the direction's time), those of
        the files on the air so far included; read without changing anything."""
        books = {key: list(book) for key, book in self.cells.items()}
        for f in self._active.values():
            assert f.flow is not None
            air = self.airs[f.direction]
            book = books[(f.cell, f.direction)]
            book[5] += air.moved(f.flow)
            book[6] += self._block_s(air, f.flow.stretches, self.env.now)
        return [(c, d.value, int(users), int(covered), rate, int(arrived), int(ended),
                 delivered, block_s)
                for (c, d), (users, covered, rate, arrived, ended, delivered, block_s) in
                sorted(books.items(), key=lambda item: (item[0][1].value, item[0][0]))]


def _nothing(flow: Flow) -> None:
    del flow
