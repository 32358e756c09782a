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
transfer for the round (the static scheduler). `add_shared` (round robin, work-conserving)
leaves them to the air: at every instant a cell's blocks are split among its transfers in
progress (channel.network.round_robin_shares: whole blocks, equal shares in the order they
joined, none above a transfer's cap), split again whenever one starts or ends; a transfer
that finds as many transfers in progress as blocks waits, first come first served, for the
next block to come free (the time shares of a slot scheduler are not modelled). Each
transfer's blocks over time are its `stretches`."""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from channel import Direction
from channel import network as channel_network
from channel import network_grid as grid
from channel.nr_link import LinkTables
from channel.tdd import TddFrame
from scala_netsim.sim.network.pool import Flow


@dataclass
class Shared:
    """A round-robin transfer's terms: its flow, client, cell, receive gain, the power it
    radiates on n blocks and on each of them (`powers(n)`: on the downlink the cell's power
    a block, whatever n), and the most blocks it can use (`cap`)."""

    flow: Flow
    client: int
    cell: int
    gain: float
    powers: Callable[[int], tuple[float, float]]
    cap: int


class Air:
    """The air of one direction of a network: its cells' `num_blocks` blocks of `block_hz`,
    the noise a block's receiver hears (`noise_w`), the coupling gains (clients x cells,
    linear), with or without interference between cells (see the module's docstring)."""

    def __init__(self, env: simpy.Environment, gains: np.ndarray, num_blocks: int,
                 block_hz: float, noise_w: float, uplink: bool, interference: bool,
                 frame: TddFrame | None = None, link: LinkTables | None = None,
                 fades_in_time: bool = False) -> None:
        self.env = env
        self.frame = frame
        #: the NR link abstraction's lookups (channel.nr_link; None: Shannon rates)
        self.link = link
        self._nr = grid.Nr.of(link)
        #: do the gains change in blocks of time (fading, coherence: time)? A transfer that
        #: delivers nothing under the NR abstraction then waits for the next block
        self.fades_in_time = fades_in_time
        self.direction = Direction.UPLINK if uplink else Direction.DOWNLINK
        self.gains = np.ascontiguousarray(gains, dtype=float)
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
        self.num_blocks = num_blocks
        #: round robin: each cell's transfers on the air (slots, in the order they joined),
        #: those waiting for a block, and each slot's terms
        self._on_cell: dict[int, list[int]] = {}
        self._waiting: dict[int, deque[Shared]] = {}
        self._shared: dict[int, Shared] = {}

    def tau(self, t: float) -> float:
        """The direction's symbol time at instant t (t itself without a frame)."""
        return t if self.frame is None else self.frame.cumulative(self.direction, t)

    def instant(self, tau: float) -> float:
        """The earliest instant at which the symbol time is `tau` (its inverse)."""
        if self.frame is None or math.isinf(tau):
            return tau
        return self.frame.finish(self.direction, 0.0, tau)

    def fade(self, client: int, gains: np.ndarray) -> None:
        """Client's gains to every cell from now on (a fading block that begins with its
        transfer: it has none of this direction on the air; scala_netsim.sim.network.fading)."""
        self.gains[client] = gains

    def regain(self, client: int, gains: np.ndarray) -> None:
        """Client's gains to every cell change now, mid-transfer (the seam for mobility:
        docs/model/network.md): its transfer in flight in this direction, if any, has its bits
        taken up to now at its old rate, its signal set from the new gain to its cell, and
        its blocks re-rated at the next settle; on the uplink every other cell's holder of
        those blocks too (what they hear of it changed: the block's sender is marked unknown
        so that the settle re-rates all of them). One waiting for a block (round robin) joins
        at the new gain. Its serving cell stays (a handover is a new transfer, not a new
        gain)."""
        self.gains[client] = gains
        now = self.tau(self.env.now)
        used = self.flows[:self._used]
        for h in np.flatnonzero((self.ints[:self._used, grid.CLIENT] == client)
                                & ~np.isnan(used[:, grid.BITS])).tolist():
            if self._flow[h] is None:
                continue
            grid.advance(h, now, self.flows)
            cell, first = int(self.ints[h, grid.CELL]), int(self.ints[h, grid.FIRST])
            count = int(self.ints[h, grid.COUNT])
            self.flows[h, grid.SIGNAL] = self.flows[h, grid.PER_BLOCK_W] * gains[cell]
            term = self._shared.get(h)
            if term is not None:      # (round robin: its blocks regranted at the new gain)
                term.gain = float(gains[cell])
            self.dirty[first:first + count, cell] = True
            if self.uplink:
                self.grids[grid.SENT_CLIENT_GRID, cell, first:first + count] = -1.0
        for waiting in self._waiting.values():
            for shared in waiting:
                if shared.client == client:
                    shared.gain = float(gains[shared.cell])
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

    def add(self, flow: Flow, client: int, cell: int, first: int, count: int, power_w: float,
            gain: float, per_block_w: float | None = None) -> None:
        """Flow joins now, client's transfer on blocks first..first+count-1 of `cell`,
        radiating `power_w` over them (`per_block_w` on each: power_w / count unless given),
        received through `gain`; its `done(flow)` is called when its bits have crossed."""
        h = self._free[-1]
        now = self.tau(self.env.now)
        if per_block_w is None:
            per_block_w = power_w / count if count > 0 else 0.0
        if not grid.join(h, now, self._joined, client, cell, first, count, per_block_w,
                         gain, flow.bits, self.holder, self.dirty, self.ints, self.flows):
            raise RuntimeError(f"client {client}'s transfer asks for blocks {first}.."
                               f"{first + count - 1} of cell {cell}, not all free in its band")
        self._free.pop()
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

    def add_shared(self, shared: Shared) -> None:
        """A round-robin transfer joins its cell now: the cell's blocks are split again among
        its transfers in progress (see the module's docstring)."""
        shared.flow.stretches = []
        self._waiting.setdefault(shared.cell, deque()).append(shared)
        self._reassign(shared.cell)
        self._changed = True
        if not self._settling:
            self._settling = True
            self.env.timeout(0).callbacks.append(self._settle_instant)

    def _reassign(self, cell: int) -> None:
        """Cell's blocks split again among its transfers on the air and those waiting that
        now fit (one block each at least): every slot whose blocks change gives them up, then
        all take their new ones, contiguous in the order they joined."""
        on = self._on_cell.setdefault(cell, [])
        waiting = self._waiting.get(cell, deque())
        admitted = [waiting.popleft() for _ in range(min(len(waiting),
                                                         self.num_blocks - len(on)))]
        terms = [self._shared[h] for h in on] + admitted
        counts = channel_network.round_robin_shares(self.num_blocks, [t.cap for t in terms])
        firsts = [0, *itertools.accumulate(counts[:-1])]
        now, t = self.tau(self.env.now), self.env.now
        moved = [i for i, h in enumerate(on)
                 if (self.ints[h, grid.FIRST], self.ints[h, grid.COUNT]) != (firsts[i],
                                                                            counts[i])]
        for i in moved:
            grid.release(on[i], now, self.holder, self.dirty, self.ints, self.flows)
            terms[i].flow.stretches[-1][3] = t
        for i in moved:
            term = terms[i]
            power_w, per_block_w = term.powers(counts[i])
            if not grid.regrant(on[i], firsts[i], counts[i], per_block_w, term.gain,
                                self.holder, self.dirty, self.ints, self.flows):
                raise RuntimeError(f"round robin: cell {cell}'s blocks {firsts[i]}.."
                                   f"{firsts[i] + counts[i] - 1} not free")
            term.flow.stretches.append([firsts[i], counts[i], t, math.nan, power_w, term.cap])
        for i, term in enumerate(admitted, start=len(on)):
            power_w, per_block_w = term.powers(counts[i])
            self.add(term.flow, term.client, cell, firsts[i], counts[i], power_w, term.gain,
                     per_block_w)
            h = self._last_joined
            self._shared[h] = term
            on.append(h)
            term.flow.stretches.append([firsts[i], counts[i], t, math.nan, power_w, term.cap])

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
            term.flow.stretches[-1][3] = self.env.now
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
                          self.ints, self.flows[:self._used], self.noise_w, self.block_hz,
                          self.uplink, self.interference, self._nr)
        self._changed = False
        if self.link is not None:
            self._never_decoded(end)
        self._arm(end)

    def _never_decoded(self, end: float) -> None:
        """Under the NR abstraction a transfer below its lowest MCS's curve delivers nothing
        until its SINR changes. One that nobody interferes with never would (its SNR is fixed
        on its blocks), nor would any when no transfer of this direction will ever end (`end`
        infinite: each waits for another's interference to stop): the run stops, naming
        them. Not under fading in blocks of time: every block brings a fresh channel."""
        if self.fades_in_time:           # its channel changes at the next block's boundary
            return
        flows = self.flows[:self._used]
        stopped = flows[:, grid.RATE] == 0.0
        quiet = stopped & (flows[:, grid.INTERFERENCE] == 0.0)
        if not quiet.any() and not (math.isinf(end) and stopped.any()):
            return
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
            f.done(f)

    def _finish(self, h: int) -> Flow:
        """Slot h's numbers into its Flow, now it has crossed, and its blocks freed."""
        f = self._flow[h]
        assert f is not None
        f.end, now = self.env.now, self.tau(self.env.now)
        # (from when it got its blocks: a round-robin transfer may have waited for one)
        began = f.stretches[0][2] if f.stretches else f.start
        f.held_s = f.end - began if self.frame is None else now - self._tau_start[h]
        out, nr = grid.leave(h, now, self.holder, self.dirty, self.ints, self.flows)
        f.rate, f.sinr, f.interference_w, f.sinr_area, f.interference_area, f.varied = out
        f.mcs_area, f.tbler_area, f.sending_s, f.tbler = nr
        self._changed = True
        self._flow[h] = None
        self._free.append(h)
        return f
