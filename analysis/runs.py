"""The finished runs of one scenario's results folder as a frame (one row per run, its
summary, setting and comparison columns) with their accuracy curves, and how runs are grouped
and labelled in the report's tables and figures."""

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import pandas as pd  # noqa: E402

from analysis import read_rounds  # noqa: E402
from analysis.compare import class_losses, run_row  # noqa: E402
from scala_netsim.core.errors import Error
from scala_netsim.core.files import EVENTS_CSV, SCENARIO_YAML, SUMMARY_JSON, sweep_points
from scala_netsim.core.naming import compact
from scala_netsim.core.results import read_record, read_summary, read_written_yaml  # noqa: E402

MB, GFLOP = 1e6, 1e9


class ReportError(Error, ValueError):
    """A folder the report cannot be built from."""


# --- reading ---------------------------------------------------------------------------
def load_runs(scenario_dir: Path | str) -> tuple[pd.DataFrame, dict, dict]:
    """(runs, curves, index): one row per finished run folder with its setting and totals;
    curves[folder] = its evaluated rounds (round, sim_time_s, test_acc); the sweep index."""
    scenario_dir = Path(scenario_dir)
    if not scenario_dir.is_dir():
        raise ReportError(f"{scenario_dir}: no such results folder")
    index_path = scenario_dir / "sweep.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    folders = ([scenario_dir / c["folder"] for c in sweep_points(index)] or
               sorted(p.parent for p in scenario_dir.rglob(SUMMARY_JSON)))
    rows, curves = [], {}
    targets = index.get("accuracy_targets", [0.6, 0.7, 0.8])
    for folder in folders:
        if not (folder / SUMMARY_JSON).is_file():
            continue  # a cell not run (yet)
        summary = read_summary(folder / SUMMARY_JSON)
        scenario = read_written_yaml(folder / SCENARIO_YAML)
        rounds = read_rounds(folder)
        row = run_row(scenario_dir, folder, summary, rounds, targets)
        row["retimed"] = bool(summary.get("retimed_from"))
        row["class_losses"] = class_losses(folder, rounds)
        row["timing_only"] = bool(summary.get("timing_only"))
        for key in summary.get("setting", {}):
            if key in row:
                row[key] = _hashable(row[key])
        done = max(int(summary["rounds"]), 1)
        events = read_record(folder, EVENTS_CSV, usecols=["kind", "payload_bytes"])
        by_kind = events.groupby("kind")["payload_bytes"].sum()
        row.update({
            "local_iters": scenario["training"]["local_iters"],
            "time_budget_s": scenario["training"].get("time_budget_s"),
            "time_per_round_s": summary["total_sim_time_s"] / done,
            "uplink_MB": summary["uplink_bytes"] / MB,
            "downlink_MB": summary["downlink_bytes"] / MB,
            "uplink_MB_per_round": summary["uplink_bytes"] / MB / done,
            "downlink_MB_per_round": summary["downlink_bytes"] / MB / done,
            "activation_MB_per_round": float(by_kind.get("activation_upload", 0)) / MB / done,
            "model_MB_per_round": float(by_kind.get("model_upload", 0)
                                        + by_kind.get("model_download", 0)) / MB / done,
            "client_GFLOP": summary["client_flops"] / GFLOP,
            "client_GFLOP_per_round": summary["client_flops"] / GFLOP / done,
            "server_GFLOP": summary["server_flops"] / GFLOP,
            # the spread of the round's latency over the run's rounds
            "round_time_mean_s": float(rounds["round_time_s"].mean()),
            "round_time_median_s": float(rounds["round_time_s"].median()),
            "round_time_std_s": float(rounds["round_time_s"].std(ddof=0)),
            "round_time_p95_s": float(rounds["round_time_s"].quantile(0.95)),
            "round_time_max_s": float(rounds["round_time_s"].max()),
            "energy_J": row.get("client_energy_j", math.nan),
            "energy_J_per_round": row.get("client_energy_j", math.nan) / done,
            "transmit_J_per_round": row.get("client_transmit_energy_j", math.nan) / done,
        })
        rows.append(row)
        curves[row["folder"]] = rounds.dropna(subset=["test_acc"])[
            ["round", "sim_time_s", "test_acc"]].to_numpy()
    if not rows:
        raise ReportError(f"{scenario_dir}: no finished runs (no summary.json) to report on")
    index.setdefault("accuracy_targets", targets)
    index.setdefault("sweep", {})
    return pd.DataFrame(rows), curves, index


def _hashable(value: Any) -> Any:
    """Swept lists and mappings as text, so they can label groups."""
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def setting_keys(index: dict) -> list[str]:
    """The swept keys other than the seed (the seed is what the statistics run over)."""
    return [k for k in index["sweep"] if k != "seed"]


def short(key: str) -> str:
    return key.split(".")[-1]


def group_label(algorithm: str, setting: dict) -> str:
    return " ".join([algorithm, *(f"{short(k)}={_fmt_value(v)}" for k, v in setting.items())])


def _fmt_value(v: Any) -> str:
    """A setting's value in a label or a table: a swept mapping or list (held as its JSON
    text, `_hashable`) by the short name its folder has (core.naming.compact)."""
    if isinstance(v, str) and v[:1] in ("[", "{"):
        try:
            return compact(json.loads(v), v)
        except ValueError:
            return v
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def groups(runs: pd.DataFrame, keys: Sequence[str]) -> list[tuple[str, dict, pd.DataFrame]]:
    """[(algorithm, setting dict, rows)] in the order the runs were listed."""
    by = ["algorithm", *keys]
    out = []
    for group, rows in runs.groupby(by, sort=False, dropna=False):
        values = group if isinstance(group, tuple) else (group,)
        out.append((str(values[0]), dict(zip(keys, values[1:], strict=True)), rows))
    return out
