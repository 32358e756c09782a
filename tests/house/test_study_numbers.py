"""The numbers the studies index and the README quote from the `alexnet` reruns of the
deadlines, compression and split-point studies (issue 38) are their comparison tables',
rebuilt from the run records kept in git and rounded as printed."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "docs" / "studies"


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def section(title: str) -> str:
    index = flat((STUDIES / "index.md").read_text())
    return index.split(f"## {title}")[1].split(" ## ")[0]


def table(study: str) -> pd.DataFrame:
    return pd.read_csv(STUDIES / study / "results" / "comparison.csv")


def pct(value: float) -> str:
    return f"{100 * value:.2f} %"


def test_the_kept_tables_are_the_ones_the_records_give():
    from analysis.compare import comparison_table

    for study, targets in [("deadlines", [0.6, 0.7, 0.8]), ("compression", [0.6, 0.7, 0.8]),
                           ("split_points", [0.6, 0.7, 0.8])]:
        rebuilt = comparison_table(STUDIES / study / "results", targets)
        kept = table(study)
        assert len(rebuilt) == len(kept), study
        columns = [c for c in kept.columns if c not in ("wall_time_s", "folder")]
        pd.testing.assert_frame_equal(rebuilt[columns].reset_index(drop=True),
                                      kept[columns].reset_index(drop=True), check_dtype=False)


def test_compression_quotes():
    runs = table("compression")
    scala = runs[runs["algorithm"] == "scala"].groupby("codec")
    up = scala["uplink_bytes"].mean() / scala["rounds"].mean() / 1e6
    best, to80 = scala["best_acc"].mean(), scala["time_to_0.8_s"].mean()
    late = scala["late_acc"].mean()
    text = section("[alexnet] Cut-layer compression")
    assert (f"{pct(late['none'])} none, {pct(late['fp16'])} fp16, {pct(late['int8'])} int8, "
            f"means over the seeds") in text
    assert f"fp16 halves the uplink ({up['fp16']:.2f} MB)" in text
    assert f"int8 cuts it by {100 * (1 - up['int8'] / up['none']):.0f} % ({up['int8']:.2f} MB)" \
        in text
    assert (f"best of the evaluations {pct(best['none'])} none, {pct(best['fp16'])} fp16, "
            f"{pct(best['int8'])} int8") in text
    assert (f"after {to80['none']:.0f} s uncompressed, {to80['fp16']:.0f} s with fp16 and "
            f"{to80['int8']:.0f} s with int8 (-{100 * (1 - to80['int8'] / to80['none']):.0f} %)"
            ) in text
    paired = runs[runs["algorithm"] == "scala"].pivot(index="seed", columns="codec",
                                                     values="late_acc")
    loss = sorted(100 * (paired["none"] - paired["topk10"]))
    assert f"loses {loss[0]:.1f} and {loss[1]:.1f} pp of end-of-training accuracy" in text
    readme = flat((ROOT / "README.md").read_text())
    assert (f"cut SCALA's uplink by {100 * (1 - up['fp16'] / up['none']):.0f} % and "
            f"{100 * (1 - up['int8'] / up['none']):.0f} %") in readme


def test_split_point_quotes():
    runs = table("split_points")
    by = runs.groupby("model.split")
    best, late = by["best_acc"].mean(), by["late_acc"].mean()
    text = section("[alexnet] Split points")
    assert (f"{pct(late['S1'])} at S1, {pct(late['S2'])} at S2, {pct(late['S3'])} at S3, "
            f"{pct(late['S4'])} at S4, {pct(late['S5'])} at S5, the means over seeds; best of "
            f"the evaluations " + " / ".join(f"{100 * best[s]:.2f}" for s in best.index)
            + " %") in text
    for seed, runs_of_seed in runs.groupby("seed"):   # "in every seed"
        for column in ("late_acc", "best_acc"):
            ordered = runs_of_seed.sort_values("model.split")[column]
            assert ordered.is_monotonic_decreasing, (seed, column)
    to80 = by["time_to_0.8_s"].mean()
    assert f"S1 reaches 80 % first ({to80['S1']:.0f} s against S2's {to80['S2']:.0f} s)" in text
    assert by["time_to_0.8_s"].count()["S5"] == 0
    round_s = by["total_sim_time_s"].mean() / by["rounds"].mean()
    assert f"shortest round ({round_s['S2']:.2f} s)" in text
    assert round_s.idxmin() == "S2"


def test_deadline_quotes():
    runs = table("deadlines")
    late = runs.pivot_table(index=["algorithm", "seed"], columns="deadline", values="late_acc")
    delta = (100 * (late["moderate"] - late["none"])).groupby("algorithm")
    text = section("[alexnet] Deadlines")
    for algorithm in ("scala", "ca_sfl", "fedavg", "fedlc"):
        mean, std = delta.mean()[algorithm], delta.std()[algorithm]
        assert f"{mean:+.2f} ± {std:.2f} pp for" in text, algorithm
    assert (delta.max()["scala"] < 0 and delta.min()["ca_sfl"] > 0
            and delta.max()["fedlc"] < 0)          # "every seed lost / gained"
    by = runs.groupby(["algorithm", "deadline"])
    to80 = by["time_to_0.8_s"].mean()
    assert (f"80 % after {to80['scala', 'moderate']:,.0f} s instead of "
            f"{to80['scala', 'none']:,.0f} s") in text
    best, late = by["best_acc"].mean(), by["late_acc"].mean()
    assert (f"end-of-training {pct(late['scala', 'moderate'])} against CA-SFL's "
            f"{pct(late['ca_sfl', 'moderate'])}, means over seeds; best of the evaluations "
            f"{pct(best['scala', 'moderate'])} against {pct(best['ca_sfl', 'moderate'])}") in text


@pytest.mark.parametrize("study", ["deadlines", "compression", "split_points"])
def test_each_report_names_its_alexnet_records(study):
    report = (STUDIES / study / "report.md").read_text()
    assert report.index("## [alexnet]") < report.index("## [alexnet14]")
    assert "(results/report.md)" in report


# --- every accuracy the index and the README quote ---------------------------------------
#: quoted accuracies no kept table holds, each with where it comes from
NOT_IN_A_TABLE = {
    "90.70": "the SCALA paper's Fashion-MNIST result",
    "90.66": "the GAS paper's Table 1", "90.58": "the GAS paper's Table 1",
    "88.32": "the GAS paper's Table 1", "89.07": "the GAS paper's Table 1",
    "87.99": "the GAS paper's Table 1", "88.74": "the GAS paper's Table 1",
    "88.56": "SCALA by 3,600 s in the earlier, lost asynchronous run",
    "85.68": "local iterations: best by 1,000 s, read off the lost curves",
    "84.74": "alexnet14 bandwidth: accuracy at round 100, read off the lost curves",
    "74.87": "alexnet14 bandwidth: FedAvg's best, read off the lost curves",
    "70.65": "alexnet14 bandwidth: read off the lost curves",
}
#: the README's finding bullets, by their title, and the studies they quote
README_STUDIES = {"[alexnet] Headline": ["cellular_10pct"], "[alexnet] Bandwidth": ["bandwidth"],
                  "[alexnet] Local iterations": ["local_iters"],
                  "[alexnet] Asynchronous": ["async"],
                  "[alexnet] Fading and allocation": ["fading", "allocation"],
                  "[alexnet] A network of cells": ["network"],
                  "[alexnet] The network composed": ["network_composed"],
                  "[alexnet14] Fading": ["fading"], "[alexnet14] Allocation": ["allocation"],
                  "[alexnet] Deadlines": ["deadlines"], "[alexnet] Compression": ["compression"],
                  "[alexnet] Split points": ["split_points"], "[vgg11] Privacy": ["privacy"],
                  "[resnet18] Split points": ["split_points_resnet"]}


def accuracies(study: str, alexnet: bool) -> set[str]:
    """Every accuracy a reader can find for `study`, as printed (two decimals, in %): each
    run's, and the mean, min, max and std of each setting's seeds, from the comparison table
    (the kept records' for an `alexnet` finding where they exist), every accuracy column of
    the tables beside its report (deadline.csv: a seed's deadline case against its own
    training), and every number in the tables of its reports (generated from the run
    folders, some of them lost)."""
    kept = STUDIES / study / "results" / "comparison.csv"
    runs = pd.read_csv(kept if alexnet and kept.is_file() else STUDIES / study / "comparison.csv")
    keys = [c for c in runs.columns if not pd.api.types.is_numeric_dtype(runs[c])
            and c not in ("status", "folder")] or ["algorithm"]
    found = set()
    for column in [c for c in runs.columns if c.endswith("_acc") or c.startswith("acc_")]:
        values = pd.to_numeric(runs[column], errors="coerce")
        by = runs.assign(**{column: values}).groupby(keys, dropna=False)[column]
        for series in (values, by.mean(), by.min(), by.max(), by.std(ddof=1), by.std(ddof=0)):
            found |= {f"{100 * v:.2f}" for v in series.dropna()}
    for table in (STUDIES / study).glob("*.csv"):   # the report's own tables (deadline.csv)
        beside = pd.read_csv(table)
        for column in [c for c in beside.columns if c.endswith("_acc")]:
            found |= {f"{100 * v:.2f}" for v in pd.to_numeric(beside[column],
                                                               errors="coerce").dropna()}
    for report in (STUDIES / study / "report.md", STUDIES / study / "results" / "report.md"):
        if report.is_file():
            for line in report.read_text().splitlines():
                if line.startswith("|"):
                    found |= set(re.findall(r"\d+\.\d{2}", line))
    return found


def quoted_accuracies(text: str) -> list[str]:
    return re.findall(r"(?<![\d.])(\d{1,3}\.\d{2}) ?%", text)


def test_every_accuracy_the_studies_index_quotes_is_in_its_studys_tables():
    index = flat((STUDIES / "index.md").read_text())
    checked = 0
    for part in index.split(" ## ")[2:]:          # the findings, after "About the figures"
        link = re.search(r"\(([a-z_0-9]+)/report\.md\)|`docs/studies/([a-z_0-9]+)/report\.md`",
                         part)
        assert link, part[:60]
        found = accuracies(link.group(1) or link.group(2), part.startswith("[alexnet]"))
        missing = [q for q in quoted_accuracies(part) if q not in found | set(NOT_IN_A_TABLE)]
        assert not missing, (part[:60], missing)
        checked += len(quoted_accuracies(part))
    assert checked > 40


def test_every_accuracy_the_readme_findings_quote_is_in_their_studies_tables():
    readme = (ROOT / "README.md").read_text()
    findings = readme.split("## What the studies found")[1].split("\n## ")[0]
    bullets = ["- " + b for b in findings.split("\n- ")[1:]]
    assert len(bullets) == len(README_STUDIES)
    for bullet in bullets:
        title = re.match(r"- \*\*(.+?)\*\*", bullet).group(1)
        found = set(NOT_IN_A_TABLE).union(*(accuracies(s, title.startswith("[alexnet]"))
                                             for s in README_STUDIES[title]))
        missing = [q for q in quoted_accuracies(flat(bullet)) if q not in found]
        assert not missing, (title, missing)


def test_the_kept_run_records_stay_inside_their_budget():
    """Issue 46: every study's run records together under 120 MB (10^6 bytes; issue 38's
    budget was 150): re-timed and timing-only runs are kept slim
    (tests/tools/test_regenerate.py)."""
    runs = [p for p in STUDIES.rglob("summary.json") if p.parent.name.startswith("seed")]
    size = sum(f.stat().st_size for run in runs for f in run.parent.iterdir())
    assert len(runs) >= 100 and size < 120e6, (len(runs), size / 1e6)


def test_every_kept_run_digests_every_table_it_holds():
    """Issue 61: summary.json's files_sha256 names every record table a kept run holds (96
    trained runs kept before clients.csv was digested had none for it), and the digests of
    the small tables (clients.csv, cells.csv) hold for the kept copies."""
    from scala_netsim.core.files import CELLS_CSV, CLIENTS_CSV, DIGESTED_FILES, run_file
    from scala_netsim.core.results import file_sha256

    undigested, wrong = [], []
    for summary_path in sorted(STUDIES.rglob("summary.json")):
        digests = json.loads(summary_path.read_text()).get("files_sha256", {})
        for name in DIGESTED_FILES:
            path = run_file(summary_path.parent, name)
            if not path.is_file():
                continue
            if name not in digests:
                undigested.append(str(path.relative_to(STUDIES)))
            elif name in (CLIENTS_CSV, CELLS_CSV) and file_sha256(path) != digests[name]:
                wrong.append(str(path.relative_to(STUDIES)))
    assert (undigested, wrong) == ([], [])


def kept_sizes_table() -> str:
    """docs/results.md's table of what each study's kept run records take (issue 61: the
    sizes it quoted went stale): runs and MB (10^6 bytes) per study, then all together."""
    rows, runs_in_all, bytes_in_all = [], 0, 0
    for study in sorted(p for p in STUDIES.iterdir() if p.is_dir()):
        runs = [p.parent for p in study.rglob("summary.json") if p.parent.name.startswith("seed")]
        if runs:
            size = sum(f.stat().st_size for run in runs for f in run.iterdir())
            rows.append(f"| {study.name} | {len(runs)} | {size / 1e6:.2f} |")
            runs_in_all, bytes_in_all = runs_in_all + len(runs), bytes_in_all + size
    return "\n".join(["| study | runs kept | MB |", "|---|---|---|", *rows,
                      f"| all | {runs_in_all} | {bytes_in_all / 1e6:.2f} |"])


def test_the_sizes_the_docs_quote_are_the_kept_records():
    assert kept_sizes_table() in (ROOT / "docs" / "results.md").read_text()
    headline = [p.parent for p in (STUDIES / "cellular_10pct" / "results").rglob("summary.json")]
    size = sum(f.stat().st_size for run in headline for f in run.iterdir())
    assert (f"`docs/studies/cellular_10pct/results/` ({size / 1e6:.1f} MB:"
            in (STUDIES / "cellular_10pct" / "report.md").read_text())
