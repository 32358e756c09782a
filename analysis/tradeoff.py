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

from analysis.runs import _fmt_value, group_label, groups, short  # noqa: E402
from analysis.style import (  # noqa: E402
    legend_outside,
    set_log_x,
    time_unit,  # noqa: E402
)


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
#: points between a label and its point: clear of the Pareto front's circle (s = 160, a
#: radius of about 6.3 points)
LABEL_GAP = 9
#: a point's marker (ms = 5) as an obstacle for labels, in points from its centre
MARKER_RADIUS = 3.5


def setting_text(key: str, value: object) -> str:
    """`key=value` as a figure labels a point: the key's last part, frequencies in MHz."""
    name = short(key)
    if name.endswith("_hz") and isinstance(value, (int, float)) and value >= 1e5:
        return f"{name.removesuffix('_hz')}={value / 1e6:g} MHz"
    return f"{name}={_fmt_value(value)}"


def _point_labels(ax: Axes, points: Sequence[tuple], algs: Sequence[str],
                  notes: Sequence[str], colors: dict, divisor: float) -> list[tuple]:
    """The labels of the points, (x, y, text, colour): each point its setting; an algorithm
    with many points gets its points joined in the sweep's order and only the two ends
    labelled."""
    labels = []
    for algorithm, color in colors.items():
        mine = [i for i, a in enumerate(algs) if a == algorithm and notes[i]]
        many = len(mine) > LABEL_EVERY_POINT_UP_TO
        if many:
            ax.plot([points[i][0] / divisor for i in mine], [points[i][1] for i in mine],
                    color=color, lw=0.8, alpha=0.6)
        labels += [(points[i][0] / divisor, points[i][1], notes[i], color)
                   for i in ([mine[0], mine[-1]] if many else mine)]
    return labels


def place_labels(ax: Axes, labels: Sequence[tuple], fontsize: float = 7,
                 right_aligned: bool = False, avoid: Sequence[tuple] = ()) -> None:
    """Annotate (x, y, text, colour) labels beside their points, each moved down a line while
    it would overlap one placed before it or cover one of the markers at `avoid` ((x, y) in
    data units; points close together otherwise print their labels on top of each other or
    of their neighbours), or up a line where moving down would take it below the axes."""
    ax.autoscale_view()
    per_point = 72 / ax.figure.dpi
    line, width = 1.3 * fontsize / per_point, 0.6 * fontsize / per_point
    radius = MARKER_RADIUS / per_point
    markers = [ax.transData.transform(point) for point in avoid]
    placed: list[tuple[float, float, float]] = []
    for x, y, text, color in sorted(labels, key=lambda item: -item[1]):
        px, py = ax.transData.transform((x, y))
        ly = py + 4 / per_point
        left = px - (len(text) * width if right_aligned else 0)
        left += -LABEL_GAP / per_point if right_aligned else LABEL_GAP / per_point
        span = (left, left + len(text) * width)

        def blocked(ly: float, span: tuple = span) -> bool:
            return (any(abs(ly - qy) < line and span[0] < q1 and q0 < span[1]
                        for q0, q1, qy in placed)
                    or any(span[0] - radius < mx < span[1] + radius
                           and ly - radius < my < ly + fontsize / per_point + radius
                           for mx, my in markers))

        down = ly
        while blocked(down):   # ends: each line down leaves the placed labels and markers
            down -= line
        if down < ax.bbox.y0:   # below the axes: the nearest free line above, if any
            up = next((candidate for candidate in (ly + k * line for k in range(1, 100))
                       if candidate < ax.bbox.y1 and not blocked(candidate)), None)
            down = up if up is not None else down
        ly = down
        placed.append((*span, ly))
        ax.annotate(text, (x, y), fontsize=fontsize, color=color,
                    xytext=(-LABEL_GAP if right_aligned else LABEL_GAP, (ly - py) * per_point),
                    textcoords="offset points", ha="right" if right_aligned else "left",
                    in_layout=False)   # placed in the final layout: they must not move it


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
    labels_of_points = _point_labels(ax, points, algs, notes, colors, divisor)
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
        for _, acc in missed:
            ax.scatter([right], [acc], marker=">", color="gray")
        ax.text(right, ax.get_ylim()[1], "target not\nreached", fontsize=7, ha="center",
                va="top", color="gray")
    what = (f"{cost_name} to {100 * target:g} % test accuracy" if target is not None
            else f"{cost_name} of the whole run (no group reached any accuracy target)")
    ax.set_xlabel(f"{what} ({t_label.split('(')[-1]}")
    ax.set_ylabel("final test accuracy (%)")
    ax.set_title(f"{cost}-accuracy trade-off (mean ± std over seeds); up and left is better")
    ax.grid(alpha=0.3)
    legend_outside(fig, [ax])
    fig.draw_without_rendering()   # the axes where the layout puts them: labels placed there
    place_labels(ax, labels_of_points, avoid=[(p[0] / divisor, p[1]) for p in points])
    if missed:
        place_labels(ax, [(right, acc, label, "gray") for label, acc in missed], 6, True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return what, [labels[i] for i in front]
