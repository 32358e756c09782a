import pytest
import torch

from scala_netsim.models import ALEXNET14_SPLITS, build_split_model, state_bytes


def gen():
    return torch.Generator().manual_seed(0)


def test_alexnet14_size_and_default_split_activation():
    client, server = build_split_model("alexnet14", "S2", 3, 10, gen())
    params = sum(p.numel() for part in (client, server) for p in part.parameters())
    assert params == 2_472_266  # 2.47 M (SCALA-NOTES section 6)
    activations = client(torch.zeros(5, 3, 32, 32))
    assert activations.shape == (5, 192, 2, 2)  # 768 floats per sample after layer 6
    assert server(activations).shape == (5, 10)
    assert state_bytes(client) == 4 * sum(p.numel() for p in client.parameters())


@pytest.mark.parametrize("split, layers", list(ALEXNET14_SPLITS.items()))
def test_every_split_point_composes_to_the_same_network(split, layers):
    full_client, full_server = build_split_model("alexnet14", "S5", 1, 10, gen())
    client, server = build_split_model("alexnet14", split, 1, 10, gen())
    assert len(client) == layers and len(client) + len(server) == 14
    x = torch.randn(4, 1, 32, 32, generator=gen())
    torch.testing.assert_close(server(client(x)), full_server(full_client(x)))


def test_deeper_split_puts_more_weights_on_the_client():
    sizes = [state_bytes(build_split_model("alexnet14", s, 1, 10, gen())[0])
             for s in ALEXNET14_SPLITS]
    assert sizes == sorted(sizes) and len(set(sizes)) == 5


def test_unknown_arch_or_split_lists_the_valid_ones():
    with pytest.raises(ValueError, match="model.split: unknown 'S9'.*S1"):
        build_split_model("alexnet14", "S9", 1, 10, gen())
    with pytest.raises(ValueError, match="model.arch: unknown 'vgg'.*alexnet14"):
        build_split_model("vgg", "S2", 1, 10, gen())


def test_fast_layout_changes_memory_layout_not_values():
    x = torch.randn(8, 1, 32, 32, generator=torch.Generator().manual_seed(3))
    outputs, grads = [], []
    for fast in (False, True):
        client, server = build_split_model("alexnet14", "S2", 1, 10, gen(), fast_layout=fast)
        activations = client(x)
        assert activations.is_contiguous()  # standard NCHW on the wire
        out = server(activations)
        out.square().sum().backward()
        outputs.append(out)
        grads.append([p.grad for p in client.parameters()])
    torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-4, atol=1e-5)
    for g0, g1 in zip(*grads, strict=False):
        torch.testing.assert_close(g0, g1, rtol=1e-3, atol=1e-4)
