"""Every registered algorithm's results, byte for byte, against the golden files.

A change that claims not to alter results must pass this unchanged. A change that alters
results on purpose regenerates the files (`python tests/golden_run.py`) in the same commit.
"""

import pytest

from golden_run import COMPARED, GOLDEN, comparable

ALGORITHMS = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def test_every_registered_algorithm_has_golden_files():
    from scala_netsim.algorithms.registry import ALGORITHMS as REGISTERED

    assert ALGORITHMS == sorted(REGISTERED)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("name", COMPARED)
def test_results_are_byte_identical_to_the_golden_files(golden_results, algorithm, name):
    got = comparable(golden_results / algorithm / "seed3", name)
    assert got == (GOLDEN / algorithm / name).read_bytes(), (
        f"{algorithm}/{name} differs from tests/golden/{algorithm}/{name}")
