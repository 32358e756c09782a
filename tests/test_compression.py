"""The codecs of what crosses the air: round-trip error bounds and encoded sizes in closed form."""

import math

import pytest
import torch

from scala_netsim.compression import (
    Float16,
    Int8,
    TopK,
    Uncompressed,
    index_bytes,
    make_codec,
    transmit_state,
)


def activations(shape=(32, 192, 2, 2), seed=0):
    """ReLU-like cut-layer activations: non-negative, a third of them zero."""
    g = torch.Generator().manual_seed(seed)
    return torch.relu(torch.randn(shape, generator=g) * 3 + 1)


def test_int8_is_within_half_a_step_and_sends_one_byte_per_element_plus_8():
    for x in (activations(), torch.randn(7, 5, generator=torch.Generator().manual_seed(1)) * 1e-3):
        received = Int8().transmit(x)
        step = (x.max() - x.min()).item() / 255
        error = (received.tensor - x).abs().max().item()
        assert error <= step / 2 * (1 + 1e-5)
        assert received.payload_bytes == x.numel() + 8
        assert received.tensor.dtype == x.dtype and received.tensor.shape == x.shape
        # the two ends of the range come back (to float32 rounding)
        torch.testing.assert_close(received.tensor.min(), x.min(), rtol=0, atol=1e-6 * step)
        torch.testing.assert_close(received.tensor.max(), x.max(), rtol=1e-6, atol=0)
    constant = torch.full((3, 4), 2.5)
    assert torch.equal(Int8().transmit(constant).tensor, constant)


def test_int8_uses_every_level_of_a_uniform_ramp():
    x = torch.linspace(-1, 1, 256)   # exactly on the 256 levels
    received = Int8().transmit(x)
    torch.testing.assert_close(received.tensor, x, rtol=0, atol=1e-6)


def test_fp16_is_exact_for_representable_values_and_halves_the_bytes():
    g = torch.Generator().manual_seed(2)
    representable = torch.randn(1000, generator=g).to(torch.float16).to(torch.float32)
    representable[:4] = torch.tensor([0.0, 65504.0, -65504.0, 2.0**-24])  # max, subnormal
    received = Float16().transmit(representable)
    assert torch.equal(received.tensor, representable)
    assert received.payload_bytes == 2 * 1000
    x = torch.randn(1000, generator=g)   # arbitrary values: half precision's relative error
    error = ((Float16().transmit(x).tensor - x).abs() / x.abs()).max().item()
    assert 0 < error <= 2.0**-11


def test_topk_keeps_exactly_the_k_largest_magnitudes_and_zeros_the_rest():
    g = torch.Generator().manual_seed(3)
    numel = 32 * 768
    magnitudes = torch.randperm(numel, generator=g).float() + 1        # all distinct
    signs = torch.where(torch.rand(numel, generator=g) < 0.5, -1.0, 1.0)
    x = (magnitudes * signs).view(32, 192, 2, 2)
    codec = TopK(0.1)
    received = codec.transmit(x)
    k = math.ceil(0.1 * numel)
    assert codec.kept(numel) == k == 2458
    flat, decoded = x.reshape(-1), received.tensor.reshape(-1)
    kept = decoded != 0
    assert kept.sum().item() == k
    assert torch.equal(decoded[kept], flat[kept])
    assert flat[kept].abs().min() > flat[~kept].abs().max()   # the k largest, no other
    # values float32 (4 bytes) and indices of 24,576 elements: 2 bytes each
    assert received.payload_bytes == k * (4 + 2)


def test_topk_payload_in_closed_form_for_index_widths():
    assert [index_bytes(n) for n in (1, 256, 257, 65536, 65537, 2**32, 2**32 + 1)] == \
        [1, 1, 2, 2, 4, 4, 8]
    x = torch.ones(100_000)
    assert TopK(0.01).transmit(x).payload_bytes == 1000 * (4 + 4)
    assert TopK(1.0).transmit(x).payload_bytes == 100_000 * 8
    assert torch.equal(TopK(1.0).transmit(x).tensor, x)
    assert TopK(1e-9).kept(10) == 1   # at least one element


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5])
def test_topk_fraction_outside_0_1_is_refused(fraction):
    with pytest.raises(ValueError, match=rf"topk_fraction: must be in \(0, 1\], got {fraction}"):
        TopK(fraction)


def test_make_codec_and_model_states_keep_integer_counters():
    assert isinstance(make_codec("none"), Uncompressed)
    assert make_codec("topk", 0.25).fraction == 0.25
    with pytest.raises(ValueError, match="unknown codec 'int4'"):
        make_codec("int4")
    bn = torch.nn.BatchNorm2d(4)
    bn(torch.randn(8, 4, 3, 3))
    tensors = tuple(bn.state_dict().values())   # weight, bias, mean, var, batch count
    received, payload_bytes = transmit_state(Float16(), tensors)
    assert payload_bytes == 4 * 4 * 2 + 8         # four float vectors in fp16, one int64
    assert received[-1].dtype == torch.int64 and torch.equal(received[-1], tensors[-1])
    for sent, got in zip(tensors[:-1], received[:-1], strict=True):
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, sent, rtol=2.0**-11, atol=0)
