"""Shared fixtures and builders: a fixed seed for every test; tiny datasets, the real
Fashion-MNIST slice, tiny cells; runs built from the registry (`make_run`); the engine stack
on a tiny cell (`simulate`, `two_client_scala`); the 7-site network section (`NETWORK`) and a
run's events as a table (`events_of`); the golden end-to-end run (one CLI subprocess of every
algorithm that several test modules read); the command line in-process (`cli`)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from golden_run import PINNED_ENV, run_golden

# numpy computes float64 log2, log10 and power with Intel's SVML on AVX-512 machines and with
# glibc elsewhere, which differ in the last bit; the link rates come from those functions, and
# the timelines built in this process are compared with the golden files: numpy is held to its
# AVX2 paths, as the golden run is (PINNED_ENV), set before numpy's import (xdist's workers
# inherit it). A plugin that imported numpy first would defeat it: said, not silently wrong.
if "NPY_DISABLE_CPU_FEATURES" not in os.environ:
    assert "numpy" not in sys.modules, "numpy was imported before tests/conftest.py pinned it"
    os.environ["NPY_DISABLE_CPU_FEATURES"] = PINNED_ENV["NPY_DISABLE_CPU_FEATURES"]

# OpenMP threads that wait spin by default: beside another busy process (xdist's other worker,
# a subprocess) they take the cores that process needs. Set before torch's import, so the
# workers and every process they start wait asleep (results are the same; PINNED_ENV too).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import simpy  # noqa: E402
import torch  # noqa: E402

import channel  # noqa: E402
from scala_netsim.algorithms.common import ClientData, SGDSettings  # noqa: E402
from scala_netsim.algorithms.scala import SCALA  # noqa: E402
from scala_netsim.config.scenario import Scenario, validate_scenario  # noqa: E402
from scala_netsim.core.events import EventLog  # noqa: E402
from scala_netsim.learn.contract import Trainer  # noqa: E402
from scala_netsim.learn.data import Dataset  # noqa: E402
from scala_netsim.learn.models import build_split_model  # noqa: E402
from scala_netsim.runner.loop import Run  # noqa: E402
from scala_netsim.runner.world import build_world  # noqa: E402
from scala_netsim.sim.cell import Cell  # noqa: E402
from scala_netsim.sim.drops import NO_RULES, RoundRules  # noqa: E402
from scala_netsim.sim.link import WirelessLink  # noqa: E402
from scala_netsim.sim.protocols import ConcatSplitProtocol, Protocol  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
N0_DBM_PER_HZ = -174.0
SGD = SGDSettings(batch_size=8, lr=0.05, momentum=0.9, weight_decay=0.0)

# pytest-xdist (pyproject: `-n auto`) runs the tests in one worker process per core: each
# worker and what it starts gets its share of the cores, not all of them (threads waiting on
# each other's cores slow everything). The golden run keeps its pinned 2 threads.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1:
    THREADS = max(1, torch.get_num_threads() // WORKERS)
    torch.set_num_threads(THREADS)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(THREADS)


#: Session fixtures (one per worker process) that run the CLI for a minute: the tests that
#: read one all go to one worker (`--dist loadgroup`), so that it runs once.
GROUPED_FIXTURES = {"golden_run": "golden", "sweeps": "retime"}


# tryfirst: xdist's own hook turns the xdist_group marks into the "@group" suffix of each
# node id that loadgroup schedules by; marks added after it would be ignored.
# The slow tests (end to end, up to 45 s each) are handed out first: a worker that draws one
# near the end of the run would leave the other idle for its length (issue 62: the suite's
# budget).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, group in GROUPED_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
                break
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)   # (stable)


@pytest.fixture(autouse=True)
def fixed_seed() -> None:
    """Tests that draw without an explicit generator draw the same numbers every run."""
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)


# --- data ---------------------------------------------------------------------------
def make_client_data(label_sets: Sequence[Sequence[int]], per_client: int | Sequence[int] = 8,
                     seed: int = 0, num_classes: int = 10) -> ClientData:
    """Random 1x32x32 images; client i holds `per_client` samples with labels drawn from
    label_sets[i]."""
    g = torch.Generator().manual_seed(seed)
    sizes = [per_client] * len(label_sets) if isinstance(per_client, int) else list(per_client)
    x = torch.randn(sum(sizes), 1, 32, 32, generator=g)
    y = torch.cat([torch.tensor(s)[torch.randint(len(s), (m,), generator=g)]
                   for s, m in zip(label_sets, sizes, strict=False)])
    bounds = np.cumsum([0, *sizes])
    return ClientData(x, y, [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)],
                      num_classes)


def split_parts(seed: int = 0, split: str = "S2") -> tuple[torch.nn.Module, torch.nn.Module]:
    """AlexNet-14 for 1x32x32 images and 10 classes, cut at `split`."""
    return build_split_model("alexnet14", split, 1, 10, torch.Generator().manual_seed(seed))


def run_round_directly(trainer: Trainer, selected: Sequence[int], local_iters: int) -> None:
    """A round of a per-client split trainer, steps called in client order (no engine)."""
    trainer.begin_round(selected)
    for k in selected:
        trainer.client_receive_model(trainer.client_model_download(k))
    for t in range(local_iters):
        for k in selected:
            (reply,) = trainer.server_step([trainer.client_forward(k, t).upload]).replies
            trainer.client_backward(reply)
    for k in selected:
        trainer.server_receive_model(trainer.client_model_upload(k))
    trainer.end_round()


def fl_round_directly(trainer: Trainer, selected: Sequence[int], local_iters: int = 3) -> None:
    """A round of a federated trainer, each client's steps called in turn (no engine)."""
    trainer.begin_round(list(selected))
    for k in selected:
        trainer.client_receive_model(trainer.client_model_download(k))
        for t in range(local_iters):
            trainer.client_local_step(k, t)
        trainer.server_receive_model(trainer.client_model_upload(k))
    trainer.end_round()


def plain_split_training(client: torch.nn.Module, server: torch.nn.Module, data: ClientData,
                         batch_seed: int, batch: int, rounds: int, local_iters: int,
                         fresh_each_round: bool, **sgd: float) -> None:
    """Split training of client 0's data with torch's own SGD, no trainer: one optimiser each
    for the client and the server part, made afresh every round or kept for the whole run,
    the batches the trainers draw (ClientSampler)."""

    from scala_netsim.learn.training import ClientSampler

    sampler = ClientSampler(data.client_indices, batch_seed, "cpu")
    opt_c = opt_s = None
    for _ in range(rounds):
        if fresh_each_round or opt_c is None:
            opt_c = torch.optim.SGD(client.parameters(), **sgd)
            opt_s = torch.optim.SGD(server.parameters(), **sgd)
        for _ in range(local_iters):
            idx = sampler.next_batch(0, batch)
            a = client(data.train_x[idx])
            a_detached = a.detach().requires_grad_(True)
            loss = torch.nn.functional.cross_entropy(server(a_detached), data.train_y[idx])
            opt_s.zero_grad()
            loss.backward()
            opt_s.step()
            opt_c.zero_grad()
            a.backward(a_detached.grad)
            opt_c.step()


def tiny_dataset(per_class: int = 12, test: int = 20) -> Dataset:
    """A Dataset of random images, `per_class` training images of each of 10 classes."""
    g = torch.Generator().manual_seed(0)
    n = 10 * per_class
    return Dataset("tiny", torch.randn(n, 1, 32, 32, generator=g), torch.arange(n) % 10,
                   torch.randn(test, 1, 32, 32, generator=g), torch.arange(test) % 10,
                   tuple(str(c) for c in range(10)))


def tiny_scenario(algorithm: str = "scala", **sections: dict) -> Scenario:
    """10 clients, 3 per round, B = 24, 2 local iterations, 2 rounds; `sections` override."""
    document = {"name": "tiny", "device": "cpu", "data": {"num_clients": 10},
                "model": {"arch": "alexnet14"},    # the small model (the default is alexnet)
                "algorithms": [algorithm],
                "training": {"rounds": 2, "local_iters": 2, "batch_size": 24,
                             "participation": 0.3},
                "fedconcat": {"clusters": 2, "encoder_round_fraction": 0.5},
                "splitfed_v3": {"eval_clients": 2}}
    for key, value in sections.items():
        document[key] = {**document.get(key, {}), **value} if isinstance(value, dict) else value
    return validate_scenario(document)


@pytest.fixture(scope="session")
def fashion_slice() -> Dataset:
    """The first 1,000 training and 200 test images of the real Fashion-MNIST."""
    from scala_netsim.learn.data import load_dataset

    return load_dataset("fashion_mnist", None, train_samples=1000, test_samples=200)


@pytest.fixture
def make_run(fashion_slice: Dataset) -> Callable[..., Run]:
    """make_run(algorithm, dataset=None, **sections): a Run (trainer, protocol, link, log) of
    tiny_scenario(algorithm, **sections), on the Fashion-MNIST slice unless `dataset`."""

    def build(algorithm: str, dataset: Dataset | None = None, **sections: dict) -> Run:
        scenario = tiny_scenario(algorithm, **sections)
        world = build_world(scenario, fashion_slice if dataset is None else dataset)
        return Run(scenario, algorithm, world, torch.device("cpu"))

    return build


# --- the engine on a tiny cell -------------------------------------------------------
def tiny_cell(distance_m: Sequence[float], flops_per_s: Sequence[float],
              uplink_bandwidth_hz: float = 20e6, downlink_bandwidth_hz: float = 20e6,
              server_flops_per_s: float = 1e13) -> Cell:
    distance_m = np.asarray(distance_m, dtype=float)
    return Cell(distance_m, channel.Macro3gpp36814().pathloss_db(distance_m),
                np.asarray(flops_per_s, dtype=float), server_flops_per_s, uplink_bandwidth_hz,
                downlink_bandwidth_hz)


@dataclass
class Simulation:
    """A protocol on a tiny cell, with its clock, log and link."""

    env: simpy.Environment
    log: EventLog
    link: WirelessLink
    protocol: Protocol

    def run_round(self, round_: int, selected: Sequence[int]) -> None:
        self.protocol.run_round(round_, selected)


def simulate(trainer: Trainer, protocol: type[Protocol], cell: Cell, local_iters: int,
             client_tx_power_w: float = 0.2, bs_tx_power_w: float = 1.0,
             rules: RoundRules = NO_RULES) -> Simulation:
    """The engine stack a run builds, with Shannon rates and equal shares; `rules` that drop
    nobody (a sequential server)."""
    env, log = simpy.Environment(), EventLog()
    link_model = channel.AdaptiveShannonLink(client_tx_power_w, bs_tx_power_w,
                                             cell.downlink_bandwidth_hz, N0_DBM_PER_HZ)
    link = WirelessLink(env, cell, link_model, channel.EqualShareAllocator(), log,
                        np.random.SeedSequence(0))
    extra = () if rules is NO_RULES else (rules,)   # (an asynchronous protocol takes none)
    return Simulation(env, log, link, protocol(env, cell, trainer, link, log, local_iters,
                                               *extra))


# The two-client SCALA cell whose timeline tests/sim/test_engine.py works out by hand.
DIST_M = (100.0, 400.0)
FLOPS_PER_S = (2e9, 5e9)
SERVER_FLOPS_PER_S = 1e13
W_UL, W_DL, P_UE, P_BS = 10e6, 20e6, 0.2, 1.0
B_K = (3, 5)          # |D_k| = 6 and 10, B = 8
LOCAL_ITERS = 2


def two_client_scala(protocol: type[Protocol] = ConcatSplitProtocol) -> Simulation:
    """SCALA on the two-client cell above: |D_k| = 6 and 10 random images, B = 8."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 1, 32, 32, generator=g)
    y = torch.randint(10, (16,), generator=g)
    data = ClientData(x, y, [np.arange(6), np.arange(6, 16)], 10)
    trainer = SCALA(*split_parts(), data, SGDSettings(8, 0.01, 0.9), 0)
    cell = tiny_cell(DIST_M, FLOPS_PER_S, W_UL, W_DL, SERVER_FLOPS_PER_S)
    return simulate(trainer, protocol, cell, LOCAL_ITERS, P_UE, P_BS)


# --- a network of cells ---------------------------------------------------------------
#: The network section most network tests run: 7 hexagonal sites of 3 sectors, 500 m apart,
#: 3GPP 38.901 UMa path loss (tests vary it as {**NETWORK, key: value}; never changed in place).
NETWORK = {"layout": {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3},
           "pathloss": "3gpp_38901_uma"}


def events_of(run: Run) -> pd.DataFrame:
    """A run's event table, one row per event, its declared columns."""
    names, rows = run.event_table()
    return pd.DataFrame(rows, columns=list(names))


def per_instant_air(run: Run) -> pd.DataFrame:
    """A per-instant scheduler's network run's air record as a table, once its rates have
    derived again from it and no block idled (books.air_rates.air_rate_problems,
    round_robin_problems)."""
    from scala_netsim.books.air_rates import air_rate_problems
    from scala_netsim.books.blocks import round_robin_problems
    record = run.link.air_record()
    frame = record.frame()
    assert air_rate_problems(frame, events_of(run), record.settings) == []
    assert round_robin_problems(frame, record.settings.blocks) == []
    return frame


# --- the command line -----------------------------------------------------------------
@dataclass
class GoldenRun:
    out: Path                    # OUT/golden/
    proc: subprocess.CompletedProcess

    def run_dir(self, algorithm: str) -> Path:
        return self.out / algorithm / "seed3"


@pytest.fixture(scope="session")
def golden_run(tmp_path_factory) -> GoldenRun:
    """One CLI run of tests/golden/scenario.yaml: every algorithm, 2 rounds, 600 images, with
    its figures (the results layout is checked on it)."""
    out = tmp_path_factory.mktemp("golden")
    proc = run_golden(out, figures=True)
    assert proc.returncode == 0, proc.stderr
    return GoldenRun(out / "golden", proc)


@pytest.fixture
def cli(capsys):
    """Run the command line in this process: cli(*args) -> (exit code, stdout, stderr)."""
    from scala_netsim.cli import main

    def run(*args) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def check_round_payloads(run: Run, algorithm: str, arch: str, image_size: int = 32) -> None:
    """After one round at B_k = 1 of `arch` (split S2, 1 channel, 10 classes): every event
    carries the model's real payloads (activations and their gradient, the client model, the
    whole model for FL, the client model and aux head for SFL with local loss) or FLOPs, and
    both client passes happened."""
    from scala_netsim.algorithms.scala import with_bottleneck
    from scala_netsim.config.registry import ALGORITHMS
    from scala_netsim.core.events import EventKind
    from scala_netsim.learn.models import state_bytes

    side = (1, image_size, image_size)
    client, server = build_split_model(arch, "S2", 1, 10, torch.Generator().manual_seed(0),
                                       image_size=image_size)
    if algorithm == "scala_pe":   # its client part ends in the 8-channel bottleneck
        client, server = with_bottleneck(client, server, side, 8, 1,
                                         torch.Generator().manual_seed(0))
    sample = client(torch.zeros(1, *side))[0].numel()
    whole = state_bytes(torch.nn.Sequential(client, server))
    models = {"FederatedProtocol": whole, "AsyncFederatedProtocol": whole,
              "LocalLossProtocol": state_bytes(client) + (sample * 10 + 10) * 4}
    # (the protocol or the pattern it extends: Flower's GridProtocol is FederatedProtocol's)
    protocol = next((c.__name__ for c in ALGORITHMS[algorithm].protocol.__mro__
                     if c.__name__ in models), ALGORITHMS[algorithm].protocol.__name__)
    kinds = set()
    for e in run.log.events:
        kinds.add(e.kind)
        if e.kind is EventKind.ACTIVATION_UPLOAD:   # B_k = 1: float32 values, an int64 label
            assert e.payload_bytes == sample * 4 + 8
        elif e.kind is EventKind.GRADIENT_DOWNLOAD:
            assert e.payload_bytes == sample * 4
        elif e.kind in (EventKind.MODEL_DOWNLOAD, EventKind.MODEL_UPLOAD):
            assert e.payload_bytes == models.get(protocol, state_bytes(client))
        elif e.kind is EventKind.SERVER_UPDATE:   # an asynchronous server's mark
            assert e.payload_bytes == e.flops == 0 and e.t_start_s == e.t_end_s
        else:
            assert e.flops > 0
    assert EventKind.CLIENT_FORWARD in kinds and EventKind.CLIENT_BACKWARD in kinds
