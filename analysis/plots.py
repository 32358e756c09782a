"""Figures of one run, drawn from its rounds.csv and events.csv, and the comparison figures of
a scenario's runs (accuracy against simulated time and against rounds, every algorithm).

A run's latency breakdown is its rounds' critical path in parts: client compute, uplink,
downlink, server compute and waiting (rounds.csv's CRITICAL_PATH_COLUMNS), and, where the
run's transfers waited or stalled, those parts of each direction apart from its air time
(issue 61: they were all "uplink" or "downlink"), from events.csv:

- `tdd_wait`: a TDD frame's wait for the direction's symbols and an upload's grant (K2):
  events.csv's tdd_wait_s less the transfer's backhaul_s, which it holds too;
- `harq_wait`: the last transport block's wait for its HARQ retransmissions (harq_wait_s);
- `stalled`: under the NR link abstraction, the air time the transfer sent nothing, its SINR
  below its lowest MCS's curve: its air time, attempts x bits / rate, less the slots it sent
  in, transmissions x slot (the slot from the run's subcarrier spacing);
- `backhaul`: its time on a network's backhaul (backhaul_s).

The critical path is walked back from each round's end over events.csv as the engine walks it
(every step starts the moment the one it waits for ends; a gap is waiting), so its parts add
up to the round's time and each direction's to rounds.csv's time of that direction.

    python -m analysis.plots DIR [DIR ...]   (e.g. after a sweep run with --no-figures)

DIR is a run folder (holding rounds.csv) or a scenario's results folder (holding
comparison.csv), whose comparison figures are drawn.
"""

import bisect
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import read_rounds  # noqa: E402
from analysis.figures import accuracy_figure  # noqa: E402
from analysis.network_pictures import plot_network_run  # noqa: E402
from analysis.runs import load_runs, setting_keys  # noqa: E402
from analysis.style import round_axis, time_unit  # noqa: E402
from scala_netsim.core.columns import CRITICAL_PATH_COLUMNS
from scala_netsim.core.events import (
    CLIENT_COMPUTE_KINDS,
    DOWNLINK_KINDS,
    UPLINK_KINDS,
    EventKind,
)
from scala_netsim.core.files import (
    COMPARISON_CSV,
    EVENTS_CSV,
    ROUNDS_CSV,
    RUN_FIGURES,
    SCENARIO_YAML,
    run_file,
)
from scala_netsim.core.results import read_record, read_written_yaml

#: the parts a transfer's time on the critical path splits into besides its air time, in the
#: order the breakdown stacks them after their direction
WAITS = ("tdd_wait", "harq_wait", "stalled", "backhaul")
#: the events.csv columns each wait is read from
WAIT_SOURCES = {"tdd_wait": ("tdd_wait_s",), "harq_wait": ("harq_wait_s",),
                "stalled": ("transmissions",), "backhaul": ("backhaul_s",)}
WAIT_LABELS = {"tdd_wait": "TDD wait", "harq_wait": "HARQ wait", "stalled": "stalled (NR)",
               "backhaul": "backhaul"}
#: each part of the breakdown (a column of `critical_path_parts`) and its label, in stacking
#: order; a run without waits has rounds.csv's five
PARTS = {"compute_time_s": "client compute", "uplink_time_s": "uplink",
         **{f"uplink_{w}_s": f"uplink: {WAIT_LABELS[w]}" for w in WAITS},
         "downlink_time_s": "downlink",
         **{f"downlink_{w}_s": f"downlink: {WAIT_LABELS[w]}" for w in WAITS},
         "server_time_s": "server compute", "idle_time_s": "waiting"}

_BUCKET = {**{k.value: "compute_time_s" for k in CLIENT_COMPUTE_KINDS},
           **{k.value: "uplink_time_s" for k in UPLINK_KINDS},
           **{k.value: "downlink_time_s" for k in DOWNLINK_KINDS},
           EventKind.SERVER_STEP.value: "server_time_s"}
_READ = ["t_start_s", "t_end_s", "round", "kind", "payload_bytes"]


def critical_path_parts(run_dir: Path | str, rounds: pd.DataFrame) -> pd.DataFrame:
    """One row per round of `rounds` (the run's rounds.csv): the seconds of its critical path
    in each part of PARTS that the run has: rounds.csv's five alone where its events.csv
    records no wait (or is not kept), else each direction's air time and its waits apart.
    The parts of a round add up to its round_time_s."""
    run_dir = Path(run_dir)
    lumped = rounds[list(CRITICAL_PATH_COLUMNS)].reset_index(drop=True)
    if not run_file(run_dir, EVENTS_CSV).is_file():
        return lumped
    header = read_record(run_dir, EVENTS_CSV, nrows=0).columns
    waits = [w for w in WAITS if all(c in header for c in WAIT_SOURCES[w])]
    if not waits:
        return lumped
    extra = sorted({c for w in waits for c in WAIT_SOURCES[w]}
                   | ({"rate_bps", "attempts"} if "stalled" in waits else set()))
    events = read_record(run_dir, EVENTS_CSV, usecols=_READ + extra)
    split = _transfer_parts(events, waits, _slot_s(run_dir) if "stalled" in waits else math.nan)
    starts = (rounds["sim_time_s"] - rounds["round_time_s"]).to_numpy()
    columns = {c: np.zeros(len(rounds)) for c in PARTS}
    positions = events.groupby("round", sort=False).indices
    t_start, t_end = events["t_start_s"].to_numpy(), events["t_end_s"].to_numpy()
    bucket = events["kind"].map(_BUCKET).to_numpy()
    for i, (r, end_s) in enumerate(zip(rounds["round"], rounds["sim_time_s"], strict=True)):
        on_path, idle_s = _walk(np.asarray(positions.get(r, []), dtype=np.int64), t_start,
                                t_end, float(starts[i]), float(end_s))
        columns["idle_time_s"][i] = idle_s
        for at in on_path:
            part = bucket[at]
            duration_s = t_end[at] - t_start[at]
            if part in ("uplink_time_s", "downlink_time_s"):
                direction = part.removesuffix("_time_s")
                for w in waits:
                    columns[f"{direction}_{w}_s"][i] += split[w][at]
                duration_s -= sum(split[w][at] for w in waits)
            columns[part][i] += duration_s
    parts = pd.DataFrame(columns)
    kept = [c for c in PARTS if c in CRITICAL_PATH_COLUMNS or parts[c].any()]
    return parts[kept]


def _walk(rows: np.ndarray, t_start: np.ndarray, t_end: np.ndarray, round_start_s: float,
          round_end_s: float) -> tuple[list[int], float]:
    """The positions (of `rows`, a round's events in log order) on the round's critical path
    and its seconds of waiting: from the round's end, the first logged event that ends at the
    current instant was on it; continue from its start; where none ends then, the gap to the
    latest earlier end is waiting (scala_netsim's books.rounds.critical_path_s)."""
    ending_at: dict[float, int] = {}
    for at in rows.tolist():
        if t_end[at] > t_start[at]:
            ending_at.setdefault(float(t_end[at]), at)
    ends = sorted(ending_at)
    on_path, idle_s, t = [], 0.0, round_end_s
    while t > round_start_s:
        at = ending_at.get(t)
        if at is not None:
            on_path.append(at)
            t = float(t_start[at])
            continue
        i = bisect.bisect_left(ends, t)
        previous = max(ends[i - 1], round_start_s) if i > 0 else round_start_s
        idle_s += t - previous
        t = previous
    return on_path, idle_s


def _transfer_parts(events: pd.DataFrame, waits: list[str],
                    slot_s: float) -> dict[str, np.ndarray]:
    """Each event's seconds in each of `waits` (0 for everything but transfers)."""
    n = len(events)
    backhaul_s = events["backhaul_s"].to_numpy(float) if "backhaul_s" in events else np.zeros(n)
    out = {}
    if "tdd_wait" in waits:     # (tdd_wait_s: the duration less air time and HARQ wait)
        out["tdd_wait"] = events["tdd_wait_s"].to_numpy(float) - backhaul_s
    if "harq_wait" in waits:
        out["harq_wait"] = events["harq_wait_s"].to_numpy(float)
    if "stalled" in waits:
        with np.errstate(divide="ignore", invalid="ignore"):
            air_s = (events["attempts"] * 8.0 * events["payload_bytes"]
                     / events["rate_bps"]).to_numpy(float)
        sending_s = events["transmissions"].to_numpy(float) * slot_s
        out["stalled"] = np.where(np.isfinite(air_s), np.clip(air_s - sending_s, 0.0, None),
                                  0.0)   # (computations: no rate, no air time)
    if "backhaul" in waits:
        out["backhaul"] = backhaul_s
    return {w: np.nan_to_num(v, nan=0.0) for w, v in out.items()}


def _slot_s(run_dir: Path) -> float:
    """A slot of the run's numerology: 1 ms at 15 kHz, halved with each doubling of the
    subcarrier spacing (TS 38.211 4.3.2; analysis/ does not import channel/)."""
    scenario = read_written_yaml(run_dir / SCENARIO_YAML)
    return 1e-3 * 15e3 / float(scenario["network"]["subcarrier_spacing_hz"])


#: the latency breakdown's colour of each of rounds.csv's parts; a direction's waits are
#: drawn in its colour, lighter, each hatched its own way
COLORS = {c: f"C{i}" for i, c in enumerate(CRITICAL_PATH_COLUMNS)}
HATCHES = {"tdd_wait": "//", "harq_wait": "xx", "stalled": "..", "backhaul": "\\\\"}


def part_style(column: str, bar: bool = False) -> dict:
    """How the latency breakdown fills one part (a column of critical_path_parts) in its
    stack of rounds (or, `bar`, its bar of the run's total)."""
    if column in COLORS:
        return {"color": COLORS[column]} if bar else {"facecolor": COLORS[column], "alpha": 0.8}
    direction, wait = column.removesuffix("_s").split("_", 1)
    return {"facecolor": COLORS[f"{direction}_time_s"], "alpha": 0.45,
            "edgecolor": COLORS[f"{direction}_time_s"], "hatch": HATCHES[wait]}


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
    (no breakdown for an asynchronous run, whose rounds.csv has no critical path), and a
    network run's pictures (analysis.network_pictures)."""
    return _run_figures(Path(run_dir), title) + plot_network_run(run_dir)


def _run_figures(run_dir: Path, title: str | None) -> list[Path]:
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

    if not all(column in rounds for column in CRITICAL_PATH_COLUMNS):
        # an asynchronous run: clients overlap, no chain of steps made a version
        return written[:-1]
    # each direction's TDD, HARQ and backhaul waits and NR stalls apart, where it has them
    parts = critical_path_parts(run_dir, rounds).set_index(rounds.index)
    breakdown = [(column, PARTS[column]) for column in parts.columns]
    more = len(breakdown) - len(CRITICAL_PATH_COLUMNS)   # waits: a wider, taller figure
    fig, (ax_rounds, ax_total) = plt.subplots(
        1, 2, figsize=(10 + 0.3 * more, 4.2 + (1.2 if more else 0.0)),
        gridspec_kw={"width_ratios": [3, 1 + 0.08 * more]})
    bottom = pd.Series(0.0, index=rounds.index)
    for column, label in breakdown:
        ax_rounds.fill_between(rounds["round"], bottom, bottom + parts[column], step="mid",
                               label=label, **part_style(column))
        bottom = bottom + parts[column]
    ax_rounds.set_xlabel("global round")
    round_axis(ax_rounds.xaxis)
    ax_rounds.set_ylabel("round latency (s)")
    ax_rounds.set_title("critical path of each round")
    ax_rounds.set_ylim(0, (1.05 if more else 1.3) * float(bottom.max()) if len(rounds) else 1.0)
    if more:   # more parts than fit above the stack: the legend goes under the panel
        ax_rounds.legend(fontsize=8, loc="upper center", ncol=3, bbox_to_anchor=(0.5, -0.16))
    else:
        ax_rounds.legend(fontsize=8, loc="upper center", ncol=3)
    ax_rounds.grid(alpha=0.3)
    totals = [parts[c].sum() for c, _ in breakdown]
    share = [100 * v / max(sum(totals), 1e-300) for v in totals]
    for (column, label), value in zip(breakdown, share, strict=True):
        ax_total.bar(label, value, **part_style(column, bar=True))
    ax_total.set_ylabel("share of total simulated time (%)")
    ax_total.tick_params(axis="x", rotation=60)
    for tick in ax_total.get_xticklabels():   # each label ends under its bar
        tick.set(ha="right", rotation_mode="anchor")
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
