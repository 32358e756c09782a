"""The golden run: every registered algorithm on tests/golden/scenario.yaml, through the CLI.

`run_golden(out)` runs it in a subprocess whose CPU kernels are pinned (AVX2 instruction set
for torch and numpy, two threads), so that the same code gives the same bits on any x86-64
machine with AVX2, with AVX-512 or without.
`python tests/golden_run.py` rewrites the golden files from the code as it is now: do that
only in a commit that changes results on purpose, and say why.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
SCENARIO = GOLDEN / "scenario.yaml"
PINNED_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
              "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              # threads that wait for work sleep rather than spin: the same bits, and a run
              # beside another (pytest-xdist's workers on 2 cores) no longer starves it: the
              # golden run took 183 s beside other work with spinning threads, 30 s without
              "OMP_WAIT_POLICY": "PASSIVE",
              # numpy's AVX-512 paths (SVML's float64 log2, log10, power) off: the names of
              # numpy >= 2.4 and before it (a name numpy does not know is ignored, with a warning)
              "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512F AVX512CD AVX512_KNL AVX512_KNM "
                                          "AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"}
COMPARED = ("rounds.csv", "events.csv", "demands.csv", "summary.json")
VOLATILE = ("wall_time_s", "machines")   # summary.json keys that differ from run to run


def run_pinned(module: str, *args: str | Path,
               env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m module args` in a subprocess with the CPU kernels pinned (PINNED_ENV, then
    `env`), output captured: bits comparable with the golden files."""
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, **PINNED_ENV, **(env or {})})


def run_golden(out: Path, *extra: str, env: dict | None = None,
               figures: bool = False) -> subprocess.CompletedProcess:
    """The CLI on the golden scenario, results under out/golden/<algorithm>/seed3/; `extra`
    arguments and `env` variables are added. No figures unless `figures` (drawing them takes
    about a third of a golden run's time; only the layout tests look at them)."""
    return run_pinned("scala_netsim", SCENARIO, "--out", out, "--no-progress", "--no-report",
                      *([] if figures else ["--no-figures"]), *extra, env=env)


def stable_summary(path: Path) -> str:
    """summary.json without the keys that change from run to run, as text."""
    summary = json.loads(path.read_text())
    for key in VOLATILE:
        summary.pop(key, None)
    return json.dumps(summary, indent=2) + "\n"


def comparable(run_dir: Path, name: str) -> bytes:
    if name == "summary.json":
        return stable_summary(run_dir / name).encode()
    return (run_dir / name).read_bytes()


def main() -> int:
    out = ROOT / "results" / "golden-regenerate"
    shutil.rmtree(out, ignore_errors=True)
    proc = run_golden(out)
    if proc.returncode:
        print(proc.stdout, proc.stderr, sep="\n", file=sys.stderr)
        return proc.returncode
    for run_dir in sorted((out / "golden").glob("*/seed*")):
        target = GOLDEN / run_dir.parent.name
        target.mkdir(parents=True, exist_ok=True)
        for name in COMPARED:
            (target / name).write_bytes(comparable(run_dir, name))
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
