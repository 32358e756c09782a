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


def test_the_report_is_the_one_written_from_its_tables():
    assert (STUDY / "report.md").read_text() == nr.report(*tables())


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
