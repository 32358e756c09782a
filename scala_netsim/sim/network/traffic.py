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
  with the other cells' interference at each sending with probability rho: LoadTerms), so
  lambda = rho x share / (S x mean_u 1 / R_u), `share` the direction's share of the time (1
  with paired bands, the frame's under TDD). Where a rate grows with the blocks (the
  downlink's fixed power a block) the blocks' time the files take is then rho in a lone
  cell (none interfering), and near it in a network (load.csv gives what each cell
  carried). The learning's transfers slow the files but take none of that time.
- `ftp3` under `fluid` (TrafficSettings.fluid): no file is simulated. Each cell with a
  covered user carries rho all along; a learning transfer gets 1 - rho of its blocks' time
  (`Background.fluid_terms`: the air multiplies its rate by it) and the other cells' load as
  interference on every block (LoadTerms' floor), what a transfer much longer than the
  files gets beside them under round robin.

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
from typing import Any

import numpy as np
import simpy

from channel import Direction
from scala_netsim.sim.cell import BackgroundUsers
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.rows import block_runs
from scala_netsim.sim.network.schedulers import Request
from scala_netsim.sim.network.settings import NetworkSettings, TrafficSettings

#: the samples of the other cells' states the fluid model's interference averages over, and
#: its child of the traffic seed
FLOOR_SAMPLES, FLOOR_STREAM = 1024, 7


@dataclass(frozen=True)
class LoadTerms:
    """What other users' load makes of a network's cells (`load_terms`), per direction of
    the traffic: each background user's rate alone in its cell on all the blocks it can use
    (bit/s of the direction's time; 0: out of coverage) and with every other cell loaded;
    each cell's load (the offered load where it has a covered user, else 0); and the
    interference those loads add on a block of a transfer of the radio map's row r received
    through cell c (`floor[d][r, c]`, W): each other cell sends with its load's probability
    (on the downlink at its power a block, heard through r's gain; on the uplink from one of
    its covered users drawn at random, heard by c), and the floor is the level whose rate at
    a high SINR is the rate averaged over those states (`_rate_level`: N + floor the
    geometric mean of N + I over FLOOR_SAMPLES draws of the traffic seed), not their mean
    power: a rate is concave in the interference, and an uplink's comes mostly from a few
    users near the cell, now and then."""

    alone: dict[Direction, np.ndarray]
    loaded: dict[Direction, np.ndarray]
    load: dict[Direction, np.ndarray]
    floor: dict[Direction, np.ndarray]
    #: which cells send in each of the FLOOR_SAMPLES draws (samples x cells), and the
    #: noise and a cell's power on a block its floor is taken over (W)
    on: dict[Direction, np.ndarray]
    noise_w: dict[Direction, float]
    block_w: dict[Direction, float]

    def moved_floor(self, direction: Direction | str, gains: np.ndarray, serving: int) -> float:
        """The downlink floor of a client that moved (issue 64): its gains to every cell
        in force `gains` (linear), served by `serving`, as `load_terms` takes the drop's
        (each other cell sending with its load's probability, heard through the client's
        gains); on the uplink a cell's floor is its own, whoever moved: the drop's. One
        client's row alone (a sum over cells, not the drop's matrix product: both the run
        and its checks take this one; `direction` also by its name, as the checks give it)."""
        direction = Direction(direction)
        if direction is not Direction.DOWNLINK:
            raise ValueError("moved_floor: the uplink's floor does not move with a client")
        heard = gains * self.block_w[direction]
        on = self.on[direction]
        interference = (on * heard[None, :]).sum(axis=1) - on[:, serving] * heard[serving]
        return float(_rate_level(interference[:, None], self.noise_w[direction])[0])


def load_terms(radio: RadioMap, first: int, settings: NetworkSettings,
               traffic: TrafficSettings, cap: Callable[[Direction, int], int]) -> LoadTerms:
    """LoadTerms of the background users, the radio map's rows `first` on, under the link
    `settings` (their powers and noise), each user's transfers using `cap(d, row)` blocks
    (the link's: all, or under NR an upload's best number); pure numbers of the map and the
    settings, so the checks rebuild them from a run's files."""
    rows = np.arange(first, radio.num_clients)
    serving = radio.serving[rows]
    gains = radio.coupling
    cells = radio.num_cells
    out: dict[str, dict[Direction, Any]] = {k: {} for k in LoadTerms.__annotations__}
    for d in traffic.directions:
        n = np.array([min(cap(d, int(r)), settings.blocks[d]) for r in rows])
        per_block = np.array([settings.powers(d, radio.serving_gain(int(r)), int(k))[1]
                              for r, k in zip(rows, n, strict=True)])
        signal = per_block * radio.serving_gains[rows]
        noise_w = settings.noise_w_per_hz(d) * settings.block_hz
        alone = _rates(settings, d, n, signal / noise_w)
        load = np.zeros(cells)
        load[np.unique(serving[alone > 0])] = traffic.offered_load.get(d, 0.0)
        rng = np.random.default_rng([traffic.seed, FLOOR_STREAM, d is Direction.UPLINK])
        on = rng.random((FLOOR_SAMPLES, cells)) < load[None, :]    # which cells send, each
        if not settings.interference:
            floor = np.zeros((len(gains), cells))
        elif d is Direction.DOWNLINK:       # what a row hears of the other cells sending
            heard = gains * settings.powers(d, 1.0, 1)[1]            # (rows, cells)
            mine = radio.serving
            interference = on @ heard.T - on[:, mine] * heard[np.arange(len(gains)), mine]
            floor = np.broadcast_to(_rate_level(interference, noise_w)[:, None],
                                    (len(gains), cells))
        else:                               # what a cell hears of a user of each other cell
            covered = [rows[(serving == c) & (alone > 0)] for c in range(cells)]
            power = np.zeros(radio.num_clients)
            power[rows] = per_block
            sender = np.array([[rng.choice(covered[c]) if len(covered[c]) else 0
                                for c in range(cells)] for _ in range(FLOOR_SAMPLES)])
            heard = gains[sender] * power[sender][:, :, None]        # (samples, from, at)
            heard *= on[:, :, None]
            heard[:, np.arange(cells), np.arange(cells)] = 0.0        # not its own cell's
            floor = np.broadcast_to(_rate_level(heard.sum(axis=1), noise_w)[None, :],
                                    (len(gains), cells))
        out["alone"][d], out["load"][d], out["floor"][d] = alone, load, floor
        out["on"][d], out["noise_w"][d] = on, noise_w
        out["block_w"][d] = settings.powers(d, 1.0, 1)[1]
        out["loaded"][d] = _rates(settings, d, n, signal / (noise_w + floor[rows, serving]))
    return LoadTerms(**out)


def fluid_load(terms: LoadTerms | None, settings: NetworkSettings
               ) -> tuple[dict[str, np.ndarray] | None, dict[str, np.ndarray] | None]:
    """What deriving the rates again takes of other users' load in its mean
    (books.blocks.AirSettings.load_floor and load_share, by direction's name): under the
    fluid model (network.traffic.model: fluid) each direction's floor and its cells' shares,
    1 - their load; else (None, None)."""
    if terms is None or settings.traffic is None or not settings.traffic.fluid:
        return None, None
    return ({d.value: floor for d, floor in terms.floor.items()},
            {d.value: 1.0 - load for d, load in terms.load.items()})


def _rate_level(interference: np.ndarray, noise_w: float) -> np.ndarray:
    """Per column of `interference` (samples x victims, W): the interference I_eff with
    N + I_eff the geometric mean of N + I over the samples, exp(E[ln(N + I)]): what gives,
    at a high SINR, the Shannon rate averaged over the samples (log2(S / (N + I)) is linear
    in ln(N + I)); 0 exactly where no sample has any."""
    return noise_w * np.expm1(np.log1p(interference / noise_w).mean(axis=0))


def _rates(settings: NetworkSettings, d: Direction, blocks: np.ndarray,
           sinr: np.ndarray) -> np.ndarray:
    """Rates on `blocks` blocks at `sinr` on each (bit/s): Shannon's, or the NR goodput."""
    if settings.nr is None:
        return blocks * settings.block_hz * np.log2(1.0 + sinr)
    tables = settings.nr.tables[d]
    return np.array([tables.goodput_bps(np.full(int(k), x))
                     for k, x in zip(blocks, sinr, strict=True)])


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
                 request_of: RequestOf, frame_share: Callable[[Direction], float],
                 terms: LoadTerms) -> None:
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
        #: other users' load (load_terms), and the downlink floors of rows that moved
        self.terms = terms
        self.moved: dict[tuple[Direction, int], float] = {}
        for d_index, d in enumerate(settings.directions):
            alone, loaded = terms.alone[d], terms.loaded[d]
            for c in range(num_cells):
                mine = np.flatnonzero(self.serving == c)
                covered = mine[alone[mine] > 0]
                arrivals = self._arrival_rate(loaded[covered], frame_share(d), d)
                self.cells[(c, d)] = [len(mine), len(covered), arrivals, 0, 0, 0.0, 0.0]
                if settings.kind == "full_buffer":
                    for u in covered.tolist():
                        self._arrive(u, d, math.inf)
                elif arrivals > 0 and not settings.fluid:
                    rng = np.random.default_rng([settings.seed, d_index, c])
                    env.process(self._arrivals(c, d, arrivals, covered, rng))

    def _arrival_rate(self, rates: np.ndarray, share: float, d: Direction) -> float:
        """FTP model 3's lambda for a cell whose covered users have `rates` with every other
        cell loaded (the module's docstring; those with none left out); 0 without users or
        load, and for full buffer."""
        s = self.settings
        rates = rates[rates > 0]
        load = s.offered_load.get(d, 0.0)
        if s.kind != "ftp3" or not len(rates) or load <= 0:
            return 0.0
        return load * share / (s.file_bits * float(np.mean(1.0 / rates)))

    def fluid_terms(self, direction: Direction, row: int, cell: int) -> tuple[float, float]:
        """Under the fluid model (network.traffic.model: fluid), what a learning transfer of
        the radio map's `row` in `cell` sees of the other users: the interference their load
        adds on each of its blocks (W) and the share of its blocks' time they leave it
        (1 - the cell's load); (0, 1) otherwise, or in a direction without traffic."""
        if not self.settings.fluid or direction not in self.terms.load:
            return 0.0, 1.0
        floor = self.moved.get((direction, row))
        return (float(self.terms.floor[direction][row, cell]) if floor is None else floor,
                1.0 - float(self.terms.load[direction][cell]))

    def move(self, row: int, gains: np.ndarray, serving: int) -> None:
        """The radio map's row moved (issue 64), now with `gains` to every cell, served by
        `serving`: under the fluid model its downlink floor from now on (moved_floor)."""
        if self.settings.fluid and Direction.DOWNLINK in self.terms.load:
            self.moved[(Direction.DOWNLINK, row)] = self.terms.moved_floor(
                Direction.DOWNLINK, gains, serving)

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
    def _held_s(air: Air, t0: float, t1: float) -> float:
        """The direction's time in [t0, t1): all of it, or under TDD its symbols'."""
        frame = air.frame
        if frame is None:
            return t1 - t0
        return frame.cumulative(air.direction, t1) - frame.cumulative(air.direction, t0)

    @classmethod
    def _block_s(cls, air: Air, stretches: list[list], now: float) -> float:
        """Blocks x time (the direction's) over stretches, one still open taken to `now`."""
        total = 0.0
        for _, n, t0, t1, _, _ in stretches:
            end = now if math.isnan(t1) else t1
            if n > 0 and end > t0:
                total += n * cls._held_s(air, t0, end)
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
        the files that ended and the stretches folded, then those of the files on the air,
        waiting for blocks or queued behind their user's file up to now (their end NaN, what
        they delivered so far; a queued one's start NaN too), in the order of their numbers;
        read without changing anything. Else none."""
        if not self.settings.record_files:
            return [], []
        now = self.env.now
        rows, air_rows = list(self.rows), list(self.air_rows)
        queued = [f for queue in self._queues.values() for f in queue]
        for f in sorted([*self._active.values(), *queued], key=lambda f: f.number):
            if f.flow is None:          # queued behind its user's file: nothing sent yet
                rows.append(self._row(f, 0.0))
                continue
            rows.append(self._row(f, self.airs[f.direction].moved(f.flow)))
            air_rows.extend(self._air_rows(f, f.flow.stretches, now))
        return rows, air_rows

    @property
    def offered_load(self) -> dict[str, float] | None:
        """FTP model 3's offered load by direction's name (None: full buffer)."""
        if self.settings.kind != "ftp3":
            return None
        return {d.value: load for d, load in self.settings.offered_load.items()}

    def carried(self, direction: Direction) -> tuple[np.ndarray, np.ndarray]:
        """Each cell's share of its blocks' time (the direction's) the files held since the
        traffic began (load_rows' block-seconds), and which cells have a covered user."""
        air = self.airs[direction]
        rows = [r for r in self.load_rows() if r[1] == direction.value]
        held = air.num_blocks * self._held_s(air, self.began, self.env.now)
        return np.array([r[8] for r in rows]) / held, np.array([r[3] > 0 for r in rows])

    def load_rows(self) -> list[tuple]:
        """Per cell and direction up to now, in order of direction then cell: its users,
        those covered, its files' arrival rate (1/s), the files arrived and ended, the bits
        delivered and the block-seconds its files held (of the direction's time), those of
        the files on the air so far included (the fluid model: none arrive, and they hold
        the load's share of the blocks all along); read without changing anything."""
        books = {key: list(book) for key, book in self.cells.items()}
        if self.settings.fluid:      # the files in their mean: the load, all along
            for (c, d), book in books.items():
                air = self.airs[d]
                book[6] = (self.terms.load[d][c] * air.num_blocks
                           * self._held_s(air, self.began, self.env.now))
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

