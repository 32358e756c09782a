"""report.md for one scenario's results folder: tables (mean and standard deviation over
seeds) and the study figures (bands over seeds, effect of each swept key with crossovers
marked, the latency-accuracy trade-off with its Pareto front).

Reads only result files: OUT/<scenario>/sweep.json and, per run, summary.json, scenario.yaml
and rounds.csv.

    python -m analysis OUT/<scenario>
"""

import json
import math
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from numpy.typing import ArrayLike  # noqa: E402

from analysis import read_rounds  # noqa: E402
from analysis.compare import class_losses, run_row  # noqa: E402
from analysis.plots import time_unit  # noqa: E402
from scala_netsim.core.events import DROP_REASONS  # noqa: E402
from scala_netsim.core.records import EVENTS_CSV, SCENARIO_YAML, SUMMARY_JSON
from scala_netsim.core.results import read_written_yaml, write_text  # noqa: E402

MB, GFLOP = 1e6, 1e9


class ReportError(ValueError):
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
    folders = ([scenario_dir / c["folder"] for c in index.get("cells", [])] or
               sorted(p.parent for p in scenario_dir.rglob(SUMMARY_JSON)))
    rows, curves = [], {}
    targets = index.get("accuracy_targets", [0.6, 0.7, 0.8])
    for folder in folders:
        if not (folder / SUMMARY_JSON).is_file():
            continue  # a cell not run (yet)
        summary = json.loads((folder / SUMMARY_JSON).read_text())
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
        events = pd.read_csv(folder / EVENTS_CSV, usecols=["kind", "payload_bytes"])
        by_kind = events.groupby("kind")["payload_bytes"].sum()
        row.update({
            "local_iters": scenario["training"]["local_iters"],
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
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def groups(runs: pd.DataFrame, keys: Sequence[str]) -> list[tuple[str, dict, pd.DataFrame]]:
    """[(algorithm, setting dict, rows)] in the order the runs were listed."""
    by = ["algorithm", *keys]
    out = []
    for values, rows in runs.groupby(by, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        out.append((values[0], dict(zip(keys, values[1:], strict=True)), rows))
    return out


# --- tables ----------------------------------------------------------------------------
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


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def accuracy_table(runs: pd.DataFrame, keys: Sequence[str], targets: Sequence[float],
                   with_accuracy: bool = True) -> str:
    """Accuracy and simulated time per group; `with_accuracy` False (timing-only runs): the
    simulated time alone."""
    targets = targets if with_accuracy else []
    drops = "dropped_fraction" in runs   # runs whose clients can be dropped
    header = ["algorithm", *map(short, keys), "seeds",
              *(["final acc (%)", "best acc (%)"] if with_accuracy else []),
              "time / round (s)", "total sim. time (s)",
              *(f"time to {100 * t:g} % (s)" for t in targets),
              *(["dropped (%)", "label bias (TV)"] if drops else [])]
    rows = []
    for algorithm, setting, g in groups(runs, keys):
        accuracy = [mean_std(g["final_acc"], 100), mean_std(g["best_acc"], 100)]
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


def paired_change_table(runs: pd.DataFrame, key: str, keys: Sequence[str]) -> str:
    """What each value of a swept key (a deadline) costs each algorithm against the key's
    first value (the baseline): the change in final, best and late accuracy (the mean over
    the last fifth of the rounds, analysis.compare.late_accuracy), seed by seed (the same
    seed: the same partition, cell and selections), mean ± std over seeds in percentage
    points, beside the share of clients dropped and the label bias."""
    values = list(dict.fromkeys(runs[key]))
    others = [k for k in keys if k != key]
    header = ["algorithm", *map(short, others), short(key), "dropped (%)", "label bias (TV)",
              "Δ final acc vs " + _fmt_value(values[0]) + " (pp)",
              "Δ best acc (pp)", "Δ mean acc, last 20 % of rounds (pp)", "seeds paired"]
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
                           for c in ("final_acc", "best_acc", "late_acc")), len(seeds)])
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


DROPS_PANELS = (
    ("final_acc", 100, "final test accuracy (%)"),
    ("dropped_fraction", 100, "clients dropped (% of selected)"),
    ("label_bias_tv", 1, "label bias (TV distance)"),
)


def drops_figure(runs: pd.DataFrame, key: str, keys: Sequence[str], path: Path) -> None:
    """Final accuracy, the fraction of clients dropped and the label bias against one swept
    key (a deadline), one line per algorithm (and per value of the other swept keys), bands
    over seeds."""
    values, x, ticks, log_x, divisor, unit = _sweep_axis(runs, key)
    others = [k for k in keys if k != key]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for i, (algorithm, setting, g) in enumerate(groups(runs, others)):
        for ax, (column, scale, ylabel) in zip(axes, DROPS_PANELS, strict=True):
            per_seed = g.pivot_table(index="seed", columns=key, values=column,
                                     aggfunc="first").reindex(columns=values)
            _band(ax, x, scale * per_seed.to_numpy(), f"C{i % 10}",
                  group_label(algorithm, setting))
            ax.set_ylabel(ylabel)
    for ax in axes:
        _format_sweep_axis(ax, key, x, ticks, log_x, divisor, unit)
    axes[0].legend(fontsize=7)
    suptitle(fig, f"accuracy, drops and label bias against {key} (mean ± 1 std over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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


# --- figures ---------------------------------------------------------------------------
def suptitle(fig: plt.Figure, text: str, fontsize: float = 10) -> None:
    """The figure's title, wrapped to its width (a one-panel figure is narrower than most
    titles); tight_layout then makes room for every line."""
    chars_per_inch = 72 / (0.55 * fontsize)   # a character is about 0.55 em wide
    width = max(20, int(fig.get_figwidth() * chars_per_inch))
    fig.suptitle(textwrap.fill(text, width), fontsize=fontsize)


def _band(ax: Axes, x: ArrayLike, values: ArrayLike, color: str, label: str | None,
          marker: str = "o") -> np.ndarray:
    """Mean line with a shaded band of one standard deviation over seeds (rows of values)."""
    values = np.asarray(values, dtype=float)
    with warnings.catch_warnings():   # a value no seed has (e.g. no drop records): a gap
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(values, axis=0)
        std = np.nanstd(values, axis=0, ddof=1) if len(values) > 1 else np.zeros_like(mean)
    ax.plot(x, mean, color=color, marker=marker, ms=3, lw=1.4, label=label)
    ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.2, lw=0)
    return mean


def _stack_curves(curves: dict, folders: Sequence[str],
                  column: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Curves of several seeds on their common evaluated rounds: (rounds, x rows, acc rows)."""
    arrays = [curves[f] for f in folders]
    common = sorted(set.intersection(*(set(a[:, 0].tolist()) for a in arrays)))
    pick = [np.array([a[a[:, 0] == r][0] for r in common]).reshape(len(common), 3)
            for a in arrays]
    xs = np.array([p[:, column] for p in pick])
    accs = np.array([p[:, 2] for p in pick])
    return np.array(common), xs, accs


def accuracy_figure(runs: pd.DataFrame, curves: dict, keys: Sequence[str], path: Path,
                    over_time: bool) -> None:
    """One panel per algorithm, one curve (mean ± std over seeds) per setting."""
    algorithms = list(dict.fromkeys(runs["algorithm"]))
    cols = min(3, len(algorithms))
    nrows = math.ceil(len(algorithms) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.8 * nrows), squeeze=False,
                             sharey=True)
    span = float(runs["total_sim_time_s"].max()) if over_time else 0.0
    divisor, x_label = time_unit(span) if over_time else (1.0, "global round")
    for ax, algorithm in zip(axes.flat, algorithms, strict=False):
        for i, (_, setting, g) in enumerate(groups(runs[runs["algorithm"] == algorithm], keys)):
            _, xs, accs = _stack_curves(curves, g["folder"], 1 if over_time else 0)
            if xs.shape[1] == 0:
                continue
            label = group_label("", setting).strip() or algorithm
            _band(ax, xs.mean(0) / divisor, 100 * accs, f"C{i % 10}",
                  f"{label} ({len(g)} seed{'s' if len(g) > 1 else ''})")
        ax.set_title(algorithm)
        ax.set_xlabel(x_label)
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(algorithms):]:
        ax.set_visible(False)
    what = "simulated time (mean time of the seeds at each evaluation)" if over_time else "rounds"
    suptitle(fig, f"test accuracy against {what}; bands: ± 1 std over seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


EFFECT_PANELS = (
    ("final_acc", 100, "final test accuracy (%)"),
    ("uplink_MB_per_round", 1, "communication per round (MB)"),
    ("time_per_round_s", 1, "simulated time per round (s)"),
    ("client_GFLOP_per_round", 1, "client computation per round (GFLOP)"),
)


def _axis_values(values: Sequence) -> tuple[np.ndarray, list[str] | None, bool]:
    """x positions for swept values (numbers as they are, anything else by position) and
    whether a log axis reads better."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        x = np.array(values, dtype=float)
        return x, None, bool((x > 0).all() and x.max() / x.min() >= 20)
    return np.arange(len(values), dtype=float), [str(v) for v in values], False


def crossings(x: np.ndarray, a: np.ndarray, b: np.ndarray, log_x: bool) -> list[float]:
    """x values where the curves a(x) and b(x) cross: where a - b changes sign (linear
    interpolation, in log x when the axis is logarithmic). Curves that only touch, or are
    equal everywhere, do not cross."""
    d = np.asarray(a, float) - np.asarray(b, float)
    signed = [i for i in range(len(d)) if np.isfinite(d[i]) and d[i] != 0]
    found = []
    for i, j in zip(signed, signed[1:], strict=False):
        if d[i] * d[j] > 0:
            continue
        if j > i + 1:            # equal on the points between: they cross where they meet
            found.append(float(x[i + 1]))
            continue
        u0, u1 = (np.log(x[i]), np.log(x[j])) if log_x else (x[i], x[j])
        u = u0 + (u1 - u0) * d[i] / (d[i] - d[j])
        found.append(float(np.exp(u) if log_x else u))
    return found


def _sweep_axis(runs: pd.DataFrame, key: str) -> tuple[list, np.ndarray, list[str] | None,
                                                        bool, float, str]:
    """A swept key's values (sorted when they sort), their x positions, tick labels (None for
    numbers), whether the axis is logarithmic, and the label scale: frequencies read better in
    MHz (the data stay in Hz)."""
    values = list(dict.fromkeys(runs[key]))
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        values = sorted(values)   # names (of cases, models...) keep the sweep's order
    x, ticks, log_x = _axis_values(values)
    in_mhz = key.endswith("_hz") and ticks is None and x.max() >= 1e6
    divisor, unit = (1e6, " MHz") if in_mhz else (1.0, "")
    return values, x, ticks, log_x, divisor, unit


def _format_sweep_axis(ax: Axes, key: str, x: np.ndarray, ticks: list[str] | None, log_x: bool,
                       divisor: float, unit: str) -> None:
    ax.set_xlabel(short(key) + (f" ({unit.strip()})" if unit else _unit_hint(key)))
    if log_x:
        ax.set_xscale("log")
    if ticks is not None:
        long = max(map(len, ticks)) > 10   # long case names: slanted, so they do not overlap
        ax.set_xticks(x, ticks, rotation=20 if long else 0, ha="right" if long else "center")
    elif divisor != 1.0:
        ax.xaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / divisor:g}"))
    ax.grid(alpha=0.3, which="both")


def _mark_crossings(ax: Axes, key: str, x: np.ndarray, a: np.ndarray, b: np.ndarray,
                    log_x: bool, ticks: list[str] | None, divisor: float,
                    unit: str) -> list[str]:
    """Mark where curves a and b cross on `ax`; -> where each crossing is, as text."""
    found = []
    for cx in crossings(x, a, b, log_x):
        known = np.isfinite(a)
        y = np.interp(np.log(cx) if log_x else cx, np.log(x[known]) if log_x else x[known],
                      a[known])
        ax.axvline(cx, color="k", ls=":", lw=1)
        ax.plot([cx], [y], marker="X", color="k", ms=9, zorder=5)
        if ticks is None:
            where = f"{cx / divisor:.4g}{unit}"
        else:
            after = ticks[min(int(cx) + 1, len(ticks) - 1)]
            where = f"between {ticks[int(cx)]} and {after}"
        ax.annotate(f"crossover\n{short(key)} ≈ {where}", (cx, y), fontsize=7,
                    xytext=(6, 6), textcoords="offset points")
        found.append(where)
    return found


def time_to_target_figure(runs: pd.DataFrame, key: str, keys: Sequence[str],
                          targets: Sequence[float], path: Path) -> list[str]:
    """Simulated time to each accuracy target some run reached, against one swept key: one
    panel per target, one line per algorithm (and value of the other swept keys; mean over
    seeds, missing where a seed did not reach it). Where two algorithms' lines cross, which
    reaches the target first changes with the key: marked, and returned as text with, for
    pairs that do not cross, which one is first wherever both reach it."""
    reached = [t for t in targets if np.isfinite(runs[f"time_to_{t:g}_s"]).any()]
    if not reached:
        return []
    values, x, ticks, log_x, divisor, unit = _sweep_axis(runs, key)
    others = [k for k in keys if k != key]
    fig, axes = plt.subplots(1, len(reached), figsize=(5.2 * len(reached), 4.2), squeeze=False)
    texts = []
    for ax, target in zip(axes.flat, reached, strict=True):
        column, lines = f"time_to_{target:g}_s", {}
        for i, (algorithm, setting, g) in enumerate(groups(runs, others)):
            per_seed = g.pivot_table(index="seed", columns=key, values=column, aggfunc="first",
                                     dropna=False).reindex(columns=values)
            mean = per_seed.to_numpy(float).mean(axis=0)   # NaN unless every seed reached it
            label = group_label(algorithm, setting)
            ax.plot(x, mean, marker="o", ms=4, color=f"C{i % 10}", label=label)
            lines[label] = (algorithm, tuple(setting.items()), mean)
        labels = list(lines)
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                (alg_a, set_a, mean_a), (alg_b, set_b, mean_b) = lines[a], lines[b]
                if alg_a == alg_b or set_a != set_b:
                    continue
                both = np.isfinite(mean_a) & np.isfinite(mean_b)
                where = _mark_crossings(ax, key, x, mean_a, mean_b, log_x, ticks, divisor, unit)
                first = [v for v, on in zip(values, both, strict=True) if on]
                faster = None if not both.any() else (
                    alg_a if (mean_a[both] < mean_b[both]).all() else (
                        alg_b if (mean_b[both] < mean_a[both]).all() else None))
                span = (f"{_fmt_value(first[0] / divisor)}-{_fmt_value(first[-1] / divisor)}"
                        f"{unit}" if first and ticks is None else "")
                if where:
                    last = np.flatnonzero(both)[-1]
                    above = alg_a if mean_a[last] < mean_b[last] else alg_b
                    texts.append(f"{100 * target:g} %: {a} and {b} cross at {short(key)} ≈ "
                                 f"{', '.join(where)} ({above} first above)")
                elif faster:
                    slower = b if faster == alg_a else a
                    texts.append(f"{100 * target:g} %: {a if faster == alg_a else b} before "
                                 f"{slower} at every {short(key)} where both reach it ({span}); "
                                 f"no crossover")
                elif both.any():
                    texts.append(f"{100 * target:g} %: {a} and {b} meet without crossing "
                                 f"where both reach it ({span})")
                else:
                    reaches = [(lab, other) for lab, other, m in ((a, b, mean_a), (b, a, mean_b))
                               if np.isfinite(m).any()]
                    texts.append(f"{100 * target:g} %: only {reaches[0][0]} reaches it, not "
                                 f"{reaches[0][1]}" if reaches else
                                 f"{100 * target:g} %: neither {a} nor {b} reaches it")
        ax.set_title(f"time to {100 * target:g} % test accuracy")
        ax.set_ylabel("simulated time (s)")
        ax.set_yscale("log")
        _format_sweep_axis(ax, key, x, ticks, log_x, divisor, unit)
        ax.legend(fontsize=7)
    suptitle(fig, f"simulated time to accuracy against {key} (mean over seeds; a gap: not "
                  f"reached by every seed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return texts


def effect_figure(runs: pd.DataFrame, key: str, keys: Sequence[str], path: Path,
                  with_accuracy: bool = True) -> list[str]:
    """The effect of one swept key: accuracy, communication (uplink solid, downlink dashed),
    time and client computation per round, one line per algorithm (and per value of the other
    swept keys), bands over seeds. Crossovers of the time-per-round lines are marked and
    returned as text."""
    values, x, ticks, log_x, divisor, unit = _sweep_axis(runs, key)
    others = [k for k in keys if k != key]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    lines = {}
    for i, (algorithm, setting, g) in enumerate(groups(runs, others)):
        label = group_label(algorithm, setting)
        color = f"C{i % 10}"
        for ax, (column, scale, ylabel) in zip(axes.flat, EFFECT_PANELS, strict=False):
            if column == "final_acc" and not with_accuracy:
                ax.set_visible(False)   # timing-only runs: no accuracy
                continue
            per_seed = g.pivot_table(index="seed", columns=key, values=column, aggfunc="first")
            per_seed = per_seed.reindex(columns=values)
            mean = _band(ax, x, scale * per_seed.to_numpy(), color, label)
            if column == "time_per_round_s":
                lines[label] = (algorithm, tuple(setting.items()), mean)
            if column == "uplink_MB_per_round":
                down = g.pivot_table(index="seed", columns=key, values="downlink_MB_per_round",
                                     aggfunc="first").reindex(columns=values)
                ax.plot(x, np.nanmean(down.to_numpy(), axis=0), color=color, ls="--", lw=1.1)
            ax.set_ylabel(ylabel)
    texts = []
    labels = list(lines)
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            (alg_a, set_a, mean_a), (alg_b, set_b, mean_b) = lines[a], lines[b]
            if alg_a == alg_b or set_a != set_b:
                continue  # only algorithms under the same other settings are compared
            for where in _mark_crossings(axes.flat[2], key, x, mean_a, mean_b, log_x, ticks,
                                         divisor, unit):
                texts.append(f"{a} and {b}: time per round crosses at {short(key)} ≈ {where} "
                             f"({alg_a} faster {'above' if mean_a[-1] < mean_b[-1] else 'below'})")
    for ax in axes.flat:
        _format_sweep_axis(ax, key, x, ticks, log_x, divisor, unit)
    axes.flat[1].plot([], [], color="gray", ls="-", label="uplink")
    axes.flat[1].plot([], [], color="gray", ls="--", label="downlink")
    axes.flat[0 if with_accuracy else 2].legend(fontsize=7)
    axes.flat[1].legend(fontsize=7)
    suptitle(fig, f"effect of {key} (mean ± 1 std over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return texts


def _unit_hint(key: str) -> str:
    for suffix, unit in (("_hz", " (Hz)"), ("_m", " (m)"), ("_w", " (W)"), ("_s", " (s)"),
                         ("participation", " (fraction of clients)")):
        if key.endswith(suffix):
            return unit
    return ""


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points (time, accuracy) not dominated by another (shorter or equal
    time and higher or equal accuracy, one of them strictly)."""
    front = []
    for i, (t, a) in enumerate(points):
        dominated = any((t2 <= t and a2 >= a) and (t2 < t or a2 > a)
                        for j, (t2, a2) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: points[i][0])


def choose_target(runs: pd.DataFrame, keys: Sequence[str],
                  targets: Sequence[float]) -> float | None:
    """The highest accuracy target every seed of at least half of the (algorithm, setting)
    groups reaches; None when no group reaches any target (the same target in the latency-
    and the energy-accuracy figure)."""
    gs = groups(runs, keys)
    for target in sorted(targets, reverse=True):
        reached = sum(bool(np.isfinite(g[f"time_to_{target:g}_s"]).all()) for _, _, g in gs)
        if reached and reached >= len(gs) / 2:
            return target
    for target in sorted(targets):
        if any(np.isfinite(g[f"time_to_{target:g}_s"]).all() for _, _, g in gs):
            return target
    return None


def _energy_unit(span_j: float) -> tuple[float, str]:
    """(joules per unit, axis label) for the clients' energy."""
    return (1e3, "clients' energy (kJ)") if span_j >= 1e4 else (1.0, "clients' energy (J)")


#: what a trade-off figure puts on x: the cost column until the target accuracy, the
#: run's total, the unit chooser, and how the caption names it
TRADE_OFFS = {
    "latency": ("time_to_{target:g}_s", "total_sim_time_s", time_unit, "simulated time"),
    "energy": ("energy_to_{target:g}_j", "energy_J", _energy_unit, "clients' energy"),
}


def latency_accuracy_figure(runs: pd.DataFrame, keys: Sequence[str], targets: Sequence[float],
                            path: Path, cost: str = "latency") -> tuple[str, list[str]]:
    """Each (algorithm, setting) a point: the cost (`cost`: simulated time, or the clients'
    energy, TRADE_OFFS) until the target accuracy against final accuracy, error bars over
    seeds, the Pareto front marked. -> (caption, front labels)."""
    target = choose_target(runs, keys, targets)
    until, total, unit_of, cost_name = TRADE_OFFS[cost]
    column = until.format(target=target) if target is not None else total
    points, labels, algs, notes, missed = [], [], [], [], []
    for algorithm, setting, g in groups(runs, keys):
        label = group_label(algorithm, setting)
        times = g[column].to_numpy(float)
        acc = 100 * g["final_acc"].to_numpy(float)
        if not np.isfinite(times).all():
            missed.append((label, float(np.nanmean(acc))))
            continue
        points.append((times.mean(), acc.mean(), times.std(ddof=1) if len(times) > 1 else 0.0,
                       acc.std(ddof=1) if len(acc) > 1 else 0.0))
        labels.append(label)
        algs.append(algorithm)
        notes.append(" ".join(f"{short(k)}={_fmt_value(v)}" for k, v in setting.items()))
    fig, ax = plt.subplots(figsize=(8.5, 5.8))
    span = max([p[0] for p in points], default=float(runs[total].max()))
    divisor, t_label = unit_of(span)
    front = pareto_front([(p[0], p[1]) for p in points])
    colors = {a: f"C{i % 10}" for i, a in enumerate(dict.fromkeys(runs["algorithm"]))}
    for p, algorithm, note in zip(points, algs, notes, strict=True):
        ax.errorbar(p[0] / divisor, p[1], xerr=p[2] / divisor, yerr=p[3], fmt="o",
                    color=colors[algorithm], ms=5, capsize=2, alpha=0.85)
        if note:
            ax.annotate(note, (p[0] / divisor, p[1]), fontsize=5.5, xytext=(3, 3),
                        textcoords="offset points", color=colors[algorithm])
    for algorithm, color in colors.items():
        ax.plot([], [], "o", color=color, label=algorithm)
    positive = [p[0] for p in points if p[0] > 0]
    if positive and max(positive) / min(positive) > 20:
        ax.set_xscale("log")
    if front:
        fx = [points[i][0] / divisor for i in front]
        fy = [points[i][1] for i in front]
        ax.step(fx, fy, where="post", color="k", lw=1.2, ls="--")
        ax.scatter(fx, fy, s=160, facecolors="none", edgecolors="k", lw=1.5, zorder=5,
                   label="Pareto front")
    if missed:
        right = 1.08 * max([p[0] / divisor for p in points], default=1.0)
        for label, acc in missed:
            ax.scatter([right], [acc], marker=">", color="gray")
            ax.annotate(label, (right, acc), fontsize=6, xytext=(-4, 4),
                        textcoords="offset points", ha="right", color="gray")
        ax.text(right, ax.get_ylim()[0], "target not\nreached", fontsize=7, ha="center",
                va="bottom", color="gray")
    what = (f"{cost_name} to {100 * target:g} % test accuracy" if target is not None
            else f"{cost_name} of the whole run (no group reached any accuracy target)")
    ax.set_xlabel(f"{what} ({t_label.split('(')[-1]}")
    ax.set_ylabel("final test accuracy (%)")
    ax.set_title(f"{cost}-accuracy trade-off (mean ± std over seeds); up and left is better")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return what, [labels[i] for i in front]


# --- the report ------------------------------------------------------------------------
def write_report(scenario_dir: Path | str) -> Path:
    """OUT/<scenario>/report.md and its figures in OUT/<scenario>/figures/."""
    scenario_dir = Path(scenario_dir)
    runs, curves, index = load_runs(scenario_dir)
    keys = [k for k in setting_keys(index) if k in runs.columns]
    targets = index["accuracy_targets"]
    figures = scenario_dir / "figures"
    figures.mkdir(exist_ok=True)
    name = index.get("scenario", scenario_dir.name)
    seeds = sorted(set(runs["seed"]))
    status = runs["status"].value_counts().to_dict()
    measured = not runs["timing_only"].all()   # some run has accuracies
    lines = [
        f"# {name}: report",
        "",
        f"Built by `python -m analysis {scenario_dir}` from the result files in this folder.",
        f"{len(runs)} finished run(s): algorithms {', '.join(dict.fromkeys(runs['algorithm']))}; "
        f"seeds {seeds}; rounds {sorted(set(runs['rounds']))}"
        + "".join(f"; {k} in {list(v)}" for k, v in index['sweep'].items() if k != 'seed')
        + f". Status: {', '.join(f'{v} {k}' for k, v in status.items())}. "
        f"{int(runs['retimed'].sum())} of them re-timed from another cell's training "
        f"(same learning trajectory under another network: `retimed_from` in summary.json), "
        + (f"{int((~runs['retimed'] & ~runs['timing_only']).sum())} trained"
           + (f", {int(runs['timing_only'].sum())} timed without training (timing only)"
              if runs["timing_only"].any() else "") + "."),
        "",
        "Tables give mean ± standard deviation over seeds (a single number when one seed). "
        "MB = 10^6 bytes; times are simulated seconds; a target reached by only some seeds "
        "shows how many in brackets.",
        "",
        "## Accuracy and simulated time" if measured else "## Simulated time",
        "",
        *([] if measured else ["Timing-only runs (`timing_only: true`): no training, no "
                               "accuracy.", ""]),
        accuracy_table(runs, keys, targets, with_accuracy=measured),
        "",
        "## Communication and computation",
        "",
        cost_table(runs, keys),
        "",
        "## Round latency" + (" and energy" if np.isfinite(runs["energy_J"]).any() else ""),
        "",
        "The round's simulated time over the rounds of each run (mean, standard deviation, "
        "median, 95th percentile, maximum), then mean ± std of those over seeds"
        + ("; the clients' energy (sending: p x airtime of every attempt; computing: kappa x "
           "FLOPs x (FLOP/s)^2, scala_netsim.radio_record)."
           if np.isfinite(runs["energy_J"]).any() else "."),
        "",
        latency_energy_table(runs, keys),
        "",
    ]
    if "dropped_fraction" in runs:
        lines += [
            "## Drops and label bias", "",
            "Clients the network dropped from their round (a deadline, a step deadline at a "
            "barrier, a transfer lost after all its attempts, over-selection), as a share of "
            "the clients selected; label bias: the total variation distance between the label "
            "distribution of the clients aggregated and that of the clients selected, averaged "
            "over the rounds that had a contributor (summary.json `label_bias_tv`).", "",
            drops_table(runs, keys), ""]
        for key in keys:
            if runs[key].nunique() >= 2 and measured:
                lines += [f"What each {key} costs in accuracy against "
                          f"{_fmt_value(runs[key].iloc[0])}, seed by seed:", "",
                          paired_change_table(runs, key, keys), "",
                          f"Which labels each {key} took, and what it cost them (classes 0 "
                          f"to {len(runs['class_losses'].dropna().iloc[0][0]) - 1} in order; a "
                          f"negative correlation: the classes that lost more samples lost "
                          f"more accuracy):", "",
                          class_cost_table(runs, key, keys), ""]
    if "attack_mse" in runs:
        lines += [
            "## Privacy: the model-inversion attack", "",
            "The attacker (`python -m scala_netsim.attack`) holds the run's final global "
            "client-side model and the first half of the test set, trains a decoder from "
            "activations to images and rebuilds the other half. MSE, SSIM and PSNR on images "
            "in [0, 1], per image and averaged, then over the attack's seeds (attack.json); "
            "here mean ± std over the runs' seeds of those means (the spread over attack "
            "seeds is in comparison.csv, `attack_*_std`). Lower MSE, higher SSIM and PSNR: a "
            "better reconstruction, a weaker defence.", "",
            privacy_table(runs, keys, targets), ""]
    lines += ["## Figures", ""]
    if measured:
        accuracy_figure(runs, curves, keys, figures / "accuracy_vs_time.png", over_time=True)
        accuracy_figure(runs, curves, keys, figures / "accuracy_vs_rounds.png", over_time=False)
        lines += ["### Accuracy against simulated time", "", "![](figures/accuracy_vs_time.png)",
                  "", "### Accuracy against rounds", "", "![](figures/accuracy_vs_rounds.png)", ""]
    for key in keys:
        if runs[key].nunique() < 2:
            continue
        file = f"effect_{short(key)}.png"
        texts = effect_figure(runs, key, keys, figures / file, with_accuracy=measured)
        lines += [f"### Effect of {key}", "",
                  ("Accuracy, communication" if measured else "Communication")
                  + " per round (uplink solid, downlink dashed), simulated time per round and "
                  "client computation per round.", "", f"![](figures/{file})", ""]
        lines += ([f"- crossover: {t}" for t in texts] or
                  ["- no crossover of the time-per-round curves in the swept range"]) + [""]
        if measured and "dropped_fraction" in runs:
            file = f"accuracy_vs_{short(key)}.png"
            drops_figure(runs, key, keys, figures / file)
            lines += [f"### Accuracy, drops and label bias against {key}", "",
                      "Final test accuracy, the share of selected clients dropped and the "
                      "label bias (TV distance) per value.", "", f"![](figures/{file})", ""]
        if measured and pd.api.types.is_numeric_dtype(runs[key]):
            file = f"time_to_accuracy_{short(key)}.png"
            texts = time_to_target_figure(runs, key, keys, targets, figures / file)
            if texts:
                lines += [f"### Time to accuracy against {key}", "",
                          "Simulated time until the test accuracy first reaches each target, "
                          "per algorithm; where two lines cross, which algorithm gets there "
                          "first changes with the key.", "", f"![](figures/{file})", ""]
                lines += [f"- {t}" for t in texts] + [""]
    if measured:
        what, front = latency_accuracy_figure(runs, keys, targets,
                                              figures / "latency_accuracy.png")
        lines += ["### Latency-accuracy trade-off", "",
                  f"x: {what}; y: final test accuracy. Circled and joined: the Pareto front.",
                  "", "![](figures/latency_accuracy.png)", "",
                  "Pareto front (fastest first): " + (", ".join(front) or "empty"), ""]
        if np.isfinite(runs["energy_J"]).any():
            what, front = latency_accuracy_figure(runs, keys, targets,
                                                  figures / "energy_accuracy.png", "energy")
            lines += ["### Energy-accuracy trade-off", "",
                      f"x: {what}; y: final test accuracy. Circled and joined: the Pareto "
                      f"front.", "", "![](figures/energy_accuracy.png)", "",
                      "Pareto front (least energy first): " + (", ".join(front) or "empty"),
                      ""]
    path = scenario_dir / "report.md"
    write_text(path, "\n".join(lines))
    return path
