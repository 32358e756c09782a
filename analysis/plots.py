"""Figures of one run, drawn from its rounds.csv and events.csv, and the comparison figures of
a scenario's runs (accuracy against simulated time and against rounds, every algorithm).

    python -m analysis.plots DIR [DIR ...]   (e.g. after a sweep run with --no-figures)

DIR is a run folder (holding rounds.csv) or a scenario's results folder (holding
comparison.csv), whose comparison figures are drawn.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import read_rounds  # noqa: E402
from analysis.figures import accuracy_figure  # noqa: E402
from analysis.runs import load_runs, setting_keys  # noqa: E402
from analysis.style import round_axis, time_unit  # noqa: E402
from scala_netsim.core.files import COMPARISON_CSV, ROUNDS_CSV, RUN_FIGURES, run_file

BREAKDOWN = (("compute_time_s", "client compute"), ("uplink_time_s", "uplink"),
             ("downlink_time_s", "downlink"), ("server_time_s", "server compute"),
             ("idle_time_s", "waiting"))


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
    written = [run_dir / name for name in RUN_FIGURES]   # time, rounds, latency breakdown
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


def comparison_figures(scenario_dir: Path | str) -> list[Path]:
    """figures/accuracy_vs_time.png and figures/accuracy_vs_rounds.png of a scenario's runs,
    the figures its report shows (analysis.figures.accuracy_figure: every algorithm of a
    setting in one panel, all panels on one axis); none for timing-only runs, which have no
    accuracy."""

    scenario_dir = Path(scenario_dir)
    runs, curves, index = load_runs(scenario_dir)
    if runs.empty or runs["timing_only"].all():
        return []
    # a key swept over one value (a sweep cut to one cell) labels nothing
    keys = [k for k in setting_keys(index) if k in runs.columns and runs[k].nunique() >= 2]
    figures = scenario_dir / "figures"
    figures.mkdir(exist_ok=True)
    written = [figures / "accuracy_vs_time.png", figures / "accuracy_vs_rounds.png"]
    for path, over_time in zip(written, (True, False), strict=True):
        accuracy_figure(runs, curves, keys, path, over_time)
    return written


def main(argv: list[str] | None = None) -> int:
    dirs = sys.argv[1:] if argv is None else argv
    missing = [d for d in dirs if not any(run_file(d, f).is_file()
                                          for f in (ROUNDS_CSV, COMPARISON_CSV))]
    if not dirs or missing:
        print(f"error: need run folders holding rounds.csv or scenario folders holding "
              f"comparison.csv; neither: {', '.join(missing)}"
              if missing else "usage: python -m analysis.plots DIR [DIR ...]", file=sys.stderr)
        return 2
    for folder in dirs:
        run = run_file(folder, ROUNDS_CSV).is_file()
        for path in plot_run(folder) if run else comparison_figures(folder):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
