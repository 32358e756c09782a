"""The NR link abstraction (the physical layer's abstraction of Sionna's system-level module,
`sionna.sys`): what a transfer on n resource blocks at per-block SINRs delivers a slot.

Per transfer and MCS m of the table: the effective SINR over its blocks by EESM (TR 36.942
style exponential mapping, Sionna's `EESM`), SINR_eff = -beta_m ln(mean_b exp(-SINR_b /
beta_m)), clipped to [-30, 30] dB; the transport block of TS 38.214 5.1.3.2 for the MCS's
modulation order Q_m and code rate R (TS 38.214 Table 5.1.3.1-1, 64QAM, or 5.1.3.1-2,
256QAM) on N_RE = n x min(156, 12 x 14 - 12 - 0) resource elements (14 symbols, one DMRS
symbol of 12 resource elements a block that carries no data, no xOverhead), one layer; its
code blocks' BLER from Sionna's tables (PUSCH for the uplink, PDSCH for the downlink) at
(MCS, code block size, SINR_eff), on their grid of 0.1 dB and 100 bits (Sionna's nearest
point; its SINR grid runs from -5 to 30 dB: above it the BLER at 30 dB, below it, by more
than half a step, 1: nothing decodes below -5.05 dB, where Sionna's lookup would clamp to
the BLER at -5 dB, 0.93 for the 64QAM table's lowest MCS on one code block); the transport
block's error rate TBLER = 1 - (1 - BLER)^C for its C code blocks.
Link adaptation (Sionna's `InnerLoopLinkAdaptation`) takes the highest MCS with TBLER <= the
target, and where none meets it the lowest MCS, at whatever TBLER that has: below the
lowest MCS's curve (TBLER 1) the transfer delivers nothing until its SINR changes.

HARQ, as means (no draws: the expected goodput exactly, every run the same, so two
configurations re-timing one training differ by their model, not by draws): every slot of
the transfer's air time carries one transmission of a transport block, a new one with
probability 1 - TBLER, so the goodput is TBS (1 - TBLER) per slot. A block that fails all
`harq_max_transmissions` is sent again as new data (RLC acknowledged mode), which keeps the
goodput the same; the cap bounds the wait at the end: the transfer's last block, sent again
after the HARQ round trip each time it fails, ends sum_{i=1}^{H-1} TBLER^i round trips later
on average.

The tables are Sionna's, taken once into numpy (`tables`, cached per process); the
per-transfer functions below are compiled (numba) and read only numpy arrays."""

from __future__ import annotations

import functools
import importlib.util
import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from channel.link import Direction

#: TS 38.214 5.1.3.2: N'_RE = 12 N_symb - N_DMRS - N_oh a block, at most 156
SYMBOLS = 14
DMRS_PER_BLOCK = 12           # one DMRS symbol (type 1, both CDM groups: no data on it)
OVERHEAD_PER_BLOCK = 0        # xOverhead: 0, the default of TS 38.214 5.1.3.2
RE_PER_BLOCK = min(156, 12 * SYMBOLS - DMRS_PER_BLOCK - OVERHEAD_PER_BLOCK)
#: the MCS tables by name: Sionna's table index (TS 38.214 Table 5.1.3.1-1 and -2)
MCS_TABLES = {"64qam": 1, "256qam": 2}
#: whose BLER table each direction reads, by MCS table: Sionna's category (0 PUSCH, 1 PDSCH)
#: and table index. The uplink reads PUSCH's, except with the 256QAM table: Sionna 2.2's
#: PUSCH_table2 holds its table 1's curves under indices 6 higher (its MCS 9 needs -2.8 dB at
#: 10 % BLER, table 1's MCS 3; its MCS 27, 7.4 bit/s/Hz, 15.2 dB, 7 dB below Shannon's bound),
#: so it reads PDSCH's table 2: without transform precoding a PUSCH code block is the same
#: LDPC-coded QAM (TS 38.214 6.1.4.1 uses the PDSCH tables; Sionna's PUSCH and PDSCH table 1
#: need the same SINR for 10 % BLER to within 1.6 dB, at most 0.2 dB up to MCS 16)
BLER_TABLE = {(Direction.UPLINK, "64qam"): (0, 1), (Direction.UPLINK, "256qam"): (1, 2),
              (Direction.DOWNLINK, "64qam"): (1, 1), (Direction.DOWNLINK, "256qam"): (1, 2)}
SINR_EFF_DB = (-30.0, 30.0)   # EESM's clip (Sionna's default)
INSTALL = "pip install 'scala_netsim[sionna]' (Sionna 2.x, sionna-no-rt)"


@dataclass(frozen=True)
class LinkTables:
    """One direction's lookups: the MCS indices that have BLER data (rows), ascending, with
    their EESM beta; per row and block count 0..max_blocks the transport block's bits, its
    code blocks and the row of its code block size in the BLER grid; the code blocks' BLER
    (rows x code block sizes x SINR in dB on `snr_db` = (first, step, count)); the slot;
    the BLER target."""

    mcs: np.ndarray
    beta: np.ndarray
    tb_bits: np.ndarray
    num_cb: np.ndarray
    cbs_row: np.ndarray
    bler: np.ndarray
    snr_db: tuple[float, float, int]
    slot_s: float
    bler_target: float
    #: per row and block count, the first SINR column meeting the target (`meets_from`)
    meets: np.ndarray

    def choose(self, sinr: np.ndarray) -> tuple[int, float, float]:
        """(MCS, TBLER, SINR_eff) for a transfer on len(sinr) blocks at those SINRs
        (linear), as `choose` picks them."""
        row, tbler, eff = choose(np.asarray(sinr, float), self.beta, self.tb_bits,
                                 self.num_cb, self.cbs_row, self.bler, self.snr_db[0],
                                 self.snr_db[1], self.bler_target, self.meets)
        return int(self.mcs[row]), tbler, eff

    def goodput_bps(self, sinr: np.ndarray) -> float:
        """The expected bits a second of the direction's symbols: TBS (1 - TBLER) a slot."""
        row, tbler, _ = choose(np.asarray(sinr, float), self.beta, self.tb_bits, self.num_cb,
                               self.cbs_row, self.bler, self.snr_db[0], self.snr_db[1],
                               self.bler_target, self.meets)
        return float(self.tb_bits[row, len(sinr)] * (1.0 - tbler) / self.slot_s)


    def lowest_sinr_db(self) -> np.ndarray:
        """Per block count 0..max_blocks, the least SINR (dB, equal on every block) at which
        a transfer delivers anything (the lowest MCS's TBLER below 1): the lower edge of the
        grid point where it first does (the grid's first point's, half a step below it,
        where that one does: below the grid nothing decodes; inf where none does, and at 0
        blocks)."""
        first, step, count = self.snr_db
        out = np.full(self.tb_bits.shape[1], np.inf)
        for n in range(1, len(out)):
            for col in range(count):
                sinr = 10.0 ** ((first + col * step) / 10.0)
                if self.goodput_bps(np.full(n, sinr)) > 0:
                    out[n] = first + (col - 0.5) * step
                    break
        return out


def harq_tail_slots(tbler: float, max_transmissions: int) -> float:
    """The expected HARQ round trips the transfer's last block waits: sum_{i=1}^{H-1} p^i."""
    return sum(tbler ** i for i in range(1, max_transmissions))


def have_sionna() -> bool:
    """Is Sionna's system level (sionna.sys) installed? Looked up, not imported: importing it
    takes seconds (torch, Sionna's PHY), and a scenario's checks answer in about a second."""
    try:
        return importlib.util.find_spec("sionna.sys") is not None
    except (ImportError, ValueError):   # (a parent that cannot be imported, or is None)
        return False


@functools.lru_cache(maxsize=1)
def sionna_tables() -> tuple[Any, dict[int, list[float]]]:
    """Sionna's PHY abstraction (its BLER tables interpolated, double precision) and EESM's
    betas by MCS table index, built once a process (about 5 s). ImportError naming what to
    install where Sionna is missing."""
    try:
        from sionna.sys import EESM, PHYAbstraction
    except ImportError as error:
        raise ImportError(f"network.link_abstraction: nr needs Sionna: {INSTALL} "
                          f"({error})") from None
    phy = PHYAbstraction(precision="double", device="cpu")
    return phy, EESM(precision="double", device="cpu").beta_table["index"]


@functools.lru_cache(maxsize=8)
def tables(direction: Direction, mcs_table: str, max_blocks: int, slot_s: float,
           bler_target: float) -> LinkTables:
    """Sionna's numbers for one direction as numpy lookups (see the module's docstring):
    the transport blocks of every MCS on 1..max_blocks blocks by
    `sionna.phy.nr.utils.calculate_tb_size`, the BLER tables interpolated by
    `sionna.sys.PHYAbstraction` (double precision), EESM's betas. ImportError naming what
    to install where Sionna is missing."""
    import torch
    from sionna.phy.nr.utils import calculate_tb_size, decode_mcs_index
    phy, betas = sionna_tables()
    index = MCS_TABLES[mcs_table]
    category, bler_index = BLER_TABLE[direction, mcs_table]
    bler_all = phy.bler_table_interp[category, bler_index - 1].cpu().numpy()
    rows = np.flatnonzero(np.isfinite(bler_all).all(axis=(1, 2)))
    blocks = np.arange(1, max_blocks + 1)
    mcs_grid = torch.as_tensor(np.repeat(rows, max_blocks), dtype=torch.int32)
    order, rate = decode_mcs_index(mcs_grid, table_index=index,
                                   is_pusch=direction is Direction.UPLINK, device="cpu")
    tb, cbs, num_cb, *_ = calculate_tb_size(
        order, rate, num_coded_bits=order * torch.as_tensor(
            np.tile(blocks * RE_PER_BLOCK, len(rows)), dtype=torch.int32),
        return_cw_length=False, device="cpu")
    shape = (len(rows), max_blocks)

    def with_zero_blocks(values: torch.Tensor, dtype: type) -> np.ndarray:
        out: np.ndarray = np.zeros((len(rows), max_blocks + 1), dtype)
        out[:, 1:] = values.cpu().numpy().reshape(shape)
        return out
    cbs_first, _, cbs_step = phy.cbs_interp_min_max_delta
    cbs_rows = np.clip(np.round((cbs.cpu().numpy().astype(float) - cbs_first) / cbs_step),
                       0, bler_all.shape[1] - 1).astype(np.int64)
    snr_first, _, snr_step = phy.snr_db_interp_min_max_delta
    beta = betas[index]
    num_cbs, cbs_row = with_zero_blocks(num_cb, float), with_zero_blocks(
        torch.as_tensor(cbs_rows), np.int64)
    bler = np.ascontiguousarray(bler_all[rows])
    return LinkTables(
        mcs=rows.astype(np.int64), beta=np.asarray(beta, float)[rows],
        tb_bits=with_zero_blocks(tb, float), num_cb=num_cbs, cbs_row=cbs_row, bler=bler,
        snr_db=(float(snr_first), float(snr_step), bler_all.shape[2]), slot_s=slot_s,
        bler_target=bler_target, meets=meets_from(num_cbs, cbs_row, bler, bler_target))


@numba.njit(cache=True)
def effective_sinr(sinr: np.ndarray, beta: float) -> float:
    """EESM over the blocks' SINRs (linear), in the form that cannot underflow (the least
    SINR taken out of the exponentials), clipped as Sionna clips it; equal SINRs give it
    exactly."""
    return _eesm(sinr, sinr.min(), beta)


@numba.njit(cache=True)
def _eesm(sinr: np.ndarray, low: float, beta: float) -> float:
    """`effective_sinr` with the least SINR `low` given (`choose` takes it once for every
    row it looks up)."""
    total = 0.0
    for s in sinr:
        total += math.exp(-(s - low) / beta)
    eff = low - beta * math.log(total / len(sinr))
    return min(max(eff, 10.0 ** (SINR_EFF_DB[0] / 10.0)), 10.0 ** (SINR_EFF_DB[1] / 10.0))


@numba.njit(cache=True)
def grid_column(sinr_eff: float, snr_first: float, snr_step: float, count: int) -> int:
    """The BLER grid's nearest SINR column to SINR_eff (linear): its last above the grid,
    -1 below it (no column is nearer than half a step: nothing decodes there)."""
    x = (10.0 * math.log10(sinr_eff) - snr_first) / snr_step
    return max(min(int(np.rint(x)), count - 1), -1)


@numba.njit(cache=True)
def _column_bler(row: int, n: int, col: int, num_cb: np.ndarray, cbs_row: np.ndarray,
                 bler: np.ndarray) -> float:
    p = bler[row, cbs_row[row, n], col]
    return 1.0 - (1.0 - p) ** num_cb[row, n]


@numba.njit(cache=True)
def transport_bler(row: int, n: int, sinr_eff: float, num_cb: np.ndarray,
                   cbs_row: np.ndarray, bler: np.ndarray, snr_first: float,
                   snr_step: float) -> float:
    """TBLER = 1 - (1 - BLER)^C of MCS row `row` on n blocks at SINR_eff (linear), the BLER
    at the grid's nearest point (Sionna's lookup: its last point above the grid); 1 below
    the grid (`grid_column` -1: Sionna's tables say nothing there, and nothing decodes)."""
    col = grid_column(sinr_eff, snr_first, snr_step, bler.shape[2])
    if col < 0:
        return 1.0
    return _column_bler(row, n, col, num_cb, cbs_row, bler)


@numba.njit(cache=True)
def meets_from(num_cb: np.ndarray, cbs_row: np.ndarray, bler: np.ndarray,
               target: float) -> np.ndarray:
    """Per MCS row and block count, the first SINR column of the BLER grid from which the
    row's TBLER is at most `target` on every column above and above it on every column
    below (the grid's column count where it never is); -1 where the TBLER crosses the
    target more than once (`choose` then looks the row up at every SINR). With it `choose`
    decides most rows from bounds on SINR_eff, without the EESM."""
    rows, cols = bler.shape[0], bler.shape[2]
    out = np.empty(num_cb.shape, np.int64)
    for row in range(rows):
        out[row, 0] = -1
        for n in range(1, num_cb.shape[1]):
            first = cols
            while first > 0 and _column_bler(row, n, first - 1, num_cb, cbs_row,
                                             bler) <= target:
                first -= 1
            col = first - 1
            while col >= 0 and _column_bler(row, n, col, num_cb, cbs_row, bler) > target:
                col -= 1
            out[row, n] = first if col < 0 else -1
    return out


#: the margin on the bounds of SINR_eff (relative): above the float error of the EESM's sum
BOUND_MARGIN = 1e-9


@numba.njit(cache=True)
def choose(sinr: np.ndarray, beta: np.ndarray, tb_bits: np.ndarray, num_cb: np.ndarray,
           cbs_row: np.ndarray, bler: np.ndarray, snr_first: float, snr_step: float,
           target: float, meets: np.ndarray) -> tuple[int, float, float]:
    """Link adaptation for a transfer on len(sinr) blocks (Sionna's InnerLoopLinkAdaptation):
    the highest MCS row whose TBLER at its EESM SINR is at most `target`, else the lowest
    row, with that TBLER and SINR. The EESM is computed only for the rows the bounds do not
    decide: SINR_eff lies between the least SINR and the mean (Jensen), so a row whose first
    column meeting the target (`meets`, `meets_from`'s) lies above the mean's fails without
    it (the same choice, TBLER and SINR as looking every row up)."""
    n = len(sinr)
    count = bler.shape[2]
    least, most, total = sinr[0], sinr[0], 0.0     # (one pass: the mean summed in order)
    for s in sinr:
        least, most, total = min(least, s), max(most, s), total + s
    equal = least == most
    low, high = 10.0 ** (SINR_EFF_DB[0] / 10.0), 10.0 ** (SINR_EFF_DB[1] / 10.0)
    top = grid_column(min(max(total / n * (1.0 + BOUND_MARGIN), low), high),
                      snr_first, snr_step, count)
    for row in range(len(beta) - 1, 0, -1):
        if meets[row, n] > top:
            continue                               # fails at any SINR_eff up to the mean
        eff = min(max(sinr[0], low), high) if equal else _eesm(sinr, least, beta[row])
        p = transport_bler(row, n, eff, num_cb, cbs_row, bler, snr_first, snr_step)
        if p <= target:
            return row, p, eff
    eff = min(max(sinr[0], low), high) if equal else _eesm(sinr, least, beta[0])
    return 0, transport_bler(0, n, eff, num_cb, cbs_row, bler, snr_first, snr_step), eff
