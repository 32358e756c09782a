"""The composed network study's report and table come from its kept run records (issue 50):
fading.csv is the one analysis.composed writes from the kept comparison.csv, report.md the
one it writes from that table, and a faded network run regenerated from its slim record gives
every file its summary vouches for, fading.csv included."""

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis import composed

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "network_composed"


def test_the_table_and_report_are_the_ones_written_from_the_kept_comparison():
    comparison = pd.read_csv(STUDY / "results" / "comparison.csv")
    table = composed.fading_table(comparison)
    pd.testing.assert_frame_equal(table, pd.read_csv(STUDY / "fading.csv"), check_exact=False,
                                  rtol=1e-12)
    wall = comparison.groupby("cell")["wall_time_s"].sum()
    assert (STUDY / "report.md").read_text() == composed.report(table, wall)
    assert set(table["case"]) == set(composed.CASES)
    assert (comparison.groupby(["algorithm", "cell"]).size() == 3).all()


@pytest.mark.slow
def test_a_faded_network_run_regenerates_to_its_digests(tmp_path):
    """FedAvg in the 7-site network with Rayleigh fading per transfer at seed 1: re-timed again
    from the headline's kept training, every file (its fading record among them) to the
    digest its summary holds (regenerate_run checks them)."""
    from scala_netsim.tools.regenerate import regenerate_run

    kept = STUDY / "results" / "fedavg" / "cell=uma_7sites_rayleigh_transfer" / "seed1"
    assert "fading.csv" in json.loads((kept / "summary.json").read_text())["files_sha256"]
    regenerate_run(kept, tmp_path / "run")
    assert (tmp_path / "run" / "fading.csv").is_file()
