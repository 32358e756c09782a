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
    assert scala == ("| **SCALA** | 3 | **89.50 ± 0.50 % (89.00-90.00)** | 88.50 ± 0.50 % | "
                     "2,501 ± 1 s | 460 ± 10 s | 10.42 ± 0.00 GB |")
    assert fedavg.startswith("| FedAvg | 3 | 83.00 ± 1.00 % (82.00-84.00) |")
    assert "17,500 ± 707 s (2 of 3 seeds)" in fedavg
    # overlapping seeds: nobody in bold
    table.loc[table["algorithm"] == "fedavg", "best_acc"] = [0.83, 0.895, 0.82]
    assert separated_leader(table) is None and "**" not in headline_rows(table)[0]
    # one seed each: nothing can separate
    assert separated_leader(table[table["seed"] == 0]) is None


def test_the_readme_says_how_far_scala_is_from_the_paper():
    scala = pd.read_csv(HEADLINE).set_index("algorithm").loc["scala"]
    gap = PAPER_SCALA - round(100 * scala["best_acc"], 2)
    assert f"SCALA's best is {gap:.2f} pp under the paper's {PAPER_SCALA:.2f} %" in \
        re.sub(r"\s+", " ", README.read_text())


def test_the_headline_report_states_the_lead_over_the_next_best():
    table = pd.read_csv(HEADLINE).set_index("algorithm")["best_acc"].sort_values()
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
    """docs/studies/index.md's headline paragraph: every accuracy, round and time it quotes
    is the headline comparison.csv's (seed 0), rounded as printed."""
    index = re.sub(r"\s+", " ", (ROOT / "docs" / "studies" / "index.md").read_text())
    section = index.split("## [alexnet] The headline")[1].split("##")[0]
    table = pd.read_csv(HEADLINE)
    seed0 = table[table["seed"] == 0].set_index("algorithm")
    scala = seed0.loc["scala"]
    assert (f"SCALA's best test accuracy is **{100 * scala['best_acc']:.2f} %** (round "
            f"{scala['best_round']}; final {100 * scala['final_acc']:.2f} %)") in section
    for name, algorithm in NAMES.items():
        if algorithm != "scala":
            assert f"{name} {100 * seed0.loc[algorithm, 'best_acc']:.2f} %" in section, name
    assert f"500 rounds take SCALA {seconds(scala['total_sim_time_s'])}" in section
    fl = seed0.loc["fedavg"]
    assert f"the FL family {seconds(fl['total_sim_time_s'])}" in section
    assert (f"SCALA reaches 80 % after {seconds(scala['time_to_0.8_s'])}, FedAvg after "
            f"{seconds(fl['time_to_0.8_s'])}") in section
