"""The operator study's rounds with every file (docs/studies/operator/report.md): not a
timing but a measurement. SCALA under scenarios/operator.yaml (a seed, uma_n78 under round
robin, DDDSU), timing only, its first rounds with no other users, with FTP model 3's files at
each offered load (every file simulated), and under the fluid model at the loads those files
carry (carried.csv's), side by side:

    python benchmarks/operator_rounds.py [--rounds 5] [--seed 2] [--load 0.3 0.5 0.7]
        [--out FILE.csv]

Prints each case's round times (rounds.csv's round_time_s) and their sum against no load's,
and with --out writes them (ROUND_COLUMNS: the operator study keeps them as
results/rounds_files.csv, which analysis.operator reads).
Every file costs about a CPU second a simulated second here (docs/benchmarks.md): minutes a
load.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import torch

from scala_netsim.config.scenario import load_scenario
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world, scenario_dataset

ROOT = Path(__file__).resolve().parents[1]
CARRIED = ROOT / "docs" / "studies" / "operator" / "results" / "carried.csv"


ROUND_COLUMNS = ("seed", "offered_load", "model", "round", "round_time_s")


def rounds(traffic: str, count: int, seed: int) -> tuple[list[float], float]:
    """The round times of SCALA's first `count` rounds under `traffic`, and the CPU time."""
    scenario = load_scenario(ROOT / "scenarios" / "operator.yaml", [
        "algorithms=[scala]", "sweep={}", "timing_only=true", f"training.rounds={count}",
        f"seed={seed}",
        "data.test_samples=1000", f"network.traffic={traffic}"])
    run = Run(scenario, "scala", build_world(scenario, scenario_dataset(scenario, "cpu")),
              torch.device("cpu"))
    start = time.process_time()
    while not run.finished:
        run.step()
    return [float(r["round_time_s"]) for r in run.rows], time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2,
                        help="2: its first 5 rounds last 138 s (seed 0's first, 1,604 s)")
    parser.add_argument("--load", type=float, nargs="+", default=[0.3, 0.5, 0.7])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out: list[tuple] = []
    carried = pd.read_csv(CARRIED).set_index(["offered_load", "direction"])["carried_load"]
    base, cpu = rounds("{kind: none}", args.rounds, args.seed)
    print(f"no other users: rounds {', '.join(f'{t:.2f}' for t in base)} s; {cpu:.1f} CPU s",
          flush=True)
    out += [(args.seed, 0.0, "none", i + 1, t) for i, t in enumerate(base)]
    for load in args.load:
        up, down = carried[(load, "uplink")], carried[(load, "downlink")]
        for label, model, traffic in (
                (f"every file at offered {load:g}", "files",
                 f"{{kind: ftp3, offered_load: {load}}}"),
                (f"fluid at its carried loads ({up:.3f} up, {down:.3f} down)", "fluid",
                 f"{{kind: ftp3, model: fluid, offered_load: {{uplink: {up:.3f}, "
                 f"downlink: {down:.3f}}}}}")):
            times, cpu = rounds(traffic, args.rounds, args.seed)
            out += [(args.seed, load, model, i + 1, t) for i, t in enumerate(times)]
            print(f"{label}: rounds {', '.join(f'{t:.2f}' for t in times)} s, "
                  f"{sum(times) / sum(base):.3f}x no load's; {cpu:.1f} CPU s", flush=True)
    if args.out is not None:
        pd.DataFrame(out, columns=list(ROUND_COLUMNS)).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
