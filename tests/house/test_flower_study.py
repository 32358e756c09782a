"""The Flower study's report and tables come from its kept run records (issue 65):
analysis.flower writes them again, to the byte, from the kept comparison.csv, each kept run's
rounds.csv and the kept SCALA and FedAvg runs it is set against."""

from pathlib import Path

from analysis import flower

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "flower"


def test_the_report_and_its_tables_are_the_ones_written_from_the_kept_runs(tmp_path):
    flower.main([str(STUDY / "results"), "--out", str(tmp_path), "--root", str(ROOT)])
    for name in ("report.md", "flower.csv", "fedavg_agreement.csv"):
        assert (tmp_path / name).read_text() == (STUDY / name).read_text(), name
