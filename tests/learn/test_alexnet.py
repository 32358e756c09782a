"""The SCALA authors' AlexNet (`model.arch: alexnet`): its size, its split points, its parts
against the network as the authors' code writes it, its payloads in events.csv, gradient
clipping, and every algorithm for one round on it."""

import math

import pandas as pd
import pytest
import torch
from torch import nn

from scala_netsim.algorithms.common import SGD
from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import load_scenario, validate_scenario
from scala_netsim.core.catalog import ALEXNET_SPLITS
from scala_netsim.core.events import EventKind
from scala_netsim.learn.models import build_split_model, features_and_head, input_size, state_bytes

from conftest import ROOT, check_round_payloads


def gen():
    return torch.Generator().manual_seed(0)


class AuthorsAlexNet(nn.Module):
    """The network as the authors' code writes it (eejiarong/GAS utils/network.py, AlexNet
    and AlexNetCifar): one Sequential of convolutions, a view to 2304 features, one Sequential
    of linear layers. Written here from the issue's description, independently of ours."""

    def __init__(self, in_channels: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, padding=1), nn.MaxPool2d(2, 2), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.MaxPool2d(2, 2), nn.ReLU(),
            nn.Conv2d(64, 128, 3, padding=1), nn.Conv2d(128, 256, 3, padding=1),
            nn.Conv2d(256, 256, 3, padding=1), nn.MaxPool2d(3, 2), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(2304, 1024), nn.Linear(1024, 512), nn.Linear(512, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(x).view(-1, 256 * 3 * 3))


# (in_channels, image side): Fashion-MNIST at its own 28 x 28, CIFAR/CINIC at 32 x 32
FORMS = [(1, 28), (3, 32)]


def test_the_parameter_count_is_the_authors_networks():
    client, server = build_split_model("alexnet", "S2", 1, 10, gen(), image_size=28)
    count = [sum(p.numel() for p in part.parameters()) for part in (client, server)]
    assert count == [18_816, 3_868_170 - 18_816]
    # by hand: conv 1x32x9+32 = 320, 32x64x9+64 = 18,496 on the client; 64x128x9+128 =
    # 73,856, 128x256x9+256 = 295,168, 256x256x9+256 = 590,080, 2304x1024+1024 = 2,360,320,
    # 1024x512+512 = 524,800, 512x10+10 = 5,130 on the server
    assert count == [320 + 18_496, 73_856 + 295_168 + 590_080 + 2_360_320 + 524_800 + 5_130]
    assert sum(p.numel() for p in AuthorsAlexNet(1).parameters()) == 3_868_170
    client3, server3 = build_split_model("alexnet", "S2", 3, 10, gen(), image_size=32)
    assert sum(p.numel() for part in (client3, server3) for p in part.parameters()) \
        == 3_868_170 + 2 * 32 * 9
    assert state_bytes(client) == 4 * 18_816   # float32 weights, no buffers


@pytest.mark.parametrize("in_channels, side", FORMS)
def test_every_split_composes_exactly_to_the_authors_network(in_channels, side):
    reference = AuthorsAlexNet(in_channels)
    names = list(reference.state_dict())
    x = torch.randn(5, in_channels, side, side, generator=gen())
    shapes = {"S1": (32, side // 2, side // 2), "S2": (64, side // 4, side // 4),
              "S3": (128, side // 4, side // 4), "S4": (256, side // 4, side // 4),
              "S5": (256, 3, 3)}
    for split, modules in ALEXNET_SPLITS.items():
        client, server = build_split_model("alexnet", split, in_channels, 10, gen(),
                                           fast_layout=False, image_size=side)
        assert (len(client), len(client) + len(server)) == (modules, 14)
        ours = nn.Sequential(*client, *server).state_dict().values()
        reference.load_state_dict(dict(zip(names, ours, strict=True)))   # the same order
        with torch.no_grad():
            activations = client(x)
            assert activations.shape == (5, *shapes[split])
            assert torch.equal(server(activations), reference(x)), split


def test_the_default_split_is_6_modules_on_the_client_and_8_on_the_server():
    client, server = build_split_model("alexnet", "S2", 1, 10, gen(), image_size=28)
    assert [type(m).__name__ for m in client] == [
        "Conv2d", "MaxPool2d", "ReLU", "Conv2d", "MaxPool2dToNCHW", "ReLU"]
    assert len(server) == 8
    assert client(torch.zeros(2, 1, 28, 28)).shape == (2, 64, 7, 7)   # 3,136 floats a sample


def test_fast_layout_changes_memory_layout_not_values():
    x = torch.randn(8, 1, 28, 28, generator=gen())
    results = []
    for fast in (False, True):
        client, server = build_split_model("alexnet", "S2", 1, 10, gen(), fast_layout=fast,
                                           image_size=28)
        activations = client(x)
        assert activations.is_contiguous()   # standard NCHW on the wire
        out = server(activations)
        out.square().sum().backward()
        results.append((out, [p.grad for p in client.parameters()]))
    torch.testing.assert_close(results[0][0], results[1][0], rtol=1e-4, atol=1e-5)
    for g0, g1 in zip(results[0][1], results[1][1], strict=True):
        torch.testing.assert_close(g0, g1, rtol=1e-3, atol=1e-4)


def test_features_and_head_of_alexnet_are_the_512_penultimate_features_and_the_last_linear():
    client, server = build_split_model("alexnet", "S2", 1, 10, gen(), image_size=28)
    features, head = features_and_head(client, server)
    x = torch.randn(3, 1, 28, 28, generator=gen())
    assert features(x).shape == (3, 512) and head is server[-1]
    assert torch.equal(head(features(x)), server(client(x)))


def test_only_alexnet_is_fed_fashion_mnist_at_28():
    assert input_size("alexnet", 28) == 28 and input_size("alexnet14", 28) == 32
    assert input_size("resnet18", 28) == 32 and input_size("alexnet", 32) == 32


def test_fashion_mnist_unpadded_is_the_padded_images_centre(fashion_slice):
    from scala_netsim.learn.data import load_dataset

    native = load_dataset("fashion_mnist", None, train_samples=1000, test_samples=200,
                          pad_to_32=False)
    assert native.train_x.shape == (1000, 1, 28, 28) and native.image_size == 28
    assert torch.equal(native.train_x, fashion_slice.train_x[:, :, 2:30, 2:30])
    assert torch.equal(native.test_y, fashion_slice.test_y)


# --- gradient clipping ---------------------------------------------------------------------
def test_sgd_clips_the_global_gradient_norm_before_its_step():
    torch.manual_seed(0)
    layers = [nn.Linear(4, 3), nn.Linear(3, 2)]
    reference = [nn.Linear(4, 3), nn.Linear(3, 2)]
    for ours, theirs in zip(layers, reference, strict=True):
        theirs.load_state_dict(ours.state_dict())
    x = torch.randn(6, 4) * 50   # a gradient far above the norm
    params = [p for m in layers for p in m.parameters()]
    ref_params = [p for m in reference for p in m.parameters()]
    optimizer = SGD(params, grad_clip_norm=1.5, lr=0.1, momentum=0.9, weight_decay=5e-4)
    ref_optimizer = torch.optim.SGD(ref_params, lr=0.1, momentum=0.9, weight_decay=5e-4)
    for _ in range(3):
        nn.Sequential(*layers)(x).square().sum().backward()
        nn.Sequential(*reference)(x).square().sum().backward()
        norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in ref_params]))
        assert norm > 1.5
        for p in ref_params:
            p.grad.mul_(1.5 / (norm + 1e-6))   # clip_grad_norm_'s rule
        optimizer.step()
        ref_optimizer.step()
        optimizer.zero_grad()
        ref_optimizer.zero_grad()
        for p, q in zip(params, ref_params, strict=True):
            torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


def test_sgd_without_a_norm_is_torchs_sgd_bit_for_bit():
    torch.manual_seed(0)
    a, b = nn.Linear(4, 3), nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    x = torch.randn(6, 4) * 50
    ours = SGD(a.parameters(), grad_clip_norm=None, lr=0.1, momentum=0.9, fused=True)
    theirs = torch.optim.SGD(b.parameters(), lr=0.1, momentum=0.9, fused=True)
    for _ in range(3):
        for model, optimizer in ((a, ours), (b, theirs)):
            model(x).square().sum().backward()
            optimizer.step()
            optimizer.zero_grad()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_a_clipping_norm_must_be_positive_or_null():
    with pytest.raises(ScenarioError, match=r"training.grad_clip_norm.*0"):
        validate_scenario({"name": "x", "training": {"grad_clip_norm": 0}})
    assert validate_scenario({"name": "x"}).training.grad_clip_norm is None


def test_the_paper_setting_scenarios_use_the_authors_model_and_code_settings():
    for name in ("cellular_10pct", "local_iters", "bandwidth", "quickstart"):
        s = load_scenario(ROOT / "scenarios" / f"{name}.yaml")
        assert (s.model.arch, s.model.split) == ("alexnet", "S2"), name
        assert (s.training.lr, s.training.momentum, s.training.weight_decay,
                s.training.grad_clip_norm) == (0.01, 0.9, 5e-4, 10.0), name


def test_clipping_reaches_every_trainer(make_run):
    """With a tiny norm every optimiser a trainer builds clips: the server's and clients'."""
    run = make_run("scala", training={"grad_clip_norm": 1e-3})
    trainer = run.trainer
    assert trainer.server_optimizer.grad_clip_norm == 1e-3
    assert trainer.slots.optimizer_args["grad_clip_norm"] == 1e-3
    before = [p.detach().clone() for p in trainer.server_model.parameters()]
    run.step()
    moved = torch.linalg.vector_norm(torch.stack([
        (p.detach() - q).norm() for p, q in zip(trainer.server_model.parameters(), before,
                                                strict=True)]))
    # 2 local iterations x 2 rounds' worth at most: lr 0.01 x norm 1e-3 x (1 + momentum...)
    assert 0 < moved < 2 * 0.01 * 1e-3 * 10


# --- through the command line: payloads in events.csv ----------------------------------
@pytest.mark.slow
def test_events_csv_carries_the_alexnet_tensors_sizes(cli, tmp_path):
    code, _, err = cli(ROOT / "scenarios" / "cellular_10pct.yaml", "--out", tmp_path,
                       "--set", "data.train_samples=1000", "--set", "data.test_samples=100",
                       "--set", "training.rounds=1", "--set", "training.local_iters=2",
                       "--set", "algorithms=[scala, fedavg]", "--no-progress", "--no-report",
                       "--no-figures")
    assert code == 0, err
    client, server = build_split_model("alexnet", "S2", 1, 10, gen(), image_size=28)
    per_sample = 64 * 7 * 7 * 4          # float32 activations of one 28 x 28 image
    root = tmp_path / "cellular_10pct"
    scala = pd.read_csv(root / "scala" / "seed0" / "events.csv")
    ups = scala[scala["kind"] == EventKind.ACTIVATION_UPLOAD.value]
    downs = scala[scala["kind"] == EventKind.GRADIENT_DOWNLOAD.value]
    assert len(ups) == 2 * 10 and len(downs) == 2 * 10
    # activations plus one int64 label a sample up, the activations' gradient down
    assert ((ups["payload_bytes"] % (per_sample + 8)) == 0).all()
    assert ((downs["payload_bytes"] % per_sample) == 0).all()
    samples = ups["payload_bytes"] // (per_sample + 8)
    assert samples.groupby(ups["local_iter"]).sum().tolist() == [320, 320]   # B = sum B_k
    models = scala[scala["kind"].isin([EventKind.MODEL_DOWNLOAD.value,
                                        EventKind.MODEL_UPLOAD.value])]
    assert state_bytes(client) == 75_264 and (models["payload_bytes"] == 75_264).all()
    fedavg = pd.read_csv(root / "fedavg" / "seed0" / "events.csv")
    models = fedavg[fedavg["kind"].isin([EventKind.MODEL_DOWNLOAD.value,
                                         EventKind.MODEL_UPLOAD.value])]
    assert (models["payload_bytes"] == 4 * 3_868_170).all() and len(models) == 20


@pytest.fixture(scope="module")
def fashion_slice_28():
    from scala_netsim.learn.data import load_dataset

    data = load_dataset("fashion_mnist", None, train_samples=1000, test_samples=10,
                        pad_to_32=False)
    return data


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_trains_a_round_of_alexnet(make_run, fashion_slice_28, algorithm):
    """One round on 3 clients of the 28 x 28 Fashion-MNIST slice (B = 3, one local
    iteration), the authors' settings (weight decay, clipping): the events carry the model's
    real payloads, the invariants hold and the test accuracy is a number."""
    run = make_run(algorithm, fashion_slice_28, model={"arch": "alexnet"},
                   training={"batch_size": 3, "local_iters": 1, "eval_every": 1,
                             "weight_decay": 5e-4, "grad_clip_norm": 10.0})
    row = run.step()
    assert run.problems() == []
    assert 0.0 <= row["test_acc"] <= 1.0 and math.isfinite(row["test_loss"])

    check_round_payloads(run, algorithm, "alexnet", image_size=28)


@pytest.mark.slow   # trains end to end for more than 5 s
@pytest.mark.parametrize("local_iters", [1, 3])
def test_alexnet_bytes_per_round_equal_the_closed_form(make_run, fashion_slice_28, local_iters):
    """The local-iterations study's closed form on the authors' model, with the sizes worked
    out by hand: SCALA sends per client and round 2 T |A_k| + 2 |w_c| (|A_k| = B_k x 3,136
    float32 activations, plus B_k int64 labels up), FL 2 |w|."""
    from scala_netsim.books.rounds import round_row

    activation_bytes, client_bytes, model_bytes = 64 * 7 * 7 * 4, 18_816 * 4, 3_868_170 * 4
    for algorithm in ("scala", "fedavg"):
        run = make_run(algorithm, fashion_slice_28, model={"arch": "alexnet"},
                       training={"local_iters": local_iters, "batch_size": 40})
        for r, selected in enumerate(([0, 3, 7], [1, 2, 9]), start=1):
            start, first = run.env.now, len(run.log)
            run.protocol.run_round(r, selected)
            row = round_row(r, run.log.rows[first:], start, run.env.now, len(selected))
            sizes = run.trainer.client_batch_sizes
            if algorithm == "scala":
                up = sum(local_iters * (activation_bytes + 8) * b for b in sizes.values())
                down = sum(local_iters * activation_bytes * b for b in sizes.values())
                up, down = up + client_bytes * 3, down + client_bytes * 3
            else:
                up = down = model_bytes * 3
            assert (row["uplink_bytes"], row["downlink_bytes"]) == (up, down), (algorithm, r)
