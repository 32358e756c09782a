"""Result files, written atomically: each is written to a hidden temporary file in the same
folder, then renamed over the result's name. A reader, and a run interrupted at any point
(Ctrl-C, SIGKILL), thus only ever finds a result file complete: its previous version or its
new one. A process killed mid-write may leave its hidden `.<name>.*.tmp` file behind; nothing
reads those. (Files are not forced to disk: a crash of the machine itself is not covered.)"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import lzma
import os
import shlex
import tempfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, cast

import pandas as pd
import yaml

from scala_netsim.core.errors import DamagedRunError
from scala_netsim.core.files import (
    DIGESTED_FILES,
    EVENTS_CSV,
    GZIPPED,
    KEPT_SUFFIXES,
    RECORD_FILES,
    RUN_WRITES,
    SLIM_FILES,
    SUMMARY_JSON,
    XZ,
    run_file,
)


def _umask() -> int:
    """The process's file-mode creation mask (reading it means setting it: put back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: the mode a new file gets under the user's umask (as open() gives; mkstemp makes 0600)
FILE_MODE = 0o666 & ~_umask()


def write_atomic(path: Path | str, write: Callable[[IO], Any], binary: bool = False) -> None:
    """Call write(file_object) on a temporary file next to `path`, then rename it to `path`,
    with the mode any file the user creates gets (their umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="")) as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path | str, text: str) -> None:
    write_atomic(path, lambda f: f.write(text))


def write_csv(path: Path | str, frame: pd.DataFrame) -> None:
    write_atomic(path, lambda f: frame.to_csv(f, index=False))


#: pandas reads floats back bit for bit by default from 3.1 on; before, only when asked (3.0's
#: default parser can be a unit in the last place off: 2.3044754028320313 became ...032)
EXACT_FLOATS: dict[str, Any] = ({} if tuple(int(x) for x in pd.__version__.split(".")[:2]) >= (3, 1)
                else {"float_precision": "round_trip"})


def read_csv(path: Path | str, **kwargs: Any) -> pd.DataFrame:
    """A CSV file this package wrote, its floats read back exactly as they were written."""
    return pd.read_csv(path, **EXACT_FLOATS, **kwargs)


#: what reading a damaged record file raises: a cut or corrupt compressed copy, a cut or
#: garbled CSV, a file that is not text
UNREADABLE = (EOFError, lzma.LZMAError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError,
              pd.errors.ParserError, pd.errors.EmptyDataError)


def read_record(folder: Path | str, name: str, **kwargs: Any) -> pd.DataFrame:
    """The record table `name` of a run folder (or its kept compressed copy: run_file),
    its floats exact (read_csv); DamagedRunError naming the file and what to do when it is
    missing or cannot be read."""
    path = run_file(folder, name)
    try:
        return read_csv(path, **kwargs)
    except FileNotFoundError:
        raise DamagedRunError(f"{path}: missing; {damaged_hint(folder)}") from None
    except UNREADABLE as exc:
        raise DamagedRunError(f"{path}: not readable ({exc}); {damaged_hint(folder)}") from None


def damaged_hint(folder: Path | str) -> str:
    """What a reader can do about the damaged run folder `folder`."""
    return (f"the run folder is damaged: restore it (a run kept in git: git checkout -- "
            f"{shlex.quote(str(folder))}), or delete it and run it again")


def write_rows_csv(path: Path | str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    """Rows of plain numbers and text as CSV, byte for byte what `write_csv` writes for the
    same table (Python's str of each value, no index), at twice its speed and without building
    a DataFrame: events.csv of a timing-only run has millions of rows."""
    def write(f: IO) -> None:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(columns)
        out.writerows(rows)

    write_atomic(path, write)


def read_written_yaml(path: Path | str) -> Any:
    """A YAML file this package wrote (a run folder's scenario.yaml), read with libyaml's
    parser when PyYAML has it (10x faster; the same objects: construction is PyYAML's own).
    Users' files go through scenario.load_scenario, whose error messages are PyYAML's."""
    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def write_json(path: Path | str, data: dict) -> None:
    write_atomic(path, lambda f: json.dump(data, f, indent=2))


def open_record(path: Path | str, mode: str = "rb") -> IO:
    """A record file opened for reading, decompressed on the fly when it is compressed (*.xz,
    or *.gz from an earlier version: a run kept in git, scala_netsim.tools.keep)."""
    if str(path).endswith(XZ):
        return cast(IO, lzma.open(path, mode))
    if str(path).endswith(GZIPPED):
        return cast(IO, gzip.open(path, mode))   # (a GzipFile, or text over one)
    return open(path, mode)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, as hex (the summary's digests of the record files); of
    a compressed file's decompressed bytes, so that a kept copy has the digests of the
    original."""
    digest = hashlib.sha256()
    with open_record(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_summary(path: Path | str, hint: str | None = None) -> dict:
    """A run's summary.json; DamagedRunError naming the file when it is missing or not a JSON
    object, with `hint` (what to do; by default: restore the folder or run it again)."""
    path = Path(path)
    hint = hint or damaged_hint(path.parent)
    try:
        summary = json.loads(path.read_text())
    except FileNotFoundError:
        raise DamagedRunError(f"{path}: missing (a run that has not finished has none)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DamagedRunError(f"{path}: not a summary this package wrote ({exc}); "
                              f"{hint}") from None
    if not isinstance(summary, dict):
        raise DamagedRunError(f"{path}: not a summary this package wrote (a JSON "
                              f"{type(summary).__name__}, not an object); {hint}")
    return summary


#: what to do about a damaged summary.json in a run folder of one's own results
RESUME_HINT = ("delete it (the run is then resumed from its checkpoint, or trained again), or "
               "run with --force")


#: what a run to re-time from holds (--retime-from, python -m scala_netsim.retime)
SOURCE_NEEDS = ("a run to re-time from is a finished run's folder as its run wrote it: "
                "scenario.yaml (the settings it was trained with), summary.json and its record "
                "files (rounds.csv, events.csv, demands.csv)")


def source_hint(folder: Path | str) -> str:
    """What to do about a damaged run that a study re-times from (someone's training: never
    deleted, as a damaged run of one's own results may be)."""
    return (f"a damaged source is skipped, never re-timed from: restore its files (a run "
            f"kept in git: git checkout -- {shlex.quote(str(folder))})")


def check_finished_run(folder: Path, summary: dict, hint: str | None = None) -> None:
    """DamagedRunError when a finished run's record files are not those its run wrote
    (summary.json's `files_sha256`; a run written before the digests is taken as it is), with
    `hint` (what to do; by default, for a run of one's own results: delete it or --force). A
    slim kept run (`is_slim_kept`) is checked for the files it keeps."""
    if "files_sha256" not in summary:
        return
    problem = damaged_record(folder, summary["files_sha256"], slim=is_slim_kept(folder, summary))
    if problem:
        raise DamagedRunError(f"{problem}; " + (hint or f"delete the run folder {str(folder)!r} "
                                                         f"to run it again, or run with --force"))


def run_files(folder: Path | str) -> list[Path]:
    """The files of an earlier run in `folder` (records.RUN_WRITES, compressed copies too)."""
    folder = Path(folder)
    names = [n + suffix for n in RUN_WRITES for suffix in ("", *KEPT_SUFFIXES)]
    return [folder / n for n in names if (folder / n).is_file()]


def remove_run_files(folder: Path | str) -> None:
    """Remove an earlier run's files from `folder` (its summary first: from the first file
    removed on, the folder no longer holds a finished run)."""
    files = run_files(folder)
    for path in sorted(files, key=lambda p: p.name != SUMMARY_JSON):
        path.unlink(missing_ok=True)


def learns_elsewhere(summary: dict) -> bool:
    """Is the run re-timed (its learning another run's record) or timing-only (no learning),
    so that a kept copy of it keeps only records.SLIM_FILES and
    `python -m scala_netsim.tools.regenerate` writes its other files again? Its summary.json
    says so: `retimed_from`, and `timing_only` (written by every timing-only run)."""
    return bool(summary.get("retimed_from")) or summary.get("timing_only") is True


#: summary.json's `kept` of a trained run kept for its findings only (tools.keep
#: --findings-only): SLIM_FILES, its other files' digests; training it again writes them
KEPT_FOR_FINDINGS = "findings"


def is_slim_kept(folder: Path, summary: dict) -> bool:
    """Is `folder` such a run kept in git without its event tables (scala_netsim.tools.keep):
    a re-timed or timing-only one, or a trained one kept for its findings only?"""
    return ((learns_elsewhere(summary) or summary.get("kept") == KEPT_FOR_FINDINGS)
            and not run_file(folder, EVENTS_CSV).is_file())


def damaged_record(folder: Path, digests: dict, slim: bool = False) -> str | None:
    """What is wrong with a finished run folder's record files, checked against summary.json's
    `files_sha256` (`digests`): the first one missing, or not the file its run wrote; None
    when every one is (a kept copy's compressed tables included: run_file, file_sha256).
    clients.csv and a network's files are checked where the digests name them; `slim`: only the
    files a slim kept run keeps (rounds.csv)."""
    names = [n for n in DIGESTED_FILES if n in RECORD_FILES or n in digests]
    for name in names:
        if slim and name not in SLIM_FILES:
            continue
        path = run_file(folder, name)
        if not path.is_file():
            return f"{folder}: {name} is missing"
        try:
            digest = file_sha256(path)
        except (OSError, *UNREADABLE) as exc:   # a damaged compressed copy
            return f"{folder}/{path.name}: not readable ({exc})"
        if digest != digests.get(name):
            return (f"{folder}/{path.name}: not the file its run wrote (its SHA-256 differs "
                    f"from the one in summary.json): damaged, edited or from another run")
    return None
