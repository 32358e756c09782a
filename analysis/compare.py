"""Comparison of the algorithms of one scenario, from their result folders:
OUT/<scenario>/comparison.csv, accuracy_vs_time.png and accuracy_vs_rounds.png."""

import json
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import accuracy_of, read_rounds  # noqa: E402
from analysis.plots import time_unit  # noqa: E402
from scala_netsim.results import write_csv  # noqa: E402


def time_to_accuracy_s(rounds: pd.DataFrame, target: float) -> float:
    """Simulated seconds until the test accuracy first reaches `target` (NaN if never)."""
    hit = rounds[rounds["test_acc"] >= target]
    return float(hit["sim_time_s"].iloc[0]) if len(hit) else float("nan")


def find_runs(scenario_dir: Path | str,
              algorithms: Collection[str] | None = None) -> Iterator[tuple[dict, Path]]:
    """(summary, run folder) of every finished run under OUT/<scenario>/, sweep cells
    included (only those of `algorithms` when given)."""
    for path in sorted(Path(scenario_dir).rglob("summary.json")):
        summary = json.loads(path.read_text())
        if algorithms is None or summary["algorithm"] in algorithms:
            yield summary, path.parent


def run_row(scenario_dir: Path | str, folder: Path | str, summary: dict, rounds: pd.DataFrame,
            targets: Sequence[float]) -> dict:
    """A run's comparison row: its swept values, accuracy, simulated time to each target
    accuracy, totals."""
    row = {"algorithm": summary["algorithm"], "seed": summary["seed"],
           **{k: v for k, v in summary.get("setting", {}).items() if k != "seed"},
           "status": summary["status"],
           "final_acc": accuracy_of(summary, "final_acc"),
           "best_acc": accuracy_of(summary, "best_acc"),
           "best_round": accuracy_of(summary, "best_round"), "rounds": summary["rounds"]}
    for target in targets:
        row[f"time_to_{target:g}_s"] = time_to_accuracy_s(rounds, target)
    row.update({k: summary[k] for k in ("total_sim_time_s", "uplink_bytes", "downlink_bytes",
                                        "client_flops", "server_flops", "wall_time_s")})
    row["folder"] = str(Path(folder).relative_to(scenario_dir))
    return row


def comparison_table(scenario_dir: Path | str, targets: Sequence[float],
                     algorithms: Collection[str] | None = None) -> pd.DataFrame:
    """One row per run (see run_row)."""
    return pd.DataFrame([run_row(scenario_dir, folder, summary,
                                 read_rounds(folder), targets)
                         for summary, folder in find_runs(scenario_dir, algorithms)])


def _curves(scenario_dir: Path, x_column: str,
            algorithms: Collection[str] | None) -> dict[str, list[np.ndarray]]:
    curves = {}
    for summary, folder in find_runs(scenario_dir, algorithms):
        rounds = read_rounds(folder).dropna(subset=["test_acc"])
        curve = rounds[[x_column, "test_acc"]].to_numpy()
        curves.setdefault(summary["algorithm"], []).append(curve)
    return curves


def _comparison_figure(scenario_dir: Path, x_column: str, path: Path, title: str,
                       algorithms: Collection[str] | None) -> None:
    curves = _curves(scenario_dir, x_column, algorithms)
    if not curves:
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    span = max((c[:, 0].max() for runs in curves.values() for c in runs if len(c)), default=0.0)
    divisor, x_label = time_unit(span) if x_column == "sim_time_s" else (1.0, "global round")
    for algorithm, runs in sorted(curves.items()):
        for i, c in enumerate(runs):  # one line per seed, one colour per algorithm
            ax.plot(c[:, 0] / divisor, 100 * c[:, 1], lw=1.3, marker=".", ms=3,
                    color=f"C{sorted(curves).index(algorithm) % 10}",
                    label=algorithm if i == 0 else None)
    ax.set_xlabel(x_label)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_comparison(scenario_dir: Path | str, targets: Sequence[float] = (0.6, 0.7, 0.8),
                     algorithms: Collection[str] | None = None) -> list[Path]:
    """comparison.csv and the two comparison figures in OUT/<scenario>/."""
    scenario_dir = Path(scenario_dir)
    table = comparison_table(scenario_dir, targets, algorithms)
    written = [scenario_dir / "comparison.csv", scenario_dir / "accuracy_vs_time.png",
               scenario_dir / "accuracy_vs_rounds.png"]
    write_csv(written[0], table)
    if "final_acc" not in table or table["final_acc"].isna().all():
        return written[:1]   # timing-only runs: no accuracy to draw
    _comparison_figure(scenario_dir, "sim_time_s", written[1],
                       f"{scenario_dir.name}: accuracy against simulated time", algorithms)
    _comparison_figure(scenario_dir, "round", written[2],
                       f"{scenario_dir.name}: accuracy against rounds", algorithms)
    return written
