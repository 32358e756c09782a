"""The composed network study's answers (issue 50), written from its comparison tables and
kept runs, so that every number in its report comes from the tables beside it:

    python -m analysis.composed RESULTS/network_composed/comparison.csv \
        --async RESULTS/network_composed_async/comparison.csv --out docs/studies/network_composed

(`--deadlines` prints instead the percentiles the deadline case was set at: deadline_percentiles.)

- fading.csv (question 1): per algorithm and fading case of scenarios/network_composed.yaml,
  from each run's rounds.csv its mean and its median round time, and the time to 70 and 80 %
  (each a mean over the seeds), as a multiple of the same place (the paper's cell or the
  7-site network) without fading (the ratio of those means, and each seed's own), each run's
  longest round and the share of its time its 5 longest rounds take (the tail that drives
  the mean: Rayleigh airtime has no finite mean), and FedAvg's time to 80 % over SCALA's;
- deadline.csv (question 2, analysis.composed_deadline): SCALA and FedAvg in the network
  without and with the deadline: end-of-training and final accuracy, the time to 80 %, the
  round, the share dropped and the contributors' label bias, and the deadline's cost in
  end-of-training accuracy per seed;
- dropped.csv (question 2, analysis.composed_deadline): who the deadline drops, from the
  deadline runs' records (the folders beside the comparison.csv): each group's selections,
  drops and drop rate, by place (indoor or outdoor, LOS or NLOS), by the client's FLOP/s and
  by its coupling loss;
- async.csv (question 3): SCALA, GAS and async SFL over 600 simulated seconds in the network
  (scenarios/network_composed_async.yaml): accuracy at 600 s (the mean of the evaluations in
  the last 20 % of the versions each made by then), uplink bytes, the spacing of the
  evaluations (from each run's rounds.csv: the resolution of a time to an accuracy), times to
  70 and 80 %, versions, staleness, updates per client and whom the clock favours;
- report.md: what was run, the answers, the tables.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.compare import LATE_SHARE, late_rounds
from analysis.composed_deadline import (
    DEADLINE_CASES,
    NAMES,
    answer_deadline,
    deadline_percentiles,
    deadline_table,
    dropped_table,
)
from scala_netsim.core.files import ROUNDS_CSV
from scala_netsim.core.results import read_record

CASES = {"paper_cell": "the paper's cell, no fading",
         "paper_cell_rayleigh_round": "the paper's cell, Rayleigh per round",
         "paper_cell_rayleigh_transfer": "the paper's cell, Rayleigh per transfer",
         "uma_7sites": "the 7-site network, no fading",
         "uma_7sites_rayleigh_round": "the 7-site network, Rayleigh per round",
         "uma_7sites_rayleigh_transfer": "the 7-site network, Rayleigh per transfer"}


def unfaded(case: str) -> str:
    return "paper_cell" if case.startswith("paper_cell") else "uma_7sites"


TAIL_ROUNDS = 5   # the tail of a run's rounds fading.csv shows: its 5 longest


def round_times(comparison: pd.DataFrame, results: Path) -> pd.DataFrame:
    """Per run of question 1 (algorithm, case, seed), from its rounds.csv (the comparison's
    `folder` under `results`): its mean and median round time, its longest round and the
    share of its simulated time its TAIL_ROUNDS longest rounds take."""
    rows = []
    for run in comparison[comparison["cell"].isin(list(CASES))].itertuples():
        round_s = read_record(results / str(run.folder), ROUNDS_CSV,
                              usecols=["round_time_s"])["round_time_s"].to_numpy()
        longest = np.sort(round_s)[::-1]
        rows.append({"algorithm": run.algorithm, "case": run.cell, "seed": run.seed,
                     "mean_round_s": float(round_s.mean()),
                     "median_round_s": float(np.median(round_s)),
                     "longest_round_s": float(longest[0]),
                     "tail_share": float(longest[:TAIL_ROUNDS].sum() / round_s.sum())})
    return pd.DataFrame(rows).sort_values(["algorithm", "case", "seed"]).set_index(
        ["algorithm", "case", "seed"])


def _seeds(values: pd.Series, form: str) -> str:
    return " ".join(format(v, form) for v in values.tolist())


def fading_table(comparison: pd.DataFrame, results: Path) -> pd.DataFrame:
    """fading.csv (see the module's docstring)."""
    comparison = comparison[comparison["cell"].isin(list(CASES))]
    per_run = round_times(comparison, results)
    by_seed = comparison.set_index(["algorithm", "cell", "seed"])["time_to_0.8_s"]
    means = comparison.groupby(["algorithm", "cell"])[["time_to_0.7_s",
                                                      "time_to_0.8_s"]].mean()
    rounds = per_run.groupby(["algorithm", "case"])[["mean_round_s", "median_round_s"]].mean()
    rows = []
    for algorithm, case in means.index.tolist():
        row, base = means.loc[(algorithm, case)], means.loc[(algorithm, unfaded(case))]
        seeds = (by_seed.loc[(algorithm, case)] / by_seed.loc[(algorithm, unfaded(case))])
        runs, unfaded_runs = per_run.loc[(algorithm, case)], per_run.loc[(algorithm,
                                                                          unfaded(case))]
        stretch = runs[["mean_round_s", "median_round_s"]] / unfaded_runs[
            ["mean_round_s", "median_round_s"]]
        mean_s, median_s = rounds.loc[(algorithm, case)]
        base_mean_s, base_median_s = rounds.loc[(algorithm, unfaded(case))]
        rows.append({"algorithm": algorithm, "case": case,
                     "seeds": _seeds(runs.index.to_series(), "d"),
                     "mean_round_s": mean_s, "mean_round_x": mean_s / base_mean_s,
                     "mean_round_x_per_seed": _seeds(stretch["mean_round_s"], ".2f"),
                     "median_round_s": median_s, "median_round_x": median_s / base_median_s,
                     "median_round_x_per_seed": _seeds(stretch["median_round_s"], ".2f"),
                     "longest_round_s_per_seed": _seeds(runs["longest_round_s"], ".0f"),
                     f"top{TAIL_ROUNDS}_share_pct_per_seed": _seeds(100 * runs["tail_share"],
                                                                    ".1f"),
                     "time_to_0.7_s": row["time_to_0.7_s"],
                     "time_to_0.8_s": row["time_to_0.8_s"],
                     "to_0.8_x": row["time_to_0.8_s"] / base["time_to_0.8_s"],
                     "to_0.8_x_per_seed": _seeds(seeds, ".2f"),
                     "fedavg_over_scala_0.8": (means.loc[("fedavg", case), "time_to_0.8_s"]
                                               / means.loc[("scala", case), "time_to_0.8_s"])})
    order = {c: i for i, c in enumerate(CASES)}
    table = pd.DataFrame(rows)
    return table.sort_values(["algorithm", "case"], key=lambda s: s.map(
        order) if s.name == "case" else s.map({"scala": 0, "fedavg": 1})).reset_index(drop=True)


FADED = {"network": ("uma_7sites_rayleigh_round", "uma_7sites_rayleigh_transfer"),
         "cell": ("paper_cell_rayleigh_round", "paper_cell_rayleigh_transfer")}


def answer(table: pd.DataFrame) -> tuple[str, str]:
    """The first question's answer, every number from `table`: the stretches, and the tail
    behind the mean round time's."""
    t = table.set_index(["algorithm", "case"])
    tail = f"top{TAIL_ROUNDS}_share_pct_per_seed"

    def at(algorithm: str, case: str, column: str) -> float:
        return float(t.loc[(algorithm, case), column])

    def seeds(algorithm: str, case: str, column: str = "to_0.8_x_per_seed") -> str:
        return str(t.loc[(algorithm, case), column])

    def values(algorithm: str, cases: list[str], column: str) -> list[float]:
        return [float(v) for c in cases for v in seeds(algorithm, c, column).split()]

    def both(a: str, column: str, per_seed: str) -> str:
        (nr, nt), (cr, ct) = FADED["network"], FADED["cell"]
        return (f"{at(a, nr, column):.2f}x and {at(a, nt, column):.2f}x in the network (per "
                f"seed {seeds(a, nr, per_seed)} and {seeds(a, nt, per_seed)}), against "
                f"{at(a, cr, column):.2f}x and {at(a, ct, column):.2f}x in the paper's cell "
                f"(per seed {seeds(a, cr, per_seed)} and {seeds(a, ct, per_seed)})")

    faded = [c for c in CASES if c != unfaded(c)]
    parts, tails, spreads = [], [], []
    for a in ("scala", "fedavg"):
        parts.append(
            f"{NAMES[a]}'s mean round time (the ratio of the seeds' mean round times, faded to "
            f"unfaded) stretches with Rayleigh fading per round and per transfer "
            f"{both(a, 'mean_round_x', 'mean_round_x_per_seed')}; its median round time (the "
            f"ratio of the seeds' mean median round times) "
            f"{both(a, 'median_round_x', 'median_round_x_per_seed')}; its time to 80 % (the "
            f"ratio of the seeds' mean times) {both(a, 'to_0.8_x', 'to_0.8_x_per_seed')}")
        shares = values(a, faded, tail)
        worst = max(faded, key=lambda c: max(values(a, [c], tail)))
        i = int(np.argmax(values(a, [worst], tail)))
        seed = seeds(a, worst, "seeds").split()[i]
        longest_s = values(a, [worst], "longest_round_s_per_seed")[i]
        unfaded_share = max(values(a, [unfaded(c) for c in faded], tail))
        tails.append(
            f"{NAMES[a]}'s {TAIL_ROUNDS} longest rounds take {min(shares):.1f}-"
            f"{max(shares):.1f} % of a faded run's simulated time ({max(shares):.1f} % in "
            f"{CASES[worst]}, seed {seed}, whose longest round takes {longest_s:,.0f} s), "
            f"against at most {unfaded_share:.1f} % of an unfaded one")
        mean_x = values(a, faded, "mean_round_x_per_seed")
        median_x = values(a, faded, "median_round_x_per_seed")
        spreads.append((f"{NAMES[a]}'s {min(median_x):.2f}-{max(median_x):.2f}x",
                        f"{min(mean_x):.2f}-{max(mean_x):.2f}x"))
    ratio = [f"{at('scala', c, 'fedavg_over_scala_0.8'):.1f}x {CASES[c]}" for c in CASES]
    return ("; ".join(parts) + ". FedAvg's time to 80 % over SCALA's (the ratio of the "
            "seeds' mean times): " + ", ".join(ratio) + ".",
            "The mean round time is driven by a heavy tail of a few rounds: "
            + "; ".join(tails) + ". The median round time says what a typical round does: "
            "fading stretches " + " and ".join(m for m, _ in spreads) + ", while their "
            "ratios of mean round times run " + " and ".join(x for _, x in spreads)
            + " (each faded run against the same seed's without fading, every faded case).")


ASYNC_NAMES = {"scala": "SCALA", "gas": "GAS", "async_sfl": "async SFL"}


def evaluations(run: Path) -> dict[str, float]:
    """A run's evaluations, from its rounds.csv: the mean simulated seconds between
    consecutive ones (the resolution of its times to an accuracy), how many the accuracy at
    600 s averages (analysis.compare.late_accuracy: those of the last LATE_SHARE of its
    versions) and when the first of those was made."""
    rounds = read_record(run, ROUNDS_CSV, usecols=["round", "sim_time_s", "test_acc"])
    made = rounds[rounds["test_acc"].notna()]
    averaged = late_rounds(rounds).dropna(subset=["test_acc"])
    return {"eval_spacing_s": float(np.diff(made["sim_time_s"].to_numpy()).mean()),
            "evaluations_averaged": float(len(averaged)),
            "averaged_from_s": float(averaged["sim_time_s"].min())}


def async_table(comparison: pd.DataFrame, results: Path) -> pd.DataFrame:
    """async.csv (see the module's docstring): means (and stds, per seed) over the seeds;
    each run's evaluations (`evaluations`) from its rounds.csv (the comparison's `folder`
    under `results`)."""
    rows = []
    for algorithm in ASYNC_NAMES:
        r = comparison[comparison["algorithm"] == algorithm].sort_values("seed")
        made = pd.DataFrame([evaluations(results / str(f)) for f in r["folder"]])
        rows.append({
            "algorithm": algorithm, "seeds": len(r),
            "acc_at_600_s": r["late_acc"].mean(), "acc_at_600_s_std": r["late_acc"].std(),
            "evaluations_averaged": made["evaluations_averaged"].mean(),
            "averaged_from_s": made["averaged_from_s"].mean(),
            "uplink_gb": r["uplink_bytes"].mean() / 1e9,
            "eval_spacing_s": made["eval_spacing_s"].mean(),
            "eval_spacing_s_per_seed": _seeds(made["eval_spacing_s"], ".1f"),
            "final_acc": r["final_acc"].mean(), "best_acc": r["best_acc"].mean(),
            "time_to_0.7_s": r["time_to_0.7_s"].mean(),
            "time_to_0.8_s": r["time_to_0.8_s"].mean(),
            "time_to_0.8_s_per_seed": " ".join("—" if pd.isna(v) else f"{v:.0f}"
                                               for v in r["time_to_0.8_s"].tolist()),
            "versions": r["rounds"].mean(),
            "ends_s_per_seed": _seeds(r["total_sim_time_s"], ".0f"),
            "version_s": (r["total_sim_time_s"] / r["rounds"]).mean(),
            "staleness_mean": r["staleness_mean"].mean(),
            "updates_per_client": r["updates_per_client_mean"].mean(),
            "updates_gain_corr": r["updates_gain_correlation"].mean(),
            "updates_compute_corr": r["updates_compute_correlation"].mean(),
            "worst_class_acc": r["worst_class_acc"].mean()})
    return pd.DataFrame(rows)


def answer_async(table: pd.DataFrame, scala_round_s: dict[str, list[float]]) -> str:
    """The third question's answer, every number from the table and SCALA's round per seed
    (`scala_round_s`: under round robin here, under question 1's static grants)."""
    t = table.set_index("algorithm")

    def acc(a: str) -> str:
        return (f"{100 * t.loc[a, 'acc_at_600_s']:.2f} ± "
                f"{100 * t.loc[a, 'acc_at_600_s_std']:.2f} %")

    def each(column: str, form: str, unit: str = "") -> str:
        return ", ".join(f"{ASYNC_NAMES[a]} {format(t.loc[a, column], form)}{unit}"
                         for a in ASYNC_NAMES)

    reached = {a: sum(v != "—" for v in str(t.loc[a, "time_to_0.8_s_per_seed"]).split())
               for a in ASYNC_NAMES}
    to80 = ", ".join(f"{ASYNC_NAMES[a]} {t.loc[a, 'time_to_0.8_s']:.0f} s (per seed "
                     f"{t.loc[a, 'time_to_0.8_s_per_seed']}; {reached[a]} of 3 seeds)"
                     for a in ASYNC_NAMES)
    uplink_gb = t["uplink_gb"]
    more = " and ".join(f"{ASYNC_NAMES[a]} {uplink_gb[a] / uplink_gb['scala']:.2f}x"
                        for a in ("gas", "async_sfl"))
    return (
        "A run stops with the version (SCALA: the round) that reaches 600 simulated "
        "seconds, and that version is evaluated; they end at (per seed) "
        + ", ".join(f"{ASYNC_NAMES[a]} {t.loc[a, 'ends_s_per_seed']} s" for a in ASYNC_NAMES)
        + f". Accuracy at 600 s (a run's mean test accuracy over its evaluations in the last "
        f"{100 * LATE_SHARE:.0f} % of the versions it made, as analysis.compare.late_accuracy "
        f"takes them; mean ± standard deviation over the seeds): GAS {acc('gas')}, async SFL "
        f"{acc('async_sfl')}, SCALA {acc('scala')}, SCALA with "
        f"{t.loc['scala', 'versions']:.0f} of the headline's 500 rounds. It averages (a run's "
        f"count, mean over the seeds) " + each("evaluations_averaged", ".1f")
        + " evaluations, the first of them made at " + each("averaged_from_s", ".0f", " s")
        + ". Uplink in those 600 s (10^9 bytes, mean over the seeds): "
        + each("uplink_gb", ".2f", " GB") + f"; {more} SCALA's bytes. A time to "
        "an accuracy is the simulated time of the first evaluation at or above it, so it is "
        "known to within the spacing of the evaluations: a run's mean simulated seconds "
        "between consecutive evaluations, mean over the seeds, "
        + each("eval_spacing_s", ".1f", " s") + " (per seed: "
        + ", ".join(f"{ASYNC_NAMES[a]} {t.loc[a, 'eval_spacing_s_per_seed']}"
                    for a in ASYNC_NAMES)
        + f" s). Time to 70 %: GAS {t.loc['gas', 'time_to_0.7_s']:.0f} s, async SFL "
        f"{t.loc['async_sfl', 'time_to_0.7_s']:.0f} s, SCALA "
        f"{t.loc['scala', 'time_to_0.7_s']:.0f} s; to 80 %: {to80}. A version takes "
        f"async SFL {t.loc['async_sfl', 'version_s']:.2f} s (one client's T = 5 local "
        f"iterations), GAS {t.loc['gas', 'version_s']:.2f} s, SCALA "
        f"{t.loc['scala', 'version_s']:.2f} s (a round; per seed under round robin "
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
        "    python -m scala_netsim scenarios/network_composed_async.yaml --set "
        "'algorithms=[gas, async_sfl]'",
        "    python -m scala_netsim scenarios/network_composed_async.yaml --set "
        "'algorithms=[scala]' --set training.eval_every=1", "",
        "Question 1: the headline's kept SCALA and FedAvg trainings (the paper's setting, the "
        "authors' AlexNet, 500 rounds, seeds 0-2; FedAvg with each client's optimiser state "
        "kept, as the headline trains it since issue 46), each re-timed in the paper's cell "
        "and in the 7-site, 3-sector 38.901 UMa network at 2 GHz (ISD 500 m, wraparound, 80 % "
        "indoors, interference on, 20 MHz a cell at 30 kHz), without fading and with Rayleigh "
        "fading of every link (per round: one |h|^2 a client, direction and round; per "
        "transfer: a fresh one every transfer). The rate adapts to the faded SINR, so the "
        "learning is the headline's and only the clock differs. No named deployment "
        "(`network.deployment: null`): every key is set by hand, as in the network study "
        "(docs/model/network.md's `uma_n78` has 19 sites on 100 MHz of TDD at 3.5 GHz, 56 dBm "
        "a cell, noise figures, power control and a panel a sector, 10 rows steered 12 degrees "
        "down and 8 columns pointing a beam at each served client). 36 re-timings on the "
        "project's 2-core CPU (one process, numpy's AVX-512 paths off, beside two training "
        "lanes), wall time per case summed over both algorithms and the seeds: "
        + ", ".join(f"{CASES[c]} {wall[c]:.0f} s" for c in CASES if c in wall) + ".", "",
        "Questions 2 and 3 change what is learned, so their 15 runs were trained (seeds 0-2): "
        "12 all at once on a lent H200 GPU (torch 2.11, CUDA, one process and one CPU thread "
        "each), and SCALA's three of question 3 again on the project's CPU (one torch thread, "
        "beside another training lane) with an evaluation every round, so that its time to an "
        "accuracy is known as finely as the asynchronous algorithms' (issue 61; its clock is "
        "that of its earlier GPU runs to the bit, which evaluated every 10 rounds; its "
        "accuracy at the rounds both evaluated is close to theirs but not equal: CPU against "
        "GPU arithmetic). Mean wall "
        "time per run (on the GPU 15 runs shared it: not a speed measurement): "
        + ", ".join(f"{k} {v / 60:.1f} min" for k, v in trained_wall.items()) + ".", ""]


def report(table: pd.DataFrame, wall: pd.Series, deadline: pd.DataFrame, dropped: pd.DataFrame,
           asynchronous: pd.DataFrame, scala_round_s: dict[str, list[float]],
           trained_wall: pd.Series) -> str:
    stretches, tail = answer(table)
    lines = [
        *_introduction(wall, trained_wall),
        "## 1. What Rayleigh fading does to the time to 80 %", "", stretches, "",
        "A round waits for its slowest transfer, and with Rayleigh fading a transfer's "
        "airtime bits / (B log2(1 + SNR |h|^2)) has no finite mean: a deep fade stalls the "
        "round. So a run's mean round time is set by its few longest rounds, and the ratio "
        "of mean round times swings from seed to seed with them; the median round time is "
        "what a typical round takes. The time to 80 % is a sum of rounds up to the first "
        "that reaches it, so one stalled early round can move it many times over (the "
        "per-seed multiples).", "", tail, "",
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
        "Simulated seconds. `mean_round_s`: the mean over the seeds of each run's mean "
        "round time; `median_round_s`: the mean over the seeds of each run's median round "
        "time; `time_to_`: means over the seeds. `_x`: the multiple of the same place "
        "without fading (the ratio of those means over the seeds; `_per_seed`: each seed's "
        "own ratio, its run against the same seed's without fading, in the order of "
        f"`seeds`). `longest_round_s_per_seed`: each run's longest round; "
        f"`top{TAIL_ROUNDS}_share_pct_per_seed`: the share of each run's simulated time its "
        f"{TAIL_ROUNDS} longest rounds take.", "",
        "### deadline.csv", "", _markdown(deadline, DEADLINE_CASES), "",
        "Means over the seeds (`_std`: their standard deviation); `late_cost_pp`: the "
        "deadline case's end-of-training accuracy minus the same seed's without it.", "",
        "### dropped.csv", "", _markdown(dropped, {}), "",
        "The deadline runs' selections, pooled over the three seeds (5,000 a run); "
        "`share_of_drops`: the group's part of all the algorithm's drops.", "",
        "### async.csv", "", _markdown(asynchronous, {}, ASYNC_NAMES), "",
        "Means over the seeds (`_std`: their standard deviation; time to 80 %: over the "
        "seeds that reached it; per seed, — where one did not within 600 s). "
        "`acc_at_600_s`: each run's mean test accuracy over its evaluations in the last "
        f"{100 * LATE_SHARE:.0f} % of its versions (analysis.compare.late_accuracy), "
        "`evaluations_averaged` of them, the first made at `averaged_from_s`; "
        "`ends_s_per_seed`: when each run's last version ended; "
        "`eval_spacing_s`: a run's mean simulated seconds between consecutive evaluations "
        "(from its rounds.csv); `uplink_gb`: 10^9 bytes."]
    return "\n".join(lines) + "\n"


def _markdown(table: pd.DataFrame, cases: dict[str, str] | None = None,
              names: dict[str, str] | None = None) -> str:
    shown = table.assign(algorithm=table["algorithm"].map(names or NAMES))
    if "case" in shown:
        shown = shown.assign(case=shown["case"].map(CASES if cases is None else cases))
    # accuracies as percentages, as the text quotes them
    accuracy = [c for c in shown.columns if "acc" in c.split("_")]
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


def build(comparison: pd.DataFrame, results: Path, async_comparison: pd.DataFrame,
          async_results: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The study's tables (by file name) and its report, from the comparison tables and the
    kept runs under `results` (questions 1 and 2) and `async_results` (question 3)."""
    tables = {"fading.csv": fading_table(comparison, results),
              "deadline.csv": deadline_table(comparison),
              "dropped.csv": dropped_table(results),
              "async.csv": async_table(async_comparison, async_results)}
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
                         pd.read_csv(args.async_comparison), args.async_comparison.parent)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.to_csv(args.out / name, index=False)
    (args.out / "report.md").write_text(text)
    print(f"wrote {', '.join(tables)} and report.md into {args.out}")


if __name__ == "__main__":
    main()
