"""The link of a network of cells: every cell's band is whole resource blocks, handed out
per round by the scenario's allocator among the cell's clients of the round; transfers of
different cells on the same blocks at the same time interfere. A transfer's rate is
piecewise constant: the rates on the blocks of a transfer that starts or ends are recomputed
(scala_netsim.sim.network.air, to channel.network.transfer_rates' numbers), and a transfer ends when
the integral of its rate reaches its bits. Behind every cell a backhaul to the one server,
when the scenario has one: a latency and a bandwidth shared equally by the cell's transfers
crossing it at once (an upload crosses it after the air, a download before).

A cell with more of the round's clients than blocks grants each of them one block, client i
of the cell (in the demand's order) block i mod N_RB, and the clients granted one block take
turns on it, first come first served: a transfer starts when its block is free (the wait is
its client's idle time, as at a barrier, not part of the transfer) and holds it for its air
time (a download from the moment the server sends it, across the backhaul). The allocator's
shares are not used in such a cell. This stands for a slot scheduler: round robin would share
the block slot by slot, and the last transfer on a block would end at the same time.

That is the static scheduler (`scheduler: static`), whose blocks a client holds for the round,
idle or not. Under `round_robin` nothing is granted for the round: the air splits each cell's
blocks among the transfers in progress, instant by instant (scala_netsim.sim.network.air.Air.
add_shared), and a transfer's row records its blocks and power averaged over its air time.

It offers what the synchronous protocols ask of scala_netsim.sim.link.WirelessLink (rounds,
uploads, downloads, the grant and transfer books); each transfer row adds the time-averaged
SINR and interference of its air time and the time it spent on the backhaul."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import simpy

import channel
from channel import Direction
from scala_netsim.books.blocks import (
    AirRecord,
    AirSettings,
    air_columns,
    block_problems,
    turn_problems,
)
from scala_netsim.books.moves import Moves
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.sim.cell import Cell, NetworkView
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.link import Message, TransferLost
from scala_netsim.sim.network import schedulers
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.arq import Attempts
from scala_netsim.sim.network.backhaul import Backhaul
from scala_netsim.sim.network.fading import NetworkFading, TimeFades, blocks_of_time
from scala_netsim.sim.network.mobile import Mobile, Mobility
from scala_netsim.sim.network.nr import NrBlocks
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.rows import TransferBooks
from scala_netsim.sim.network.schedulers import Request
from scala_netsim.sim.network.settings import NetworkSettings
from scala_netsim.sim.network.traffic import Background, fluid_load, load_terms
from scala_netsim.sim.network.transfer import Stage, Transfer


class NetworkLink:
    """The network's up- and downlink (see the module's docstring)."""

    def __init__(self, env: simpy.Environment, cell: Cell, settings: NetworkSettings,
                 allocator: channel.BandwidthAllocator, model: channel.LinkModel,
                 log: EventLog, grant_rows: list[tuple] | None = None,
                 transfer_rows: list[tuple] | None = None,
                 air_rows: list[tuple] | None = None, fading: NetworkFading | None = None,
                 fade_rows: list[tuple] | None = None, drops: Drops | None = None,
                 mobile: Mobile | None = None) -> None:
        if cell.network is None:
            raise ValueError("a NetworkLink needs a cell of a network (Cell.network)")
        self.env, self.cell, self.settings = env, cell, settings
        self._per_instant = settings.per_instant        # (asked at every transfer)
        if model.outages and drops is None:
            raise ValueError(f"{type(model).__name__} loses transfers: the link needs the book "
                             f"of drops (drops=Drops())")
        #: a fixed-rate link's model (its rate and attempts: scala_netsim.sim.network.arq);
        #: None for adaptive rates
        self.arq = model if model.outages else None
        #: the book of drops where clients can be dropped (deadlines, over-selection): a
        #: transfer of a dropped client is cut wherever its bits are (`_cut`)
        self.drops = drops
        self.round = 0
        self.grant_rows: list[tuple] = [] if grant_rows is None else grant_rows
        self.transfer_rows: list[tuple] = [] if transfer_rows is None else transfer_rows
        #: the air record (air.csv, core.columns.AIR_COLUMNS): the blocks each transfer held
        #: over its air time
        self.air_rows: list[tuple] = [] if air_rows is None else air_rows
        #: block fading (scala_netsim.sim.network.fading; None: none), and the fading record
        #: (core.columns.FADING_COLUMNS): each transfer's |h|^2 to every cell
        self.fading = fading
        self.fade_rows: list[tuple] = [] if fade_rows is None else fade_rows
        #: every grant of a client's own blocks (core.columns.BLOCK_GRANT_COLUMNS), of a block
        #: taken in turns (SHARED_GRANT_COLUMNS), and every turn on such a block (TURN_COLUMNS)
        self.block_rows: list[tuple] = []
        self.shared_rows: list[tuple] = []
        self.turn_rows: list[tuple] = []
        #: the one owner of every client's gains and serving cell (fading posts its rows there)
        self.radio = RadioMap.of(cell)
        self._air = self._airs(fading is not None and fading.fading.per_time,
                               0 if mobile is None else len(cell.network.serving))
        self._backhaul = Backhaul(env, settings.backhaul)
        self._books = TransferBooks(env, log, settings, self.radio, self.transfer_rows,
                                    self.air_rows, self.fade_rows, mobile is not None)
        #: moving clients and their handovers (None: every client stands at its drop), and
        #: each client's transfers in flight (sent or asked, not recorded)
        self.mobility = (None if mobile is None
                         else Mobility(env, self.radio, mobile, self._handing_over))
        self._flying: dict[int, list[Transfer]] = {}
        self._nr_blocks = NrBlocks(self.radio, settings)
        #: the static scheduler: the round's grants (unused under a per-instant one)
        self._static = schedulers.Static(
            env, settings, self.radio, allocator,
            {d: model.allocation_radio(d) for d in Direction},
            None if settings.nr is None else self._nr_blocks.uplink_blocks, self.grant_rows,
            self.block_rows, self.shared_rows)
        #: other users' files on the airs, or their load (network.traffic; None: none)
        self.background = self._background(cell.network)
        if self.background is not None and self.mobility is not None:
            self._moving_floors(self.background)

    def _airs(self, fades_in_time: bool, moving: int) -> dict[Direction, Air]:
        """Each direction's air on the radio map, its per-instant scheduler (none under
        static: the round's grants); a transfer below the lowest MCS waits for its channel to
        change where it will (`fades_in_time`: the next fading block; the first `moving`
        rows of the map, clients that move: their next move, Air.moving)."""
        settings = self.settings
        airs = {d: Air(self.env, self.radio, settings.blocks[d], settings.block_hz,
                       settings.noise_w_per_hz(d) * settings.block_hz, d is Direction.UPLINK,
                       settings.interference, settings.frame,
                       None if settings.nr is None else settings.nr.tables[d], fades_in_time)
                for d in Direction}
        for d, air in airs.items():
            air.moving = moving
            scheduler = schedulers.per_instant(settings.scheduler, settings.blocks[d],
                                               air.quiet_rate, settings.pf_beta,
                                               settings.slot_s)
            if scheduler is not None:
                air.scheduler = scheduler
        return airs

    def best_snr_db(self, direction: Direction, client: int | None = None) -> np.ndarray:
        """(clients, blocks 1..N) each client's SNR a block with no interference (dB):
        scala_netsim.sim.network.nr.NrBlocks.best_snr_db."""
        return self._nr_blocks.best_snr_db(direction, client)

    def _cap(self, direction: Direction, k: int) -> int:
        """The most blocks client k's transfers use under round robin: all the cell's, but
        under the NR abstraction an upload's the number with the best goodput
        (NrBlocks.uplink_blocks)."""
        return self._nr_blocks.cap(direction, k)

    def _background(self, network: NetworkView) -> Background | None:
        """The network's other users' traffic on its airs (network.traffic), from now."""
        traffic = self.settings.traffic
        if network.users is None or traffic is None:
            return None
        first = len(network.serving)
        return Background(self.env, traffic, network.users, first, self._air,
                          self._background_request, self._share,
                          load_terms(self.radio, first, self.settings, traffic, self._cap))

    def _moving_floors(self, background: Background) -> None:
        """Under other users' load in its mean, a moving client's downlink floor follows its
        gains (Background.move, before the airs re-rate it) and the airs read it again."""
        radio = self.radio
        radio.on_move(lambda k: background.move(k, radio.large_scale(k),
                                                radio.serving_cell(k)))
        for d, air in self._air.items():
            air.floor_of = functools.partial(self._floor_of, d, background)

    @staticmethod
    def _floor_of(direction: Direction, background: Background, k: int, cell: int) -> float:
        return background.fluid_terms(direction, k, cell)[0]

    def _background_request(self, flow: Flow, direction: Direction, k: int) -> Request:
        """A background user's (row k's) request for blocks: a client's power, cap and
        large-scale gain (no fading with background traffic)."""
        return Request(flow, k, self.radio.serving_cell(k), self.radio.serving_gain(k),
                       lambda n: self.powers(direction, k, n), self._cap(direction, k))

    def _share(self, direction: Direction) -> float:
        """The share of the time `direction` has: 1 with paired bands, its frame's under TDD."""
        frame = self.settings.frame
        return 1.0 if frame is None else frame.share(direction)

    # --- what the protocols ask of a link ---------------------------------------------
    def stream_states(self) -> dict[str, dict[int, dict]]:
        """No random stream of its own; with moving clients their state on the map and
        their records (Mobility.state)."""
        return {} if self.mobility is None else {"mobility": {0: self.mobility.state()}}

    def load_stream_states(self, states: dict[str, dict[int, dict]]) -> None:
        if self.mobility is not None:
            self.mobility.load_state(states["mobility"][0])

    def begin_round(self, round_: int, demands: dict[Direction, channel.LinkDemand]) -> None:
        """The round begins: its fading, and under the static scheduler each cell's blocks
        handed out among its clients of the round (schedulers.Static.begin_round)."""
        self.round = round_
        self._release()
        if self.fading is not None:
            self.fading.begin_round(round_)
        if self.background is not None:     # its full-buffer files' stretches so far
            self.background.fold()
        if self.settings.per_instant:       # nothing held between transfers
            return
        self._static.begin_round(round_, demands)

    def begin_version(self, number: int) -> None:
        """An asynchronous run builds global version `number` from now: the round its
        records carry (and its fading rows')."""
        self.round = number
        self._release()
        if self.fading is not None:
            self.fading.begin_round(number)

    def _release(self) -> None:
        """Moving clients with nothing in flight go idle (Mobility.release)."""
        if self.mobility is not None:
            self.mobility.release({k for k, ts in self._flying.items() if ts})

    def assign(self, k: int, shares: dict[Direction, float], record: bool = True) -> None:
        """An asynchronous run's slot for client k: none (its air's per-instant scheduler)."""
        del k, shares, record

    @property
    def recorded_until(self) -> float:
        """The instant up to which the books hold every transfer: the earliest start of those
        not recorded yet (an asynchronous run stops with some in flight), else inf."""
        return min(self._books.open.values(), default=math.inf)

    @property
    def in_flight(self) -> int:
        """Transfers on the air or the backhaul now (an asynchronous run is saved only when
        none is: a network's transfer has no end known in advance to save); with moving
        clients every transfer sent and not recorded (one off the air in a handover's
        interruption, its grant's or HARQ's wait too)."""
        if self.mobility is not None:
            return sum(len(flying) for flying in self._flying.values())
        return (sum(air.in_progress for air in self._air.values())
                + self._backhaul.in_flight)

    def upload(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event:
        return self._transfer(message, kind, local_iter, Direction.UPLINK)

    def download(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event:
        return self._transfer(message, kind, local_iter, Direction.DOWNLINK)

    def problems(self) -> list[str]:
        """Broken invariants of the blocks handed out so far and of the turns taken on shared
        ones (block_problems, turn_problems), and of each direction's per-instant scheduler's
        decisions (schedulers.Scheduler.problems: proportional fair's book)."""
        blocks = {d.value: n for d, n in self.settings.blocks.items()}
        decisions = [f"{d.value}: {p}" for d in Direction if (s := self.scheduler(d)) is not None
                     for p in s.problems()]
        return (block_problems(self.block_rows, blocks)
                + turn_problems(self.shared_rows, self.turn_rows, self.block_rows, blocks)
                + decisions)

    def scheduler(self, direction: Direction) -> schedulers.Scheduler | None:
        """The per-instant scheduler of `direction`'s air (None under static)."""
        return self._air[direction].scheduler if self.settings.per_instant else None

    def band_grant_rows(self) -> list[tuple]:
        """The grants as (round, client, direction, Hz) with a block taken in turns counted
        once (client -1), for the round's sum over the band: the grant book
        (`grant_rows`) has one row per client, and the clients of a shared block use it one
        at a time."""
        block_hz = self.settings.block_hz
        rows = [(r, k, d, n * block_hz) for r, k, d, _, _, n in self.block_rows]
        shared = dict.fromkeys((r, d, c, b) for r, _, d, c, b in self.shared_rows)
        return rows + [(r, -1, d, block_hz) for r, d, _, _ in shared]

    def air_record(self) -> AirRecord:
        """The air book with what deriving its rates again needs: the blocks, the noise on a
        block in each direction, interference, the coupling gains."""
        s = self.settings
        return AirRecord(self.air_rows, AirSettings(
            {d.value: n for d, n in s.blocks.items()}, s.block_hz,
            {d.value: s.noise_w_per_hz(d) * s.block_hz for d in Direction}, s.interference,
            self.radio.coupling, s.frame,
            None if s.nr is None else {d.value: t for d, t in s.nr.tables.items()},
            self.fade_rows, "attempt" if self.arq is not None else "",
            *blocks_of_time(self.fading),
            *fluid_load(None if self.background is None else self.background.terms, s),
            moves=None if self.mobility is None else Moves(
                self.mobility.move_rows, self.mobility.mobile.coupling_at),
            moved_floor=None if self.background is None else self.background.terms.moved_floor),
            air_columns(s.per_instant, self.arq is not None))

    # --- the transfer: air, backhaul, and its record ---------------------------------------
    def power_w(self, direction: Direction, k: int, blocks: int) -> float:
        """What client k's transfer radiates on its `blocks` blocks (NetworkSettings.power_w,
        at its coupling gain to its serving cell)."""
        return self.settings.power_w(direction, self.radio.serving_gain(k), blocks)

    def powers(self, direction: Direction, k: int, blocks: int) -> tuple[float, float]:
        """What client k's transfer radiates on its `blocks` blocks and on each of them
        (NetworkSettings.powers)."""
        return self.settings.powers(direction, self.radio.serving_gain(k), blocks)

    def _transfer(self, message: Message, kind: EventKind, local_iter: int,
                  direction: Direction) -> simpy.Event:
        """The transfer's event; it is sent now, or on a block taken in turns when the block
        is free (and frees it when its air time is over). Where clients can be dropped a drop
        cuts it wherever it is (Transfer.cut)."""
        k = message.client_id
        if self.mobility is not None:      # connected (idle: the best cell re-selected)
            self.mobility.connect(k)
        t = Transfer(message, kind, local_iter, direction, self.radio.serving_cell(k),
                     self.radio.serving_gain(k), self.env.event(), self.env.now, k,
                     8.0 * message.payload_bytes)
        self._flying.setdefault(k, []).append(t)
        queue = self._static.turn(direction, k)
        if queue is None:
            self._send(t)
        else:
            turn, round_ = queue.request(), self.round
            t.stage, t.turn, block = Stage.TURN, turn, self._static.grant(direction, k)[0]

            def free(start: float) -> None:
                queue.release(turn)
                self.turn_rows.append((round_, direction.value, t.cell, block, k, start,
                                       self.env.now))
            t.free = free
            turn.callbacks.append(lambda _: self._send(t))
        if self.drops is None:
            return t.ended
        return self.drops.track(k, t.ended, lambda _: None, lambda: t.cut(
            self._air[direction], self.env.now, self._record), local_iter)

    def _send(self, t: Transfer) -> None:
        """Transfer t from now: its fading block and grant; up, the grant (K2), the air, its
        HARQ wait, then the backhaul; down, the backhaul, the air, its HARQ wait."""
        direction, k = t.direction, t.client
        t.sent, t.start = True, self.env.now
        if self.fading is not None:                # (none: its large-scale gain, as asked)
            t.fade, t.gain = self._faded(direction, k)
        if not self._per_instant:                  # the round's grant
            t.first, t.blocks, t.granted = self._static.grant(direction, k)
            t.power_w = self.power_w(direction, k, t.blocks)
        if self.arq is not None:                   # a fixed-rate transfer's attempts
            t.arq = Attempts(self.env, self._air[direction], t.bits, self.arq,
                             None if isinstance(t.fade, TimeFades) else t.fade, self.fading,
                             direction, k, self.radio)
        self._books.open[id(t)] = t.start
        t.backhaul = self._backhaul.pool(direction, t.cell)
        if direction is Direction.UPLINK:
            t.stage = Stage.GRANT
            self._granted(t)
        else:
            t.stage = Stage.BACKHAUL
            self._backhaul.cross(t.backhaul, t.bits, lambda s: self._join(t, s), t)

    def _granted(self, t: Transfer) -> None:
        """An upload joins the air when its grant comes: now, or under TDD K2 later, unless
        a drop cut it meanwhile (it then never joins the air)."""
        duplexing = self.settings.duplexing
        if duplexing is not None and duplexing.k2_s > 0:
            self.env.timeout(duplexing.k2_s).callbacks.append(
                lambda _: None if t.is_cut else self._join(t))
        else:
            self._join(t)

    def _join(self, t: Transfer, backhaul_s: float = 0.0) -> None:
        """Transfer t joins the air of its direction now (its fading row posted first: under
        fading blocks of time, the row of the block it joins in): on its grant, or asking the
        air's scheduler for blocks; with moving clients in its client's serving cell now,
        once its handover's interruption is over."""
        t.stage, direction, k = Stage.AIR, t.direction, t.client
        t.backhaul_s = backhaul_s
        if self.mobility is not None:
            wait = self.mobility.interruption_left(k)
            if wait > 0:               # (its client's handover holds it back: counted once)
                until = self.mobility.interrupted_until[k]
                if t.interrupted != until:
                    t.handovers += 1
                    t.interrupted = until
                t.stage = Stage.HANDOVER
                self.env.timeout(wait).callbacks.append(
                    lambda _: None if t.is_cut else self._join(t, backhaul_s))
                return
            t.cell = self.radio.serving_cell(k)
        if t.arq is None:
            flow = Flow(t.left, self.env.now, lambda f: self._air_over(t, f, backhaul_s))
        else:
            flow = t.arq.new_flow(lambda f: self._air_over(t, f, backhaul_s),
                                  lambda f: self._lost(t, f, backhaul_s))
        t.air = flow
        row = t.fade.begin(flow) if isinstance(t.fade, TimeFades) else t.fade
        if row is not None:
            self.radio.post(direction, k, row)
        gain, air = self.radio.faded(k, row), self._air[direction]
        if self._per_instant:               # the air's scheduler hands out the blocks
            floor_w, share = (0.0, 1.0) if self.background is None else (
                self.background.fluid_terms(direction, k, t.cell))
            air.request(Request(flow, k, t.cell, gain, lambda n: self.powers(direction, k, n),
                                self._cap(direction, k), floor_w, share))
        else:
            assert t.granted is not None     # (the round's grant: _send)
            air.add(flow, k, t.cell, t.granted, t.power_w, gain)

    def _air_over(self, t: Transfer, crossed: Flow, backhaul_s: float) -> None:
        """Its bits have crossed the air: its turn freed, then its HARQ wait (NrLink.tail_s:
        none with Shannon rates), then up the backhaul, or down recorded."""
        t.free(t.start)
        t.stage = Stage.HARQ
        tail_s = 0.0 if self.settings.nr is None else self.settings.nr.tail_s(crossed.tbler)
        if tail_s <= 0.0:
            self._decoded(t, crossed, backhaul_s)
            return
        self.env.timeout(tail_s).callbacks.append(
            lambda _: None if t.is_cut else self._decoded(t, crossed, backhaul_s))

    def _decoded(self, t: Transfer, crossed: Flow, backhaul_s: float) -> None:
        if t.direction is Direction.UPLINK:
            t.stage = Stage.BACKHAUL
            if t.legs:                     # (handed over: up its last cell's backhaul)
                t.backhaul = self._backhaul.pool(t.direction, t.cell)
            self._backhaul.cross(t.backhaul, t.bits, lambda s: self._done(t, crossed, s), t)
        else:
            self._done(t, crossed, backhaul_s)

    def _done(self, t: Transfer, crossed: Flow, backhaul_s: float) -> None:
        t.stage = Stage.DONE
        self._record(t, crossed, backhaul_s)
        t.ended.succeed()

    def _lost(self, t: Transfer, flow: Flow, backhaul_s: float) -> None:
        """Every attempt of a fixed-rate transfer failed: recorded whole, and lost."""
        t.free(t.start)
        t.stage = Stage.DONE
        self._record(t, flow, backhaul_s, (t.message.payload_bytes, t.bits))
        t.ended.fail(TransferLost(t.client, t.kind.value, self.round))

    def _record(self, t: Transfer, air: Flow | None, backhaul_s: float,
                done: tuple[int, float] | None = None) -> None:
        flying = self._flying.get(t.client)
        if flying is not None and t in flying:
            flying.remove(t)
            if not flying and self.mobility is not None:
                self.mobility.quiet(t.client)
        self._books.record(t, air, backhaul_s, self.round, done)

    def _handing_over(self, k: int, target: int, interruption_s: float) -> None:
        """Client k is handed over to cell `target` now, its data interrupted for
        `interruption_s` (Mobility, before the map changes):
        each of its transfers in flight counts it; one on the air leaves it with the bits it
        moved (its air time so far a leg of its own, in its cell), and after the
        interruption joins the target cell's air with the rest (Xn forwarding: `_join`);
        one waiting for its grant or on the backhaul joins there when it comes (a download's
        backhaul is its source cell's); one in its HARQ wait or up the backhaul is past the
        air."""
        for t in self._flying.get(k, ()):
            t.handovers += 1
            t.interrupted = self.env.now + interruption_s
            if t.stage is not Stage.AIR or t.air is None:
                continue
            flow, air = t.air, self._air[t.direction]
            moved = air.remove(flow)
            if moved is not None:              # (None: it was waiting for blocks)
                if flow.stretches and math.isnan(flow.stretches[-1][3]):
                    flow.stretches[-1][3] = self.env.now      # (parked: its last stretch)
                t.legs.append((t.cell, flow))
                t.left = max(t.left - moved, 0.0)   # (a sliver the clock's rounding left)
            t.air, t.stage = None, Stage.HANDOVER
            self.env.timeout(interruption_s).callbacks.append(self._rejoin(t))

    def _rejoin(self, t: Transfer) -> Callable[[simpy.Event], None]:
        """What joins transfer t to the air again after its handover, unless a drop cut it."""
        return lambda _: None if t.is_cut else self._join(t, t.backhaul_s)

    def _faded(self, direction: Direction, k: int) -> tuple[np.ndarray | TimeFades, float]:
        """Under fading, client k's transfer's fading block on every link (its blocks of time,
        whose rows come as it is on the air) and its gain to its serving cell (large-scale
        times its fade; the large-scale alone under blocks of time). Without fading a transfer
        keeps the large-scale gain it was asked with (`_send` does not ask)."""
        assert self.fading is not None
        if self.fading.fading.per_time:
            return (TimeFades(self.env, self.fading, self.radio, direction, k),
                    self.radio.serving_gain(k))
        fade = self.fading.row(direction, k)
        return fade, self.radio.faded(k, fade)
