"""Figures and tables from result files. Reads only what a run wrote; never imports the engine."""


from pathlib import Path

import pandas as pd

from scala_netsim.core.files import ROUNDS_CSV
from scala_netsim.core.results import read_record

#: what the network studies say of their deployment (issue 63)
HAND_SET = ("No named deployment (`network.deployment: null`): every key is set by hand, 2 GHz "
            "on paired bands, 1 W a cell, no noise figures, a fixed 0.2 W a client and one "
            "antenna element a sector with no downtilt, where the nearest, `uma_n78` "
            "(docs/model/network.md), has 19 sites on one 100 MHz TDD carrier at 3.5 GHz, 56 "
            "dBm a cell, noise figures of 5 and 9 dB, uplink power control and a panel a "
            "sector, 10 rows steered 12 degrees down and 8 columns pointing a beam at each "
            "served client.")


def read_rounds(run_dir: Path | str) -> pd.DataFrame:
    """A run folder's rounds.csv; a timing-only run's (no test_acc column) gets test_acc NaN."""
    rounds = read_record(run_dir, ROUNDS_CSV)
    if "test_acc" not in rounds.columns:
        rounds["test_acc"] = float("nan")
    return rounds


def accuracy_of(summary: dict, key: str) -> float:
    """An accuracy figure of summary.json (NaN for a timing-only run, which has none)."""
    return summary.get(key, float("nan"))
