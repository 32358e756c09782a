"""The link of a network of cells: every cell's band is whole resource blocks, handed out
per round by the scenario's allocator among the cell's clients of the round; transfers of
different cells on the same blocks at the same time interfere. A transfer's rate is
piecewise constant: the rates on the blocks of a transfer that starts or ends are recomputed
(scala_netsim.sim.air, to channel.network.transfer_rates' numbers), and a transfer ends when
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
blocks among the transfers in progress, instant by instant (scala_netsim.sim.air.Air.
add_shared), and a transfer's row records its blocks and power averaged over its air time.

It offers what the synchronous protocols ask of scala_netsim.sim.link.WirelessLink (rounds,
uploads, downloads, the grant and transfer books); each transfer row adds the time-averaged
SINR and interference of its air time and the time it spent on the backhaul."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

import channel
from channel import Direction
from channel.nr_link import LinkTables
from channel.tdd import TddFrame
from scala_netsim.books.blocks import (
    AirRecord,
    AirSettings,
    block_problems,
    fades_by_event,
    turn_problems,
)
from scala_netsim.books.duplexing import Duplexing
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.sim.air import Air, Shared
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.link import Message
from scala_netsim.sim.network_fading import NetworkFading
from scala_netsim.sim.pool import Flow, Pool, Rated


@dataclass(frozen=True)
class NrLink:
    """The NR link abstraction of a network (channel.nr_link): each direction's lookups, the
    most transmissions of a transport block and the HARQ round trip (s)."""

    tables: dict[Direction, LinkTables]
    max_transmissions: int
    harq_rtt_s: float
    mcs_table: str = "256qam"

    def tail_s(self, tbler: float) -> float:
        """The expected wait of a transfer's last transport block for its retransmissions:
        the round trip times sum_{i=1}^{H-1} TBLER^i (channel.nr_link)."""
        if not tbler > 0:
            return 0.0
        return self.harq_rtt_s * channel.nr_link.harq_tail_slots(tbler, self.max_transmissions)


@dataclass(frozen=True)
class NetworkSettings:
    """What the network's link needs beyond the cells: the blocks of each direction's band,
    a block's width, the noise PSD, the powers, power control, interference, the backhaul."""

    blocks: dict[Direction, int]
    block_hz: float
    noise_psd_w_per_hz: float            # at the base station: the uplink's receiver
    client_tx_power_w: float
    bs_tx_power_w: float
    interference: bool = True
    power_control: tuple[float, float] | None = None     # (P0 dBm, alpha)
    backhaul: tuple[float, float] | None = None          # (latency s, bandwidth bit/s)
    downlink_noise_psd_w_per_hz: float | None = None     # at the client; None: the same
    duplexing: Duplexing | None = None   # a TDD frame and K2; None: paired bands
    nr: NrLink | None = None             # the NR link abstraction; None: Shannon rates
    #: `static`: each client's blocks granted for the round; `round_robin`: split instant by
    #: instant among the transfers in progress (scala_netsim.sim.air)
    scheduler: str = "static"

    @property
    def frame(self) -> TddFrame | None:
        return None if self.duplexing is None else self.duplexing.frame

    def noise_w_per_hz(self, direction: Direction) -> float:
        """The noise PSD at the receiver of `direction` (its noise figure included)."""
        if direction is Direction.DOWNLINK and self.downlink_noise_psd_w_per_hz is not None:
            return self.downlink_noise_psd_w_per_hz
        return self.noise_psd_w_per_hz


class NetworkLink:
    """The network's up- and downlink (see the module's docstring)."""

    def __init__(self, env: simpy.Environment, cell: Cell, settings: NetworkSettings,
                 allocator: channel.BandwidthAllocator, model: channel.LinkModel,
                 log: EventLog, grant_rows: list[tuple] | None = None,
                 transfer_rows: list[tuple] | None = None,
                 air_rows: list[tuple] | None = None, fading: NetworkFading | None = None,
                 fade_rows: list[tuple] | None = None) -> None:
        if cell.network is None:
            raise ValueError("a NetworkLink needs a cell of a network (Cell.network)")
        self.env, self.cell, self.settings, self.allocator, self.log = (
            env, cell, settings, allocator, log)
        self.net = cell.network
        self.drops: Drops | None = None         # nothing is cut short in a network (yet)
        self.round = 0
        self.grant_rows: list[tuple] = [] if grant_rows is None else grant_rows
        self.transfer_rows: list[tuple] = [] if transfer_rows is None else transfer_rows
        #: the air record (air.csv, core.columns.AIR_COLUMNS): the blocks each transfer held
        #: over its air time
        self.air_rows: list[tuple] = [] if air_rows is None else air_rows
        #: block fading (scala_netsim.sim.network_fading; None: none), and the fading record
        #: (core.columns.FADING_COLUMNS): each transfer's |h|^2 to every cell
        self.fading = fading if fading is not None and fading.fading.fades else None
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
        coupling = self.net.coupling_linear   # (each air its own, rows faded, with fading)
        self._air = {d: Air(env, coupling if self.fading is None else coupling.copy(),
                            settings.blocks[d],
                            settings.block_hz, settings.noise_w_per_hz(d) * settings.block_hz,
                            d is Direction.UPLINK, settings.interference, settings.frame,
                            None if settings.nr is None else settings.nr.tables[d])
                     for d in Direction}
        self._backhaul: dict[tuple[Direction, int], Pool] = {}
        #: under the NR abstraction, each client's uplink goodput on 1..N blocks, quiet
        self._goodput: dict[int, np.ndarray] = {}
        if settings.nr is not None:
            self._refuse_undecodable()

    def best_snr_db(self, direction: Direction, client: int | None = None) -> np.ndarray:
        """(clients, blocks 1..N) each client's SNR a block on its serving cell with n blocks
        and no interference (dB): on the uplink its power (power_w) spread over them, on the
        downlink the base station's a block, the same for every n. One client's row alone
        where `client` is given."""
        s, gain = self.settings, np.asarray(self.cell.gain_linear, float)
        if client is not None:
            gain = gain[[client]]
        n = np.arange(1, s.blocks[direction] + 1, dtype=float)
        noise_w = s.noise_w_per_hz(direction) * s.block_hz
        if direction is Direction.DOWNLINK:
            per_block_w = np.full((len(gain), len(n)), s.bs_tx_power_w / s.blocks[direction])
        elif s.power_control is None:
            per_block_w = s.client_tx_power_w / n[None, :] + np.zeros((len(gain), 1))
        else:
            p0_dbm, alpha = s.power_control
            dbm = channel.nr.uplink_tx_power_dbm(-10.0 * np.log10(gain)[:, None], n[None, :],
                                                 p0_dbm, alpha,
                                                 float(channel.w_to_dbm(s.client_tx_power_w)))
            per_block_w = channel.dbm_to_w(dbm) / n[None, :]
        return 10.0 * np.log10(per_block_w * gain[:, None] / noise_w)

    def _uplink_blocks(self, k: int, granted: int) -> int:
        """Under the NR link abstraction, the blocks a client's uploads use of the `granted`:
        the number (at most those) whose goodput with no interference is the highest, its
        power spread over them: a power-limited client at the cell edge sends on fewer
        blocks at a decodable SINR rather than on all at none (the largest such number
        where several give the same goodput)."""
        goodput = self._goodput.get(k)
        if goodput is None:
            assert self.settings.nr is not None
            tables = self.settings.nr.tables[Direction.UPLINK]
            snr = 10.0 ** (self.best_snr_db(Direction.UPLINK, k)[0] / 10.0)
            goodput = self._goodput[k] = np.array(
                [tables.goodput_bps(np.full(n, snr[n - 1])) for n in range(1, len(snr) + 1)])
        best = goodput[:granted]
        return int(np.flatnonzero(best == best.max())[-1]) + 1

    def _cap(self, direction: Direction, k: int) -> int:
        """The most blocks client k's transfers use under round robin: all the cell's, but
        under the NR abstraction an upload's the number with the best goodput
        (`_uplink_blocks`)."""
        total = self.settings.blocks[direction]
        if self.settings.nr is None or direction is Direction.DOWNLINK:
            return total
        return self._uplink_blocks(k, total)

    def _refuse_undecodable(self) -> None:
        """Under the NR link abstraction every client must decode some MCS on some number of
        blocks with no interference, in each direction: else its transfers would never end.
        ValueError naming the first such clients at the drop."""
        assert self.settings.nr is not None
        for direction, tables in self.settings.nr.tables.items():
            snr_db = self.best_snr_db(direction)
            lowest = tables.lowest_sinr_db()[1:]
            never = np.flatnonzero(~(snr_db >= lowest[None, :]).any(axis=1))
            if len(never):
                best = snr_db[never].max(axis=1)
                names = ", ".join(f"{k} ({b:.1f} dB)" for k, b in
                                  zip(never[:5].tolist(), best[:5].tolist(), strict=True))
                raise ValueError(
                    f"network.link_abstraction: nr: {len(never)} client(s) can decode no MCS "
                    f"of the {self.settings.nr.mcs_table} table on the {direction.value} even "
                    f"without interference, on any number of blocks (best SNR a block): "
                    f"{names}; the table's lowest MCS needs {lowest.min():.2f} dB at "
                    f"bler_target {tables.bler_target:g}. More power, the 64qam table, a "
                    f"higher bler_target or a smaller layout.isd_m would let them")

    # --- what the protocols ask of a link ---------------------------------------------
    def stream_states(self) -> dict[str, dict[int, dict]]:
        return {}                               # no random stream of its own

    def load_stream_states(self, states: dict[str, dict[int, dict]]) -> None:
        del states

    def begin_round(self, round_: int, demands: dict[Direction, channel.LinkDemand]) -> None:
        """Hand out each cell's blocks among its clients of the round, per direction: the
        allocator's shares of the cell's band made whole blocks (channel.network.whole_blocks),
        contiguous from block 0 in the order of the demand; in a cell with more clients than
        blocks, one block each, taken in turns (`_share_blocks`)."""
        self.round = round_
        if self.fading is not None:
            self.fading.begin_round(round_)
        if self.settings.scheduler == "round_robin":   # nothing held between transfers
            return
        block_hz = self.settings.block_hz
        for direction, demand in demands.items():
            total = self.settings.blocks[direction]
            demand = demand.with_radio(self._radio[direction])
            held = self._blocks[direction] = {}
            self._turns[direction] = {}
            serving = self.net.serving[demand.client_ids]
            for c in np.unique(serving).tolist():
                mine = serving == c
                if np.count_nonzero(mine) > total:
                    self._share_blocks(direction, c, demand.client_ids[mine].tolist())
                    continue
                part = demand.subset(mine)
                shares = self.allocator.allocate_hz(total * block_hz, part)
                blocks = channel.network.whole_blocks(shares, total, block_hz)
                if self.settings.nr is not None and direction is Direction.UPLINK:
                    blocks = np.array([self._uplink_blocks(k, n) for k, n in zip(
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
            self.net.coupling_linear, s.frame,
            None if s.nr is None else {d.value: t for d, t in s.nr.tables.items()},
            fades_by_event(self.fade_rows, self.net.coupling_linear.shape[1])),
            self.fade_rows)

    # --- the transfer: air, backhaul, and its record ---------------------------------------
    def power_w(self, direction: Direction, k: int, blocks: int) -> float:
        """What client k's transfer radiates on its `blocks` blocks: on the uplink the
        client's power (fixed, or by open-loop power control at its coupling loss to its
        serving cell), on the downlink the base station's power spread over the whole band."""
        s = self.settings
        if direction is Direction.DOWNLINK:
            return s.bs_tx_power_w * blocks / s.blocks[direction]
        if s.power_control is None:
            return s.client_tx_power_w
        p0_dbm, alpha = s.power_control
        loss_db = -10.0 * math.log10(float(self.cell.gain_linear[k]))
        dbm = channel.nr.uplink_tx_power_dbm(loss_db, blocks, p0_dbm, alpha,
                                             float(channel.w_to_dbm(s.client_tx_power_w)))
        return float(channel.dbm_to_w(dbm))

    def powers(self, direction: Direction, k: int, blocks: int) -> tuple[float, float]:
        """What client k's transfer radiates on its `blocks` blocks (`power_w`) and on each
        of them: on the downlink the base station's power a block of the band (the same
        whatever `blocks`, to the bit), on the uplink its power spread over them."""
        power_w = self.power_w(direction, k, blocks)
        if direction is Direction.DOWNLINK:
            return power_w, self.settings.bs_tx_power_w / self.settings.blocks[direction]
        return power_w, power_w / blocks

    def _transfer(self, message: Message, kind: EventKind, local_iter: int,
                  direction: Direction) -> simpy.Event:
        """The transfer's event; it starts now, or on a block taken in turns when the block
        is free (and frees it when its air time is over)."""
        ended = self.env.event()
        queue = self._turns[direction].get(message.client_id)
        if queue is None:
            self._send(message, kind, local_iter, direction, ended, lambda _: None)
            return ended
        turn, round_, k = queue.request(), self.round, message.client_id
        block, c = self._blocks[direction][k][0], int(self.net.serving[k])

        def free(start: float) -> None:
            queue.release(turn)
            self.turn_rows.append((round_, direction.value, c, block, k, start, self.env.now))
        turn.callbacks.append(
            lambda _: self._send(message, kind, local_iter, direction, ended, free))
        return ended

    def _send(self, message: Message, kind: EventKind, local_iter: int, direction: Direction,
              ended: simpy.Event, free: Callable[[float], None]) -> None:
        """The transfer from now: up, the air then the backhaul; down, the backhaul then the
        air; `free(its start)` when its air time is over; `ended` fires when it has crossed
        both."""
        k, start, payload_bytes = message.client_id, self.env.now, message.payload_bytes
        c, gain = int(self.net.serving[k]), float(self.cell.gain_linear[k])
        air, fade = self._air[direction], None
        if self.fading is not None:       # this transfer's fading block, on every link
            fade = self.fading.row(direction, k)
            gains = self.net.coupling_linear[k] * fade
            gain = float(self.cell.gain_linear[k] * fade[c])
        if self.settings.scheduler == "round_robin":   # the air hands out the blocks
            first, blocks, power_w = -1, 0, math.nan      # (its stretches say, at its end)
            shared = (k, c, gain, lambda n: self.powers(direction, k, n),
                      self._cap(direction, k))

            def add(flow: Flow) -> None:
                air.add_shared(Shared(flow, *shared))
        else:
            first, blocks = self._blocks[direction][k]
            power_w = self.power_w(direction, k, blocks)

            def add(flow: Flow) -> None:
                air.add(flow, k, c, first, blocks, power_w, gain)

        def join(flow: Flow) -> None:
            if fade is not None:
                air.fade(k, gains)
            add(flow)
        info = (start, local_iter, k, kind, payload_bytes, c, direction, first, blocks, power_w,
                gain, fade)
        bits = 8.0 * payload_bytes
        backhaul = self._backhaul_pool(direction, c)

        def record(crossed: Flow, backhaul_s: float) -> None:
            self._record(info, crossed, backhaul_s)
            ended.succeed()

        if direction is Direction.UPLINK:
            def after_air(crossed: Flow) -> None:
                free(start)
                self._after_harq(crossed, lambda: self._cross_backhaul(
                    backhaul, bits, lambda s: record(crossed, s)))
            duplexing = self.settings.duplexing
            if duplexing is not None and duplexing.k2_s > 0:   # the grant comes K2 later
                granted = self.env.timeout(duplexing.k2_s)
                granted.callbacks.append(lambda _: join(Flow(bits, self.env.now, after_air)))
            else:
                join(Flow(bits, start, after_air))
        else:
            def after_downlink_air(crossed: Flow, backhaul_s: float) -> None:
                free(start)
                self._after_harq(crossed, lambda: record(crossed, backhaul_s))

            def after_backhaul(backhaul_s: float) -> None:
                join(Flow(bits, self.env.now,
                          lambda crossed: after_downlink_air(crossed, backhaul_s)))
            self._cross_backhaul(backhaul, bits, after_backhaul)

    def _after_harq(self, crossed: Flow, then: Callable[[], None]) -> None:
        """`then()` once the transfer's last transport block has been decoded: at once with
        Shannon rates, else after its expected HARQ retransmissions (NrLink.tail_s)."""
        tail_s = 0.0 if self.settings.nr is None else self.settings.nr.tail_s(crossed.tbler)
        if tail_s <= 0.0:
            then()
            return
        self.env.timeout(tail_s).callbacks.append(lambda _: then())

    def _backhaul_pool(self, direction: Direction, c: int) -> Pool | None:
        if self.settings.backhaul is None:
            return None
        key = (direction, c)
        if key not in self._backhaul:
            bandwidth_bps = self.settings.backhaul[1]

            def shared(static: np.ndarray) -> Rated:
                n = len(static)
                return np.full(n, bandwidth_bps / n), np.full(n, math.nan), np.zeros(n)
            self._backhaul[key] = Pool(self.env, shared, 0)
        return self._backhaul[key]

    def _cross_backhaul(self, pool: Pool | None, bits: float,
                        then: Callable[[float], None]) -> None:
        """The bits cross the cell's backhaul (their share of its bandwidth, then its
        latency); `then(seconds it took)`."""
        if pool is None:
            then(0.0)
            return
        start, latency_s = self.env.now, self.settings.backhaul[0]  # type: ignore[index]

        def crossed(_: Flow) -> None:
            arrived = self.env.timeout(latency_s)
            arrived.callbacks.append(lambda _: then(self.env.now - start))
        pool.add(Flow(bits, start, crossed), ())

    def _record(self, info: tuple, air: Flow, backhaul_s: float) -> None:
        """The transfer's rows of the link's books and its event: the air's mean rate (bits
        over air time), its time-averaged SINR and interference, the backhaul's time; the
        blocks it held over its air time."""
        (start, local_iter, k, kind, payload_bytes, c, direction, first, blocks, power_w,
         gain, fade) = info
        air_s = air.held_s      # (its direction's symbols' time, under TDD)
        rate, sinr, interference_w = air.rate, air.sinr, air.interference_w
        if air_s > 0:
            rate = 8.0 * payload_bytes / air_s
            if air.varied:   # else the last values, exactly (not an average of equal ones)
                sinr = air.sinr_area / air_s
                interference_w = air.interference_area / air_s
        interference_dbm = (10.0 * math.log10(interference_w) + 30.0 if interference_w > 0
                            else -math.inf)
        if air.stretches:    # round robin: its blocks and power, each a stretch of its time
            # a transfer that found every block taken waited for one: like a turn on a shared
            # block, the wait is its client's idle time and the event starts when it ends
            start += air.stretches[0][2] - air.start
            self.air_rows.extend((len(self.log), c, direction.value, f, n, t0, t1, p, cap)
                                 for f, n, t0, t1, p, cap in air.stretches if t1 > t0)
            blocks, power_w = _time_averaged(air.stretches)
        else:
            self.air_rows.append((len(self.log), c, direction.value, first, blocks, air.start,
                                  air.end))
        if fade is not None:
            self.fade_rows.extend((len(self.log), cell, h2) for cell, h2 in enumerate(
                fade.tolist()))
        row: tuple = (len(self.log), blocks * self.settings.block_hz, rate, 1,
                      gain, power_w, 10.0 * math.log10(sinr),
                      interference_dbm, backhaul_s)
        nr = self.settings.nr
        if nr is not None:    # NR_TRANSFER_COLUMNS: the MCS and TBLER over the time it sent
            slot_s = nr.tables[direction].slot_s
            sending = air.sending_s
            row += ((air.mcs_area / sending, air.tbler_area / sending) if sending > 0
                    else (math.nan, math.nan)) + (sending / slot_s, nr.tail_s(air.tbler))
        self.transfer_rows.append(row)
        self.log.record(start, self.env.now, self.round, local_iter, k, kind, payload_bytes)


def _time_averaged(stretches: list[list]) -> tuple[float, float]:
    """A round-robin transfer's blocks and power averaged over its stretches' time (its
    last stretch's where they took none)."""
    spans = np.array([t1 - t0 for _, _, t0, t1, _, _ in stretches])
    if not spans.sum() > 0:
        return float(stretches[-1][1]), float(stretches[-1][4])
    weights = spans / spans.sum()
    return (float(np.dot(weights, [n for _, n, *_ in stretches])),
            float(np.dot(weights, [p for *_, p, _ in stretches])))
