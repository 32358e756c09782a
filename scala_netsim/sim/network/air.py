"""One direction of a network's air as a SimPy resource: transfers join it on their cell's
blocks, cross it at rates set by everyone else on the same blocks in other cells, and leave
when their bits have crossed (scala_netsim.sim.network.link uses one per direction).

The numbers live in channel.network_grid's state (a cells x blocks grid and a row per slot of
a transfer in flight); a start or an end recomputes the blocks it touches, and all starts of
one instant are settled once, at the end of the instant (a zero timeout), before any time
passes. One timeout waits for the next end, replaced whenever the rates change.

Under a TDD frame (channel.tdd) the air runs on its direction's symbol time tau = U(t), the
time of the direction's symbols since 0: the kernels integrate rates over tau, which stands
still outside the direction's symbols, and a transfer's end at tau_end is the instant
U^-1(tau_end), the earliest at which that much symbol time has passed. Without one, tau = t,
the same numbers to the bit.

Blocks are handed out in one of two ways. `add` takes the blocks the link granted the
transfer for the round (the static scheduler). `request` leaves them to the air's per-instant
scheduler (scala_netsim.sim.network.schedulers: round robin, proportional fair), asked again
for the cell's blocks whenever one of its transfers starts or ends (and, where it looks at
the channel, whenever one's gains change): a transfer it gives no block waits, before it
joins the air or on it (parked, its bits where they were), until it gives it some. Each
transfer's blocks over time are its `stretches`."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

import numpy as np
import simpy

from channel import Direction
from channel import network_grid as grid
from channel.nr_link import LinkTables
from channel.tdd import TddFrame
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.schedulers import Request, RoundRobin, Scheduler


class Air:
    """The air of one direction of a network: its cells' `num_blocks` blocks of `block_hz`,
    the noise a block's receiver hears (`noise_w`), the gains of the radio map `radio` in its
    direction (clients x cells, linear), with or without interference between cells (see the
    module's docstring)."""

    def __init__(self, env: simpy.Environment, radio: RadioMap, num_blocks: int,
                 block_hz: float, noise_w: float, uplink: bool, interference: bool,
                 frame: TddFrame | None = None, link: LinkTables | None = None,
                 fades_in_time: bool = False, scheduler: Scheduler | None = None) -> None:
        self.env = env
        self.radio = radio
        #: the per-instant scheduler of `request`ed transfers (None: round robin)
        self.scheduler: Scheduler = RoundRobin(num_blocks) if scheduler is None else scheduler
        self.frame = frame
        #: the NR link abstraction's lookups (channel.nr_link; None: Shannon rates)
        self.link = link
        self._nr = grid.Nr.of(link)
        #: do the gains change in blocks of time (fading, coherence: time)? A transfer that
        #: delivers nothing under the NR abstraction then waits for the next block
        self.fades_in_time = fades_in_time
        self.direction = Direction.UPLINK if uplink else Direction.DOWNLINK
        #: the map's gains in force in this direction (its live array: posts change it)
        self.gains = radio.gains(self.direction)
        radio.watch(self.direction, self.regained)
        self.block_hz, self.noise_w = block_hz, noise_w
        self.uplink, self.interference = uplink, interference
        num_cells = self.gains.shape[1]
        # every transfer in flight holds a block of its cell alone: no more than this at once
        capacity = num_cells * num_blocks
        self.holder = np.full((num_cells, num_blocks), -1, dtype=np.int64)
        self.grids = np.zeros((grid.GRID_PLANES, num_cells, num_blocks))
        self.grids[grid.SENT_CLIENT_GRID] = -1.0
        self.dirty = np.zeros((num_blocks, num_cells), dtype=bool)   # blocks x cells
        self.ints = np.zeros((capacity, grid.INT_FIELDS), dtype=np.int64)
        #: each slot's blocks (a set of its cell's, increasing: grid.join)
        self.owned = np.zeros((capacity, num_blocks), dtype=np.int32)
        self.flows = np.empty((capacity, grid.FLOW_FIELDS))
        grid.clear_all(self.flows)
        self._flow: list[Flow | None] = [None] * capacity
        self._tau_start = [0.0] * capacity
        self._free = list(range(capacity - 1, -1, -1))
        self._joined = self._last_joined = 0
        self._used = 0          # the slots the scans read: those up to the last ever used
        self._changed = self._settling = False
        self._wake: simpy.Event | None = None
        self._wake_at = math.inf
        self._tau_at = (math.nan, math.nan)     # (an instant, its symbol time: `tau`)
        self.num_blocks = num_blocks
        #: the scheduler's: each cell's transfers on the air (slots, in the order they
        #: joined), those waiting for a block, each slot's request, and the flows that have
        #: waited on the air with no block (parked)
        self._on_cell: dict[int, list[int]] = {}
        self._waiting: dict[int, deque[Request]] = {}
        self._shared: dict[int, Request] = {}
        self._parked: set[int] = set()
        #: each client's slots in flight (a watcher's post concerns the air only where any)
        self._clients: dict[int, int] = {}
        #: the radio map's rows of clients that move (0..moving-1; issue 64): one below the
        #: lowest MCS waits for its next move rather than stopping the run
        self.moving = 0
        #: under other users' load in its mean, the floor a client's transfer in a cell sees
        #: now (its downlink's moves with it: issue 64), read again when its gains change;
        #: None: a transfer keeps the floor it joined with
        self.floor_of: Callable[[int, int], float] | None = None

    def quiet_rate(self, request: Request, n: int) -> float:
        """Request's rate on n blocks of its cell at its gain now with no interference
        (bit/s): Shannon's, or under the NR abstraction the goodput of the MCS it would pick
        (a per-instant scheduler's instantaneous rate)."""
        snr = request.powers(n)[1] * request.gain / self.noise_w
        if self.link is None:
            return n * self.block_hz * math.log2(1.0 + snr)
        return float(self.link.goodput_bps(np.full(n, snr)))

    def tau(self, t: float) -> float:
        """The direction's symbol time at instant t (t itself without a frame; the last
        instant's kept, as an instant is asked for several times)."""
        if self.frame is None:
            return t
        if t != self._tau_at[0]:
            self._tau_at = (t, self.frame.cumulative(self.direction, t))
        return self._tau_at[1]

    def instant(self, tau: float) -> float:
        """The earliest instant at which the symbol time is `tau` (its inverse)."""
        if self.frame is None or math.isinf(tau):
            return tau
        return self.frame.finish(self.direction, 0.0, tau)

    def regained(self, client: int) -> None:
        """Client's gains to every cell changed now on the radio map (RadioMap.post): its
        transfer in flight in this direction, if any, has its bits taken up to now at its old
        rate, its signal set from the new gain to its cell, and its blocks re-rated at the
        next settle; on the uplink every other cell's holder of those blocks too (what they
        hear of it changed: the block's sender is marked unknown so that the settle re-rates
        all of them). One waiting for a block (round robin) joins at the new gain. A client
        with nothing of this direction in flight (a fading block that begins with its
        transfer) changes nothing here until it joins. Its serving cell stays (a handover takes
        the transfer off this cell's air first: NetworkLink._handing_over; its floor, under
        other users' load in its mean, read again where `floor_of` says)."""
        if not self._clients.get(client) and not any(
                shared.client == client for waiting in self._waiting.values()
                for shared in waiting):
            return
        gains = self.gains[client]
        cells = []          # (the cells whose scheduler decides again, where it reacts)
        now = self.tau(self.env.now)
        used = self.flows[:self._used]
        for h in np.flatnonzero((self.ints[:self._used, grid.CLIENT] == client)
                                & ~np.isnan(used[:, grid.BITS])).tolist():
            if self._flow[h] is None:
                continue
            grid.advance(h, now, self.flows)
            cell = int(self.ints[h, grid.CELL])
            blocks = self.owned[h, :self.ints[h, grid.COUNT]]
            self.flows[h, grid.SIGNAL] = self.flows[h, grid.PER_BLOCK_W] * gains[cell]
            term = self._shared.get(h)
            if self.floor_of is not None:
                self.flows[h, grid.FLOOR] = self.floor_of(client, cell)
                if term is not None:
                    term.floor_w = float(self.flows[h, grid.FLOOR])
            if term is not None:      # (per instant: its blocks regranted at the new gain)
                term.gain = float(gains[cell])
                cells.append(cell)
            self.dirty[blocks, cell] = True
            if self.uplink:
                self.grids[grid.SENT_CLIENT_GRID, cell, blocks] = -1.0
        for waiting in self._waiting.values():
            for shared in waiting:
                if shared.client == client:
                    shared.gain = float(gains[shared.cell])
                    if self.floor_of is not None:
                        shared.floor_w = self.floor_of(client, shared.cell)
                    cells.append(shared.cell)
        if self.scheduler.reacts_to_gains:
            for cell in dict.fromkeys(cells):
                self._reassign(cell)
        self._changed = True
        if not self._settling:
            self._settling = True
            self.env.timeout(0).callbacks.append(self._settle_instant)

    def __len__(self) -> int:
        """Transfers in flight."""
        return len(self._flow) - len(self._free)

    @property
    def in_progress(self) -> int:
        """Transfers in flight and those waiting for a block (round robin)."""
        return len(self) + sum(len(waiting) for waiting in self._waiting.values())

    def add(self, flow: Flow, client: int, cell: int, blocks: np.ndarray, power_w: float,
            gain: float, per_block_w: float | None = None, floor_w: float = 0.0,
            share: float = 1.0) -> None:
        """Flow joins now, client's transfer on `blocks` of `cell` (a set of block indices,
        increasing: the static scheduler's grant is a range), radiating `power_w` over them
        (`per_block_w` on each: power_w / their count unless given), received through `gain`;
        its `done(flow)` is called when its bits have crossed. Other users' load in its mean
        (network.traffic.model: fluid) adds `floor_w` of interference on each of its blocks
        and leaves it `share` of their time."""
        h = self._free[-1]
        now = self.tau(self.env.now)
        if per_block_w is None:
            per_block_w = power_w / len(blocks) if len(blocks) > 0 else 0.0
        if not grid.join(h, now, self._joined, client, cell, blocks, per_block_w, gain,
                         flow.bits, self.holder, self.dirty, self.ints, self.owned, self.flows):
            raise RuntimeError(f"client {client}'s transfer asks for blocks "
                               f"{blocks.tolist()} of cell {cell}, not all free in its band")
        self._free.pop()
        self.flows[h, grid.FLOOR], self.flows[h, grid.SHARE] = floor_w, share
        self._clients[client] = self._clients.get(client, 0) + 1
        self._last_joined = h
        self._tau_start[h] = now
        self._joined += 1
        self._used = max(self._used, h + 1)
        self._flow[h] = flow
        self._changed = True
        if not self._settling:        # once, after every start of this instant
            self._settling = True
            self.env.timeout(0).callbacks.append(self._settle_instant)
        if flow.on_air is not None:   # (a fixed-rate attempt's clock starts)
            flow.on_air(flow)

    def request(self, request: Request) -> None:
        """A transfer asks its cell's scheduler for blocks now: the cell's blocks are handed
        out again among its transfers in progress (see the module's docstring)."""
        request.flow.stretches = []
        self._waiting.setdefault(request.cell, deque()).append(request)
        self._reassign(request.cell)
        self._changed = True
        if not self._settling:
            self._settling = True
            self.env.timeout(0).callbacks.append(self._settle_instant)

    def _reassign(self, cell: int) -> None:
        """Cell's blocks handed out again by the scheduler among its transfers on the air and
        those waiting: every slot whose blocks change gives them up, then all take their new
        ones (a slot given none is parked: `_park`), then those waiting that got some join."""
        on = self._on_cell.setdefault(cell, [])
        waiting = self._waiting.get(cell, deque())
        requests = [self._shared[h] for h in on] + list(waiting)
        held = [self.owned[h, :self.ints[h, grid.COUNT]].astype(np.int64) for h in on]
        blocks = self.scheduler.assign(cell, requests, held, self.env.now)
        now, t = self.tau(self.env.now), self.env.now
        moved = [i for i, h in enumerate(on) if not np.array_equal(held[i], blocks[i])]
        for i in moved:
            if len(held[i]) > 0:
                grid.release(on[i], now, self.holder, self.dirty, self.ints, self.owned,
                             self.flows)
            requests[i].flow.stretches[-1][3] = t
        for i in moved:
            mine, term = blocks[i], requests[i]
            if len(mine) == 0:
                self._park(on[i])
                term.flow.stretches.append([mine, 0, t, math.nan, 0.0, term.cap])
                continue
            power_w, per_block_w = term.powers(len(mine))
            if not grid.regrant(on[i], mine, per_block_w, term.gain, self.holder,
                                self.dirty, self.ints, self.owned, self.flows):
                raise RuntimeError(f"{self.scheduler.name}: cell {cell}'s blocks "
                                   f"{mine.tolist()} not free")
            term.flow.stretches.append([mine, len(mine), t, math.nan, power_w, term.cap])
        joining = [i for i in range(len(on), len(requests)) if len(blocks[i]) > 0]
        if joining:
            self._waiting[cell] = deque(r for i, r in enumerate(requests[len(on):], len(on))
                                        if len(blocks[i]) == 0)
        for i in joining:
            mine, term = blocks[i], requests[i]
            power_w, per_block_w = term.powers(len(mine))
            self.add(term.flow, term.client, cell, mine, power_w, term.gain, per_block_w,
                     term.floor_w, term.share)
            h = self._last_joined
            self._shared[h] = term
            on.append(h)
            term.flow.stretches.append([mine, len(mine), t, math.nan, power_w, term.cap])

    def _park(self, h: int) -> None:
        """Slot h, released, stays on the air with no block (its bits where they are): no
        rate, no end, no SINR or interference integrated until it gets blocks again (its
        stretch meanwhile: no block, first -1, no power)."""
        self.flows[h, grid.RATE] = self.flows[h, grid.SINR] = 0.0
        self.flows[h, grid.INTERFERENCE] = 0.0
        self.flows[h, grid.FINISH] = math.inf
        flow = self._flow[h]
        assert flow is not None
        self._parked.add(id(flow))

    def remove(self, flow: Flow) -> float | None:
        """Flow leaves now, before its bits have crossed (a deadline cut it): its numbers up
        to now into it, its blocks to the others (round robin: its cell's split again), the
        rates settled again. -> the bits it moved (a fixed-rate attempt's, of infinite bits:
        what its blocks could carry since `gathered`), None if it was waiting for a block."""
        for waiting in self._waiting.values():
            for shared in waiting:
                if shared.flow is flow:
                    waiting.remove(shared)
                    return None
        h = self._flow.index(flow)
        grid.advance(h, self.tau(self.env.now), self.flows)
        left = float(self.flows[h, grid.BITS])
        moved = float(self.flows[h, grid.GOT]) if math.isinf(left) else flow.bits - left
        self._finish(h)
        term = self._shared.pop(h, None)
        if term is not None:
            self._on_cell[term.cell].remove(h)
            if term.flow.stretches and math.isnan(term.flow.stretches[-1][3]):
                term.flow.stretches[-1][3] = self.env.now     # (not parked: it held some)
            self._reassign(term.cell)
        self._settle()
        return moved

    def gathered(self, flow: Flow) -> float:
        """What flow's blocks could carry (its rate's integral) since it joined or this was
        last asked, counted again from now: a fixed-rate attempt's mutual information
        (scala_netsim.sim.network.arq; its bits are infinite, so the air never ends it)."""
        h = self._flow.index(flow)
        grid.advance(h, self.tau(self.env.now), self.flows)
        got = float(self.flows[h, grid.GOT])
        self.flows[h, grid.GOT] = 0.0
        return got

    def moved(self, flow: Flow) -> float:
        """The bits flow has moved so far (its rate's integral since it joined, where its
        bits are infinite), read without bringing its numbers up to now: 0 while it waits
        for a block."""
        try:
            h = self._flow.index(flow)
        except ValueError:
            return 0.0
        row = self.flows[h]
        rate = row[grid.RATE]
        ran = 0.0 if math.isnan(rate) else rate * (self.tau(self.env.now) - row[grid.MARK])
        if math.isinf(row[grid.BITS]):
            return float(row[grid.GOT] + ran)
        return float(flow.bits - (row[grid.BITS] - ran))

    def split(self, flow: Flow) -> None:
        """A round-robin flow's stretch ends now and another on the same blocks begins (a
        fixed-rate transfer's next attempt: each attempt's stretches its own)."""
        if flow.stretches:
            last = flow.stretches[-1]
            last[3] = self.env.now
            flow.stretches.append([last[0], last[1], self.env.now, math.nan, last[4], last[5]])

    def _settle_instant(self, _: simpy.Event) -> None:
        self._settling = False
        if self._changed:
            self._settle()

    def _settle(self) -> None:
        end = grid.settle(self.tau(self.env.now), self.holder, self.grids, self.dirty, self.gains,
                          self.ints, self.owned, self.flows[:self._used], self.noise_w,
                          self.block_hz, self.uplink, self.interference, self._nr)
        self._changed = False
        if self.link is not None:
            self._never_decoded(end)
        self._arm(end)

    def _never_decoded(self, end: float) -> None:
        """Under the NR abstraction a transfer below its lowest MCS's curve delivers nothing
        until its SINR changes. One that nobody interferes with never would (its SNR is fixed
        on its blocks), nor would any when no transfer of this direction will ever end (`end`
        infinite: each waits for another's interference to stop): the run stops, naming
        them. Not under fading in blocks of time: every block brings a fresh channel; nor for
        a moving client (`moving`), whose next move does."""
        if self.fades_in_time:           # its channel changes at the next block's boundary
            return
        flows = self.flows[:self._used]
        any_stopped, any_quiet = grid.stopped(self.ints, flows)
        if not any_quiet and not (math.isinf(end) and any_stopped):
            return
        stopped = ((flows[:, grid.RATE] == 0.0) & (self.ints[:self._used, grid.COUNT] > 0)
                   & np.isfinite(flows[:, grid.BITS])
                   & (self.ints[:self._used, grid.CLIENT] >= self.moving))
        if not stopped.any():           # (moving clients' wait for their next move)
            return
        quiet = stopped & (flows[:, grid.INTERFERENCE] == 0.0)
        stuck = np.flatnonzero(quiet if quiet.any() else stopped)
        names = []
        for h in stuck[:5].tolist():
            client, cell, count = (int(v) for v in self.ints[h, [grid.CLIENT, grid.CELL,
                                                                 grid.COUNT]])
            names.append(f"client {client} on {count} block(s) of cell {cell} at "
                         f"{10.0 * math.log10(flows[h, grid.SINR]):.1f} dB")
        why = ("with no interference" if quiet.any() else
               "each held back by the others' interference, and none of them will end")
        raise RuntimeError(
            f"{len(stuck)} {self.direction.value} transfer(s) deliver nothing under the NR "
            f"link abstraction (below the lowest MCS's curve), {why}: they would never end: "
            f"{'; '.join(names)}. Fewer blocks, more power, network.interference: false or "
            f"the 64qam table may let them")

    def _arm(self, end: float) -> None:
        """A wake for the next end (`end`, in symbol time), unless one stands no later than it
        (it finds nothing due and arms again: `_woken`)."""
        if math.isinf(end) or self._wake_at <= end:
            return
        self._wake_at = end
        wake = self._wake = self.env.timeout(max(self.instant(end) - self.env.now, 0.0))
        wake.callbacks.append(lambda _: self._woken(wake))

    def _woken(self, wake: simpy.Event) -> None:
        if wake is not self._wake:            # an earlier end came up since: its wake stands
            return
        self._wake, self._wake_at = None, math.inf
        now = self.tau(self.env.now)
        flows = self.flows[:self._used]
        ended = grid.due(now, self.ints, flows)
        order = ended.tolist()
        if not order:
            end, first = grid.soonest(flows)
            later = (now + (end - now) > now if self.frame is None
                     else self.instant(end) > self.env.now)
            if later:                        # the end moved later since the wake was set
                self._arm(end)
                return
            # rounding left a sliver of bits when the clock can move no closer: it ends now
            order = [first]
        done = [self._finish(h) for h in order]
        cells = []                           # round robin: the cells' blocks split again
        for h in order:
            term = self._shared.pop(h, None)
            if term is not None:
                self._on_cell[term.cell].remove(h)
                term.flow.stretches[-1][3] = self.env.now
                cells.append(term.cell)
        for cell in dict.fromkeys(cells):
            self._reassign(cell)
        self._settle()
        for f in done:
            f.crossed()

    def _finish(self, h: int) -> Flow:
        """Slot h's numbers into its Flow, now it has crossed, and its blocks freed."""
        f = self._flow[h]
        assert f is not None
        self._clients[int(self.ints[h, grid.CLIENT])] -= 1
        f.end, now = self.env.now, self.tau(self.env.now)
        # (from when it got its blocks: a round-robin transfer may have waited for one)
        began = f.stretches[0][2] if f.stretches else f.start
        f.held_s = f.end - began if self.frame is None else now - self._tau_start[h]
        if id(f) in self._parked:     # (parked a while: the part of it it held blocks)
            self._parked.discard(id(f))
            f.blocks_s = math.fsum(self.tau(f.end if math.isnan(t1) else t1) - self.tau(t0)
                                   for _, n, t0, t1, _, _ in f.stretches if n > 0)
        out, nr = grid.leave(h, now, self.holder, self.dirty, self.ints, self.owned,
                             self.flows)
        f.rate, f.sinr, f.interference_w, f.sinr_area, f.interference_area, f.varied = out
        f.mcs_area, f.tbler_area, f.sending_s, f.tbler = nr
        self._changed = True
        self._flow[h] = None
        self._free.append(h)
        return f
