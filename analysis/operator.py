"""The operator study's answers (issue 63), written from its result folder, so that every
number in its report comes from the table beside it:

    python -m analysis.operator docs/studies/operator/results --out docs/studies/operator

- times.csv: per algorithm and case of scenarios/operator.yaml found, the time to 70 and 80 %
  (mean over seeds, and each seed), the median round's time (each seed's median, then their
  mean) and its stretch (over the DDDSU frame's), the ratio of the time to 80 % to DDDSU's,
  and FedAvg's time over SCALA's;
- report.md: what was run, the answers (the frames, the loads, and where the link cases were
  run what the beam per client and NR's link are worth), every number from that table and
  from the kept carried.csv (the loads FTP model 3's files carry:
  scala_netsim.tools.carried_load), which the load cases give the fluid model.

The frames' cases (FRAMES) must all be there, for both algorithms; the loads' (LOADS) are
reported where they are, and said not to be run where they are not. Another study's folder
is refused, exit 2, naming the cases it needs and those found, before anything is written.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.tables import seed_times
from scala_netsim.core.files import run_file

FRAMES = {"dddsu": "DDDSU (10:2:2) on 100 MHz at 3.5 GHz",
          "dsuuu": "DSUUU (10:2:2) on 100 MHz at 3.5 GHz",
          "fdd_2x20": "FDD 2 x 20 MHz at 2 GHz"}
#: each case's spectrum, the uplink's and the downlink's on average (MHz): the TDD carrier's
#: 100 MHz times its direction's share of a 5-slot frame's 70 symbols (DDDSU: uplink 16,
#: downlink 52; DSUUU: 44 and 24), the paired bands' 20 MHz each way all the time
SPECTRUM = {"dddsu": (100 * 16 / 70, 100 * 52 / 70), "dsuuu": (100 * 44 / 70, 100 * 24 / 70),
            "fdd_2x20": (20.0, 20.0)}
LOADS = {"load_30": 0.3, "load_50": 0.5, "load_70": 0.7}
#: DDDSU on other links (what NR's link abstraction costs, what the beam per client is worth)
LINKS = {"shannon": "DDDSU, Shannon's rate in place of NR's link",
         "column_shannon": "DDDSU, Shannon's rate, the column alone (no beam per client)"}
NAMES = {"scala": "SCALA", "fedavg": "FedAvg"}
#: the commits the kept runs were re-timed at
RUN_AT = ("commits ff4b561 (the frames), 307d0d4 (the loads: the same code, the load cases "
          "given their carried loads) and a00596a (the links: the same code)")
COMMAND = ("python -m scala_netsim scenarios/operator.yaml --retime-from "
           "docs/studies/cellular_10pct")


def median_round_s(folder: Path) -> float:
    """A run's median round time (rounds.csv)."""
    return float(pd.read_csv(run_file(folder, "rounds.csv"))["round_time_s"].median())


def times(comparison: pd.DataFrame, root: Path) -> pd.DataFrame:
    """Per algorithm and case: the time to 70 and 80 % (mean, each seed), the median round
    (each seed's, their mean) and its stretch over DDDSU's, the time to 80 % over DDDSU's,
    and FedAvg's over SCALA's (ratios of the seeds' means)."""
    rows = []
    for (algorithm, case), group in comparison.groupby(["algorithm", "case"]):
        group = group.sort_values("seed")
        row = {"algorithm": algorithm, "case": case, "seeds": len(group), **seed_times(group)}
        medians = [median_round_s(root / f) for f in group["folder"]]
        row["median_round_s"] = float(np.mean(medians))
        row["median_round_s_per_seed"] = " ".join(f"{m:.2f}" for m in medians)
        rows.append(row)
    table = pd.DataFrame(rows)
    base = table[table["case"] == "dddsu"].set_index("algorithm")
    table["stretch"] = table["median_round_s"] / table["algorithm"].map(base["median_round_s"])
    table["vs_dddsu_0.8"] = table["time_to_0.8_s"] / table["algorithm"].map(
        base["time_to_0.8_s"])
    scala = table[table["algorithm"] == "scala"].set_index("case")["time_to_0.8_s"]
    table["fedavg_over_scala_0.8"] = np.where(table["algorithm"] == "fedavg",
                                              table["time_to_0.8_s"] / table["case"].map(scala),
                                              np.nan)
    order = {c: i for i, c in enumerate([*FRAMES, *LINKS, *LOADS])}
    return table.sort_values(["algorithm", "case"], key=lambda s: s.map(order).fillna(-1)
                             if s.name == "case" else s).reset_index(drop=True)


def frames_answer(table: pd.DataFrame) -> str:
    """What the frame and the spectrum make of the time to 80 %."""
    t = table.set_index(["algorithm", "case"])
    parts = []
    for algorithm in ("scala", "fedavg"):
        r = {c: t.loc[(algorithm, c)] for c in FRAMES}
        parts.append(
            f"{NAMES[algorithm]} reaches 80 % in {r['dddsu']['time_to_0.8_s']:,.0f} s under "
            f"DDDSU (seeds {r['dddsu']['time_to_0.8_s_per_seed']}), "
            f"{r['dsuuu']['time_to_0.8_s']:,.0f} s under DSUUU "
            f"({r['dsuuu']['vs_dddsu_0.8']:.2f}x) and {r['fdd_2x20']['time_to_0.8_s']:,.0f} s "
            f"on FDD 2 x 20 MHz ({r['fdd_2x20']['vs_dddsu_0.8']:.2f}x); its median round "
            f"{r['dddsu']['median_round_s']:.1f} s, {r['dsuuu']['median_round_s']:.1f} s and "
            f"{r['fdd_2x20']['median_round_s']:.1f} s")
    fed = t.loc[("fedavg", "dddsu"), "fedavg_over_scala_0.8"]
    up = {c: SPECTRUM[c][0] for c in FRAMES}
    return (f"1. {parts[0]}. {parts[1]}. FedAvg needs {fed:.1f}x SCALA's time to 80 % under "
            f"DDDSU ({t.loc[('fedavg', 'dsuuu'), 'fedavg_over_scala_0.8']:.1f}x under DSUUU, "
            f"{t.loc[('fedavg', 'fdd_2x20'), 'fedavg_over_scala_0.8']:.1f}x on FDD). The "
            f"uplink the learning waits for has {up['dddsu']:.1f} MHz on average under DDDSU "
            f"(16 of the frame's 70 symbols of 100 MHz), {up['dsuuu']:.1f} MHz under DSUUU "
            f"and 20 MHz on the paired bands. What else differs for an upload on the paired "
            f"bands: all the time rather than in the frame's uplink symbols, 2 GHz rather than "
            f"3.5 GHz (UMa's path loss grows as 20 log10 of the carrier: 4.9 dB less), and a "
            f"client's 0.2 W against the noise of 20 MHz rather than 100 MHz (a power-limited "
            f"upload gains little from a wider band). The same drop, clients, powers and "
            f"antennas otherwise; these runs do not split the difference among the three.")


def links_answer(table: pd.DataFrame) -> str:
    """What the beam per client and NR's link abstraction make of the time to 80 % under
    DDDSU, where the link cases were run ('' where not)."""
    t = table.set_index(["algorithm", "case"])
    if any((a, c) not in t.index for a in NAMES for c in LINKS):
        return ""
    parts = []
    for algorithm in ("scala", "fedavg"):
        column, beam, nr = (float(t.loc[(algorithm, c), "time_to_0.8_s"])
                            for c in ("column_shannon", "shannon", "dddsu"))
        parts.append(f"{NAMES[algorithm]} {column:,.0f} s with the column alone, {beam:,.0f} s "
                     f"with the beam ({beam / column:.2f}x), {nr:,.0f} s with the beam on NR's "
                     f"link ({nr / beam:.2f}x Shannon's)")
    return (f"3. Under DDDSU, what the beam toward each client and NR's link make of the time "
            f"to 80 % (Shannon's rate on each block where not NR's): {parts[0]}; {parts[1]}. "
            f"The beam puts 8x (9.0 dB) on a client's own link and about 1x (-6.3 to +1.2 dB "
            f"in front of the other cells' panels) on its links to the others (their beams, "
            f"aimed at their own clients, averaged over their sectors): an upload whose power "
            f"is capped and whose SINR is low gains about as "
            f"much in rate, which is what the times show. NR's link then pays its MCS table's "
            f"steps, its BLER target and HARQ's waits against Shannon's bound. (The column "
            f"alone is the study's network before the beam came in: its runs here, re-timed at "
            f"commit a00596a, are to every digest the DDDSU runs the study kept at 5c469be.)")


def files_check(rounds: pd.DataFrame | None, carried: pd.DataFrame) -> str:
    """What every file does to SCALA's first rounds against the fluid model at the loads they
    carry (`rounds`: rounds_files.csv, benchmarks/operator_rounds.py; `carried`: carried.csv,
    whose CPU time a simulated second says what a file costs); '' without it."""
    if rounds is None:
        return ""
    cost = (carried["cpu_s"] / carried["seconds"]).agg(["min", "max"])
    rounds = rounds.drop_duplicates(["offered_load", "model", "round"])
    total = rounds.groupby(["offered_load", "model"])["round_time_s"].sum()
    base = float(total[(0.0, "none")])
    count, seed = int(rounds["round"].max()), int(rounds["seed"].iloc[0])
    loads = sorted(x for x in rounds["offered_load"].unique() if x > 0)
    files = [float(total[(x, "files")]) / base for x in loads]
    over = [(float(total[(x, "fluid")]) / base - 1) / (f - 1) if f != 1 else math.inf
            for x, f in zip(loads, files, strict=True)]
    bound = ("an upper bound on the slowdown, not an estimate of it" if min(over) > 1
             else "not shown to bound it either way")
    text = "; ".join(f"offered {x:g}: {f:.3f}x with every file, "
                     f"{total[(x, 'fluid')] / base:.3f}x under the fluid model"
                     for x, f in zip(loads, files, strict=True))
    return (f" With every file, on the study's own network (benchmarks/operator_rounds.py, "
            f"rounds_files.csv: the files cost {cost['min']:.2f} to {cost['max']:.2f} CPU s a "
            f"simulated second here, carried.csv, so only SCALA's first {count} rounds of seed "
            f"{seed}, {base:.1f} s with no other users): {text}. With every file the load "
            f"lengthened those rounds by "
            f"{100 * (min(files) - 1):.1f} to {100 * (max(files) - 1):.1f} %, and the fluid "
            f"model overstates it {min(over):.1f} to {max(over):.1f} times over (the time it "
            f"adds over the time the files add), most likely because the learning's uploads "
            f"here are power-limited (0.2 W over up to 273 blocks): one that shares its blocks "
            f"with a file keeps most of its rate on the rest, which the fluid model's 1 - rho "
            f"of the time does not see. On this evidence (a few rounds, one seed) SCALA's time to "
            f"80 % {'does not double at any load run' if max(files) < 2 else 'doubles'}, with "
            f"every file; the fluid model's times below (the load cases' re-timings) are "
            f"{bound}.")


def loads_answer(table: pd.DataFrame, carried: pd.DataFrame | None = None,
                 rounds: pd.DataFrame | None = None) -> str:
    """At what offered load SCALA's time to 80 % doubles, where the load cases were run
    (under the fluid model at the loads the files carry: `carried`, carried.csv), and what
    every file did to the first rounds (`rounds`: files_check)."""
    t = table.set_index(["algorithm", "case"])
    run = [c for c in LOADS if ("scala", c) in t.index]
    if run and carried is not None:
        base = float(t.loc[("scala", "dddsu"), "time_to_0.8_s"])
        fed = float(t.loc[("fedavg", "dddsu"), "time_to_0.8_s"])
        per = carried.set_index(["offered_load", "direction"])["carried_load"]
        points = [(LOADS[c], float(t.loc[("scala", c), "time_to_0.8_s"]) / base,
                   float(t.loc[("fedavg", c), "time_to_0.8_s"]) / fed,
                   per[(LOADS[c], "uplink")], per[(LOADS[c], "downlink")]) for c in run]
        text = "; ".join(f"offered {x:g} (carried {u:.3f} up, {d:.3f} down): SCALA {y:.2f}x, "
                         f"FedAvg {z:.2f}x" for x, y, z, u, d in points)
        fluid = (f"Under the fluid model at the loads FTP model 3's files carry in this network "
                 f"(carried.csv: every file simulated, the learning silent, "
                 f"scala_netsim.tools.carried_load), against no load, the time to 80 %: "
                 f"{text}. {_doubling(points)}")
        if rounds is not None:
            return f"2.{files_check(rounds, carried)} {fluid}"
        return (f"2. {fluid} On the 20 MHz network it was checked on, the fluid model cost the "
                f"rounds about twice what the files did (docs/model/network.md, 'Other users' "
                f"traffic'), so read the load at which a time doubles as a lower bound.")
    if not run:
        return ("2. Not answered yet: the load cases (DDDSU at 30, 50 and 70 % offered load of "
                "FTP model 3, under the fluid model at the loads the files carry) were not "
                "run.")
    return ("2. Not answered: the load cases were run without the loads their files carry "
            "(carried.csv).")


def _doubling(points: list[tuple]) -> str:
    """Where SCALA's time to 80 % first reaches twice no load's, between the loads run."""
    at = [(0.0, 1.0)] + [(x, y) for x, y, *_ in points]
    for (x0, y0), (x1, y1) in zip(at[:-1], at[1:], strict=True):
        if y1 >= 2.0:
            load = x0 + (2.0 - y0) * (x1 - x0) / (y1 - y0)
            return (f"SCALA's time to 80 % doubles at about {load:.2f} offered load (linear "
                    f"between the loads run).")
    return f"SCALA's time to 80 % does not double up to {at[-1][0]:g} offered load."


def _markdown(table: pd.DataFrame) -> str:
    shown = table.copy()
    shown["algorithm"] = shown["algorithm"].map(NAMES)
    shown["case"] = shown["case"].map({**FRAMES, **LINKS, **{
        c: f"DDDSU, FTP model 3 offered {v:g} (fluid, carried loads)" for c, v in LOADS.items()}})
    lines = ["| " + " | ".join(shown.columns) + " |",
             "|" + "---|" * len(shown.columns)]
    for row in shown.itertuples(index=False):
        cells = [f"{v:,.2f}" if isinstance(v, float) and not np.isnan(v) else
                 ("—" if isinstance(v, float) else str(v)) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(table: pd.DataFrame, carried: pd.DataFrame | None = None,
           rounds: pd.DataFrame | None = None) -> str:
    """report.md: what was run, the answers, the table."""
    return "\n".join([
        "# Operator study: an n78 macro network, its frame and its load (issue 63)", "",
        "Built by `python -m analysis.operator docs/studies/operator/results --out "
        "docs/studies/operator` from the study's run records (kept slim in `results/`). The "
        "runs:", "", f"    {COMMAND}", "",
        "The headline's kept SCALA and FedAvg trainings (the paper's setting, the authors' "
        "AlexNet, 500 rounds, seeds 0-2), each re-timed on 3GPP's n78 macro deployment "
        "(`network.deployment: uma_n78`, docs/model/network.md: 19 sites x 3 sectors, ISD "
        "500 m, wraparound, 38.901 UMa, 80 % of the clients indoors on their floors, 56 dBm "
        "a cell, a panel of 10 rows tilted 12 degrees down and 8 columns pointing one beam at "
        "each client a cell serves, noise figures 5 and 9 dB, uplink power control P0 -80 dBm "
        "alpha 0.8), its blocks handed out by round robin (other users' traffic needs a "
        "work-conserving scheduler), NR's link abstraction (MCS, BLER and HARQ, the 256QAM "
        "table: with the beam every client decodes, seed 0's client 45 the weakest at "
        "-1.5 dB a block at its best on the uplink; the column alone left it at -10.6 dB, "
        "below the lowest MCS's -4.95). The cases: DDDSU, the frame operators run on n78; "
        "DSUUU, an uplink-heavier one; FDD 2 x 20 MHz at 2 GHz (15 kHz, 106 blocks, 49 dBm "
        "a cell); DDDSU with Shannon's rate on each block in place of NR's link, and that "
        "with the column alone (no beam per client); and DDDSU with 10 other users a cell "
        "sending FTP model 3 files of 0.5 MB "
        "both ways at offered load 0.3, 0.5 and 0.7, under the fluid model at the loads those "
        "files carry in this network (carried.csv: one simulated minute of every file, the "
        "learning silent, seed 0's drop). The spectrum each has: the TDD carrier's 100 MHz is "
        "shared in time, 22.9 MHz of uplink and 74.3 MHz of downlink on average under DDDSU's "
        "frame, 62.9 and 34.3 MHz under DSUUU; the paired bands have 20 MHz each way all the "
        f"time. {int(table['seeds'].sum())} re-timings on the project's 2-core CPU, from "
        f"worktrees at {RUN_AT}, "
        "numpy's AVX-512 paths off as `python -m scala_netsim.tools.regenerate` runs them.", "",
        "## Answers", "", frames_answer(table), "", loads_answer(table, carried, rounds), "",
        *([links, ""] if (links := links_answer(table)) else []),
        "## Time to 70 and 80 % and the median round (times.csv)", "", _markdown(table), "",
        "Simulated seconds, the mean of the seeds then each seed's; median_round_s: each "
        "seed's median round, their mean; stretch: that over DDDSU's; vs_dddsu_0.8: the time "
        "to 80 % over DDDSU's; fedavg_over_scala_0.8: FedAvg's over SCALA's in the case.", ""])


def not_the_study(comparison: pd.DataFrame) -> str | None:
    """Why a comparison.csv is not this study's (None: it is)."""
    found = sorted({(a, c) for a, c in zip(comparison.get("algorithm", []),
                                           comparison.get("case", []), strict=True)})
    needed = [(a, c) for a in NAMES for c in FRAMES]
    missing = [f"{a} {c}" for a, c in needed if (a, c) not in found]
    if missing:
        return (f"not the operator study's results: it needs scala and fedavg in cases "
                f"{', '.join(FRAMES)}; missing {', '.join(missing)} (found "
                f"{', '.join(f'{a} {c}' for a, c in found) or 'none'})")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the study's results folder")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    path = args.results / "comparison.csv"
    comparison = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    problem = not_the_study(comparison)
    if problem is not None:
        print(f"error: {args.results}: {problem}", file=sys.stderr)
        return 2
    table = times(comparison, args.results)
    kept = args.results / "carried.csv"
    carried = pd.read_csv(kept) if kept.is_file() else None
    checked = args.results / "rounds_files.csv"
    rounds = pd.read_csv(checked) if checked.is_file() else None
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "times.csv", index=False)
    (args.out / "report.md").write_text(report(table, carried, rounds))
    print(f"wrote {args.out / 'times.csv'} and {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
