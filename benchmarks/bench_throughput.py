"""Training throughput of SCALA against plain PyTorch, measured side by side in one run.

(a) plain centralized training of the model (--arch: AlexNet-14 by default, the authors'
    AlexNet, ResNet-18, VGG-11) on batches of B Fashion-MNIST images (28 x 28 for AlexNet,
    padded to 32 x 32 for the others), written as anyone would in plain PyTorch (standard
    NCHW layers);
(a') the same, with the package's layers (channels-last first two conv blocks), so that the
    layout gain is not mistaken for an engine gain (the two AlexNets only);
(b) the bare SCALA math: the same client and server steps in a plain loop, no engine;
(c) the full SCALA co-simulation: SimPy engine, FLOP accounting, event log, round rows.

FLOPs are counted with torch's FlopCounterMode. SCALA does more arithmetic per sample than
centralized training (a second, input-only backward pass through the server part), so the
fair comparison is the arithmetic rate (GFLOP/s), not samples per second. The three are
timed in interleaved blocks so that load on the machine hits them alike; medians are printed.

Then one line per algorithm (--algorithms, default all): its co-simulation's achieved GFLOP/s
(FLOPs of every client and server step, as counted for its events) as a ratio to (a), and to
(d) plain PyTorch training steps on the per-client batch B/K (32 here), the same loop a
per-client algorithm runs, written plainly: the ceiling for SplitFed and the FL family, whose
steps are per client. Each algorithm's blocks are interleaved with blocks of (a) and (d).

    python benchmarks/bench_throughput.py [--repeats 5] [--rounds-per-block 4]
                                          [--algorithms scala fedavg] [--arch vgg11]
                                          [--device cuda]

Every variant runs on --device (the data there too) in the kernels' mode a run uses
(scala_netsim.runner.world.deterministic); on a GPU each block ends with a synchronisation.

A ResNet-18 round (B = 320, T = 5) is about 2.7 TFLOP: minutes on a 2-core CPU, so run the
larger models with `--repeats 2 --rounds-per-block 1` there.
"""

import argparse
import statistics
import time

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from scala_netsim.algorithms.scala import SCALA
from scala_netsim.algorithms.selection import RandomSelector
from scala_netsim.books.rounds import FLOPS, round_row
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import validate_scenario
from scala_netsim.core.catalog import ARCHS, DEFAULT_SPLITS, NATIVE_SIZE_ARCHS
from scala_netsim.learn.data import load_dataset
from scala_netsim.learn.models import build_split_model
from scala_netsim.runner.estimate import synchronize
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world, deterministic


def centralized_block(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
                      y: torch.Tensor, batch_size: int, steps: int,
                      generator: torch.Generator) -> tuple[float, int]:
    """`steps` plain training steps; -> (seconds, samples)."""
    start = time.perf_counter()
    for _ in range(steps):
        idx = torch.randint(len(y), (batch_size,), generator=generator).to(x.device)
        optimizer.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
        optimizer.step()
    synchronize(x.device)
    return time.perf_counter() - start, steps * batch_size


def bare_scala_round(trainer: SCALA, selected: list[int], local_iters: int) -> int:
    trainer.begin_round(selected)
    for k in selected:
        trainer.client_receive_model(trainer.client_model_download(k))
    flops = 0
    for t in range(local_iters):
        uploads = []
        for k in selected:
            forward = trainer.client_forward(k, t)
            uploads.append(forward.upload)
            flops += forward.flops
        step = trainer.server_step(uploads)
        flops += step.flops
        for reply in step.replies:
            flops += trainer.client_backward(reply)
    for k in selected:
        trainer.server_receive_model(trainer.client_model_upload(k))
    trainer.end_round()
    return flops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved blocks per variant")
    parser.add_argument("--rounds-per-block", type=int, default=4)
    parser.add_argument("--algorithms", nargs="*", default=list(ALGORITHMS),
                        choices=list(ALGORITHMS), help="algorithms for the per-algorithm lines")
    parser.add_argument("--arch", default="alexnet14", choices=list(ARCHS),
                        help="the model, split at its default point")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="where every variant trains")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU is available")
    device = torch.device(args.device)
    deterministic(device)

    split = DEFAULT_SPLITS[args.arch]
    scenario = validate_scenario({"name": "bench", "device": "cpu",   # cellular_10pct defaults
                                  "model": {"arch": args.arch, "split": split}})
    tr = scenario.training
    dataset = load_dataset("fashion_mnist", pad_to_32=args.arch not in NATIVE_SIZE_ARCHS).to(device)
    world = build_world(scenario, dataset)
    selection, selector = np.random.default_rng(0), RandomSelector(scenario.data.num_clients)
    rounds = [selector.select(scenario.num_participants, selection)
              for _ in range(args.repeats * args.rounds_per_block * 2 + 2)]

    # (a) and (a') centralized
    centralized = {}
    layouts = ((("a", False), ("a'", True)) if args.arch in ("alexnet", "alexnet14")
               else (("a", False),))
    for variant, fast_layout in layouts:
        model = nn.Sequential(*build_split_model(args.arch, split, 1, 10,
                                                 torch.Generator().manual_seed(0), fast_layout,
                                                 image_size=dataset.image_size)).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=tr.lr, momentum=tr.momentum)
        centralized[variant] = (model, optimizer)
    g = torch.Generator().manual_seed(0)
    with FlopCounterMode(display=False) as counter:
        centralized_block(*centralized["a"], dataset.train_x, dataset.train_y, tr.batch_size, 1, g)
    flops_per_step = counter.get_total_flops()

    # (b) bare math and (c) co-simulation, each with its own trainer
    bare = Run(scenario, "scala", world, device).trainer
    cosim = Run(scenario, "scala", world, device)

    def cosim_round(r: int) -> int:
        start_s, first = cosim.env.now, len(cosim.log)
        cosim.protocol.run_round(r, rounds[r])
        rows = cosim.log.rows[first:]   # as Run.step hands them to round_row
        round_row(r, rows, start_s, cosim.env.now, len(rounds[r]))
        return sum(row[FLOPS] for row in rows)

    # warm-up (also fills the FLOP caches)
    for model, optimizer in centralized.values():
        centralized_block(model, optimizer, dataset.train_x, dataset.train_y, tr.batch_size, 2, g)
    bare_scala_round(bare, rounds[0], tr.local_iters)
    cosim_round(0)

    results = {v: [] for v in (*centralized, "b", "c")}  # (seconds, samples, flops) per block
    steps = args.rounds_per_block * tr.local_iters
    r = 1
    for _ in range(args.repeats):
        for variant, (model, optimizer) in centralized.items():
            seconds, samples = centralized_block(model, optimizer, dataset.train_x,
                                                 dataset.train_y, tr.batch_size, steps, g)
            results[variant].append((seconds, samples, steps * flops_per_step))
        for variant in ("b", "c"):
            start, flops = time.perf_counter(), 0
            for _ in range(args.rounds_per_block):
                flops += (bare_scala_round(bare, rounds[r], tr.local_iters) if variant == "b"
                          else cosim_round(r))
                r += 1
            synchronize(device)
            results[variant].append((time.perf_counter() - start, steps * tr.batch_size, flops))

    def rates(variant: str) -> tuple[float, float]:
        samples_per_s = statistics.median(n / s for s, n, _ in results[variant])
        gflops_per_s = statistics.median(f / s / 1e9 for s, _, f in results[variant])
        return samples_per_s, gflops_per_s

    names = {"a": "(a) centralized PyTorch", "a'": "(a') centralized, our layout",
             "b": "(b) bare SCALA math", "c": "(c) SCALA co-simulation"}
    names = {v: name for v, name in names.items() if v in results}
    print(f"{args.arch} split {split}, B = {tr.batch_size}, {scenario.num_participants} clients x "
          f"{tr.local_iters} iterations, {device.type} ({torch.get_num_threads()} threads), "
          f"{args.repeats} interleaved blocks of {steps} iterations each")
    print(f"{'variant':28s} {'samples/s':>10s} {'GFLOP/s':>9s}")
    for v in names:
        sps, gfs = rates(v)
        print(f"{names[v]:28s} {sps:10.1f} {gfs:9.2f}")
    (sb, gb), (sc, gc), ga = rates("b"), rates("c"), rates("a")[1]
    print(f"ratio (c)/(b) samples/s:  {sc / sb:.3f}   (target >= 0.97: engine overhead under 3 %)")
    print(f"ratio (c)/(a) GFLOP/s:    {gc / ga:.3f}   (target >= 0.90)")
    print(f"ratio (b)/(a) GFLOP/s:    {gb / ga:.3f}")
    if "a'" in results:
        ga2 = rates("a'")[1]
        print(f"ratio (c)/(a') GFLOP/s:   {gc / ga2:.3f}   (against centralized "
              f"with the same layout)")

    model_a, optimizer_a = centralized["a"]
    small_batch = tr.batch_size // scenario.num_participants
    small_steps = steps * scenario.num_participants
    with FlopCounterMode(display=False) as counter:
        centralized_block(model_a, optimizer_a, dataset.train_x, dataset.train_y, small_batch, 1, g)
    small_flops = counter.get_total_flops()
    print(f"\nper algorithm: co-simulation GFLOP/s as a ratio to (a), and to (d) plain PyTorch "
          f"steps at batch {small_batch}, measured alongside")
    for algorithm in args.algorithms:
        run = Run(scenario, algorithm, world, device)
        # a block: `count` rounds; for an asynchronous algorithm, `count` x (clients per
        # round) versions (a version takes one client's update, FedBuff's K of them)
        per_round = (scenario.num_participants
                     if ALGORITHMS[algorithm].traits.asynchronous else 1)

        def block(count: int, first_round: int, run: Run = run,
                  per_round: int = per_round) -> tuple[float, int]:
            start, first = time.perf_counter(), len(run.log)
            for i in range(count * per_round):
                run.driver.advance(first_round * per_round + i + 1)
            synchronize(device)
            return time.perf_counter() - start, sum(e.flops for e in run.log.since(first))

        block(1, 0)  # warm-up, FLOP caches
        ratios, ratios_d, ceiling = [], [], []
        for rep in range(args.repeats):
            seconds_a, _ = centralized_block(model_a, optimizer_a, dataset.train_x,
                                             dataset.train_y, tr.batch_size, steps, g)
            seconds_d, _ = centralized_block(model_a, optimizer_a, dataset.train_x,
                                             dataset.train_y, small_batch, small_steps, g)
            seconds, flops = block(args.rounds_per_block, 1 + rep * args.rounds_per_block)
            rate_a = steps * flops_per_step / seconds_a
            rate_d = small_steps * small_flops / seconds_d
            ratios.append((flops / seconds) / rate_a)
            ratios_d.append((flops / seconds) / rate_d)
            ceiling.append(rate_d / rate_a)
        print(f"  {algorithm:16s} GFLOP/s ratio to (a): {statistics.median(ratios):.3f}   "
              f"to (d): {statistics.median(ratios_d):.3f}   ((d)/(a): "
              f"{statistics.median(ceiling):.3f})")


if __name__ == "__main__":
    main()
