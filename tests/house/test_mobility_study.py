"""The mobility study's report and tables come from its kept run records (issue 64):
analysis.mobility writes them again, to the byte, from the kept comparison.csv, each kept
run's rounds.csv and the handover numbers its full records gave (results/handovers.csv); a
folder that is not the study's is refused, exit 2, before anything is written."""

from pathlib import Path

import pandas as pd

from analysis import mobility

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "mobility"


def test_the_report_and_its_table_are_the_ones_written_from_the_kept_runs(tmp_path):
    assert mobility.main([str(STUDY / "results"), "--out", str(tmp_path)]) == 0
    for name in ("report.md", "times.csv"):
        assert (tmp_path / name).read_text() == (STUDY / name).read_text(), name


def test_the_answers_read_the_tables():
    table = pd.read_csv(STUDY / "times.csv")
    handovers = pd.read_csv(STUDY / "results" / "handovers.csv")
    lines = mobility.answers(table, handovers)
    fast = [line for line in lines if line.startswith("- **30 % of outdoor clients in vehicles "
                                                       "at 120 km/h**")]
    scala = table[(table["algorithm"] == "scala") & (table["case"] == "vehicles_120")]
    assert f"time to 80 % {scala['time_to_0.8_s'].iloc[0]:,.0f} s" in fast[0]
    mean = handovers[(handovers["algorithm"] == "fedavg")
                     & (handovers["case"] == "vehicles_120")]["per_client_hour"].mean()
    assert f"FedAvg: {mean:.1f} handovers a selected client-hour" in fast[0]
    assert lines[-1].startswith("- **Which loses more.**")


def test_another_studys_folder_is_refused_before_anything_is_written(tmp_path, capsys):
    other = ROOT / "docs" / "studies" / "operator" / "results"
    assert mobility.main([str(other), "--out", str(tmp_path / "out")]) == 2
    assert "not the mobility study's results" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
