import dataclasses
import math

import pytest
import torch

from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.core.catalog import ALEXNET14_SPLITS, SPLITS
from scala_netsim.learn.models import build_split_model, state_bytes

from conftest import check_round_payloads


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


# --- ResNet-18 and VGG-11 (the SCALA journal's models) ---------------------------------
def torchvision_network(arch: str) -> torch.nn.Module:
    """The same network built by torchvision's own code (its forward, not our layer list)."""
    import torchvision

    if arch == "resnet18":
        net = torchvision.models.resnet18(num_classes=10)
        net.conv1 = torch.nn.Conv2d(1, 64, kernel_size=3, stride=1, padding=1, bias=False)
        net.maxpool = torch.nn.Identity()
        return net
    # torchvision's VGG-11-BN features (configuration "A"), then the linear classifier
    from torchvision.models.vgg import cfgs, make_layers

    net = torch.nn.Sequential(make_layers(cfgs["A"], batch_norm=True), torch.nn.Flatten(),
                              torch.nn.Linear(512, 10))
    net[0][0] = torch.nn.Conv2d(1, 64, kernel_size=3, padding=1)
    return net


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["resnet18", "vgg11"])
def test_resnet18_and_vgg11_parts_compose_to_torchvisions_network(arch):
    x = torch.randn(3, 1, 32, 32, generator=gen())
    reference = torchvision_network(arch)
    theirs = list(reference.state_dict())
    for split in SPLITS[arch]:
        client, server = build_split_model(arch, split, 1, 10, gen())
        ours = torch.nn.Sequential(*client, *server).state_dict().values()
        reference.load_state_dict(dict(zip(theirs, ours, strict=True)))  # the same order
        for training in (True, False):  # batch statistics, then running statistics
            for part in (client, server, reference):
                part.train(training)
            with torch.no_grad():
                assert torch.equal(server(client(x)), reference(x)), (split, training)


def test_resnet18_and_vgg11_sizes_and_activations():
    # parameters: CIFAR ResNet-18 has 11,173,962 and VGG-11-BN 9,231,114 for 3-channel
    # images; a 1-channel stem has 2 x 64 x 3 x 3 = 1,152 fewer weights
    expected = {"resnet18": (11_172_810, {"S1": (64, 32, 32), "S2": (64, 32, 32),
                                          "S3": (128, 16, 16), "S4": (256, 8, 8)}),
                "vgg11": (9_229_962, {"S1": (64, 16, 16), "S2": (128, 8, 8),
                                      "S3": (256, 4, 4), "S4": (512, 2, 2)})}
    for arch, (params, shapes) in expected.items():
        for split, shape in shapes.items():
            client, server = build_split_model(arch, split, 1, 10, gen())
            assert sum(p.numel() for m in (client, server) for p in m.parameters()) == params
            assert client(torch.zeros(2, 1, 32, 32)).shape == (2, *shape)
            # BatchNorm's running mean and variance (float32) and its batch counter (int64)
            # travel with the client's weights
            norms = [m for m in client.modules() if isinstance(m, torch.nn.BatchNorm2d)]
            assert norms
            assert state_bytes(client) == (4 * sum(p.numel() for p in client.parameters())
                                           + sum(8 * m.num_features + 8 for m in norms))


def test_every_arch_lists_its_split_points_when_one_is_unknown():
    with pytest.raises(ValueError, match=r"model.split: unknown 'S5' for resnet18; allowed: "
                                         r"\['S1', 'S2', 'S3', 'S4'\]"):
        build_split_model("resnet18", "S5", 1, 10, gen())
    with pytest.raises(ValueError, match="model.arch: unknown 'vgg16'.*resnet18.*vgg11"):
        build_split_model("vgg16", "S2", 1, 10, gen())


def test_a_split_point_the_arch_lacks_is_refused_in_the_scenario(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nmodel: {arch: vgg11, split: S5}\n")
    code, _, err = cli(str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and not (tmp_path / "out").exists()
    assert "model.split: 'S5' is not a split point of vgg11; allowed: S1, S2, S3, S4" in err


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["resnet18", "vgg11"])
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_trains_a_round_of_every_model(make_run, fashion_slice, algorithm, arch):
    """One round on 3 clients of the Fashion-MNIST slice (B = 3, one local iteration): the
    events carry the model's real payloads, the invariants hold, the model's BatchNorm
    statistics moved and the test accuracy is a number."""
    data = dataclasses.replace(fashion_slice, test_x=fashion_slice.test_x[:10],
                               test_y=fashion_slice.test_y[:10])
    run = make_run(algorithm, data, model={"arch": arch},
                   training={"batch_size": 3, "local_iters": 1, "eval_every": 1})
    row = run.step()
    assert run.problems() == []
    assert 0.0 <= row["test_acc"] <= 1.0 and math.isfinite(row["test_loss"])

    check_round_payloads(run, algorithm, arch)

    # the trained models' BatchNorm running variances are no longer their initial 1
    # (SplitFedV3's global client model stays the initial one: each client keeps its own)
    state = run.trainer.state_dict()
    modules = dict(state["modules"])
    if algorithm == "splitfed_v3":
        names = list(modules.pop("client"))
        modules.update({k: dict(zip(names, tensors, strict=True))
                        for k, tensors in state["extra"]["own_models"].items()})
    norms = [t for tensors in modules.values() for name, t in tensors.items()
             if name.endswith("running_var")]
    assert norms and all(not torch.equal(t, torch.ones_like(t)) for t in norms)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_building_a_trainer_leaves_batchnorm_statistics_untouched(make_run, algorithm):
    """A trainer sizes what it builds (an aux head, a bottleneck) without a real forward pass,
    which would move the running statistics before the first round."""
    run = make_run(algorithm, model={"arch": "resnet18"})
    modules = run.trainer.state_dict()["modules"]
    stats = {name: t for tensors in modules.values() for name, t in tensors.items()
             if name.endswith(("running_mean", "running_var"))}
    assert stats
    for name, t in stats.items():
        initial = torch.zeros_like(t) if name.endswith("mean") else torch.ones_like(t)
        assert torch.equal(t, initial), name
