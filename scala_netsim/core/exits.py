"""How the entry points (the CLI, the re-timer, the attack) answer bad input: a line on
standard error naming the field, the value and what is allowed, and exit status 2."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

EXIT_BAD_INPUT = 2


def fail(message: str) -> int:
    """Print `error: message` to standard error; -> the exit status for bad input."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def check_writable(out: Path) -> str | None:
    """The first existing ancestor of `out` must be a directory this process can create a
    folder in (tried: a temporary one, removed at once; `os.access` says yes to root even on
    /proc or a read-only mount): None, or why not."""
    probe = Path(out)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    why = None if probe.is_dir() else "not a directory"
    if why is None:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".scala_netsim-probe-", dir=probe))
        except OSError as exc:
            why = exc.strerror or str(exc)
    if why is not None:
        return (f"--out: cannot write results under {str(out)!r} ({str(probe)!r}: {why})")
    return None
