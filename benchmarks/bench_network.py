"""A network of cells at scale, timing only: wall time and events per second of SCALA and
FedAvg in a 19-site, 3-sector 38.901 UMa network (57 cells, wraparound, interference on) with
100 clients per cell on average, 10 % a round, against the paper's single cell with the same
clients, measured side by side in this one run.

    python benchmarks/bench_network.py [--rounds 50] [--sites 19] [--batch-per-client 8]
        [--duplex fdd|tdd|both] [--nr-round-robin [--scheduler round_robin|proportional_fair]]
        [--deployment uma_n78|umi_n78|rma_fdd] [--traffic-load 0.7] [--mobility]

Prints, per algorithm and layout: setup time (dataset, partition, drop), the simulated rounds'
CPU time (the first round meters each new batch size for real: its time is given apart),
transfers and events recorded, events per CPU second over the rounds after the first (CPU
time of this process: the machine's other work does not count), and how many times the
network's CPU time a round is the single cell's; the peak resident memory so far. Each client takes
`--batch-per-client` samples a step (B = that x the round's clients), as a fixed B = 320
cannot be shared by 570 clients. `--nr-round-robin` adds the network with all of issue 49 on
(a TDD frame, the NR link abstraction, the round-robin scheduler) and prints its events per
CPU second against the plain network's; both networks then radiate 46 dBm a cell (at 1 W
some clients decode nothing under NR, and are refused). `--scheduler proportional_fair` times
the three with the proportional-fair scheduler in round robin's place. `--deployment NAME`
times the plain network against that named deployment (config.deployments: its own carrier,
frame, power, antenna and floors) on the same sites, side by side. `--mobility` times the
network under round robin with static clients against the same with every client walking
random waypoints at 3 km/h (network.mobility, with handover), side by side.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from scala_netsim.config.scenario import load_scenario
from scala_netsim.runner.execute import objects_so_far_frozen
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world, scenario_dataset

NETWORK = ["network.pathloss=3gpp_38901_uma", "network.interference=true"]


#: issue 49's three at once, and the power a cell radiates for it
ALL_THREE = ["network.duplex=tdd", "network.link_abstraction=nr",
             "network.scheduler=round_robin"]
MACRO_POWER = ["network.bs_tx_power_w=40"]


def timed_run(algorithm: str, sites: int, rounds: int, batch_per_client: int,
              network: bool, duplex: str = "fdd", extra: tuple[str, ...] = (),
              deployment: str | None = None) -> dict:
    clients = 100 * 3 * sites
    participants = round(0.1 * clients)
    overrides = [f"data.num_clients={clients}", "training.participation=0.1",
                 f"training.batch_size={batch_per_client * participants}",
                 f"training.rounds={rounds}", f"algorithms=[{algorithm}]", "timing_only=true",
                 "data.test_samples=1000"]
    if deployment is not None:     # its own keys, on `sites` sites
        overrides += [f"network.deployment={deployment}", f"network.layout.sites={sites}"]
    else:
        overrides.append(f"network.duplex={duplex}")
    if network and deployment is None:
        overrides += NETWORK + [f"network.layout={{kind: hexagonal, sites: {sites}, "
                                f"isd_m: 500, sectors: 3, wraparound: true}}"]
    scenario = load_scenario("scenarios/cellular_10pct.yaml", overrides + list(extra))
    start = time.perf_counter()
    world = build_world(scenario, scenario_dataset(scenario, "cpu"))
    run = Run(scenario, algorithm, world, torch.device("cpu"))
    setup_s = time.perf_counter() - start
    with objects_so_far_frozen():   # as execute_run simulates
        start = time.perf_counter()
        run.step()
        first_s = time.perf_counter() - start
        first_events = len(run.log)
        start = time.process_time()
        while not run.finished:
            run.step()
        rest_s = time.process_time() - start
    rounds_rss_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    transfers = len(run.link.transfer_rows)
    return {"clients": clients, "participants": participants, "setup_s": setup_s,
            "first_s": first_s, "rest_s": rest_s, "events": len(run.log), "transfers": transfers,
            "events_per_s": (len(run.log) - first_events) / rest_s,
            "sim_s": run.env.now, "problems": len(run.problems()),
            **background_books(run),
            "moves": 0 if (m := getattr(run.link, "mobility", None)) is None else len(m.move_rows),
            "handovers": (0 if m is None
                          else len(m.handover_rows)),
            "rounds_rss_MB": rounds_rss_MB,
            "peak_rss_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def background_books(run: Run) -> dict:
    """Other users' files arrived and the mean share of the cells' blocks' time they held,
    each direction's cells averaged (none without traffic)."""
    background = getattr(run.link, "background", None)
    if background is None:
        return {"files": 0, "load": {}}
    held = {d.value: float(background.carried(d)[0].mean())
            for d in background.settings.directions}
    return {"files": sum(r[5] for r in background.load_rows()), "load": held}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--sites", type=int, default=19, choices=(1, 7, 19))
    parser.add_argument("--batch-per-client", type=int, default=8)
    parser.add_argument("--algorithms", default="scala,fedavg")
    parser.add_argument("--duplex", default="fdd", choices=("fdd", "tdd", "both"),
                        help="paired bands, a TDD frame (DDDSU 10:2:2) for both layouts, or "
                             "the network under both (the cell then paired)")
    parser.add_argument("--nr-round-robin", action="store_true",
                        help="the plain network against the network with TDD, the NR link "
                             "abstraction and round robin (issue 49), both at 46 dBm a cell")
    parser.add_argument("--deployment", choices=("uma_n78", "umi_n78", "rma_fdd"),
                        help="the plain network (46 dBm a cell) against this named "
                             "deployment on the same number of sites")
    parser.add_argument("--scheduler", default="round_robin",
                        choices=("round_robin", "proportional_fair"),
                        help="with --nr-round-robin: the per-instant scheduler of the three")
    parser.add_argument("--traffic-load", type=float,
                        help="the network under round robin (46 dBm a cell) with no other "
                             "users against the same with FTP model 3 at this offered load")
    parser.add_argument("--mobility", action="store_true",
                        help="the network under round robin (46 dBm a cell) with static "
                             "clients against the same with pedestrians (3 km/h)")
    args = parser.parse_args()
    if args.mobility:
        mobility(args)
        return
    if args.traffic_load is not None:
        if not 0 <= args.traffic_load < 1:
            parser.error(f"--traffic-load: must be in [0, 1), got {args.traffic_load:g}")
        if args.deployment or args.nr_round_robin or args.duplex != "fdd":
            parser.error("--traffic-load times the plain network with paired bands: give it "
                         "without --deployment, --nr-round-robin or --duplex")
        traffic_load(args)
        return
    if args.nr_round_robin or args.deployment:
        nr_round_robin(args)
        return
    torch.set_num_threads(2)
    for algorithm in args.algorithms.split(","):
        results = {}
        cases = ([(False, "fdd"), (True, "fdd"), (True, "tdd")] if args.duplex == "both"
                 else [(False, args.duplex), (True, args.duplex)])
        for network, duplex in cases:
            r = results[network, duplex] = timed_run(algorithm, args.sites, args.rounds,
                                                     args.batch_per_client, network, duplex)
            where = (f"{args.sites} sites x 3 sectors, 38.901 UMa, interference" if network
                     else "the paper's single cell") + f", {duplex}"
            print(f"{algorithm}, {where}: {r['clients']:,} clients, {r['participants']} a "
                  f"round, {args.rounds} rounds: setup {r['setup_s']:.1f} s, first round "
                  f"(metering) {r['first_s']:.1f} s, rounds 2-{args.rounds} {r['rest_s']:.2f} CPU "
                  f"s for {r['events']:,} events ({r['transfers']:,} transfers) = "
                  f"{r['events_per_s']:,.0f} events per CPU s; simulated {r['sim_s']:.1f} s; "
                  f"invariant problems {r['problems']}; peak RSS {r['peak_rss_MB']:,.0f} MB",
                  flush=True)
        cell = results[cases[0]]
        for network, duplex in cases[1:]:
            ratio = results[network, duplex]["rest_s"] / cell["rest_s"]
            print(f"{algorithm}: the network's ({duplex}) rounds 2-{args.rounds} took "
                  f"{ratio:.2f}x the single cell's CPU time", flush=True)
        if args.duplex == "both":
            ratio = results[True, "tdd"]["rest_s"] / results[True, "fdd"]["rest_s"]
            print(f"{algorithm}: the network's TDD rounds took {ratio:.2f}x its paired bands' "
                  f"CPU time", flush=True)


def nr_round_robin(args: argparse.Namespace) -> None:
    """The plain network against the network with issue 49's three on (or, with
    --deployment, the named deployment), side by side."""
    three = args.deployment or f"tdd + nr + {args.scheduler}"
    scheduler = [f"network.scheduler={args.scheduler}"]
    other = ((three, "tdd", [], args.deployment) if args.deployment
             else (three, "tdd", MACRO_POWER + ALL_THREE[1:2] + scheduler, None))
    for algorithm in args.algorithms.split(","):
        results = {}
        for label, duplex, extra, deployment in (("plain", "fdd", MACRO_POWER, None), other):
            r = results[label] = timed_run(algorithm, args.sites, args.rounds,
                                           args.batch_per_client, True, duplex, tuple(extra),
                                           deployment)
            print(f"{algorithm}, {args.sites} sites x 3 sectors, {label}: {r['clients']:,} "
                  f"clients, {r['participants']} a round, {args.rounds} rounds: setup "
                  f"{r['setup_s']:.1f} s, first round {r['first_s']:.1f} s, rounds "
                  f"2-{args.rounds} {r['rest_s']:.2f} CPU s for {r['events']:,} events "
                  f"({r['transfers']:,} transfers) = {r['events_per_s']:,.0f} events per CPU "
                  f"s; simulated {r['sim_s']:.1f} s; invariant problems {r['problems']}; peak "
                  f"RSS {r['rounds_rss_MB']:,.0f} MB after the rounds, {r['peak_rss_MB']:,.0f} "
                  f"MB after their checks", flush=True)
        plain, all_three = results["plain"], results[three]
        named = three if args.deployment else f"TDD, NR and {args.scheduler}"
        print(f"{algorithm}: events per CPU s with {named} "
              f"{all_three['events_per_s'] / plain['events_per_s']:.2f}x the plain network's "
              f"(CPU time a round {all_three['rest_s'] / plain['rest_s']:.2f}x)", flush=True)


def traffic_load(args: argparse.Namespace) -> None:
    """The network under round robin with no other users against the same with 10 users a
    cell sending FTP model 3 files both ways at `--traffic-load`, side by side."""
    base = MACRO_POWER + ["network.scheduler=round_robin"]
    loaded = f"FTP model 3 at {args.traffic_load:g}"
    cases = (("no load", base), (loaded, base + [
        f"network.traffic={{kind: ftp3, offered_load: {args.traffic_load}}}"]))
    for algorithm in args.algorithms.split(","):
        results = {}
        for label, extra in cases:
            r = results[label] = timed_run(algorithm, args.sites, args.rounds,
                                           args.batch_per_client, True, "fdd", tuple(extra))
            carried = ", ".join(f"{d} {share:.3f}" for d, share in r["load"].items())
            print(f"{algorithm}, {args.sites} sites x 3 sectors, round robin, {label}: "
                  f"{r['clients']:,} clients, {r['participants']} a round, {args.rounds} "
                  f"rounds: rounds 2-{args.rounds} {r['rest_s']:.2f} CPU s for "
                  f"{r['events']:,} events ({r['transfers']:,} transfers) and "
                  f"{r['files']:,} background files (the cells' blocks' time they held: "
                  f"{carried or 'none'}); simulated {r['sim_s']:.1f} s; invariant problems "
                  f"{r['problems']}; peak RSS {r['peak_rss_MB']:,.0f} MB", flush=True)
        ratio = results[loaded]["rest_s"] / results["no load"]["rest_s"]
        per_sim = ((results[loaded]["rest_s"] / results[loaded]["sim_s"])
                   / (results["no load"]["rest_s"] / results["no load"]["sim_s"]))
        print(f"{algorithm}: {loaded}, CPU time a round {ratio:.2f}x no load's "
              f"({per_sim:.2f}x a simulated second)", flush=True)


def mobility(args: argparse.Namespace) -> None:
    """The network under round robin with static clients against the same with every client
    a pedestrian (random waypoint at 3 km/h, handed over by A3), side by side: events per CPU
    second and the moves and handovers made."""
    base = MACRO_POWER + ["network.scheduler=round_robin"]
    walking = "pedestrians at 3 km/h"
    cases = (("static", base), (walking, base + ["network.mobility=random_waypoint"]))
    for algorithm in args.algorithms.split(","):
        results = {}
        for label, extra in cases:
            r = results[label] = timed_run(algorithm, args.sites, args.rounds,
                                           args.batch_per_client, True, "fdd", tuple(extra))
            print(f"{algorithm}, {args.sites} sites x 3 sectors, round robin, {label}: "
                  f"{r['clients']:,} clients, {r['participants']} a round, {args.rounds} "
                  f"rounds: setup {r['setup_s']:.1f} s, rounds 2-{args.rounds} "
                  f"{r['rest_s']:.2f} CPU s for {r['events']:,} events ({r['transfers']:,} "
                  f"transfers) = {r['events_per_s']:,.0f} events per CPU s, {r['moves']:,} "
                  f"moves and {r['handovers']:,} handovers; simulated {r['sim_s']:.1f} s; "
                  f"invariant problems {r['problems']}; peak RSS {r['peak_rss_MB']:,.0f} MB",
                  flush=True)
        ratio = results[walking]["events_per_s"] / results["static"]["events_per_s"]
        print(f"{algorithm}: events per CPU s with {walking} {ratio:.2f}x the static "
              f"network's", flush=True)


if __name__ == "__main__":
    main()
