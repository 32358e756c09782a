"""The numbers the README quotes from a study are the study's comparison table's, rounded as
printed: no figure rounded by hand can drift from the table it describes. The README's
headline table is written from comparison.csv by analysis.headline (mean ± std once seeds 1
and 2 are in: issue 38)."""

import re
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
HEADLINE = ROOT / "docs" / "studies" / "cellular_10pct" / "comparison.csv"
NAMES = {"SCALA": "scala", "SplitFedV1": "splitfed_v1", "SplitFedV2": "splitfed_v2",
         "SFL with local loss": "sfl_local_loss", "FedAvg": "fedavg", "FedProx": "fedprox",
         "FedLC": "fedlc"}
PAPER_SCALA = 90.70   # the conference paper's SCALA on Fashion-MNIST, alpha = 2


def readme_table() -> list[str]:
    """The README's headline table, its lines (the paper's row left out: it is quoted)."""
    text = README.read_text()
    start = text.index("| algorithm | seeds | best test accuracy |")
    lines = text[start:].split("\n\n")[0].splitlines()
    return [line for line in lines if "the paper" not in line]


def seconds(value: float) -> str:
    return f"{value:,.0f} s"


def test_the_readme_headline_table_is_the_one_written_from_comparison_csv():
    from analysis.headline import HEADER, headline_rows

    assert readme_table() == [*HEADER.splitlines(), *headline_rows(pd.read_csv(HEADLINE))]


def test_the_headline_table_over_seeds_gives_mean_std_and_bolds_only_a_separated_leader():
    from analysis.headline import headline_rows, separated_leader

    def runs(algorithm, bests, finals, to80):
        seeds = zip(bests, finals, to80, strict=True)
        return [{"algorithm": algorithm, "seed": k, "best_acc": b, "best_round": 500,
                 "final_acc": f, "total_sim_time_s": 2500.0 + k, "time_to_0.8_s": t,
                 "uplink_bytes": 10.42e9} for k, (b, f, t) in enumerate(seeds)]
    table = pd.DataFrame(runs("scala", [0.90, 0.89, 0.895], [0.89, 0.88, 0.885],
                              [450.0, 470.0, 460.0])
                         + runs("fedavg", [0.83, 0.84, 0.82], [0.77, 0.78, 0.76],
                                [18000.0, float("nan"), 17000.0]))
    assert separated_leader(table) == "scala"
    scala, fedavg = headline_rows(table)
    assert scala == ("| **SCALA** | 3 | **89.50 ± 0.50 % (89.00-90.00)** | "
                     "**88.50 ± 0.50 % (88.00-89.00)** | 2,501 ± 1 s | 460 ± 10 s | "
                     "10.42 ± 0.00 GB |")
    assert fedavg.startswith("| FedAvg | 3 | 83.00 ± 1.00 % (82.00-84.00) |")
    assert "17,500 ± 707 s (2 of 3 seeds)" in fedavg
    # overlapping seeds: nobody in bold
    table.loc[table["algorithm"] == "fedavg", "best_acc"] = [0.83, 0.895, 0.82]
    table.loc[table["algorithm"] == "fedavg", "final_acc"] = [0.77, 0.882, 0.76]
    assert separated_leader(table) is None and "**" not in headline_rows(table)[0]
    # the final accuracy separates where the best does not: only that column in bold
    table.loc[table["algorithm"] == "fedavg", "final_acc"] = [0.77, 0.878, 0.76]
    assert separated_leader(table, "final_acc") == "scala"
    assert headline_rows(table)[0].startswith("| SCALA | 3 | 89.50 ± 0.50 % (89.00-90.00) | "
                                              "**88.50 ± 0.50 % (88.00-89.00)** |")
    # one seed each: nothing can separate
    assert separated_leader(table[table["seed"] == 0]) is None


def readme_text() -> str:
    return re.sub(r"\s+", " ", README.read_text())


def test_the_readme_says_how_far_scala_is_from_the_paper():
    table = pd.read_csv(HEADLINE)
    scala = table[table["algorithm"] == "scala"].set_index("seed")
    gap = PAPER_SCALA - round(100 * scala["best_acc"].mean(), 2)
    gap0 = PAPER_SCALA - round(100 * scala.loc[0, "best_acc"], 2)
    assert (f"SCALA's best is {gap:.2f} pp under the paper's {PAPER_SCALA:.2f} % on the mean "
            f"of three seeds ({gap0:.2f} pp at seed 0") in readme_text()


def test_the_readme_paragraph_over_seeds_quotes_the_table():
    """The ranges of the best accuracies that overlap, how far each algorithm ends under its
    best, and the ratio of simulated times: as comparison.csv gives them."""
    table = pd.read_csv(HEADLINE)
    by = table.groupby("algorithm")
    best = 100 * by["best_acc"].agg(["min", "max"])
    ranges = ", ".join(f"{best.loc[a, 'min']:.2f}-{best.loc[a, 'max']:.2f}"
                       for a in ("scala", "splitfed_v2"))
    assert (f"({ranges} and {best.loc['sfl_local_loss', 'min']:.2f}-"
            f"{best.loc['sfl_local_loss', 'max']:.2f} %): none is the most accurate") \
        in readme_text()
    drop = 100 * (table["best_acc"] - table["final_acc"])
    scala = table["algorithm"] == "scala"
    others = table["algorithm"].isin(["splitfed_v2", "sfl_local_loss"])
    assert f"within {drop[scala].max():.2f} pp of its best in every seed" in readme_text()
    assert f"end up to {drop[others].max():.2f} pp under theirs" in readme_text()
    times = by["total_sim_time_s"].mean()
    assert f"FedAvg needs {times['fedavg'] / times['scala']:.1f}x SCALA's simulated time" \
        in readme_text()


def test_the_headline_report_states_the_lead_over_the_next_best():
    table = pd.read_csv(HEADLINE).groupby("algorithm")["best_acc"].mean().sort_values()
    lead = round(100 * (table.iloc[-1] - table.iloc[-2]), 2)
    report = (ROOT / "docs" / "studies" / "cellular_10pct" / "report.md").read_text()
    assert f"by {lead:.2f} pp over the next best" in re.sub(r"\s+", " ", report)


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
    low, high, mean = (100 * by["best_acc"].min(), 100 * by["best_acc"].max(),
                       100 * by["best_acc"].mean())
    for name, algorithm in NAMES.items():
        quoted = (f"{name} {low[algorithm]:.2f}-{high[algorithm]:.2f} %"
                  if by.size()[algorithm] > 1 else f"{name} {high[algorithm]:.2f} %")
        assert quoted in section, name
    assert "(means {:.2f}, {:.2f} and {:.2f} %)".format(
        *mean[["scala", "splitfed_v2", "sfl_local_loss"]]) in section
    finals = 100 * by["final_acc"].agg(["min", "max"])
    assert (f"SCALA is ({finals.loc['scala', 'min']:.2f}-{finals.loc['scala', 'max']:.2f} % "
            f"against at most {finals['max'].drop('scala').max():.2f} % for any other run)") \
        in section
    times = by[["total_sim_time_s", "time_to_0.8_s"]].mean()
    total = times["total_sim_time_s"]
    assert (f"500 rounds take SCALA {seconds(total['scala'])} of simulated time and FedAvg "
            f"{seconds(total['fedavg'])} (means; {total['fedavg'] / total['scala']:.1f}x)") \
        in section
    assert (f"SCALA reaches 80 % after {seconds(times.loc['scala', 'time_to_0.8_s'])}, FedAvg "
            f"after {seconds(times.loc['fedavg', 'time_to_0.8_s'])}, SFL with local loss first, "
            f"after {seconds(times.loc['sfl_local_loss', 'time_to_0.8_s'])}") in section


def test_the_headline_report_lists_every_run_as_its_records_give_it():
    from analysis.headline import RUNS_HEADER, runs_rows

    report = (HEADLINE.parent / "report.md").read_text()
    rows = runs_rows(pd.read_csv(HEADLINE), HEADLINE.parent / "results")
    assert len(rows) == 15 and "\n".join([RUNS_HEADER, *rows]) in report
