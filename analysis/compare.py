"""Comparison of the algorithms of one scenario, from their result folders:
OUT/<scenario>/comparison.csv (its figures are analysis.plots.comparison_figures: plots
imports this module, never the other way round)."""

import json
import math
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import accuracy_of, read_rounds
from scala_netsim.core.files import (
    ATTACK_JSON,
    CLIENTS_CSV,
    COMPARISON_CSV,
    DEMANDS_CSV,
    SUMMARY_JSON,
)
from scala_netsim.core.results import check_finished_run, read_record, read_summary, write_csv

#: the scores of attack.json (scala_netsim.learn.privacy.Reconstruction's fields)
ATTACK_METRICS = ("mse", "ssim", "psnr_db")


def time_to_accuracy_s(rounds: pd.DataFrame, target: float) -> float:
    """Simulated seconds until the test accuracy first reaches `target` (NaN if never)."""
    hit = rounds[rounds["test_acc"] >= target]
    return float(hit["sim_time_s"].iloc[0]) if len(hit) else float("nan")


def accuracy_by_time(curve: np.ndarray, instant_s: float) -> float:
    """The best test accuracy among a run's evaluations made by simulated time `instant_s`
    (`curve`: its evaluated rounds as rows of round, sim_time_s, test_acc; NaN when none was
    made by then)."""
    made = curve[curve[:, 1] <= instant_s, 2]
    return float(made.max()) if len(made) else float("nan")


def energy_to_accuracy_j(rounds: pd.DataFrame, target: float) -> float:
    """The clients' energy (J, rounds.csv's client_energy_j summed) until the test accuracy
    first reaches `target` (NaN if never)."""
    reached = (rounds["test_acc"] >= target).to_numpy()
    if not reached.any():
        return float("nan")
    return float(rounds["client_energy_j"].to_numpy()[:reached.argmax() + 1].sum())


def find_runs(scenario_dir: Path | str,
              algorithms: Collection[str] | None = None) -> Iterator[tuple[dict, Path]]:
    """(summary, run folder) of every finished run under OUT/<scenario>/, sweep's runs
    included (only those of `algorithms` when given)."""
    for path in sorted(Path(scenario_dir).rglob(SUMMARY_JSON)):
        summary = read_summary(path)
        if algorithms is None or summary["algorithm"] in algorithms:
            check_finished_run(path.parent, summary)   # a damaged run is never reported
            yield summary, path.parent


LATE_SHARE = 0.2   # "late": the last fifth of a run's rounds


def late_rounds(rounds: pd.DataFrame) -> pd.DataFrame:
    """The rows of the run's last LATE_SHARE of rounds (rounds after (1 - LATE_SHARE) R)."""
    return rounds[rounds["round"] > (1 - LATE_SHARE) * rounds["round"].max()]


def late_accuracy(rounds: pd.DataFrame) -> float:
    """End-of-training accuracy: the mean test accuracy over the evaluations of the late
    rounds (the last LATE_SHARE of them), the paper's yardstick (its authors' code keeps
    every round's accuracy and never takes a maximum); steadier than the final evaluation
    alone, which one noisy round decides (NaN when none was evaluated there)."""
    return float(late_rounds(rounds)["test_acc"].mean()) if "test_acc" in rounds else math.nan


def late_accuracy_std(rounds: pd.DataFrame) -> float:
    """The sample standard deviation of those evaluations (how much the curve still swings
    at the end; NaN with fewer than two)."""
    return (float(late_rounds(rounds)["test_acc"].std(ddof=1)) if "test_acc" in rounds
            else math.nan)


def class_losses(folder: Path | str, rounds: pd.DataFrame
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """(per class, the share of the selected clients' samples of that class whose client was
    not aggregated; per class, the test accuracy averaged over the last fifth of the rounds,
    as late_accuracy), or None for a run without accuracies (timing-only). The selected
    clients are demands.csv's rows, their labels clients.csv's; a run that records no drops
    (no contrib_label columns: nobody could be dropped) lost nothing."""
    accuracy_columns = [c for c in rounds.columns if c.startswith("acc_class_")]
    if not accuracy_columns:
        return None
    accuracy = late_rounds(rounds)[accuracy_columns].mean().to_numpy()
    columns = [c for c in rounds.columns if c.startswith("contrib_label_")]
    if not columns:
        return np.zeros(len(accuracy_columns)), accuracy
    folder = Path(folder)
    labels = read_record(folder, CLIENTS_CSV).set_index("client_id")
    selected_ids = read_record(folder, DEMANDS_CSV, usecols=["client_id"])["client_id"]
    classes = [c.removeprefix("contrib_") for c in columns]
    selected = labels.loc[selected_ids, classes].to_numpy().sum(0).astype(float)
    aggregated = rounds[columns].to_numpy().sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        lost = np.where(selected > 0, 1 - aggregated / selected, np.nan)
    return lost, accuracy


def run_row(scenario_dir: Path | str, folder: Path | str, summary: dict, rounds: pd.DataFrame,
            targets: Sequence[float]) -> dict:
    """A run's comparison row: its swept values, accuracy (final, best, end-of-training:
    late_accuracy and late_accuracy_std), simulated time to each target
    accuracy, totals; for a run that records energy, the clients' energy in total, split, and
    until each target accuracy; for a run whose clients can be dropped, the fraction dropped
    (in all and per reason), the label bias (mean TV distance) and the rounds without a
    contributor; for a run that was attacked (attack.json), the attack's mean MSE, SSIM and
    PSNR over its seeds (attack_mse, ...) and their standard deviations (attack_mse_std, ...)."""
    row = {"algorithm": summary["algorithm"], "seed": summary["seed"],
           **{k: v for k, v in summary.get("setting", {}).items() if k != "seed"},
           "status": summary["status"],
           "final_acc": accuracy_of(summary, "final_acc"),
           "best_acc": accuracy_of(summary, "best_acc"),
           "best_round": accuracy_of(summary, "best_round"),
           "late_acc": late_accuracy(rounds), "late_acc_std": late_accuracy_std(rounds),
           "rounds": summary["rounds"]}
    for target in targets:
        row[f"time_to_{target:g}_s"] = time_to_accuracy_s(rounds, target)
    row.update({k: summary[k] for k in ("total_sim_time_s", "uplink_bytes", "downlink_bytes",
                                        "client_flops", "server_flops", "wall_time_s")})
    if "client_energy_j" in rounds:   # a run that records energy (scala_netsim.books.radio)
        row.update({k: summary[k] for k in ("client_energy_j", "client_transmit_energy_j",
                                            "client_compute_energy_j")})
        for target in targets:
            row[f"energy_to_{target:g}_j"] = energy_to_accuracy_j(rounds, target)
    if "dropped_fraction" in summary:   # a run whose clients can be dropped (issue 12)
        row.update({k: v for k, v in summary.items()
                    if k.startswith("dropped_fraction") or k in ("label_bias_tv",
                                                                 "rounds_without_contributor")})
    if "staleness_mean" in summary:   # an asynchronous run (issue 28)
        row.update(asynchronous_figures(folder, summary, rounds))
    classes = sorted(str(c) for c in rounds if str(c).startswith("acc_class_"))
    final = rounds.dropna(subset=["test_acc"])
    row["worst_class_acc"] = (float(final[classes].iloc[-1].min()) if classes and len(final)
                              else float("nan"))
    attack = Path(folder) / ATTACK_JSON
    if attack.is_file():   # the model-inversion attack on the run (scala_netsim.tools.attack)
        scores = json.loads(attack.read_text())
        row.update({f"attack_{name}": scores[name]["mean"] for name in ATTACK_METRICS})
        row.update({f"attack_{name}_std": scores[name]["std"] for name in ATTACK_METRICS})
    row["folder"] = str(Path(folder).relative_to(scenario_dir))
    return row


ASYNC_SUMMARY = ("staleness_mean", "staleness_max", "updates_per_client_mean",
                 "updates_per_client_min", "updates_per_client_max", "clients_without_update",
                 "updates_compute_correlation", "updates_gain_correlation")


def asynchronous_figures(folder: Path | str, summary: dict, rounds: pd.DataFrame) -> dict:
    """An asynchronous run's figures on whom its server listened to (summary.json), and the
    label bias of what it took: the total variation distance between the label distribution
    of every update the server took (rounds.csv's contrib_label_<c>, summed over the
    versions) and that of the training set (clients.csv)."""
    figures = {k: summary[k] for k in ASYNC_SUMMARY}
    clients = read_record(folder, CLIENTS_CSV)
    labels = sorted(str(c) for c in clients if str(c).startswith("label_"))
    taken = rounds[[f"contrib_{c}" for c in labels]].sum().to_numpy(dtype=float)
    data = clients[labels].sum().to_numpy(dtype=float)
    figures["server_label_bias_tv"] = (float(0.5 * np.abs(taken / taken.sum()
                                                          - data / data.sum()).sum())
                                       if taken.sum() else float("nan"))
    return figures


def comparison_table(scenario_dir: Path | str, targets: Sequence[float],
                     algorithms: Collection[str] | None = None) -> pd.DataFrame:
    """One row per run (see run_row)."""
    return pd.DataFrame([run_row(scenario_dir, folder, summary,
                                 read_rounds(folder), targets)
                         for summary, folder in find_runs(scenario_dir, algorithms)])


def write_comparison(scenario_dir: Path | str, targets: Sequence[float] = (0.6, 0.7, 0.8),
                     algorithms: Collection[str] | None = None) -> Path:
    """comparison.csv in OUT/<scenario>/ (its figures: analysis.plots.comparison_figures)."""
    path = Path(scenario_dir) / COMPARISON_CSV
    write_csv(path, comparison_table(scenario_dir, targets, algorithms))
    return path
