"""A network transfer's rows of the books, as scala_netsim.sim.network.link records a transfer
that is over: its rows of the air record (core.columns.AIR_COLUMNS, or per instant
AIR_SHARED_COLUMNS; a fixed-rate link's with each row's attempt), of the transfer record and of
the fading record, and its event (`TransferBooks`)."""

from __future__ import annotations

import math
import operator

import numpy as np
import simpy

from channel import Direction
from scala_netsim.core.columns import (
    MOBILITY_TRANSFER_COLUMNS,
    NETWORK_TRANSFER_COLUMNS,
    NR_TRANSFER_COLUMNS,
    TRANSFER_COLUMNS,
)
from scala_netsim.core.events import EventLog
from scala_netsim.sim.network.arq import Attempts
from scala_netsim.sim.network.fading import TimeFades
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.settings import NetworkSettings
from scala_netsim.sim.network.transfer import Transfer


def air_rows(index: int, air: Flow, c: int, direction: Direction, first: int, blocks: int,
             power_w: float, start: float, arq: Attempts | None = None
             ) -> tuple[list[tuple], int | float, float, float]:
    """The rows of the transfer `index` of cell c that held `air` (a fixed-rate one's: each
    attempt's, with its number); -> them, its blocks and power (under round robin their
    averages over its stretches) and its event's start."""
    value = direction._value_       # (`.value` is a slow descriptor)
    if not air.stretches:
        rows = ([(index, c, value, first, blocks, air.start, air.end)]
                if arq is None else arq.static_rows(index, c, value, first, blocks, air))
        return rows, blocks, power_w, start
    # per instant: its blocks and power, each a stretch of its time, a row for each run of
    # consecutive blocks of a stretch's set (a parked stretch's one row: first -1, none); a
    # transfer that found every block taken waited for one: like a turn on a shared block,
    # the wait is its client's idle time and the event starts when it ends
    rows = [(index, c, value, f, n, t0, t1, p, cap)
            + (() if arq is None else (arq.attempt_of(t0),))
            for held, _, t0, t1, p, cap in air.stretches if t1 > t0
            for f, n in block_runs(held)]
    averaged = _time_averaged(air.stretches)
    return rows, averaged[0], averaged[1], start + (air.stretches[0][2] - air.start)


def block_runs(blocks: np.ndarray) -> list[tuple[int, int]]:
    """A set of blocks (increasing) as its runs of consecutive blocks, (first, count) each;
    the empty set as one run (-1, 0): a parked stretch."""
    if len(blocks) == 0:
        return [(-1, 0)]
    if blocks[-1] - blocks[0] == len(blocks) - 1:        # a range: one run
        return [(int(blocks[0]), len(blocks))]
    breaks = np.flatnonzero(np.diff(blocks) > 1) + 1
    firsts = np.concatenate([[0], breaks])
    counts = np.diff(np.concatenate([firsts, [len(blocks)]]))
    return [(int(blocks[f]), int(n)) for f, n in zip(firsts, counts, strict=True)]


def _time_averaged(stretches: list[list]) -> tuple[float, float]:
    """A round-robin transfer's blocks and power averaged over its stretches' time (its
    last stretch's where they took none; its power itself where it radiated one power all
    along, as an upload does without power control). Summed exactly (math.fsum), not by a
    BLAS dot product, whose kernel, and so the last bit, depends on the processor."""
    spans = [t1 - t0 for _, _, t0, t1, _, _ in stretches]
    total = math.fsum(spans)
    if not total > 0:
        return float(stretches[-1][1]), float(stretches[-1][4])
    powers = [p for *_, p, _ in stretches]
    blocks = math.fsum(s * n for s, (_, n, *_) in zip(spans, stretches, strict=True)) / total
    if all(p == powers[0] for p in powers):
        return blocks, float(powers[0])
    return blocks, math.fsum(s * p for s, p in zip(spans, powers, strict=True)) / total


def joined(legs: list[Flow], bits: float) -> Flow:
    """A transfer's air times in several cells (its client handed over between them) as one
    Flow for its record of `bits` (what it moved in them all): its time summed, its SINR and
    interference integrated over them all, its stretches one after another, its last values
    the last leg's."""
    first, last = legs[0], legs[-1]
    out = Flow(bits, first.start, _unused)
    out.end, out.rate, out.sinr, out.interference_w = last.end, last.rate, last.sinr, \
        last.interference_w
    out.held_s = math.fsum(f.held_s for f in legs)
    if any(not math.isnan(f.blocks_s) for f in legs):
        out.blocks_s = math.fsum(f.held_s if math.isnan(f.blocks_s) else f.blocks_s
                                 for f in legs)
    out.sinr_area = math.fsum(f.sinr_area for f in legs)
    out.interference_area = math.fsum(f.interference_area for f in legs)
    out.varied = True
    out.mcs_area = math.fsum(f.mcs_area for f in legs)
    out.tbler_area = math.fsum(f.tbler_area for f in legs)
    out.sending_s = math.fsum(f.sending_s for f in legs)
    out.tbler = last.tbler
    out.stretches = [s for f in legs for s in f.stretches]
    return out


def _unused(flow: Flow) -> None:
    del flow


class TransferBooks:
    """The link's books of its transfers (scala_netsim.sim.network.link): the event log, the
    transfer record (core.columns TRANSFER_COLUMNS, NETWORK_TRANSFER_COLUMNS and under NR
    NR_TRANSFER_COLUMNS: each row built by column name, in the declared order), the air
    record and the fading record; and the transfers sent and not recorded yet (`open`)."""

    def __init__(self, env: simpy.Environment, log: EventLog, settings: NetworkSettings,
                 radio: RadioMap, transfer_rows: list[tuple], air_rows: list[tuple],
                 fade_rows: list[tuple], mobile: bool = False) -> None:
        self.env, self.log, self.settings, self.radio = env, log, settings, radio
        self.transfer_rows, self.air_rows, self.fade_rows = transfer_rows, air_rows, fade_rows
        nr = () if settings.nr is None else NR_TRANSFER_COLUMNS
        self.mobile = mobile
        moving = MOBILITY_TRANSFER_COLUMNS if mobile else ()
        self.columns = (*TRANSFER_COLUMNS, *NETWORK_TRANSFER_COLUMNS, *nr, *moving)
        #: a transfer's row from its values by column name, in the declared order
        self._row = operator.itemgetter(*self.columns)
        #: each transfer sent and not recorded yet (by id): its start
        self.open: dict[int, float] = {}

    def record(self, t: Transfer, air: Flow | None, backhaul_s: float, round_: int,
               done: tuple[int, float] | None = None) -> None:
        """Transfer t's rows of the books and its event of `round_`: the air's mean rate
        (bits over air time), its time-averaged SINR and interference (over the time it
        held blocks), the backhaul's time; the blocks it held over its air time. `done` (a
        drop cut it): the bytes and the bits it got through the air; `air` None, or never
        on the air, where it got none."""
        payload_bytes, direction, arq = t.message.payload_bytes, t.direction, t.arq
        bits = t.bits if done is None else done[1]
        index, start, blocks, power_w = len(self.log), t.start, t.blocks, t.power_w
        mean_blocks: int | float = blocks
        self.open.pop(id(t), None)
        if air is not None and math.isnan(air.end):     # cut while waiting for a block
            air = None
        rate_bps = sinr = interference_w = math.nan
        attempts = 1
        legs = [*t.legs, *(() if air is None else ((t.cell, air),))]
        if legs:                # (several: its client handed over while it was on the air)
            air = legs[0][1] if len(legs) == 1 else joined([f for _, f in legs], bits)
        if air is None:
            mean_blocks, power_w = 0, math.nan
        else:
            air_s = air.held_s      # (its direction's symbols' time, under TDD)
            rate_bps, sinr, interference_w = air.rate, air.sinr, air.interference_w
            if air_s > 0:
                rate_bps = bits / air_s
                if air.varied:   # else the last values, exactly (not an average of equal ones)
                    held_s = air_s if math.isnan(air.blocks_s) else air.blocks_s
                    sinr = air.sinr_area / held_s
                    interference_w = air.interference_area / held_s
            for cell, leg in legs:
                rows, mean_blocks, power_w, leg_start = air_rows(index, leg, cell, direction,
                                                                 t.first, blocks, t.power_w,
                                                                 t.start, arq)
                self.air_rows.extend(rows)
                start = leg_start if leg is legs[0][1] else start
            if len(legs) > 1:
                mean_blocks, power_w = _time_averaged(air.stretches)
        if arq is not None:     # its fixed rate, and what a drop cut records as sent
            attempts = arq.attempt
            rate_bps = math.nan if air is None else arq.rate_bps
            if done is not None:
                done = (arq.done_bytes(payload_bytes, self.env.now), math.nan)
        values = {
            "event_index": index, "rate_bps": rate_bps, "attempts": attempts,
            "handovers": t.handovers,
            "backhaul_s": backhaul_s, "bandwidth_hz": mean_blocks * self.settings.block_hz,
            "tx_power_w": power_w, "gain_linear": self._fade_record(t, index),
            "sinr_db": 10.0 * math.log10(sinr),
            "interference_dbm": (10.0 * math.log10(interference_w) + 30.0
                                 if interference_w > 0 else -math.inf)}
        if self.settings.nr is not None:
            values.update(self._nr_values(t, air, done is not None))
        self.transfer_rows.append(self._row(values))
        if done is None:
            self.log.record(start, self.env.now, round_, t.local_iter, t.client, t.kind,
                            payload_bytes)
        else:
            self.log.record_cut(start, self.env.now, round_, t.local_iter, t.client, t.kind,
                                done[0])

    def _nr_values(self, t: Transfer, air: Flow | None, cut: bool) -> dict[str, float]:
        """NR_TRANSFER_COLUMNS: the MCS and TBLER over the time it sent, its transmissions,
        and its last block's HARQ wait (a cut one's: the part it waited before the cut)."""
        nr = self.settings.nr
        assert nr is not None
        sending = 0.0 if air is None else air.sending_s
        harq_s = 0.0 if air is None else nr.tail_s(air.tbler)
        if cut and air is not None:
            harq_s = (0.0 if t.air is None      # (cut off the air, in a handover)
                      else min(harq_s, self.env.now - air.end))
        mcs, bler = ((air.mcs_area / sending, air.tbler_area / sending)
                     if air is not None and sending > 0 else (math.nan, math.nan))
        return dict(mcs=mcs, bler=bler,
                    transmissions=sending / nr.tables[t.direction].slot_s, harq_wait_s=harq_s)

    def _fade_record(self, t: Transfer, index: int) -> float:
        """Its rows of the fading record (its own row, or each attempt's; none for blocks of
        time); -> its gain to its serving cell as it ended (large-scale times the fade of its
        last attempt or block; its gain where that is its only one)."""
        fade, arq, last = t.fade, t.arq, None
        if isinstance(fade, TimeFades):     # (its rows are drawn again, not recorded)
            fade.stop()
            last = fade.last
        elif arq is not None:
            self.fade_rows.extend(arq.fade_rows(index))
            last = arq.fades[-1] if arq.fades else None
        elif fade is not None:
            self.fade_rows.extend((index, cell, h2) for cell, h2 in enumerate(fade.tolist()))
        if self.mobile:       # (its gain moved with it: as it ended, to its last cell)
            row = last if last is not None else (fade if isinstance(fade, np.ndarray) else None)
            return self.radio.faded(t.client, row)
        return t.gain if last is None else self.radio.faded(t.client, last)
