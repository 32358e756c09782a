"""One algorithm trained for real under the simulated clock, one round at a time (`Run`), and
the rows on drops its rounds record."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import simpy
import torch

import channel
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario
from scala_netsim.core.events import (
    COMPLETED_COLUMN,
    DROP_REASONS,
    EVENT_COLUMNS,
    EventLog,
)
from scala_netsim.learn.contract import Trainer
from scala_netsim.learn.training import to_device
from scala_netsim.runner.drivers import AsynchronousUpdates, Driver, SynchronousRounds
from scala_netsim.runner.invariants import (
    DropSettings,
    RadioSettings,
    check_drops,
    check_run,
)
from scala_netsim.runner.metrics import round_row
from scala_netsim.runner.radio_record import (
    ENERGY_COLUMNS,
    radio_columns,
    recorded,
    round_energy,
    rows_with_columns,
)
from scala_netsim.runner.timing import timing_trainer
from scala_netsim.runner.world import (
    World,
    link_model,
    network_settings,
    round_rules,
    trainer_setup,
    use_wire,
)
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.link import Link, WirelessLink, grants_frame, transfers_frame
from scala_netsim.sim.network_link import NetworkLink

Progress = Callable[[int, float, float], None]   # (round, simulated time, test accuracy)


def drop_columns(selected: list[int], dropped: list[tuple[int, str]],
                 label_counts: np.ndarray) -> dict:
    """rounds.csv's columns on who the network dropped (when it can): how many clients were
    selected, contributed (were aggregated) and were dropped (in all and per reason), the
    contributors' label counts, and the total variation distance between the contributors'
    label distribution and the selected clients' (NaN when nobody contributed)."""
    gone = {k for k, _ in dropped}
    contributors = [k for k in selected if k not in gone]
    selected_counts = label_counts[selected].sum(axis=0)
    counts = (label_counts[contributors].sum(axis=0) if contributors
              else np.zeros_like(selected_counts))
    row: dict[str, Any] = {"num_selected": len(selected),
                           "num_contributing": len(contributors), "num_dropped": len(dropped)}
    row.update({f"num_dropped_{reason}": sum(r == reason for _, r in dropped)
                for reason in DROP_REASONS})
    row.update({f"contrib_label_{c}": int(n) for c, n in enumerate(counts)})
    row["label_bias_tv"] = (label_bias_tv(counts, selected_counts) if contributors
                            else math.nan)
    return row


def label_bias_tv(counts: np.ndarray, reference: np.ndarray) -> float:
    """Total variation distance 1/2 sum_c |p_c - q_c| between the label distributions of two
    count vectors."""
    p, q = np.asarray(counts, float), np.asarray(reference, float)
    return float(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())


def drop_summary(frame: pd.DataFrame) -> dict:
    """summary.json's figures on drops from rounds.csv: the fraction of selected clients
    dropped (and per reason), the label bias (label_bias_tv) averaged over the rounds that
    had a contributor, and how many rounds had none."""
    selected = int(frame["num_selected"].sum())
    return {
        "dropped_fraction": int(frame["num_dropped"].sum()) / selected,
        **{f"dropped_fraction_{reason}": int(frame[f"num_dropped_{reason}"].sum()) / selected
           for reason in DROP_REASONS},
        "label_bias_tv": (float(frame["label_bias_tv"].mean())
                          if frame["label_bias_tv"].notna().any() else math.nan),
        "rounds_without_contributor": int((frame["num_contributing"] == 0).sum()),
    }


class Run:
    """One algorithm trained for real under the simulated clock, one round at a time.

    `step()` selects the round's clients, simulates (and trains) the round, evaluates when
    due and returns the round's row of rounds.csv. A non-finite training loss marks the run
    diverged (the paper's "fails to converge") and ends it.
    """

    def __init__(self, scenario: Scenario, algorithm: str, world: World,
                 device: torch.device, trainer: Trainer | None = None) -> None:
        spec = ALGORITHMS[algorithm]
        self.scenario, self.algorithm, self.world = scenario, algorithm, world
        self.device = device
        # `trainer`: one that answers the protocol without training (scala_netsim.runner.replay)
        section = spec.section(scenario)
        self.trainer = trainer or spec.trainer.from_setup(
            trainer_setup(scenario, world, device, section), section)
        if trainer is None:
            use_wire(self.trainer, scenario)
        if trainer is None and scenario.timing_only:
            self.trainer = timing_trainer(self.trainer, spec.protocol.trainer_contract)
        self.selector = spec.selector.from_label_counts(world.label_counts, spec.section(scenario))
        self.selection_rng = world.seeds.numpy("selection")
        self.log = EventLog()
        self.rows: list[dict] = []
        self.best = (math.nan, 0)            # (accuracy, round)
        self.diverged = False
        self._protocol_class = spec.protocol
        self.records_radio = recorded(scenario)
        self.records_drops = scenario.drops_clients
        #: (round, what was averaged, client, weight) of every aggregation (when clients can
        #: be dropped and the trainer reports them: scala_netsim.runner.invariants.check_drops)
        self.aggregation_rows: list[tuple] = []
        self.driver: Driver[Any] = (
            AsynchronousUpdates(self.selection_rng, scenario.data.num_clients,
                                scenario.concurrency) if spec.traits.asynchronous else
            SynchronousRounds(self.selector, self.selection_rng, scenario.num_selected))
        self._simulate_from(0.0, [], [])

    def _simulate_from(self, time_s: float, grant_rows: list[tuple],
                       transfer_rows: list[tuple]) -> None:
        """A fresh SimPy clock at `time_s` with the cell's link and the algorithm's protocol."""
        self.env = simpy.Environment(initial_time=time_s)
        allocator = channel.ALLOCATORS[self.scenario.network.allocation]()
        fading = self.scenario.network.fading
        model = link_model(self.scenario)
        rules = round_rules(self.scenario, ALGORITHMS[self.algorithm].section(self.scenario))
        self.link: Link
        if self.world.cell.network is not None:
            self.link = NetworkLink(self.env, self.world.cell, network_settings(self.scenario),
                                    allocator, model, self.log, grant_rows, transfer_rows)
        else:
            self.link = WirelessLink(self.env, self.world.cell, model, allocator, self.log,
                                     self.world.seeds.sequence("link"),
                                     channel.Fading(fading.kind, fading.k_factor_db,
                                                    fading.coherence),
                                     self.world.seeds.sequence("fading"),
                                     Drops() if rules.active or model.outages else None,
                                     grant_rows, transfer_rows)
        self.protocol = self.driver.open(self._protocol_class, self.env, self.world.cell,
                                         self.trainer, self.link, self.log,
                                         self.scenario.training.local_iters, rules)

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
                             network=self.world.cell.network is not None)

    def event_table(self) -> tuple[tuple[str, ...], list[tuple]]:
        """events.csv: its columns and rows (with the `completed` column when clients can be
        dropped, the radio and energy columns when the run records them)."""
        columns, rows = EVENT_COLUMNS, self.log.rows
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
                             shannon_rates=net.link.mode == "adaptive",
                             energy_coefficient=self.scenario.compute.energy_coefficient,
                             flops_per_s=self.world.cell.flops_per_s,
                             downlink_noise_psd_w_per_hz=noise(net.client_noise_figure_db))

    def problems(self) -> list[str]:
        """Broken invariants of the run so far (see scala_netsim.runner.invariants)."""
        columns, rows = self.event_table()
        events, rounds = pd.DataFrame(rows, columns=list(columns)), pd.DataFrame(self.rows)
        cells = 1 if self.world.cell.network is None else len(self.world.cell.network.cells)
        band_hz = {"uplink": cells * self.world.cell.uplink_bandwidth_hz,
                   "downlink": cells * self.world.cell.downlink_bandwidth_hz}
        transfers = transfers_frame(self.link.transfer_rows)
        band_rows = self.link.band_grant_rows()
        problems = check_run(events, rounds, grants_frame(self.link.grant_rows), transfers,
                             band_hz, self.protocol.pipelined_clients, self.radio_settings(),
                             slots=self.driver.slots,
                             band_grants=None if band_rows is None else grants_frame(band_rows))
        problems.extend(self.driver.problems(events, rounds, transfers, band_hz))
        problems.extend(self.link.problems())
        if self.records_drops:
            aggregations = (pd.DataFrame(self.aggregation_rows,
                                         columns=["round", "group", "client_id", "weight"])
                            if self.trainer.aggregations is not None else None)
            problems.extend(check_drops(events, rounds, self.log.demands_frame(), DropSettings(
                self.world.label_counts, aggregations)))
        return problems

    def summary(self, status: str, setting: dict, wall_time_s: float,
                resumed_from_round: int | None, device: torch.device,
                retimed_from: str | None = None) -> dict:
        frame = pd.DataFrame(self.rows)
        evaluated = frame["test_acc"].dropna()
        timing_only = self.scenario.timing_only
        accuracy = {} if timing_only else {   # a timing-only run evaluates nothing
            "final_acc": float(evaluated.iloc[-1]) if len(evaluated) else math.nan,
            "best_acc": float(self.best[0]),
            "best_round": int(self.best[1]),
        }
        return {
            "scenario": self.scenario.name,
            "algorithm": self.algorithm,
            "seed": self.scenario.seed,
            "setting": dict(setting),
            "status": status,
            "rounds": int(frame["round"].iloc[-1]),
            **accuracy,
            "total_sim_time_s": float(self.env.now),
            "uplink_bytes": int(frame["uplink_bytes"].sum()),
            "downlink_bytes": int(frame["downlink_bytes"].sum()),
            "client_flops": int(frame["client_flops"].sum()),
            "server_flops": int(frame["server_flops"].sum()),
            **{column: float(frame[column].sum()) for column in ENERGY_COLUMNS
               if column in frame},
            **(drop_summary(frame) if self.records_drops else {}),
            **self.driver.summary(self.world.cell.flops_per_s, self.world.cell.gain_linear),
            "wall_time_s": wall_time_s,
            "resumed_from_round": resumed_from_round,
            "retimed_from": retimed_from,
            "device": str(device),
            **({"timing_only": True} if timing_only else {}),
        }

    # --- checkpoints: between rounds ---------------------------------------------------
    @property
    def checkpointable(self) -> bool:
        """Can the run be saved now? The driver says (a round: always)."""
        return self.driver.checkpointable

    def state_dict(self) -> dict:
        return {"trainer": self.trainer.state_dict(), "asynchronous": self.driver.state_dict(),
                "selection_rng": self.selection_rng.bit_generator.state,
                "events": list(self.log.rows),
                "demands": list(self.log.demands), "rounds": list(self.rows),
                "best": list(self.best), "diverged": self.diverged,
                "grants": list(self.link.grant_rows),
                "transfers": list(self.link.transfer_rows),
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
                            [tuple(t) for t in state["transfers"]])
        self.link.load_stream_states(state["link_streams"])
        self.driver.load_state_dict(state.get("asynchronous"), self.device)
