"""`--retime-from DIR`: the finished trainings under DIR (another study's results, a study's
kept records) that a sweep's points may be re-timed from instead of trained, and, before
anything runs, which points matched one, which did not and why.

A kept run is a source when it is a finished training (not re-timed, not timing-only) whose
files are the ones its run wrote (summary.json's digests); a folder that is not (an unreadable
summary, a damaged record) is named in the report and skipped, never a traceback. A point
matches a source of its algorithm and learning settings (everything but network.*,
compute.*, the name and the device: tools.sweep.learning_key); for one that does not, the
report names the nearest source of its algorithm and the keys they differ in."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scala_netsim.config.scenario import differing_keys, learning_identity, validate_scenario
from scala_netsim.core.errors import Error, RefusedError
from scala_netsim.core.files import FINISHED, SCENARIO_YAML, SUMMARY_JSON
from scala_netsim.core.results import (
    SOURCE_NEEDS,
    check_finished_run,
    read_summary,
    read_written_yaml,
    source_hint,
)
from scala_netsim.tools.sweep import SweepPoint, learning_key


@dataclass
class KeptRuns:
    """The trainings under a folder, by learning key, and what could not be used."""

    folder: Path
    runs: dict[tuple[str, str], Path] = field(default_factory=dict)
    #: (algorithm, learning identity, folder) of every training, for the nearest-source hint
    identities: list[tuple[str, dict, Path]] = field(default_factory=list)
    #: "folder: why" for each finished run that cannot be a source
    problems: list[str] = field(default_factory=list)


def kept_runs(folder: Path | str, wanted: Collection[tuple[str, str]] | None = None
              ) -> KeptRuns:
    """The finished trainings under `folder` whose records are intact: what a sweep may
    re-time from instead of training (--retime-from). Only a training of a learning key in
    `wanted` (None: every one) has its files' digests checked here: the others are not
    sources of this sweep, and hashing every kept record would cost seconds at start-up."""
    kept = KeptRuns(Path(folder))
    for summary_path in sorted(Path(folder).rglob(SUMMARY_JSON)):
        run = summary_path.parent
        try:
            summary = read_summary(summary_path, source_hint(run))
            if not str(summary.get("status", "")).startswith(FINISHED) or summary.get(
                    "retimed_from") or summary.get("timing_only"):
                continue   # only trainings: a re-timed or timing-only run learned nothing
            if not (run / SCENARIO_YAML).is_file():
                raise ValueError(f"holds no {SCENARIO_YAML}; {SOURCE_NEEDS}")
            scenario = validate_scenario(read_written_yaml(run / SCENARIO_YAML))
            algorithm = str(summary.get("algorithm"))
            if algorithm not in scenario.algorithms:
                raise ValueError(f"summary.json's algorithm {algorithm!r} is not its "
                                 f"scenario's")
            key = learning_key(SweepPoint(algorithm, (), scenario, run))
            if key is not None and (wanted is None or key in wanted):
                check_finished_run(run, summary, source_hint(run))
        except (Error, OSError, ValueError) as exc:   # (ScenarioError, YAML: ValueErrors)
            kept.problems.append(_problem(run, exc))
            continue
        if key is not None:
            kept.runs.setdefault(key, run)
            kept.identities.append((algorithm, learning_identity(scenario), run))
    return kept


def _problem(run: Path, exc: Exception) -> str:
    text = str(exc)
    return text if text.startswith(str(run)) else f"{run}: {text}"


def why_not(point: SweepPoint, kept: KeptRuns) -> str:
    """Why `point` matched no source under `kept.folder`."""
    if point.scenario.timing_only:
        return ("a timing-only run (timing_only, --timing-only) trains nothing, so it is "
                "timed, never re-timed from a training")
    if learning_key(point) is None:
        return ("its learning depends on the network (the clock or the channel decides whom "
                "the server hears), so it is never re-timed")
    mine = learning_identity(point.scenario)
    nearest = sorted(((len(differ), str(run), differ) for algorithm, theirs, run in
                      kept.identities if algorithm == point.algorithm
                      for differ in [differing_keys(mine, theirs)]))
    if not nearest:
        return f"no finished training of {point.algorithm} under {kept.folder}"
    _, run, differ = nearest[0]
    shown = ", ".join(differ[:4]) + (f" and {len(differ) - 4} more" if len(differ) > 4 else "")
    return (f"no training of {point.algorithm} with its learning settings; the nearest, "
            f"{run}, differs in {shown}")


def source_name(run: Path, folder: Path) -> str:
    """A kept run as the user named its folder: `folder` (--retime-from) joined to the run's
    place under it."""
    return str(folder / run.resolve().relative_to(folder.resolve()))


def matching_report(todo: Sequence[SweepPoint], plan: dict[Path, Path],
                    kept: KeptRuns) -> tuple[list[str], list[str]]:
    """(the report's lines, the points that will be trained with why: 'label: why'): how
    many of the points to run are re-timed from a run under the folder, how many from a point
    this sweep trains, each one re-timed from a kept run with that run (issue 61), and each
    one trained, with why; then the kept folders skipped."""
    under = kept.folder.resolve()
    from_kept = [c for c in todo if c.folder in plan and plan[c.folder].resolve()
                 .is_relative_to(under)]
    trained = [f"{c.label}: {why_not(c, kept)}" for c in todo if c.folder not in plan]
    lines = [f"--retime-from {kept.folder}: {len(from_kept)} of {len(todo)} point(s) to run "
             f"re-timed from its runs" + (
                 f", {len(todo) - len(from_kept) - len(trained)} from a point this study trains"
                 if len(todo) - len(from_kept) - len(trained) else "")
             + (f"; {len(trained)} trained:" if trained else "")]
    lines += [f"  {c.label} <- {source_name(plan[c.folder], kept.folder)}" for c in from_kept]
    lines += [f"  {line}" for line in trained]
    if kept.problems:
        lines.append(f"  skipped under {kept.folder} ({len(kept.problems)}):")
        lines += [f"    {problem}" for problem in kept.problems]
    return lines, trained


def retime_points(points: Sequence[SweepPoint], plan: dict[Path, Path], out: Path, device: str,
                  train: Callable[[SweepPoint], dict], report: Callable[[SweepPoint, dict], None],
                  retime_only: bool, kept_folder: Path | None, echo: bool) -> None:
    """Re-time each of `points` from the run folder `plan` maps it to (`report` is called with
    its summary). One that cannot be re-timed is trained (`train`) instead, said first,
    except under `retime_only` (none is), and one whose re-timing from a kept run under
    `kept_folder` diverged (--retime-from without --train-if-diverged: training it takes as
    long as its source's training did): those are refused together, RefusedError, once the
    others are done."""
    from scala_netsim.core.results import remove_run_files
    from scala_netsim.runner.replay import RecordError, TimelineDiverged
    from scala_netsim.tools.sweep import run_point

    refused: list[str] = []
    for point in points:
        source = plan[point.folder]
        try:
            summary = run_point(point, device, source=source.resolve(),
                                retimed_from=os.path.relpath(source, out))
        except (RecordError, TimelineDiverged) as exc:
            if retime_only or (kept_folder is not None and isinstance(exc, TimelineDiverged)
                               and source.resolve().is_relative_to(kept_folder.resolve())):
                remove_run_files(point.folder)   # what the replay wrote before it diverged
                refused.append(f"  {point.label}: not re-timed from {source}: {exc}")
                continue
            if echo:
                print(f"{point.label}: not re-timed from {source}: {exc}; training it for "
                      f"real", flush=True)
            summary = train(point)
        report(point, summary)
    if refused and retime_only:
        raise RefusedError("--retime-only: these points could not be re-timed and were not "
                           "trained (the others are done):\n" + "\n".join(refused))
    if refused:
        raise RefusedError(
            "--retime-from: these points' re-timings from its runs diverged (their learning "
            "depends on the order of the server's steps), and training them would take as long "
            "as their sources' trainings did; they were not trained (the others are done):\n"
            + "\n".join(refused) + "\nno comparison or report was written; to train them, "
            "run the same command again with --train-if-diverged (the finished points are "
            "skipped)")
