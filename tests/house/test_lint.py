"""The code stays clean under the project's ruff configuration (pyproject.toml)."""

import subprocess
import sys

import pytest

from conftest import ROOT


def test_ruff_check_is_clean():
    pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
