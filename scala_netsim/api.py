"""The Python API, for notebooks and scripts; the command line (scala_netsim.cli) is a thin
layer over it.

    import scala_netsim as sn

    scenario = sn.load_scenario("scenarios/quickstart.yaml",
                                {"training.rounds": 5, "network.uplink_bandwidth_hz": 5e6})
    results = sn.run(scenario, out="results", jobs=2)
    results.rounds          # every run's rounds.csv in one frame (algorithm, setting, seed)
    results.comparison      # the study's comparison table (comparison.csv)
    results.figures()       # each run's figures and the comparison's, drawn now
    again = sn.open_results("results/quickstart")   # a folder the CLI or the API wrote

Bad input raises the error whose message the CLI prints (ScenarioError for the scenario, the
data's and partition's own errors, CheckpointError for a checkpoint of another run); nothing
already written is lost. An interrupted run (KeyboardInterrupt) leaves every file complete:
the same call continues from the last checkpoints.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from scala_netsim.config.documents import (
    ScenarioError,
    apply_overrides,
    deploy_first,
    set_dotted,
)
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario, read_document, validate_scenario
from scala_netsim.core.errors import RefusedError
from scala_netsim.core.exits import check_writable
from scala_netsim.core.files import (
    CHECKPOINT_PT,
    EVENTS_CSV,
    FINISHED,
    ROUNDS_CSV,
    SUMMARY_JSON,
    SWEEP_JSON,
)
from scala_netsim.core.results import read_record, read_summary

if TYPE_CHECKING:
    import torch

    from scala_netsim.learn.data import Dataset
    from scala_netsim.runner.estimate import Spread
    from scala_netsim.tools.sweep import SweepPoint

def load_scenario(source: str | Path | Mapping[str, Any],
                  overrides: Mapping[str, Any] | Sequence[str] = ()) -> Scenario:
    """A validated scenario from a YAML file or a mapping (a parsed document), with
    `overrides`: {dotted.key: value} (Python values) or ["dotted.key=value", ...] (values
    parsed as YAML, as --set does). Raises ScenarioError listing every problem."""
    if isinstance(overrides, Mapping):
        strings, values = [], dict(overrides)
    else:
        strings, values = list(overrides), {}
    where: str | Path
    if isinstance(source, Mapping):
        document, where = copy.deepcopy(dict(source)), "<scenario>"
        document = apply_overrides(document, strings)
    else:
        document, where = read_document(source, strings), Path(source)
    if values and not isinstance(document, dict):
        return validate_scenario(document, source=where)   # (says the top level is wrong)
    deploy_first(document, values)
    problems = [f"{key}: {p}" for key, value in values.items()
                if (p := set_dotted(document, key, value))]
    if problems:
        raise ScenarioError(where, problems)
    return validate_scenario(document, source=where)


@dataclass(frozen=True)
class Options:
    """How `run` executes the points (the CLI's flags)."""

    jobs: int = 1                 # points at once in worker processes (local executor)
    executor: str = "local"       # local or ray
    ray_address: str | None = None
    ray_cpus_per_run: int = 1
    retime: bool = True           # re-time points that differ only in network.*/compute.*
    retime_from: Path | None = None   # re-time from the finished runs here where they match
    retime_only: bool = False     # with retime_from: train no point (refuse what would train)
    progress: bool = False        # a progress bar per trained run (one after another)
    force: bool = False           # rerun finished runs from scratch
    figures: bool = False         # draw each run's and the comparison's figures at the end
    report: bool = False          # write report.md at the end
    echo: bool = True             # print what the CLI prints (the plan, a line per run)
    drop_checkpoints: bool = False   # delete each run's checkpoint.pt once it has finished
    estimate: bool = True         # time training steps here for the run-time estimate
    check: bool = False           # check and print the plan only: nothing run or written
    train_if_diverged: bool = False   # train a point whose re-timing from retime_from diverged
    ray_slots: int = 0            # points the Ray cluster runs at once (known once connected)


def run(scenario: Scenario | str | Path | Mapping[str, Any], out: str | Path = "results", *,
        jobs: int = 1, executor: str = "local", retime: bool = True, progress: bool = False,
        force: bool = False, figures: bool = False, report: bool = False, echo: bool = True,
        ray_address: str | None = None, ray_cpus_per_run: int = 1,
        retime_from: str | Path | None = None, retime_only: bool = False,
        train_if_diverged: bool = False, drop_checkpoints: bool = False,
        estimate: bool = True) -> Results:
    """Run every point of `scenario` (its sweep x its algorithms) into OUT/<scenario>/ and
    write the study's comparison.csv; finished runs are skipped and interrupted ones resume
    (unless `force`). The keywords are the command line's flags (`retime_from`: re-time
    from the finished runs in that folder where they learn the same; `retime_only`: and
    train nothing; `train_if_diverged`: train a point whose re-timing from one diverged, else
    refused). -> the Results of OUT/<scenario>/."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    options = Options(jobs=jobs, executor=executor, ray_address=ray_address,
                      ray_cpus_per_run=ray_cpus_per_run, retime=retime,
                      retime_from=None if retime_from is None else Path(retime_from),
                      retime_only=retime_only, train_if_diverged=train_if_diverged,
                      progress=progress, force=force,
                      figures=figures, report=report, echo=echo,
                      drop_checkpoints=drop_checkpoints, estimate=estimate)
    for name, value in (("jobs", jobs), ("ray_cpus_per_run", ray_cpus_per_run)):
        if value < 1:
            raise RefusedError(f"{name}: must be a whole number >= 1, got {value}")
    if executor not in ("local", "ray"):
        raise RefusedError(f"executor: allowed: local, ray; got {executor!r}")
    if retime_only and (retime_from is None or not retime):
        raise RefusedError("retime_only: re-times from the runs of retime_from, with retime "
                           "on; give retime_from")
    return run_scenario(scenario, Path(out), options)


def run_scenario(scenario: Scenario, out: Path, options: Options) -> Results:
    """`run` on a validated scenario."""
    from scala_netsim.tools.sweep import expand_sweep

    points = expand_sweep(scenario, out)
    if options.executor == "ray":   # the cluster is reached before anything is written
        from scala_netsim.tools.sweep import connect_ray

        options = replace(options, ray_slots=connect_ray(options.ray_address,
                                                         options.ray_cpus_per_run))
    if options.executor == "ray" or (options.jobs > 1 and len(points) > 1):   # (nothing written)
        from scala_netsim.tools.sweep import check_known_elsewhere

        check_known_elsewhere(points, "Ray tasks" if options.executor == "ray"
                              else "worker processes (jobs > 1)")
    problem = check_writable(out)
    if problem:
        raise RefusedError(problem)
    from scala_netsim.runner.world import cell_edge_warning, undecodable_drops

    for warning in dict.fromkeys(filter(None, (cell_edge_warning(c.scenario) for c in points))):
        if options.echo:
            print(f"warning: {warning}", file=sys.stderr)
    undecodable = undecodable_drops([(c.label, c.scenario) for c in points])
    if undecodable:
        raise RefusedError("\n".join(undecodable))
    if scenario.timing_only:

        unfit = [a for a in scenario.algorithms if not ALGORITHMS[a].traits.timeable]
        if unfit:
            raise RefusedError(f"timing_only: {', '.join(unfit)} cannot be timed without "
                               f"training (the sizes of their messages change from round to "
                               f"round); leave them out of algorithms or run with training")
    device = run_device(scenario)
    dataset = check_data(points, device)
    todo, plan, states = plan_points(scenario, points, out, dataset, device, options)
    if options.check:   # (--check: every check passed, the plan printed)
        return Results(out / scenario.name)
    from scala_netsim.tools.sweep import write_sweep_index

    write_sweep_index(scenario, points, out)
    run_points([c for c in todo if c.folder not in plan], [c for c in todo if c.folder in plan],
              states, device, options, plan, out)
    root = out / scenario.name
    if options.figures:   # runs draw nothing themselves (worker processes, Ray tasks)
        from analysis.plots import plot_run

        for point in todo:
            plot_run(point.folder, title=f"{scenario.name}: {point.label}")
    results = Results(root)
    written = results.write(figures=options.figures, report=options.report)
    if options.echo:
        print(f"results: {root} ({', '.join(p.name for p in written)})")
    return results


def run_device(scenario: Scenario) -> torch.device:
    """The device the scenario asks for; RefusedError for CUDA without a GPU."""
    import torch

    if scenario.device == "cuda" and not torch.cuda.is_available():
        raise RefusedError("device: 'cuda' was asked for but no CUDA GPU is available; "
                           "use 'cpu' or 'auto'")
    return torch.device("cuda" if scenario.device == "auto" and torch.cuda.is_available()
                        else ("cpu" if scenario.device == "auto" else scenario.device))


def check_data(points: list[SweepPoint], device: torch.device) -> Dataset:
    """Every dataset the points use must be there and partition as asked before anything runs
    (each dataset loaded once, each partition made once). -> the first point's dataset."""
    from scala_netsim.runner.world import client_partition, scenario_dataset

    partitioned = set()
    for point in points:
        data = (point.scenario.data.model_dump_json(), point.scenario.seed)
        if data not in partitioned:
            client_partition(point.scenario, scenario_dataset(point.scenario, device))
            partitioned.add(data)
    return scenario_dataset(points[0].scenario, device)


def plan_points(scenario: Scenario, points: list[SweepPoint], out: Path, dataset: Dataset,
               device: torch.device, options: Options
               ) -> tuple[list[SweepPoint], dict[Path, Path], dict[Path, str]]:
    """(the points to run, {folder of a point to re-time: the run folder it is re-timed from},
    each point's state by folder: new, partial, finished), printing the plan; RefusedError where
    a folder holds a run of another scenario."""
    from scala_netsim.runner.world import describe
    from scala_netsim.tools.retime_from import kept_runs, matching_report
    from scala_netsim.tools.sweep import learning_key, plan_retiming, point_state, swept_values

    # by folder: swept values may be lists, which cannot be dictionary keys
    states = {c.folder: ("new" if options.force else point_state(c)) for c in points}
    foreign = [c for c in points if states[c.folder] == "other"]
    if foreign:
        listed = "\n".join(f"  {c.folder}" for c in foreign[:5]) + (
            f"\n  ... and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise RefusedError(f"these folders hold runs of another scenario (their scenario.yaml "
                           f"differs):\n{listed}\nuse --force to replace them, or another "
                           f"--out")
    todo = [c for c in points if states[c.folder] != "finished"]
    kept = (kept_runs(options.retime_from, {k for c in todo if (k := learning_key(c))})
            if options.retime and options.retime_from else None)
    plan = plan_retiming(points, states, kept.runs if kept else None) if options.retime else {}
    trained = [c for c in todo if c.folder not in plan]
    from scala_netsim.runner.estimate import memory_check

    too_much, warning = memory_check(trained, dataset, options.jobs if options.executor ==
                                     "local" else 1)
    if too_much:
        raise RefusedError(too_much)
    matched, untrained = matching_report(todo, plan, kept) if kept else ([], [])
    if options.retime_only and untrained:
        raise RefusedError("--retime-only: these points match no run to re-time from and "
                           "would be trained; nothing was run:\n" + "\n".join(matched))
    if not options.echo:
        return todo, plan, states
    from scala_netsim.runner.checkpoints import saved_round

    resumed = {c.folder: saved_round(c.folder / CHECKPOINT_PT) or 0 for c in todo
               if states[c.folder] == "partial"}
    print(describe(scenario, dataset, device))
    if scenario.sweep:
        print(f"  sweep: {' x '.join(f'{k} {v}' for k, v in swept_values(points).items())} x "
              f"{len(scenario.algorithms)} algorithm(s) = {len(points)} points")
    for point in points:
        if states[point.folder] == "finished":
            print(f"{point.label}: already completed, skipped ({point.folder})")
        elif resumed.get(point.folder):
            print(f"{point.label}: resuming from round {resumed[point.folder]} of "
                  f"{point.scenario.training.rounds} ({point.folder})")
    if plan:
        print(f"{len(plan)} point(s) differ from another only in network.*/compute.*: they are "
              f"re-timed from its run, not trained (--retime off trains them)")
    for line in matched + ([warning] if warning else []):
        print(line)
    from scala_netsim.runner.estimate import estimate_line

    print(estimate_line(scenario, todo, trained, resumed, dataset, device,
                        spread(options, len(trained)) if options.estimate else None))
    return todo, plan, states


def spread(options: Options, runs: int) -> Spread:
    """How the chosen executor spreads `runs` runs: at once, torch threads each, where."""
    import torch

    from scala_netsim.runner.estimate import Spread

    if options.executor == "ray":
        return Spread(options.ray_slots, options.ray_cpus_per_run,
                f"the Ray cluster's {options.ray_slots} slot(s) of {options.ray_cpus_per_run} "
                f"CPU(s), if its nodes are as fast as this one" if options.ray_slots > 1 else
                ", on a Ray cluster that runs one point at a time")
    if options.jobs > 1 and runs > 1:
        jobs = min(options.jobs, runs)
        return Spread(jobs, max(1, torch.get_num_threads() // options.jobs), f"{jobs} jobs")
    return Spread(1, torch.get_num_threads(), "")


def run_points(trained: list[SweepPoint], retimed: list[SweepPoint], states: dict[Path, str],
              device: torch.device, options: Options, plan: dict[Path, Path],
              out: Path) -> None:
    """Train the points `trained` with the chosen executor, then re-time the points `retimed`
    from the point `plan` maps each to (training any that cannot be re-timed)."""
    from scala_netsim.tools.sweep import finished_line, run_in_processes, run_on_ray

    def resume_of(point: SweepPoint) -> bool:
        return states[point.folder] == "partial"

    from tqdm import tqdm

    # several runs at once (worker processes, Ray tasks): one bar over them all
    several = options.executor == "ray" or (options.jobs > 1 and len(trained) > 1)
    bar = tqdm(total=len(trained), desc="runs finished", unit="run", file=sys.stderr,
               disable=not (options.progress and several))

    def say(line: str) -> None:
        if options.echo:
            tqdm.write(line, file=sys.stdout)

    def report(point: SweepPoint, summary: dict) -> None:
        if options.drop_checkpoints and str(summary.get("status", "")).startswith(FINISHED):
            (point.folder / CHECKPOINT_PT).unlink(missing_ok=True)   # (it only resumes a run)
        say(finished_line(point.label, summary))
        bar.update()

    def started(point: SweepPoint) -> None:
        say(f"{point.label}: started on the cluster" + (", resuming from its checkpoint"
                                                        if resume_of(point) else ""))

    if options.executor == "ray":
        say(f"{len(trained)} run(s) submitted to Ray, {options.ray_slots} at a time")
        run_on_ray(trained, device, options.ray_cpus_per_run, resume_of, report, started)
    elif several:
        run_in_processes(trained, device, options.jobs, resume_of, report)
    else:
        for point in trained:
            report(point, run_one(point, device, options.progress, resume_of(point)))
    bar.close()
    from scala_netsim.tools.retime_from import retime_points

    retime_points(retimed, plan, out, str(device), lambda point: run_one(
        point, device, options.progress), report, options.retime_only, None if
        options.train_if_diverged else options.retime_from, options.echo)


def run_one(point: SweepPoint, device: torch.device, show_progress: bool,
            resume: bool = False) -> dict:
    """Run one point here, with a progress bar when asked. -> its summary."""
    from tqdm import tqdm

    from scala_netsim.runner.checkpoints import saved_round
    from scala_netsim.tools.sweep import run_point

    start = (saved_round(point.folder / CHECKPOINT_PT) or 0) if resume else 0
    bar = tqdm(total=point.scenario.training.rounds, initial=start, desc=point.label,
               unit="round", disable=not show_progress, file=sys.stderr)
    last = {"acc": "-"}

    def progress(round_: int, sim_time_s: float, acc: float) -> None:
        if acc == acc:  # not NaN: an evaluation round
            last["acc"] = f"{acc:.2%}"
        bar.set_postfix_str(f"sim {sim_time_s:,.1f} s, acc {last['acc']}", refresh=False)
        bar.update(1)

    try:
        return run_point(point, str(device), resume, progress=progress)
    finally:
        bar.close()


def merged_columns(frames: list[pd.DataFrame]) -> list[str]:
    """Every frame's columns, each frame's in its own order (a column first met in a later
    frame goes right after the column before it there): runs whose files have different
    columns, as synchronous and asynchronous ones do, stack without reordering any run's."""
    order: list[str] = []
    for frame in frames:
        previous = None
        for column in frame.columns:
            if column not in order:
                order.insert(order.index(previous) + 1 if previous is not None else 0, column)
            previous = column
    return order


@dataclass(frozen=True)
class RunResult:
    """One finished run: its folder, algorithm, swept setting, seed and summary.json."""

    folder: Path
    algorithm: str
    setting: dict
    seed: int
    summary: dict


class Results:
    """The finished runs under OUT/<scenario>/ (sweep's runs included), read on demand."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def __repr__(self) -> str:
        return f"Results({str(self.folder)!r}: {len(self.runs)} finished run(s))"

    @cached_property
    def runs(self) -> list[RunResult]:
        found = []
        for path in sorted(self.folder.rglob(SUMMARY_JSON)):
            summary = read_summary(path)
            found.append(RunResult(path.parent, summary["algorithm"],
                                   summary.get("setting", {}), summary["seed"], summary))
        return found

    @property
    def accuracy_targets(self) -> list[float]:
        index = self.folder / SWEEP_JSON
        if index.is_file():
            return json.loads(index.read_text()).get("accuracy_targets", [0.6, 0.7, 0.8])
        return [0.6, 0.7, 0.8]

    def _stacked(self, name: str) -> pd.DataFrame:
        """Every run's `name` file, one frame: algorithm, the swept keys and seed first."""
        frames = []
        for r in self.runs:
            frame = read_record(r.folder, name)
            keys = {"algorithm": r.algorithm, **{k: str(v) if isinstance(v, (list, dict))
                                                 else v for k, v in r.setting.items()},
                    "seed": r.seed}
            for i, (key, value) in enumerate(keys.items()):
                frame.insert(i, key, value)
            frames.append(frame)
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)[merged_columns(frames)]

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per run: its summary.json's values (setting flattened to its keys)."""
        rows = [{"algorithm": r.algorithm, **r.setting, "seed": r.seed, "folder": str(r.folder),
                 **{k: v for k, v in r.summary.items()
                    if k not in ("algorithm", "setting", "seed", "files_sha256")}}
                for r in self.runs]
        return pd.DataFrame(rows)

    @cached_property
    def rounds(self) -> pd.DataFrame:
        """Every run's rounds.csv (one row per round), stacked."""
        return self._stacked(ROUNDS_CSV)

    @cached_property
    def events(self) -> pd.DataFrame:
        """Every run's events.csv (one row per timed event), stacked."""
        return self._stacked(EVENTS_CSV)

    @property
    def comparison(self) -> pd.DataFrame:
        """The study's comparison table (comparison.csv's rows, computed from the runs)."""
        from analysis.compare import comparison_table

        return comparison_table(self.folder, self.accuracy_targets)

    def write(self, figures: bool = True, report: bool = False) -> list[Path]:
        """Write comparison.csv (and the comparison figures, report.md). -> the paths."""
        from analysis.compare import write_comparison

        written = [write_comparison(self.folder, self.accuracy_targets)]
        if figures:
            from analysis.plots import comparison_figures

            written += comparison_figures(self.folder)
        if report:
            from analysis.report import write_report

            write_report(self.folder)
            written.append(self.folder / "report.md")
        return written

    def figures(self) -> list[Path]:
        """Draw every run's figures and the comparison's now. -> the comparison's paths."""
        from analysis.plots import comparison_figures, plot_run

        for r in self.runs:
            plot_run(r.folder, title=f"{self.folder.name}: {r.algorithm}")
        return comparison_figures(self.folder)


def open_results(folder: str | Path) -> Results:
    """The Results of a folder the CLI or `run` wrote: OUT/<scenario>/ (holding sweep.json)
    or one run's folder. Raises FileNotFoundError where there is no finished run."""
    results = Results(folder)
    if not results.runs:
        raise FileNotFoundError(f"{folder}: no finished run here (no {SUMMARY_JSON} below it)")
    return results
