"""summary.json of a run: its figures from its rows of rounds.csv and what it is (the
summary's one home; scala_netsim.runner.execute writes it last)."""

from __future__ import annotations

import math
from typing import Any, Protocol

import pandas as pd
import simpy
import torch

from scala_netsim.config.scenario import Scenario
from scala_netsim.core.events import DROP_REASONS
from scala_netsim.runner.drivers import Driver
from scala_netsim.runner.radio_record import ENERGY_COLUMNS
from scala_netsim.runner.world import World


class Summarised(Protocol):
    """What a summary reads of a run (scala_netsim.runner.loop.Run)."""

    scenario: Scenario
    algorithm: str
    world: World
    rows: list[dict]
    best: tuple[float, int]
    env: simpy.Environment
    records_drops: bool
    driver: Driver[Any]


def run_summary(run: Summarised, status: str, setting: dict, wall_time_s: float,
                resumed_from_round: int | None, device: torch.device,
                retimed_from: str | None = None) -> dict:
    """summary.json of `run` as it stands: what it is, its status, accuracy (none for a
    timing-only run), simulated time, bytes, FLOPs, energy, drops, the driver's figures, its
    wall time, where it resumed and what it was re-timed from, its device."""
    frame = pd.DataFrame(run.rows)
    evaluated = frame["test_acc"].dropna()
    timing_only = run.scenario.timing_only
    accuracy = {} if timing_only else {   # a timing-only run evaluates nothing
        "final_acc": float(evaluated.iloc[-1]) if len(evaluated) else math.nan,
        "best_acc": float(run.best[0]),
        "best_round": int(run.best[1]),
    }
    return {
        "scenario": run.scenario.name,
        "algorithm": run.algorithm,
        "seed": run.scenario.seed,
        "setting": dict(setting),
        "status": status,
        "rounds": int(frame["round"].iloc[-1]),
        **accuracy,
        "total_sim_time_s": float(run.env.now),
        "uplink_bytes": int(frame["uplink_bytes"].sum()),
        "downlink_bytes": int(frame["downlink_bytes"].sum()),
        "client_flops": int(frame["client_flops"].sum()),
        "server_flops": int(frame["server_flops"].sum()),
        **{column: float(frame[column].sum()) for column in ENERGY_COLUMNS
           if column in frame},
        **(drop_summary(frame) if run.records_drops else {}),
        **run.driver.summary(run.world.cell.flops_per_s, run.world.cell.gain_linear),
        "wall_time_s": wall_time_s,
        "resumed_from_round": resumed_from_round,
        "retimed_from": retimed_from,
        "device": str(device),
        **({"timing_only": True} if timing_only else {}),
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
