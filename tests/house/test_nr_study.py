"""The NR study's report and tables come from its kept run records (issue 49): report.md is
the one analysis.nr writes from the tables beside it, times.csv the one it writes from the
kept comparison.csv, and a run regenerated from its slim record gives its rows of the other
two tables."""

from pathlib import Path

import pandas as pd
import pytest

from analysis import nr

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "nr"


def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return (pd.read_csv(STUDY / "results" / "comparison.csv"),
            *(pd.read_csv(STUDY / f"{name}.csv") for name in ("times", "time_split", "clients")))


def frames() -> pd.DataFrame | None:
    """The TDD frame's sensitivity table, where the study kept it (issue 61)."""
    path = STUDY / "tdd_patterns.csv"
    return pd.read_csv(path) if path.is_file() else None


def test_the_report_is_the_one_written_from_its_tables():
    assert (STUDY / "report.md").read_text() == nr.report(*tables(), frames())


def test_the_tdd_frames_table_is_the_one_written_from_its_kept_comparison():
    kept = STUDY / "results_patterns" / "comparison.csv"
    if not kept.is_file():
        pytest.skip("the TDD frame's runs are not kept")
    _, times, _, _ = tables()
    pd.testing.assert_frame_equal(nr.patterns(pd.read_csv(kept), times), frames(),
                                  check_exact=False, rtol=1e-12)
    report = (STUDY / "report.md").read_text()
    assert "depend on the pattern and the carrier" in report


def test_the_fedavg_it_re_times_is_the_headlines_own():
    """Issue 61: every FedAvg run of the study is re-timed from the headline's FedAvg (its
    optimiser state kept, as cellular_10pct.yaml trains it), not the per-round variant."""
    import json

    sources = {json.loads(p.read_text())["retimed_from"].split("cellular_10pct/")[1]
               for p in (STUDY / "results" / "fedavg").rglob("summary.json")}
    assert sources == {f"results/fedavg/seed{s}" for s in range(3)}


def test_times_are_the_ones_written_from_the_kept_comparison():
    comparison, times, _, _ = tables()
    pd.testing.assert_frame_equal(nr.times(comparison), times, check_exact=False, rtol=1e-12)
    assert set(times["case"]) == set(nr.CASES) and (times["seeds"] == 3).all()


@pytest.mark.slow
def test_a_regenerated_run_gives_its_rows_of_the_split_and_client_tables(tmp_path):
    """FedAvg under all three (TDD, NR, round robin) at seed 0, regenerated from its kept slim
    record (python -m scala_netsim.tools.regenerate): its round's time split and its clients'
    rows as kept."""
    pytest.importorskip("sionna.sys", reason="the NR case reads Sionna's tables")
    from scala_netsim.tools.regenerate import regenerate_run

    _, _, split, clients = tables()
    run = tmp_path / "run"
    regenerate_run(STUDY / "results" / "fedavg" / "case=all_three" / "seed0", run)
    kept = split[(split["algorithm"] == "fedavg") & (split["case"] == "all_three")
                 & (split["seed"] == 0)].drop(columns=["algorithm", "case", "seed"])
    assert nr.time_split(run) == pytest.approx(kept.iloc[0].to_dict(), rel=1e-12)
    mine = clients[(clients["algorithm"] == "fedavg") & (clients["case"] == "all_three")
                   & (clients["seed"] == 0)].drop(columns=["algorithm", "case", "seed"])
    pd.testing.assert_frame_equal(nr.clients(run), mine.reset_index(drop=True),
                                  check_exact=False, rtol=1e-12)


def test_another_studys_results_are_refused_before_anything_is_written(tmp_path, capsys):
    """Issue 61 (2): a study whose cases are not the NR study's raised KeyError after
    writing three tables; it is refused first, exit 2, naming the cases it needs and found."""
    results = tmp_path / "results"
    rows = []
    for algorithm in ("scala", "fedavg"):
        for case in ("fast", "slow"):
            (results / algorithm / f"case={case}" / "seed0").mkdir(parents=True)
            rows.append({"algorithm": algorithm, "case": case, "seed": 0})
    pd.DataFrame(rows).to_csv(results / "comparison.csv", index=False)
    out = tmp_path / "report"
    assert nr.main([str(results), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {results}: python -m analysis.nr writes the NR study's report "
        f"(scenarios/nr.yaml): it needs runs of scala and fedavg in each of the study's cases "
        f"(its sweep entry case): today, tdd, nr, round_robin, all_three; found cases fast, "
        f"slow of fedavg, scala; nothing was written\n")
    assert not out.exists()
    # a folder of no sweep over cases at all; the study's runs without comparison.csv
    assert nr.main([str(tmp_path / "nothing"), "--out", str(out)]) == 2
    assert ("; found no run under <algorithm>/case=<name>/seed<k>/; nothing was written\n"
            in capsys.readouterr().err)
    nr_study = tmp_path / "nr"
    for algorithm in ("scala", "fedavg"):
        for case in nr.CASES:
            (nr_study / algorithm / f"case={case}" / "seed0").mkdir(parents=True)
    assert nr.main([str(nr_study), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {nr_study}: no comparison.csv (the study's run writes it; python -m "
        f"analysis.nr reads the NR study's results folder, OUT/nr); nothing was written\n")
    assert not out.exists()


def test_patterns_that_are_not_the_tdd_frames_runs_are_refused_before_anything_is_written(
        tmp_path, capsys):
    """--patterns is checked with the study's folder: a folder without the frame's cases (or
    without comparison.csv) is refused, exit 2, nothing written (it raised KeyError after
    writing four tables)."""
    patterns = tmp_path / "patterns"
    patterns.mkdir()
    pd.DataFrame([{"algorithm": "scala", "case": "tdd_40mhz", "seed": 0}]).to_csv(
        patterns / "comparison.csv", index=False)
    out = tmp_path / "report"
    for folder in (patterns, tmp_path / "nothing"):
        assert nr.main([str(STUDY / "results"), "--out", str(out),
                        "--patterns", str(folder)]) == 2
        assert not out.exists()
    err = capsys.readouterr().err
    assert "found scala tdd_40mhz; nothing was written" in err
    assert "found no comparison.csv; nothing was written" in err
