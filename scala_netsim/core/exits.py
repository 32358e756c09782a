"""How the entry points (the CLI, the re-timer, the attack) answer bad input: a line on
standard error naming the field, the value and what is allowed, and exit status 2."""

from __future__ import annotations

import errno
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
            why = _refusal(probe, exc)
    if why is not None:
        return (f"--out: cannot write results under {str(out)!r} ({str(probe)!r}: {why})")
    return None


def _refusal(folder: Path, exc: OSError) -> str:
    """Why a folder that exists refused a new folder in it, in words: the system's own
    message misleads where the file system is virtual (/proc answers 'No such file or
    directory' for a folder that is there)."""
    if exc.errno == errno.EROFS:
        return "a read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"no permission to create a folder in it ({exc.strerror})"
    if exc.errno == errno.ENOENT:
        return ("its file system lets no folder be made in it (a virtual file system such as "
                "/proc or /sys)")
    return exc.strerror or str(exc)
