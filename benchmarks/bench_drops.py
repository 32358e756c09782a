"""What the book-keeping of drops costs the engine: the same timing-only FedAvg runs with
nothing that can drop a client (the plain path), with a round deadline no client misses (every
step tracked, nothing dropped: the same timeline) and with one that drops about half of them.

    python benchmarks/bench_drops.py [--clients 10000] [--rounds 50] [--repeats 3]

Prints, measured in this one run (the three variants in turn, `--repeats` times, best of
each): the simulation's wall time over the rounds the timing meter answers (the few rounds in
which the real trainer meters a new batch size train for real and are left out), events
recorded, the invariant check's time, and the ratio to the plain path. The second variant must
record the plain run's events exactly (checked here).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from scala_netsim.config.scenario import load_scenario
from scala_netsim.core.events import EventKind
from scala_netsim.runner.execute import objects_so_far_frozen
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world, scenario_dataset


def timed_run(clients: int, rounds: int, deadline_s: float | None) -> tuple[Run, float, float]:
    """The run (its trainer's per-client models dropped: a gigabyte at 100 participants),
    the wall time of its metered rounds and of its invariant check."""
    overrides = [f"data.num_clients={clients}", "training.participation=0.01",
                 f"training.rounds={rounds}", "algorithms=[fedavg]", "timing_only=true",
                 f"training.deadline_s={'null' if deadline_s is None else deadline_s}"]
    scenario = load_scenario("scenarios/cellular_10pct.yaml", overrides)
    run = Run(scenario, "fedavg", build_world(scenario, scenario_dataset(scenario, "cpu")),
              torch.device("cpu"))
    wall_s = 0.0   # of the rounds answered from the meter (the real trainer's rounds, which
    with objects_so_far_frozen():   # meter new batch sizes, train for real: left out)
        while not run.finished:
            live, start = run.trainer.live_rounds, time.perf_counter()
            run.step()
            if run.trainer.live_rounds == live:
                wall_s += time.perf_counter() - start
    start = time.perf_counter()
    problems = run.problems()
    assert not problems, problems
    check_s = time.perf_counter() - start
    run.trainer = run.protocol = None   # keep the records only
    return run, wall_s, check_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    plain, _, _ = timed_run(args.clients, args.rounds, None)   # (also warms the caches)
    frame = plain.log.frame()
    uploads = frame[frame["kind"] == EventKind.MODEL_UPLOAD.value]
    starts = {r["round"]: r["sim_time_s"] - r["round_time_s"] for r in plain.rows}
    finish = uploads["t_end_s"] - uploads["round"].map(starts)
    variants = {"plain (nothing can drop a client)": None,
                "deadline no client misses (tracked)": 10 * float(finish.max()),
                "deadline at the median finish (drops)": float(np.median(finish))}
    best = {name: (float("inf"), 0.0, None) for name in variants}
    for _ in range(args.repeats):
        for name, deadline_s in variants.items():
            run, wall_s, check_s = timed_run(args.clients, args.rounds, deadline_s)
            if wall_s < best[name][0]:
                best[name] = (wall_s, check_s, run)
    tracked = best["deadline no client misses (tracked)"][2]
    assert tracked.log.rows == plain.log.rows, "a deadline nobody misses changed the timeline"
    base = best["plain (nothing can drop a client)"][0]
    print(f"FedAvg timing-only, {args.clients:,} clients at 1 %, {args.rounds} rounds, "
          f"best of {args.repeats}:")
    for name, (wall_s, check_s, run) in best.items():
        dropped = sum(r.get("num_dropped", 0) for r in run.rows)
        print(f"  {name}: simulation {wall_s:.2f} s ({wall_s / base:.2f} x plain), "
              f"{len(run.log):,} events, "
              f"{dropped} clients dropped, invariant check {check_s:.2f} s")


if __name__ == "__main__":
    main()
