"""Figures of one run, drawn from its rounds.csv and events.csv.

    python -m analysis.plots RUN_DIR [RUN_DIR ...]   (e.g. after a sweep run with --no-figures)
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import read_rounds  # noqa: E402

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
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_run(run_dir: Path | str, title: str | None = None) -> list[Path]:
    """accuracy_vs_time.png, accuracy_vs_rounds.png and latency_breakdown.png in `run_dir`."""
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

    fig, (ax_rounds, ax_total) = plt.subplots(1, 2, figsize=(10, 4.2),
                                              gridspec_kw={"width_ratios": [3, 1]})
    bottom = 0.0
    for column, label in BREAKDOWN:
        ax_rounds.fill_between(rounds["round"], bottom, bottom + rounds[column], step="mid",
                               label=label, alpha=0.8)
        bottom = bottom + rounds[column]
    ax_rounds.set_xlabel("global round")
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


def main(argv: list[str] | None = None) -> int:
    run_dirs = sys.argv[1:] if argv is None else argv
    missing = [d for d in run_dirs if not (Path(d) / "rounds.csv").is_file()]
    if not run_dirs or missing:
        print(f"error: need run folders holding rounds.csv; not one: {', '.join(missing)}"
              if missing else "usage: python -m analysis.plots RUN_DIR [RUN_DIR ...]",
              file=sys.stderr)
        return 2
    for run_dir in run_dirs:
        for path in plot_run(run_dir):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
