"""The README's headline table, written from the headline study's comparison.csv, so that no
number in it is rounded by hand: one row per algorithm, a single seed's values as they are,
several seeds' as mean ± standard deviation with the range of the best accuracy. The most
accurate algorithm is set in bold only where the seeds separate it from the next (its worst
seed above the next one's best seed), and never on one seed.

    python -m analysis.headline docs/studies/cellular_10pct/comparison.csv
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

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


def separated_leader(table: pd.DataFrame) -> str | None:
    """The algorithm whose every seed's best accuracy is above every other algorithm's best
    seed, when each has two seeds or more; else None."""
    best = table.groupby("algorithm")["best_acc"]
    if best.size().min() < 2:
        return None
    leader = str(best.mean().idxmax())
    others = best.max().drop(leader)
    return leader if best.min().loc[leader] > others.max() else None


def row(runs: pd.DataFrame, name: str, bold: bool) -> str:
    """One algorithm's row from its runs (one per seed)."""
    if len(runs) == 1:
        best = f"{100 * runs['best_acc'].iloc[0]:.2f} % (round {runs['best_round'].iloc[0]})"
    else:
        best = (f"{_spread(runs['best_acc'], 100, 2, '%')} "
                f"({100 * runs['best_acc'].min():.2f}-{100 * runs['best_acc'].max():.2f})")
    reached = runs["time_to_0.8_s"].dropna()
    to80 = ("not reached" if reached.empty else _spread(reached, 1, 0, "s")
            + ("" if len(reached) == len(runs) else f" ({len(reached)} of {len(runs)} seeds)"))
    cells = [f"**{name}**" if bold else name, str(len(runs)),
             f"**{best}**" if bold else best, _spread(runs["final_acc"], 100, 2, "%"),
             _spread(runs["total_sim_time_s"], 1, 0, "s"), to80,
             _spread(runs["uplink_bytes"], 1e-9, 2, "GB")]
    return "| " + " | ".join(cells) + " |"


def headline_rows(table: pd.DataFrame, names: Mapping[str, str] = NAMES) -> list[str]:
    """The table's rows (markdown), in the README's order."""
    leader = separated_leader(table)
    return [row(table[table["algorithm"] == algorithm].sort_values("seed"), name,
                algorithm == leader)
            for algorithm, name in names.items() if (table["algorithm"] == algorithm).any()]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m analysis.headline COMPARISON_CSV", file=sys.stderr)
        return 2
    print(HEADER)
    print("\n".join(headline_rows(pd.read_csv(args[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
