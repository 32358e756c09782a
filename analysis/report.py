"""report.md for one scenario's results folder: tables (mean and standard deviation over
seeds) and the study figures (bands over seeds, effect of each swept key with crossovers
marked, the latency-accuracy trade-off with its Pareto front).

Reads only result files: OUT/<scenario>/sweep.json and, per run, summary.json, scenario.yaml
and rounds.csv.

    python -m analysis OUT/<scenario>
"""

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.cells import network_lines  # noqa: E402
from analysis.compare import write_comparison  # noqa: E402
from analysis.figures import (  # noqa: E402
    drops_figure,
    effect_figure,
    time_to_target_figure,
)
from analysis.plots import comparison_figures  # noqa: E402
from analysis.runs import ReportError, _fmt_value, load_runs, setting_keys, short  # noqa: E402, F401
from analysis.tables import (  # noqa: E402
    accuracy_table,
    asynchronous_table,
    class_cost_table,
    cost_table,
    drops_table,
    equal_time_table,
    latency_energy_table,
    paired_change_table,
    privacy_table,
)
from analysis.tradeoff import latency_accuracy_figure  # noqa: E402
from scala_netsim.core.results import write_text  # noqa: E402


def write_report(scenario_dir: Path | str) -> Path:
    """OUT/<scenario>/report.md and its figures in OUT/<scenario>/figures/, with the
    comparison.csv the tables come from (rewritten from the run folders: the same file the
    command line wrote, or a kept study's rebuilt)."""
    scenario_dir = Path(scenario_dir)
    runs, curves, index = load_runs(scenario_dir)
    write_comparison(scenario_dir, index["accuracy_targets"])
    # a key swept over one value (a sweep cut to one cell) labels nothing: the summary names it
    keys = [k for k in setting_keys(index) if k in runs.columns and runs[k].nunique() >= 2]
    targets = index["accuracy_targets"]
    figures = scenario_dir / "figures"
    figures.mkdir(exist_ok=True)
    measured = not runs["timing_only"].all()   # some run has accuracies
    lines = summary_lines(runs, keys, targets, index, scenario_dir, measured)
    lines += drop_lines(runs, keys, measured)
    lines += equal_time_lines(runs, curves, keys) if measured else []
    lines += asynchronous_lines(runs, keys)
    lines += privacy_lines(runs, keys, targets)
    lines += network_lines(scenario_dir, runs, keys)
    lines += ["## Figures", ""]
    if measured:
        comparison_figures(scenario_dir)
        lines += ["### Accuracy against simulated time", "", "![](figures/accuracy_vs_time.png)",
                  "", "### Accuracy against rounds", "", "![](figures/accuracy_vs_rounds.png)", ""]
    for key in keys:
        if runs[key].nunique() >= 2:
            lines += key_figure_lines(runs, key, keys, targets, figures, measured)
    if measured:
        what, front = latency_accuracy_figure(runs, keys, targets,
                                              figures / "latency_accuracy.png")
        lines += ["### Latency-accuracy trade-off", "",
                  f"x: {what}; y: final test accuracy. Circled and joined: the Pareto front.",
                  "", "![](figures/latency_accuracy.png)", "",
                  "Pareto front (fastest first): " + (", ".join(front) or "empty"), ""]
        if np.isfinite(runs["energy_J"]).any():
            what, front = latency_accuracy_figure(runs, keys, targets,
                                                  figures / "energy_accuracy.png", "energy")
            lines += ["### Energy-accuracy trade-off", "",
                      f"x: {what}; y: final test accuracy. Circled and joined: the Pareto "
                      f"front.", "", "![](figures/energy_accuracy.png)", "",
                      "Pareto front (least energy first): " + (", ".join(front) or "empty"),
                      ""]
    path = scenario_dir / "report.md"
    write_text(path, "\n".join(lines))
    return path


def summary_lines(runs: pd.DataFrame, keys: Sequence[str], targets: Sequence[float],
                  index: dict, scenario_dir: Path, measured: bool) -> list[str]:
    """The report's opening and its accuracy, cost and latency tables."""
    name = index.get("scenario", scenario_dir.name)
    seeds = sorted(set(runs["seed"]))
    status = runs["status"].value_counts().to_dict()
    lines = [
        f"# {name}: report",
        "",
        f"Built by `python -m analysis {scenario_dir}` from the result files in this folder.",
        f"{len(runs)} finished run(s): algorithms {', '.join(dict.fromkeys(runs['algorithm']))}; "
        f"seeds {seeds}; rounds {sorted(set(runs['rounds']))}"
        + "".join(f"; {k} in {list(v)}" for k, v in index['sweep'].items() if k != 'seed')
        + f". Status: {', '.join(f'{v} {k}' for k, v in status.items())}. "
        f"{int(runs['retimed'].sum())} of them re-timed from another cell's training "
        f"(same learning trajectory under another network: `retimed_from` in summary.json), "
        + (f"{int((~runs['retimed'] & ~runs['timing_only']).sum())} trained"
           + (f", {int(runs['timing_only'].sum())} timed without training (timing only)"
              if runs["timing_only"].any() else "") + "."),
        "",
        "Tables give mean ± standard deviation over seeds (a single number when one seed). "
        "MB = 10^6 bytes; times are simulated seconds; a target reached by only some seeds "
        "shows how many in brackets.",
        "",
        "## Accuracy and simulated time" if measured else "## Simulated time",
        "",
        *([] if measured else ["Timing-only runs (`timing_only: true`): no training, no "
                               "accuracy.", ""]),
        accuracy_table(runs, keys, targets, with_accuracy=measured),
        "",
        "## Communication and computation",
        "",
        cost_table(runs, keys),
        "",
        "## Round latency" + (" and energy" if np.isfinite(runs["energy_J"]).any() else ""),
        "",
        "The round's simulated time over the rounds of each run (mean, standard deviation, "
        "median, 95th percentile, maximum), then mean ± std of those over seeds"
        + ("; the clients' energy (sending: p x airtime of every attempt; computing: kappa x "
           "FLOPs x (FLOP/s)^2, scala_netsim.books.radio)."
           if np.isfinite(runs["energy_J"]).any() else "."),
        "",
        latency_energy_table(runs, keys),
        "",
    ]
    return lines


def drop_lines(runs: pd.DataFrame, keys: Sequence[str], measured: bool) -> list[str]:
    """The drops and label-bias section (runs whose clients can be dropped)."""
    lines: list[str] = []
    if "dropped_fraction" in runs:
        lines += [
            "## Drops and label bias", "",
            "Clients the network dropped from their round (a deadline, a step deadline at a "
            "barrier, a transfer lost after all its attempts, over-selection), as a share of "
            "the clients selected; label bias: the total variation distance between the label "
            "distribution of the clients aggregated and that of the clients selected, averaged "
            "over the rounds that had a contributor (summary.json `label_bias_tv`).", "",
            drops_table(runs, keys), ""]
        for key in keys:
            if runs[key].nunique() >= 2 and measured:
                lines += [f"What each {key} costs in accuracy against "
                          f"{_fmt_value(runs[key].iloc[0])}, seed by seed:", "",
                          paired_change_table(runs, key, keys), "",
                          f"Which labels each {key} took, and what it cost them (classes 0 "
                          f"to {len(runs['class_losses'].dropna().iloc[0][0]) - 1} in order; a "
                          f"negative correlation: the classes that lost more samples lost "
                          f"more accuracy):", "",
                          class_cost_table(runs, key, keys), ""]
    return lines


#: the instants of the equal-time table, as shares of the runs' common time budget
EQUAL_TIME_SHARES = (1 / 12, 1 / 6, 1 / 4, 1 / 2, 3 / 4, 1)


def equal_time_lines(runs: pd.DataFrame, curves: dict, keys: Sequence[str]) -> list[str]:
    """Accuracy at equal simulated time, when every run had the same time budget
    (`training.time_budget_s`): the question such a study asks (issue 28's)."""
    budgets = runs["time_budget_s"]
    if budgets.isna().any() or budgets.nunique() != 1:
        return []
    budget = float(budgets.iloc[0])
    return [
        "## Accuracy at equal simulated time", "",
        f"Every run stopped at its first version (a round, or an asynchronous server update) "
        f"that reached `training.time_budget_s` = {budget:g} s of simulated time. The best "
        f"test accuracy among the evaluations each run had made by each instant (test "
        f"accuracy is evaluated every `training.eval_every` versions and at the last one); a "
        f"last version that ends after the budget counts only in the accuracy table above.",
        "", equal_time_table(runs, curves, keys, [budget * s for s in EQUAL_TIME_SHARES]), ""]


def asynchronous_lines(runs: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """Whom the asynchronous servers listened to (when some run is asynchronous)."""
    if "staleness_mean" not in runs or not runs["staleness_mean"].notna().any():
        return []
    return [
        "## Asynchronous servers: whom they listened to", "",
        "A version of an asynchronous algorithm is one server update (FedBuff, GAS: a full "
        "buffer); a synchronous algorithm's is a round (no staleness: '-'). Staleness: the "
        "versions made between a client's download and its update's arrival. Updates per "
        "client and their correlation with the client's FLOP/s and channel gain (dB): who the "
        "clock lets the server hear (summary.json). Server label bias: the total variation "
        "distance between the labels of every update the server took (the contributors' "
        "data, rounds.csv `contrib_label_<c>`) and those of the training set; 0 = the server "
        "heard every label in proportion. Worst class: the lowest per-class test accuracy at "
        "the last evaluation, what a label bias costs.", "",
        asynchronous_table(runs, keys), ""]


def privacy_lines(runs: pd.DataFrame, keys: Sequence[str], targets: Sequence[float]) -> list[str]:
    """The model-inversion attack's section (runs that were attacked)."""
    lines: list[str] = []
    if "attack_mse" in runs:
        lines += [
            "## Privacy: the model-inversion attack", "",
            "The attacker (`python -m scala_netsim.attack`) holds the run's final global "
            "client-side model and the first half of the test set, trains a decoder from "
            "activations to images and rebuilds the other half. MSE, SSIM and PSNR on images "
            "in [0, 1], per image and averaged, then over the attack's seeds (attack.json); "
            "here mean ± std over the runs' seeds of those means (the spread over attack "
            "seeds is in comparison.csv, `attack_*_std`). Lower MSE, higher SSIM and PSNR: a "
            "better reconstruction, a weaker defence.", "",
            privacy_table(runs, keys, targets), ""]
    return lines


def key_figure_lines(runs: pd.DataFrame, key: str, keys: Sequence[str],
                     targets: Sequence[float], figures: Path, measured: bool) -> list[str]:
    """The figures of one swept key: its effect, drops and time to accuracy."""
    lines: list[str] = []
    file = f"effect_{short(key)}.png"
    texts = effect_figure(runs, key, keys, figures / file, with_accuracy=measured)
    lines += [f"### Effect of {key}", "",
              ("Accuracy, uplink and downlink" if measured else "Uplink and downlink")
              + " communication per round (a panel each, on one y axis), simulated time per "
              "round and client computation per round.", "", f"![](figures/{file})", ""]
    lines += ([f"- crossover: {t}" for t in texts] or
              ["- no crossover of the time-per-round curves in the swept range"]) + [""]
    if measured and "dropped_fraction" in runs:
        file = f"accuracy_vs_{short(key)}.png"
        drops_figure(runs, key, keys, figures / file)
        lines += [f"### Accuracy, drops and label bias against {key}", "",
                  "Final test accuracy, the share of selected clients dropped and the "
                  "label bias (TV distance) per value.", "", f"![](figures/{file})", ""]
    if measured and pd.api.types.is_numeric_dtype(runs[key]):
        file = f"time_to_accuracy_{short(key)}.png"
        texts = time_to_target_figure(runs, key, keys, targets, figures / file)
        if texts:
            lines += [f"### Time to accuracy against {key}", "",
                      "Simulated time until the test accuracy first reaches each target, "
                      "per algorithm; where two lines cross, which algorithm gets there "
                      "first changes with the key.", "", f"![](figures/{file})", ""]
            lines += [f"- {t}" for t in texts] + [""]
    return lines
