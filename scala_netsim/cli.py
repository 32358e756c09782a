"""Command line: python -m scala_netsim SCENARIO.yaml [--out DIR] [--set key=value ...]."""

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scala-netsim",
        description="Split federated learning trained for real under a simulated cellular clock.")
    parser.add_argument("scenario", help="scenario YAML file (see scenarios/)")
    parser.add_argument("--out", default="results",
                        help="results root; runs land in OUT/<scenario>/<algorithm>/seed<k>/ "
                             "(default: results)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="dotted.key=value",
                        help="override a scenario value, e.g. --set training.rounds=20 "
                             "(repeatable; values are parsed as YAML)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"),
                        help="override the scenario's device")
    parser.add_argument("--resume", action="store_true",
                        help="continue interrupted runs from their last checkpoint and skip "
                             "finished ones (the results equal those of an uninterrupted run)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def check_writable(out: Path):
    """The first existing ancestor of `out` must be a writable directory."""
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        return f"--out: cannot write results under {str(out)!r} ({str(probe)!r} is not a writable directory)"
    return None


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Imports after argument parsing so `--help` and input errors answer at once.
    from scala_netsim.scenario import ScenarioError, load_scenario

    overrides = list(args.overrides) + ([f"device={args.device}"] if args.device else [])
    try:
        scenario = load_scenario(args.scenario, overrides)
    except ScenarioError as exc:
        return fail(str(exc))
    out = Path(args.out)
    problem = check_writable(out)
    if problem:
        return fail(problem)

    import torch

    from scala_netsim.data import DataNotFoundError, load_dataset
    from scala_netsim.estimate import estimate_run_time_s, format_duration
    from scala_netsim.run import build_world

    if scenario.device == "cuda" and not torch.cuda.is_available():
        return fail("device: 'cuda' was asked for but no CUDA GPU is available; "
                    "use 'cpu' or 'auto'")
    device = torch.device("cuda" if scenario.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if scenario.device == "auto" else scenario.device))
    data = scenario.data
    try:
        dataset = load_dataset(data.dataset, data.data_dir, data.train_samples,
                               data.test_samples).to(device)
    except DataNotFoundError as exc:
        return fail(str(exc))
    try:
        world = build_world(scenario, dataset)
    except ValueError as exc:
        return fail(str(exc))

    print(summary_text(scenario, dataset, device))
    estimate_s = estimate_run_time_s(scenario, dataset, device)
    print(f"estimated run time on this machine: {format_duration(estimate_s)} "
          f"for {len(scenario.algorithms)} algorithm(s)")
    from scala_netsim.invariants import InvariantError
    from scala_netsim.results import run_dir
    from scala_netsim.run import CheckpointError
    from scala_netsim.scenario import scenario_yaml

    deterministic(device)
    for algorithm in scenario.algorithms:
        folder = run_dir(out, scenario.name, algorithm, scenario.seed)
        if args.resume and (folder / "scenario.yaml").is_file():
            if (folder / "scenario.yaml").read_text() != scenario_yaml(scenario):
                return fail(f"--resume: {folder} holds a run of another scenario (its "
                            f"scenario.yaml differs); run without --resume to start afresh, "
                            f"or use another --out")
            summary = json.loads((folder / "summary.json").read_text()) if (
                folder / "summary.json").is_file() else {}
            if summary.get("status") == "completed":
                print(f"{algorithm}: already completed, skipped ({folder})")
                continue
        try:
            summary = run_one(scenario, algorithm, world, out, device, not args.no_progress,
                              args.resume)
        except CheckpointError as exc:
            return fail(str(exc))
        except InvariantError as exc:  # a bug in the engine, never bad input: loud, exit 1
            print(f"error: {algorithm}: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            command = " ".join(["python -m scala_netsim", *map(shlex.quote, sys.argv[1:])])
            if "--resume" not in command:
                command += " --resume"
            print(f"\ninterrupted during {algorithm}; every file written is complete. Continue "
                  f"from the last checkpoint with:\n  {command}", file=sys.stderr)
            return 130
        print(f"{algorithm}: {summary['status']}, best accuracy {summary['best_acc']:.2%} (round "
              f"{summary['best_round']}), final {summary['final_acc']:.2%}, simulated time "
              f"{format_duration(summary['total_sim_time_s'])}, wall time "
              f"{format_duration(summary['wall_time_s'])}")
    from analysis.compare import write_comparison

    write_comparison(out / scenario.name, scenario.report.accuracy_targets, scenario.algorithms)
    print(f"results: {out / scenario.name} (comparison.csv, accuracy_vs_time.png)")
    return 0


def deterministic(device) -> None:
    """Same scenario and seed, same numbers: deterministic kernels (CUDA also needs a fixed
    cuBLAS workspace; some CUDA kernels have no deterministic version and then only warn)."""
    import torch

    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=device.type == "cuda")


def run_one(scenario, algorithm, world, out, device, show_progress, resume=False):
    from tqdm import tqdm

    from scala_netsim.run import run_algorithm

    bar = tqdm(total=scenario.training.rounds, desc=algorithm, unit="round",
               disable=not show_progress, file=sys.stderr)
    last = {"acc": "-"}

    def progress(round_, sim_time_s, acc):
        if acc == acc:  # not NaN: an evaluation round
            last["acc"] = f"{acc:.2%}"
        bar.set_postfix_str(f"sim {sim_time_s:,.1f} s, acc {last['acc']}", refresh=False)
        bar.update(1)

    try:
        return run_algorithm(scenario, algorithm, world, out, device, progress, resume)
    finally:
        bar.close()


def summary_text(scenario, dataset, device) -> str:
    tr, net, comp, data = scenario.training, scenario.network, scenario.compute, scenario.data
    part = data.partition
    part_text = part.kind + "".join(f" {k}={v}" for k, v in part.model_dump().items() if k != "kind")
    return "\n".join([
        f"scenario {scenario.name} (seed {scenario.seed}, device {device})",
        f"  data: {data.dataset}, {len(dataset.train_y)} train / {len(dataset.test_y)} test images, "
        f"{data.num_clients} clients, partition {part_text}",
        f"  model: {scenario.model.arch} split {scenario.model.split}",
        f"  training: {', '.join(scenario.algorithms)}; {tr.rounds} rounds x {tr.local_iters} "
        f"local iterations, B = {tr.batch_size}, {scenario.num_participants} clients per round, "
        f"lr {tr.lr}, momentum {tr.momentum}",
        f"  cell: radius {net.radius_m:g} m, uplink {net.uplink_bandwidth_hz / 1e6:g} MHz at "
        f"{net.client_tx_power_w:g} W, downlink {net.downlink_bandwidth_hz / 1e6:g} MHz at "
        f"{net.bs_tx_power_w:g} W, noise {net.noise_psd_dbm_per_hz:g} dBm/Hz",
        f"  compute: clients {comp.client_flops_per_s[0]:.3g}..{comp.client_flops_per_s[1]:.3g} "
        f"FLOP/s, server {comp.server_flops_per_s:.3g} FLOP/s",
    ])


if __name__ == "__main__":
    sys.exit(main())
