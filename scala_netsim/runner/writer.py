"""The run folder's files as a run goes: the growing tables rewritten atomically at a pace
that keeps their cost small, the summary written last, the final model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import torch

from scala_netsim.books.blocks import AirRecord, fading_columns
from scala_netsim.books.traffic import load_table
from scala_netsim.config.scenario import Scenario, scenario_yaml
from scala_netsim.core.columns import (
    COUPLING_COLUMNS,
    DEMAND_COLUMNS,
    HANDOVER_COLUMNS,
    MOVE_COLUMNS,
    TRAFFIC_AIR_COLUMNS,
    TRAFFIC_COLUMNS,
)
from scala_netsim.core.files import (
    AIR_CSV,
    CELLS_CSV,
    CLIENTS_CSV,
    COUPLING_CSV,
    DEMANDS_CSV,
    DIGESTED_FILES,
    EVENTS_CSV,
    FADING_CSV,
    HANDOVERS_CSV,
    LOAD_CSV,
    MOBILITY_CSV,
    RECORD_FILES,
    ROUNDS_CSV,
    SCENARIO_YAML,
    SUMMARY_JSON,
    TRAFFIC_AIR_CSV,
    TRAFFIC_CSV,
)
from scala_netsim.core.results import (
    file_sha256,
    write_atomic,
    write_csv,
    write_json,
    write_rows_csv,
    write_text,
)
from scala_netsim.learn.contract import Trainer
from scala_netsim.runner.air_files import coupling_rows
from scala_netsim.runner.world import World, cells_frame, clients_frame

if TYPE_CHECKING:
    from scala_netsim.runner.loop import Run
    from scala_netsim.sim.network.traffic import Background



def save_final_model(path: Path, trainer: Trainer) -> None:
    """model.pt: the trained global model at the end of a run, {"modules": {name: state
    dict}} as the trainer keeps them (split algorithms: "client" and "server"; FL: "client",
    the whole model; FedConcat: its clusters and classifier), on the CPU, written atomically.
    The attack (scala_netsim.tools.attack) reads it. Nothing is written for a trainer that names no
    persistent modules (its whole state, optimisers and per-client extras, is not built)."""
    modules = trainer.persistent_modules()
    if modules is None:
        return
    data = {"modules": {name: {k: t.detach().cpu() for k, t in module.state_dict().items()}
                        for name, module in modules.items()}}
    write_atomic(path, lambda f: torch.save(data, f), binary=True)


class RunWriter:
    """The files of one run folder: scenario.yaml and clients.csv (a network's cells.csv and
    coupling.csv) at the start, rounds.csv, events.csv, demands.csv (a network's air.csv)
    rewritten (atomically) as the run goes, summary.json at the end.

    Each rewrite writes the whole table, which grows with the run: `flush(run)` (after an
    evaluated round) is skipped while less than FLUSH_PACE times the last rewrite's duration
    has passed since it, so that rewriting costs at most ~1/FLUSH_PACE of the run's wall time
    (every evaluated round while the files are small; a 500-round run's 400,000-event table
    takes seconds to write). `flush(run, now=True)` (checkpoints, the end, a divergence)
    always writes."""

    FLUSH_PACE = 20.0

    def __init__(self, folder: Path, scenario: Scenario, world: World) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text(self.folder / SCENARIO_YAML, scenario_yaml(scenario))
        write_csv(self.folder / CLIENTS_CSV, clients_frame(world))
        cells = cells_frame(world.cell)
        if cells is not None:
            write_csv(self.folder / CELLS_CSV, cells)
        coupling = coupling_rows(world.cell)
        if coupling is not None:
            write_rows_csv(self.folder / COUPLING_CSV, COUPLING_COLUMNS, coupling)
        self._next_flush = 0.0   # perf_counter time before which a flush is skipped

    def flush(self, run: Run, now: bool = False) -> None:
        start = time.perf_counter()
        if not now and start < self._next_flush:
            return
        self._write(run)
        end = time.perf_counter()
        self._next_flush = end + self.FLUSH_PACE * (end - start)

    def _write(self, run: Run) -> None:
        rounds = pd.DataFrame(run.rows)
        if run.scenario.timing_only:   # nothing was evaluated
            rounds = rounds.drop(columns="test_acc")
        write_csv(self.folder / ROUNDS_CSV, rounds)
        write_rows_csv(self.folder / EVENTS_CSV, *run.event_table())
        write_rows_csv(self.folder / DEMANDS_CSV, DEMAND_COLUMNS, run.log.demands)
        air = run.link.air_record()
        if air is not None:
            write_rows_csv(self.folder / AIR_CSV, air.columns, air.rows)
            if air.fades:
                write_rows_csv(self.folder / FADING_CSV, fading_columns(air.settings.fade_key),
                               air.fades)
            background = getattr(run.link, "background", None)
            if background is not None:
                self._write_traffic(run, background, air)
            mobility = getattr(run.link, "mobility", None)
            if mobility is not None:
                write_rows_csv(self.folder / MOBILITY_CSV, MOVE_COLUMNS, mobility.move_rows)
                write_rows_csv(self.folder / HANDOVERS_CSV, HANDOVER_COLUMNS,
                               mobility.handover_rows)

    def _write_traffic(self, run: Run, background: Background, air: AirRecord) -> None:
        """load.csv of a network with other users' traffic up to now, and recording each file
        traffic.csv and traffic_air.csv."""
        if background.settings.record_files:
            files, files_air = background.record()
            write_rows_csv(self.folder / TRAFFIC_CSV, TRAFFIC_COLUMNS, files)
            write_rows_csv(self.folder / TRAFFIC_AIR_CSV, TRAFFIC_AIR_COLUMNS, files_air)
        write_csv(self.folder / LOAD_CSV, load_table(
            background.load_rows(), air.frame(), air.settings, background.offered_load,
            background.began, run.env.now))

    def summary(self, data: dict) -> None:
        """summary.json, with the SHA-256 of the record files it vouches for (a re-timing
        refuses a folder whose files are not the ones its run wrote)."""
        data = dict(data, files_sha256={name: file_sha256(self.folder / name)
                                        for name in DIGESTED_FILES
                                        if name in RECORD_FILES
                                        or (self.folder / name).is_file()})
        write_json(self.folder / SUMMARY_JSON, data)


#: the files of a run folder that record what happened (summary.json holds their digests)
