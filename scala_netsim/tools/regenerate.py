"""The files a slim kept run left out, written again to the digests its summary.json holds:

    python -m scala_netsim.tools.regenerate docs/studies/network/results --out /tmp/network

A re-timed or timing-only run is kept in git as its scenario.yaml, rounds.csv and summary.json
alone (scala_netsim.tools.keep): what it learned is another run's record (a re-timing) or
nothing (timing only), and its event tables come back from that. For every such run under
KEPT (a kept run folder, or a study's folder of them) this re-times the trained run it was
re-timed from (its summary's `retimed_from`, found in this checkout's docs/studies/) under
the run's scenario, or runs the timing-only scenario again, into OUT at the same relative
path, and checks every file its summary vouches for (`files_sha256`: rounds, events,
demands, clients and, for a network, cells, coupling, air and fading; only those it names: a
run kept before coupling.csv was written has none for it) against the regenerated one,
numpy's SIMD paths pinned (PINNED_NUMPY) as when the run was kept. The study's index
(sweep.json) is copied beside them, so that `python -m analysis OUT` rebuilds its report.
Exit status: 0 every run regenerated to its digests, 2 bad input or a digest that differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from scala_netsim.core.errors import Error
from scala_netsim.core.files import SCENARIO_YAML, SUMMARY_JSON, SWEEP_JSON
from scala_netsim.core.results import (
    KEPT_FOR_FINDINGS,
    file_sha256,
    is_slim_kept,
    read_written_yaml,
)

#: where a kept trained run lives in a checkout: what a `retimed_from` path is resolved by
STUDIES = ("docs", "studies")
#: numpy's AVX-512 paths off (SVML's float64 log2, log10 and power differ from glibc's in the
#: last bit, and the link rates come from them): kept slim runs are written and regenerated
#: with these, so that their digests hold on any x86-64 machine, with AVX-512 or without (the
#: golden run's pin, tests/golden_run.py; numpy >= 2.4's name and the older ones). numpy
#: reads it when it is first imported, so the command runs itself again with it when unset.
PINNED_NUMPY = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512F AVX512CD AVX512_KNL AVX512_KNM "
                                            "AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL "
                                            "AVX512_SPR"}


class RegenerateError(Error, ValueError):
    """A slim kept run that cannot be regenerated, or whose regeneration differs."""


def slim_runs(kept: Path) -> list[Path]:
    """The slim kept runs in `kept` (itself, or the runs under it), in path order."""
    runs = []
    for summary_path in sorted(kept.rglob(SUMMARY_JSON)):
        summary = json.loads(summary_path.read_text())
        # (a trained run kept for its findings only comes back by training it again, hours,
        # not by regenerating: left out)
        if is_slim_kept(summary_path.parent, summary) and summary.get("kept") != \
                KEPT_FOR_FINDINGS:
            runs.append(summary_path.parent)
    return runs


def source_of(run: Path, retimed_from: str) -> Path:
    """The kept trained run that `run` was re-timed from: `retimed_from` (written relative to
    wherever that re-timing ran) from its docs/studies/... part on, in the checkout that holds
    `run`."""
    parts = Path(retimed_from).parts
    starts = [i for i in range(len(parts) - 1) if parts[i:i + 2] == STUDIES]
    run = run.resolve()
    roots = [p for p in run.parents if (p / STUDIES[0] / STUDIES[1]).is_dir()]
    if not starts or not roots:
        raise RegenerateError(f"{run}: re-timed from {retimed_from!r}, which names no kept "
                              f"run under docs/studies/ of this checkout")
    source = roots[0].joinpath(*parts[starts[-1]:])
    if not (source / SUMMARY_JSON).is_file():
        raise RegenerateError(f"{run}: re-timed from {source}, which holds no finished run")
    return source


def regenerate_run(run: Path, out: Path) -> float:
    """Write `run`'s files again into `out` and check them against its digests. -> seconds."""
    from scala_netsim.config.scenario import validate_scenario
    from scala_netsim.tools.sweep import SweepPoint, run_point

    summary = json.loads((run / SUMMARY_JSON).read_text())
    scenario = validate_scenario(read_written_yaml(run / SCENARIO_YAML))
    point = SweepPoint(summary["algorithm"], tuple(summary.get("setting", {}).items()),
                       scenario, out)
    if out.exists():
        shutil.rmtree(out)
    start = time.perf_counter()
    if summary.get("retimed_from"):
        run_point(point, "cpu", source=source_of(run, summary["retimed_from"]),
                  retimed_from=summary["retimed_from"])
    else:
        run_point(point, "cpu")
    seconds = time.perf_counter() - start
    for name, digest in summary.get("files_sha256", {}).items():
        path = out / name
        if not path.is_file():
            raise RegenerateError(f"{run}: its regeneration wrote no {name}")
        if file_sha256(path) != digest:
            raise RegenerateError(f"{run}: the regenerated {name} is not the file its run "
                                  f"wrote (its SHA-256 differs from summary.json's); the "
                                  f"engine now times or draws this run differently")
    return seconds


def regenerate(kept: Path, out: Path) -> list[tuple[Path, float]]:
    """Every slim kept run in `kept`, regenerated under `out` at its relative path (the
    study's sweep.json copied). -> (run, seconds) each."""
    runs = slim_runs(kept)
    if not runs:
        raise RegenerateError(f"{kept}: holds no re-timed or timing-only run kept without its "
                              f"event tables")
    done = []
    for run in runs:
        target = out / run.relative_to(kept) if run != kept else out
        done.append((run, regenerate_run(run, target)))
    if (kept / SWEEP_JSON).is_file():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kept / SWEEP_JSON, out / SWEEP_JSON)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scala_netsim.tools.regenerate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("kept", type=Path, help="a kept run folder, or a study's folder")
    parser.add_argument("--out", type=Path, required=True,
                        help="where the regenerated runs go (at their relative paths)")
    args = parser.parse_args(argv)
    if any(os.environ.get(k) != v for k, v in PINNED_NUMPY.items()):
        return subprocess.run([sys.executable, "-m", "scala_netsim.tools.regenerate",
                               *(sys.argv[1:] if argv is None else argv)],
                              env={**os.environ, **PINNED_NUMPY}).returncode
    if not args.kept.is_dir():
        print(f"error: {args.kept}: no such folder", file=sys.stderr)
        return 2
    if args.out.resolve() == args.kept.resolve() or args.kept.resolve() in args.out.resolve(
            ).parents:
        print(f"error: --out: {args.out} is inside the kept records; give a folder outside "
              f"them", file=sys.stderr)
        return 2
    try:
        done = regenerate(args.kept, args.out)
    except Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for run, seconds in done:
        print(f"regenerated {run} ({seconds:.1f} s): every digest equal")
    print(f"{args.out}: {len(done)} run(s) regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
