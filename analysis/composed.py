"""The composed network study's answers (issue 50), written from its comparison.csv, so that
every number in its report comes from the table beside it:

    python -m analysis.composed RESULTS/network_composed/comparison.csv \
        --out docs/studies/network_composed

- fading.csv: per algorithm and case of scenarios/network_composed.yaml, the mean round time
  and the time to 70 and 80 % (means over the seeds), each as a multiple of the same place
  (the paper's cell or the 7-site network) without fading, the per-seed multiples of the
  time to 80 %, and FedAvg's time to 80 % over SCALA's in the case;
- report.md: what was run, the first answer, the table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

NAMES = {"scala": "SCALA", "fedavg": "FedAvg"}
CASES = {"paper_cell": "the paper's cell, no fading",
         "paper_cell_rayleigh_round": "the paper's cell, Rayleigh per round",
         "paper_cell_rayleigh_transfer": "the paper's cell, Rayleigh per transfer",
         "uma_7sites": "the 7-site network, no fading",
         "uma_7sites_rayleigh_round": "the 7-site network, Rayleigh per round",
         "uma_7sites_rayleigh_transfer": "the 7-site network, Rayleigh per transfer"}


def unfaded(case: str) -> str:
    return "paper_cell" if case.startswith("paper_cell") else "uma_7sites"


def fading_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """fading.csv (see the module's docstring)."""
    runs = comparison.assign(round_s=comparison["total_sim_time_s"] / comparison["rounds"])
    by_seed = runs.set_index(["algorithm", "cell", "seed"])["time_to_0.8_s"]
    means = runs.groupby(["algorithm", "cell"])[["round_s", "time_to_0.7_s",
                                                 "time_to_0.8_s"]].mean()
    rows = []
    for (algorithm, case), row in means.iterrows():
        base = means.loc[(algorithm, unfaded(case))]
        seeds = (by_seed.loc[(algorithm, case)] / by_seed.loc[(algorithm, unfaded(case))])
        rows.append({"algorithm": algorithm, "case": case, "round_s": row["round_s"],
                     "round_x": row["round_s"] / base["round_s"],
                     "time_to_0.7_s": row["time_to_0.7_s"],
                     "time_to_0.8_s": row["time_to_0.8_s"],
                     "to_0.8_x": row["time_to_0.8_s"] / base["time_to_0.8_s"],
                     "to_0.8_x_per_seed": " ".join(f"{v:.2f}" for v in seeds.tolist()),
                     "fedavg_over_scala_0.8": (means.loc[("fedavg", case), "time_to_0.8_s"]
                                               / means.loc[("scala", case), "time_to_0.8_s"])})
    order = {c: i for i, c in enumerate(CASES)}
    table = pd.DataFrame(rows)
    return table.sort_values(["algorithm", "case"], key=lambda s: s.map(
        order) if s.name == "case" else s.map({"scala": 0, "fedavg": 1})).reset_index(drop=True)


def answer(table: pd.DataFrame) -> str:
    """The first question's answer, every number from `table`."""
    t = table.set_index(["algorithm", "case"])

    def at(algorithm: str, case: str, column: str) -> float:
        return float(t.loc[(algorithm, case), column])

    def seeds(algorithm: str, case: str) -> str:
        return str(t.loc[(algorithm, case), "to_0.8_x_per_seed"])

    parts = []
    for a in ("scala", "fedavg"):
        net, cell = ("uma_7sites_rayleigh_round", "uma_7sites_rayleigh_transfer"), (
            "paper_cell_rayleigh_round", "paper_cell_rayleigh_transfer")
        parts.append(
            f"{NAMES[a]}'s round stretches {at(a, net[0], 'round_x'):.2f}x (per round) and "
            f"{at(a, net[1], 'round_x'):.2f}x (per transfer) in the network, against "
            f"{at(a, cell[0], 'round_x'):.2f}x and {at(a, cell[1], 'round_x'):.2f}x in the "
            f"paper's cell; its time to 80 % {at(a, net[0], 'to_0.8_x'):.2f}x and "
            f"{at(a, net[1], 'to_0.8_x'):.2f}x in the network (per seed {seeds(a, net[0])} "
            f"and {seeds(a, net[1])}), {at(a, cell[0], 'to_0.8_x'):.2f}x and "
            f"{at(a, cell[1], 'to_0.8_x'):.2f}x in the cell (per seed {seeds(a, cell[0])} "
            f"and {seeds(a, cell[1])})")
    ratio = [f"{at('scala', c, 'fedavg_over_scala_0.8'):.1f}x {CASES[c]}" for c in CASES]
    return ("; ".join(parts) + ". FedAvg's time to 80 % over SCALA's: " + ", ".join(ratio)
            + ".")


def report(table: pd.DataFrame, wall: pd.Series) -> str:
    lines = [
        "# The composed network study (issue 50)", "",
        "Built by `python -m analysis.composed RESULTS/network_composed/comparison.csv --out "
        "docs/studies/network_composed` from the study's comparison.csv (the runs kept slim "
        "in `results/`: `python -m scala_netsim.tools.regenerate "
        "docs/studies/network_composed/results --out RESULTS/network_composed` writes them "
        "again). The runs:", "",
        "    python -m scala_netsim scenarios/network_composed.yaml --retime-from "
        "docs/studies/cellular_10pct", "",
        "The headline's kept SCALA and FedAvg trainings (the paper's setting, the authors' "
        "AlexNet, 500 rounds, seeds 0-2; FedAvg with each client's optimiser state kept, as "
        "the headline trains it since issue 46), each re-timed in the paper's cell and in the "
        "7-site, 3-sector 38.901 UMa network at 2 GHz (ISD 500 m, wraparound, 80 % indoors, "
        "interference on, 20 MHz a cell at 30 kHz), without fading and with Rayleigh fading "
        "of every link (per round: one |h|^2 a client, direction and round; per transfer: a "
        "fresh one every transfer). The rate adapts to the faded SINR, so the learning is "
        "the headline's and only the clock differs. 36 re-timings on the project's 2-core "
        "CPU (one process, numpy's AVX-512 paths off, beside two training lanes), wall time "
        "per case summed over both algorithms and the seeds: "
        + ", ".join(f"{CASES[c]} {wall[c]:.0f} s" for c in CASES if c in wall) + ".", "",
        "This is the study's first question; the second (a deadline that drops the slowest "
        "30 % of a round) and the third (GAS and async SFL against SCALA over 600 simulated "
        "seconds in the network) need trainings and are not in yet.", "",
        "## 1. What Rayleigh fading does to the time to 80 %", "", answer(table), "",
        "A round waits for its slowest transfer, and with Rayleigh fading a transfer's "
        "airtime bits / (B log2(1 + SNR |h|^2)) has no finite mean: a deep fade stalls the "
        "round. The time to 80 % is a sum of rounds up to the first that reaches it, so one "
        "stalled early round can move it many times over (the per-seed multiples); the "
        "round's mean stretch is the steadier measure.", "",
        "## The table (fading.csv)", "", _markdown(table), "",
        "Simulated seconds, means over the seeds; `_x`: the multiple of the same place "
        "without fading (ratio of the seeds' means; per seed: each seed's own)."]
    return "\n".join(lines) + "\n"


def _markdown(table: pd.DataFrame) -> str:
    shown = table.assign(algorithm=table["algorithm"].map(NAMES),
                         case=table["case"].map(CASES))
    head = "| " + " | ".join(shown.columns) + " |"
    rule = "|" + "---|" * len(shown.columns)
    body = ["| " + " | ".join(_cell(v) for v in row) + " |"
            for row in shown.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("comparison", type=Path, help="the study's comparison.csv")
    parser.add_argument("--out", type=Path, required=True, help="where the report goes")
    args = parser.parse_args(argv)
    comparison = pd.read_csv(args.comparison)
    table = fading_table(comparison)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "fading.csv", index=False)
    wall = comparison.groupby("cell")["wall_time_s"].sum()
    (args.out / "report.md").write_text(report(table, wall))
    print(f"wrote fading.csv and report.md into {args.out}")


if __name__ == "__main__":
    main()
