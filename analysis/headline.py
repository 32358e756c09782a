"""The README's headline table, written from the headline study's comparison.csv, so that no
number in it is rounded by hand: one row per algorithm, a single seed's values as they are,
several seeds' as mean ± standard deviation over seeds with their range. It leads with the
paper's yardstick, end-of-training accuracy (the mean of the evaluations in the last 20 % of
the rounds: analysis.compare.late_accuracy; one seed: ± the std of those evaluations), then
the final evaluation, then the best of the evaluations (a maximum, which rewards curves that
swing), then the paper's alpha = 2 accuracy. In each accuracy column the leader is set in
bold only where the seeds separate it from every other algorithm (its worst seed above the
others' best), and never on one seed.

    python -m analysis.headline docs/studies/cellular_10pct/comparison.csv
    python -m analysis.headline docs/studies/cellular_10pct/comparison.csv --findings
    python -m analysis.headline docs/studies/cellular_10pct/comparison.csv --runs

    python -m analysis.headline docs/studies/cellular_10pct/comparison.csv \
        --variants docs/studies/cellular_10pct/variants

(--findings: the paragraph under the table; --runs: the report's table of every run, seed by
seed, with where it was trained; --variants: each baseline variant of issue 46 against today's
default at the same seeds.)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

#: the README's names, in its order
NAMES = {"scala": "SCALA", "splitfed_v1": "SplitFedV1", "splitfed_v2": "SplitFedV2",
         "sfl_local_loss": "SFL with local loss", "fedavg": "FedAvg", "fedprox": "FedProx",
         "fedlc": "FedLC"}
#: the SCALA paper's Fashion-MNIST accuracies at alpha = 2 (conference version, table 4; K =
#: 100, 10 % a round, AlexNet; the mean over 3 seeds): what the headline calibrates against.
#: The paper has no FedLC row on Fashion-MNIST (its FedLA 76.64 and FedLogit 77.51 are
#: logit-adjusted FedAvg variants of its own naming)
PAPER_ALPHA2 = {"scala": 90.70, "splitfed_v1": 85.44, "splitfed_v2": 84.78,
                "sfl_local_loss": 87.58, "fedavg": 81.72, "fedprox": 85.09}
HEADER = ("| algorithm | seeds | end-of-training accuracy | final | best of the evaluations | "
          "the paper | simulated time, 500 rounds | time to 80 % | uplink |\n"
          "|---|---|---|---|---|---|---|---|---|")


def _spread(values: pd.Series, scale: float, digits: int, unit: str) -> str:
    """'v unit' for one value, 'mean ± std unit' (sample std) for several."""
    values = values.astype(float) * scale
    if len(values) == 1:
        return f"{values.iloc[0]:,.{digits}f} {unit}"
    return f"{values.mean():,.{digits}f} ± {values.std(ddof=1):,.{digits}f} {unit}"


def separated_leader(table: pd.DataFrame, column: str = "late_acc") -> str | None:
    """The algorithm whose every seed's `column` is above every other algorithm's best seed
    there, when it has two seeds or more; else None. (An algorithm run on one seed still
    counts against the leader with that seed.)"""
    values = table.groupby("algorithm")[column]
    leader = str(values.mean().idxmax())
    if values.size().loc[leader] < 2:
        return None
    others = values.max().drop(leader)
    return leader if values.min().loc[leader] > others.max() else None


def _accuracy(runs: pd.DataFrame, column: str) -> str:
    """One seed: the value; several: mean ± std over seeds and their range."""
    if len(runs) == 1:
        return f"{100 * runs[column].iloc[0]:.2f} %"
    return (f"{_spread(runs[column], 100, 2, '%')} "
            f"({100 * runs[column].min():.2f}-{100 * runs[column].max():.2f})")


def row(runs: pd.DataFrame, name: str, bold: frozenset[str] = frozenset(),
        paper: float | None = None) -> str:
    """One algorithm's row from its runs (one per seed); `bold`: the accuracy columns
    (late_acc, final_acc, best_acc) it leads with the seeds separating it (the name in bold
    where it leads the first)."""
    late = _accuracy(runs, "late_acc")
    if len(runs) == 1:   # one seed: the swing of its last evaluations instead of the seeds'
        late = (f"{100 * runs['late_acc'].iloc[0]:.2f} ± "
                f"{100 * runs['late_acc_std'].iloc[0]:.2f} % (one seed: its evaluations)")
    best = (f"{100 * runs['best_acc'].iloc[0]:.2f} % (round {runs['best_round'].iloc[0]})"
            if len(runs) == 1 else _accuracy(runs, "best_acc"))
    accuracy = {"late_acc": late, "final_acc": _accuracy(runs, "final_acc"), "best_acc": best}
    reached = runs["time_to_0.8_s"].dropna()
    to80 = ("not reached" if reached.empty else _spread(reached, 1, 0, "s")
            + ("" if len(reached) == len(runs) else f" ({len(reached)} of {len(runs)} seeds)"))
    cells = [f"**{name}**" if "late_acc" in bold else name, str(len(runs)),
             *(f"**{text}**" if column in bold else text for column, text in accuracy.items()),
             "—" if paper is None else f"{paper:.2f} %",
             _spread(runs["total_sim_time_s"], 1, 0, "s"), to80,
             _spread(runs["uplink_bytes"], 1e-9, 2, "GB")]
    return "| " + " | ".join(cells) + " |"


def headline_rows(table: pd.DataFrame, names: Mapping[str, str] = NAMES) -> list[str]:
    """The table's rows (markdown), in the README's order."""
    leaders = {column: separated_leader(table, column)
               for column in ("late_acc", "final_acc", "best_acc")}
    return [row(table[table["algorithm"] == algorithm].sort_values("seed"), name,
                frozenset(c for c, leader in leaders.items() if leader == algorithm),
                PAPER_ALPHA2.get(algorithm))
            for algorithm, name in names.items() if (table["algorithm"] == algorithm).any()]


def _pct(value: float) -> str:
    return f"{100 * value:.2f} %"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def findings(table: pd.DataFrame, names: Mapping[str, str] = NAMES) -> str:
    """The README's paragraph under the table, every number from `table`: who leads by
    end-of-training accuracy and by how much (differences of the seeds' means), whether the
    seeds separate it, how the best of the evaluations ranks them instead, and the gap to
    the paper."""
    by = table.groupby("algorithm")
    late, best, final = (by[c].mean() for c in ("late_acc", "best_acc", "final_acc"))
    order = [a for a in late.sort_values(ascending=False).index if a in names]
    leader, second, third = order[:3]
    seeds = by.size()
    lead = [f"{names[a]} ({_pct(late[a])}) by {100 * (late[leader] - late[a]):.2f} pp"
            for a in (second, third)]
    separated = separated_leader(table, "late_acc") == leader
    worst, others = by["late_acc"].min()[leader], by["late_acc"].max().drop(leader)
    text = (f"By end-of-training accuracy (the mean of the evaluations in the last 20 % of "
            f"the rounds; mean over seeds) {names[leader]} leads with {_pct(late[leader])}, "
            f"ahead of {_join(lead)} (differences of the seeds' means); its worst seed "
            f"({_pct(worst)}) is {'above' if separated else 'not above'} every other "
            f"algorithm's best seed ({_pct(others.max())}). ")
    top = [a for a in (leader, second, third) if seeds[a] > 1]
    ranges = _join([f"{names[a]} {100 * by['best_acc'].min()[a]:.2f}-"
                    f"{100 * by['best_acc'].max()[a]:.2f} %" for a in top])
    swing = {a: 100 * (best[a] - final[a]) for a in (leader, second, third)}
    text += (f"By the best of the evaluations the three overlap over the seeds ({ranges}): a "
             f"maximum over evaluations rewards curves that swing, and {names[second]} and "
             f"{names[third]} end {swing[second]:.2f} and {swing[third]:.2f} pp under their "
             f"best (means over seeds), {names[leader]} {swing[leader]:.2f} pp. ")
    gaps = _join([f"{names[a]} {late[a] * 100 - PAPER_ALPHA2[a]:+.2f} pp"
                  for a in names if a in late.index and a in PAPER_ALPHA2])
    text += (f"Against the paper's alpha = 2 accuracies, end-of-training accuracy minus the "
             f"paper's: {gaps}.")
    return text


VARIANTS_HEADER = ("| algorithm | variant | seeds | end-of-training accuracy | final | best of the "
                   "evaluations | today's default, same seeds | change | the paper |\n"
                   "|---|---|---|---|---|---|---|---|---|")


def variant_name(folder: str) -> str:
    """'server_order=sequential, optimizer_state=persistent' from a variant's folder name
    (scripts/headline_lanes.sh: the --set pairs joined by commas)."""
    return ", ".join(pair.split(".", 1)[-1] for pair in folder.split(","))


def variants_rows(variants: Path, table: pd.DataFrame,
                  names: Mapping[str, str] = NAMES) -> list[str]:
    """One row per baseline variant kept under `variants` (<settings>/<algorithm>/seed<k>/,
    issue 46's reference-code options): its accuracies over its seeds (as the headline's
    table), today's default's end-of-training accuracy over the same seeds (from `table`, the
    headline's comparison), the change (difference of those means) and the paper's alpha = 2
    accuracy."""
    from analysis.compare import comparison_table

    rows = []
    for folder in sorted(p for p in variants.iterdir() if p.is_dir()):
        runs = comparison_table(folder, [0.8])
        for algorithm, group in runs.groupby("algorithm"):
            group = group.sort_values("seed")
            base = table[(table["algorithm"] == algorithm)
                         & table["seed"].isin(group["seed"])]
            late = group["late_acc"].mean()
            paper = PAPER_ALPHA2.get(str(algorithm))
            cells = [names.get(str(algorithm), str(algorithm)), variant_name(folder.name),
                     str(len(group)), _accuracy(group, "late_acc"),
                     _accuracy(group, "final_acc"), _accuracy(group, "best_acc"),
                     (_accuracy(base, "late_acc") if len(base) == len(group)
                      else "not run at these seeds"),
                     (f"{100 * (late - base['late_acc'].mean()):+.2f} pp"
                      if len(base) == len(group) else ""),
                     "—" if paper is None else f"{paper:.2f} %"]
            rows.append("| " + " | ".join(cells) + " |")
    return rows


RUNS_HEADER = ("| algorithm | seed | end-of-training accuracy | final | best of the "
               "evaluations | time to 80 % | trained on | wall time |\n"
               "|---|---|---|---|---|---|---|---|")


def trained_on(summary: Mapping) -> str:
    """Where a run was trained, from its summary.json: device, processor, torch threads (the
    first machine's; 'resumed n times' where it went on elsewhere or later)."""
    machines = summary.get("machines") or [{}]
    first = machines[0]
    threads = first.get("torch_threads", "?")
    where = (f"{first.get('device', summary.get('device', '?'))}, {first.get('processor', '?')}, "
             f"{threads} torch thread{'' if threads == 1 else 's'}")
    return where + (f", resumed {len(machines) - 1}x" if len(machines) > 1 else "")


def runs_rows(table: pd.DataFrame, results: Path, names: Mapping[str, str] = NAMES) -> list[str]:
    """One row per run (the README's order, then by seed), its summary.json read from its
    folder under `results`."""
    rows = []
    for algorithm, name in names.items():
        for _, run in table[table["algorithm"] == algorithm].sort_values("seed").iterrows():
            summary = json.loads((results / str(run["folder"]) / "summary.json").read_text())
            to80 = run["time_to_0.8_s"]
            cells = [name, str(run["seed"]),
                     f"{100 * run['late_acc']:.2f} ± {100 * run['late_acc_std']:.2f} %",
                     f"{100 * run['final_acc']:.2f} %",
                     f"{100 * run['best_acc']:.2f} % (round {run['best_round']})",
                     "not reached" if pd.isna(to80) else f"{to80:,.0f} s",
                     trained_on(summary), f"{run['wall_time_s'] / 60:,.1f} min"]
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.headline",
                                     description="The README's headline table.")
    parser.add_argument("comparison", type=Path, help="the headline study's comparison.csv")
    parser.add_argument("--runs", action="store_true",
                        help="every run, seed by seed, with where it was trained (the report's "
                             "table; reads the runs' summary.json under results/ beside it)")
    parser.add_argument("--variants", type=Path, default=None, metavar="DIR",
                        help="the report's table of the baselines' reference-code variants "
                             "kept under DIR (docs/studies/cellular_10pct/variants)")
    parser.add_argument("--findings", action="store_true",
                        help="the paragraph under the README's table, from the same table")
    args = parser.parse_args(argv)
    table = pd.read_csv(args.comparison)
    if args.runs:
        print(RUNS_HEADER)
        print("\n".join(runs_rows(table, args.comparison.parent / "results")))
    elif args.variants is not None:
        print(VARIANTS_HEADER)
        print("\n".join(variants_rows(args.variants, table)))
    elif args.findings:
        print(findings(table))
    else:
        print(HEADER)
        print("\n".join(headline_rows(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
