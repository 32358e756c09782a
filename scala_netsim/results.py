"""Result files, written atomically: a temporary file in the same folder, then a rename, so an
interrupted run never leaves a half-written file behind."""

import json
import os
import tempfile
from pathlib import Path

import pandas as pd


def write_atomic(path, write, binary: bool = False) -> None:
    """Call write(file_object) on a temporary file next to `path`, then rename it to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="")) as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path, text: str) -> None:
    write_atomic(path, lambda f: f.write(text))


def write_csv(path, frame: pd.DataFrame) -> None:
    write_atomic(path, lambda f: frame.to_csv(f, index=False))


def write_json(path, data: dict) -> None:
    write_atomic(path, lambda f: json.dump(data, f, indent=2))


def run_dir(out_dir, scenario_name: str, algorithm: str, seed: int) -> Path:
    """OUT/<scenario name>/<algorithm>/seed<k>/ (the results layout contract)."""
    return Path(out_dir) / scenario_name / algorithm / f"seed{seed}"
