"""The Flower study's answers (issue 65), written from its comparison and the kept runs of
SCALA and FedAvg on the same two clocks, so that every number in its report comes from the
table beside it:

    python -m analysis.flower RESULTS/flower --out docs/studies/flower

- flower.csv: per place (the paper's cell; the 7-site n78 TDD NR network) and method (each
  Flower strategy; SCALA and the package's FedAvg from their kept runs: the headline's
  docs/studies/cellular_10pct in the cell, the mobility study's static case on the network,
  the same clocks): the seeds, end-of-training accuracy (the mean of the evaluations in the
  last 20 % of the rounds) mean and standard deviation over the seeds, the final accuracy's
  mean, the time to 70 % and to 80 % (mean over the seeds that reach it, each seed's, and
  how many reach it), and against SCALA in the same place, on the seeds where both have
  the value (a time to 80 % a seed did not reach leaves that seed out): end-of-training
  accuracy minus SCALA's (percentage points) and the time to 80 % over SCALA's (means);
- flower.png: accuracy against simulated time, a panel a place, each method's mean over its
  seeds at each evaluated round (the rounds' mean time), on a logarithmic time axis;
- fedavg_agreement.csv: Flower's FedAvg against the package's kept FedAvg, place by place
  and seed by seed where both ran: whether every round ends at the same simulated instant
  (to the bit), and the largest difference of their test accuracies at an evaluated round;
- report.md: what was run and those tables, place by place, and the figure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.style import plt
from analysis.tables import markdown_table
from scala_netsim.core.files import run_file

PLACES = {"cell": "the paper's cell (the headline's)",
          "nr_7_sites": "the 7-site n78 network (100 MHz TDD, NR, round robin, 30 % load)"}
#: the kept runs on each place's clock: (comparison.csv, the rows' filter; their folders are
#: relative to the comparison's)
KEPT = {"cell": ("docs/studies/cellular_10pct/results/comparison.csv", {}),
        "nr_7_sites": ("docs/studies/mobility/results/comparison.csv", {"case": "static"})}
KEPT_NAMES = {"scala": "SCALA (kept)", "fedavg": "FedAvg, the package's (kept)"}
TARGETS = ("0.7", "0.8")
COMMAND = "python -m scala_netsim scenarios/flower.yaml"


def kept_runs(root: Path) -> pd.DataFrame:
    """SCALA's and FedAvg's kept runs on each place's clock, as comparison rows with
    `place`, `method` and `run` (the run's folder)."""
    frames = []
    for place, (path, where) in KEPT.items():
        runs = pd.read_csv(root / path)
        for key, value in where.items():
            runs = runs[runs[key] == value]
        runs = runs[runs.algorithm.isin(KEPT_NAMES)]
        frames.append(runs.assign(place=place, method=runs.algorithm.map(KEPT_NAMES),
                                  run=[str((root / path).parent / f) for f in runs.folder]))
    return pd.concat(frames, ignore_index=True)


def curve(folders: list[str]) -> pd.DataFrame:
    """The mean over runs of test accuracy and simulated time at each evaluated round."""
    rows = []
    for folder in folders:
        rounds = pd.read_csv(run_file(Path(folder), "rounds.csv"))
        rows.append(rounds.dropna(subset=["test_acc"])[["round", "sim_time_s", "test_acc"]])
    return pd.concat(rows).groupby("round").mean()


def figure(runs: pd.DataFrame, path: Path) -> None:
    """flower.png (the module's docstring) from runs with place, method and run."""
    places = [p for p in PLACES if (runs.place == p).any()]
    fig, axes = plt.subplots(1, len(places), figsize=(6 * len(places), 4.2), squeeze=False,
                             sharey=True)
    for ax, place in zip(axes[0], places, strict=True):
        here = runs[runs.place == place]
        for method in dict.fromkeys(here.method):
            mean = curve(list(here[here.method == method].run))
            ax.plot(mean.sim_time_s, 100 * mean.test_acc, label=method,
                    linestyle="--" if "kept" in method else "-")
        ax.set_xscale("log")
        ax.set_xlabel("simulated time (s)")
        ax.set_title(PLACES[place], fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("test accuracy (%)")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def method_row(place: str, method: str, runs: pd.DataFrame) -> dict:
    """One method's runs in one place (the module's docstring), sorted by seed."""
    runs = runs.sort_values("seed")
    row: dict = {"place": place, "method": method,
                 "seeds": " ".join(str(int(s)) for s in runs.seed),
                 "late_acc": runs.late_acc.mean(),
                 "late_acc_std": runs.late_acc.std(ddof=1) if len(runs) > 1 else np.nan,
                 "final_acc": runs.final_acc.mean()}
    for target in TARGETS:
        times = runs[f"time_to_{target}_s"].astype(float)
        row[f"time_to_{target}_s"] = times.mean()        # (NaN: not reached, left out)
        row[f"time_to_{target}_s_per_seed"] = " ".join(
            "-" if np.isnan(t) else f"{t:.1f}" for t in times)
        row[f"reached_{target}"] = f"{int(times.notna().sum())}/{len(times)}"
    return row


def table(flower: pd.DataFrame, kept: pd.DataFrame) -> pd.DataFrame:
    """flower.csv: every method in every place, with its gaps to SCALA there."""
    rows = []
    for place in PLACES:
        here = flower[flower.place == place]
        for strategy in dict.fromkeys(here.strategy):
            rows.append(method_row(place, f"Flower {strategy}",
                                   here[here.strategy == strategy]))
        theirs = kept[kept.place == place]
        for method in KEPT_NAMES.values():
            if (theirs.method == method).any():
                rows.append(method_row(place, method, theirs[theirs.method == method]))
    out = pd.DataFrame(rows)
    both = pd.concat([flower.assign(method="Flower " + flower.strategy), kept])
    scala = kept[kept.method == KEPT_NAMES["scala"]].set_index(["place", "seed"])
    out["late_acc_vs_scala_pp"] = [
        _against(both, scala, r.place, r.method, "late_acc", 100.0) for _, r in out.iterrows()]
    out["time_to_0.8_vs_scala"] = [
        _against(both, scala, r.place, r.method, "time_to_0.8_s") for _, r in out.iterrows()]
    return out


def _against(runs: pd.DataFrame, scala: pd.DataFrame, place: str, method: str, column: str,
             scale: float | None = None) -> float:
    """A method against SCALA in `place` on the seeds where both have `column` (a time to
    80 % a seed did not reach is left out of both): the difference of the means times
    `scale`, or (None) the ratio of the means."""
    mine = runs[(runs.place == place) & (runs.method == method)].set_index("seed")[column]
    pairs = pd.DataFrame({"mine": mine.astype(float), "scala": [
        float(scala[column].get((place, seed), np.nan)) for seed in mine.index]}).dropna()
    if pairs.empty:
        return np.nan
    mean, theirs = pairs["mine"].mean(), pairs["scala"].mean()
    return scale * (mean - theirs) if scale is not None else mean / theirs


def fedavg_agreement(flower: pd.DataFrame, kept: pd.DataFrame) -> pd.DataFrame:
    """fedavg_agreement.csv (the module's docstring)."""
    rows = []
    for place in PLACES:
        ours = flower[(flower.place == place) & (flower.strategy == "FedAvg")]
        theirs = kept[(kept.place == place) & (kept.method == KEPT_NAMES["fedavg"])]
        for seed in sorted(set(ours.seed) & set(theirs.seed)):
            a, b = (pd.read_csv(run_file(Path(runs[runs.seed == seed].run.iloc[0]),
                                         "rounds.csv")) for runs in (ours, theirs))
            evaluated = a.test_acc.notna() & b.test_acc.notna()
            rows.append({"place": place, "seed": int(seed), "rounds": len(a),
                         "same_times": len(a) == len(b) and bool(
                             (a.sim_time_s.to_numpy() == b.sim_time_s.to_numpy()).all()),
                         "evaluations": int(evaluated.sum()),
                         "max_acc_diff_pp": 100 * float(
                             (a.test_acc[evaluated] - b.test_acc[evaluated]).abs().max())})
    return pd.DataFrame(rows, columns=["place", "seed", "rounds", "same_times", "evaluations",
                                       "max_acc_diff_pp"])


def _pct(mean: float, std: float) -> str:
    return "-" if np.isnan(mean) else (f"{100 * mean:.2f} %" if np.isnan(std)
                                       else f"{100 * mean:.2f} ± {100 * std:.2f} %")


def _s(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:,.0f} s"


def seeds_named(flower: pd.DataFrame) -> str:
    """Which strategies ran which seeds, in words: "seed 0" where all ran the same one,
    else each set of seeds with the strategies that ran it ("seed 0 for FedAdam; seeds 0, 1,
    2 for FedAvg and FedProx")."""
    ran: dict[tuple[int, ...], list[str]] = {}
    for strategy in dict.fromkeys(flower.strategy):
        seeds = tuple(sorted({int(s) for s in flower[flower.strategy == strategy].seed}))
        ran.setdefault(seeds, []).append(strategy)

    def words(seeds: tuple[int, ...]) -> str:
        return (f"seed {seeds[0]}" if len(seeds) == 1
                else f"seeds {', '.join(map(str, seeds))}")

    if len(ran) == 1:
        return words(next(iter(ran)))
    return "; ".join(f"{words(seeds)} for {', '.join(names[:-1])}"
                     f"{' and ' if len(names) > 1 else ''}{names[-1]}"
                     for seeds, names in sorted(ran.items(), key=lambda kv: (len(kv[0]), kv[0])))


def report(rows: pd.DataFrame, flower: pd.DataFrame, agreement: pd.DataFrame) -> str:
    named = seeds_named(flower)
    parts = ["# Flower's strategies on the wireless clock (issue 65)", "",
             f"`{COMMAND}`: Flower's strategies (flwr 1.42) over the package's clients on the "
             f"SCALA paper's setting (K = 100, alpha = 2, T = 5, B = 320, the authors' "
             f"AlexNet, 10 % of the clients a round, 500 rounds), each trained in the cell "
             f"and re-timed on the network; {named}. SCALA and "
             f"the package's FedAvg: their kept runs on the same clocks (seeds 0-2); each "
             f"method is set against SCALA on the seeds where both have the value. "
             f"End-of-training accuracy: the mean of the evaluations in the last 20 % of "
             f"the rounds. Every number below is in flower.csv.", ""]
    for place, title in PLACES.items():
        here = rows[rows.place == place]
        if here.empty:
            continue
        parts += [f"## {title}", "", markdown_table(
            ["method", "seeds", "end-of-training accuracy", "vs SCALA", "time to 70 %",
             "time to 80 % (reached)", "over SCALA's"],
            [[r.method, r.seeds, _pct(r.late_acc, r.late_acc_std),
              "-" if np.isnan(r.late_acc_vs_scala_pp) else f"{r.late_acc_vs_scala_pp:+.2f} pp",
              _s(r["time_to_0.7_s"]),
              f"{_s(r['time_to_0.8_s'])} ({r['reached_0.8']})",
              "-" if np.isnan(r["time_to_0.8_vs_scala"])
              else f"{r['time_to_0.8_vs_scala']:.1f}x"]
             for _, r in here.iterrows()]), ""]
    if not agreement.empty:
        parts += ["## Flower's FedAvg against the package's", "",
                  "The same clients, selections and batches under Flower's FedAvg strategy "
                  "and the package's fedavg (fedavg_agreement.csv): whether every round ends "
                  "at the same simulated instant, and the largest gap between their test "
                  "accuracies at an evaluated round (float round-off in the aggregation, "
                  "grown over the rounds).", "", markdown_table(
                      ["place", "seed", "rounds", "every round's end the same", "evaluations",
                       "largest accuracy gap"],
                      [[PLACES[r.place], r.seed, r.rounds, "yes" if r.same_times else "no",
                        r.evaluations, f"{r.max_acc_diff_pp:.2f} pp"]
                       for _, r in agreement.iterrows()]), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the study's folder (comparison.csv)")
    parser.add_argument("--out", type=Path, default=Path("docs/studies/flower"))
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the repository, where the kept runs are")
    args = parser.parse_args(argv)
    flower = pd.read_csv(args.results / "comparison.csv")
    kept = kept_runs(args.root)
    rows = table(flower, kept)
    args.out.mkdir(parents=True, exist_ok=True)
    rows.to_csv(args.out / "flower.csv", index=False)
    ours = flower.assign(method="Flower " + flower.strategy,
                         run=[str(args.results / f) for f in flower.folder])
    agreement = fedavg_agreement(ours, kept)
    agreement.to_csv(args.out / "fedavg_agreement.csv", index=False)
    figure(pd.concat([ours, kept], ignore_index=True), args.out / "flower.png")
    (args.out / "report.md").write_text(report(rows, flower, agreement) +
                                        "\n\n![accuracy against "
                                        "simulated time](flower.png)\n")
    print(f"wrote {args.out / 'flower.csv'} and report.md", file=sys.stderr)


if __name__ == "__main__":
    main()
