"""The scenario's one seed, split into named, independent streams.

Each stream is a child of numpy's SeedSequence(seed): the top-level streams by their position
in `STREAMS` (the order is fixed: adding a stream at the end changes no other), and a stream's
own children by name (e.g. ("model", "sfl_aux_head")). No stream is another's seed plus an
offset, so no two uses can share or overlap a stream by accident.
"""

from __future__ import annotations

import zlib

import numpy as np

STREAMS = ("partition", "drop", "flops", "selection", "model", "batches", "link", "shadowing",
           "fading", "propagation", "traffic", "mobility", "flower_app")


class Seeds:
    """Named seed streams derived from one scenario seed."""

    def __init__(self, seed: int) -> None:
        self.root = seed

    def sequence(self, stream: str, *names: str) -> np.random.SeedSequence:
        """The SeedSequence of `stream`, or of its child named by `names`."""
        if stream not in STREAMS:
            raise KeyError(f"unknown seed stream {stream!r}; streams: {STREAMS}")
        key = (STREAMS.index(stream), *(zlib.crc32(n.encode()) for n in names))
        return np.random.SeedSequence(self.root, spawn_key=key)

    def seed(self, stream: str, *names: str) -> int:
        """A 63-bit integer seed of the stream (for torch.Generator.manual_seed and the like)."""
        return int(self.sequence(stream, *names).generate_state(1, dtype=np.uint64)[0] >> 1)

    def __getitem__(self, stream: str) -> int:
        return self.seed(stream)

    def numpy(self, stream: str, *names: str) -> np.random.Generator:
        """A NumPy generator on the stream."""
        return np.random.default_rng(self.seed(stream, *names))
