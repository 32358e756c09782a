"""What other users' files carry in a network, with no learning on the air: the share of each
cell's blocks' time FTP model 3's files at an offered load take, by direction, measured by
simulating every file of a scenario's network for a while (network.traffic, model files):

    python -m scala_netsim.tools.carried_load scenarios/operator.yaml --load 0.3 0.5 0.7 \\
        [--seconds 20] [--set KEY=VALUE ...] [--out carried.csv]

The fluid model (network.traffic.model: fluid) takes a load as given: the carried load this
measures is what to give it for the files an offered load stands for (docs/model/network.md,
'Other users' traffic'). Prints, and with --out writes, one row per offered load and
direction (CARRIED_COLUMNS): the cells with a covered user, the files that arrived, and the
carried load's mean over those cells (of the direction's time, under TDD) and its least and
most. The network is the scenario's under its seed (its first algorithm's world: the clients
are dropped, and stay silent). Exit status 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch

from scala_netsim.config.scenario import load_scenario
from scala_netsim.core.errors import Error
from scala_netsim.core.results import write_csv
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world, scenario_dataset
from scala_netsim.sim.network.link import NetworkLink

CARRIED_COLUMNS = ("offered_load", "direction", "cells", "files", "carried_load",
                   "carried_min", "carried_max", "seconds", "cpu_s")


def carried(scenario_path: Path, load: float, seconds: float,
            overrides: Sequence[str] = ()) -> list[tuple]:
    """CARRIED_COLUMNS rows of one offered load: its files simulated for `seconds` alone."""
    scenario = load_scenario(scenario_path, [
        *overrides, "sweep={}", "timing_only=true",
        f"network.traffic={{kind: ftp3, offered_load: {load}}}"])
    algorithm = scenario.algorithms[0]
    world = build_world(scenario, scenario_dataset(scenario, "cpu"))
    run = Run(scenario, algorithm, world, torch.device("cpu"))
    start = time.process_time()
    run.env.run(until=run.env.now + seconds)
    cpu_s = time.process_time() - start
    link = run.link
    if not isinstance(link, NetworkLink) or link.background is None:
        raise Error(f"{scenario_path}: no network with other users to measure (a hexagonal "
                    f"layout under a per-instant scheduler)")
    background = link.background
    rows = []
    for d in background.settings.directions:
        shares, covered = background.carried(d)
        shares = shares[covered]
        books = [r for r in background.load_rows() if r[1] == d.value and r[3] > 0]
        rows.append((load, d.value, len(books), sum(r[5] for r in books),
                     float(shares.mean()) if len(shares) else 0.0,
                     float(shares.min()) if len(shares) else 0.0,
                     float(shares.max()) if len(shares) else 0.0, seconds, cpu_s))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--load", type=float, nargs="+", required=True)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if not args.seconds > 0:
        print(f"error: --seconds: must be > 0, got {args.seconds:g}", file=sys.stderr)
        return 2
    rows = []
    try:
        for load in args.load:
            for row in carried(args.scenario, load, args.seconds, args.overrides):
                print(", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                for k, v in zip(CARRIED_COLUMNS, row, strict=True)),
                      flush=True)
                rows.append(row)
    except Error as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.out is not None:
        write_csv(args.out, pd.DataFrame(rows, columns=list(CARRIED_COLUMNS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
