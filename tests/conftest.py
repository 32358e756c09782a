"""Shared fixtures: the golden end-to-end run (one CLI subprocess that several test modules
read), tiny cells, datasets and trainers, and a fixed seed for every test."""

import pytest

from golden_run import run_golden


@pytest.fixture(scope="session")
def golden_results(tmp_path_factory):
    """OUT/golden/ of one CLI run of tests/golden/scenario.yaml (every algorithm, 2 rounds)."""
    out = tmp_path_factory.mktemp("golden")
    proc = run_golden(out)
    assert proc.returncode == 0, proc.stderr
    return out / "golden"
