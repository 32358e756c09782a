"""Timing-only engine at scale: recorded events per second, against SimPy's own pace.

    python benchmarks/bench_timing.py [--rounds 500] [--skip-100k]

Prints, measured in this one run: SimPy's timed steps per second on a bare loop (the ceiling),
then for SCALA on cellular_10pct.yaml timing-only with 10,000 clients at 1 % (and 100,000 at
0.1 %): setup time (dataset, partition, cell, trainer), simulated rounds' wall time, events
recorded, events per second, how many rounds the real trainer ran to meter a new batch size,
the invariant check's time and the peak RSS of this process.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Generator

import simpy
import torch

from scala_netsim.config.scenario import load_scenario
from scala_netsim.runner.execute import objects_so_far_frozen
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world, scenario_dataset


def simpy_steps_per_s(steps: int = 200_000) -> float:
    env = simpy.Environment()

    def ticker(env: simpy.Environment, n: int) -> Generator[simpy.Event, None, None]:
        for _ in range(n):
            yield env.timeout(1.0)

    env.process(ticker(env, steps))
    start = time.perf_counter()
    env.run()
    return steps / (time.perf_counter() - start)


def timing_run(num_clients: int, participation: float, rounds: int, partition: str) -> dict:
    overrides = [f"data.num_clients={num_clients}", f"training.participation={participation}",
                 f"training.rounds={rounds}", "algorithms=[scala]", "timing_only=true",
                 f"data.partition={partition}"]
    scenario = load_scenario("scenarios/cellular_10pct.yaml", overrides)
    start = time.perf_counter()
    world = build_world(scenario, scenario_dataset(scenario, "cpu"))
    run = Run(scenario, "scala", world, torch.device("cpu"))
    setup_s = time.perf_counter() - start
    start = time.perf_counter()
    with objects_so_far_frozen():   # as execute_run simulates
        while not run.finished:
            run.step()
    sim_s = time.perf_counter() - start
    start = time.perf_counter()
    problems = run.problems()
    return {"clients": num_clients, "participation": participation, "rounds": rounds,
            "setup_s": setup_s, "wall_s": sim_s, "events": len(run.log),
            "events_per_s": len(run.log) / sim_s, "live_rounds": run.trainer.live_rounds,
            "check_s": time.perf_counter() - start, "problems": len(problems),
            "peak_rss_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--skip-100k", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(2)
    ceiling = simpy_steps_per_s()
    print(f"SimPy bare loop: {ceiling:,.0f} timed steps/s")
    # 100,000 clients outnumber the 60,000 training images: each draws 6 of its own
    runs = [(10_000, 0.01, "{kind: quantity, alpha: 2}")] + (
        [] if args.skip_100k else [(100_000, 0.001, "{kind: sampled, samples_per_client: 6}")])
    for clients, participation, partition in runs:
        r = timing_run(clients, participation, args.rounds, partition)
        print(f"{clients:,} clients at {participation:.1%} (partition {partition}), "
              f"{r['rounds']} rounds of SCALA: setup {r['setup_s']:.1f} s, simulation "
              f"{r['wall_s']:.1f} s for {r['events']:,} events = {r['events_per_s']:,.0f} "
              f"events/s ({r['events_per_s'] / ceiling:.3f} x SimPy's bare loop), "
              f"{r['live_rounds']} round(s) run by the real trainer to meter batch sizes, "
              f"invariant check {r['check_s']:.1f} s ({r['problems']} problems), peak RSS "
              f"{r['peak_rss_MB']:,.0f} MB")


if __name__ == "__main__":
    main()
