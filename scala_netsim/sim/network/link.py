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

import math
from collections.abc import Callable

import numpy as np
import simpy

import channel
from channel import Direction
from scala_netsim.books.blocks import AirRecord, AirSettings, block_problems, turn_problems
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.link import Message, TransferLost
from scala_netsim.sim.network import schedulers
from scala_netsim.sim.network.air import Air
from scala_netsim.sim.network.arq import Attempts
from scala_netsim.sim.network.backhaul import Backhaul
from scala_netsim.sim.network.fading import NetworkFading, TimeFades, blocks_of_time
from scala_netsim.sim.network.flight import Flight, cut
from scala_netsim.sim.network.nr import NrBlocks
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.rows import air_rows
from scala_netsim.sim.network.schedulers import Request
from scala_netsim.sim.network.settings import NetworkSettings


class NetworkLink:
    """The network's up- and downlink (see the module's docstring)."""

    def __init__(self, env: simpy.Environment, cell: Cell, settings: NetworkSettings,
                 allocator: channel.BandwidthAllocator, model: channel.LinkModel,
                 log: EventLog, grant_rows: list[tuple] | None = None,
                 transfer_rows: list[tuple] | None = None,
                 air_rows: list[tuple] | None = None, fading: NetworkFading | None = None,
                 fade_rows: list[tuple] | None = None, drops: Drops | None = None) -> None:
        if cell.network is None:
            raise ValueError("a NetworkLink needs a cell of a network (Cell.network)")
        self.env, self.cell, self.settings, self.allocator, self.log = (
            env, cell, settings, allocator, log)
        self.net = cell.network
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
        self._blocks: dict[Direction, dict[int, tuple[int, int]]] = {d: {} for d in Direction}
        #: the round's clients that take turns on a block, with the block's queue
        self._turns: dict[Direction, dict[int, simpy.Resource]] = {d: {} for d in Direction}
        self._radio = {d: model.allocation_radio(d) for d in Direction}
        #: the one owner of every client's gains and serving cell (fading posts its rows there)
        self.radio = RadioMap.of(cell)
        self._air = {d: Air(env, self.radio, settings.blocks[d],
                            settings.block_hz, settings.noise_w_per_hz(d) * settings.block_hz,
                            d is Direction.UPLINK, settings.interference, settings.frame,
                            None if settings.nr is None else settings.nr.tables[d],
                            fading is not None and fading.fading.per_time)
                     for d in Direction}
        for d, air in self._air.items():     # (under static, none: the grants of the round)
            scheduler = schedulers.per_instant(settings.scheduler, settings.blocks[d],
                                               air.quiet_rate, settings.pf_beta,
                                               settings.slot_s)
            if scheduler is not None:
                air.scheduler = scheduler
        self._backhaul = Backhaul(env, settings.backhaul)
        #: each transfer started and not recorded yet (by its record's id): its start
        self._open: dict[int, float] = {}
        self._nr_blocks = NrBlocks(self.radio, settings)

    def best_snr_db(self, direction: Direction, client: int | None = None) -> np.ndarray:
        """(clients, blocks 1..N) each client's SNR a block with no interference (dB):
        scala_netsim.sim.network.nr.NrBlocks.best_snr_db."""
        return self._nr_blocks.best_snr_db(direction, client)

    def _cap(self, direction: Direction, k: int) -> int:
        """The most blocks client k's transfers use under round robin: all the cell's, but
        under the NR abstraction an upload's the number with the best goodput
        (NrBlocks.uplink_blocks)."""
        total = self.settings.blocks[direction]
        if self.settings.nr is None or direction is Direction.DOWNLINK:
            return total
        return self._nr_blocks.uplink_blocks(k, total)

    # --- what the protocols ask of a link ---------------------------------------------
    def stream_states(self) -> dict[str, dict[int, dict]]:
        return {}                               # no random stream of its own

    def load_stream_states(self, states: dict[str, dict[int, dict]]) -> None:
        del states

    def begin_round(self, round_: int, demands: dict[Direction, channel.LinkDemand]) -> None:
        """Hand out each cell's blocks among its clients of the round, per direction: the
        allocator's shares of the cell's band made whole blocks (channel.network.whole_blocks),
        contiguous from block 0 in the order of the demand; under NR an upload's share is first
        capped at the blocks it uses (NrBlocks.uplink_blocks) and the blocks placed by those,
        what the caps leave idle above the last client's (docs/model/network.md, issue 61); in
        a cell with more clients than blocks, one block each, taken in turns (`_share_blocks`)."""
        self.round = round_
        if self.fading is not None:
            self.fading.begin_round(round_)
        if self.settings.per_instant:       # nothing held between transfers
            return
        block_hz = self.settings.block_hz
        for direction, demand in demands.items():
            total = self.settings.blocks[direction]
            demand = demand.with_radio(self._radio[direction])
            held = self._blocks[direction] = {}
            self._turns[direction] = {}
            serving = self.radio.serving[demand.client_ids]
            for c in np.unique(serving).tolist():
                mine = serving == c
                if np.count_nonzero(mine) > total:
                    self._share_blocks(direction, c, demand.client_ids[mine].tolist())
                    continue
                part = demand.subset(mine)
                shares = self.allocator.allocate_hz(total * block_hz, part)
                blocks = channel.network.whole_blocks(shares, total, block_hz)
                if self.settings.nr is not None and direction is Direction.UPLINK:
                    blocks = np.array([self._nr_blocks.uplink_blocks(k, n) for k, n in zip(
                        part.client_ids.tolist(), blocks.tolist(), strict=True)], np.int64)
                first = np.concatenate([[0], np.cumsum(blocks)[:-1]])
                for k, f, n in zip(part.client_ids.tolist(), first.tolist(), blocks.tolist(),
                                   strict=True):
                    held[k] = (f, n)
                    self.grant_rows.append((round_, k, direction.value, n * block_hz))
                    self.block_rows.append((round_, k, direction.value, c, f, n))

    def _share_blocks(self, direction: Direction, c: int, clients: list[int]) -> None:
        """Cell c's clients, more than its blocks: client i gets block i mod N_RB, one queue
        (a SimPy resource) a block for the round."""
        total = self.settings.blocks[direction]
        queues = [simpy.Resource(self.env) for _ in range(total)]
        for i, k in enumerate(clients):
            block = i % total
            self._blocks[direction][k] = (block, 1)
            self._turns[direction][k] = queues[block]
            self.grant_rows.append((self.round, k, direction.value, self.settings.block_hz))
            self.shared_rows.append((self.round, k, direction.value, c, block))

    def begin_version(self, number: int) -> None:
        """An asynchronous run builds global version `number` from now: the round its
        records carry (and its fading rows')."""
        self.round = number
        if self.fading is not None:
            self.fading.begin_round(number)

    def assign(self, k: int, shares: dict[Direction, float], record: bool = True) -> None:
        """An asynchronous run's slot for client k: none (its air's per-instant scheduler)."""
        del k, shares, record

    @property
    def recorded_until(self) -> float:
        """The instant up to which the books hold every transfer: the earliest start of those
        not recorded yet (an asynchronous run stops with some in flight), else inf."""
        return min(self._open.values(), default=math.inf)

    @property
    def in_flight(self) -> int:
        """Transfers on the air or the backhaul now (an asynchronous run is saved only when
        none is: a network's transfer has no end known in advance to save)."""
        return (sum(air.in_progress for air in self._air.values())
                + self._backhaul.in_flight)

    def upload(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event:
        return self._transfer(message, kind, local_iter, Direction.UPLINK)

    def download(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event:
        return self._transfer(message, kind, local_iter, Direction.DOWNLINK)

    def problems(self) -> list[str]:
        """Broken invariants of the blocks handed out so far and of the turns taken on shared
        ones (block_problems, turn_problems)."""
        blocks = {d.value: n for d, n in self.settings.blocks.items()}
        return (block_problems(self.block_rows, blocks)
                + turn_problems(self.shared_rows, self.turn_rows, self.block_rows, blocks))

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
            *blocks_of_time(self.fading)))

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
        """The transfer's event; it starts now, or on a block taken in turns when the block
        is free (and frees it when its air time is over). Where clients can be dropped its
        Flight says where its bits are, so that a drop cuts it there (`_cut`)."""
        ended = self.env.event()
        k = message.client_id
        flight = None if self.drops is None else Flight(self.env.now)
        queue = self._turns[direction].get(k)
        if queue is None:
            self._send(message, kind, local_iter, direction, ended, lambda _: None, flight)
        else:
            turn, round_ = queue.request(), self.round
            block, c = self._blocks[direction][k][0], self.radio.serving_cell(k)

            def free(start: float) -> None:
                queue.release(turn)
                self.turn_rows.append((round_, direction.value, c, block, k, start,
                                       self.env.now))
            turn.callbacks.append(lambda _: self._send(message, kind, local_iter, direction,
                                                       ended, free, flight))
            if flight is not None:
                flight.turn, flight.free = turn, free
        if self.drops is None or flight is None:
            return ended
        return self.drops.track(k, ended, lambda _: None, lambda: self._cut(
            flight, message, kind, local_iter, direction), local_iter)

    def _joiner(self, direction: Direction, k: int, c: int, gain: float,
                fade: np.ndarray | TimeFades | None
                ) -> tuple[Callable[[Flow], None], int, int, float]:
        """How client k's transfer joins the air of `direction` (its fading row set first:
        under fading blocks of time, the row of the block it joins in), its first block,
        blocks and power (-1, 0, NaN under round robin: its stretches say)."""
        air = self._air[direction]
        if self.settings.per_instant:       # the air's scheduler hands out the blocks
            first, blocks, power_w = -1, 0, math.nan
            powers, cap = (lambda n: self.powers(direction, k, n)), self._cap(direction, k)

            def add(flow: Flow, gain: float) -> None:
                air.request(Request(flow, k, c, gain, powers, cap))
        else:
            first, blocks = self._blocks[direction][k]
            power_w = self.power_w(direction, k, blocks)

            def add(flow: Flow, gain: float) -> None:
                air.add(flow, k, c, first, blocks, power_w, gain)

        def join(flow: Flow) -> None:
            row = fade.begin(flow) if isinstance(fade, TimeFades) else fade
            if row is not None:
                self.radio.post(direction, k, row)
            add(flow, self.radio.faded(k, row))
        return join, first, blocks, power_w

    def _send(self, message: Message, kind: EventKind, local_iter: int, direction: Direction,
              ended: simpy.Event, free: Callable[[float], None],
              flight: Flight | None = None) -> None:
        """The transfer from now: up, the air then the backhaul; down, the backhaul then the
        air; `free(its start)` when its air time is over; `ended` fires when it has crossed
        both. `flight` (clients can be dropped) follows it."""
        k, start, payload_bytes = message.client_id, self.env.now, message.payload_bytes
        c = self.radio.serving_cell(k)
        fade, gain = self._faded(direction, k)
        add, first, blocks, power_w = self._joiner(direction, k, c, gain, fade)
        bits = 8.0 * payload_bytes
        arq = None if self.arq is None else Attempts(   # a fixed-rate transfer's attempts
            self.env, self._air[direction], bits, self.arq,
            None if isinstance(fade, TimeFades) else fade, self.fading, direction, k,
            self.radio)
        info = (start, local_iter, k, kind, payload_bytes, c, direction, first, blocks, power_w,
                gain, fade, arq)
        self._open[id(info)] = start
        backhaul = self._backhaul.pool(direction, c)
        join = add
        if flight is not None:
            flight.info = info

            def join(flow: Flow) -> None:
                flight.air = flow
                add(flow)

        def record(crossed: Flow, backhaul_s: float) -> None:
            if flight is not None:
                flight.done = True
            self._record(info, crossed, backhaul_s)
            ended.succeed()

        def lost(flow: Flow, backhaul_s: float) -> None:   # every attempt failed
            free(start)
            if flight is not None:
                flight.done = True
            self._record(info, flow, backhaul_s, (payload_bytes, bits))
            ended.fail(TransferLost(k, kind.value, self.round))

        def on_air(crossed: Callable[[Flow], None], backhaul_s: float = 0.0) -> Flow:
            if arq is None:
                return Flow(bits, self.env.now, crossed)
            return arq.new_flow(crossed, lambda flow: lost(flow, backhaul_s))

        if direction is Direction.UPLINK:
            def after_air(crossed: Flow) -> None:
                free(start)
                self._after_harq(crossed, lambda: self._backhaul.cross(
                    backhaul, bits, lambda s: record(crossed, s), flight), flight)
            self._granted(lambda: join(on_air(after_air)), flight)
        else:
            def after_downlink_air(crossed: Flow, backhaul_s: float) -> None:
                free(start)
                self._after_harq(crossed, lambda: record(crossed, backhaul_s), flight)

            def after_backhaul(backhaul_s: float) -> None:
                join(on_air(lambda crossed: after_downlink_air(crossed, backhaul_s),
                            backhaul_s))
            self._backhaul.cross(backhaul, bits, after_backhaul, flight)

    def _faded(self, direction: Direction,
               k: int) -> tuple[np.ndarray | TimeFades | None, float]:
        """Client k's transfer's fading block on every link (None: no fading; its blocks of
        time, whose rows come as it is on the air) and its gain to its serving cell
        (large-scale times its fade; the large-scale alone under blocks of time)."""
        if self.fading is None:
            return None, self.radio.serving_gain(k)
        if self.fading.fading.per_time:
            return (TimeFades(self.env, self.fading, self.radio, direction, k),
                    self.radio.serving_gain(k))
        fade = self.fading.row(direction, k)
        return fade, self.radio.faded(k, fade)

    def _granted(self, then: Callable[[], None], flight: Flight | None) -> None:
        """`then()` when an upload's grant comes: now, or under TDD K2 later, unless a drop
        cut the transfer meanwhile (`flight`: it then never joins the air)."""
        duplexing = self.settings.duplexing
        if duplexing is not None and duplexing.k2_s > 0:
            self.env.timeout(duplexing.k2_s).callbacks.append(
                lambda _: None if flight is not None and flight.cut else then())
        else:
            then()

    def _after_harq(self, crossed: Flow, then: Callable[[], None],
                    flight: Flight | None = None) -> None:
        """`then()` once the transfer's last transport block has been decoded: at once with
        Shannon rates, else after its expected HARQ retransmissions (NrLink.tail_s); not
        where a drop has cut the transfer meanwhile."""
        tail_s = 0.0 if self.settings.nr is None else self.settings.nr.tail_s(crossed.tbler)
        if tail_s <= 0.0:
            then()
            return
        self.env.timeout(tail_s).callbacks.append(
            lambda _: None if flight is not None and flight.cut else then())

    def _cut(self, flight: Flight, message: Message, kind: EventKind, local_iter: int,
             direction: Direction) -> None:
        """A drop cuts the transfer now (scala_netsim.sim.network.flight.cut)."""
        k = message.client_id
        cut(flight, self._air[direction], self.env.now,
            (flight.start, local_iter, k, kind, message.payload_bytes,
             self.radio.serving_cell(k), direction, -1, 0, math.nan,
             self.radio.serving_gain(k), None, None),
            self._record)

    def _fade_record(self, index: int, fade: np.ndarray | TimeFades | None,
                     arq: Attempts | None, k: int, gain: float) -> float:
        """The transfer's rows of the fading record (its own row, or each attempt's; none for
        blocks of time); -> its gain to its serving cell c as it ended (large-scale times the fade
        of its last attempt or block; `gain` where that is its only one)."""
        last = None
        if isinstance(fade, TimeFades):     # (its rows are drawn again, not recorded)
            fade.stop()
            last = fade.last
        elif arq is not None:
            self.fade_rows.extend(arq.fade_rows(index))
            last = arq.fades[-1] if arq.fades else None
        elif fade is not None:
            self.fade_rows.extend((index, cell, h2) for cell, h2 in enumerate(fade.tolist()))
        return gain if last is None else self.radio.faded(k, last)

    def _record(self, info: tuple, air: Flow | None, backhaul_s: float,
                done: tuple[int, float] | None = None) -> None:
        """The transfer's rows of the link's books and its event: the air's mean rate (bits
        over air time), its time-averaged SINR and interference, the backhaul's time; the
        blocks it held over its air time. `done` (a drop cut it): the bytes and the bits it
        got through the air; `air` None, or never on the air, where it got none."""
        (start, local_iter, k, kind, payload_bytes, c, direction, first, blocks, power_w,
         gain, fade, arq) = info
        bits = 8.0 * payload_bytes if done is None else done[1]
        index = len(self.log)
        self._open.pop(id(info), None)
        if air is not None and math.isnan(air.end):     # cut while waiting for a block
            air = None
        rate = sinr = interference_w = math.nan
        if air is None:
            blocks, power_w = 0, math.nan
        else:
            air_s = air.held_s      # (its direction's symbols' time, under TDD)
            rate, sinr, interference_w = air.rate, air.sinr, air.interference_w
            if air_s > 0:
                rate = bits / air_s
                if air.varied:   # else the last values, exactly (not an average of equal ones)
                    # (over the time it held blocks: parked, it had no SINR)
                    held_s = air_s if math.isnan(air.blocks_s) else air.blocks_s
                    sinr = air.sinr_area / held_s
                    interference_w = air.interference_area / held_s
            rows, blocks, power_w, start = air_rows(index, air, c, direction, first, blocks,
                                                    power_w, start, arq)
            self.air_rows.extend(rows)
        attempts = 1
        if arq is not None:     # its fixed rate, and what a drop cut records as sent
            attempts, rate = arq.attempt, math.nan if air is None else arq.rate_bps
            if done is not None:
                done = (arq.done_bytes(payload_bytes, self.env.now), math.nan)
        interference_dbm = (10.0 * math.log10(interference_w) + 30.0 if interference_w > 0
                            else -math.inf)
        gain = self._fade_record(index, fade, arq, k, gain)
        row: tuple = (index, blocks * self.settings.block_hz, rate, attempts, gain, power_w,
                      10.0 * math.log10(sinr), interference_dbm, backhaul_s)
        nr = self.settings.nr
        if nr is not None:    # NR_TRANSFER_COLUMNS: the MCS and TBLER over the time it sent
            slot_s = nr.tables[direction].slot_s
            sending = 0.0 if air is None else air.sending_s
            harq_s = 0.0 if air is None else nr.tail_s(air.tbler)
            if done is not None and air is not None:    # the part it waited before the cut
                harq_s = min(harq_s, self.env.now - air.end)
            row += ((air.mcs_area / sending, air.tbler_area / sending)
                    if air is not None and sending > 0 else (math.nan, math.nan)) + (
                sending / slot_s, harq_s)
        self.transfer_rows.append(row)
        if done is None:
            self.log.record(start, self.env.now, self.round, local_iter, k, kind,
                            payload_bytes)
        else:
            self.log.record_cut(start, self.env.now, self.round, local_iter, k, kind,
                                done[0])
