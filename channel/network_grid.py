"""The rates of a network's transfers kept up to date block by block, for a clock that moves
from one start or end of a transfer to the next (scala_netsim.sim.network.air).

The state is a grid of the network's cells x blocks: which transfer holds each (cell, block)
(within a cell a block carries one transfer at a time; a transfer holds a set of its cell's
blocks, contiguous or not), with the interference its receiver
gets there and its SINR. A transfer that starts, ends or moves changes only the (cell,
block)s it holds. Where what such a (cell, block) sends as the other cells hear it changes
(its power a block, and on the uplink its client), the interference of every holder of the
block is summed again from the other holders, in the order of their cells (no running sum
from which a transfer's own signal, up to 115 dB above the interference, is taken away
again); where it does not (on the downlink a cell's power a block is the same whoever
receives it: a round-robin scheduler moving a cell's transfers among its blocks changes
no other cell), only its own holder's is, by the same sum. The rates of the holders
recomputed are summed again over their blocks. A transfer's rate is what
`channel.network.transfer_rates` gives for the same transfers in flight (the reference of
the tests, to 1e-12): on each of its blocks b, SINR = (P / n) g / (N0 B_rb + I_b), rate =
sum_b B_rb log2(1 + SINR_b); a transfer nobody interferes with, n B_rb log2(1 + SNR) in
closed form. Under the NR link
abstraction (channel.nr_link, its lookups in `Nr`) the rate is instead the goodput of the MCS
link adaptation picks at the transfer's block SINRs, TBS (1 - TBLER) a slot: 0 below the
lowest MCS's curve.

Each transfer's bits, and the integrals of its SINR and interference over time, are brought
up to date only when its rate changes (from the time of its last change), so a start or an
end costs the blocks it touches, not the network. The kernels are compiled (numba): the state
is arrays, one entry per slot of a transfer in flight, and the grid."""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from channel import nr_link

# a slot's integers, the columns of `ints`: its client, cell, first (lowest) block, blocks, and
# when it joined (a count); its blocks themselves, a set of its cell's in increasing order, are
# owned[slot, :blocks] (a contiguous range, or any set a scheduler hands out)
CLIENT, CELL, FIRST, COUNT, SEQ = range(5)
INT_FIELDS = 5
# a slot's numbers, the columns of `flows`: bits left at MARK (the time of its last change of
# rate), its rate (bit/s; NaN: free, or joined and not yet rated), SINR (linear, the mean over
# its blocks), interference (W, summed over its blocks), the integrals of the two over its
# time so far (up to MARK), the time its bits run out at its rate (inf: none), its power a
# block (W) and the signal its receiver gets a block (W), and whether its SINR has changed
# since it was first rated (0 or 1); under the NR link abstraction its MCS and TBLER, and
# the integrals over its time of the MCS and TBLER while it sends and of the time it sends
# (its rate above 0); and the integral of its rate since it was last told (GOT: the bits
# its blocks could carry, a fixed-rate attempt's mutual information; its bits are then inf,
# its end not the kernels' but its attempt's); and under other users' load in their mean
# (network.traffic.model: fluid) the interference they add on each of its blocks (W: FLOOR,
# 0 without) and the share of its blocks' time they leave it (SHARE, 1 without)
(BITS, MARK, RATE, SINR, INTERFERENCE, SINR_AREA, INTERFERENCE_AREA, FINISH, PER_BLOCK_W,
 SIGNAL, VARIED, MCS, TBLER, MCS_AREA, TBLER_AREA, SENDING, GOT, FLOOR, SHARE) = range(19)
FLOW_FIELDS = 19
# the planes of `grids` (cells x blocks): the SINR (linear) and interference (W) of the
# transfer holding each block of each cell, and what each (cell, block) sent as last
# settled, as the others' receivers hear it: the power a block (W; 0 free) and, on the
# uplink, the client sending (-1 free)
SINR_GRID, INTERFERENCE_GRID, SENT_W_GRID, SENT_CLIENT_GRID = range(4)
GRID_PLANES = 4
EPS = float(np.finfo(float).eps)


class Nr(NamedTuple):
    """One direction's NR lookups for the kernels (channel.nr_link.LinkTables as arrays; all
    empty: Shannon rates): the MCS indices, EESM betas, transport blocks, code blocks and
    code-block-size rows by (MCS row, blocks), the code blocks' BLER, (the SINR grid's
    first dB and step, the BLER target, the slot), and each row's first SINR column meeting
    the target by blocks (channel.nr_link.meets_from)."""

    mcs: np.ndarray
    beta: np.ndarray
    tb_bits: np.ndarray
    num_cb: np.ndarray
    cbs_row: np.ndarray
    bler: np.ndarray
    params: np.ndarray
    meets: np.ndarray

    @classmethod
    def of(cls, tables: nr_link.LinkTables | None) -> Nr:
        if tables is None:
            empty = np.zeros((0, 1))
            return cls(np.zeros(0, np.int64), np.zeros(0), empty, empty,
                       np.zeros((0, 1), np.int64), np.zeros((0, 1, 1)), np.zeros(4),
                       np.zeros((0, 1), np.int64))
        return cls(tables.mcs, tables.beta, tables.tb_bits, tables.num_cb, tables.cbs_row,
                   tables.bler, np.array([tables.snr_db[0], tables.snr_db[1],
                                          tables.bler_target, tables.slot_s]), tables.meets)


@numba.njit(cache=True)
def clear(flows: np.ndarray, h: int) -> None:
    """Slot h free: no bits, no rate, no end, nothing integrated."""
    row = flows[h]
    row[:] = math.nan
    row[SINR_AREA] = row[INTERFERENCE_AREA] = row[VARIED] = 0.0
    row[MCS_AREA] = row[TBLER_AREA] = row[SENDING] = row[GOT] = row[FLOOR] = 0.0
    row[FINISH] = math.inf
    row[SHARE] = 1.0


@numba.njit(cache=True)
def clear_all(flows: np.ndarray) -> None:
    for h in range(flows.shape[0]):
        clear(flows, h)


@numba.njit(cache=True)
def join(h: int, now: float, seq: int, client: int, cell: int, blocks: np.ndarray,
         per_block_w: float, gain: float, bits: float, holder: np.ndarray, dirty: np.ndarray,
         ints: np.ndarray, owned: np.ndarray, flows: np.ndarray) -> bool:
    """Slot h takes `blocks` of `cell` (a set: block indices, in increasing order) for
    client's `bits` from `now`, radiating `per_block_w` on each, received through `gain`;
    False (and nothing changed) if a block is not free or not in the band. Its blocks are
    dirty: `settle` rates it."""
    if not _take(h, cell, blocks, per_block_w, gain, holder, dirty, ints, owned, flows):
        return False
    ints[h, CLIENT], ints[h, CELL], ints[h, SEQ] = client, cell, seq
    flows[h, BITS], flows[h, MARK] = bits, now
    return True


@numba.njit(cache=True)
def _take(h: int, cell: int, blocks: np.ndarray, per_block_w: float, gain: float,
          holder: np.ndarray, dirty: np.ndarray, ints: np.ndarray, owned: np.ndarray,
          flows: np.ndarray) -> bool:
    """Slot h holds `blocks` of `cell` (dirty; its set in owned[h, :count], in increasing
    order), radiating `per_block_w` on each, received through `gain`; False (and nothing
    changed) if a block is not free, not in the band, or the set is empty or not
    increasing."""
    count = len(blocks)
    if count < 1 or blocks[0] < 0 or blocks[count - 1] >= holder.shape[1]:
        return False
    for k in range(count):
        if (k > 0 and blocks[k] <= blocks[k - 1]) or holder[cell, blocks[k]] >= 0:
            return False
    for k in range(count):
        b = blocks[k]
        holder[cell, b] = h
        dirty[b, cell] = True
        owned[h, k] = b
    ints[h, FIRST], ints[h, COUNT] = blocks[0], count
    flows[h, PER_BLOCK_W] = per_block_w
    flows[h, SIGNAL] = per_block_w * gain
    return True


@numba.njit(cache=True)
def _vacate(h: int, holder: np.ndarray, dirty: np.ndarray, ints: np.ndarray,
          owned: np.ndarray) -> None:
    """Slot h's blocks freed (dirty); it holds none."""
    cell = ints[h, CELL]
    for k in range(ints[h, COUNT]):
        b = owned[h, k]
        holder[cell, b] = -1
        dirty[b, cell] = True
    ints[h, COUNT] = 0


@numba.njit(cache=True)
def release(h: int, now: float, holder: np.ndarray, dirty: np.ndarray, ints: np.ndarray,
            owned: np.ndarray, flows: np.ndarray) -> None:
    """Slot h gives up its blocks (a scheduler moves it): its bits and integrals taken up to
    `now` at its rate, its blocks freed (dirty); it keeps its bits to go (`regrant` gives it
    others)."""
    advance(h, now, flows)
    _vacate(h, holder, dirty, ints, owned)


@numba.njit(cache=True)
def regrant(h: int, blocks: np.ndarray, per_block_w: float, gain: float,
            holder: np.ndarray, dirty: np.ndarray, ints: np.ndarray, owned: np.ndarray,
            flows: np.ndarray) -> bool:
    """Slot h, released, takes `blocks` of its cell (a set, increasing), radiating
    `per_block_w` on each; False (and nothing changed) if a block is not free or not in the
    band."""
    return _take(h, ints[h, CELL], blocks, per_block_w, gain, holder, dirty, ints, owned,
                 flows)


@numba.njit(cache=True)
def leave(h: int, now: float, holder: np.ndarray, dirty: np.ndarray, ints: np.ndarray,
          owned: np.ndarray, flows: np.ndarray
          ) -> tuple[tuple[float, float, float, float, float, bool],
                     tuple[float, float, float, float]]:
    """Slot h's numbers now that it has crossed (rate, SINR, interference, their integrals
    up to `now`, whether its SINR changed; and the NR numbers: the integrals of its MCS and
    TBLER while sending, its time sending, its last TBLER), and its blocks freed (dirty) and
    its row cleared."""
    advance(h, now, flows)
    row = flows[h]
    out = (row[RATE], row[SINR], row[INTERFERENCE], row[SINR_AREA], row[INTERFERENCE_AREA],
           row[VARIED] != 0.0)
    nr = (row[MCS_AREA], row[TBLER_AREA], row[SENDING], row[TBLER])
    _vacate(h, holder, dirty, ints, owned)
    clear(flows, h)
    return out, nr


@numba.njit(cache=True)
def _sum_interference(b: int, holder: np.ndarray, gains: np.ndarray, ints: np.ndarray,
                      flows: np.ndarray, uplink: bool, cells: np.ndarray, slots: np.ndarray,
                      out: np.ndarray) -> int:
    """Into out[i] the interference the i-th holder of block b gets from the others (cells[i],
    slots[i]: the holders' cells and slots, in the order of the cells); returns how many
    hold b. Uplink: cell c hears the others' clients through g(client, c); downlink: the
    holder's client hears the other cells through g(its client, cell)."""
    n = 0
    for c in range(holder.shape[0]):
        h = holder[c, b]
        if h >= 0:
            cells[n], slots[n] = c, h
            n += 1
    # uplink: summed in the order of the cells, each transmitter's row of gains read once,
    # where most cells hold b into every cell's receiver at once (contiguous; the sender's
    # own put back: it hears the others); downlink: each holder's sum alone (_heard), its
    # own client's row
    out[:n] = 0.0
    if uplink and 2 * n >= holder.shape[0]:   # most cells hold b: every receiver at once
        every = np.zeros(holder.shape[0])
        for j in range(n):
            row, p, own = gains[ints[slots[j], CLIENT]], flows[slots[j], PER_BLOCK_W], cells[j]
            kept = every[own]
            for c in range(holder.shape[0]):
                every[c] += p * row[c]
            every[own] = kept
        for i in range(n):
            out[i] = every[cells[i]]
    elif uplink:                              # a few: the holders' receivers alone
        for j in range(n):
            row, p = gains[ints[slots[j], CLIENT]], flows[slots[j], PER_BLOCK_W]
            for i in range(n):
                if i != j:
                    out[i] += p * row[cells[i]]
    else:
        for i in range(n):
            out[i] = _heard(cells[i], b, holder, gains, ints, flows, False)
    return n


@numba.njit(cache=True)
def _sent_changed(b: int, holder: np.ndarray, grids: np.ndarray, dirty: np.ndarray,
                  ints: np.ndarray, flows: np.ndarray, uplink: bool) -> bool:
    """Whether what a dirty (cell, block b) sends, as the other cells' receivers hear it,
    changed since the last settle (its power a block; on the uplink also its client: on the
    downlink the cell sends, whoever receives), the new taken as settled."""
    changed = False
    for c in range(holder.shape[0]):
        if not dirty[b, c]:
            continue
        h = holder[c, b]
        power_w = flows[h, PER_BLOCK_W] if h >= 0 else 0.0
        client = float(ints[h, CLIENT]) if h >= 0 else -1.0
        if power_w != grids[SENT_W_GRID, c, b] or (
                uplink and client != grids[SENT_CLIENT_GRID, c, b]):
            changed = True
            grids[SENT_W_GRID, c, b], grids[SENT_CLIENT_GRID, c, b] = power_w, client
    return changed


@numba.njit(cache=True)
def _heard(c: int, b: int, holder: np.ndarray, gains: np.ndarray, ints: np.ndarray,
           flows: np.ndarray, uplink: bool) -> float:
    """The interference the holder of (cell c, block b) gets from the other holders of b:
    `_sum_interference`'s sum for it alone, term by term in the same order (the same
    number to the bit)."""
    total = 0.0
    if uplink:
        for j in range(holder.shape[0]):
            other = holder[j, b]
            if j != c and other >= 0:
                total += flows[other, PER_BLOCK_W] * gains[ints[other, CLIENT], c]
    else:
        row = gains[ints[holder[c, b], CLIENT]]
        for j in range(holder.shape[0]):
            other = holder[j, b]
            if j != c and other >= 0:
                total += flows[other, PER_BLOCK_W] * row[j]
    return total


@numba.njit(cache=True)
def settle(now: float, holder: np.ndarray, grids: np.ndarray, dirty: np.ndarray,
           gains: np.ndarray, ints: np.ndarray, owned: np.ndarray, flows: np.ndarray,
           noise_w: float, block_hz: float, uplink: bool, interference: bool, nr: Nr) -> float:
    """Recompute the dirty (cell, block)s (then clean) and the transfers that hold them: each
    such transfer's bits and integrals are first taken up to `now` at its old rate (none for
    one that has just joined), then its rate, mean SINR, interference and the time its bits
    run out at the new rate. Where the cells interfere and what a dirty (cell, block) sends
    changed (`_sent_changed`), every holder of the block is recomputed; where it did not,
    only the dirty ones (a scheduler that moves a cell's transfers among its blocks, the
    cell's power a block unchanged, changes no other cell's downlink). Without interference
    every holder of a dirty block is (a transfer's rate is then its own: its bits and
    integrals are taken up to each change of the block, as the records kept so far were).
    Returns the earliest such time of all slots (`soonest`'s). `flows` may be the rows up to
    the last slot in use."""
    num_cells, num_blocks = holder.shape
    cells = np.empty(num_cells, np.int64)
    slots = np.empty(num_cells, np.int64)
    received = np.zeros(num_cells)
    affected = np.empty(num_cells * num_blocks, np.int64)
    seen = np.zeros(flows.shape[0], np.bool_)
    n_affected = 0
    for b in range(num_blocks):
        if not dirty[b].any():
            continue
        if not interference:      # every holder of the block, as the whole network did
            n = 0
            for c in range(num_cells):
                if holder[c, b] >= 0:
                    cells[n], slots[n], received[n] = c, holder[c, b], 0.0
                    n += 1
        elif _sent_changed(b, holder, grids, dirty, ints, flows, uplink):
            n = _sum_interference(b, holder, gains, ints, flows, uplink, cells, slots,
                                  received)
        else:
            n = 0
            for c in range(num_cells):
                if dirty[b, c] and holder[c, b] >= 0:
                    cells[n], slots[n] = c, holder[c, b]
                    received[n] = _heard(c, b, holder, gains, ints, flows, uplink)
                    n += 1
        dirty[b] = False
        for i in range(n):
            h = slots[i]
            grids[INTERFERENCE_GRID, cells[i], b] = received[i]
            grids[SINR_GRID, cells[i], b] = flows[h, SIGNAL] / (noise_w + received[i]
                                                                + flows[h, FLOOR])
            if not seen[h]:
                seen[h] = True
                affected[n_affected] = h
                n_affected += 1
    scratch = np.empty(num_blocks)
    for i in range(n_affected):
        _rerate(affected[i], now, grids, ints, owned, flows, noise_w, block_hz, nr, scratch)
    return soonest(flows)[0]


@numba.njit(cache=True)
def advance(h: int, now: float, flows: np.ndarray) -> None:
    """Slot h's bits and integrals taken from its last change up to `now` at its rate."""
    rate = flows[h, RATE]
    if not math.isnan(rate):
        dt = now - flows[h, MARK]
        if dt > 0:
            flows[h, BITS] -= rate * dt
            flows[h, GOT] += rate * dt
            flows[h, SINR_AREA] += flows[h, SINR] * dt
            flows[h, INTERFERENCE_AREA] += flows[h, INTERFERENCE] * dt
            if rate > 0 and flows[h, MCS] >= 0:     # sending, under the NR abstraction
                flows[h, MCS_AREA] += flows[h, MCS] * dt
                flows[h, TBLER_AREA] += flows[h, TBLER] * dt
                flows[h, SENDING] += dt
    flows[h, MARK] = now


@numba.njit(cache=True)
def _rerate(h: int, now: float, grids: np.ndarray, ints: np.ndarray, owned: np.ndarray,
            flows: np.ndarray, noise_w: float, block_hz: float, nr: Nr,
            scratch: np.ndarray) -> None:
    advance(h, now, flows)
    c, n = ints[h, CELL], ints[h, COUNT]
    shannon = len(nr.beta) == 0
    logs = sinrs = received = 0.0
    for k in range(n):         # its blocks in increasing order (a range: as they always were)
        b = owned[h, k]
        sinr_b = grids[SINR_GRID, c, b]
        if shannon:
            logs += math.log2(1.0 + sinr_b)
        sinrs += sinr_b
        scratch[k] = sinr_b
        received += grids[INTERFERENCE_GRID, c, b]
    floor = flows[h, FLOOR]
    if received == 0.0:   # no transfer interferes: the SINR and rate in closed form
        sinr = flows[h, SIGNAL] / (noise_w + floor)
        rate = n * block_hz * math.log2(1.0 + sinr)
        scratch[:n] = sinr
    else:
        sinr, rate = sinrs / n, block_hz * logs
    if not shannon:           # the NR link abstraction: the goodput of the MCS it picks
        rate = _nr_rate(h, n, scratch[:n], flows, nr)
    rate *= flows[h, SHARE]   # (other users' load in their mean: their share of the time)
    if not math.isnan(flows[h, SINR]) and sinr != flows[h, SINR]:
        flows[h, VARIED] = 1.0
    flows[h, RATE], flows[h, SINR] = rate, sinr
    flows[h, INTERFERENCE] = received + n * floor
    flows[h, FINISH] = now + max(flows[h, BITS], 0.0) / rate if rate > 0 else math.inf


@numba.njit(cache=True)
def _nr_rate(h: int, n: int, sinr: np.ndarray, flows: np.ndarray, nr: Nr) -> float:
    """Slot h's goodput on its n blocks at SINRs `sinr` (channel.nr_link.choose), its MCS
    and TBLER set: TBS (1 - TBLER) a slot (0 at TBLER 1)."""
    row, tbler, _ = nr_link.choose(sinr, nr.beta, nr.tb_bits, nr.num_cb, nr.cbs_row, nr.bler,
                                   nr.params[0], nr.params[1], nr.params[2], nr.meets)
    flows[h, MCS], flows[h, TBLER] = float(nr.mcs[row]), tbler
    return nr.tb_bits[row, n] * (1.0 - tbler) / nr.params[3]


@numba.njit(cache=True)
def due(now: float, ints: np.ndarray, flows: np.ndarray) -> np.ndarray:
    """The slots in flight (a rate) whose bits have run out by `now`, in the order they
    joined: what is left is below the float error of the arithmetic that took it there (a
    few units in the last place of the bits, and of the clock times the rate); never one
    with infinite bits (a fixed-rate attempt: its end is its own). `flows` may be the rows
    up to the last slot in use."""
    out = np.empty(flows.shape[0], np.int64)
    n = 0
    for h in range(flows.shape[0]):
        rate = flows[h, RATE]
        bits = flows[h, BITS]
        if math.isnan(rate) or math.isinf(bits):
            continue
        if bits - rate * (now - flows[h, MARK]) <= 4 * EPS * (abs(bits) + rate * abs(now)):
            out[n] = h
            n += 1
    out = out[:n]
    return out[np.argsort(ints[out, SEQ], kind="mergesort")]


@numba.njit(cache=True)
def stopped(ints: np.ndarray, flows: np.ndarray) -> tuple[bool, bool]:
    """Whether any slot on blocks with bits to end has rate 0 (under the NR abstraction:
    below the lowest MCS's curve), and whether any such has no interference; a slot of
    infinite bits (a full-buffer user's, which never ends) is none of them. `flows` may be
    the rows up to the last slot in use."""
    any_stopped = any_quiet = False
    for h in range(flows.shape[0]):
        if flows[h, RATE] == 0.0 and ints[h, COUNT] > 0 and not math.isinf(flows[h, BITS]):
            any_stopped = True
            if flows[h, INTERFERENCE] == 0.0:
                any_quiet = True
    return any_stopped, any_quiet


@numba.njit(cache=True)
def soonest(flows: np.ndarray) -> tuple[float, int]:
    """The earliest time a slot in flight runs out of bits, and the slot (inf and -1: none in
    flight)."""
    t, h = math.inf, -1
    for i in range(flows.shape[0]):
        if flows[i, FINISH] < t:
            t, h = flows[i, FINISH], i
    return t, h
