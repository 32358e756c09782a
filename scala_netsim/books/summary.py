"""summary.json of a run: its figures from its rows of rounds.csv and what it is (the
summary's one home; scala_netsim.runner.execute writes it last)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from scala_netsim.core.columns import ENERGY_COLUMNS, TOTAL_COLUMNS
from scala_netsim.core.events import DROP_REASONS


@dataclass(frozen=True)
class RunAbout:
    """What a run is: its scenario's name, algorithm, seed and the sweep's setting, its
    status, and whether it is timing-only (no accuracy) and records drops."""

    scenario: str
    algorithm: str
    seed: int
    setting: dict
    status: str
    timing_only: bool
    records_drops: bool


@dataclass(frozen=True)
class Provenance:
    """How a run came about: its wall time, the round it resumed from, the run it was re-timed
    from, the device it ran on."""

    wall_time_s: float
    resumed_from_round: int | None
    retimed_from: str | None
    device: str


def run_summary(about: RunAbout, rows: list[dict], best: tuple[float, int],
                sim_time_s: float, driver_figures: dict, provenance: Provenance) -> dict:
    """summary.json of a run as it stands from its rows of rounds.csv: what it is, its
    status, accuracy (none for a timing-only run; `best` is (accuracy, round)), simulated
    time, bytes, FLOPs, energy, drops, the driver's figures, its wall time, where it resumed
    and what it was re-timed from, its device."""
    frame = pd.DataFrame(rows)
    evaluated = frame["test_acc"].dropna()
    accuracy = {} if about.timing_only else {   # a timing-only run evaluates nothing
        "final_acc": float(evaluated.iloc[-1]) if len(evaluated) else math.nan,
        "best_acc": float(best[0]),
        "best_round": int(best[1]),
    }
    return {
        "scenario": about.scenario,
        "algorithm": about.algorithm,
        "seed": about.seed,
        "setting": dict(about.setting),
        "status": about.status,
        "rounds": int(frame["round"].iloc[-1]),
        **accuracy,
        "total_sim_time_s": float(sim_time_s),
        **{column: int(frame[column].sum()) for column in TOTAL_COLUMNS},
        **{column: float(frame[column].sum()) for column in ENERGY_COLUMNS
           if column in frame},
        **(drop_summary(frame) if about.records_drops else {}),
        **driver_figures,
        "wall_time_s": provenance.wall_time_s,
        "resumed_from_round": provenance.resumed_from_round,
        "retimed_from": provenance.retimed_from,
        "device": provenance.device,
        **({"timing_only": True} if about.timing_only else {}),
    }


def drop_summary(frame: pd.DataFrame) -> dict:
    """summary.json's figures on drops from rounds.csv: the fraction of selected clients
    dropped (and per reason), the label bias (label_bias_tv) averaged over the rounds that
    had a contributor, and how many rounds had none."""
    selected = int(frame["num_selected"].sum())
    return {
        "dropped_fraction": int(frame["num_dropped"].sum()) / selected,
        **{f"dropped_fraction_{reason}": int(frame[f"num_dropped_{reason}"].sum()) / selected
           for reason in DROP_REASONS},
        "label_bias_tv": (float(frame["label_bias_tv"].mean())
                          if frame["label_bias_tv"].notna().any() else math.nan),
        "rounds_without_contributor": int((frame["num_contributing"] == 0).sum()),
    }
