"""What a scenario may not ask of an asynchronous algorithm, and what a network of cells
cannot run with yet (checked with the rest of the scenario by scala_netsim.config.scenario)."""

from __future__ import annotations

from typing import Any

from scala_netsim.config.registry import ALGORITHMS


def asynchronous_problems(scenario: Any) -> list[str]:
    """What asynchronous algorithms cannot run with: more clients at once than there are, a
    round's deadline or over-selection (they have no round), a link that loses transfers or
    an allocator (each client has a fixed 1/Q slot), a timing-only run (the clock decides
    what is learned, so nothing can be timed without training)."""
    tr, net = scenario.training, scenario.network
    found = [a for a in scenario.algorithms if ALGORITHMS[a].traits.asynchronous]
    problems = []
    if tr.concurrency is not None and tr.concurrency > scenario.data.num_clients:
        problems.append(f"training.concurrency: at most the {scenario.data.num_clients} "
                        f"clients there are (data.num_clients), got {tr.concurrency}")
    if not found:
        return problems
    names = ", ".join(found)
    for key, value, unset in (("deadline_s", tr.deadline_s, None),
                              ("step_deadline_s", tr.step_deadline_s, None),
                              ("over_selection", tr.over_selection, 0.0)):
        if value != unset:
            problems.append(f"training.{key}: asynchronous algorithms ({names}) have no round "
                            f"to cut; allowed: {unset if unset is not None else 'null'}, got "
                            f"{value}")
    if net.link.mode != "adaptive":
        problems.append(f"network.link.mode: asynchronous algorithms ({names}) need a link "
                        f"that loses nothing; allowed: adaptive, got {net.link.mode}")
    if net.traffic.on:
        problems.append(f"network.traffic: asynchronous algorithms ({names}) are saved when "
                        f"nothing is on the air, and other users' files always are; allowed: "
                        f"none, got {net.traffic.kind}")
    if net.allocation != "equal":
        problems.append(f"network.allocation: asynchronous algorithms ({names}) give each "
                        f"client in flight a fixed 1/Q slot of each band; allowed: equal, got "
                        f"{net.allocation}")
    if scenario.timing_only:
        problems.append(f"timing_only: asynchronous algorithms ({names}) cannot be timed "
                        f"without training (the clock decides what is learned); set "
                        f"timing_only: false")
    return problems


def network_problems(scenario: Any) -> list[str]:
    """What a network of cells (network.layout.kind: hexagonal) cannot run with yet: its link
    recomputes every rate when a transfer starts or ends, and keeps no state for a transfer
    cut short (deadlines, over-selection) or left in flight at a checkpoint (asynchronous
    algorithms)."""
    problems = []
    if (scenario.network.duplex.kind == "tdd" and scenario.drops_clients
            and scenario.network.layout.kind == "single"):
        problems.append("network.duplex: tdd in the paper's cell times whole transfers only: "
                        "no deadlines, over-selection or fixed-rate link (training.deadline_s, "
                        "step_deadline_s, over_selection, network.link.mode) with it; a "
                        "network of cells (network.layout.kind: hexagonal) cuts transfers "
                        "under TDD")
    fading = scenario.network.fading
    if scenario.network.layout.kind == "single":
        if fading.kind != "none" and fading.coherence == "time":
            problems.append("network.fading.coherence: time needs a network of cells "
                            "(network.layout.kind: hexagonal, whose link rates its transfers "
                            "again at every fading block's boundary); the single layout's "
                            "link rates a transfer at its start: allowed round or transfer")
        return problems
    found = [a for a in scenario.algorithms if ALGORITHMS[a].traits.asynchronous]
    if found and scenario.network.scheduler == "static":
        problems.append(f"network.scheduler: {scenario.network.scheduler} grants a network's "
                        f"blocks per round, and {', '.join(found)} "
                        f"{'has' if len(found) == 1 else 'have'} no round (asynchronous); "
                        f"allowed with them: round_robin or proportional_fair (blocks per "
                        f"transfer)")
    return problems
