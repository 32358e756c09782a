"""The report's section on a network of cells (runs with a cells.csv): for each run, its cells'
load and SINR, from the run's own records: clients.csv (each client's serving cell),
demands.csv (who took part in each round) and events.csv (each transfer's SINR, its
interference); one row per run, and the cells of every network run one by one, each row
naming its run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.runs import group_label
from analysis.tables import markdown_table
from scala_netsim.core.events import DOWNLINK_KINDS, UPLINK_KINDS
from scala_netsim.core.files import (
    CELLS_CSV,
    CLIENTS_CSV,
    DEMANDS_CSV,
    EVENTS_CSV,
    run_file,
)
from scala_netsim.core.results import read_record

UPLINK = sorted(k.value for k in UPLINK_KINDS)
DOWNLINK = sorted(k.value for k in DOWNLINK_KINDS)


def cell_table(folder: Path) -> pd.DataFrame:
    """One row per cell of the network run in `folder`: its site, the clients it serves and
    their share of all clients, its participants per round (mean and most), and the mean
    SINR (dB) of its clients' uplink and downlink transfers and the share of them that
    something interfered with (NaN where the run was kept without its events: regenerate
    them with python -m scala_netsim.tools.regenerate)."""
    cells = read_record(folder, CELLS_CSV)
    serving = read_record(folder, CLIENTS_CSV, usecols=["client_id", "serving_cell"])
    cell_of = serving.set_index("client_id")["serving_cell"]
    table = cells[["cell", "site"]].set_index("cell")
    served = serving["serving_cell"].value_counts()
    table["clients"] = served.reindex(table.index, fill_value=0)
    table["client_share_pct"] = 100 * table["clients"] / len(serving)
    demands = read_record(folder, DEMANDS_CSV, usecols=["round", "client_id"])
    per_round = demands.assign(cell=demands["client_id"].map(cell_of)).groupby(
        ["round", "cell"]).size().unstack(fill_value=0).reindex(columns=table.index,
                                                                fill_value=0)
    table["participants_per_round"] = per_round.mean()
    table["participants_most"] = per_round.max()
    if run_file(folder, EVENTS_CSV).is_file():
        events = read_record(folder, EVENTS_CSV,
                             usecols=["client_id", "kind", "sinr_db", "interference_dbm"])
        events = events.assign(cell=events["client_id"].map(cell_of))
        for name, kinds in (("uplink", UPLINK), ("downlink", DOWNLINK)):
            moved = events[events["kind"].isin(kinds)]
            by_cell = moved.groupby("cell")
            table[f"{name}_sinr_db"] = by_cell["sinr_db"].mean()
            table[f"{name}_interfered_pct"] = 100 * by_cell["interference_dbm"].apply(
                lambda x: float(np.mean(np.isfinite(x))))
    return table.reset_index()


def network_lines(scenario_dir: Path, runs: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The report's section on the network runs among `runs` (none: no lines)."""
    folders = [(row, scenario_dir / row["folder"]) for _, row in runs.iterrows()
               if run_file(scenario_dir / row["folder"], CELLS_CSV).is_file()]
    if not folders:
        return []
    rows, tables = [], []
    for row, folder in folders:
        table = cell_table(folder)
        label = group_label(row["algorithm"], {k: row[k] for k in keys}) + f" seed {row['seed']}"
        tables.append((label, table))
        rows.append({"run": label, "cells": len(table),
                     "clients per cell (min-max)": f"{table['clients'].min()}-"
                                                   f"{table['clients'].max()}",
                     "busiest cell's share (%)": round(table["client_share_pct"].max(), 1),
                     "participants a round, most in a cell": int(table["participants_most"]
                                                                  .max()),
                     **{f"{d} SINR over cells (dB, min / mean / max)": _spread(table, d)
                        for d in ("uplink", "downlink")}})
    # every run's cells, each row naming its run (a run kept without its events: no SINR)
    columns = list(dict.fromkeys(c for _, table in tables for c in table.columns))
    detail = [[label, *(_cell(v) for v in cell)] for label, table in tables
              for cell in table.reindex(columns=columns).itertuples(index=False)]
    return ["## The network's cells", "",
            "Runs in a network of cells (network.layout.kind: hexagonal): how the clients fell "
            "on the cells (clients.csv's serving cell: the strongest), how many took part in a "
            "round per cell (demands.csv), and the mean SINR of each cell's clients' transfers "
            "(events.csv's sinr_db, the SINR over a transfer's blocks and air time; "
            "interfered: the share of transfers some other cell's transfer overlapped).", "",
            markdown_table(list(rows[0]), [list(r.values()) for r in rows]), "",
            f"The cells of every run, one by one ({len(rows)} run{'s' * (len(rows) > 1)}; "
            f"run: as in the table above):", "",
            markdown_table(["run", *(DETAIL_HEADER.get(c, c) for c in columns)], detail), ""]


#: the per-cell table's columns as the report heads them
DETAIL_HEADER = {"client_share_pct": "share of clients (%)",
                 "participants_per_round": "participants a round", "participants_most": "most",
                 "uplink_sinr_db": "uplink SINR (dB)", "uplink_interfered_pct": "interfered (%)",
                 "downlink_sinr_db": "downlink SINR (dB)",
                 "downlink_interfered_pct": "interfered (%)"}


def _cell(value: object) -> str:
    """A number as the per-cell table shows it: whole numbers as they are, others to 2
    decimals, '—' where a cell had no transfer."""
    if isinstance(value, (int, np.integer)):
        return str(value)
    number = float(value)   # type: ignore[arg-type]
    return "—" if np.isnan(number) else f"{number:.2f}"


def _spread(table: pd.DataFrame, direction: str) -> str:
    column = f"{direction}_sinr_db"
    if column not in table or not table[column].notna().any():
        return "(events not kept)"
    values = table[column].dropna()
    return f"{values.min():.1f} / {values.mean():.1f} / {values.max():.1f}"
