"""The README's headline table, written from the headline study's comparison.csv, so that no
number in it is rounded by hand: one row per algorithm, a single seed's values as they are,
several seeds' as mean ± standard deviation, with the range over seeds of the best and the
final accuracy. In each of those two columns the leader is set in bold only where the seeds
separate it from every other algorithm (its worst seed above the others' best), and never on
one seed.

    python -m analysis.headline docs/studies/cellular_10pct/comparison.csv
    python -m analysis.headline docs/studies/cellular_10pct/comparison.csv --runs

(--runs: the report's table of every run, seed by seed, with where it was trained.)
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
HEADER = ("| algorithm | seeds | best test accuracy | final | simulated time, 500 rounds | "
          "time to 80 % | uplink |\n|---|---|---|---|---|---|---|")


def _spread(values: pd.Series, scale: float, digits: int, unit: str) -> str:
    """'v unit' for one value, 'mean ± std unit' (sample std) for several."""
    values = values.astype(float) * scale
    if len(values) == 1:
        return f"{values.iloc[0]:,.{digits}f} {unit}"
    return f"{values.mean():,.{digits}f} ± {values.std(ddof=1):,.{digits}f} {unit}"


def separated_leader(table: pd.DataFrame, column: str = "best_acc") -> str | None:
    """The algorithm whose every seed's `column` is above every other algorithm's best seed
    there, when it has two seeds or more; else None. (An algorithm run on one seed still
    counts against the leader with that seed.)"""
    values = table.groupby("algorithm")[column]
    leader = str(values.mean().idxmax())
    if values.size().loc[leader] < 2:
        return None
    others = values.max().drop(leader)
    return leader if values.min().loc[leader] > others.max() else None


def row(runs: pd.DataFrame, name: str, bold: bool, bold_final: bool = False) -> str:
    """One algorithm's row from its runs (one per seed); `bold`: the name and the best
    accuracy in bold, `bold_final`: the final accuracy."""
    if len(runs) == 1:
        best = f"{100 * runs['best_acc'].iloc[0]:.2f} % (round {runs['best_round'].iloc[0]})"
        final = _spread(runs["final_acc"], 100, 2, "%")
    else:
        best, final = (f"{_spread(runs[c], 100, 2, '%')} "
                       f"({100 * runs[c].min():.2f}-{100 * runs[c].max():.2f})"
                       for c in ("best_acc", "final_acc"))
    reached = runs["time_to_0.8_s"].dropna()
    to80 = ("not reached" if reached.empty else _spread(reached, 1, 0, "s")
            + ("" if len(reached) == len(runs) else f" ({len(reached)} of {len(runs)} seeds)"))
    cells = [f"**{name}**" if bold else name, str(len(runs)),
             f"**{best}**" if bold else best, f"**{final}**" if bold_final else final,
             _spread(runs["total_sim_time_s"], 1, 0, "s"), to80,
             _spread(runs["uplink_bytes"], 1e-9, 2, "GB")]
    return "| " + " | ".join(cells) + " |"


def headline_rows(table: pd.DataFrame, names: Mapping[str, str] = NAMES) -> list[str]:
    """The table's rows (markdown), in the README's order."""
    leader, final_leader = separated_leader(table), separated_leader(table, "final_acc")
    return [row(table[table["algorithm"] == algorithm].sort_values("seed"), name,
                algorithm == leader, algorithm == final_leader)
            for algorithm, name in names.items() if (table["algorithm"] == algorithm).any()]


RUNS_HEADER = ("| algorithm | seed | best test accuracy | final | late (last fifth) | "
               "time to 80 % | trained on | wall time |\n|---|---|---|---|---|---|---|---|")


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
                     f"{100 * run['best_acc']:.2f} % (round {run['best_round']})",
                     f"{100 * run['final_acc']:.2f} %", f"{100 * run['late_acc']:.2f} %",
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
    args = parser.parse_args(argv)
    table = pd.read_csv(args.comparison)
    if args.runs:
        print(RUNS_HEADER)
        print("\n".join(runs_rows(table, args.comparison.parent / "results")))
    else:
        print(HEADER)
        print("\n".join(headline_rows(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
