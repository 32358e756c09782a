"""The codecs of what crosses the air: round-trip error bounds and encoded sizes in closed form."""

import math

import pytest
import torch

from scala_netsim.core.events import EventKind
from scala_netsim.learn.compression import (
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


# --- in a run: the receiver trains on what it decodes, the events carry the encoded size --
def compressed_run(make_run, algorithm, **compression):
    run = make_run(algorithm, compression=compression)
    trainer = run.trainer
    selected = [0, 1, 2]
    trainer.begin_round(selected)
    for k in selected:
        trainer.client_receive_model(trainer.client_model_download(k))
    return run, trainer, selected


@pytest.mark.slow
def test_scala_server_trains_on_int8_activations_and_clients_on_topk_gradients(make_run):
    run, trainer, selected = compressed_run(make_run, "scala", uplink="int8", downlink="topk",
                                            topk_fraction=0.05)
    uploads = []
    for k in selected:
        upload = trainer.client_forward(k, 0).upload
        sent = trainer._pending[k].detach()       # what the client computed
        assert torch.equal(upload.activations, Int8().transmit(sent).tensor)
        assert not torch.equal(upload.activations, sent)
        assert upload.payload_bytes == sent.numel() + 8 + 8 * len(upload.labels)
        assert trainer.step_demand(k).upload_bytes == upload.payload_bytes
        uploads.append(upload)
    replies = trainer.server_step(uploads).replies
    for reply, upload in zip(replies, uploads, strict=True):
        numel = upload.activations.numel()
        k = math.ceil(0.05 * numel)
        assert (reply.gradients != 0).sum().item() == k
        assert reply.payload_bytes == k * (4 + 2) == trainer.step_demand(reply.client_id
                                                                         ).download_bytes
        trainer.client_backward(reply)


def test_fp16_models_arrive_in_half_precision_both_ways(make_run):
    run, trainer, selected = compressed_run(make_run, "fedavg", models="fp16")
    message = trainer.client_model_download(0)
    floats = sum(t.numel() for t in message.tensors)
    assert message.payload_bytes == 2 * floats == trainer.step_demand(0).download_bytes
    for t in message.tensors:
        assert torch.equal(t, t.half().float())      # what the client loads
    full = tuple(trainer.model.state_dict().values())
    assert any(not torch.equal(t, t.half().float()) for t in full)   # the server's is not


@pytest.mark.slow
def test_compressed_runs_keep_their_invariants_and_learn_differently(make_run):
    accuracies = {}
    for codec in ("none", "int8"):
        run = make_run("splitfed_v1", compression={"uplink": codec, "downlink": codec})
        for _ in range(2):
            row = run.step()
        assert run.problems() == []
        accuracies[codec] = (row["test_acc"], row["test_loss"])
        uploads = {e.payload_bytes for e in run.log.events
                   if e.kind is EventKind.ACTIVATION_UPLOAD}
        assert uploads == ({8 * 768 * 4 + 64} if codec == "none" else {8 * 768 + 8 + 64})
    assert accuracies["none"] != accuracies["int8"]


@pytest.mark.slow
def test_cut_layer_compression_needs_an_algorithm_that_sends_activations(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nalgorithms: [fedavg, fedlc]\ncompression: {uplink: int8}\n")
    code, _, err = cli(bad, "--out", tmp_path / "out")
    assert code == 2 and not (tmp_path / "out").exists()
    assert ("compression.uplink: only for algorithms that send cut-layer activations (" in err
            and "fedavg, fedlc send none, got 'int8' (compression.models applies" in err)
    bad.write_text("name: bad\nalgorithms: [sfl_local_loss]\ncompression: {downlink: fp16}\n")
    code, _, err = cli(bad, "--out", tmp_path / "out")
    assert code == 2 and "compression.downlink: only for algorithms that send activation " \
                         "gradients" in err
    bad.write_text("name: bad\ncompression: {uplink: topk, topk_fraction: 0}\n")
    code, _, err = cli(bad, "--out", tmp_path / "out")
    assert code == 2 and "compression.topk_fraction: must be > 0" in err
    assert not (tmp_path / "out").exists()


def test_a_mixed_scenario_compresses_only_the_cells_that_send_activations(tmp_path):
    from scala_netsim.config.scenario import validate_scenario
    from scala_netsim.tools.sweep import expand_sweep

    scenario = validate_scenario({"name": "mixed", "algorithms": ["scala", "fedavg"],
                                  "compression": {"uplink": "int8", "downlink": "fp16",
                                                  "models": "fp16"}})
    cells = {c.algorithm: c.scenario.compression for c in expand_sweep(scenario, tmp_path)}
    assert (cells["scala"].uplink, cells["scala"].downlink, cells["scala"].models) == \
        ("int8", "fp16", "fp16")
    assert (cells["fedavg"].uplink, cells["fedavg"].downlink, cells["fedavg"].models) == \
        ("none", "none", "fp16")
