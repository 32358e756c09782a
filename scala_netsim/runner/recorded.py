"""The one base of the trainers that answer a protocol from sizes and FLOPs instead of tensors:
the replay of a finished run (scala_netsim.runner.replay.Replayer) and the timing-only meter
(scala_netsim.runner.timing.TimingMeter).

The engine checks that a protocol's trainer is an instance of the protocol's trainer contract
(`Protocol.trainer_contract`); a recorded trainer answers every contract's methods, so
`RecordedTrainer.of(contract, ...)` makes it an instance of the one it stands in for (a class
per pair, made once). What the two share lives here: the round loss, and model hand-offs that
carry nothing (a recorded model message is a size; there are no weights to load).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from scala_netsim.learn.contract import Trainer
from scala_netsim.learn.messages import RecordedMessage


class RecordedTrainer:
    """A trainer side answered from recorded costs; subclasses answer the steps."""

    prefix: ClassVar[str] = "Recorded"   # the made classes are named prefix + contract name
    round_loss: torch.Tensor | None = None

    @classmethod
    def of(cls, contract: type[Trainer], *args: Any) -> Trainer:
        """An instance of `cls` that is also an instance of `contract`, built from `args`."""
        return _made(cls, contract)(*args)

    def client_receive_model(self, message: RecordedMessage) -> None:
        pass

    def server_receive_model(self, message: RecordedMessage) -> None:
        pass

    def client_resume(self, k: int) -> None:
        pass

    def client_keep(self, k: int) -> None:
        pass


_MADE: dict[tuple[type, type], type] = {}


def _made(base: type[RecordedTrainer], contract: type[Trainer]) -> type:
    if (base, contract) not in _MADE:
        _MADE[base, contract] = type(f"{base.prefix}{contract.__name__}", (base, contract), {})
    return _MADE[base, contract]
