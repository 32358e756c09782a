"""Figures of one run, drawn from its rounds.csv and events.csv, and the comparison figures of
a scenario's runs (accuracy against simulated time and against rounds, every algorithm).

    python -m analysis.plots DIR [DIR ...]   (e.g. after a sweep run with --no-figures)

DIR is a run folder (holding rounds.csv) or a scenario's results folder (holding
comparison.csv), whose comparison figures are drawn.
"""

import sys
from collections.abc import Collection
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import read_rounds  # noqa: E402
from analysis.compare import find_runs  # noqa: E402
from analysis.runs import group_label  # noqa: E402
from analysis.style import (  # noqa: E402
    legend_outside,
    log_time_axis,
    marker_size,
    round_axis,
    set_log_x,
)
from scala_netsim.core.records import COMPARISON_CSV, ROUNDS_CSV, record_path

BREAKDOWN = (("compute_time_s", "client compute"), ("uplink_time_s", "uplink"),
             ("downlink_time_s", "downlink"), ("server_time_s", "server compute"),
             ("idle_time_s", "waiting"))


def time_unit(span_s: float) -> tuple[float, str]:
    """(seconds per unit, axis label): simulated time in s, min or h, whichever reads best."""
    if span_s >= 3 * 3600:
        return 3600.0, "simulated time (h)"
    if span_s >= 180:
        return 60.0, "simulated time (min)"
    return 1.0, "simulated time (s)"


def _accuracy_figure(x: pd.Series, y: pd.Series, xlabel: str, title: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(x, 100 * y, marker=".", lw=1.2)
    ax.set_xlabel(xlabel)
    if xlabel == "global round":
        round_axis(ax.xaxis)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_run(run_dir: Path | str, title: str | None = None) -> list[Path]:
    """accuracy_vs_time.png, accuracy_vs_rounds.png and latency_breakdown.png in `run_dir`
    (no breakdown for an asynchronous run, whose rounds.csv has no critical path)."""
    run_dir = Path(run_dir)
    rounds = read_rounds(run_dir)
    title = title or f"{run_dir.parent.name} ({run_dir.name})"
    evaluated = rounds.dropna(subset=["test_acc"])
    unit_s, t_label = time_unit(float(rounds["sim_time_s"].max()))
    t = evaluated["sim_time_s"] / unit_s
    written = [run_dir / "accuracy_vs_time.png", run_dir / "accuracy_vs_rounds.png",
               run_dir / "latency_breakdown.png"]
    if len(evaluated):   # (a timing-only run evaluates nothing: no accuracy figures)
        _accuracy_figure(t, evaluated["test_acc"], t_label, title, written[0])
        _accuracy_figure(evaluated["round"], evaluated["test_acc"], "global round", title,
                         written[1])
    else:
        written = written[2:]

    if not all(column in rounds for column, _ in BREAKDOWN):
        # an asynchronous run: clients overlap, no chain of steps made a version
        return written[:-1]
    fig, (ax_rounds, ax_total) = plt.subplots(1, 2, figsize=(10, 4.2),
                                              gridspec_kw={"width_ratios": [3, 1]})
    bottom = pd.Series(0.0, index=rounds.index)
    for column, label in BREAKDOWN:
        ax_rounds.fill_between(rounds["round"], bottom, bottom + rounds[column], step="mid",
                               label=label, alpha=0.8)
        bottom = bottom + rounds[column]
    ax_rounds.set_xlabel("global round")
    round_axis(ax_rounds.xaxis)
    ax_rounds.set_ylabel("round latency (s)")
    ax_rounds.set_title("critical path of each round")
    ax_rounds.set_ylim(0, 1.3 * float(bottom.max()) if len(rounds) else 1.0)
    ax_rounds.legend(fontsize=8, loc="upper center", ncol=3)
    ax_rounds.grid(alpha=0.3)
    totals = [rounds[c].sum() for c, _ in BREAKDOWN]
    share = [100 * v / max(sum(totals), 1e-300) for v in totals]
    ax_total.bar([label for _, label in BREAKDOWN], share,
                 color=[f"C{i}" for i in range(len(BREAKDOWN))])
    ax_total.set_ylabel("share of total simulated time (%)")
    ax_total.tick_params(axis="x", rotation=60)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(written[-1], dpi=120)
    plt.close(fig)
    return written


def reconstruction_figure(originals: np.ndarray, reconstructions: np.ndarray, path: Path,
                          title: str) -> Path:
    """Original images (top row) above their reconstructions (bottom row); N x C x H x W
    arrays in [0, 1] (one channel: grey)."""
    originals, reconstructions = np.asarray(originals), np.asarray(reconstructions)
    n = len(originals)
    fig, axes = plt.subplots(2, n, figsize=(1.3 * n, 3.0), squeeze=False)
    for row, images in enumerate((originals, reconstructions)):
        for i, image in enumerate(images):
            ax = axes[row][i]
            picture = image.transpose(1, 2, 0)
            ax.imshow(picture[..., 0] if picture.shape[-1] == 1 else picture,
                      cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0][0].set_ylabel("original", fontsize=8)
    axes[1][0].set_ylabel("reconstructed", fontsize=8)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def _curves(scenario_dir: Path, x_column: str,
            algorithms: Collection[str] | None) -> dict[str, list[np.ndarray]]:
    """Label -> the evaluated curves of its runs (one per seed): the label is the algorithm,
    followed by its swept values when the runs differ in more than the seed (a sweep), so
    that each setting gets a line of its own."""
    found = [(summary["algorithm"],
              {k: v for k, v in summary.get("setting", {}).items() if k != "seed"}, folder)
             for summary, folder in find_runs(scenario_dir, algorithms)]
    found.sort(key=lambda run: (run[0], [_order(v) for v in run[1].values()]))
    curves: dict[str, list[np.ndarray]] = {}
    for algorithm, setting, folder in found:
        label = group_label(algorithm, setting)
        rounds = read_rounds(folder).dropna(subset=["test_acc"])
        curves.setdefault(label, []).append(rounds[[x_column, "test_acc"]].to_numpy())
    return curves


def _order(value: object) -> tuple:
    """Sort numbers by value, anything else by its text, numbers first."""
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


#: one style per curve label, so that curves drawn on top of each other stay visible (a
#: dashed line over a solid one)
LINE_STYLES = ("-", (0, (5, 3)), (0, (1, 2)), (0, (5, 2, 1, 2)))


def legend_labels(curves: dict[str, list[np.ndarray]]) -> dict[str, str]:
    """Each curve label as the legend writes it: a label whose curves are those of an
    earlier one, point for point, says so ("fedprox (the same curve as fedavg)"), since one
    line hides the other."""
    legend: dict[str, str] = {}
    for label, runs in curves.items():
        same = next((other for other in legend
                     if len(curves[other]) == len(runs)
                     and all(a.shape == b.shape and np.array_equal(a, b)
                             for a, b in zip(curves[other], runs, strict=True))), None)
        legend[label] = label if same is None else f"{label} (the same curve as {same})"
    return legend


def _comparison_figure(scenario_dir: Path, x_column: str, path: Path, title: str,
                       algorithms: Collection[str] | None) -> None:
    curves = _curves(scenario_dir, x_column, algorithms)
    if not curves:
        return
    fig, ax = plt.subplots(figsize=(8.5, 4.8), layout="constrained")
    over_time = x_column == "sim_time_s"
    ends = [c[-1, 0] for runs in curves.values() for c in runs if len(c)]
    span = max(ends, default=0.0)
    divisor, x_label = time_unit(span) if over_time else (1.0, "global round")
    log_x = over_time and log_time_axis(ends)
    colours = plt.get_cmap("tab10" if len(curves) <= 10 else "tab20")
    legend = legend_labels(curves)
    for g, (label, runs) in enumerate(curves.items()):
        for i, c in enumerate(runs):  # one line per seed, one colour and style per label
            c = c[c[:, 0] > 0] if log_x else c   # round 0 (time 0) has no place on a log axis
            ax.plot(c[:, 0] / divisor, 100 * c[:, 1], lw=1.3, marker=".",
                    ls=LINE_STYLES[g % len(LINE_STYLES)],
                    ms=marker_size(len(c)) + 1 if marker_size(len(c)) else 0,
                    color=colours(g % colours.N), label=legend[label] if i == 0 else None)
    if log_x:
        set_log_x(ax)
    ax.set_xlabel(x_label + (", log scale" if log_x else ""))
    if not over_time:
        round_axis(ax.xaxis)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both" if log_x else "major")
    legend_outside(fig, [ax])
    fig.savefig(path, dpi=120)
    plt.close(fig)


def comparison_figures(scenario_dir: Path | str,
                       algorithms: Collection[str] | None = None) -> list[Path]:
    """accuracy_vs_time.png and accuracy_vs_rounds.png of a scenario's runs (none for
    timing-only runs, which have no accuracy)."""
    scenario_dir = Path(scenario_dir)
    written = [scenario_dir / "accuracy_vs_time.png", scenario_dir / "accuracy_vs_rounds.png"]
    if not any(len(c) for runs in _curves(scenario_dir, "round", algorithms).values()
               for c in runs):
        return []
    _comparison_figure(scenario_dir, "sim_time_s", written[0],
                       f"{scenario_dir.name}: accuracy against simulated time", algorithms)
    _comparison_figure(scenario_dir, "round", written[1],
                       f"{scenario_dir.name}: accuracy against rounds", algorithms)
    return written


def main(argv: list[str] | None = None) -> int:
    dirs = sys.argv[1:] if argv is None else argv
    missing = [d for d in dirs if not any(record_path(d, f).is_file()
                                          for f in (ROUNDS_CSV, COMPARISON_CSV))]
    if not dirs or missing:
        print(f"error: need run folders holding rounds.csv or scenario folders holding "
              f"comparison.csv; neither: {', '.join(missing)}"
              if missing else "usage: python -m analysis.plots DIR [DIR ...]", file=sys.stderr)
        return 2
    for folder in dirs:
        run = record_path(folder, ROUNDS_CSV).is_file()
        for path in plot_run(folder) if run else comparison_figures(folder):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
