"""The operator study's report and table come from its kept run records (issue 63):
analysis.operator writes them again, to the byte, from the kept comparison.csv and each kept
run's rounds.csv; a folder that is not the study's is refused, exit 2, before anything is
written."""

from pathlib import Path

import pandas as pd

from analysis import operator

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "operator"


def test_the_report_and_its_table_are_the_ones_written_from_the_kept_runs(tmp_path):
    assert operator.main([str(STUDY / "results"), "--out", str(tmp_path)]) == 0
    for name in ("report.md", "times.csv"):
        assert (tmp_path / name).read_text() == (STUDY / name).read_text(), name


def test_the_answers_read_the_table_and_the_carried_loads():
    table = pd.read_csv(STUDY / "times.csv")
    answer = operator.frames_answer(table)
    scala = table[(table["algorithm"] == "scala")].set_index("case")["time_to_0.8_s"]
    assert f"{scala['dddsu']:,.0f} s under DDDSU" in answer
    carried = pd.read_csv(STUDY / "results" / "carried.csv")
    loads = operator.loads_answer(table, carried)
    assert f"SCALA {scala['load_70'] / scala['dddsu']:.2f}x" in loads
    up = carried.set_index(["offered_load", "direction"])["carried_load"][(0.3, "uplink")]
    assert f"offered 0.3 (carried {up:.3f} up" in loads
    # the check with every file leads, where the study kept it
    rounds = pd.read_csv(STUDY / "results" / "rounds_files.csv")
    checked = operator.loads_answer(table, carried, rounds)
    first = rounds.groupby(["offered_load", "model"])["round_time_s"].sum()
    assert checked.startswith("2. With every file, on the study's own network")
    assert f"offered 0.5: {first[(0.5, 'files')] / first[(0.0, 'none')]:.3f}x with every file" in (
        checked)
    # without the carried loads the load cases are not answered
    assert "2. Not answered" in operator.loads_answer(table)
    frames_only = table[table["case"].isin(list(operator.FRAMES))]
    assert "2. Not answered yet" in operator.loads_answer(frames_only, carried)


def test_another_studys_folder_is_refused_and_nothing_written(tmp_path, capsys):
    other = ROOT / "docs" / "studies" / "nr" / "results"
    assert operator.main([str(other), "--out", str(tmp_path / "out")]) == 2
    assert "not the operator study's results: it needs scala and fedavg in cases" in (
        capsys.readouterr().err)
    assert not (tmp_path / "out").exists()
