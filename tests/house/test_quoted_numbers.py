"""The numbers the README quotes from a study are the study's comparison table's, rounded as
printed: no figure rounded by hand can drift from the table it describes. The README's
headline table is written from comparison.csv by analysis.headline (mean ± std once seeds 1
and 2 are in: issue 38)."""

import json
import re
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
HEADLINE = ROOT / "docs" / "studies" / "cellular_10pct" / "comparison.csv"
NAMES = {"SCALA": "scala", "SplitFedV1": "splitfed_v1", "SplitFedV2": "splitfed_v2",
         "SFL with local loss": "sfl_local_loss", "FedAvg": "fedavg", "FedProx": "fedprox",
         "FedLC": "fedlc"}


def readme_table() -> list[str]:
    """The README's headline table, its lines."""
    text = README.read_text()
    start = text.index("| algorithm | seeds | end-of-training accuracy |")
    return text[start:].split("\n\n")[0].splitlines()


def seconds(value: float) -> str:
    return f"{value:,.0f} s"


def test_the_readme_headline_table_is_the_one_written_from_comparison_csv():
    from analysis.headline import HEADER, headline_rows

    assert readme_table() == [*HEADER.splitlines(), *headline_rows(pd.read_csv(HEADLINE))]


def test_the_documentation_home_shows_the_readme_headline_table():
    text = (ROOT / "docs" / "index.md").read_text()
    start = text.index("| algorithm | seeds | end-of-training accuracy |")
    assert text[start:].split("\n\n")[0].splitlines() == readme_table()


def test_the_headline_table_over_seeds_gives_mean_std_and_bolds_only_a_separated_leader():
    from analysis.headline import headline_rows, separated_leader

    def runs(algorithm, lates, finals, bests, to80):
        seeds = zip(lates, finals, bests, to80, strict=True)
        return [{"algorithm": algorithm, "seed": k, "late_acc": late, "late_acc_std": 0.01,
                 "best_acc": b, "best_round": 500, "final_acc": f,
                 "total_sim_time_s": 2500.0 + k, "time_to_0.8_s": t, "uplink_bytes": 10.42e9}
                for k, (late, f, b, t) in enumerate(seeds)]
    table = pd.DataFrame(runs("scala", [0.88, 0.87, 0.875], [0.89, 0.88, 0.885],
                              [0.90, 0.89, 0.895], [450.0, 470.0, 460.0])
                         + runs("fedavg", [0.80, 0.81, 0.79], [0.77, 0.78, 0.76],
                                [0.83, 0.84, 0.82], [18000.0, float("nan"), 17000.0]))
    assert separated_leader(table) == "scala"
    scala, fedavg = headline_rows(table)
    assert scala == ("| **SCALA** | 3 | **87.50 ± 0.50 % (87.00-88.00)** | "
                     "**88.50 ± 0.50 % (88.00-89.00)** | **89.50 ± 0.50 % (89.00-90.00)** | "
                     "90.70 % | 2,501 ± 1 s | 460 ± 10 s | 10.42 ± 0.00 GB |")
    assert fedavg.startswith("| FedAvg | 3 | 80.00 ± 1.00 % (79.00-81.00) | "
                             "77.00 ± 1.00 % (76.00-78.00) | 83.00 ± 1.00 % (82.00-84.00) | "
                             "81.72 % |")
    assert "17,500 ± 707 s (2 of 3 seeds)" in fedavg
    # overlapping seeds in every accuracy: nobody in bold
    fed = table["algorithm"] == "fedavg"
    table.loc[fed, "late_acc"] = [0.80, 0.878, 0.79]
    table.loc[fed, "best_acc"] = [0.83, 0.895, 0.82]
    table.loc[fed, "final_acc"] = [0.77, 0.882, 0.76]
    assert separated_leader(table) is None and "**" not in headline_rows(table)[0]
    # the final accuracy separates where the others do not: only that column in bold
    table.loc[fed, "final_acc"] = [0.77, 0.878, 0.76]
    assert separated_leader(table, "final_acc") == "scala"
    assert headline_rows(table)[0].startswith(
        "| SCALA | 3 | 87.50 ± 0.50 % (87.00-88.00) | **88.50 ± 0.50 % (88.00-89.00)** | "
        "89.50 ± 0.50 % (89.00-90.00) |")
    # one seed each: nothing can separate, and a run's own evaluations give its ±
    one = table[table["seed"] == 0]
    assert separated_leader(one) is None
    assert headline_rows(one)[0].startswith(
        "| SCALA | 1 | 88.00 ± 1.00 % (one seed: its evaluations) | 89.00 % | "
        "90.00 % (round 500) |")


def readme_text() -> str:
    return re.sub(r"\s+", " ", README.read_text())


def report_text() -> str:
    return re.sub(r"\s+", " ", (HEADLINE.parent / "report.md").read_text())


def test_the_readme_and_the_report_give_the_findings_written_from_the_table():
    """Who leads by end-of-training accuracy and by how much, whether the seeds separate it,
    the overlap of the best accuracies and every gap to the paper: analysis.headline's
    paragraph from comparison.csv, as written."""
    from analysis.headline import findings

    table = pd.read_csv(HEADLINE)
    text = findings(table)
    assert text in readme_text() and text in report_text()
    late = 100 * table.groupby("algorithm")["late_acc"].mean()
    assert "SCALA leads with 88.28 %" in text and "its worst seed (88.20 %) is above" in text
    assert (f"SCALA leads SplitFedV2 and SFL with local loss by "
            f"{late['scala'] - late['splitfed_v2']:.2f} and "
            f"{late['scala'] - late['sfl_local_loss']:.2f} pp") in readme_text()
    assert (f"{late['scala'] - late['fedavg']:.2f} pp under SCALA's end-of-training "
            f"accuracy") in report_text()


def test_the_readme_paragraph_over_seeds_quotes_the_table():
    """How far each algorithm ends under its best, and the ratio of simulated times: as
    comparison.csv gives them."""
    table = pd.read_csv(HEADLINE)
    by = table.groupby("algorithm")
    drop = 100 * (table["best_acc"] - table["final_acc"])
    scala = table["algorithm"] == "scala"
    others = table["algorithm"].isin(["splitfed_v2", "sfl_local_loss"])
    assert f"within {drop[scala].max():.2f} pp of its best in every seed" in report_text()
    assert f"end up to {drop[others].max():.2f} pp under their best" in report_text()
    times = by["total_sim_time_s"].mean()
    assert (f"FedAvg needs {times['fedavg'] / times['scala']:.1f}x SCALA's simulated time "
            f"(ratio of the seeds' means)") in readme_text()


def test_the_headline_table_is_rebuilt_from_the_run_records_kept_in_git():
    """Findings that survive (issue 38): every row of the headline's comparison.csv comes
    out of its kept run records (docs/studies/cellular_10pct/results) as published, every
    column but the wall time (the machine's) and the folder."""
    from analysis.compare import comparison_table

    kept = HEADLINE.parent / "results"
    rebuilt = comparison_table(kept, [0.6, 0.7, 0.8]).set_index(["algorithm", "seed"])
    published = pd.read_csv(HEADLINE).set_index(["algorithm", "seed"])
    assert set(published.index) <= set(rebuilt.index)
    assert len(published.xs(0, level="seed")) == 7          # every algorithm's seed 0
    columns = [c for c in published.columns if c not in ("wall_time_s", "folder")]
    pd.testing.assert_frame_equal(rebuilt.loc[published.index, columns], published[columns],
                                  check_dtype=False)


def test_the_studies_index_quotes_the_headline_table():
    """docs/studies/index.md's headline paragraph: every accuracy, range, mean and time it
    quotes is the headline comparison.csv's, rounded as printed."""
    index = re.sub(r"\s+", " ", (ROOT / "docs" / "studies" / "index.md").read_text())
    section = index.split("## [alexnet] The headline")[1].split("##")[0]
    table = pd.read_csv(HEADLINE)
    scala0 = table[(table["seed"] == 0) & (table["algorithm"] == "scala")].iloc[0]
    assert (f"SCALA's best test accuracy is **{100 * scala0['best_acc']:.2f} %** (round "
            f"{scala0['best_round']}; final {100 * scala0['final_acc']:.2f} %)") in section
    by = table.groupby("algorithm")
    late = 100 * by["late_acc"].agg(["mean", "std", "min", "max"])
    assert (f"SCALA leads with **{late.loc['scala', 'mean']:.2f} ± "
            f"{late.loc['scala', 'std']:.2f} %** against SplitFedV2's "
            f"{late.loc['splitfed_v2', 'mean']:.2f} ± {late.loc['splitfed_v2', 'std']:.2f} % "
            f"and SFL with local loss's {late.loc['sfl_local_loss', 'mean']:.2f} ± "
            f"{late.loc['sfl_local_loss', 'std']:.2f} %") in section
    assert (f"(SCALA {late.loc['scala', 'min']:.2f}-{late.loc['scala', 'max']:.2f} %, the "
            f"others at most {late['max'].drop('scala').max():.2f} %); FedAvg "
            f"{late.loc['fedavg', 'mean']:.2f} ± {late.loc['fedavg', 'std']:.2f} %, FedProx "
            f"{late.loc['fedprox', 'mean']:.2f} ± {late.loc['fedprox', 'std']:.2f} %, FedLC "
            f"{late.loc['fedlc', 'mean']:.2f} ± {late.loc['fedlc', 'std']:.2f} %, SplitFedV1 "
            f"{late.loc['splitfed_v1', 'mean']:.2f} ± {late.loc['splitfed_v1', 'std']:.2f} %"
            ) in section
    low, high, mean = (100 * by["best_acc"].min(), 100 * by["best_acc"].max(),
                       100 * by["best_acc"].mean())
    for name, algorithm in NAMES.items():
        quoted = (f"{name} {low[algorithm]:.2f}-{high[algorithm]:.2f} %"
                  if by.size()[algorithm] > 1 else f"{name} {high[algorithm]:.2f} %")
        assert quoted in section, name
    assert "(means {:.2f}, {:.2f} and {:.2f} %)".format(
        *mean[["scala", "splitfed_v2", "sfl_local_loss"]]) in section
    finals = 100 * by["final_acc"].agg(["min", "max"])
    assert (f"SCALA is again ahead ({finals.loc['scala', 'min']:.2f}-"
            f"{finals.loc['scala', 'max']:.2f} % against at most "
            f"{finals['max'].drop('scala').max():.2f} % for any other run)") in section
    times = by[["total_sim_time_s", "time_to_0.8_s"]].mean()
    total = times["total_sim_time_s"]
    assert (f"500 rounds take SCALA {seconds(total['scala'])} of simulated time and FedAvg "
            f"{seconds(total['fedavg'])} (means; {total['fedavg'] / total['scala']:.1f}x, ratio "
            f"of the seeds' means)") in section
    assert (f"SCALA reaches 80 % after {seconds(times.loc['scala', 'time_to_0.8_s'])}, FedAvg "
            f"after {seconds(times.loc['fedavg', 'time_to_0.8_s'])}, SFL with local loss first, "
            f"after {seconds(times.loc['sfl_local_loss', 'time_to_0.8_s'])}") in section


def test_the_headline_report_lists_every_run_as_its_records_give_it():
    from analysis.headline import RUNS_HEADER, runs_rows

    report = (HEADLINE.parent / "report.md").read_text()
    rows = runs_rows(pd.read_csv(HEADLINE), HEADLINE.parent / "results")
    assert len(rows) == 21 and "\n".join([RUNS_HEADER, *rows]) in report


def test_the_variants_table_sets_each_variant_beside_the_default_at_its_seeds(tmp_path):
    """Issue 46's reference-code variants of a baseline, kept under variants/<settings>/:
    each against today's default at the same seeds (here a kept run copied as a variant:
    no change), or said to have none."""
    import shutil

    from analysis.headline import VARIANTS_HEADER, variants_rows

    kept = HEADLINE.parent / "results"
    variant = tmp_path / "splitfed_v1.optimizer_state=persistent" / "splitfed_v1" / "seed0"
    shutil.copytree(kept / "splitfed_v1" / "seed0", variant)
    other = tmp_path / "fedlc.optimizer_state=persistent" / "fedlc" / "seed7"
    shutil.copytree(kept / "fedlc" / "seed0", other)
    summary = json.loads((other / "summary.json").read_text())
    (other / "summary.json").write_text(json.dumps({**summary, "seed": 7}))
    table = pd.read_csv(HEADLINE)
    rows = variants_rows(tmp_path, table)
    v1 = table[(table["algorithm"] == "splitfed_v1") & (table["seed"] == 0)].iloc[0]
    lc = table[(table["algorithm"] == "fedlc") & (table["seed"] == 0)].iloc[0]
    assert rows == [
        f"| FedLC | optimizer_state=persistent | 1 | {100 * lc['late_acc']:.2f} % | "
        f"{100 * lc['final_acc']:.2f} % | {100 * lc['best_acc']:.2f} % | "
        "not run at these seeds |  | — |",
        f"| SplitFedV1 | optimizer_state=persistent | 1 | {100 * v1['late_acc']:.2f} % | "
        f"{100 * v1['final_acc']:.2f} % | {100 * v1['best_acc']:.2f} % | "
        f"{100 * v1['late_acc']:.2f} % | +0.00 pp | 85.44 % |"]
    assert VARIANTS_HEADER.count("|---") == rows[0].count(" | ") + 1


def test_the_headline_report_gives_every_kept_variant_as_its_records_give_it():
    from analysis.headline import VARIANTS_HEADER, variants_rows

    report = (HEADLINE.parent / "report.md").read_text()
    rows = variants_rows(HEADLINE.parent / "variants", pd.read_csv(HEADLINE))
    assert rows and "\n".join([VARIANTS_HEADER, *rows]) in report
