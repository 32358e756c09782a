"""The mobility study's deadline question (issue 64): a deadline that drops about the slowest
30 % of a round (scenarios/mobility.yaml's deadline cases, trained, not re-timed), static
clients against 30 % of the outdoor clients in vehicles at 120 km/h. Written by
analysis.mobility from the study's results folder:

- deadline.csv: per algorithm and case (each deadline case and the same mobility without the
  deadline, the headline's trainings re-timed, over the seeds the deadline case has): the
  seeds, end-of-training accuracy (the mean of the evaluations in the last 20 % of the
  rounds) and its standard deviation over the seeds, the final accuracy, the time to 80 %
  (the mean over the seeds that reach it, and how many do), the mean round, the share of the
  selections dropped (in all, at the round deadline, at SCALA's step deadline), the
  contributors' label bias (total variation from the selected clients' labels), and the
  end-of-training cost against the same mobility without the deadline (percentage points,
  the mean and each value over the seeds that both cases have: a seed against its own
  re-timed training);
- dropped.csv: per algorithm, deadline case and seed (the report pools the seeds: `pooled`),
  the run's selections grouped
  by kind of client (indoor on foot; outdoor on foot; outdoor in a vehicle: its speed over
  its recorded moves above VEHICLE_MPS), by compute (the halves of the FLOP/s range), by
  coupling loss at the drop point (path loss, shadowing and building entry less antenna
  gain, in quarters over the run's selections), and by whether the client was handed over
  during the round: each group's selections, drops, drop rate and share of the drops. Then
  how the drops spread over the clients (group `concentration`): the share of the drops
  that the tenth of the clients dropped most carry, and the share of clients selected at
  least SELECTED_AT_LEAST times that were never dropped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from scala_netsim.core.files import (
    CLIENTS_CSV,
    DEMANDS_CSV,
    EVENTS_CSV,
    HANDOVERS_CSV,
    MOBILITY_CSV,
    run_file,
)
from scala_netsim.core.results import read_record

NAMES = {"scala": "SCALA", "fedavg": "FedAvg"}
#: each deadline case and the case without the deadline it is weighed against
DEADLINE_CASES = {"static_deadline": "static", "vehicles_120_deadline": "vehicles_120"}
#: metres a second above which a client's recorded moves are a vehicle's (pedestrians walk
#: 0.83 m/s, vehicles drive 8.3-33 m/s)
VEHICLE_MPS = 5.0
#: the clients the never-dropped share counts: selected this often at least
SELECTED_AT_LEAST = 5
#: the clients' FLOP/s range's middle (compute.client_flops_per_s: 1-10 GFLOP/s)
MIDDLE_FLOPS = 5.5e9


def deadline_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """deadline.csv (the module's docstring), from the study's comparison table."""
    late = comparison.set_index(["algorithm", "case", "seed"])["late_acc"]
    runs = comparison.assign(round_s=comparison["total_sim_time_s"] / comparison["rounds"])
    rows = []
    for algorithm in NAMES:
        for case, without in DEADLINE_CASES.items():
            trained = runs[(runs["algorithm"] == algorithm) & (runs["case"] == case)]["seed"]
            for shown in (without, case):
                r = runs[(runs["algorithm"] == algorithm) & (runs["case"] == shown)]
                if shown == without and len(trained):   # the deadline case's seeds
                    r = r[r["seed"].isin(trained)]
                r = r.sort_values("seed")
                if r.empty:
                    continue
                cost = [(late.loc[(algorithm, shown, s)] - late.loc[(algorithm, without, s)])
                        * 100 for s in r["seed"] if (algorithm, without, s) in late.index]
                rows.append({
                    "algorithm": algorithm, "case": shown, "seeds": len(r),
                    "late_acc": r["late_acc"].mean(), "late_acc_std": r["late_acc"].std(),
                    "final_acc": r["final_acc"].mean(),
                    "time_to_0.8_s": r["time_to_0.8_s"].mean(),
                    "seeds_reaching_0.8": int(r["time_to_0.8_s"].notna().sum()),
                    "round_s": r["round_s"].mean(),
                    **{name: r[name].fillna(0.0).mean() if name in r else 0.0 for name in (
                        "dropped_fraction", "dropped_fraction_deadline",
                        "dropped_fraction_step_deadline")},
                    "label_bias_tv": r["label_bias_tv"].mean() if "label_bias_tv" in r
                    else float("nan"),
                    "late_cost_pp": float(np.mean(cost)) if cost else float("nan"),
                    "late_cost_pp_per_seed": " ".join(f"{v:+.2f}" for v in cost)})
    return pd.DataFrame(rows).drop_duplicates(["algorithm", "case"]).reset_index(drop=True)


def kinds(run: Path, clients: pd.DataFrame) -> pd.Series:
    """Each client's kind (the module's docstring), from clients.csv and mobility.csv."""
    kind = clients["indoor"].map({1: "indoor on foot", 0: "outdoor on foot"})
    path = run_file(run, MOBILITY_CSV)
    if path.is_file():
        moves = read_record(run, MOBILITY_CSV, usecols=["client_id", "t_s", "walked_m"])
        moves = moves.sort_values(["client_id", "t_s"])
        # a row at a handover or a re-pointed beam repeats the last move's distance: only the
        # rows where the client walked on (its moves) are timed
        walked = moves.groupby("client_id")["walked_m"].diff()
        moves = moves[walked.isna() | (walked > 0)]
        step = moves.groupby("client_id")[["t_s", "walked_m"]].diff()
        speed = (step["walked_m"] / step["t_s"]).where(step["t_s"] > 0)
        fast = speed.groupby(moves["client_id"]).max() > VEHICLE_MPS
        driving = clients["client_id"].map(fast).fillna(False).astype(bool)
        kind = kind.mask(driving & (clients["indoor"] == 0), "outdoor in a vehicle")
    return kind


def selections(run: Path) -> pd.DataFrame:
    """A deadline run's selections (demands.csv: round, client), each with `dropped` (a
    client_dropped event in that round), `handed_over` (a handover of the client between the
    round's first and last event), its kind and its row of clients.csv."""
    events = read_record(run, EVENTS_CSV, usecols=["round", "client_id", "kind", "t_start_s",
                                                   "t_end_s"])
    dropped = events.loc[events["kind"] == "client_dropped", ["round", "client_id"]]
    chosen = read_record(run, DEMANDS_CSV, usecols=["round", "client_id"]).drop_duplicates()
    chosen = chosen.merge(dropped.drop_duplicates().assign(dropped=1), how="left",
                          on=["round", "client_id"]).fillna({"dropped": 0})
    span = events.groupby("round").agg(start=("t_start_s", "min"), end=("t_end_s", "max"))
    handed = np.zeros(len(chosen), dtype=bool)
    if run_file(run, HANDOVERS_CSV).is_file():
        handovers = read_record(run, HANDOVERS_CSV, usecols=["client_id", "t_s"])
        at = {int(g["client_id"].iloc[0]): g["t_s"].to_numpy(float)
              for _, g in handovers.groupby("client_id")}
        start = span["start"].reindex(chosen["round"]).to_numpy(float)
        end = span["end"].reindex(chosen["round"]).to_numpy(float)
        for i, client in enumerate(chosen["client_id"].to_numpy().tolist()):
            t = at.get(int(client))
            handed[i] = t is not None and bool(((t >= start[i]) & (t < end[i])).any())
    clients = read_record(run, CLIENTS_CSV)
    clients = clients.assign(kind=kinds(run, clients).to_numpy())
    return chosen.assign(handed_over=handed).merge(clients, on="client_id")


def _groups(chosen: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    compute = (chosen["flops_per_s"] > MIDDLE_FLOPS).map({
        True: f"{MIDDLE_FLOPS / 1e9:g}-10 GFLOP/s", False: f"1-{MIDDLE_FLOPS / 1e9:g} GFLOP/s"})
    coupling = (chosen["pathloss_db"] + chosen["shadowing_db"] + chosen["o2i_db"]
                - chosen["antenna_gain_db"])
    quarter = pd.qcut(coupling, 4, labels=[f"coupling loss quarter {q} of 4"
                                           for q in range(1, 5)]).astype(str)
    handed = chosen["handed_over"].map({True: "handed over in the round",
                                        False: "not handed over in the round"})
    return [("kind", chosen["kind"]), ("compute", compute), ("coupling", quarter),
            ("handover", handed)]


def seed_rows(run: Path) -> list[dict]:
    """dropped.csv's rows of one deadline run (its seed alone): each group's selections,
    drops, drop rate and share of the drops, then how its drops spread over its clients."""
    chosen = selections(run)
    drops = chosen["dropped"].sum()
    rows = []
    for by, groups in _groups(chosen):
        for group, picked in chosen.groupby(groups.to_numpy(), sort=True):
            rows.append({"by": by, "group": group, "selected": len(picked),
                         "dropped": int(picked["dropped"].sum()),
                         "value": picked["dropped"].mean(),
                         "share_of_drops": picked["dropped"].sum() / drops})
    per = chosen.groupby("client_id")["dropped"].agg(["sum", "size"])
    top = per["sum"].sort_values(ascending=False)
    tenth = max(1, round(len(top) / 10))
    often = per[per["size"] >= SELECTED_AT_LEAST]
    for spread, value in (
            ("drops carried by the tenth of clients dropped most",
             top.iloc[:tenth].sum() / drops if drops else 0.0),
            (f"clients selected {SELECTED_AT_LEAST}+ times never dropped",
             float((often["sum"] == 0).mean()) if len(often) else float("nan"))):
        rows.append({"by": "concentration", "group": spread, "selected": len(chosen),
                     "dropped": int(drops), "value": value, "share_of_drops": float("nan")})
    return rows


def dropped_table(results: Path, comparison: pd.DataFrame,
                  kept: pd.DataFrame | None = None) -> pd.DataFrame:
    """dropped.csv (the module's docstring), a row per group and seed: from the full records
    of each deadline run the comparison lists (folders under `results`), or, for a run kept
    slim, its seed's rows of `kept` (the dropped.csv written before); ValueError where
    neither has it."""
    rows = []
    for algorithm in NAMES:
        for case in DEADLINE_CASES:
            listed = comparison[(comparison["algorithm"] == algorithm)
                                & (comparison["case"] == case)].sort_values("seed")
            for seed, folder in zip(listed["seed"], listed["folder"], strict=True):
                head = {"algorithm": algorithm, "case": case, "seed": int(seed)}
                run = results / str(folder)
                if run_file(run, EVENTS_CSV).is_file():
                    rows += [{**head, **row} for row in seed_rows(run)]
                    continue
                mine = (pd.DataFrame() if kept is None else kept[
                    (kept["algorithm"] == algorithm) & (kept["case"] == case)
                    & (kept["seed"] == int(seed))])
                if mine.empty:
                    raise ValueError(f"{run}: kept slim (no events.csv) and not in the kept "
                                     f"dropped.csv")
                rows += mine.to_dict("records")
    return pd.DataFrame(rows)


def pooled(dropped: pd.DataFrame) -> pd.DataFrame:
    """dropped.csv's seeds pooled, per algorithm, case and group: selections and drops summed
    (the drop rate and share of the drops of the sums; a coupling quarter is each seed's own
    quarter of its selections), a concentration the mean of the seeds' values."""
    rows = []
    for (algorithm, case), runs in dropped.groupby(["algorithm", "case"], sort=False):
        seeds = runs["seed"].nunique()
        drops = runs[runs["by"] == "concentration"].drop_duplicates("seed")["dropped"].sum()
        for (by, group), picked in runs.groupby(["by", "group"], sort=False):
            concentration = by == "concentration"
            rows.append({"algorithm": algorithm, "case": case, "seeds": seeds, "by": by,
                         "group": group, "selected": int(picked["selected"].sum()),
                         "dropped": int(picked["dropped"].sum()),
                         "value": (picked["value"].mean() if concentration
                                   else picked["dropped"].sum() / picked["selected"].sum()),
                         "share_of_drops": (float("nan") if concentration
                                            else picked["dropped"].sum() / drops)})
    return pd.DataFrame(rows)


def _rate(dropped: pd.DataFrame, algorithm: str, case: str, group: str) -> str:
    row = dropped[(dropped["algorithm"] == algorithm) & (dropped["case"] == case)
                  & (dropped["group"] == group)]
    return f"{100 * row['value'].iloc[0]:.1f} %" if len(row) else "none selected"


def answers(deadline: pd.DataFrame, dropped: pd.DataFrame) -> list[str]:
    """The deadline question's answers, a line per algorithm and deadline case, every number
    from the two tables."""
    d = deadline.set_index(["algorithm", "case"])
    lines = []
    for algorithm in NAMES:
        for case, without in DEADLINE_CASES.items():
            if (algorithm, case) not in d.index or (algorithm, without) not in d.index:
                continue
            on, off = d.loc[(algorithm, case)], d.loc[(algorithm, without)]

            def r(group: str, a: str = algorithm, c: str = case) -> str:
                return _rate(dropped, a, c, group)
            lines.append(
                f"- **{NAMES[algorithm]}, {case}** ({on['seeds']} seed(s)): drops "
                f"{100 * on['dropped_fraction']:.1f} % of its selections "
                f"({100 * on['dropped_fraction_deadline']:.1f} % at the round deadline, "
                f"{100 * on['dropped_fraction_step_deadline']:.1f} % at the step deadline); "
                f"end-of-training accuracy {100 * on['late_acc']:.2f} % against "
                f"{100 * off['late_acc']:.2f} % without the deadline "
                f"({on['late_cost_pp']:+.2f} pp; per seed {on['late_cost_pp_per_seed']}); "
                f"a round {on['round_s']:.2f} s against {off['round_s']:.2f} s; 80 % after "
                f"{on['time_to_0.8_s']:,.0f} s against {off['time_to_0.8_s']:,.0f} s; the "
                f"contributors' labels {on['label_bias_tv']:.3f} (total variation) from the "
                f"selected clients'. Who is dropped: indoor on foot {r('indoor on foot')} of "
                f"their selections, outdoor on foot {r('outdoor on foot')}, in vehicles "
                f"{r('outdoor in a vehicle')}; the slower half of the FLOP/s range "
                f"{r('1-5.5 GFLOP/s')}, the faster {r('5.5-10 GFLOP/s')}; coupling loss at "
                f"the drop point, quarters 1 to 4: "
                + ", ".join(r(f"coupling loss quarter {q} of 4") for q in range(1, 5))
                + f"; handed over in the round {r('handed over in the round')}, not "
                f"{r('not handed over in the round')}. The tenth of the clients dropped most "
                f"carry {r('drops carried by the tenth of clients dropped most')} of the "
                f"drops; {r(f'clients selected {SELECTED_AT_LEAST}+ times never dropped')} of "
                f"the clients selected {SELECTED_AT_LEAST} times or more were never dropped.")
    return lines


def section(deadline: pd.DataFrame, dropped: pd.DataFrame) -> list[str]:
    """The report's section on the deadline cases (markdown lines)."""
    from analysis.tables import markdown_table

    dropped = pooled(dropped)
    shown = deadline.assign(algorithm=deadline["algorithm"].map(NAMES))
    rows = [[f"{v:,.4f}" if isinstance(v, float) else v for v in r.values()]
            for r in shown.to_dict("records")]
    groups = [[NAMES[str(r["algorithm"])], r["case"], r["by"], r["group"], r["selected"],
               r["dropped"], f"{r['value']:.4f}", f"{r['share_of_drops']:.4f}"]
              for r in dropped.to_dict("records")]
    return [
        "## A deadline that drops the slowest 30 % (deadline.csv, dropped.csv)", "",
        "Trained, not re-timed: the clock decides who is learned. The round deadline (26.8 s "
        "from the round's start) and SCALA's step deadline (0.45 s a local iteration) are the "
        "70th percentiles, over the static case's seeds and rounds, of FedAvg's model "
        "upload's end and of SCALA's slowest barrier wait for a client's activations "
        "(`python -m analysis.mobility RESULTS --deadlines`). Each is weighed against the "
        "same mobility without the deadline (the headline's training of the same seed, "
        "re-timed).", "",
        *answers(deadline, dropped), "",
        markdown_table(list(shown.columns), rows), "",
        "late_acc: end-of-training accuracy (the mean of the evaluations in the last 20 % of "
        "the rounds), the mean over the seeds, late_acc_std its standard deviation; "
        "late_cost_pp: against the same mobility without the deadline, seed by seed.", "",
        markdown_table(["algorithm", "case", "by", "group", "selected", "dropped",
                        "drop rate (concentration: the share)", "share of drops"], groups),
        "",
        "The deadline cases' selections, the seeds pooled (dropped.csv: seed by seed; a "
        "concentration here the mean of the seeds'). A vehicle: a client whose recorded "
        f"moves ran faster than {VEHICLE_MPS:g} m/s. Coupling loss at the drop point: path "
        "loss, shadowing and building entry less antenna gain toward its first serving cell "
        "(a moving client's changes as it moves), in quarters over each seed's selections.",
        ""]
