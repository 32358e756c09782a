"""Sweeps: a scenario's `sweep:` matrix crossed with its algorithms, one run folder per point.

A point is one algorithm under one combination of swept values. Its results land in

    OUT/<scenario>/<algorithm>/<key=value,...>/seed<k>/      (seed not repeated in the name)
    OUT/<scenario>/<algorithm>/seed<k>/                      (when only the seed is swept)

Points run in this process, in N worker processes (`--jobs N`, the machine's cores split
between them) or as Ray tasks (`--executor ray`). Every runner calls the same `run_point`.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from scala_netsim.config.documents import ScenarioError, deploy_first, set_dotted
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import (
    Scenario,
    learning_identity,
    training_identity,
    validate_scenario,
)
from scala_netsim.core.errors import RefusedError
from scala_netsim.core.files import (
    FINISHED,
    SCENARIO_YAML,
    SUMMARY_JSON,
    SWEEP_JSON,
    SWEEP_POINTS,
    sweep_points,
)
from scala_netsim.core.naming import compact
from scala_netsim.core.results import (
    RESUME_HINT,
    check_finished_run,
    read_summary,
    read_written_yaml,
    write_json,
)

if TYPE_CHECKING:   # torch is imported where a point runs, not to read a scenario
    from concurrent.futures import ProcessPoolExecutor

    import torch

    from scala_netsim.runner.replay import Record


@dataclass(frozen=True)
class SweepPoint:
    algorithm: str
    setting: tuple          # ((dotted key, value), ...), in the order of the sweep section
    scenario: Scenario = field(compare=False)   # resolved: one algorithm, no sweep section
    folder: Path

    @property
    def label(self) -> str:
        return " ".join([self.algorithm, *(f"{key}={format_value(v)}" for key, v in self.setting)])


def format_value(value: Any) -> str:
    """A swept value as it appears in folder names and tables (a long mapping or list by its
    first entry and a digest: core.naming.compact)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.12g}"
    if isinstance(value, (list, tuple)):
        return compact(list(value), "~".join(format_value(v) for v in value))
    if isinstance(value, dict):
        return compact(value, "~".join(f"{k}-{format_value(v)}" for k, v in value.items()))
    return str(value).replace("/", "_")


def short_names(keys: Sequence[str]) -> dict[str, str]:
    """Dotted key -> the name used in folder names: its last part, unless two swept keys
    share it (then the whole dotted key)."""
    last = [k.split(".")[-1] for k in keys]
    return {k: (k.split(".")[-1] if last.count(k.split(".")[-1]) == 1 else k) for k in keys}


def setting_folder_name(setting: Sequence[tuple[str, Any]]) -> str:
    """'local_iters=5,uplink_bandwidth_hz=20000000' for the swept values other than the seed
    ('' when only the seed is swept)."""
    names = short_names([key for key, _ in setting])
    return ",".join(f"{names[key]}={format_value(v)}" for key, v in setting if key != "seed")


def sweep_choices(sweep: dict) -> list[list[tuple[str, Any, dict[str, Any]]]]:
    """Per sweep entry, its choices: (entry, value as the setting records it, {dotted key:
    value} to set). A list of values: (key, value, {key: value}); named cases: (name, case
    name, the case's settings)."""
    return [[(key, case, dict(settings)) for case, settings in values.items()]
            if isinstance(values, dict) else [(key, v, {key: v}) for v in values]
            for key, values in sweep.items()]


def expand_sweep(scenario: Scenario, out_dir: Path | str) -> list[SweepPoint]:
    """Every point of the scenario (its algorithms crossed with its sweep), each validated.

    Raises ScenarioError listing every point whose values make an invalid scenario, and any
    two points that would share a folder.
    """
    base = scenario.model_dump(mode="json")
    base["sweep"] = {}
    cases = {key for key, values in scenario.sweep.items() if isinstance(values, dict)}
    points: list[SweepPoint] = []
    problems: list[str] = []
    folders: dict[Path, str] = {}
    for choices in itertools.product(*sweep_choices(scenario.sweep)):
        setting = tuple((entry, value) for entry, value, _ in choices)
        where = ", ".join(f"{k}={format_value(v)}" for k, v in setting) or "(no sweep)"
        for algorithm in scenario.algorithms:
            document = copy.deepcopy(base)
            document["algorithms"] = [algorithm]
            for _, _, settings in choices:   # a deployment first: the point's keys over it
                deploy_first(document, settings)
            found = [f"sweep {key}: {p}" for _, _, settings in choices
                     for key, value in settings.items()
                     if (p := set_dotted(document, key, value))]
            traits = ALGORITHMS[algorithm].traits
            if not traits.barrier:
                # a step deadline bounds a barrier: the points of the scenario's algorithms
                # without one do not carry it (nor learn differently for it)
                document["training"]["step_deadline_s"] = None
            if not traits.activations:   # likewise cut-layer compression
                document["compression"]["uplink"] = "none"
            if not traits.gradients:
                document["compression"]["downlink"] = "none"
            if not traits.attackable:   # and the attack
                document["privacy"] = None
            point_scenario = None
            try:
                point_scenario = None if found else validate_scenario(document)
            except ScenarioError as exc:
                found = [f"sweep point {where}: {p}" for p in exc.problems]
            if found or point_scenario is None:
                problems.extend(p for p in found if p not in problems)
                continue
            # the values as validated (YAML reads 1e6 as text; the scenario says it is a float)
            resolved = point_scenario.model_dump(mode="json")
            point_setting = tuple((key, value if key in cases else get_dotted(resolved, key))
                                 for key, value in setting)
            folder = Path(out_dir) / scenario.name / algorithm
            name = setting_folder_name(point_setting)
            folder = (folder / name if name else folder) / f"seed{point_scenario.seed}"
            if folder in folders:
                problems.append(f"sweep: points {folders[folder]!r} and {where!r} of {algorithm} "
                                f"would share the folder {str(folder)!r}; make the values differ")
                continue
            folders[folder] = where
            points.append(SweepPoint(algorithm, point_setting, point_scenario, folder))
    if problems:
        raise ScenarioError("sweep", problems)
    return points


def get_dotted(document: dict, key: str) -> Any:
    for part in key.split("."):
        document = document[part]
    return document


def point_state(point: SweepPoint) -> str:
    """'finished' (completed or diverged, same scenario), 'partial' (same scenario, not
    finished), 'other' (the folder holds a run of another scenario) or 'new'."""
    written = point.folder / SCENARIO_YAML
    if not written.is_file():
        return "new"
    try:
        earlier = validate_scenario(read_written_yaml(written))
    except (yaml.YAMLError, ScenarioError):
        return "other"
    if training_identity(earlier) != training_identity(point.scenario):
        return "other"   # (a changed report section alone does not make another run)
    summary_path = point.folder / SUMMARY_JSON
    if summary_path.is_file():
        summary = read_summary(summary_path, RESUME_HINT)
        if str(summary.get("status", "")).startswith(FINISHED):
            check_finished_run(point.folder, summary)   # (damaged: refused, never skipped)
            return "finished"
    return "partial"


def swept_values(points: Sequence[SweepPoint]) -> dict[str, list]:
    """Swept key -> its values as validated, in sweep order."""
    return _values(dict(point.setting) for point in points)


def _values(settings: Iterable[dict]) -> dict[str, list]:
    values: dict[str, list] = {}
    for setting in settings:
        for key, value in setting.items():
            if value not in values.setdefault(key, []):
                values[key].append(value)
    return values


def write_sweep_index(scenario: Scenario, points: Sequence[SweepPoint],
                      out_dir: Path | str) -> Path:
    """OUT/<scenario>/sweep.json: what the analysis needs to group the runs (swept keys,
    accuracy targets, every point and its folder), written before any point runs. The points
    of an earlier index in the folder that this invocation does not run are kept while
    their run folders exist: a study run in parts (`--set algorithms=[...]`, one
    invocation for each) is reported as one."""
    root = Path(out_dir) / scenario.name
    entries = json.loads(json.dumps([   # as the file holds them (tuples as lists)
        {"algorithm": c.algorithm, "setting": dict(c.setting),
         "folder": str(c.folder.relative_to(root))} for c in points]))
    ours = {e["folder"]: e for e in entries}
    earlier = [e for e in _earlier_points(root / SWEEP_JSON) if (root / e["folder"]).is_dir()]
    merged = [ours.pop(e["folder"], e) for e in earlier] + list(ours.values())
    index = {
        "scenario": scenario.name,
        "algorithms": list(dict.fromkeys([*scenario.algorithms,
                                          *(e["algorithm"] for e in merged)])),
        "sweep": _values(e["setting"] for e in merged),
        "accuracy_targets": list(scenario.report.accuracy_targets),
        "rounds": scenario.training.rounds,
        SWEEP_POINTS: merged,
    }
    write_json(root / SWEEP_JSON, index)
    return root / SWEEP_JSON


def _earlier_points(path: Path) -> list[dict]:
    """The points of the index at `path` (none when there is none, or it cannot be read)."""
    try:
        points = sweep_points(json.loads(path.read_text()))
        return [c for c in points
                if isinstance(c, dict) and {"algorithm", "setting", "folder"} <= set(c)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


# --- running one point: the one function the command line, the Python API, the worker ------
# --- processes, Ray tasks and the re-timer call ----------------------------------------------
def run_point(point: SweepPoint, device: str, resume: bool = False, threads: int | None = None,
             progress: Callable[[int, float, float], None] | None = None,
             source: Path | str | Record | None = None,
             retimed_from: str | None = None) -> dict:
    """Run one point and write its folder. -> its summary. Draws no figure.

    The point's scenario is validated already (SweepPoint; a Scenario pickles, so worker
    processes and Ray tasks receive it as it is). `device` is a torch device's name;
    `threads` sets torch's thread count (worker processes share the machine's cores). With
    `source` (a finished run folder, or its Record) nothing is trained: the source is
    re-timed under this point's network and summary.json names `retimed_from`; this raises
    RecordError (the source cannot be replayed) or TimelineDiverged (this point's timeline
    changes what is learned), and the caller decides whether to train the point instead.
    """
    import torch

    from scala_netsim.runner.execute import execute_run
    from scala_netsim.runner.replay import Record, replay_trainer
    from scala_netsim.runner.world import build_world, deterministic, scenario_dataset
    from scala_netsim.tools.attack import after_training

    if threads:
        torch.set_num_threads(threads)
    scenario, where = point.scenario, torch.device(device)
    setting = dict(point.setting)
    if source is not None:
        record = source if isinstance(source, Record) else Record.load(source)
        record.check_learns_as(scenario, point.algorithm)
        world = build_world(scenario, scenario_dataset(scenario, where))
        return execute_run(scenario, point.algorithm, world, where, point.folder, setting,
                           trainer=replay_trainer(record), retimed_from=retimed_from)
    deterministic(where)
    world = build_world(scenario, scenario_dataset(scenario, where))
    return execute_run(scenario, point.algorithm, world, where, point.folder, setting, progress,
                       resume, finish=after_training(scenario))


def finished_line(label: str, summary: dict) -> str:
    """The line the CLI prints for a finished run."""
    from scala_netsim.runner.estimate import format_duration

    how = "re-timed" if summary.get("retimed_from") else summary["status"]
    accuracy = ("timing only" if summary.get("timing_only") else
                f"best accuracy {summary['best_acc']:.2%} (round {summary['best_round']}), "
                f"final {summary['final_acc']:.2%}")
    bias = summary.get("label_bias_tv", math.nan)
    drops = ("" if "dropped_fraction" not in summary else
             f", {summary['dropped_fraction']:.1%} of selected clients dropped (" + (
                 f"label bias TV {bias:.3f})" if bias == bias   # NaN: no round had an update
                 else "no client trained: no label bias)"))
    return (f"{label}: {how}, {accuracy}, simulated "
            f"time {format_duration(summary['total_sim_time_s'])}{drops}, wall time "
            f"{format_duration(summary['wall_time_s'])}")


def learning_key(point: SweepPoint) -> tuple[str, str] | None:
    """Points with the same key learn the same trajectory (same algorithm and learning
    settings, seed included; they differ at most in network.* and compute.*); None for an
    algorithm whose selection looks at the network (never re-timed)."""
    spec = ALGORITHMS[point.algorithm]
    if (spec.selector.uses_network or not spec.traits.retimeable
            or point.scenario.timing_only or point.scenario.network_shapes_learning):
        # (a timing-only run records no accuracy to replay, it is cheap anyway; under
        # deadlines or over-selection, or in an asynchronous algorithm, the clock decides
        # who is aggregated)
        return None
    return point.algorithm, yaml.safe_dump(learning_identity(point.scenario), sort_keys=True)


def plan_retiming(points: Sequence[SweepPoint], states: dict[Path, str],
                  kept: dict[tuple[str, str], Path] | None = None) -> dict[Path, Path]:
    """Folder of each point to re-time -> the run folder it replays: one point per distinct
    learning trajectory is trained (a finished one is used as it is), the others re-timed;
    a trajectory that `kept` (learning key -> finished run elsewhere:
    tools.retime_from.kept_runs) holds
    trains no point at all."""
    groups: dict[tuple, list[SweepPoint]] = {}
    for point in points:
        key = learning_key(point)
        if key is not None:
            groups.setdefault(key, []).append(point)
    plan = {}
    for key, group in groups.items():
        finished = [c for c in group if states[c.folder] == "finished"]
        source = (kept or {}).get(key) or (finished[0] if finished else group[0]).folder
        for point in group:
            if point.folder != source and states[point.folder] != "finished":
                plan[point.folder] = source
    return plan


def run_in_processes(points: Sequence[SweepPoint], device: torch.device | str, jobs: int,
                     resume_of: Callable[[SweepPoint], bool],
                     on_done: Callable[[SweepPoint, dict], None]) -> None:
    """Run `points` in `jobs` worker processes, torch threads per worker = cores // jobs.
    `resume_of(point)` says whether to continue from a checkpoint; `on_done(point, summary)`
    is called as each finishes. A worker's exception is raised here."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    import torch

    # torch's own count honours the CPU affinity and OMP_NUM_THREADS, unlike os.cpu_count()
    threads = max(1, torch.get_num_threads() // jobs)
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        pending = {pool.submit(run_point, c, str(device), resume_of(c), threads): c
                   for c in points}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                on_done(pending.pop(future), future.result())
    except BrokenProcessPool as exc:
        raise RuntimeError(
            f"a worker process died before its run finished ({exc}): killed from outside, out "
            f"of memory, or started by a script without the `if __name__ == \"__main__\":` "
            f"guard that worker processes need (they import the script again); the runs it "
            f"held resume from their checkpoints when the command is run again") from None
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM (cli.main turns it into KeyboardInterrupt): stop the running points
        # now, not when they finish. Every file they wrote is complete (atomic writes), and
        # their checkpoints resume them. A point that fails leaves the others running to the end.
        terminate_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def check_known_elsewhere(points: Sequence[SweepPoint], where: str) -> None:
    """RefusedError where a point uses an algorithm or a path-loss model registered by a call
    in this process (not through an entry point): `where` runs in other processes, which do
    not make that call, and would fail there."""
    import channel

    unknown = sorted({c.algorithm for c in points} & ALGORITHMS.runtime_only
                     | {c.scenario.network.pathloss for c in points}
                     & channel.PATHLOSS_MODELS.runtime_only)
    if unknown:
        raise RefusedError(
            f"{', '.join(map(repr, unknown))} registered in this process only (a register "
            f"call), and {where} do not run that call; register it through an entry point "
            f"(groups scala_netsim.algorithms, scala_netsim.pathloss: docs/guides/extending.md) "
            f"or run the points here, one after another (jobs=1)")


def terminate_workers(pool: ProcessPoolExecutor) -> None:
    """ProcessPoolExecutor.terminate_workers() of Python 3.14, for the Pythons before it."""
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
        return
    for process in list((pool._processes or {}).values()):  # the pool's own record of them
        process.terminate()


def connect_ray(address: str | None, cpus_per_run: int) -> int:
    """Connect to the Ray cluster at `address` (a local Ray instance when None), before
    anything is written. -> how many points it runs at once (its CPUs // cpus_per_run);
    ScenarioError where Ray is missing or the cluster cannot be reached."""
    try:
        import ray
    except ImportError:
        raise ScenarioError("--executor ray", ["Ray is not installed; install the optional "
                                               "extra: pip install -e \".[ray]\""]) from None
    try:
        _reachable(address)   # Ray itself waits minutes on an address nobody listens at
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 include_dashboard=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RefusedError(
            f"--ray-address {address}: cannot connect to a Ray cluster ({reason}); start one "
            f"with `ray start --head` on its head node, or leave --ray-address out for a local "
            f"Ray instance; nothing was written") from None
    return max(1, int(ray.cluster_resources().get("CPU", 0)) // cpus_per_run)


def _reachable(address: str | None) -> None:
    """ConnectionError where `address` is HOST:PORT and nothing accepts a connection there
    within 5 s (None, `auto` and ray:// addresses are left to Ray)."""
    import socket

    host, _, port = (address or "").rpartition(":")
    if not host or not port.isdigit() or "://" in host:
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address}: {exc.strerror or exc}") from None


def run_on_ray(points: Sequence[SweepPoint], device: torch.device | str, cpus_per_run: int,
               resume_of: Callable[[SweepPoint], bool],
               on_done: Callable[[SweepPoint, dict], None],
               on_start: Callable[[SweepPoint], None] = lambda point: None) -> None:
    """Submit every point as a Ray task (each asking for `cpus_per_run` CPUs and using that
    many torch threads) on the cluster `connect_ray` joined. Ray schedules them; results go
    to the (shared) results folder, where a point's start shows: its run writes scenario.yaml
    first, and `on_start(point)` is called when that file is newer than the submission."""
    import time

    import ray

    task = ray.remote(num_cpus=cpus_per_run, max_retries=0)(run_point)
    submitted = time.time()
    pending = {task.remote(c, str(device), resume_of(c), cpus_per_run): c
               for c in points}
    waiting = list(points)
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=2.0)
            for point in [c for c in waiting if _written_since(c.folder / SCENARIO_YAML,
                                                              submitted)]:
                waiting.remove(point)
                on_start(point)
            for ref in done:
                on_done(pending.pop(ref), ray.get(ref))
    finally:
        for ref in pending:
            ray.cancel(ref)


def _written_since(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime >= since
    except FileNotFoundError:
        return False
