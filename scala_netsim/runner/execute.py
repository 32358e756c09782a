"""One algorithm's run, end to end: the world it shares with the scenario's other algorithms
(partition and cell), the run itself (one round at a time), its checkpoints and its files."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import platform
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from scala_netsim.books.invariants import (
    InvariantError,
)
from scala_netsim.config.scenario import Scenario
from scala_netsim.core.files import (
    CHECKPOINT_PT,
    MODEL_PT,
)
from scala_netsim.core.results import remove_run_files
from scala_netsim.learn.contract import Trainer
from scala_netsim.runner.checkpoints import Checkpointer, checkpoint_identity
from scala_netsim.runner.loop import Progress, Run
from scala_netsim.runner.world import World
from scala_netsim.runner.writer import RunWriter, save_final_model


@contextlib.contextmanager
def objects_so_far_frozen() -> Iterator[None]:
    """Keep the objects that exist now (modules, the dataset, the world: hundreds of thousands)
    out of the garbage collector's full collections while the body runs (gc.freeze), and give
    them back afterwards (gc.unfreeze), so that nothing frozen outlives the run. A timing-only
    run of 10,000 clients spent ~20 % of its time in full collections walking them again and
    again. Cyclic garbage among them waits for the first full collection after the run (what
    reference counting frees is freed at once, as always). gc.unfreeze also releases what a
    caller had frozen before the run. Meanwhile the youngest generation is collected after
    YOUNG_OBJECTS allocations rather than Python's 700: a simulation allocates and frees
    millions of small objects (its events, closures and records), nearly all freed by
    reference counting, and the collector's passes over them cost a network's plain run some
    6 % of its rounds' time (docs/benchmarks.md)."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


#: the allocations after which the collector looks at the youngest objects while a run
#: simulates (objects_so_far_frozen; Python's default is 700)
YOUNG_OBJECTS = 20_000


def processor_name() -> str:
    """The processor's model name (/proc/cpuinfo on Linux; platform's word elsewhere)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine_record(device: torch.device, from_round: int) -> dict:
    """Where one invocation worked on a run (summary.json's `machines`, one entry per
    invocation that trained it): the processor, its cores, the torch threads (accuracies are
    bit-identical only at the same thread count: docs/guides/reproducibility.md), torch's
    version and the device, from the round it started at."""
    return {"from_round": from_round, "processor": processor_name(), "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "torch": str(torch.__version__),
            "device": str(device)}


def execute_run(scenario: Scenario, algorithm: str, world: World, device: torch.device,
                folder: Path, setting: dict | None = None, progress: Progress | None = None,
                resume: bool = False, trainer: Trainer | None = None,
                retimed_from: str | None = None,
                finish: Callable[[Path], object] | None = None) -> dict:
    """Train `algorithm` under the simulated clock and write its run folder. -> summary.

    Every `training.checkpoint_every` rounds the run's whole state goes into checkpoint.pt;
    with `resume` a run continues from there and writes the same files an uninterrupted run
    writes. What was written until a divergence stays valid. `setting` (swept key -> value)
    is recorded in summary.json. Raises InvariantError (after writing summary.json with
    status "invariant violation") when the run's books do not balance.

    With `trainer` (a replay, scala_netsim.runner.replay) nothing is trained: the run is timed with
    that trainer, never checkpointed, and summary.json names the source (`retimed_from`).
    A timing-only run is not checkpointed either; both write their files once, at the end.
    `finish` is called on the folder of a completed trained run after its model is saved and
    before its summary is written (scala_netsim.tools.attack.after_training: the attack), so that a
    run whose summary says completed has done it.
    """
    with objects_so_far_frozen():
        return _execute_run(scenario, algorithm, world, device, folder, setting, progress,
                            resume, trainer, retimed_from, finish)


def _execute_run(scenario: Scenario, algorithm: str, world: World, device: torch.device,
                 folder: Path, setting: dict | None, progress: Progress | None, resume: bool,
                 trainer: Trainer | None, retimed_from: str | None,
                 finish: Callable[[Path], object] | None) -> dict:
    wall_start = time.perf_counter()
    folder = Path(folder)
    checkpointer = Checkpointer(folder / CHECKPOINT_PT, checkpoint_identity(scenario, algorithm))
    # a replay or a timing-only run takes seconds to minutes: never checkpointed, its files
    # are written when it ends (rewriting a growing events.csv every few rounds would cost
    # more than the simulation)
    at_the_end = trainer is not None or scenario.timing_only
    checkpointed = not at_the_end
    state = checkpointer.load() if resume and checkpointed else None
    if state is None:  # a fresh run: nothing of an earlier run may pass for this one's
        remove_run_files(folder)
    writer = RunWriter(folder, scenario, world)
    run = Run(scenario, algorithm, world, device, trainer)
    wall_before_s, machines = 0.0, []
    if state is not None:
        run.load_state_dict(state["run"])
        wall_before_s, machines = state["wall_time_s"], list(state.get("machines", []))
    resumed_from = run.round if state is not None else None
    machines.append(machine_record(device, run.round))
    tr = scenario.training
    save_due = False   # a checkpoint is due, and taken as soon as the run can be saved
    while not run.finished:
        row = run.step()
        if progress is not None:
            progress(row["round"], row["sim_time_s"], row["test_acc"])
        if at_the_end:
            continue
        save_due = save_due or (checkpointed and row["round"] % tr.checkpoint_every == 0)
        if run.diverged or run.finished:
            writer.flush(run, now=True)
        elif save_due and run.checkpointable:
            writer.flush(run, now=True)
            checkpointer.save(run, wall_before_s + time.perf_counter() - wall_start, machines)
            save_due = False
        elif not math.isnan(row["test_acc"]):
            writer.flush(run)
    if at_the_end:
        writer.flush(run, now=True)
    problems = run.problems()
    status = ("invariant violation" if problems else
              f"diverged at round {run.round}" if run.diverged else "completed")
    if status == "completed" and trainer is None and not scenario.timing_only:
        save_final_model(folder / MODEL_PT, run.trainer)
        if finish is not None:
            finish(folder)
    summary = run.summary(status, setting or {}, wall_before_s + time.perf_counter() - wall_start,
                          resumed_from, device, retimed_from)
    writer.summary({**summary, "machines": machines})
    if problems:
        raise InvariantError([f"{folder}: {p}" for p in problems])
    return summary
