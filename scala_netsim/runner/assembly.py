"""What a run is put together from, in one place: its trainer (one that trains, one that
only meters its work for a timing-only run, or one given, as a re-timing's replay), its link
(the paper's cell's or a network's, both `Link`s) and its driver (rounds or asynchronous
updates). scala_netsim.runner.loop.Run steps what this builds."""

from __future__ import annotations

from typing import Any

import numpy as np
import simpy
import torch

import channel
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario
from scala_netsim.core.events import EventLog
from scala_netsim.learn.contract import Trainer
from scala_netsim.runner.drivers import AsynchronousUpdates, Driver, SynchronousRounds
from scala_netsim.runner.timing import timing_trainer
from scala_netsim.runner.world import (
    World,
    duplexing,
    link_model,
    network_settings,
    round_rules,
    trainer_setup,
    use_wire,
)
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.link import Link, WirelessLink
from scala_netsim.sim.network.fading import NetworkFading
from scala_netsim.sim.network.link import NetworkLink


def make_trainer(scenario: Scenario, algorithm: str, world: World, device: torch.device,
                 given: Trainer | None = None) -> Trainer:
    """The algorithm's trainer for the scenario: `given` as it is (a re-timing's replay, which
    answers the protocol without training), else a fresh one with the scenario's wire
    (compression), wrapped to meter its work without training when the run is timing only."""
    if given is not None:
        return given
    spec = ALGORITHMS[algorithm]
    section = spec.section(scenario)
    trainer = spec.trainer.from_setup(trainer_setup(scenario, world, device, section), section)
    use_wire(trainer, scenario)
    if scenario.timing_only:
        trainer = timing_trainer(trainer, spec.protocol.trainer_contract)
    return trainer


def make_driver(scenario: Scenario, algorithm: str, world: World,
                selection_rng: np.random.Generator) -> Driver[Any]:
    """Synchronous rounds of the algorithm's selector, or asynchronous updates."""
    spec = ALGORITHMS[algorithm]
    if spec.traits.asynchronous:
        return AsynchronousUpdates(selection_rng, scenario.data.num_clients,
                                   scenario.concurrency)
    selector = spec.selector.from_label_counts(world.label_counts, spec.section(scenario))
    return SynchronousRounds(selector, selection_rng, scenario.num_selected)


def make_link(env: simpy.Environment, scenario: Scenario, algorithm: str, world: World,
              log: EventLog, grant_rows: list[tuple], transfer_rows: list[tuple],
              air_rows: list[tuple], fade_rows: list[tuple] | None = None) -> Link:
    """The run's link on `env`: a network's (its cells' blocks) where the world is a network
    of cells, else the paper's cell's (fading, retransmissions and drops as the scenario
    says); the grant, transfer and (a network's) air books continue `grant_rows`,
    `transfer_rows`, `air_rows` and (a network's with fading) `fade_rows`."""
    allocator = channel.ALLOCATORS[scenario.network.allocation]()
    model = link_model(scenario)
    section = scenario.network.fading
    fading = channel.Fading(section.kind, section.k_factor_db, section.coherence,
                            section.coherence_s)
    rules = round_rules(scenario, ALGORITHMS[algorithm].section(scenario))
    if world.cell.network is not None:
        return NetworkLink(env, world.cell, network_settings(scenario), allocator, model, log,
                           grant_rows, transfer_rows, air_rows,
                           NetworkFading(fading, world.seeds.sequence("fading"),
                                         world.cell.network.coupling_linear.shape[1])
                           if fading.fades else None,
                           fade_rows, Drops() if rules.active or model.outages else None,
                           world.cell.network.mobile)
    return WirelessLink(env, world.cell, model, allocator, log, world.seeds.sequence("link"),
                        fading, world.seeds.sequence("fading"),
                        Drops() if rules.active or model.outages else None,
                        grant_rows, transfer_rows, duplexing(scenario))

