"""The trade-off figures of a report: every (algorithm, setting) as a point, its simulated
time (or the clients' energy) until a target accuracy against its final accuracy, error bars
over seeds and the Pareto front joined."""

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from analysis.plots import time_unit  # noqa: E402
from analysis.runs import _fmt_value, group_label, groups, short  # noqa: E402
from analysis.style import legend_outside, set_log_x  # noqa: E402


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


def _trade_off_points(runs: pd.DataFrame, keys: Sequence[str], column: str) -> tuple:
    """Each (algorithm, setting) that reached the target: its (cost mean, accuracy mean, their
    stds over seeds), label, algorithm and note; and those that did not: (label, accuracy)."""
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
        notes.append(" ".join(setting_text(k, v) for k, v in setting.items()))
    return points, labels, algs, notes, missed


#: an algorithm with more points than this in a trade-off figure has only its first and last
#: point labelled (in the sweep's order) and its points joined: a label on each would overlap
LABEL_EVERY_POINT_UP_TO = 4


def setting_text(key: str, value: object) -> str:
    """`key=value` as a figure labels a point: the key's last part, frequencies in MHz."""
    name = short(key)
    if name.endswith("_hz") and isinstance(value, (int, float)) and value >= 1e5:
        return f"{name.removesuffix('_hz')}={value / 1e6:g} MHz"
    return f"{name}={_fmt_value(value)}"


def _annotate_points(ax: Axes, points: Sequence[tuple], algs: Sequence[str],
                     notes: Sequence[str], colors: dict, divisor: float) -> None:
    """Label each point with its setting; an algorithm with many points gets its points
    joined in the sweep's order and only the two ends labelled."""
    for algorithm, color in colors.items():
        mine = [i for i, a in enumerate(algs) if a == algorithm and notes[i]]
        many = len(mine) > LABEL_EVERY_POINT_UP_TO
        if many:
            ax.plot([points[i][0] / divisor for i in mine], [points[i][1] for i in mine],
                    color=color, lw=0.8, alpha=0.6)
        for i in ([mine[0], mine[-1]] if many else mine):
            ax.annotate(notes[i], (points[i][0] / divisor, points[i][1]), fontsize=7,
                        xytext=(4, 4), textcoords="offset points", color=color)


def latency_accuracy_figure(runs: pd.DataFrame, keys: Sequence[str], targets: Sequence[float],
                            path: Path, cost: str = "latency") -> tuple[str, list[str]]:
    """Each (algorithm, setting) a point: the cost (`cost`: simulated time, or the clients'
    energy, TRADE_OFFS) until the target accuracy against final accuracy, error bars over
    seeds, the Pareto front marked. -> (caption, front labels)."""
    target = choose_target(runs, keys, targets)
    until, total, unit_of, cost_name = TRADE_OFFS[cost]
    column = until.format(target=target) if target is not None else total
    points, labels, algs, notes, missed = _trade_off_points(runs, keys, column)
    fig, ax = plt.subplots(figsize=(9.5, 5.8), layout="constrained")
    span = max([p[0] for p in points], default=float(runs[total].max()))
    divisor, t_label = unit_of(span)
    front = pareto_front([(p[0], p[1]) for p in points])
    colors = {a: f"C{i % 10}" for i, a in enumerate(dict.fromkeys(runs["algorithm"]))}
    for p, algorithm in zip(points, algs, strict=True):
        ax.errorbar(p[0] / divisor, p[1], xerr=p[2] / divisor, yerr=p[3], fmt="o",
                    color=colors[algorithm], ms=5, capsize=2, alpha=0.85)
    _annotate_points(ax, points, algs, notes, colors, divisor)
    for algorithm, color in colors.items():
        ax.plot([], [], "o", color=color, label=algorithm)
    positive = [p[0] for p in points if p[0] > 0]
    if positive and max(positive) / min(positive) > 20:
        set_log_x(ax)
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
        ax.text(right, ax.get_ylim()[1], "target not\nreached", fontsize=7, ha="center",
                va="top", color="gray")
    what = (f"{cost_name} to {100 * target:g} % test accuracy" if target is not None
            else f"{cost_name} of the whole run (no group reached any accuracy target)")
    ax.set_xlabel(f"{what} ({t_label.split('(')[-1]}")
    ax.set_ylabel("final test accuracy (%)")
    ax.set_title(f"{cost}-accuracy trade-off (mean ± std over seeds); up and left is better")
    ax.grid(alpha=0.3)
    legend_outside(fig, [ax])
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return what, [labels[i] for i in front]
