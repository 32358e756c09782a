"""The report's study figures: bands over seeds, the effect of each swept key with its
crossovers marked, time to accuracy, drops, and the latency- and energy-accuracy trade-offs
with their Pareto fronts."""

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

from analysis.runs import _fmt_value, group_label, groups, short  # noqa: E402
from analysis.style import (  # noqa: E402
    LINE_STYLES,
    legend_labels,
    legend_outside,
    log_time_axis,
    log_y_if_wide,
    marker_size,
    round_axis,
    set_log_x,
    setting_colors,
    time_unit,
)

MB, GFLOP = 1e6, 1e9


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
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
    for i, (algorithm, setting, g) in enumerate(groups(runs, others)):
        for ax, (column, scale, ylabel) in zip(axes, DROPS_PANELS, strict=True):
            per_seed = g.pivot_table(index="seed", columns=key, values=column,
                                     aggfunc="first").reindex(columns=values)
            _band(ax, x, scale * per_seed.to_numpy(), f"C{i % 10}",
                  group_label(algorithm, setting))
            ax.set_ylabel(ylabel)
    for ax in axes:
        _format_sweep_axis(ax, key, x, ticks, log_x, divisor, unit)
    legend_outside(fig, axes)
    suptitle(fig, f"accuracy, drops and label bias against {key} (mean ± 1 std over seeds)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def suptitle(fig: plt.Figure, text: str, fontsize: float = 10) -> None:
    """The figure's title, wrapped to its width (a one-panel figure is narrower than most
    titles); the layout engine then makes room for every line."""
    chars_per_inch = 72 / (0.55 * fontsize)   # a character is about 0.55 em wide
    width = max(20, int(fig.get_figwidth() * chars_per_inch))
    fig.suptitle(textwrap.fill(text, width), fontsize=fontsize)


def _band(ax: Axes, x: ArrayLike, values: ArrayLike, color: str | tuple, label: str | None,
          marker: str = "o", ms: float = 3.0, ls: object = "-", **line: Any) -> np.ndarray:
    """Mean line with a shaded band of one standard deviation over seeds (rows of values);
    `line`: more of the mean line's properties (matplotlib's Line2D)."""
    values = np.asarray(values, dtype=float)
    with warnings.catch_warnings():   # a value no seed has (e.g. no drop records): a gap
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(values, axis=0)
        std = np.nanstd(values, axis=0, ddof=1) if len(values) > 1 else np.zeros_like(mean)
    ax.plot(x, mean, color=color, marker=marker if ms else None, ms=ms, lw=1.4, ls=ls,
            label=label, **line)
    ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.2, lw=0)
    return mean


def _stack_curves(curves: dict, folders: Sequence[str] | pd.Series,
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
                    over_time: bool) -> dict:
    """Test accuracy against simulated time (or rounds), mean ± std over seeds, every panel
    on one x and one y axis so that "who is ahead at equal time" reads across panels. One
    panel per setting of the swept keys (one panel without a sweep) with every algorithm in
    it, each algorithm in its colour and line style; a numeric key swept over many values
    instead gets one panel per algorithm with the values on a colour map and a colour bar.
    The time axis is logarithmic where the runs' times span decades. -> what was chosen:
    {"panels": "setting" or "algorithm", "colorbar": key or None, "log_x": bool}."""
    palette = setting_colors([tuple(s.values()) for _, s, _ in groups(runs, keys)], keys)
    span = float(runs["total_sim_time_s"].max()) if over_time else 0.0
    divisor, x_label = time_unit(span) if over_time else (1.0, "global round")
    log_x = over_time and log_time_axis(runs["total_sim_time_s"].to_numpy(float))
    by_algorithm = palette.scale is not None
    algorithms = list(dict.fromkeys(runs["algorithm"]))
    settings = [(setting, runs.loc[rows.index])   # the runs of each setting, any algorithm
                for _, setting, rows in groups(runs.assign(algorithm=""), keys)]
    panels = algorithms if by_algorithm else settings
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    size = (8.5, 4.8) if len(panels) == 1 else (4.6 * cols + 1.8, 3.6 * nrows + 0.5)
    fig, axes = plt.subplots(nrows, cols, figsize=size, squeeze=False, sharex=True,
                             sharey=True, layout="constrained")
    shown_axes = list(axes.flat)[:len(panels)]
    axis = (over_time, divisor, log_x)
    if by_algorithm:
        _algorithm_panels(shown_axes, algorithms, runs, curves, keys, palette, axis)
    else:
        _setting_panels(shown_axes, settings, runs, curves, axis)
    for ax in shown_axes:
        ax.set_xlabel(x_label + (", log scale" if log_x else ""))
        ax.xaxis.set_tick_params(labelbottom=True)
        if not over_time:
            round_axis(ax.xaxis)
        if log_x:
            set_log_x(ax)
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3, which="both" if log_x else "major")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if palette.scale:
        palette.colorbar(fig, shown_axes)
    else:
        legend_outside(fig, shown_axes)
    what = "simulated time (mean time of the seeds at each evaluation)" if over_time else "rounds"
    seeds = {len(g) for _, _, g in groups(runs, keys)}
    n = seeds.pop() if len(seeds) == 1 else 0
    per_seed = f"; {n} seed{'s' if n > 1 else ''} each" if n else ""
    title = f"test accuracy against {what}; bands: ± 1 std over seeds{per_seed}"
    if len(panels) == 1:    # the panel's own title, clear of the legend beside it
        shown_axes[0].set_title(textwrap.fill(title, 70), fontsize=10)
    else:
        suptitle(fig, title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"panels": "algorithm" if by_algorithm else "setting",
            "colorbar": palette.scale[0] if palette.scale else None, "log_x": bool(log_x)}


def _mean_curve(curves: dict, rows: pd.DataFrame, over_time: bool,
                divisor: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(x, accuracy rows over seeds) of `rows`' runs on their common evaluations, or None."""
    if rows.empty:
        return None
    _, xs, accs = _stack_curves(curves, rows["folder"], 1 if over_time else 0)
    return None if xs.shape[1] == 0 else (xs.mean(0) / divisor, 100 * accs)


def _setting_panels(axes: Sequence[Axes], settings: list[tuple[dict, pd.DataFrame]],
                    runs: pd.DataFrame, curves: dict, axis: tuple[bool, float, bool]) -> None:
    """Each panel one setting with every algorithm in it; an algorithm whose curves are
    another's, point for point, says so in the legend (one line hides the other)."""
    over_time, divisor, log_x = axis
    algorithms = list(dict.fromkeys(runs["algorithm"]))
    drawn: dict[str, list[tuple[Axes, np.ndarray, np.ndarray]]] = {a: [] for a in algorithms}
    for ax, (setting, here) in zip(axes, settings, strict=True):
        for algorithm in algorithms:
            curve = _mean_curve(curves, here[here["algorithm"] == algorithm], over_time, divisor)
            if curve is not None:
                drawn[algorithm].append((ax, *curve))
        ax.set_title(group_label("", setting).strip() or "every algorithm", fontsize=10)
    legend = legend_labels({a: [np.column_stack([x, acc.mean(0)]) for _, x, acc in d]
                            for a, d in drawn.items()})
    for i, (algorithm, lines) in enumerate(drawn.items()):
        for ax, x, accs in lines:
            shown = x > 0 if log_x else np.ones(len(x), bool)   # round 0: not on a log axis
            _band(ax, x[shown], accs[:, shown], f"C{i % 10}", legend[algorithm],
                  ms=marker_size(int(shown.sum())), ls=LINE_STYLES[i % len(LINE_STYLES)])


def _algorithm_panels(axes: Sequence[Axes], algorithms: list[str], runs: pd.DataFrame,
                      curves: dict, keys: Sequence[str], palette: Any,
                      axis: tuple[bool, float, bool]) -> None:
    """Each panel one algorithm with a curve per setting, in the colour map's colour."""
    over_time, divisor, log_x = axis
    seeds = {len(g) for _, _, g in groups(runs, keys)}
    for ax, algorithm in zip(axes, algorithms, strict=True):
        for _, setting, g in groups(runs[runs["algorithm"] == algorithm], keys):
            curve = _mean_curve(curves, g, over_time, divisor)
            if curve is None:
                continue
            x, accs = curve
            shown = x > 0 if log_x else np.ones(len(x), bool)   # round 0: not on a log axis
            label = group_label("", setting).strip() or algorithm
            if len(seeds) > 1:
                label += f" ({len(g)} seed{'s' if len(g) > 1 else ''})"
            _band(ax, x[shown], accs[:, shown], palette.colors[tuple(setting.values())],
                  None if palette.scale else label, ms=marker_size(int(shown.sum())))
        ax.set_title(algorithm)


#: markers that stay apart where lines of several groups meet
MARKERS = ("o", "s", "^", "D", "v", "P")
#: the effect figure's panels: (column, scale, y label); uplink and downlink each get their
#: own panel (on one y axis): a round's uplink and downlink often carry the same bytes (a
#: model each way, or activations up and their gradients down), and a line drawn over
#: another of the same colour hides it
EFFECT_PANELS = (
    ("final_acc", 100, "final test accuracy (%)"),
    ("uplink_MB_per_round", 1, "uplink per round (MB)"),
    ("downlink_MB_per_round", 1, "downlink per round (MB)"),
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


def _pair_text(ax: Axes, key: str, target: float, pair: tuple[str, str], lines: dict,
               values: list, x: np.ndarray, axis: tuple) -> str:
    """What two lines of one time-to-accuracy panel do against each other (their crossings
    marked on `ax`): cross, one always first, meet, or one or neither reaches the target."""
    a, b = pair
    ticks, log_x, divisor, unit = axis
    (alg_a, _, mean_a), (alg_b, _, mean_b) = lines[a], lines[b]
    both = np.isfinite(mean_a) & np.isfinite(mean_b)
    where = _mark_crossings(ax, key, x, mean_a, mean_b, log_x, ticks, divisor, unit)
    first = [v for v, on in zip(values, both, strict=True) if on]
    faster = None if not both.any() else (
        alg_a if (mean_a[both] < mean_b[both]).all() else (
            alg_b if (mean_b[both] < mean_a[both]).all() else None))
    span = ("-".join(dict.fromkeys(_fmt_value(v / divisor) for v in (first[0], first[-1])))
            + unit if first and ticks is None else "")
    every = f"the only {short(key)}" if len(first) == 1 else f"every {short(key)}"
    if where:
        last = np.flatnonzero(both)[-1]
        above = alg_a if mean_a[last] < mean_b[last] else alg_b
        return (f"{100 * target:g} %: {a} and {b} cross at {short(key)} ≈ "
                f"{', '.join(where)} ({above} first above)")
    elif faster:
        slower = b if faster == alg_a else a
        return (f"{100 * target:g} %: {a if faster == alg_a else b} before "
                f"{slower} at {every} where both reach it ({span}); "
                f"no crossover")
    elif both.any():
        return (f"{100 * target:g} %: {a} and {b} meet without crossing "
                f"where both reach it ({span})")
    else:
        reaches = [(lab, other) for lab, other, m in ((a, b, mean_a), (b, a, mean_b))
                   if np.isfinite(m).any()]
        return (f"{100 * target:g} %: only {reaches[0][0]} reaches it, not "
                f"{reaches[0][1]}" if reaches else
                f"{100 * target:g} %: neither {a} nor {b} reaches it")


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
    fig, axes = plt.subplots(1, len(reached), figsize=(4.8 * len(reached) + 1.8, 4.2),
                             squeeze=False, layout="constrained")
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
                (alg_a, set_a, _), (alg_b, set_b, _) = lines[a], lines[b]
                if alg_a == alg_b or set_a != set_b:
                    continue
                texts.append(_pair_text(ax, key, target, (a, b), lines, values, x,
                                        (ticks, log_x, divisor, unit)))
        ax.set_title(f"time to {100 * target:g} % test accuracy")
        ax.set_ylabel("simulated time (s)")
        ax.set_yscale("log")
        _format_sweep_axis(ax, key, x, ticks, log_x, divisor, unit)
    legend_outside(fig, axes)
    suptitle(fig, f"simulated time to accuracy against {key} (mean over seeds; a gap: not "
                  f"reached by every seed)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return texts


def effect_figure(runs: pd.DataFrame, key: str, keys: Sequence[str], path: Path,
                  with_accuracy: bool = True) -> list[str]:
    """The effect of one swept key: accuracy, uplink and downlink communication (a panel
    each, on one y axis), time and client computation per round, one line per algorithm (and
    per value of the other swept keys), bands over seeds. Crossovers of the time-per-round
    lines are marked and returned as text."""
    values, x, ticks, log_x, divisor, unit = _sweep_axis(runs, key)
    others = [k for k in keys if k != key]
    panels = [p for p in EFFECT_PANELS if with_accuracy or p[0] != "final_acc"]
    columns = 3 if len(panels) > 4 else 2   # timing-only runs: no accuracy, a 2 x 2 grid
    fig, grid = plt.subplots(2, columns, figsize=(5.4 * columns + 1.7, 7.5),
                             layout="constrained")
    for spare in grid.flat[len(panels):]:
        fig.delaxes(spare)
    axes = dict(zip((column for column, _, _ in panels), grid.flat, strict=False))
    axes["downlink_MB_per_round"].sharey(axes["uplink_MB_per_round"])
    lines = {}
    for i, (algorithm, setting, g) in enumerate(groups(runs, others)):
        label = group_label(algorithm, setting)
        # each line its colour, line style and marker: two algorithms with the same bytes or
        # FLOPs a round (FedAvg and FedLC) draw one line over the other
        style: dict[str, Any] = {
            "color": f"C{i % 10}", "ls": LINE_STYLES[i % len(LINE_STYLES)],
            "marker": MARKERS[i % len(MARKERS)], "ms": 5.0, "fillstyle": "none"}
        for column, scale, ylabel in panels:
            ax = axes[column]
            per_seed = g.pivot_table(index="seed", columns=key, values=column, aggfunc="first")
            per_seed = per_seed.reindex(columns=values)
            mean = _band(ax, x, scale * per_seed.to_numpy(), label=label, **style)
            if column == "time_per_round_s":
                lines[label] = (algorithm, tuple(setting.items()), mean)
            ax.set_ylabel(ylabel)
    texts = []
    labels = list(lines)
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            (alg_a, set_a, mean_a), (alg_b, set_b, mean_b) = lines[a], lines[b]
            if alg_a == alg_b or set_a != set_b:
                continue  # only algorithms under the same other settings are compared
            for where in _mark_crossings(axes["time_per_round_s"], key, x, mean_a, mean_b,
                                         log_x, ticks, divisor, unit):
                texts.append(f"{a} and {b}: time per round crosses at {short(key)} ≈ {where} "
                             f"({alg_a} faster {'above' if mean_a[-1] < mean_b[-1] else 'below'})")
    for column, ax in axes.items():
        _format_sweep_axis(ax, key, x, ticks, log_x, divisor, unit)
        if column != "final_acc":   # bytes, time, FLOPs: one algorithm may be 100x another
            log_y_if_wide(ax)       # (uplink or downlink wide: both, their y axis is one)
    legend_outside(fig, list(axes.values()))
    suptitle(fig, f"effect of {key} (mean ± 1 std over seeds)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return texts


def _unit_hint(key: str) -> str:
    for suffix, unit in (("_hz", " (Hz)"), ("_m", " (m)"), ("_w", " (W)"), ("_s", " (s)"),
                         ("participation", " (fraction of clients)")):
        if key.endswith(suffix):
            return unit
    return ""
