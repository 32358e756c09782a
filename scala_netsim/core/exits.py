"""How the entry points (the CLI, the re-timer, the attack) answer bad input: a line on
standard error naming the field, the value and what is allowed, and exit status 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2


def fail(message: str) -> int:
    """Print `error: message` to standard error; -> the exit status for bad input."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def check_writable(out: Path) -> str | None:
    """The first existing ancestor of `out` must be a writable directory: None, or why not."""
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        return (f"--out: cannot write results under {str(out)!r} ({str(probe)!r} is not a "
                f"writable directory)")
    return None
