"""Checkpoints: the whole state of a run between rounds, with the identity of its scenario,
algorithm and version, so that a resumed run writes what an uninterrupted one writes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import yaml

from scala_netsim.config.scenario import Scenario, training_identity
from scala_netsim.core.errors import Error
from scala_netsim.core.results import (
    write_atomic,
)
from scala_netsim.core.version import __version__

if TYPE_CHECKING:
    from scala_netsim.runner.loop import Run


CHECKPOINT_FORMAT = 5   # 5: cut steps and aggregations (drops); 4: transfers carry their
#                         gain and power, the link's streams


class CheckpointError(Error, ValueError):
    """A checkpoint that cannot be resumed (another scenario, algorithm or version)."""


def checkpoint_identity(scenario: Scenario, algorithm: str) -> str:
    """What a checkpoint must match to be resumed: format, package version, the resolved
    scenario and the algorithm."""
    identity = yaml.safe_dump(training_identity(scenario), sort_keys=True)
    text = f"{CHECKPOINT_FORMAT}|{__version__}|{algorithm}|{identity}"
    return hashlib.sha256(text.encode()).hexdigest()


def saved_round(path: Path) -> int | None:
    """The round a checkpoint file was saved after (None: no file, or not a checkpoint),
    read without loading its tensors (mmap)."""
    if not Path(path).is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:   # (a damaged file: Checkpointer.load says so when the run resumes)
        return None
    saved = state.get("round") if isinstance(state, dict) else None
    return int(saved) if isinstance(saved, int) else None


class Checkpointer:
    """checkpoint.pt of a run folder: the whole state of a run between rounds, written
    atomically, read back only if it was written for the same scenario and algorithm."""

    def __init__(self, path: Path, identity: str) -> None:
        self.path, self.identity = Path(path), identity

    def load(self) -> dict | None:
        """The saved state, None when there is none, CheckpointError when it is not ours."""
        if not self.path.is_file():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except Exception as exc:  # a damaged or foreign file: say which, never unpickle it
            raise CheckpointError(f"{self.path}: not a readable scala_netsim checkpoint "
                                  f"({exc})") from None
        if not isinstance(state, dict) or state.get("identity") != self.identity:
            raise CheckpointError(
                f"{self.path}: written by another scenario, algorithm or scala_netsim version; "
                f"refusing to resume it (--force starts the run afresh)")
        return state

    def save(self, run: Run, wall_time_s: float, machines: list[dict]) -> None:
        """`machines`: where each invocation so far worked on the run (runner.execute)."""
        data = {"identity": self.identity, "round": run.round, "run": run.state_dict(),
                "wall_time_s": wall_time_s, "machines": machines}
        write_atomic(self.path, lambda f: torch.save(data, f), binary=True)
