"""Command line: python -m scala_netsim SCENARIO.yaml [--out DIR] [--set key=value ...].

A thin layer over the Python API (scala_netsim.api): it parses the flags, calls `run`, and
turns what it raises into an `error:` line and an exit status (2 for bad input, 1 for a broken
invariant, 130 when interrupted)."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scala_netsim.core.exits import fail

if TYPE_CHECKING:
    from scala_netsim.config.scenario import Scenario


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scala-netsim",
        description="Split federated learning trained for real under a simulated cellular clock.")
    parser.add_argument("scenario", help="scenario YAML file (see scenarios/)")
    parser.add_argument("--out", default="results", help="results root (default: results); "
                        "runs land in OUT/<scenario>/<algorithm>/seed<k>/, a sweep's points in "
                        "OUT/<scenario>/<algorithm>/<key=value,...>/seed<k>/")
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
                        help="run N runs at once in worker processes, the machine's cores "
                             "split between them (default 1: one after another, here)")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="local (this machine, see --jobs) or ray (each run a Ray task; "
                             "needs pip install -e '.[ray]')")
    parser.add_argument("--ray-address", default=None,
                        help="Ray cluster to submit to (e.g. 10.0.0.5:6379 or auto); default: "
                             "start a local Ray instance")
    parser.add_argument("--ray-cpus-per-run", "--ray-cpus-per-cell", type=int, default=1,
                        metavar="C", help="CPUs Ray reserves for each run, = its torch "
                        "threads (default 1; --ray-cpus-per-cell: its earlier name)")
    parser.add_argument("--no-estimate", action="store_true",
                        help="skip the run-time estimate (it times a few training steps here "
                             "first, some seconds; under Ray, on this machine, not the "
                             "cluster's)")
    add_retiming_flags(parser)
    parser.add_argument("--check", action="store_true",
                        help="check the scenario (with --set and the other flags) as a run "
                             "would, print its plan (the runs to train, those re-timed or "
                             "skipped) and the run-time estimate, and stop: nothing is run or "
                             "written; exit 0 when it would run, 2 with the messages when not")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-report", action="store_true",
                        help="do not write report.md and the study figures at the end")
    parser.add_argument("--no-figures", action="store_true",
                        help="draw no figures, neither each run's (about a second per run; a "
                             "sweep of re-timed runs spends most of its time on them) nor the "
                             "comparison's; `python -m analysis.plots DIR` draws them later")
    parser.add_argument("--drop-checkpoints", action="store_true",
                        help="delete each run's checkpoint.pt once the run has finished (it "
                             "only serves to resume an interrupted run; 19-39 MB for AlexNet)")
    return parser.parse_args(argv)


def add_retiming_flags(parser: argparse.ArgumentParser) -> None:
    """--retime-from, --retime-only, --retime and --timing-only: what a run trains."""
    parser.add_argument("--retime-from", type=Path, metavar="DIR",
                        help="re-time the runs whose learning settings (all but network.*, "
                             "compute.*, the name and the device) match a finished training "
                             "under DIR (another study's results or its kept records) from "
                             "that run, training none of them")
    parser.add_argument("--retime-only", action="store_true", help="with --retime-from: "
                        "train nothing; refuse, before anything runs, a run matching none")
    parser.add_argument("--train-if-diverged", action="store_true",
                        help="with --retime-from: train a run whose re-timing from a kept run "
                             "diverged (its learning depends on the order of the server's "
                             "steps, which the new timeline changes), as long as its source's "
                             "training took; without it such a run is refused, exit 2, once "
                             "the others are done")
    parser.add_argument("--retime", choices=("on", "off"), default="on",
                        help="on (default): of the runs that differ only in network.* and "
                             "compute.*, train one per algorithm and learning settings and "
                             "re-time the others from its run, exactly "
                             "(scala_netsim.runner.replay); off: train every run")
    parser.add_argument("--timing-only", action="store_true",
                        help="time the protocols without training (= --set timing_only=true): "
                             "each step's bytes and FLOPs come from the real trainer's first "
                             "step of that batch size; no accuracy (scala_netsim.runner.timing)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Imports after argument parsing, and torch only after the scenario is valid, so that
    # `--help` and input errors answer at once.
    from scala_netsim.config.documents import ScenarioError
    from scala_netsim.config.scenario import load_scenario

    for flag, value in (("--jobs", args.jobs), ("--ray-cpus-per-run", args.ray_cpus_per_run)):
        if value < 1:
            return fail(f"{flag}: must be a whole number >= 1, got {value}")
    if args.retime_from is not None and not args.retime_from.is_dir():
        return fail(f"--retime-from: {args.retime_from} is not a folder (a study's results, "
                    f"or its kept records)")
    if args.retime_only and (args.retime_from is None or args.retime == "off"):
        return fail("--retime-only: re-times from the runs of --retime-from (with --retime on); "
                    "give --retime-from DIR")
    if args.train_if_diverged and (args.retime_from is None or args.retime_only):
        return fail("--train-if-diverged: trains the points whose re-timing from the runs of "
                    "--retime-from diverged; it needs --retime-from DIR and not --retime-only "
                    "(without --retime-from such points are trained anyway)")
    overrides = list(args.overrides) + ([f"device={args.device}"] if args.device else []) + (
        ["timing_only=true"] if args.timing_only else [])
    try:
        scenario = load_scenario(args.scenario, overrides)
    except ScenarioError as exc:
        return fail(str(exc))
    if args.retime_only and scenario.timing_only:
        return fail("--retime-only with timing_only (--timing-only): a timing-only run trains "
                    "nothing and records no learning, so none of its runs is re-timed from a "
                    "kept training; drop --retime-only, or time the runs without --retime-from")
    previous = signal.signal(signal.SIGTERM, interrupt)  # kill, timeout, a batch scheduler
    try:
        return run(args, scenario)
    except KeyboardInterrupt:   # Ctrl-C or SIGTERM, torch still importing or the runs going
        command = " ".join([shlex.quote(sys.executable), "-m", "scala_netsim",
                            *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
        print(f"\ninterrupted; every file written is complete. Run the same command again "
              f"to continue from the last checkpoints (finished runs are skipped):\n"
              f"  {command}", file=sys.stderr)
        for label in unsaved_runs(scenario):
            print(f"{label}: an asynchronous algorithm in a network of cells is not saved "
                  f"mid-run (a transfer in flight cannot be saved), so it starts again from "
                  f"its beginning", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: argparse.Namespace, scenario: Scenario) -> int:
    """Run the validated scenario as the flags say. -> the exit status."""
    from scala_netsim.api import Options, run_scenario
    from scala_netsim.books.invariants import InvariantError
    from scala_netsim.core.errors import Error

    options = Options(jobs=args.jobs, executor=args.executor, ray_address=args.ray_address,
                      ray_cpus_per_run=args.ray_cpus_per_run, retime=args.retime == "on",
                      retime_from=args.retime_from, retime_only=args.retime_only,
                      progress=not args.no_progress, force=args.force,
                      figures=not args.no_figures, report=not args.no_report,
                      drop_checkpoints=args.drop_checkpoints, estimate=not args.no_estimate,
                      check=args.check, train_if_diverged=args.train_if_diverged)
    try:
        run_scenario(scenario, Path(args.out), options)
        if args.check:
            print("--check: the scenario is valid, its plan above; nothing was run or written")
    except Error as exc:   # bad input, or a run refused as asked (scala_netsim.Error)
        return fail(str(exc))
    except OSError as exc:   # a results file that cannot be written (a full or read-only disk)
        if not exc.filename or not Path(exc.filename).resolve().is_relative_to(
                Path(args.out).resolve()):
            raise
        return fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
    except InvariantError as exc:  # a bug in the engine, never bad input: loud, exit 1
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def unsaved_runs(scenario: Scenario) -> list[str]:
    """The points of `scenario` that no checkpoint saves mid-run, so that an interrupted one
    starts again from its beginning: an asynchronous algorithm in a network of cells always
    has a transfer in flight (scala_netsim.sim.network.link.NetworkLink.in_flight)."""
    from scala_netsim.config.registry import ALGORITHMS
    from scala_netsim.tools.sweep import expand_sweep

    return [point.label for point in expand_sweep(scenario, ".")
            if ALGORITHMS[point.algorithm].traits.asynchronous
            and point.scenario.network.layout.kind != "single"]


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM handler: stop as Ctrl-C does (workers stopped, files complete, resume hint)."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
