"""One algorithm's run, end to end: the world it shares with the scenario's other algorithms
(partition and cell), the run itself (one round at a time), its checkpoints and its files."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import simpy
import torch
import yaml

import channel
from scala_netsim.algorithms.common import ClientData, SGDSettings, TrainerSetup
from scala_netsim.algorithms.contract import Trainer
from scala_netsim.algorithms.registry import ALGORITHMS
from scala_netsim.compression import Wire
from scala_netsim.config.scenario import Scenario, scenario_yaml, training_identity
from scala_netsim.core.catalog import NATIVE_SIZE_ARCHS
from scala_netsim.core.events import (
    COMPLETED_COLUMN,
    DEMAND_COLUMNS,
    DROP_REASONS,
    EVENT_COLUMNS,
    EventLog,
)
from scala_netsim.core.records import (
    CHECKPOINT_PT,
    CLIENTS_CSV,
    DEMANDS_CSV,
    EVENTS_CSV,
    MODEL_PT,
    RECORD_FILES,
    ROUNDS_CSV,
    SCENARIO_YAML,
    SUMMARY_JSON,
)
from scala_netsim.core.results import (  # noqa: F401 (file_sha256: its old import path)
    file_sha256,
    write_atomic,
    write_csv,
    write_json,
    write_rows_csv,
    write_text,
)
from scala_netsim.core.seeds import Seeds
from scala_netsim.core.version import __version__
from scala_netsim.data import Dataset, load_dataset
from scala_netsim.engine import (
    Cell,
    RoundRules,
    WirelessLink,
    grants_frame,
    transfers_frame,
)
from scala_netsim.invariants import (
    DropSettings,
    InvariantError,
    RadioSettings,
    check_drops,
    check_run,
)
from scala_netsim.metrics import round_row
from scala_netsim.partition import label_counts, make_partition
from scala_netsim.radio_record import (
    ENERGY_COLUMNS,
    RADIO_COLUMNS,
    radio_columns,
    recorded,
    round_energy,
    rows_with_columns,
)
from scala_netsim.timing import timing_trainer

Progress = Callable[[int, float, float], None]   # (round, simulated time, test accuracy)


@dataclass
class World:
    """What every algorithm of a scenario shares: the same partition and the same cell."""

    dataset: Dataset
    client_indices: list[np.ndarray]
    label_counts: np.ndarray
    cell: Cell
    seeds: Seeds


def client_partition(scenario: Scenario, dataset: Dataset) -> list[np.ndarray]:
    """Each client's training-sample indices, reproducibly from the seed (PartitionError when
    the partition cannot be made, e.g. a client would get no sample).

    The last few partitions are kept (the CLI checks a scenario's partition before it runs,
    then builds the run's world from it; 10,000 clients' take seconds), keyed by the dataset
    object, which the entry holds so that its id cannot be reused by another."""
    part = scenario.data.partition
    key = (id(dataset), part.model_dump_json(), scenario.data.num_clients, scenario.seed)
    hit = _PARTITIONS.pop(key, None)
    if hit is None:
        hit = (dataset, make_partition(
            part.kind, dataset.train_y.cpu().numpy(), scenario.data.num_clients,
            dataset.num_classes, Seeds(scenario.seed).numpy("partition"),
            alpha=getattr(part, "alpha", None), beta=getattr(part, "beta", None),
            samples_per_client=getattr(part, "samples_per_client", None)))
    _PARTITIONS[key] = hit                      # most recently used last
    while len(_PARTITIONS) > 4:
        del _PARTITIONS[next(iter(_PARTITIONS))]
    return hit[1]


_PARTITIONS: dict[tuple, tuple[Dataset, list[np.ndarray]]] = {}


def build_world(scenario: Scenario, dataset: Dataset) -> World:
    """Partition the training set and drop the clients, reproducibly from the seed."""
    seeds = Seeds(scenario.seed)
    labels = dataset.train_y.cpu().numpy()
    client_indices = client_partition(scenario, dataset)
    net, comp = scenario.network, scenario.compute
    distance_m = channel.drop_clients_uniform_disk(
        scenario.data.num_clients, net.radius_m, net.min_distance_m,
        seeds.numpy("drop"))
    cell = Cell(
        distance_m=distance_m,
        pathloss_db=channel.PATHLOSS_MODELS[net.pathloss]().pathloss_db(distance_m),
        flops_per_s=channel.sample_flops_per_s(scenario.data.num_clients, *comp.client_flops_per_s,
                                               seeds.numpy("flops")),
        server_flops_per_s=comp.server_flops_per_s,
        uplink_bandwidth_hz=net.uplink_bandwidth_hz,
        downlink_bandwidth_hz=net.downlink_bandwidth_hz,
        # its own stream: the same draws whatever the algorithm or the other settings
        shadowing_db=(channel.shadowing_db(net.shadowing_std_db, scenario.data.num_clients,
                                           seeds.numpy("shadowing"))
                      if net.shadowing_std_db > 0 else None),
    )
    return World(dataset, client_indices, label_counts(labels, client_indices, dataset.num_classes),
                 cell, seeds)


def link_model(scenario: Scenario) -> channel.LinkModel:
    """The scenario's link model (network.link.mode), with the cell's radio settings."""
    net = scenario.network
    radio = {"client_tx_power_w": net.client_tx_power_w, "bs_tx_power_w": net.bs_tx_power_w,
             "downlink_bandwidth_hz": net.downlink_bandwidth_hz,
             "noise_psd_dbm_per_hz": net.noise_psd_dbm_per_hz}
    if net.link.mode == "fixed_rate":
        radio.update(target_rate_bps=net.link.target_rate_bps,
                     max_attempts=net.link.max_attempts)
    return channel.LINK_MODELS[net.link.mode](**radio)


def cell_edge_warning(scenario: Scenario) -> str | None:
    """For a fixed-rate link: a warning when a client at the cell edge (radius_m, no shadowing,
    no fading) could not reach network.link.target_rate_bps even on the whole band of a
    direction; it would then lose every transfer unless fading lifts its channel. None
    otherwise. (A warning, not a refusal: with fading or shadowing such a cell can work.)"""
    net = scenario.network
    if net.link.mode != "fixed_rate":
        return None
    model = link_model(scenario)
    edge_pathloss_db = channel.PATHLOSS_MODELS[net.pathloss]().pathloss_db(net.radius_m)
    gain = float(channel.db_to_linear(-edge_pathloss_db))
    short = []
    for direction, band_hz in ((channel.Direction.UPLINK, net.uplink_bandwidth_hz),
                               (channel.Direction.DOWNLINK, net.downlink_bandwidth_hz)):
        capacity = model.capacity_bps(direction, gain, band_hz)
        if capacity < net.link.target_rate_bps:
            short.append(f"{direction.value} {capacity:.4g} bit/s on all {band_hz:.4g} Hz")
    if not short:
        return None
    return (f"network.link.target_rate_bps: {net.link.target_rate_bps:.4g} bit/s is above what "
            f"a client at the cell edge ({net.radius_m:g} m, no fading) can reach: "
            f"{'; '.join(short)}; such clients lose every transfer unless fading lifts them")


def clients_frame(world: World) -> pd.DataFrame:
    frame = pd.DataFrame({
        "client_id": np.arange(len(world.client_indices)),
        "distance_m": world.cell.distance_m,
        "pathloss_db": world.cell.pathloss_db,     # the distance's alone
        **({} if world.cell.shadowing_db is None else {"shadowing_db": world.cell.shadowing_db}),
        "flops_per_s": world.cell.flops_per_s,
        "num_samples": [len(ix) for ix in world.client_indices],
    })
    for y in range(world.label_counts.shape[1]):
        frame[f"label_{y}"] = world.label_counts[:, y]
    return frame


def round_rules(scenario: Scenario) -> RoundRules:
    """The scenario's deadlines and over-selection for the engine."""
    tr = scenario.training
    keep = scenario.num_participants if scenario.num_selected > scenario.num_participants else None
    return RoundRules(tr.deadline_s, tr.step_deadline_s, keep)


def drop_columns(selected: list[int], dropped: list[tuple[int, str]],
                 label_counts: np.ndarray) -> dict:
    """rounds.csv's columns on who the network dropped (when it can): how many clients were
    selected, contributed (were aggregated) and were dropped (in all and per reason), the
    contributors' label counts, and the total variation distance between the contributors'
    label distribution and the selected clients' (NaN when nobody contributed)."""
    gone = {k for k, _ in dropped}
    contributors = [k for k in selected if k not in gone]
    selected_counts = label_counts[selected].sum(axis=0)
    counts = label_counts[contributors].sum(axis=0) if contributors else 0 * selected_counts
    row = {"num_selected": len(selected), "num_contributing": len(contributors),
           "num_dropped": len(dropped)}
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


def trainer_setup(scenario: Scenario, world: World, device: torch.device) -> TrainerSetup:
    """What the scenario's trainers are built from (scala_netsim.algorithms.common)."""
    tr, ds = scenario.training, world.dataset
    return TrainerSetup(
        data=ClientData(ds.train_x, ds.train_y, world.client_indices, ds.num_classes),
        sgd=SGDSettings(scenario.selected_batch_size, tr.lr, tr.momentum, tr.weight_decay,
                        tr.grad_clip_norm),
        arch=scenario.model.arch, split=scenario.model.split, in_channels=ds.in_channels,
        rounds=tr.rounds, seeds=world.seeds, device=device)


def use_wire(trainer: Trainer, scenario: Scenario) -> None:
    """Give the trainer the scenario's compression (scala_netsim.compression)."""
    c = scenario.compression
    if (c.uplink, c.downlink, c.models) == ("none", "none", "none"):
        return
    if not hasattr(trainer, "wire"):
        raise ValueError(f"compression: {type(trainer).__name__} builds its messages without "
                         f"a Wire (scala_netsim.compression), so it cannot compress them")
    trainer.wire = Wire.of(c.uplink, c.downlink, c.models, c.topk_fraction)


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
        # `trainer`: one that answers the protocol without training (scala_netsim.replay)
        self.trainer = trainer or spec.trainer.from_setup(trainer_setup(scenario, world, device),
                                                          spec.section(scenario))
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
        #: be dropped and the trainer reports them: scala_netsim.invariants.check_drops)
        self.aggregation_rows: list[tuple] = []
        self._simulate_from(0.0, [], [])

    def _simulate_from(self, time_s: float, grant_rows: list[tuple],
                       transfer_rows: list[tuple]) -> None:
        """A fresh SimPy clock at `time_s` with the cell's link and the algorithm's protocol."""
        self.env = simpy.Environment(initial_time=time_s)
        allocator = channel.ALLOCATORS[self.scenario.network.allocation]()
        fading = self.scenario.network.fading
        self.link = WirelessLink(self.env, self.world.cell, link_model(self.scenario), allocator,
                                 self.log, self.world.seeds.sequence("link"),
                                 channel.Fading(fading.kind, fading.k_factor_db,
                                                fading.coherence),
                                 self.world.seeds.sequence("fading"))
        self.link.grant_rows, self.link.transfer_rows = grant_rows, transfer_rows
        self.protocol = self._protocol_class(self.env, self.world.cell, self.trainer, self.link,
                                             self.log, self.scenario.training.local_iters,
                                             round_rules(self.scenario))

    @property
    def round(self) -> int:
        """The last round simulated (0 before the first)."""
        return self.rows[-1]["round"] if self.rows else 0

    @property
    def finished(self) -> bool:
        return self.diverged or self.round >= self.scenario.training.rounds

    def step(self) -> dict:
        """Simulate the next round. -> its row of rounds.csv."""
        tr = self.scenario.training
        r = self.round + 1
        selected = self.selector.select(self.scenario.num_selected, self.selection_rng)
        start_s, first_event = self.env.now, len(self.log)
        first_transfer = len(self.link.transfer_rows)
        self.protocol.run_round(r, selected)
        loss = self.trainer.round_loss
        self.diverged = loss is not None and not torch.isfinite(loss).item()
        evaluation = None
        if (r % tr.eval_every == 0 or r == tr.rounds) and not self.diverged:
            evaluation = self.trainer.evaluate(self.world.dataset.test_x,
                                               self.world.dataset.test_y)  # None: timing only
            if evaluation is not None and not evaluation.accuracy <= self.best[0]:
                self.best = (evaluation.accuracy, r)
        rows, energy = self.log.rows[first_event:], None
        if self.records_radio:
            energy = round_energy(self._radio_columns(rows, first_event, first_transfer), rows)
        drops = None
        if self.records_drops:
            drops = drop_columns([int(k) for k in selected], self.protocol.drops.dropped,
                                 self.world.label_counts)
            self.aggregation_rows.extend((r, *a) for a in getattr(self.trainer, "aggregations",
                                                                  ()))
        row = round_row(r, rows, start_s, self.env.now, len(selected), evaluation, energy, drops)
        self.rows.append(row)
        return row

    def _radio_columns(self, rows: list[tuple], first_event: int,
                       first_transfer: int) -> dict[str, np.ndarray]:
        return radio_columns(rows, first_event, self.link.transfer_rows[first_transfer:],
                             self.world.cell.flops_per_s,
                             self.scenario.compute.energy_coefficient)

    def event_table(self) -> tuple[tuple[str, ...], list[tuple]]:
        """events.csv: its columns and rows (with the `completed` column when clients can be
        dropped, the radio and energy columns when the run records them)."""
        columns, rows = EVENT_COLUMNS, self.log.rows
        if self.records_drops:
            columns = columns + (COMPLETED_COLUMN,)
            rows = [(*row, done) for row, done in zip(rows, self.log.completed(), strict=True)]
        if self.records_radio:
            columns = columns + RADIO_COLUMNS
            rows = rows_with_columns(rows, self._radio_columns(self.log.rows, 0, 0))
        return columns, rows

    def radio_settings(self) -> RadioSettings | None:
        """What the invariants need to recompute the radio columns (None when not recorded)."""
        if not self.records_radio:
            return None
        net = self.scenario.network
        return RadioSettings(noise_psd_w_per_hz=float(channel.dbm_to_w(net.noise_psd_dbm_per_hz)),
                             shannon_rates=net.link.mode == "adaptive",
                             energy_coefficient=self.scenario.compute.energy_coefficient,
                             flops_per_s=self.world.cell.flops_per_s)

    def problems(self) -> list[str]:
        """Broken invariants of the run so far (see scala_netsim.invariants)."""
        columns, rows = self.event_table()
        events, rounds = pd.DataFrame(rows, columns=list(columns)), pd.DataFrame(self.rows)
        problems = check_run(events, rounds, grants_frame(self.link.grant_rows),
                             transfers_frame(self.link.transfer_rows),
                             {"uplink": self.world.cell.uplink_bandwidth_hz,
                              "downlink": self.world.cell.downlink_bandwidth_hz},
                             self.protocol.pipelined_clients, self.radio_settings())
        if self.records_drops:
            aggregations = (pd.DataFrame(self.aggregation_rows,
                                         columns=["round", "group", "client_id", "weight"])
                            if hasattr(self.trainer, "aggregations") else None)
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
            "wall_time_s": wall_time_s,
            "resumed_from_round": resumed_from_round,
            "retimed_from": retimed_from,
            "device": str(device),
            **({"timing_only": True} if timing_only else {}),
        }

    # --- checkpoints: between rounds ---------------------------------------------------
    def state_dict(self) -> dict:
        return {"trainer": self.trainer.state_dict(),
                "selection_rng": self.selection_rng.bit_generator.state,
                "events": list(self.log.rows),
                "demands": list(self.log.demands), "rounds": list(self.rows),
                "best": list(self.best), "diverged": self.diverged,
                "grants": list(self.link.grant_rows),
                "transfers": list(self.link.transfer_rows),
                "link_streams": self.link.stream_states(),
                "cut": list(self.log.cut), "aggregations": list(self.aggregation_rows)}

    def load_state_dict(self, state: dict) -> None:
        self.trainer.load_state_dict(state["trainer"])
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


CHECKPOINT_FORMAT = 5   # 5: cut steps and aggregations (drops); 4: transfers carry their
#                         gain and power, the link's streams


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed (another scenario, algorithm or version)."""


def checkpoint_identity(scenario: Scenario, algorithm: str) -> str:
    """What a checkpoint must match to be resumed: format, package version, the resolved
    scenario and the algorithm."""
    identity = yaml.safe_dump(training_identity(scenario), sort_keys=True)
    text = f"{CHECKPOINT_FORMAT}|{__version__}|{algorithm}|{identity}"
    return hashlib.sha256(text.encode()).hexdigest()


def save_final_model(path: Path, trainer: Trainer) -> None:
    """model.pt: the trained global model at the end of a run, {"modules": {name: state
    dict}} as the trainer keeps them (split algorithms: "client" and "server"; FL: "client",
    the whole model; FedConcat: its clusters and classifier), on the CPU, written atomically.
    The attack (scala_netsim.attack) reads it. Nothing is written for a trainer that names no
    persistent modules (its whole state, optimisers and per-client extras, is not built)."""
    modules = getattr(trainer, "persistent_modules", None)
    if modules is None:
        return
    data = {"modules": {name: {k: t.detach().cpu() for k, t in module.state_dict().items()}
                        for name, module in modules().items()}}
    write_atomic(path, lambda f: torch.save(data, f), binary=True)


class Checkpointer:
    """checkpoint.pt of a run folder: the whole state of a run between rounds, written
    atomically, read back only if it was written for the same scenario and algorithm."""

    def __init__(self, path: Path, identity: str) -> None:
        self.path, self.identity = Path(path), identity

    def load(self) -> dict | None:
        """The saved state, None when there is none, CheckpointError when it is not ours."""
        if not self.path.is_file():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except Exception as exc:  # a damaged or foreign file: say which, never unpickle it
            raise CheckpointError(f"{self.path}: not a readable scala_netsim checkpoint "
                                  f"({exc})") from None
        if not isinstance(state, dict) or state.get("identity") != self.identity:
            raise CheckpointError(
                f"{self.path}: written by another scenario, algorithm or scala_netsim version; "
                f"refusing to resume it (--force starts the run afresh)")
        return state

    def save(self, run: Run, wall_time_s: float) -> None:
        data = {"identity": self.identity, "round": run.round, "run": run.state_dict(),
                "wall_time_s": wall_time_s}
        write_atomic(self.path, lambda f: torch.save(data, f), binary=True)


class RunWriter:
    """The files of one run folder: scenario.yaml and clients.csv at the start, rounds.csv
    and events.csv rewritten (atomically) as the run goes, summary.json at the end.

    Each rewrite writes the whole table, which grows with the run: `flush(run)` (after an
    evaluated round) is skipped while less than FLUSH_PACE times the last rewrite's duration
    has passed since it, so that rewriting costs at most ~1/FLUSH_PACE of the run's wall time
    (every evaluated round while the files are small; a 500-round run's 400,000-event table
    takes seconds to write). `flush(run, now=True)` (checkpoints, the end, a divergence)
    always writes."""

    FLUSH_PACE = 20.0

    def __init__(self, folder: Path, scenario: Scenario, world: World) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text(self.folder / SCENARIO_YAML, scenario_yaml(scenario))
        write_csv(self.folder / CLIENTS_CSV, clients_frame(world))
        self._next_flush = 0.0   # perf_counter time before which a flush is skipped

    def flush(self, run: Run, now: bool = False) -> None:
        start = time.perf_counter()
        if not now and start < self._next_flush:
            return
        self._write(run)
        end = time.perf_counter()
        self._next_flush = end + self.FLUSH_PACE * (end - start)

    def _write(self, run: Run) -> None:
        rounds = pd.DataFrame(run.rows)
        if run.scenario.timing_only:   # nothing was evaluated
            rounds = rounds.drop(columns="test_acc")
        write_csv(self.folder / ROUNDS_CSV, rounds)
        write_rows_csv(self.folder / EVENTS_CSV, *run.event_table())
        write_rows_csv(self.folder / DEMANDS_CSV, DEMAND_COLUMNS, run.log.demands)

    def summary(self, data: dict) -> None:
        """summary.json, with the SHA-256 of the record files it vouches for (a re-timing
        refuses a folder whose files are not the ones its run wrote)."""
        data = dict(data, files_sha256={name: file_sha256(self.folder / name)
                                        for name in RECORD_FILES})
        write_json(self.folder / SUMMARY_JSON, data)


#: the files of a run folder that record what happened (summary.json holds their digests)


@contextlib.contextmanager
def objects_so_far_frozen() -> Iterator[None]:
    """Keep the objects that exist now (modules, the dataset, the world: hundreds of thousands)
    out of the garbage collector's full collections while the body runs (gc.freeze), and give
    them back afterwards (gc.unfreeze), so that nothing frozen outlives the run. A timing-only
    run of 10,000 clients spent ~20 % of its time in full collections walking them again and
    again. Cyclic garbage among them waits for the first full collection after the run (what
    reference counting frees is freed at once, as always). gc.unfreeze also releases what a
    caller had frozen before the run."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# --- the dataset of a cell, loaded once per process, and deterministic kernels ------------
_DATASETS = {}


def cell_dataset(scenario: Scenario, device: torch.device | str) -> Dataset:
    """The scenario's dataset on `device`, loaded once per process."""
    d = scenario.data
    pad_to_32 = scenario.model.arch not in NATIVE_SIZE_ARCHS
    key = (d.dataset, d.data_dir, d.train_samples, d.test_samples, pad_to_32, str(device))
    if key not in _DATASETS:
        _DATASETS[key] = load_dataset(d.dataset, d.data_dir, d.train_samples,
                                      d.test_samples, pad_to_32).to(device)
    return _DATASETS[key]


def deterministic(device: torch.device) -> None:
    """Same scenario and seed, same numbers: deterministic kernels (CUDA also needs a fixed
    cuBLAS workspace; some CUDA kernels have no deterministic version and then only warn)."""
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=device.type == "cuda")
    # Deterministic mode also fills every fresh tensor with NaN, a debugging aid for reading
    # uninitialised memory that costs ~5 % of a small training step here; results do not
    # depend on it.
    torch.utils.deterministic.fill_uninitialized_memory = False


def execute_run(scenario: Scenario, algorithm: str, world: World, device: torch.device,
                folder: Path, setting: dict | None = None, progress: Progress | None = None,
                resume: bool = False, trainer: Trainer | None = None,
                retimed_from: str | None = None,
                finish: Callable[[Path], None] | None = None) -> dict:
    """Train `algorithm` under the simulated clock and write its run folder. -> summary.

    Every `training.checkpoint_every` rounds the run's whole state goes into checkpoint.pt;
    with `resume` a run continues from there and writes the same files an uninterrupted run
    writes. What was written until a divergence stays valid. `setting` (swept key -> value)
    is recorded in summary.json. Raises InvariantError (after writing summary.json with
    status "invariant violation") when the run's books do not balance.

    With `trainer` (a replay, scala_netsim.replay) nothing is trained: the run is timed with
    that trainer, never checkpointed, and summary.json names the source (`retimed_from`).
    A timing-only run is not checkpointed either; both write their files once, at the end.
    `finish` is called on the folder of a completed trained run after its model is saved and
    before its summary is written (scala_netsim.attack.after_training: the attack), so that a
    run whose summary says completed has done it.
    """
    with objects_so_far_frozen():
        return _execute_run(scenario, algorithm, world, device, folder, setting, progress,
                            resume, trainer, retimed_from, finish)


def _execute_run(scenario: Scenario, algorithm: str, world: World, device: torch.device,
                 folder: Path, setting: dict | None, progress: Progress | None, resume: bool,
                 trainer: Trainer | None, retimed_from: str | None,
                 finish: Callable[[Path], None] | None) -> dict:
    wall_start = time.perf_counter()
    folder = Path(folder)
    checkpointer = Checkpointer(folder / CHECKPOINT_PT, checkpoint_identity(scenario, algorithm))
    # a replay or a timing-only run takes seconds to minutes: never checkpointed, its files
    # are written when it ends (rewriting a growing events.csv every few rounds would cost
    # more than the simulation)
    at_the_end = trainer is not None or scenario.timing_only
    state = checkpointer.load() if resume and not at_the_end else None
    if state is None:  # a fresh run: nothing of an earlier run may pass for this one's
        for stale in (SUMMARY_JSON, CHECKPOINT_PT):
            (folder / stale).unlink(missing_ok=True)
    writer = RunWriter(folder, scenario, world)
    run = Run(scenario, algorithm, world, device, trainer)
    wall_before_s = 0.0
    if state is not None:
        run.load_state_dict(state["run"])
        wall_before_s = state["wall_time_s"]
    resumed_from = run.round if state is not None else None
    tr = scenario.training
    while not run.finished:
        row = run.step()
        if progress is not None:
            progress(row["round"], row["sim_time_s"], row["test_acc"])
        if at_the_end:
            continue
        if run.diverged or run.finished:
            writer.flush(run, now=True)
        elif row["round"] % tr.checkpoint_every == 0:
            writer.flush(run, now=True)
            checkpointer.save(run, wall_before_s + time.perf_counter() - wall_start)
        elif not math.isnan(row["test_acc"]):
            writer.flush(run)
    if at_the_end:
        writer.flush(run, now=True)
    problems = run.problems()
    status = ("invariant violation" if problems else
              f"diverged at round {run.round}" if run.diverged else "completed")
    if status == "completed" and trainer is None and not scenario.timing_only:
        save_final_model(folder / MODEL_PT, run.trainer)
        if finish is not None:
            finish(folder)
    summary = run.summary(status, setting or {}, wall_before_s + time.perf_counter() - wall_start,
                          resumed_from, device, retimed_from)
    writer.summary(summary)
    if problems:
        raise InvariantError([f"{folder}: {p}" for p in problems])
    return summary
