"""The composed network study's answers (issue 50), written from its comparison tables and
kept runs, so that every number in its report comes from the tables beside it:

    python -m analysis.composed RESULTS/network_composed/comparison.csv \
        --async RESULTS/network_composed_async/comparison.csv --out docs/studies/network_composed

(`--deadlines` prints instead the percentiles the deadline case was set at: deadline_percentiles.)

- fading.csv (question 1): per algorithm and fading case of scenarios/network_composed.yaml,
  the mean round time and the time to 70 and 80 % (means over the seeds), each as a multiple
  of the same place (the paper's cell or the 7-site network) without fading, the per-seed
  multiples of the time to 80 %, and FedAvg's time to 80 % over SCALA's in the case;
- deadline.csv (question 2): SCALA and FedAvg in the network without and with the deadline:
  end-of-training and final accuracy, the time to 80 %, the round, the share dropped and the
  contributors' label bias, and the deadline's cost in end-of-training accuracy per seed;
- dropped.csv (question 2): who the deadline drops, from the deadline runs' records (the
  folders beside the comparison.csv): each group's selections, drops and drop rate, by place
  (indoor or outdoor, LOS or NLOS), by the client's FLOP/s and by its coupling loss;
- async.csv (question 3): SCALA, GAS and async SFL over 600 simulated seconds in the network
  (scenarios/network_composed_async.yaml): accuracy, times to 70 and 80 %, versions, staleness,
  updates per client and whom the clock favours;
- report.md: what was run, the answers, the tables.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from scala_netsim.core.files import CLIENTS_CSV, DEMANDS_CSV, EVENTS_CSV
from scala_netsim.core.results import read_record

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
    comparison = comparison[comparison["cell"].isin(list(CASES))]
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


DEADLINE_CASES = {"uma_7sites": "no deadline", "uma_7sites_deadline": "deadline"}
ASYNC_NAMES = {"scala": "SCALA", "gas": "GAS", "async_sfl": "async SFL"}


def deadline_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """deadline.csv (see the module's docstring): means (and stds) over the seeds."""
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
    """dropped.csv (see the module's docstring), pooled over the deadline runs' seeds."""
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


def async_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """async.csv (see the module's docstring): means (and stds, per seed) over the seeds."""
    rows = []
    for algorithm in ASYNC_NAMES:
        r = comparison[comparison["algorithm"] == algorithm].sort_values("seed")
        rows.append({
            "algorithm": algorithm, "seeds": len(r),
            "late_acc": r["late_acc"].mean(), "late_acc_std": r["late_acc"].std(),
            "final_acc": r["final_acc"].mean(), "best_acc": r["best_acc"].mean(),
            "time_to_0.7_s": r["time_to_0.7_s"].mean(),
            "time_to_0.8_s": r["time_to_0.8_s"].mean(),
            "time_to_0.8_s_per_seed": " ".join("—" if pd.isna(v) else f"{v:.0f}"
                                               for v in r["time_to_0.8_s"].tolist()),
            "versions": r["rounds"].mean(),
            "version_s": (r["total_sim_time_s"] / r["rounds"]).mean(),
            "uplink_gb": r["uplink_bytes"].mean() / 1e9,
            "staleness_mean": r["staleness_mean"].mean(),
            "updates_per_client": r["updates_per_client_mean"].mean(),
            "updates_gain_corr": r["updates_gain_correlation"].mean(),
            "updates_compute_corr": r["updates_compute_correlation"].mean(),
            "worst_class_acc": r["worst_class_acc"].mean()})
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


def answer_async(table: pd.DataFrame, scala_round_s: dict[str, list[float]]) -> str:
    """The third question's answer, every number from the table and SCALA's round per seed
    (`scala_round_s`: under round robin here, under question 1's static grants)."""
    t = table.set_index("algorithm")

    def acc(a: str) -> str:
        return (f"{100 * t.loc[a, 'late_acc']:.2f} ± {100 * t.loc[a, 'late_acc_std']:.2f} %")

    reached = {a: sum(v != "—" for v in str(t.loc[a, "time_to_0.8_s_per_seed"]).split())
               for a in ASYNC_NAMES}
    to80 = ", ".join(f"{ASYNC_NAMES[a]} {t.loc[a, 'time_to_0.8_s']:.0f} s (per seed "
                     f"{t.loc[a, 'time_to_0.8_s_per_seed']}; {reached[a]} of 3 seeds)"
                     for a in ASYNC_NAMES)
    return (
        f"At 600 simulated seconds, by end-of-training accuracy (the mean of the evaluations in "
        f"the last 20 % of the versions): GAS {acc('gas')}, async SFL {acc('async_sfl')}, SCALA "
        f"{acc('scala')}. Time to 70 %: GAS {t.loc['gas', 'time_to_0.7_s']:.0f} s, async SFL "
        f"{t.loc['async_sfl', 'time_to_0.7_s']:.0f} s, SCALA "
        f"{t.loc['scala', 'time_to_0.7_s']:.0f} s; to 80 %: {to80}. A version takes "
        f"async SFL {t.loc['async_sfl', 'version_s']:.2f} s (one client's T = 5 local "
        f"iterations), GAS {t.loc['gas', 'version_s']:.2f} s, SCALA "
        f"{t.loc['scala', 'version_s']:.2f} s (a round: {t.loc['scala', 'versions']:.0f} of "
        f"the headline's 500 in 600 s; per seed under round robin "
        + " ".join(f"{v:.2f}" for v in scala_round_s["round_robin"])
        + " s against " + " ".join(f"{v:.2f}" for v in scala_round_s["static"])
        + f" s under question 1's static grants). GAS and async SFL heard each client "
        f"{t.loc['gas', 'updates_per_client']:.1f} and "
        f"{t.loc['async_sfl', 'updates_per_client']:.1f} times on average, at a mean staleness "
        f"of {t.loc['gas', 'staleness_mean']:.2f} and {t.loc['async_sfl', 'staleness_mean']:.2f} "
        f"versions; the updates a client got in correlate with its channel gain "
        f"({t.loc['gas', 'updates_gain_corr']:.2f}, {t.loc['async_sfl', 'updates_gain_corr']:.2f}) "
        f"and its FLOP/s ({t.loc['gas', 'updates_compute_corr']:.2f}, "
        f"{t.loc['async_sfl', 'updates_compute_corr']:.2f}). Worst class at the last "
        f"evaluation: GAS {100 * t.loc['gas', 'worst_class_acc']:.1f} %, async SFL "
        f"{100 * t.loc['async_sfl', 'worst_class_acc']:.1f} %, SCALA "
        f"{100 * t.loc['scala', 'worst_class_acc']:.1f} %.")


def _introduction(wall: pd.Series, trained_wall: pd.Series) -> list[str]:
    """What was run, and where (the report's opening)."""
    return [
        "# The composed network study (issue 50)", "",
        "Built by `python -m analysis.composed RESULTS/network_composed/comparison.csv "
        "--async RESULTS/network_composed_async/comparison.csv --out "
        "docs/studies/network_composed` from the study's comparison tables and the deadline "
        "runs' records. The kept runs: `results/` (questions 1 and 2; the re-timed runs slim: "
        "`python -m scala_netsim.tools.regenerate docs/studies/network_composed/results --out "
        "RESULTS/network_composed` writes them again) and `results_async/` (question 3). The "
        "runs:", "",
        "    python -m scala_netsim scenarios/network_composed.yaml --retime-from "
        "docs/studies/cellular_10pct",
        "    python -m scala_netsim scenarios/network_composed_async.yaml", "",
        "Question 1: the headline's kept SCALA and FedAvg trainings (the paper's setting, the "
        "authors' AlexNet, 500 rounds, seeds 0-2; FedAvg with each client's optimiser state "
        "kept, as the headline trains it since issue 46), each re-timed in the paper's cell "
        "and in the 7-site, 3-sector 38.901 UMa network at 2 GHz (ISD 500 m, wraparound, 80 % "
        "indoors, interference on, 20 MHz a cell at 30 kHz), without fading and with Rayleigh "
        "fading of every link (per round: one |h|^2 a client, direction and round; per "
        "transfer: a fresh one every transfer). The rate adapts to the faded SINR, so the "
        "learning is the headline's and only the clock differs. 36 re-timings on the "
        "project's 2-core CPU (one process, numpy's AVX-512 paths off, beside two training "
        "lanes), wall time per case summed over both algorithms and the seeds: "
        + ", ".join(f"{CASES[c]} {wall[c]:.0f} s" for c in CASES if c in wall) + ".", "",
        "Questions 2 and 3 change what is learned, so their 15 runs were trained (seeds 0-2), "
        "all at once on a lent H200 GPU (torch 2.11, CUDA, one process and one CPU thread "
        "each), mean wall time per run (15 runs sharing one GPU: not a speed measurement): "
        + ", ".join(f"{k} {v / 60:.1f} min" for k, v in trained_wall.items()) + ".", ""]


def report(table: pd.DataFrame, wall: pd.Series, deadline: pd.DataFrame,
           dropped: pd.DataFrame, asynchronous: pd.DataFrame,
           scala_round_s: dict[str, list[float]],
           trained_wall: pd.Series) -> str:
    lines = [
        *_introduction(wall, trained_wall),
        "## 1. What Rayleigh fading does to the time to 80 %", "", answer(table), "",
        "A round waits for its slowest transfer, and with Rayleigh fading a transfer's "
        "airtime bits / (B log2(1 + SNR |h|^2)) has no finite mean: a deep fade stalls the "
        "round. The time to 80 % is a sum of rounds up to the first that reaches it, so one "
        "stalled early round can move it many times over (the per-seed multiples); the "
        "round's mean stretch is the steadier measure.", "",
        "## 2. A deadline that drops the slowest 30 % of a round", "",
        "The deadline is the 70th percentile, over the rounds of the three seeds' runs in the "
        "network without one (uma_7sites), of a client's finish, rounded: FedAvg's model "
        "upload must end 22.5 s after the round's start (the percentile: 22.58 s); SCALA's "
        "barrier waits 0.4 s for a client's activations in every local iteration (its step "
        "deadline; the percentile of a client's slowest wait in a round: 0.399 s). `python -m "
        "analysis.composed RESULTS/network_composed/comparison.csv --deadlines` computes them "
        "from the regenerated records. Both are set in one case (uma_7sites_deadline). "
        "The network without a deadline is the headline's "
        "learning re-timed (question 1's runs).", "",
        answer_deadline(deadline, dropped), "",
        "A dropped client is not aggregated, so the deadline trades accuracy for time: each "
        "round is shorter, and the clients it drops are not a random 30 %: the slow half of "
        "the FLOP/s range and the clients behind the most coupling loss (indoor NLOS above "
        "all) are dropped most, so the contributors' labels drift from the selection's.", "",
        "## 3. GAS and async SFL against SCALA over 600 simulated seconds", "",
        "The same network with every cell's blocks granted per transfer (`scheduler: "
        "round_robin`, work-conserving; an asynchronous run has no round), SCALA under it too; "
        "GAS and async SFL with the cell study's settings (Q = r K = 10 clients at once). "
        "Each run stops at 600 simulated seconds.", "",
        answer_async(asynchronous, scala_round_s), "",
        "## The tables", "", "### fading.csv", "", _markdown(table), "",
        "Simulated seconds, means over the seeds; `_x`: the multiple of the same place "
        "without fading (ratio of the seeds' means; per seed: each seed's own).", "",
        "### deadline.csv", "", _markdown(deadline, DEADLINE_CASES), "",
        "Means over the seeds (`_std`: their standard deviation); `late_cost_pp`: the "
        "deadline case's end-of-training accuracy minus the same seed's without it.", "",
        "### dropped.csv", "", _markdown(dropped, {}), "",
        "The deadline runs' selections, pooled over the three seeds (5,000 a run); "
        "`share_of_drops`: the group's part of all the algorithm's drops.", "",
        "### async.csv", "", _markdown(asynchronous, {}, ASYNC_NAMES), "",
        "Means over the seeds (time to 80 %: over the seeds that reached it; per seed, "
        "— where one did not within 600 s)."]
    return "\n".join(lines) + "\n"


def _markdown(table: pd.DataFrame, cases: dict[str, str] | None = None,
              names: dict[str, str] | None = None) -> str:
    shown = table.assign(algorithm=table["algorithm"].map(names or NAMES))
    if "case" in shown:
        shown = shown.assign(case=shown["case"].map(CASES if cases is None else cases))
    # accuracies as percentages, as the text quotes them
    accuracy = [c for c in shown.columns if "_acc" in c]
    shown = shown.assign(**{c: 100 * shown[c] for c in accuracy}).rename(
        columns={c: f"{c} (%)" for c in accuracy})
    head = "| " + " | ".join(shown.columns) + " |"
    rule = "|" + "---|" * len(shown.columns)
    body = ["| " + " | ".join(_cell(v) for v in row) + " |"
            for row in shown.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:,.2f}"
    return str(value)


def build(comparison: pd.DataFrame, results: Path,
          async_comparison: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], str]:
    """The study's tables (by file name) and its report, from the comparison tables and the
    kept runs under `results` (questions 1 and 2)."""
    tables = {"fading.csv": fading_table(comparison),
              "deadline.csv": deadline_table(comparison),
              "dropped.csv": dropped_table(results),
              "async.csv": async_table(async_comparison)}
    def rounds(runs: pd.DataFrame) -> list[float]:
        scala = runs[runs["algorithm"] == "scala"].sort_values("seed")
        return (scala["total_sim_time_s"] / scala["rounds"]).tolist()

    scala_round_s = {"round_robin": rounds(async_comparison),
                     "static": rounds(comparison[comparison["cell"] == "uma_7sites"])}
    retimed = comparison[comparison["cell"].isin(list(CASES))]
    trained = pd.concat([
        comparison[comparison["cell"] == "uma_7sites_deadline"].assign(
            what=lambda f: f["algorithm"].map(NAMES) + " deadline"),
        async_comparison.assign(what=lambda f: f["algorithm"].map(ASYNC_NAMES) + " 600 s")])
    trained_wall = trained.groupby("what", sort=False)["wall_time_s"].mean()
    text = report(tables["fading.csv"], retimed.groupby("cell")["wall_time_s"].sum(),
                  tables["deadline.csv"], tables["dropped.csv"], tables["async.csv"],
                  scala_round_s, trained_wall)
    return tables, text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("comparison", type=Path,
                        help="network_composed's comparison.csv (its runs beside it)")
    parser.add_argument("--async", dest="async_comparison", type=Path,
                        help="network_composed_async's comparison.csv")
    parser.add_argument("--out", type=Path, help="where the report goes")
    parser.add_argument("--deadlines", action="store_true",
                        help="print instead the 70th percentiles the deadline case was set "
                             "at, from the whole records of the runs beside the comparison")
    args = parser.parse_args(argv)
    if args.deadlines:
        for algorithm, value in deadline_percentiles(args.comparison.parent).items():
            print(f"{algorithm}: {value:.3f} s")
        return
    if args.async_comparison is None or args.out is None:
        parser.error("--async and --out are needed to write the report")
    tables, text = build(pd.read_csv(args.comparison), args.comparison.parent,
                         pd.read_csv(args.async_comparison))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.to_csv(args.out / name, index=False)
    (args.out / "report.md").write_text(text)
    print(f"wrote {', '.join(tables)} and report.md into {args.out}")


if __name__ == "__main__":
    main()
