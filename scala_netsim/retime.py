"""Re-time one finished run under other network and compute settings, without training:

    python -m scala_netsim.retime RUN_DIR --set network.uplink_bandwidth_hz=5e6 --out DIR

RUN_DIR is a run folder (OUT/<scenario>/<algorithm>/.../seed<k>/); DIR becomes a run folder
with the same files, timed under the new cell, its summary.json naming RUN_DIR in
`retimed_from` (relative to DIR). Only network.* and compute.* may change. Where the new
timeline changes what would be learned (SplitFedV2's or SFL with local loss's server steps in
another order), the run cannot be re-timed: it is refused, DIR left as it was, with the
command that trains it for real into DIR instead (the same with --train-if-diverged: as long
as the source's training took, hours on a CPU for a study's run). Exit status: 0 done, 2 bad
input (RUN_DIR not a finished run, damaged, a --set outside network/compute; an --out that
holds a run, without --force; a timeline that diverged, without --train-if-diverged). A
re-timing trains nothing, so it runs on any machine whatever the record was trained on;
--device matters only for a run trained for real.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from scala_netsim.core.exits import check_writable, fail
from scala_netsim.core.files import SCENARIO_YAML, SUMMARY_JSON

if TYPE_CHECKING:
    from scala_netsim.config.scenario import Scenario
    from scala_netsim.runner.replay import Record
    from scala_netsim.tools.sweep import SweepPoint


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m scala_netsim.retime",
        description="Re-time a finished run under other network/compute settings, exactly, "
                    "without training it again.")
    parser.add_argument("run_dir", help="a finished run folder (holds summary.json)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="dotted.key=value",
                        help="a network.* or compute.* value, e.g. "
                             "--set network.uplink_bandwidth_hz=5e6 (repeatable; YAML values)")
    parser.add_argument("--out", required=True,
                        help="the run folder to write (one that holds a run is refused; see "
                             "--force)")
    parser.add_argument("--force", action="store_true",
                        help="replace the run that --out holds (all its files)")
    parser.add_argument("--train-if-diverged", action="store_true",
                        help="where the new timeline changes what is learned (the server takes "
                             "the clients' steps in another order, and the algorithm's "
                             "learning depends on it), train the run for real into --out, "
                             "which takes as long as the source's training did (without it "
                             "such a run is refused, exit 2, --out left as it was)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="device if the run is trained for real (--train-if-diverged), "
                             "which a re-timing never is (default auto: cuda when present; "
                             "the record's own device, which may be a GPU, does not matter)")
    return parser.parse_args(argv)


def not_retimeable(source: Path) -> str | None:
    """Why the run in `source` cannot be re-timed whatever its record holds (an asynchronous
    algorithm: the clock decides what it learns), or None."""
    import json

    from scala_netsim.config.registry import ALGORITHMS

    summary = source / SUMMARY_JSON
    if not summary.is_file():
        return None          # Record.load says what is missing
    algorithm = json.loads(summary.read_text()).get("algorithm")
    if algorithm in ALGORITHMS and not ALGORITHMS[algorithm].traits.retimeable:
        return (f"{source}: a run of {algorithm}, an asynchronous algorithm: which clients "
                f"update the server, how stale they are and so what is learned depend on the "
                f"clock, so it cannot be re-timed; train it under the new cell instead")
    return None


def refusal_before_writing(source: Path, out: Path, force: bool,
                           scenario: Scenario) -> str | None:
    """Why nothing may be written to `out` (the run folder itself, a folder that cannot be
    written, one that holds a run, unless `force`; a drop whose clients decode no MCS under
    the NR link abstraction, found as the run will drop them), or None."""
    from scala_netsim.core.results import run_files
    from scala_netsim.runner.world import undecodable_clients

    if out.resolve() == source.resolve():
        return "--out: must not be the run folder being re-timed"
    if problem := check_writable(out):
        return problem
    if (earlier := run_files(out)) and not force:
        names = ", ".join(p.name for p in earlier[:4]) + (", ..." if len(earlier) > 4 else "")
        return (f"--out: {out} holds a run ({names}); choose another folder, or --force to "
                f"replace it")
    # (--force: the run removes the earlier run's files itself, as every fresh run does)
    return undecodable_clients(scenario)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from scala_netsim.config.documents import ScenarioError
    from scala_netsim.config.scenario import load_scenario
    from scala_netsim.runner.replay import Record, RecordError, TimelineDiverged

    source, out = Path(args.run_dir), Path(args.out)
    if refused := not_retimeable(source):
        return fail(refused)
    try:
        record = Record.load(source)
        scenario = load_scenario(source / SCENARIO_YAML, args.overrides)
        record.check_learns_as(scenario, record.algorithm)
    except (RecordError, ScenarioError) as exc:
        return fail(str(exc))
    if problem := refusal_before_writing(source, out, args.force, scenario):
        return fail(problem)

    import torch

    from analysis.plots import plot_run
    from scala_netsim.learn.data import DataNotFoundError
    from scala_netsim.runner.estimate import format_duration
    from scala_netsim.tools.sweep import SweepPoint, get_dotted, run_point

    wanted = args.device
    device = ("cuda" if wanted == "auto" and torch.cuda.is_available()
              else "cpu" if wanted == "auto" else wanted)
    if device == "cuda" and not torch.cuda.is_available():
        return fail("--device: 'cuda' was asked for but no CUDA GPU is available")
    resolved = scenario.model_dump(mode="json")
    setting = tuple((key, get_dotted(resolved, key))
                    for key in dict.fromkeys(o.split("=", 1)[0].strip() for o in args.overrides))
    point = SweepPoint(record.algorithm, setting, scenario, out)
    try:
        summary = replay_into(point, device, record, source)
        how = f"re-timed from {source}"
    except (RecordError, DataNotFoundError) as exc:
        return fail(str(exc))
    except TimelineDiverged as exc:
        if not args.train_if_diverged:
            return fail(diverged(exc, record, sys.argv[1:] if argv is None else argv))
        print(f"{source}: cannot be re-timed ({exc}); training it for real "
              f"(--train-if-diverged)", flush=True)
        summary = run_point(point, device)
        how = "trained for real (--train-if-diverged)"
    plot_run(out, title=f"{scenario.name}: {record.algorithm} (re-timed)")
    print(f"{out}: {how}; simulated time {format_duration(summary['total_sim_time_s'])} "
          f"(was {format_duration(record.summary['total_sim_time_s'])}), final accuracy "
          f"{summary['final_acc']:.2%}, wall time {format_duration(summary['wall_time_s'])}")
    return 0


def diverged(exc: Exception, record: Record, argv: list[str]) -> str:
    """Why the run of `record` is not trained unasked (the re-timing's `argv` diverged with
    `exc`), with the command that trains it."""
    from scala_netsim.runner.estimate import format_duration

    command = " ".join([shlex.quote(sys.executable), "-m", "scala_netsim.retime",
                        *map(shlex.quote, argv), "--train-if-diverged"])
    return (f"{record.folder}: cannot be re-timed ({exc}); training it would take about as "
            f"long as its source's training did ({format_duration(record.summary['wall_time_s'])}"
            f" for {record.num_rounds} rounds); nothing was written. To train it under the new "
            f"settings:\n  {command}")


def replay_into(point: SweepPoint, device: str, record: Record, source: Path) -> dict:
    """Re-time `record` as `point` in a hidden folder beside its folder, then move the files
    in (replacing a run there: --force), so that a replay that diverges or fails leaves the
    folder as it was. -> the summary."""
    from scala_netsim.core.results import remove_run_files
    from scala_netsim.tools.sweep import run_point

    out = point.folder
    work = out.parent / f".{out.name}.retiming"
    shutil.rmtree(work, ignore_errors=True)
    try:
        summary = run_point(replace(point, folder=work), device, source=record,
                            retimed_from=os.path.relpath(source.resolve(), out.resolve()))
        remove_run_files(out)
        out.mkdir(parents=True, exist_ok=True)
        for path in work.iterdir():
            os.replace(path, out / path.name)
        return summary
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
