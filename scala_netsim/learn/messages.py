"""Typed messages exchanged between clients and the server.

Their sizes come from the real tensors they carry (numel * element_size), never from constants;
a compressed message (scala_netsim.learn.compression) carries what the receiver decoded and the size
of the encoded representation, `wire_bytes`.
"""

from dataclasses import dataclass, field
from typing import Protocol

import torch


def tensor_bytes(*tensors: torch.Tensor) -> int:
    """Bytes on the wire of the given tensors."""
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass(frozen=True)
class ModelMessage:
    """Model weights: the client-side model down at round start, a client's update up at the end."""

    client_id: int
    tensors: tuple
    wire_bytes: int | None = field(default=None, kw_only=True)

    @property
    def payload_bytes(self) -> int:
        return tensor_bytes(*self.tensors) if self.wire_bytes is None else self.wire_bytes


@dataclass(frozen=True)
class ActivationMessage:
    """A client's cut-layer activations and the labels of its minibatch (uplink)."""

    client_id: int
    local_iter: int
    activations: torch.Tensor
    labels: torch.Tensor
    wire_bytes: int | None = field(default=None, kw_only=True)   # labels included

    @property
    def payload_bytes(self) -> int:
        if self.wire_bytes is None:
            return tensor_bytes(self.activations, self.labels)
        return self.wire_bytes


@dataclass(frozen=True)
class GradientMessage:
    """The gradient of a client's loss with respect to its activations (downlink)."""

    client_id: int
    local_iter: int
    gradients: torch.Tensor
    wire_bytes: int | None = field(default=None, kw_only=True)

    @property
    def payload_bytes(self) -> int:
        return tensor_bytes(self.gradients) if self.wire_bytes is None else self.wire_bytes


@dataclass(frozen=True, slots=True)
class RecordedMessage:
    """A message as a record knows it: who sends it, for which step, and its size; what a
    replayed or timing-only trainer hands the engine in place of a message with tensors (the
    engine reads only `client_id`, `local_iter` and `payload_bytes`)."""

    client_id: int
    local_iter: int
    payload_bytes: int


class Transfer(Protocol):
    """What the engine reads of any message it times: who sends or receives it and its size on
    the wire. ModelMessage, ActivationMessage, GradientMessage (a real trainer's, with their
    tensors) and RecordedMessage (a replayed or timing-only trainer's, sizes only) all are one."""

    @property
    def client_id(self) -> int: ...

    @property
    def payload_bytes(self) -> int: ...
