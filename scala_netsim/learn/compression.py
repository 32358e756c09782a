"""Codecs for what crosses the air: cut-layer activations (up), their gradients (down) and
models. Each really encodes and decodes, so the receiver trains on what it would receive; the
payload is the size of the encoded representation.

- `fp16`: IEEE half precision, 2 bytes per element (values beyond +-65504 become +-inf,
  magnitudes below 6e-8 become 0, as on any fp16 link).
- `int8`: per-tensor affine quantisation (Jacob et al., CVPR 2018): q = round((x - lo) / s),
  s = (hi - lo) / 255, one byte per element plus lo and s as float32 (8 bytes); the error is at
  most half a step, s / 2. Round-to-nearest, not stochastic rounding: the unbiased variants
  (QSGD, Alistarh et al. 2017) and error feedback (Stich et al. 2018; Karimireddy et al. 2019)
  were made for model updates that add up over steps; a cut-layer tensor belongs to one
  minibatch (the next step sends other samples), so there is no sum for a bias to accumulate
  in nor a residual to feed back.
- `topk`: the k = ceil(fraction x numel) entries of largest magnitude of the whole tensor
  (Aji & Heafield 2017; for split learning, Zheng et al., IJCAI 2023), sent as values (their
  own dtype) and flat indices; an index takes the fewest whole bytes (1, 2, 4 or 8) that can
  address every element of the tensor. The receiver fills the rest with zeros.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from scala_netsim.core.catalog import CODECS
from scala_netsim.learn.messages import (
    ActivationMessage,
    GradientMessage,
    ModelMessage,
    tensor_bytes,
)


@dataclass(frozen=True)
class Received:
    """What the receiver decodes (same shape and dtype as what was sent) and the bytes that
    crossed the air."""

    tensor: torch.Tensor
    payload_bytes: int


class Codec(ABC):
    """Encodes a tensor for the air and decodes it at the receiver."""

    name: str

    @abstractmethod
    def transmit(self, x: torch.Tensor) -> Received:
        """x (floating point) as the receiver gets it, and the encoded size in bytes."""

    @abstractmethod
    def size_bytes(self, numel: int, element_size: int) -> int:
        """Encoded bytes of a floating-point tensor of `numel` elements of `element_size`
        bytes each (what `transmit` sends; known before the tensor exists, for planning)."""


class Uncompressed(Codec):
    name = "none"

    def transmit(self, x: torch.Tensor) -> Received:
        return Received(x, self.size_bytes(x.numel(), x.element_size()))

    def size_bytes(self, numel: int, element_size: int) -> int:
        return numel * element_size


class Float16(Codec):
    name = "fp16"

    def transmit(self, x: torch.Tensor) -> Received:
        return Received(x.to(torch.float16).to(x.dtype),
                        self.size_bytes(x.numel(), x.element_size()))

    def size_bytes(self, numel: int, element_size: int) -> int:
        return 2 * numel


class Int8(Codec):
    name = "int8"
    header_bytes = 8   # lo and the step s, float32 each

    def transmit(self, x: torch.Tensor) -> Received:
        lo, hi = x.min(), x.max()
        step = (hi - lo) / 255
        step = torch.where(step > 0, step, torch.ones_like(step))  # a constant tensor
        q = torch.round((x - lo) / step).clamp_(0, 255).to(torch.uint8)
        return Received(q.to(x.dtype) * step + lo, self.size_bytes(x.numel(), x.element_size()))

    def size_bytes(self, numel: int, element_size: int) -> int:
        return numel + self.header_bytes


def index_bytes(numel: int) -> int:
    """The fewest whole bytes (1, 2, 4 or 8) of an unsigned index of `numel` elements."""
    for width in (1, 2, 4, 8):
        if numel <= 256**width:
            return width
    raise ValueError(f"a tensor of {numel} elements cannot be indexed in 8 bytes")


class TopK(Codec):
    name = "topk"

    def __init__(self, fraction: float) -> None:
        if not 0 < fraction <= 1:
            raise ValueError(f"compression.topk_fraction: must be in (0, 1], got {fraction}")
        self.fraction = fraction

    def kept(self, numel: int) -> int:
        """k = ceil(fraction x numel), at least 1."""
        return max(1, math.ceil(self.fraction * numel))

    def transmit(self, x: torch.Tensor) -> Received:
        flat = x.reshape(-1)
        k = self.kept(flat.numel())
        index = flat.abs().topk(k, sorted=False).indices
        decoded = torch.zeros_like(flat)
        decoded[index] = flat[index]
        return Received(decoded.view_as(x), self.size_bytes(flat.numel(), x.element_size()))

    def size_bytes(self, numel: int, element_size: int) -> int:
        return self.kept(numel) * (element_size + index_bytes(numel))


def make_codec(name: str, topk_fraction: float = 0.1) -> Codec:
    """The codec called `name` (one of CODECS)."""
    if name == "none":
        return Uncompressed()
    if name == "fp16":
        return Float16()
    if name == "int8":
        return Int8()
    if name == "topk":
        return TopK(topk_fraction)
    raise ValueError(f"compression: unknown codec {name!r}; allowed: {list(CODECS)}")


def transmit_state(codec: Codec, tensors: tuple[torch.Tensor, ...]
                   ) -> tuple[tuple[torch.Tensor, ...], int]:
    """A model's state tensors as received and the bytes sent (counters such as BatchNorm's
    batch count travel as they are)."""
    received = [codec.transmit(t) if t.is_floating_point() else Uncompressed().transmit(t)
                for t in tensors]
    return tuple(r.tensor for r in received), sum(r.payload_bytes for r in received)


@dataclass(frozen=True)
class Wire:
    """How a run's messages cross the air: the codec of the cut-layer activations going up,
    of their gradients coming down and of models either way. The default sends everything as
    it is (the messages unchanged). Labels travel as they are."""

    uplink: Codec = Uncompressed()
    downlink: Codec = Uncompressed()
    models: Codec = Uncompressed()

    @classmethod
    def of(cls, uplink: str = "none", downlink: str = "none", models: str = "none",
           topk_fraction: float = 0.1) -> Wire:
        return cls(make_codec(uplink, topk_fraction), make_codec(downlink, topk_fraction),
                   make_codec(models, topk_fraction))

    def up(self, message: ActivationMessage) -> ActivationMessage:
        """The activations as the server decodes them."""
        if isinstance(self.uplink, Uncompressed):
            return message
        received = self.uplink.transmit(message.activations)
        return dataclasses.replace(message, activations=received.tensor,
                                   wire_bytes=received.payload_bytes + tensor_bytes(message.labels))

    def down(self, message: GradientMessage) -> GradientMessage:
        """The gradients as the client decodes them."""
        if isinstance(self.downlink, Uncompressed):
            return message
        received = self.downlink.transmit(message.gradients)
        return dataclasses.replace(message, gradients=received.tensor,
                                   wire_bytes=received.payload_bytes)

    def model(self, message: ModelMessage) -> ModelMessage:
        """A model as its receiver decodes it (either way)."""
        if isinstance(self.models, Uncompressed):
            return message
        tensors, payload_bytes = transmit_state(self.models, message.tensors)
        return dataclasses.replace(message, tensors=tensors, wire_bytes=payload_bytes)

    def up_bytes(self, activation_bytes: int, element_size: int) -> int:
        """Encoded bytes of activations of `activation_bytes` bytes uncompressed."""
        return self.uplink.size_bytes(activation_bytes // element_size, element_size)

    def down_bytes(self, gradient_bytes: int, element_size: int) -> int:
        """Encoded bytes of gradients of `gradient_bytes` bytes uncompressed."""
        return self.downlink.size_bytes(gradient_bytes // element_size, element_size)

    def model_bytes(self, tensors: tuple[torch.Tensor, ...]) -> int:
        """Encoded bytes of a model's state tensors."""
        return sum(self.models.size_bytes(t.numel(), t.element_size())
                   if t.is_floating_point() else t.numel() * t.element_size()
                   for t in tensors)
