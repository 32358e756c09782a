"""A run's books checked together, by the checks of scala_netsim.books: its events, rounds,
grants and transfers (books.invariants.check_run), its driver's books, its link's own, a
network's air record (books.blocks), and its drops (check_drops). `Run.problems` asks this."""

from __future__ import annotations

import math
from typing import Any
from typing import Protocol as Structural

import numpy as np
import pandas as pd

from scala_netsim.books.air_rates import AIR_RATES_CHECKED_UP_TO, air_rate_problems, air_rate_work
from scala_netsim.books.blocks import air_problems, round_robin_problems
from scala_netsim.books.duplexing import Duplexing
from scala_netsim.books.handovers import handover_problems
from scala_netsim.books.invariants import (
    DropSettings,
    RadioSettings,
    check_drops,
    check_run,
)
from scala_netsim.books.tables import aggregations_frame, grants_frame, transfers_frame
from scala_netsim.books.traffic import traffic_frame, with_background
from scala_netsim.core.events import EventLog
from scala_netsim.learn.contract import Trainer
from scala_netsim.runner.drivers import Driver
from scala_netsim.runner.world import World
from scala_netsim.sim.link import Link
from scala_netsim.sim.protocols import Protocol


class Checked(Structural):
    """What the checks read of a run (scala_netsim.runner.loop.Run): its tables, books and
    the pieces that keep them."""

    rows: list[dict]
    world: World
    link: Link
    protocol: Protocol      # the protocol of rounds: its `pipelined_clients`
    driver: Driver[Any]
    trainer: Trainer
    log: EventLog
    records_drops: bool
    aggregation_rows: list[tuple]

    def event_table(self) -> tuple[tuple[str, ...], list[tuple]]: ...

    def radio_settings(self) -> RadioSettings | None: ...

    def duplexing(self) -> Duplexing | None: ...


def run_problems(run: Checked) -> list[str]:
    """Broken invariants of `run` so far: its events, rounds, grants and transfers
    (check_run), its driver's books (asynchronous versions), its link's (a network's grants
    of blocks and turns), a network's air record (its blocks; its rates derived again where
    its work is at most AIR_RATES_CHECKED_UP_TO) and, where clients can be dropped, the
    drops (check_drops)."""
    columns, rows = run.event_table()
    events, rounds = pd.DataFrame(rows, columns=list(columns)), pd.DataFrame(run.rows)
    cells = 1 if run.world.cell.network is None else len(run.world.cell.network.cells)
    band_hz = {"uplink": cells * run.world.cell.uplink_bandwidth_hz,
               "downlink": cells * run.world.cell.downlink_bandwidth_hz}
    network = run.world.cell.network is not None
    transfers = transfers_frame(run.link.transfer_rows, network,
                                network and "harq_wait_s" in columns,
                                network and "handovers" in columns)
    band_rows = run.link.band_grant_rows()
    problems = check_run(events, rounds, grants_frame(run.link.grant_rows), transfers,
                         band_hz, run.protocol.pipelined_clients, run.radio_settings(),
                         slots=run.driver.slots,
                         band_grants=None if band_rows is None else grants_frame(band_rows),
                         duplexing=run.duplexing(),
                         per_instant=getattr(getattr(run.link, "settings", None), "per_instant",
                                             False))
    problems.extend(run.driver.problems(events, rounds, transfers, band_hz))
    problems.extend(run.link.problems())
    air = run.link.air_record()
    if air is not None and air.rows:      # (none where every transfer was cut before it)
        # other users' files, if any: the checks below that need every holder of a block
        # run where each file is recorded (network.traffic.record_files), or none is
        # simulated (model fluid: their load is in the air settings)
        background = getattr(run.link, "background", None)
        unrecorded = background is not None and not (background.settings.record_files
                                                     or background.settings.fluid)
        files, files_air = ([], []) if background is None else background.record()
        frame = with_background(air.frame(), files_air)
        # an asynchronous run stops with transfers in flight, not in the books: the air
        # after the earliest of their starts is checked no further (what was recorded is
        # kept whole: the transfers that end later were the others' interferers)
        until = getattr(run.link, "recorded_until", math.inf)
        problems.extend(air_problems(frame, air.settings.blocks))
        if unrecorded:
            return problems + _drop_problems(run, events, rounds)
        if "cap_blocks" in frame:           # per instant: work-conserving, instant by instant
            problems.extend(round_robin_problems(frame, air.settings.blocks, until))
        index = frame["event_index"].to_numpy()
        air_rounds = np.where(index >= 0, events["round"].to_numpy()[np.maximum(index, 0)], -1)
        problems.extend(_mobility_problems(run, frame, events))
        if air_rate_work(frame, air_rounds,
                         air.settings.coherence_s) <= AIR_RATES_CHECKED_UP_TO:
            problems.extend(air_rate_problems(
                frame, events, air.settings, until=until,
                traffic=None if background is None else traffic_frame(files)))
    return problems + _drop_problems(run, events, rounds)


def _mobility_problems(run: Checked, air: pd.DataFrame, events: pd.DataFrame) -> list[str]:
    """With moving clients, their moves and handovers against their paths, A3 and the air
    record (books.handovers.handover_problems)."""
    mobility = getattr(run.link, "mobility", None)
    if mobility is None:
        return []
    mobile = mobility.mobile
    return handover_problems(mobility.move_rows, mobility.handover_rows, air, events,
                             mobile.event, mobile.rsrp_at, mobile.position)


def _drop_problems(run: Checked, events: pd.DataFrame, rounds: pd.DataFrame) -> list[str]:
    """Where clients can be dropped, the drops' (check_drops)."""
    if not run.records_drops:
        return []
    aggregations = (aggregations_frame(run.aggregation_rows)
                    if run.trainer.aggregations is not None else None)
    return check_drops(events, rounds, run.log.demands_frame(), DropSettings(
        run.world.label_counts, aggregations))
