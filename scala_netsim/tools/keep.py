"""Keeping a study's run records in git: each finished run folder copied as the command line
wrote it, less what can be rebuilt or is too large to keep (checkpoint.pt, the resumable
state; model.pt, the final weights, 15.5 MB for the authors' AlexNet), its CSV tables
compressed with LZMA (NAME.csv.xz: the .xz container at the default preset, which holds no
file name and no time stamp, so the same text gives the same bytes). Every reader of a run
folder takes a table's compressed copy where the plain file is absent
(core.files.run_file; a run kept gzipped by an earlier version, NAME.csv.gz, is read as
well), and summary.json's SHA-256 digests hold for the compressed copy too (they are of the
decompressed text: core.results.file_sha256), so that the report is rebuilt and a run
re-timed from the kept copy exactly as from the original.

    python -m scala_netsim.tools.keep RESULTS/<scenario> docs/studies/<study>/results

copies every finished run under the first folder that the second does not hold yet (or
holds another version of), and prints what it kept and its size. A trained run keeps its
record (its learning took hours); a re-timed or timing-only run keeps its scenario.yaml,
rounds.csv and summary.json, whose digests vouch for every file it wrote, and the rest comes
back to those digests from `python -m scala_netsim.tools.regenerate`. The first folder may itself
be kept records: a run kept gzipped is then kept again in today's form.

Why LZMA: a network's timing-only event table (14.42 MB of text) is 4.27 MB gzipped at level
9 and 2.00 MB in .xz, a trained run's (8.15 MB) 1.65 and 1.21 MB; pandas reads the first back
in 0.30 s against 0.19 s gzipped.
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from scala_netsim.core.errors import Error
from scala_netsim.core.files import (
    CHECKPOINT_PT,
    DIGESTED_FILES,
    FINISHED,
    KEPT_SUFFIXES,
    MODEL_PT,
    SLIM_FILES,
    SUMMARY_JSON,
    SWEEP_JSON,
    SWEEP_POINTS,
    SWEEP_POINTS_BEFORE,
    XZ,
    run_file,
    sweep_points,
)
from scala_netsim.core.results import (
    KEPT_FOR_FINDINGS,
    damaged_record,
    file_sha256,
    is_slim_kept,
    learns_elsewhere,
    open_record,
    write_json,
)

#: what is not kept: the state to resume from, and the final weights
LEFT_OUT = (CHECKPOINT_PT, MODEL_PT)


class KeepError(Error, ValueError):
    """A run folder that cannot be kept as it is (not finished, or its files damaged)."""


def compress_file(source: Path, target: Path) -> None:
    """`target` = `source`'s text (decompressed first when `source` is a kept copy) in the .xz
    container at the default preset: the same bytes for the same text. Written to a temporary
    name and renamed."""
    partial = target.with_name(target.name + ".partial")
    with open_record(source) as raw, lzma.open(partial, "wb") as packed:
        shutil.copyfileobj(raw, packed, 1 << 20)
    partial.replace(target)


def table_name(name: str) -> str | None:
    """NAME.csv for a run's table, plain or kept compressed (NAME.csv.xz, NAME.csv.gz);
    None for any other file."""
    for suffix in ("", *KEPT_SUFFIXES):
        if name.endswith(".csv" + suffix):
            return name.removesuffix(suffix)
    return None


def kept_summary(run_dir: Path, summary: dict, findings_only: bool = False) -> dict:
    """summary.json as kept: with the digests of every file its run wrote (DIGESTED_FILES; a
    run written before clients.csv and cells.csv were digested gets theirs now, issue 61; one
    written before coupling.csv existed has none, and keeps none), what a slim run's
    regeneration is checked against and what vouches for a trained run's copy; `kept:
    findings` for a run kept for its findings only (`for_findings`)."""
    digests = dict(summary.get("files_sha256", {}))
    for name in DIGESTED_FILES:
        path = run_file(run_dir, name)
        if name not in digests and path.is_file():
            digests[name] = file_sha256(path)
    kept = {**summary, "files_sha256": digests}
    if for_findings(summary, findings_only):
        kept["kept"] = KEPT_FOR_FINDINGS
    return kept


def for_findings(summary: dict, findings_only: bool) -> bool:
    """Is the run kept for its findings only: a trained run kept with --findings-only, or one
    kept so before (kept again as it was)?"""
    return not learns_elsewhere(summary) and (findings_only
                                              or summary.get("kept") == KEPT_FOR_FINDINGS)


def keep_run(run_dir: Path, target: Path, findings_only: bool = False) -> int:
    """Copy the finished run in `run_dir` to `target` (CSV tables compressed, LEFT_OUT left
    out), checking its record files against summary.json's digests first and the copy after;
    a re-timed or timing-only run (`learns_elsewhere`) keeps only SLIM_FILES, its summary with the
    digests of every file it wrote (`kept_summary`); so does a trained run with
    `findings_only` (its summary then says `kept: findings`: what its study reads from its
    other files is kept beside the study's comparison, and only training it again writes
    them). -> the bytes kept."""
    summary_path = run_dir / SUMMARY_JSON
    summary = json.loads(summary_path.read_text())
    if not str(summary.get("status", "")).startswith(FINISHED):
        raise KeepError(f"{run_dir}: not a finished run (status {summary.get('status')!r})")
    digests = summary.get("files_sha256", {})
    if problem := damaged_record(run_dir, digests, slim=is_slim_kept(run_dir, summary)):
        raise KeepError(problem)
    if target.resolve() == run_dir.resolve():
        raise KeepError(f"{run_dir}: keeping a run into its own folder (keep it elsewhere)")
    slim = learns_elsewhere(summary) or for_findings(summary, findings_only)
    kept = kept_summary(run_dir, summary, findings_only)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for path in sorted(run_dir.iterdir()):
        if path.name in LEFT_OUT or path.name.endswith(".partial") or not path.is_file():
            continue
        table = table_name(path.name)
        if slim and (table or path.name) not in SLIM_FILES:
            continue
        if path.name == SUMMARY_JSON:
            write_json(target / SUMMARY_JSON, kept)
        elif table is not None:
            compress_file(path, target / (table + XZ))
        else:
            shutil.copyfile(path, target / path.name)
    # the copy vouched for by the digests
    if problem := damaged_record(target, kept["files_sha256"], slim=slim):
        raise KeepError(f"the copy differs from the run's files: {problem}")
    return sum(p.stat().st_size for p in target.iterdir())


def finished_runs(scenario_dir: Path) -> list[Path]:
    """The run folders under `scenario_dir` whose summary.json says they ended."""
    runs = []
    for summary_path in sorted(scenario_dir.rglob(SUMMARY_JSON)):
        status = str(json.loads(summary_path.read_text()).get("status", ""))
        if status.startswith(FINISHED):
            runs.append(summary_path.parent)
    return runs


def keep_study(scenario_dir: Path, kept_dir: Path,
               findings_only: bool = False) -> list[tuple[Path, int]]:
    """Keep every finished run of `scenario_dir` under `kept_dir` at the same relative path
    (<algorithm>/[<setting>/]seed<k>/), skipping those already kept with the same summary,
    and the study's index (sweep.json: its swept keys label the report's rows). -> (kept
    folder, bytes) of each run copied now."""
    kept_dir.mkdir(parents=True, exist_ok=True)
    copied = []
    for run_dir in finished_runs(scenario_dir):
        target = kept_dir / run_dir.relative_to(scenario_dir)
        kept = target / SUMMARY_JSON
        if kept.is_file():
            summary = json.loads((run_dir / SUMMARY_JSON).read_text())
            if json.loads(kept.read_text()) == kept_summary(run_dir, summary, findings_only):
                continue
        copied.append((target, keep_run(run_dir, target, findings_only)))
    if (scenario_dir / SWEEP_JSON).is_file():
        write_json(kept_dir / SWEEP_JSON, kept_index(scenario_dir / SWEEP_JSON, kept_dir))
    return copied


def kept_index(source: Path, kept_dir: Path) -> dict:
    """The study's index (sweep.json) for the runs `kept_dir` holds: the source index with
    its points cut to the kept runs, in its order, and the kept runs it does not list added
    (their algorithm and setting as their summary.json says): those the index already kept in
    `kept_dir` lists first, in its order (a study kept in parts, say a sweep's new point run
    on its own), then the others. The source index lists the points of the invocations that
    wrote it, kept or not, finished or not: copied as it is, it would name runs that are not
    there and miss kept ones. When it lists exactly the kept runs it is returned unchanged."""
    index = json.loads(source.read_text())
    kept = {p.parent.relative_to(kept_dir).as_posix(): p
            for p in sorted(kept_dir.rglob(SUMMARY_JSON))}
    points = [c for c in sweep_points(index) if c.get("folder") in kept]
    if len(points) < len(kept) and (kept_dir / SWEEP_JSON).is_file():
        # runs of earlier invocations (a study kept in parts): their order as the index kept
        # with them had it, then the new ones
        new = {c["folder"] for c in points}
        before = sweep_points(json.loads((kept_dir / SWEEP_JSON).read_text()))
        points = [c for c in before if c.get("folder") in kept and c["folder"] not in new] + points
    listed = {c["folder"] for c in points}
    for folder, summary_path in kept.items():
        if folder not in listed:
            summary = json.loads(summary_path.read_text())
            points.append({"algorithm": summary["algorithm"],
                          "setting": summary.get("setting", {}), "folder": folder})
    present = list(dict.fromkeys(c["algorithm"] for c in points))
    algorithms = [a for a in index.get("algorithms", []) if a in present]
    algorithms += [a for a in present if a not in algorithms]
    swept: dict[str, list] = {}
    for point in points:
        for key, value in point["setting"].items():
            if value not in swept.setdefault(key, []):
                swept[key].append(value)
    rest = {k: v for k, v in index.items() if k != SWEEP_POINTS_BEFORE}
    return {**rest, "algorithms": algorithms, "sweep": swept, SWEEP_POINTS: points}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scala_netsim.tools.keep",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario_dir", type=Path, help="a scenario's results folder")
    parser.add_argument("kept_dir", type=Path, help="where its runs are kept (in git)")
    parser.add_argument("--findings-only", action="store_true",
                        help="keep trained runs as re-timed ones are kept (scenario.yaml, "
                             "rounds.csv, summary.json with every file's digest): for runs "
                             "no other study re-times, whose study keeps what it reads of "
                             "their other files")
    args = parser.parse_args(argv)
    if not args.scenario_dir.is_dir():
        print(f"error: {args.scenario_dir}: no such results folder", file=sys.stderr)
        return 2
    try:
        copied = keep_study(args.scenario_dir, args.kept_dir, args.findings_only)
    except KeepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for target, size in copied:
        print(f"kept {target} ({size / 1e6:.2f} MB)")
    total = sum(p.stat().st_size for p in args.kept_dir.rglob("*") if p.is_file())
    print(f"{args.kept_dir}: {len(copied)} run(s) kept now, {total / 1e6:.2f} MB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
