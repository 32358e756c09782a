"""The report's markdown tables (mean and standard deviation over seeds)."""

from collections.abc import Sequence

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from numpy.typing import ArrayLike  # noqa: E402

from analysis.compare import accuracy_by_time  # noqa: E402
from analysis.runs import _fmt_value, groups, short  # noqa: E402
from scala_netsim.core.events import DROP_REASONS  # noqa: E402

MB, GFLOP = 1e6, 1e9


def mean_std(values: ArrayLike, scale: float = 1.0, digits: int = 2) -> str:
    values = np.asarray(values, dtype=float) * scale
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}"


def reach_text(times: ArrayLike) -> str:
    """Mean ± std of the seeds that reached a target, and how many did."""
    times = np.asarray(times, dtype=float)
    reached = np.isfinite(times)
    if not reached.any():
        return f"not reached (0/{len(times)})"
    text = mean_std(times[reached], digits=0)
    return text if reached.all() else f"{text} ({reached.sum()}/{len(times)})"


def seed_times(group: pd.DataFrame, targets: Sequence[str] = ("0.7", "0.8")) -> dict:
    """A group of a comparison's runs (one algorithm and case, sorted by seed): for each
    accuracy target its time's mean over the seeds and each seed's (time_to_<t>_s,
    time_to_<t>_s_per_seed), as the studies' tables write them."""
    row: dict = {}
    for target in targets:
        values = group[f"time_to_{target}_s"].astype(float)
        row[f"time_to_{target}_s"] = values.mean()
        row[f"time_to_{target}_s_per_seed"] = " ".join(f"{t:.1f}" for t in values)
    return row


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def accuracy_table(runs: pd.DataFrame, keys: Sequence[str], targets: Sequence[float],
                   with_accuracy: bool = True) -> str:
    """Accuracy and simulated time per group, mean ± std over its seeds; the accuracy
    columns lead with end-of-training accuracy (the mean of the evaluations in the last 20 %
    of the rounds, analysis.compare.late_accuracy), then the final evaluation, then the best
    of the evaluations; `with_accuracy` False (timing-only runs): the simulated time alone."""
    targets = targets if with_accuracy else []
    drops = "dropped_fraction" in runs   # runs whose clients can be dropped
    header = ["algorithm", *map(short, keys), "seeds",
              *(["end-of-training acc (%)", "final acc (%)", "best of evaluations (%)"]
                if with_accuracy else []),
              "time / round (s)", "total sim. time (s)",
              *(f"time to {100 * t:g} % (s)" for t in targets),
              *(["dropped (%)", "label bias (TV)"] if drops else [])]
    rows = []
    for algorithm, setting, g in groups(runs, keys):
        accuracy = [mean_std(g["late_acc"], 100), mean_std(g["final_acc"], 100),
                    mean_std(g["best_acc"], 100)]
        rows.append([algorithm, *map(_fmt_value, setting.values()), len(g),
                     *(accuracy if with_accuracy else []),
                     mean_std(g["time_per_round_s"]), mean_std(g["total_sim_time_s"], digits=0),
                     *(reach_text(g[f"time_to_{t:g}_s"]) for t in targets),
                     *([mean_std(g["dropped_fraction"], 100, digits=1),
                        mean_std(g["label_bias_tv"], digits=3)] if drops else [])])
    return markdown_table(header, rows)


def cost_table(runs: pd.DataFrame, keys: Sequence[str]) -> str:
    header = ["algorithm", *map(short, keys), "T", "uplink MB / round", "downlink MB / round",
              "activations+labels up MB / round", "models up+down MB / round",
              "uplink MB total", "downlink MB total", "client GFLOP / round",
              "client GFLOP total", "server GFLOP total"]
    rows = []
    for algorithm, setting, g in groups(runs, keys):
        rows.append([algorithm, *map(_fmt_value, setting.values()),
                     "/".join(map(str, sorted(set(g["local_iters"])))),
                     mean_std(g["uplink_MB_per_round"], digits=3),
                     mean_std(g["downlink_MB_per_round"], digits=3),
                     mean_std(g["activation_MB_per_round"], digits=3),
                     mean_std(g["model_MB_per_round"], digits=3),
                     mean_std(g["uplink_MB"], digits=1), mean_std(g["downlink_MB"], digits=1),
                     mean_std(g["client_GFLOP_per_round"], digits=1),
                     mean_std(g["client_GFLOP"], digits=0), mean_std(g["server_GFLOP"], digits=0)])
    return markdown_table(header, rows)


DROP_REASON_NAMES = {"deadline": "deadline", "step_deadline": "step deadline",
                     "lost": "lost transfer", "over_selection": "over-selection"}


def privacy_table(runs: pd.DataFrame, keys: Sequence[str], targets: Sequence[float]) -> str:
    """The SCALA journal's Table VI form, for the attacked runs: accuracy and the attack's
    reconstruction MSE, SSIM and PSNR, with the bytes sent up per round and the simulated
    time to each target."""
    header = ["algorithm", *map(short, keys), "seeds", "final acc (%)", "MSE", "SSIM",
              "PSNR (dB)", "uplink MB / round", *(f"time to {100 * t:g} % (s)" for t in targets)]
    rows = []
    for algorithm, setting, g in groups(runs.dropna(subset=["attack_mse"]), keys):
        rows.append([algorithm, *map(_fmt_value, setting.values()), len(g),
                     mean_std(g["final_acc"], 100), mean_std(g["attack_mse"], digits=4),
                     mean_std(g["attack_ssim"], digits=4), mean_std(g["attack_psnr_db"]),
                     mean_std(g["uplink_MB_per_round"], digits=3),
                     *(reach_text(g[f"time_to_{t:g}_s"]) for t in targets)])
    return markdown_table(header, rows)


def drops_table(runs: pd.DataFrame, keys: Sequence[str]) -> str:
    """Who the network dropped (runs whose clients can be dropped): the fraction of selected
    clients dropped, in all and per reason, the label bias (total variation distance between
    the contributors' and the selected clients' label distributions, averaged over rounds),
    the rounds nobody contributed to, and the accuracy, mean ± std over seeds."""
    header = ["algorithm", *map(short, keys), "dropped (%)",
              *(f"{DROP_REASON_NAMES[reason]} (%)" for reason in DROP_REASONS),
              "label bias (TV)", "rounds without contributor", "final acc (%)"]
    rows = []
    for algorithm, setting, g in groups(runs, keys):
        rows.append([algorithm, *map(_fmt_value, setting.values()),
                     mean_std(g["dropped_fraction"], 100, digits=1),
                     *(mean_std(g[f"dropped_fraction_{reason}"], 100, digits=1)
                       for reason in DROP_REASONS),
                     mean_std(g["label_bias_tv"], digits=3),
                     mean_std(g["rounds_without_contributor"], digits=1),
                     mean_std(g["final_acc"], 100)])
    return markdown_table(header, rows)


def asynchronous_table(runs: pd.DataFrame, keys: Sequence[str]) -> str:
    """Whom the asynchronous servers listened to, and what it cost in labels: versions made,
    staleness (mean, max), updates per client (mean, min-max, share with none), their
    correlation with the clients' FLOP/s and channel gain, the label bias of what the server
    took (analysis.compare.asynchronous_figures), and for every run the final accuracy of its
    worst class beside its final accuracy."""
    header = ["algorithm", *map(short, keys), "versions", "staleness mean", "staleness max",
              "updates / client", "min-max", "clients without update (%)",
              "corr. with FLOP/s", "corr. with gain", "server label bias (TV)",
              "worst class final acc (%)", "final acc (%)"]
    rows = []
    for algorithm, setting, g in groups(runs, keys):
        asynchronous = "staleness_mean" in g and g["staleness_mean"].notna().any()
        figures = ([mean_std(g["rounds"], digits=0), mean_std(g["staleness_mean"]),
                    mean_std(g["staleness_max"], digits=0),
                    mean_std(g["updates_per_client_mean"]),
                    f"{int(g['updates_per_client_min'].min())}-"
                    f"{int(g['updates_per_client_max'].max())}",
                    mean_std(g["clients_without_update"], 100, digits=0),
                    mean_std(g["updates_compute_correlation"]),
                    mean_std(g["updates_gain_correlation"]),
                    mean_std(g["server_label_bias_tv"], digits=3)]
                   if asynchronous else [mean_std(g["rounds"], digits=0)] + ["-"] * 8)
        rows.append([algorithm, *map(_fmt_value, setting.values()), *figures,
                     mean_std(g["worst_class_acc"], 100), mean_std(g["final_acc"], 100)])
    return markdown_table(header, rows)


def equal_time_table(runs: pd.DataFrame, curves: dict, keys: Sequence[str],
                     instants: Sequence[float]) -> str:
    """Accuracy at equal simulated time: per group, the best test accuracy among the
    evaluations each run made by each instant (analysis.compare.accuracy_by_time; a seed that
    had made none by then is left out of the mean and counted in brackets), and when the
    runs' last versions ended."""
    header = ["algorithm", *map(short, keys),
              *(f"best acc by {t:,.0f} s (%)" for t in instants), "last version ends (s)"]
    rows = []
    for algorithm, setting, g in groups(runs, keys):
        cells = []
        for instant in instants:
            accuracies = np.array([accuracy_by_time(curves[f], instant) for f in g["folder"]])
            made = np.isfinite(accuracies)
            text = mean_std(accuracies[made], 100) if made.any() else "no evaluation yet"
            cells.append(text if made.all() or not made.any()
                         else f"{text} ({made.sum()}/{len(made)})")
        rows.append([algorithm, *map(_fmt_value, setting.values()), *cells,
                     mean_std(g["total_sim_time_s"], digits=0)])
    return markdown_table(header, rows)


def paired_change_table(runs: pd.DataFrame, key: str, keys: Sequence[str]) -> str:
    """What each value of a swept key (a deadline) costs each algorithm against the key's
    first value (the baseline): the change in end-of-training accuracy (the mean over the
    evaluations of the last fifth of the rounds, analysis.compare.late_accuracy), final and
    best accuracy, seed by seed (the same
    seed: the same partition, cell and selections), mean ± std over seeds in percentage
    points, beside the share of clients dropped and the label bias."""
    values = list(dict.fromkeys(runs[key]))
    others = [k for k in keys if k != key]
    header = ["algorithm", *map(short, others), short(key), "dropped (%)", "label bias (TV)",
              "Δ end-of-training acc vs " + _fmt_value(values[0]) + " (pp)",
              "Δ final acc (pp)", "Δ best of evaluations (pp)", "seeds paired"]
    rows = []
    for algorithm, setting, g in groups(runs, others):
        base = g[g[key] == values[0]].set_index("seed")
        for value in values[1:]:
            here = g[g[key] == value].set_index("seed")
            seeds = sorted(set(base.index) & set(here.index))
            rows.append([algorithm, *map(_fmt_value, setting.values()), _fmt_value(value),
                         mean_std(here["dropped_fraction"], 100, digits=1),
                         mean_std(here["label_bias_tv"], digits=3),
                         *(mean_std(here.loc[seeds, c] - base.loc[seeds, c], 100)
                           for c in ("late_acc", "final_acc", "best_acc")), len(seeds)])
    return markdown_table(header, rows)


def class_cost_table(runs: pd.DataFrame, key: str, keys: Sequence[str]) -> str:
    """Which labels each value of a swept key (a deadline) took from aggregation and what it
    cost them against the first value, seed by seed: per class, the share of its selected
    samples not aggregated and the change in late test accuracy (mean over seeds), and the
    Pearson correlation of the two over every (seed, class)."""
    values = list(dict.fromkeys(runs[key]))
    others = [k for k in keys if k != key]
    header = ["algorithm", *map(short, others), short(key),
              "samples lost per class (%)", "Δ late accuracy per class (pp)",
              "correlation (seeds x classes)", "seeds paired"]
    rows = []
    for algorithm, setting, g in groups(runs, others):
        base = g[g[key] == values[0]].set_index("seed")["class_losses"]
        for value in values[1:]:
            here = g[g[key] == value].set_index("seed")["class_losses"]
            seeds = [s for s in sorted(set(base.index) & set(here.index))
                     if base[s] is not None and here[s] is not None]
            if not seeds:
                continue
            lost = np.array([here[s][0] for s in seeds])
            change = np.array([here[s][1] - base[s][1] for s in seeds])
            pairs = np.isfinite(lost) & np.isfinite(change)
            x, y = lost[pairs], change[pairs]
            correlation = (np.corrcoef(x, y)[0, 1]
                           if len(x) > 2 and x.std() > 0 and y.std() > 0 else np.nan)
            rows.append([algorithm, *map(_fmt_value, setting.values()), _fmt_value(value),
                         # (pandas' mean skips NaN, a class no seed selected, quietly)
                         " / ".join(f"{100 * v:.0f}" for v in pd.DataFrame(lost).mean()),
                         " / ".join(f"{100 * v:+.1f}" for v in pd.DataFrame(change).mean()),
                         f"{correlation:+.2f}", len(seeds)])
    return markdown_table(header, rows)


def latency_energy_table(runs: pd.DataFrame, keys: Sequence[str]) -> str:
    """The round's latency (its mean, spread and tail over the rounds of a run, then mean ±
    std over seeds) and, when the runs record it, the clients' energy per round and in all."""
    energy = bool(np.isfinite(runs["energy_J"]).any())
    header = ["algorithm", *map(short, keys), "round time mean (s)", "std over rounds (s)",
              "median (s)", "95th percentile (s)", "max (s)",
              *(["client energy / round (J)", "of which sending (J)", "client energy total (kJ)"]
                if energy else [])]
    rows = []
    for algorithm, setting, g in groups(runs, keys):
        rows.append([algorithm, *map(_fmt_value, setting.values()),
                     mean_std(g["round_time_mean_s"]), mean_std(g["round_time_std_s"]),
                     *(mean_std(g[f"round_time_{s}_s"]) for s in ("median", "p95", "max")),
                     *([mean_std(g["energy_J_per_round"], digits=1),
                        mean_std(g["transmit_J_per_round"], digits=2),
                        mean_std(g["energy_J"], 1e-3, digits=2)] if energy else [])])
    return markdown_table(header, rows)
