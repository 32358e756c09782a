"""The composed network study's second question (issue 50): a deadline that drops the
slowest 30 % of a round in the 7-site network, what it costs SCALA and FedAvg and whom it
drops: deadline.csv and dropped.csv (analysis.composed's module docstring), from the
comparison table and the deadline runs' records, and the percentiles the deadline was set at.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from scala_netsim.core.files import CLIENTS_CSV, DEMANDS_CSV, EVENTS_CSV
from scala_netsim.core.results import read_record

#: the algorithms of questions 1 and 2, as the report names them
NAMES = {"scala": "SCALA", "fedavg": "FedAvg"}
DEADLINE_CASES = {"uma_7sites": "no deadline", "uma_7sites_deadline": "deadline"}


def deadline_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """deadline.csv (analysis.composed's module docstring): means (and stds) over the
    seeds."""
    runs = comparison[comparison["cell"].isin(list(DEADLINE_CASES))]
    runs = runs.assign(round_s=runs["total_sim_time_s"] / runs["rounds"])
    late = runs.set_index(["algorithm", "cell", "seed"])["late_acc"]
    rows = []
    for algorithm in NAMES:
        for case in DEADLINE_CASES:
            r = runs[(runs["algorithm"] == algorithm) & (runs["cell"] == case)]
            cost = (late.loc[(algorithm, case)] - late.loc[(algorithm, "uma_7sites")]) * 100
            rows.append({
                "algorithm": algorithm, "case": case, "seeds": len(r),
                "late_acc": r["late_acc"].mean(), "late_acc_std": r["late_acc"].std(),
                "final_acc": r["final_acc"].mean(), "final_acc_std": r["final_acc"].std(),
                "time_to_0.8_s": r["time_to_0.8_s"].mean(), "round_s": r["round_s"].mean(),
                "total_sim_time_s": r["total_sim_time_s"].mean(),
                "dropped_fraction": r["dropped_fraction"].fillna(0.0).mean(),
                "dropped_at_round_deadline": r["dropped_fraction_deadline"].fillna(0.0).mean(),
                "dropped_at_step_deadline": r["dropped_fraction_step_deadline"].fillna(
                    0.0).mean(),
                "label_bias_tv": r["label_bias_tv"].mean(),
                "late_cost_pp": cost.mean(),
                "late_cost_pp_per_seed": " ".join(f"{v:+.2f}" for v in cost.tolist())})
    return pd.DataFrame(rows)


def finishes(events: pd.DataFrame, algorithm: str) -> np.ndarray:
    """What a deadline would weigh, a value per client and round of a run without one
    (events.csv): FedAvg's model upload's end, from the round's start (its first event); SCALA's
    slowest wait of its barrier for the client's activations over the round's local
    iterations, each from when the server is ready for them (the round's start in the first,
    the end of its previous server step in the others): what its step deadline bounds."""
    start = events.groupby("round")["t_start_s"].min()
    if algorithm == "fedavg":
        up = events[events["kind"] == "model_upload"]
        return (up["t_end_s"] - start.loc[up["round"]].to_numpy()).to_numpy()
    sent = events[events["kind"] == "activation_upload"]
    ready = events.loc[events["kind"] == "server_step", ["round", "local_iter", "t_end_s"]]
    ready = ready.assign(local_iter=ready["local_iter"] + 1).rename(columns={"t_end_s": "ready"})
    sent = sent.merge(ready, on=["round", "local_iter"], how="left")
    first = sent["local_iter"] == 0
    sent.loc[first, "ready"] = start.loc[sent.loc[first, "round"]].to_numpy()
    waits = sent.assign(wait=sent["t_end_s"] - sent["ready"])
    return waits.groupby(["round", "client_id"])["wait"].max().to_numpy()


def deadline_percentiles(results: Path, q: float = 70.0) -> dict[str, float]:
    """The q-th percentile of `finishes` over the rounds of every seed's run of uma_7sites
    under `results` (whole records: `python -m scala_netsim.tools.regenerate` writes the kept
    slim ones again), per algorithm: how scenarios/network_composed.yaml's deadline case was
    set (q = 70: it drops about the slowest 30 %)."""
    found = {}
    for algorithm in NAMES:
        runs = sorted((results / algorithm / "cell=uma_7sites").glob("seed*"))
        values = [finishes(read_record(run, EVENTS_CSV), algorithm) for run in runs]
        found[algorithm] = float(np.percentile(np.concatenate(values), q))
    return found


def selections(run: Path) -> pd.DataFrame:
    """A deadline run's selections (demands.csv: round, client), each with `dropped` (a
    client_dropped event in that round) and the client's row of clients.csv."""
    events = read_record(run, EVENTS_CSV, usecols=["round", "client_id", "kind"])
    dropped = events.loc[events["kind"] == "client_dropped", ["round", "client_id"]]
    chosen = read_record(run, DEMANDS_CSV, usecols=["round", "client_id"])
    chosen = chosen.merge(dropped.assign(dropped=1), how="left", on=["round", "client_id"])
    clients = read_record(run, CLIENTS_CSV)
    return chosen.fillna({"dropped": 0}).merge(clients, on="client_id")


def dropped_table(results: Path) -> pd.DataFrame:
    """dropped.csv (analysis.composed's module docstring), pooled over the deadline runs'
    seeds."""
    rows = []
    for algorithm in NAMES:
        runs = sorted((results / algorithm / "cell=uma_7sites_deadline").glob("seed*"))
        chosen = pd.concat([selections(run) for run in runs], ignore_index=True)
        place = (chosen["indoor"].map({1: "indoor", 0: "outdoor"}) + " "
                 + chosen["los"].map({1: "LOS", 0: "NLOS"}))
        # the slower half of the clients' FLOP/s range (compute.client_flops_per_s)
        compute = (chosen["flops_per_s"] > 5.5e9).map({True: "5.5-10 GFLOP/s",
                                                        False: "1-5.5 GFLOP/s"})
        coupling = (chosen["pathloss_db"] + chosen["shadowing_db"] + chosen["o2i_db"]
                    - chosen["antenna_gain_db"])
        quarter = pd.qcut(coupling, 4, labels=[f"coupling loss quarter {q} of 4"
                                               for q in range(1, 5)]).astype(str)
        for by, groups in (("place", place), ("compute", compute), ("coupling", quarter)):
            for group, picked in chosen.groupby(groups.to_numpy(), sort=True):
                rows.append({"algorithm": algorithm, "by": by, "group": group,
                             "selected": len(picked), "dropped": int(picked["dropped"].sum()),
                             "drop_rate": picked["dropped"].mean(),
                             "share_of_drops": picked["dropped"].sum()
                             / chosen["dropped"].sum()})
    return pd.DataFrame(rows)


def answer_deadline(deadline: pd.DataFrame, dropped: pd.DataFrame) -> str:
    """The second question's answer, every number from the two tables."""
    d = deadline.set_index(["algorithm", "case"])
    rate = dropped.set_index(["algorithm", "group"])
    parts = []
    for a in NAMES:
        off, on = d.loc[(a, "uma_7sites")], d.loc[(a, "uma_7sites_deadline")]
        parts.append(
            f"{NAMES[a]} drops {100 * on['dropped_fraction']:.1f} % of its selections "
            f"({100 * on['dropped_at_round_deadline']:.1f} % at the round deadline, "
            f"{100 * on['dropped_at_step_deadline']:.1f} % at the step deadline) and "
            f"ends at {100 * on['late_acc']:.2f} ± {100 * on['late_acc_std']:.2f} % "
            f"end-of-training accuracy against {100 * off['late_acc']:.2f} ± "
            f"{100 * off['late_acc_std']:.2f} % without the deadline, {on['late_cost_pp']:+.2f} pp "
            f"(per seed {on['late_cost_pp_per_seed']}); final {100 * on['final_acc']:.2f} % "
            f"against {100 * off['final_acc']:.2f} %. Its round takes {on['round_s']:.2f} s "
            f"against {off['round_s']:.2f} s and it reaches 80 % after "
            f"{on['time_to_0.8_s']:,.0f} s against {off['time_to_0.8_s']:,.0f} s: the "
            f"contributors' labels are {on['label_bias_tv']:.3f} (total variation) from the "
            f"selected clients'")
    who = []
    for a in NAMES:
        def r(group: str, a: str = a) -> str:
            return f"{100 * rate.loc[(a, group), 'drop_rate']:.1f} %"
        share = 100 * rate.loc[(a, "indoor NLOS"), "share_of_drops"]
        who.append(
            f"{NAMES[a]}: indoor NLOS {r('indoor NLOS')} of their selections ({share:.1f} % of "
            f"all drops), indoor LOS {r('indoor LOS')}, outdoor NLOS {r('outdoor NLOS')}, "
            f"outdoor LOS {r('outdoor LOS')}; the slower half of the FLOP/s range "
            f"{r('1-5.5 GFLOP/s')}, the faster {r('5.5-10 GFLOP/s')}; by coupling loss "
            f"(path loss, shadowing and building entry less antenna gain), quarters 1 to 4 "
            + " ".join(r(f"coupling loss quarter {q} of 4") for q in range(1, 5)))
    return ("; ".join(parts) + ". Who is dropped (the three seeds' selections pooled): "
            + "; ".join(who) + ".")
