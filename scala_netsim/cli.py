"""Command line: python -m scala_netsim SCENARIO.yaml [--out DIR] [--set key=value ...]."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scala_netsim.core.exits import check_writable, fail

if TYPE_CHECKING:   # imported for real after the arguments are parsed (--help answers at once)
    import torch

    from scala_netsim.config.scenario import Scenario
    from scala_netsim.data import Dataset
    from scala_netsim.sweep import SweepCell

#: The run-time estimate times 8 training steps; below this many local iterations in all the
#: runs to train (a smoke test, a one-round check) it would cost a good part of the work
#: itself, and none is printed.
MIN_STEPS_TO_ESTIMATE = 20


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scala-netsim",
        description="Split federated learning trained for real under a simulated cellular clock.")
    parser.add_argument("scenario", help="scenario YAML file (see scenarios/)")
    parser.add_argument("--out", default="results",
                        help="results root; runs land in OUT/<scenario>/<algorithm>/seed<k>/, "
                             "sweep cells in OUT/<scenario>/<algorithm>/<key=value,...>/seed<k>/ "
                             "(default: results)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="dotted.key=value",
                        help="override a scenario value, e.g. --set training.rounds=20 "
                             "(repeatable; values are parsed as YAML)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"),
                        help="override the scenario's device")
    parser.add_argument("--force", action="store_true",
                        help="rerun every run from scratch (by default finished runs are "
                             "skipped and interrupted ones continue from their checkpoint)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="run N cells at once in worker processes, the machine's cores "
                             "split between them (default 1: one after another, here)")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="local (this machine, see --jobs) or ray (each cell a Ray task; "
                             "needs pip install -e '.[ray]')")
    parser.add_argument("--ray-address", default=None,
                        help="Ray cluster to submit to (e.g. 10.0.0.5:6379 or auto); default: "
                             "start a local Ray instance")
    parser.add_argument("--ray-cpus-per-cell", type=int, default=1, metavar="C",
                        help="CPUs Ray reserves for each cell, = its torch threads (default 1)")
    parser.add_argument("--retime", choices=("on", "off"), default="on",
                        help="on (default): of the cells that differ only in network.* and "
                             "compute.*, train one per algorithm and learning settings and "
                             "re-time the others from its run, exactly (scala_netsim.replay); "
                             "off: train every cell")
    parser.add_argument("--timing-only", action="store_true",
                        help="time the protocols without training (= --set timing_only=true): "
                             "each step's bytes and FLOPs come from the real trainer's first "
                             "step of that batch size; no accuracy (scala_netsim.timing)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-report", action="store_true",
                        help="do not write report.md and the study figures at the end")
    parser.add_argument("--no-figures", action="store_true",
                        help="draw no figures, neither each run's (about a second per run; a "
                             "sweep of re-timed cells spends most of its time on them) nor the "
                             "comparison's; `python -m analysis.plots DIR` draws them later")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Imports after argument parsing so `--help` and input errors answer at once.
    from scala_netsim.config.scenario import ScenarioError, load_scenario
    from scala_netsim.sweep import expand_sweep

    for flag, value in (("--jobs", args.jobs), ("--ray-cpus-per-cell", args.ray_cpus_per_cell)):
        if value < 1:
            return fail(f"{flag}: must be a whole number >= 1, got {value}")
    overrides = list(args.overrides) + ([f"device={args.device}"] if args.device else []) + (
        ["timing_only=true"] if args.timing_only else [])
    out = Path(args.out)
    try:
        scenario = load_scenario(args.scenario, overrides)
        cells = expand_sweep(scenario, out)
    except ScenarioError as exc:
        return fail(str(exc))
    problem = check_writable(out)
    if problem:
        return fail(problem)
    from scala_netsim.run import cell_edge_warning

    for warning in dict.fromkeys(filter(None, (cell_edge_warning(c.scenario) for c in cells))):
        print(f"warning: {warning}", file=sys.stderr)
    if scenario.timing_only:
        from scala_netsim.algorithms.registry import ALGORITHMS

        unfit = [a for a in scenario.algorithms if not ALGORITHMS[a].traits.timeable]
        if unfit:
            return fail(f"timing_only: {', '.join(unfit)} cannot be timed without training "
                        f"(the sizes of their messages change from round to round); leave "
                        f"them out of algorithms or run with training")

    import torch

    from scala_netsim.data import DataNotFoundError
    from scala_netsim.estimate import StepCosts, format_duration, run_time_s
    from scala_netsim.partition import PartitionError
    from scala_netsim.run import cell_dataset, client_partition
    from scala_netsim.sweep import (
        cell_state,
        plan_retiming,
        swept_values,
        write_sweep_index,
    )

    if scenario.device == "cuda" and not torch.cuda.is_available():
        return fail("device: 'cuda' was asked for but no CUDA GPU is available; "
                    "use 'cpu' or 'auto'")
    device = torch.device("cuda" if scenario.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if scenario.device == "auto" else scenario.device))
    try:  # every dataset the cells use must be there and partition as asked before anything
        partitioned = set()  # runs (each dataset loaded once, each partition made once)
        for cell in cells:
            data = (cell.scenario.data.model_dump_json(), cell.scenario.seed)
            if data not in partitioned:
                client_partition(cell.scenario, cell_dataset(cell.scenario, device))
                partitioned.add(data)
        dataset = cell_dataset(cells[0].scenario, device)
    except (DataNotFoundError, PartitionError) as exc:
        return fail(str(exc))

    # by folder: swept values may be lists, which cannot be dictionary keys
    states = {c.folder: ("new" if args.force else cell_state(c)) for c in cells}
    foreign = [c for c in cells if states[c.folder] == "other"]
    if foreign:
        listed = "\n".join(f"  {c.folder}" for c in foreign[:5]) + (
            f"\n  ... and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        return fail(f"these folders hold runs of another scenario (their scenario.yaml "
                    f"differs):\n{listed}\nuse --force to replace them, or another --out")
    todo = [c for c in cells if states[c.folder] != "finished"]
    plan = plan_retiming(cells, states) if args.retime == "on" else {}
    trained = [c for c in todo if c.folder not in plan]

    print(summary_text(scenario, dataset, device))
    if scenario.sweep:
        print(f"  sweep: {' x '.join(f'{k} {v}' for k, v in swept_values(cells).items())} x "
              f"{len(scenario.algorithms)} algorithm(s) = {len(cells)} cells")
    for cell in cells:
        if states[cell.folder] == "finished":
            print(f"{cell.label}: already completed, skipped ({cell.folder})")
    if plan:
        print(f"{len(plan)} cell(s) differ from another only in network.*/compute.*: they are "
              f"re-timed from its run, not trained (--retime off trains them)")
    steps = sum(c.scenario.training.rounds * c.scenario.training.local_iters for c in trained)
    if trained and not scenario.timing_only and steps >= MIN_STEPS_TO_ESTIMATE:
        costs = StepCosts.measure(scenario, dataset, device)
        estimate_s = sum(run_time_s(c.scenario, c.algorithm, len(dataset.test_y), costs)
                         for c in trained)
        print(f"estimated run time on this machine: {format_duration(estimate_s)} for "
              f"{len(trained)} run(s) one after another"
              + (f", spread over {args.jobs} jobs" if args.jobs > 1 else ""))
    elif not todo:
        print("every run is finished already (--force reruns them); rebuilding the report")

    write_sweep_index(scenario, cells, out)
    previous = signal.signal(signal.SIGTERM, interrupt)  # kill, timeout, a batch scheduler
    try:
        code = run_cells(trained, [c for c in todo if c.folder in plan], states, device,
                         args, plan, out)
    except KeyboardInterrupt:
        command = " ".join(["python -m scala_netsim", *map(shlex.quote, sys.argv[1:])])
        print(f"\ninterrupted; every file written is complete. Run the same command again "
              f"to continue from the last checkpoints (finished runs are skipped):\n"
              f"  {command}", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if code:
        return code
    if not args.no_figures:  # runs draw nothing themselves (worker processes, Ray tasks)
        from analysis.plots import plot_run

        for cell in todo:
            plot_run(cell.folder, title=f"{scenario.name}: {cell.label}")
    root = out / scenario.name
    from analysis.compare import write_comparison

    written_paths = [write_comparison(root, scenario.report.accuracy_targets)]
    if not args.no_figures:
        from analysis.plots import comparison_figures

        written_paths += comparison_figures(root)
    written = ", ".join(p.name for p in written_paths)
    if not args.no_report:
        from analysis.report import write_report

        write_report(root)
        written += ", report.md"
    print(f"results: {root} ({written})")
    return 0


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM handler: stop as Ctrl-C does (workers stopped, files complete, resume hint)."""
    raise KeyboardInterrupt


def run_cells(trained: list[SweepCell], retimed: list[SweepCell], states: dict[Path, str],
              device: torch.device, args: argparse.Namespace, plan: dict[Path, SweepCell],
              out: Path) -> int:
    """Train the cells `trained` with the chosen executor, then re-time the cells `retimed`
    from the cell `plan` maps each to (training any that cannot be re-timed). -> exit code
    (0, 1 or 2)."""
    from scala_netsim.config.scenario import ScenarioError
    from scala_netsim.estimate import format_duration
    from scala_netsim.invariants import InvariantError
    from scala_netsim.replay import RecordError, TimelineDiverged
    from scala_netsim.run import CheckpointError
    from scala_netsim.sweep import cell_arguments, retime_cell, run_in_processes, run_on_ray

    def resume_of(cell: SweepCell) -> bool:
        return states[cell.folder] == "partial"

    def report(cell: SweepCell, summary: dict) -> None:
        how = "re-timed" if summary.get("retimed_from") else summary["status"]
        accuracy = ("timing only" if summary.get("timing_only") else
                    f"best accuracy {summary['best_acc']:.2%} (round {summary['best_round']}), "
                    f"final {summary['final_acc']:.2%}")
        drops = ("" if "dropped_fraction" not in summary else
                 f", {summary['dropped_fraction']:.1%} of selected clients dropped (label bias "
                 f"TV {summary['label_bias_tv']:.3f})")
        print(f"{cell.label}: {how}, {accuracy}, simulated "
              f"time {format_duration(summary['total_sim_time_s'])}{drops}, wall time "
              f"{format_duration(summary['wall_time_s'])}", flush=True)

    try:
        if args.executor == "ray":
            run_on_ray(trained, device, args.ray_address, args.ray_cpus_per_cell, resume_of,
                       report)
        elif args.jobs > 1 and len(trained) > 1:
            run_in_processes(trained, device, args.jobs, resume_of, report)
        else:
            for cell in trained:
                report(cell, run_one(cell, device, not args.no_progress, resume_of(cell)))
        for cell in retimed:
            source = plan[cell.folder].folder
            arguments = cell_arguments(cell, device, resume=False)[:5]
            try:
                summary = retime_cell(*arguments, str(source.resolve()),
                                      os.path.relpath(source, out))
            except (RecordError, TimelineDiverged) as exc:
                print(f"{cell.label}: not re-timed from {source}: {exc}; training it for "
                      f"real", flush=True)
                summary = run_one(cell, device, not args.no_progress)
            report(cell, summary)
    except (CheckpointError, ScenarioError) as exc:
        return fail(str(exc))
    except InvariantError as exc:  # a bug in the engine, never bad input: loud, exit 1
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def run_one(cell: SweepCell, device: torch.device, show_progress: bool,
            resume: bool = False) -> dict:
    from tqdm import tqdm

    from scala_netsim.sweep import cell_arguments, run_cell

    bar = tqdm(total=cell.scenario.training.rounds, desc=cell.label, unit="round",
               disable=not show_progress, file=sys.stderr)
    last = {"acc": "-"}

    def progress(round_: int, sim_time_s: float, acc: float) -> None:
        if acc == acc:  # not NaN: an evaluation round
            last["acc"] = f"{acc:.2%}"
        bar.set_postfix_str(f"sim {sim_time_s:,.1f} s, acc {last['acc']}", refresh=False)
        bar.update(1)

    try:
        return run_cell(*cell_arguments(cell, device, resume), progress=progress)
    finally:
        bar.close()


def summary_text(scenario: Scenario, dataset: Dataset, device: torch.device) -> str:
    tr, net, comp, data = scenario.training, scenario.network, scenario.compute, scenario.data
    part = data.partition
    part_text = part.kind + "".join(f" {k}={v}" for k, v in part.model_dump().items()
                                    if k != "kind")
    return "\n".join([
        f"scenario {scenario.name} (seed {scenario.seed}, device {device})",
        f"  data: {data.dataset}, {len(dataset.train_y)} train / {len(dataset.test_y)} test "
        f"images, "
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
