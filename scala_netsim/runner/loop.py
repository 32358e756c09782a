"""One algorithm trained for real under the simulated clock, one round at a time (`Run`): it
steps the trainer, link and driver that scala_netsim.runner.assembly puts together, and
saves and restores their state between rounds."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import simpy
import torch

import channel
from scala_netsim.books.duplexing import Duplexing
from scala_netsim.books.invariants import RadioSettings
from scala_netsim.books.radio import radio_columns, round_energy, rows_with_columns
from scala_netsim.books.rounds import drop_columns, round_row
from scala_netsim.books.summary import Provenance, RunAbout, run_summary
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario
from scala_netsim.core.columns import COMPLETED_COLUMN, EVENT_COLUMNS
from scala_netsim.core.events import EventLog
from scala_netsim.learn.contract import Trainer
from scala_netsim.learn.training import to_device
from scala_netsim.runner.assembly import make_driver, make_link, make_trainer
from scala_netsim.runner.checks import run_problems
from scala_netsim.runner.world import World, duplexing, round_rules

Progress = Callable[[int, float, float], None]   # (round, simulated time, test accuracy)


class Run:
    """One algorithm trained for real under the simulated clock, one round at a time.

    `step()` selects the round's clients, simulates (and trains) the round, evaluates when
    due and returns the round's row of rounds.csv. A non-finite training loss marks the run
    diverged (the paper's "fails to converge") and ends it.
    """

    def __init__(self, scenario: Scenario, algorithm: str, world: World,
                 device: torch.device, trainer: Trainer | None = None) -> None:
        self.scenario, self.algorithm, self.world = scenario, algorithm, world
        self.device = device
        # `trainer`: one that answers the protocol without training (scala_netsim.runner.replay)
        self.trainer = make_trainer(scenario, algorithm, world, device, trainer)
        self.selection_rng = world.seeds.numpy("selection")
        self.log = EventLog()
        self.rows: list[dict] = []
        self.best = (math.nan, 0)            # (accuracy, round)
        self.diverged = False
        self.records_radio = scenario.records_radio
        self.records_drops = scenario.drops_clients
        #: (round, what was averaged, client, weight) of every aggregation (when clients can
        #: be dropped and the trainer reports them: scala_netsim.books.invariants.check_drops)
        self.aggregation_rows: list[tuple] = []
        self.driver = make_driver(scenario, algorithm, world, self.selection_rng)
        self._simulate_from(0.0, [], [], [])

    def _simulate_from(self, time_s: float, grant_rows: list[tuple],
                       transfer_rows: list[tuple], air_rows: list[tuple],
                       fade_rows: list[tuple] | None = None) -> None:
        """A fresh SimPy clock at `time_s` with the cell's link and the algorithm's protocol."""
        self.env = simpy.Environment(initial_time=time_s)
        self.link = make_link(self.env, self.scenario, self.algorithm, self.world, self.log,
                              grant_rows, transfer_rows, air_rows, fade_rows)
        spec = ALGORITHMS[self.algorithm]
        self.protocol = self.driver.open(spec.protocol, self.env, self.world.cell,
                                         self.trainer, self.link, self.log,
                                         self.scenario.training.local_iters,
                                         round_rules(self.scenario, spec.section(self.scenario)))

    @property
    def round(self) -> int:
        """The last round simulated (0 before the first)."""
        return self.rows[-1]["round"] if self.rows else 0

    @property
    def finished(self) -> bool:
        """Diverged, all `training.rounds` versions made, or the simulated time budget spent
        (the version that reaches it is the last)."""
        return (self.diverged or self.round >= self.scenario.training.rounds
                or (bool(self.rows) and self.out_of_time))

    @property
    def out_of_time(self) -> bool:
        """The simulated time has reached `training.time_budget_s` (never without one)."""
        budget = self.scenario.training.time_budget_s
        return budget is not None and self.env.now >= budget

    def step(self) -> dict:
        """Simulate up to the next global model version (a round). -> its row of rounds.csv."""
        tr = self.scenario.training
        version = self.driver.advance(self.round + 1)
        r, selected = version.number, version.selected
        start_s, first_event = version.start_s, version.first_event
        first_transfer = version.first_transfer
        loss = self.trainer.take_loss()
        self.diverged = loss is not None and not torch.isfinite(loss).item()
        evaluation = None
        if (r % tr.eval_every == 0 or r == tr.rounds or self.out_of_time) and not self.diverged:
            evaluation = self.trainer.evaluate(self.world.dataset.test_x,
                                               self.world.dataset.test_y)  # None: timing only
            if evaluation is not None and not evaluation.accuracy <= self.best[0]:
                self.best = (evaluation.accuracy, r)
        rows, energy = self.log.rows[first_event:version.end_event], None
        if self.records_radio:
            energy = round_energy(self._radio_columns(rows, first_event, first_transfer,
                                                      version.end_transfer), rows)
        drops = None
        if self.records_drops and self.link.drops is not None:
            drops = drop_columns([int(k) for k in selected], self.link.drops.dropped,
                                 self.world.label_counts)
            self.aggregation_rows.extend((r, *a) for a in self.trainer.aggregations or ())
        row = self.driver.version_row(
            round_row(r, rows, start_s, self.env.now, len(selected), evaluation, energy, drops),
            version, self.world.label_counts)
        self.rows.append(row)
        return row

    def _radio_columns(self, rows: list[tuple], first_event: int, first_transfer: int,
                       end_transfer: int | None = None) -> dict[str, np.ndarray]:
        return radio_columns(rows, first_event,
                             self.link.transfer_rows[first_transfer:end_transfer],
                             self.world.cell.flops_per_s,
                             self.scenario.compute.energy_coefficient,
                             network=self.world.cell.network is not None,
                             tdd=self.scenario.network.duplex.kind == "tdd",
                             nr=self.scenario.network.link_abstraction == "nr",
                             mobility=self.scenario.network.mobility.moving)

    def event_table(self) -> tuple[tuple[str, ...], list[tuple]]:
        """events.csv: its columns and rows (with the `completed` column when clients can be
        dropped, the radio and energy columns when the run records them)."""
        columns: tuple[str, ...] = EVENT_COLUMNS
        rows = self.log.rows
        if self.records_drops:
            columns = columns + (COMPLETED_COLUMN,)
            rows = [(*row, done) for row, done in zip(rows, self.log.completed(), strict=True)]
        if self.records_radio:
            radio = self._radio_columns(self.log.rows, 0, 0)
            columns = columns + tuple(radio)
            rows = rows_with_columns(rows, radio)
        return self.driver.event_table(columns, rows)

    def radio_settings(self) -> RadioSettings | None:
        """What the invariants need to recompute the radio columns (None when not recorded)."""
        if not self.records_radio:
            return None
        net = self.scenario.network
        def noise(figure_db: float) -> float:
            return float(channel.dbm_to_w(net.noise_psd_dbm_per_hz + figure_db))

        return RadioSettings(noise_psd_w_per_hz=noise(net.bs_noise_figure_db),
                             # (events' rates: Shannon's at their SNR where nothing
                             # interfered, unless NR's, a round robin's changing blocks or
                             # gains changing in blocks of time: the air record's checks)
                             shannon_rates=(net.link.mode == "adaptive"
                                            and net.link_abstraction == "shannon"
                                            and net.scheduler == "static"
                                            and net.fading.coherence != "time"),
                             energy_coefficient=self.scenario.compute.energy_coefficient,
                             flops_per_s=self.world.cell.flops_per_s,
                             downlink_noise_psd_w_per_hz=noise(net.client_noise_figure_db))

    def duplexing(self) -> Duplexing | None:
        """The TDD frame the invariants time transfers by (None: paired bands)."""
        return duplexing(self.scenario)

    def problems(self) -> list[str]:
        """Broken invariants of the run so far (scala_netsim.runner.checks.run_problems)."""
        return run_problems(self)

    def summary(self, status: str, setting: dict, wall_time_s: float,
                resumed_from_round: int | None, device: torch.device,
                retimed_from: str | None = None) -> dict:
        """summary.json's figures (scala_netsim.books.summary.run_summary)."""
        about = RunAbout(self.scenario.name, self.algorithm, self.scenario.seed, dict(setting),
                         status, self.scenario.timing_only, self.records_drops)
        return run_summary(about, self.rows, self.best, self.env.now,
                           self.driver.summary(self.world.cell.flops_per_s,
                                               self.world.cell.gain_linear),
                           Provenance(wall_time_s, resumed_from_round, retimed_from,
                                      str(device)))

    # --- checkpoints: between rounds ---------------------------------------------------
    @property
    def checkpointable(self) -> bool:
        """Can the run be saved now? The driver says (a round: always); never with other
        users' traffic (network.traffic), whose files in flight a checkpoint does not hold:
        such a run, interrupted, starts again (its learning does not depend on the clock:
        train it without traffic and re-time it with)."""
        return self.driver.checkpointable and getattr(self.link, "background", None) is None

    def state_dict(self) -> dict:
        return {"trainer": self.trainer.state_dict(), "asynchronous": self.driver.state_dict(),
                "selection_rng": self.selection_rng.bit_generator.state,
                "events": list(self.log.rows),
                "demands": list(self.log.demands), "rounds": list(self.rows),
                "best": list(self.best), "diverged": self.diverged,
                "grants": list(self.link.grant_rows),
                "transfers": list(self.link.transfer_rows),
                "air": [] if (air := self.link.air_record()) is None else list(air.rows),
                "fades": [] if air is None else list(air.fades),
                "link_streams": self.link.stream_states(),
                "cut": list(self.log.cut), "aggregations": list(self.aggregation_rows)}

    def load_state_dict(self, state: dict) -> None:
        """`state` as read from a checkpoint (onto the CPU): what the trainer and the clients
        in flight held beyond modules and optimisers goes back to the run's device."""
        trainer = state["trainer"]
        if "extra" in trainer:
            trainer = {**trainer, "extra": to_device(trainer["extra"], self.device)}
        self.trainer.load_state_dict(trainer)
        self.selection_rng.bit_generator.state = state["selection_rng"]
        self.log.rows = [tuple(e) for e in state["events"]]
        self.log.demands = [tuple(d) for d in state["demands"]]
        self.log.cut = list(state["cut"])
        self.aggregation_rows = [tuple(a) for a in state["aggregations"]]
        self.rows, self.best = list(state["rounds"]), tuple(state["best"])
        self.diverged = state["diverged"]
        self._simulate_from(self.rows[-1]["sim_time_s"] if self.rows else 0.0,
                            [tuple(g) for g in state["grants"]],
                            [tuple(t) for t in state["transfers"]],
                            [tuple(a) for a in state.get("air", [])],
                            [tuple(f) for f in state.get("fades", [])])
        self.link.load_stream_states(state["link_streams"])
        self.driver.load_state_dict(state.get("asynchronous"), self.device)
