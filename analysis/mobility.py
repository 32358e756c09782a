"""The mobility study's answers (issue 64), written from its result folder, so that every
number in its report comes from the tables beside it:

    python -m analysis.mobility RESULTS --out docs/studies/mobility

- RESULTS/handovers.csv: per run (algorithm, case, seed), from its full records where they
  are there (events.csv, handovers.csv, mobility.csv of a fresh re-timing, written beside
  its comparison.csv; the kept slim runs hold none, so it is read back from there): the
  moves and handovers, handovers per selected client-hour (over the 10 clients a round and
  the run's simulated hours) and per round, the share of transfers that a handover held back
  (events.csv `handovers` above 0), and the time those transfers spent in an interruption
  (each handover's [t, t + interruption) met with its client's transfers in flight), in all
  and as a share of the transfers' time;
- times.csv: per algorithm and case, the time to 80 % (mean and each seed), each seed's
  median round and the median over rounds of each round's time over the static case's same
  round (the same learning: round r is the same clients' work), and the time to 80 % over
  static's;
- with the deadline cases (trained): deadline.csv and dropped.csv (analysis.mobility_deadline;
  dropped.csv, seed by seed, from each deadline run's full records where it has them, else
  from the dropped.csv kept beside comparison.csv, as handovers.csv is);
- report.md: what was run and the answers, every number from those tables.

`--deadlines` prints instead the 70th percentiles, over the static case's seeds and rounds,
of what a deadline weighs (analysis.composed_deadline.finishes: FedAvg's model upload's end
from its round's start, SCALA's slowest wait of its barrier for a client's activations):
where the deadline cases are set to drop about the slowest 30 % of a round.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import mobility_deadline
from analysis.composed_deadline import finishes
from analysis.tables import markdown_table, seed_times
from scala_netsim.core.events import DOWNLINK_KINDS, UPLINK_KINDS
from scala_netsim.core.files import EVENTS_CSV, HANDOVERS_CSV, MOBILITY_CSV, run_file
from scala_netsim.core.results import read_record

CASES = {"static": "static (every client at its drop point)",
         "pedestrians": "pedestrians at 3 km/h",
         "vehicles_30": "30 % of outdoor clients in vehicles at 30 km/h",
         "vehicles_120": "30 % of outdoor clients in vehicles at 120 km/h",
         "static_deadline": "static clients under the deadline",
         "vehicles_120_deadline": "vehicles at 120 km/h under the deadline"}
NAMES = {"scala": "SCALA", "fedavg": "FedAvg"}
SELECTED = 10      # clients a round (K = 100, 10 %)
TRANSFERS = sorted(k.value for k in UPLINK_KINDS | DOWNLINK_KINDS)
COMMAND = ("python -m scala_netsim scenarios/mobility.yaml --retime-from "
           "docs/studies/cellular_10pct")


def run_handovers(folder: Path, rounds: int) -> dict:
    """One run's handover numbers (the module's docstring), from its full records."""
    events = pd.read_csv(run_file(folder, EVENTS_CSV))
    moved = events[events["kind"].isin(TRANSFERS)]
    handovers = (pd.read_csv(run_file(folder, HANDOVERS_CSV))
                 if run_file(folder, HANDOVERS_CSV).is_file() else pd.DataFrame())
    moves = (len(pd.read_csv(run_file(folder, MOBILITY_CSV), usecols=["client_id"]))
             if run_file(folder, MOBILITY_CSV).is_file() else 0)
    hours = float(events["t_end_s"].max()) / 3600.0
    lost = 0.0
    if len(handovers):
        by_client = {int(k): (g["t_start_s"].to_numpy(float), g["t_end_s"].to_numpy(float))
                     for k, g in moved.groupby("client_id")}
        for client, t, pause in zip(handovers["client_id"].to_numpy().tolist(),
                                    handovers["t_s"].to_numpy(float).tolist(),
                                    handovers["interruption_s"].to_numpy(float).tolist(),
                                    strict=True):
            if client in by_client:
                start, end = by_client[client]
                overlap = np.minimum(end, t + pause) - np.maximum(start, t)
                lost += float(overlap.clip(min=0.0).sum())
    held = moved["handovers"] > 0 if "handovers" in moved else pd.Series(False, moved.index)
    busy = float((moved["t_end_s"] - moved["t_start_s"]).sum())
    return {"moves": moves, "handovers": len(handovers),
            "per_client_hour": len(handovers) / (SELECTED * hours),
            "per_round": len(handovers) / rounds,
            "transfers_held": float(held.mean()),
            "interruption_s": lost, "interruption_share": lost / busy if busy else 0.0}


def handover_table(comparison: pd.DataFrame, root: Path, kept: pd.DataFrame) -> pd.DataFrame:
    """handovers.csv: each run's row from its full records where it has them, else its row of
    `kept` (the table written when it had them); a run with neither raises ValueError."""
    known = {(str(r["algorithm"]), str(r["case"]), int(r["seed"])): r
             for r in kept.to_dict("records")}
    rows = []
    for algorithm, case, seed, folder in zip(*(comparison[c].tolist() for c in (
            "algorithm", "case", "seed", "folder")), strict=True):
        if run_file(root / str(folder), EVENTS_CSV).is_file():
            rounds = int(pd.read_csv(run_file(root / str(folder), "rounds.csv"))["round"].max())
            rows.append({"algorithm": algorithm, "case": case, "seed": int(seed),
                         **run_handovers(root / str(folder), rounds)})
        elif (str(algorithm), str(case), int(seed)) in known:
            rows.append(known[(str(algorithm), str(case), int(seed))])
        else:
            raise ValueError(f"{folder}: slim (no events.csv) and not in {HANDOVERS_CSV}: "
                             f"re-time the study, or regenerate its runs "
                             f"(python -m scala_netsim.tools.regenerate)")
    return _ordered(pd.DataFrame(rows), ["algorithm", "case", "seed"])


def _ordered(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    order = {c: i for i, c in enumerate(CASES)}
    return table.sort_values(keys, key=lambda s: s.map(order) if s.name == "case"
                             else s).reset_index(drop=True)


def _round_times(root: Path, folder: str) -> np.ndarray:
    return pd.read_csv(run_file(root / folder, "rounds.csv"))["round_time_s"].to_numpy(float)


def times(comparison: pd.DataFrame, root: Path) -> pd.DataFrame:
    """Per algorithm and case (the module's docstring)."""
    still = comparison[comparison["case"] == "static"]
    static = {(str(a), int(s)): _round_times(root, str(f)) for a, s, f in zip(
        still["algorithm"].tolist(), still["seed"].tolist(), still["folder"].tolist(),
        strict=True)}
    rows = []
    for (algorithm, case), group in comparison.groupby(["algorithm", "case"]):
        group = group.sort_values("seed")
        rounds = [_round_times(root, f) for f in group["folder"]]
        stretch = [float(np.median(t / static[(str(algorithm), int(s))]))
                   for t, s in zip(rounds, group["seed"], strict=True)]
        rows.append({"algorithm": algorithm, "case": case, "seeds": len(group),
                     **seed_times(group, ("0.8",)),
                     "median_round_s_per_seed": " ".join(f"{np.median(t):.2f}"
                                                         for t in rounds),
                     "median_stretch": float(np.median(stretch)),
                     "median_stretch_per_seed": " ".join(f"{s:.3f}" for s in stretch)})
    table = pd.DataFrame(rows)
    base = table[table["case"] == "static"].set_index("algorithm")["time_to_0.8_s"]
    table["vs_static_0.8"] = table["time_to_0.8_s"] / table["algorithm"].map(base)
    return _ordered(table, ["algorithm", "case"])


def answers(table: pd.DataFrame, handovers: pd.DataFrame) -> list[str]:
    t = {(r["algorithm"], r["case"]): r for r in table.to_dict("records")}
    h = {(r["algorithm"], r["case"]): r for r in handovers.groupby(["algorithm", "case"]).agg(
        per_client_hour=("per_client_hour", "mean"), per_round=("per_round", "mean"),
        held=("transfers_held", "mean"), lost=("interruption_s", "mean"),
        share=("interruption_share", "mean"), moves=("moves", "mean")
    ).reset_index().to_dict("records")}
    lines = []
    for case in [c for c in CASES if c != "static"]:
        parts = []
        for algorithm in NAMES:
            if (algorithm, case) not in t:
                continue
            row, hr = t[(algorithm, case)], h[(algorithm, case)]
            parts.append(
                f"{NAMES[algorithm]}: {hr['per_client_hour']:.1f} handovers a selected "
                f"client-hour ({hr['per_round']:.2f} a round), {100 * hr['held']:.2f} % of its "
                f"transfers held back by one, {hr['lost']:.1f} s in interruptions "
                f"({100 * hr['share']:.3f} % of its transfers' time); time to 80 % "
                f"{row['time_to_0.8_s']:,.0f} s ({row['vs_static_0.8']:.3f}x static's; seeds "
                f"{row['time_to_0.8_s_per_seed']}), median round stretch "
                f"{row['median_stretch']:.3f} (seeds {row['median_stretch_per_seed']})")
        if parts:
            lines.append(f"- **{CASES[case]}**. " + "; ".join(parts) + ".")
    if all((a, c) in t for a in NAMES for c in ("pedestrians", "vehicles_120")):
        speed = {a: t[(a, "vehicles_120")]["time_to_0.8_s"] / t[(a, "pedestrians")]
                 ["time_to_0.8_s"] for a in NAMES}
        share = {a: (h[(a, "vehicles_120")]["share"], h[(a, "vehicles_120")]["held"])
                 for a in NAMES}
        lines.append(
            f"- **Which loses more.** From pedestrians to 30 % of the outdoor clients at "
            f"120 km/h, SCALA's time to 80 % moves {100 * (speed['scala'] - 1):+.1f} % and "
            f"FedAvg's {100 * (speed['fedavg'] - 1):+.1f} % (ratios of the seeds' means). At "
            f"120 km/h a handover holds back {100 * share['fedavg'][1]:.2f} % of FedAvg's "
            f"transfers (its one long upload a round spans one) against "
            f"{100 * share['scala'][1]:.2f} % of SCALA's many short ones, but the "
            f"interruptions take {100 * share['scala'][0]:.3f} % of SCALA's transfers' time "
            f"and {100 * share['fedavg'][0]:.3f} % of FedAvg's: what either loses to the "
            f"interruptions themselves is small; what moves the times is who the stragglers "
            f"are (against static clients, times to 80 % of "
            f"{t[('scala', 'vehicles_120')]['vs_static_0.8']:.2f}x and "
            f"{t[('fedavg', 'vehicles_120')]['vs_static_0.8']:.2f}x: a client in a deep fade "
            f"at its drop point stays the straggler of every round it is selected in, unless "
            f"it moves).")
    return lines


def report(table: pd.DataFrame, handovers: pd.DataFrame,
           deadline: list[str] | None = None) -> str:
    shown = table.assign(algorithm=table["algorithm"].map(NAMES))
    columns = list(shown.columns)
    rows = [[f"{v:,.3f}" if isinstance(v, float) else v for v in r.values()]
            for r in shown.to_dict("records")]
    per_run = [[NAMES[str(r["algorithm"])], r["case"], r["seed"], r["moves"], r["handovers"],
                f"{r['per_client_hour']:.2f}", f"{r['per_round']:.3f}",
                f"{100 * r['transfers_held']:.3f}", f"{r['interruption_s']:.2f}"]
               for r in handovers.to_dict("records")]
    return "\n".join([
        "# Mobility study: clients that move and are handed over while the model trains "
        "(issue 64)", "",
        "Built by `python -m analysis.mobility RESULTS --out docs/studies/mobility` from the "
        "study's run records (kept slim in `results/`; the handover numbers, which need the "
        "full records, in results/handovers.csv). The runs:", "", f"    {COMMAND}", "",
        "The headline's kept SCALA and FedAvg trainings (the paper's setting, the authors' "
        "AlexNet, 500 rounds, seeds 0-2), each re-timed on 3GPP's n78 macro deployment cut to "
        "7 sites (uma_n78: ISD 500 m, wraparound, 38.901 UMa at 3.5 GHz, 80 % of the clients "
        "indoors on their floors, 100 MHz TDD DDDSU, a beam toward each served client), round "
        "robin, NR's link abstraction, other users at the operator study's 30 % offered load "
        "in its mean, and four kinds of clients (scenarios/mobility.yaml). Handover: event A3 "
        "(no offset, 3 dB hysteresis, 256 ms to trigger), 50 ms without data; a client with "
        "nothing in flight for 10 s goes idle and re-selects at its next transfer.", "",
        "## Answers", "", *answers(table, handovers), "",
        "## Time to 80 % and the median round (times.csv)", "",
        markdown_table(columns, rows), "",
        "Simulated seconds, the mean of the seeds then each seed's; median_stretch: each "
        "seed's median over rounds of a round's time over the static case's same round, the "
        "median of the seeds'; vs_static_0.8: the time to 80 % over static's.", "",
        "## Handovers, run by run (handovers.csv)", "",
        markdown_table(["algorithm", "case", "seed", "moves", "handovers",
                        "per selected client-hour", "per round",
                        "transfers held back (%)", "in interruptions (s)"], per_run), "",
        *(deadline or [])])


def _deadline_section(comparison: pd.DataFrame, results: Path
                      ) -> tuple[list[str], dict[str, pd.DataFrame]] | None:
    """The report's deadline section and its tables (deadline.csv, dropped.csv), or None
    where the results hold no deadline case. dropped.csv: each deadline run's rows from its
    full records where it has them, else from the dropped.csv kept beside the comparison
    (written there again when some run had full records); ValueError where neither."""
    cases = set(comparison["case"]) & set(mobility_deadline.DEADLINE_CASES)
    if not cases:
        return None
    runs = comparison[comparison["case"].isin(list(cases))]["folder"]
    kept = results / "dropped.csv"
    dropped = mobility_deadline.dropped_table(
        results, comparison, pd.read_csv(kept) if kept.is_file() else None)
    if any(run_file(results / str(f), EVENTS_CSV).is_file() for f in runs):
        dropped.to_csv(kept, index=False)     # (what full records gave, kept beside them)
    deadline = mobility_deadline.deadline_table(comparison)
    return (mobility_deadline.section(deadline, dropped),
            {"deadline.csv": deadline, "dropped.csv": dropped})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the study's results folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--deadlines", action="store_true",
                        help="print the 70th percentiles the deadline cases are set at")
    args = parser.parse_args(argv)
    if args.deadlines:
        for algorithm in NAMES:
            runs = sorted((args.results / algorithm / "case=static").glob("seed*"))
            values = np.concatenate([finishes(read_record(run, EVENTS_CSV), algorithm)
                                     for run in runs])
            print(f"{algorithm}: 70th percentile {np.percentile(values, 70.0):.4g} s over "
                  f"{len(runs)} seeds' rounds")
        return 0
    path = args.results / "comparison.csv"
    comparison = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    found = set(comparison.get("case", []))
    if "static" not in found or len(found) < 2:
        print(f"error: {args.results}: not the mobility study's results: it needs the static "
              f"case and at least one moving one ({', '.join(CASES)}); found "
              f"{', '.join(sorted(found)) or 'none'}", file=sys.stderr)
        return 2
    kept = args.results / "handovers.csv"
    try:
        handovers = handover_table(comparison, args.results, pd.read_csv(kept) if kept.is_file()
                                   else pd.DataFrame(columns=["algorithm", "case", "seed"]))
        deadline = _deadline_section(comparison, args.results)
    except ValueError as error:
        print(f"error: {args.results}: {error}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if any(run_file(args.results / str(f), EVENTS_CSV).is_file() for f in comparison["folder"]):
        handovers.to_csv(kept, index=False)   # (kept for when the runs are slimmed)
    if deadline is not None:
        for name, frame in deadline[1].items():
            frame.to_csv(args.out / name, index=False)
    table = times(comparison, args.results)
    table.to_csv(args.out / "times.csv", index=False)
    (args.out / "report.md").write_text(report(table, handovers,
                                               deadline[0] if deadline else None))
    print(f"wrote {args.out / 'times.csv'} and {args.out / 'report.md'} ({kept})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
