"""Figures and tables from result files. Reads only what a run wrote; never imports the engine."""


from pathlib import Path

import pandas as pd

from scala_netsim.core.files import ROUNDS_CSV
from scala_netsim.core.results import read_record


def read_rounds(run_dir: Path | str) -> pd.DataFrame:
    """A run folder's rounds.csv; a timing-only run's (no test_acc column) gets test_acc NaN."""
    rounds = read_record(run_dir, ROUNDS_CSV)
    if "test_acc" not in rounds.columns:
        rounds["test_acc"] = float("nan")
    return rounds


def accuracy_of(summary: dict, key: str) -> float:
    """An accuracy figure of summary.json (NaN for a timing-only run, which has none)."""
    return summary.get(key, float("nan"))
