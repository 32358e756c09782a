"""One scenario, end to end: drop the cell, partition the data, then for each algorithm train
for real under the simulated clock and write the results layout."""

import hashlib
import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import simpy
import torch
import yaml

import channel
from analysis.plots import plot_run
from scala_netsim.algorithms.registry import ALGORITHMS, make_selector, make_trainer
from scala_netsim.data import Dataset
from scala_netsim.engine import EVENT_COLUMNS, Cell, EventLog
from scala_netsim.invariants import InvariantError, check_run
from scala_netsim.metrics import round_row
from scala_netsim.partition import label_counts, make_partition
from scala_netsim import __version__
from scala_netsim.results import run_dir, write_atomic, write_csv, write_json, write_text
from scala_netsim.scenario import Scenario, scenario_yaml, training_identity
from scala_netsim.seeds import Seeds


@dataclass
class World:
    """What every algorithm of a scenario shares: the same partition and the same cell."""

    dataset: Dataset
    client_indices: list
    label_counts: np.ndarray
    cell: Cell
    seeds: Seeds


def build_world(scenario: Scenario, dataset: Dataset) -> World:
    """Partition the training set and drop the clients, reproducibly from the seed."""
    seeds = Seeds(scenario.seed)
    labels = dataset.train_y.cpu().numpy()
    part = scenario.data.partition
    client_indices = make_partition(
        part.kind, labels, scenario.data.num_clients, dataset.num_classes,
        np.random.default_rng(seeds["partition"]), alpha=getattr(part, "alpha", None),
        beta=getattr(part, "beta", None))
    net, comp = scenario.network, scenario.compute
    distance_m, _, _ = channel.drop_clients_uniform_disk(
        scenario.data.num_clients, net.radius_m, net.min_distance_m,
        np.random.default_rng(seeds["drop"]))
    cell = Cell(
        distance_m=distance_m,
        pathloss_db=channel.make_pathloss(net.pathloss).pathloss_db(distance_m),
        flops_per_s=channel.sample_flops_per_s(scenario.data.num_clients, *comp.client_flops_per_s,
                                               np.random.default_rng(seeds["flops"])),
        server_flops_per_s=comp.server_flops_per_s,
        uplink_bandwidth_hz=net.uplink_bandwidth_hz,
        downlink_bandwidth_hz=net.downlink_bandwidth_hz,
        client_tx_power_w=net.client_tx_power_w,
        bs_tx_power_w=net.bs_tx_power_w,
        noise_psd_dbm_per_hz=net.noise_psd_dbm_per_hz,
    )
    return World(dataset, client_indices, label_counts(labels, client_indices, dataset.num_classes),
                 cell, seeds)


def clients_frame(world: World) -> pd.DataFrame:
    frame = pd.DataFrame({
        "client_id": np.arange(len(world.client_indices)),
        "distance_m": world.cell.distance_m,
        "pathloss_db": world.cell.pathloss_db,
        "flops_per_s": world.cell.flops_per_s,
        "num_samples": [len(ix) for ix in world.client_indices],
    })
    for y in range(world.label_counts.shape[1]):
        frame[f"label_{y}"] = world.label_counts[:, y]
    return frame


class RunWriter:
    """The files of one run folder; rounds.csv and events.csv are rewritten atomically."""

    def __init__(self, folder, scenario: Scenario, world: World):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        write_text(folder / "scenario.yaml", scenario_yaml(scenario))
        write_csv(folder / "clients.csv", clients_frame(world))

    def flush(self, round_rows, events) -> None:
        write_csv(self.folder / "rounds.csv", pd.DataFrame(round_rows))
        write_csv(self.folder / "events.csv", pd.DataFrame(events, columns=EVENT_COLUMNS))

    def summary(self, data: dict) -> None:
        write_json(self.folder / "summary.json", data)


CHECKPOINT_FORMAT = 1


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed (another scenario, algorithm or version)."""


def checkpoint_identity(scenario: Scenario, algorithm: str) -> str:
    """What a checkpoint must match to be resumed: format, package version, the resolved
    scenario and the algorithm."""
    identity = yaml.safe_dump(training_identity(scenario), sort_keys=True)
    text = f"{CHECKPOINT_FORMAT}|{__version__}|{algorithm}|{identity}"
    return hashlib.sha256(text.encode()).hexdigest()


def load_checkpoint(path, scenario: Scenario, algorithm: str) -> dict:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a damaged or foreign file: say which, never unpickle it
        raise CheckpointError(f"{path}: not a readable scala_netsim checkpoint ({exc})") from None
    if not isinstance(state, dict) or state.get("identity") != checkpoint_identity(scenario, algorithm):
        raise CheckpointError(
            f"{path}: written by another scenario, algorithm or scala_netsim version; "
            f"refusing to resume it (--force starts the run afresh)")
    return state


def _plain(value):
    """numpy scalars -> Python numbers (checkpoints hold only plain types and tensors)."""
    return value.item() if isinstance(value, np.generic) else value


def run_algorithm(scenario: Scenario, algorithm: str, world: World, out_dir, device,
                  progress=None, resume: bool = False, folder=None, setting=None) -> dict:
    """Train `algorithm` under the simulated clock and write its run folder. -> summary.

    Every `training.checkpoint_every` rounds the run's whole state goes atomically into
    checkpoint.pt; with `resume` a run continues from there and writes the same files an
    uninterrupted run writes. A non-finite training loss stops the run with status "diverged
    at round r" (the paper's "fails to converge"); what was written until then stays valid.
    The folder is OUT/<scenario>/<algorithm>/seed<k>/ unless `folder` is given (sweep cells);
    `setting` (swept key -> value) is recorded in summary.json.
    """
    wall_start = time.perf_counter()
    if folder is None:
        folder = run_dir(out_dir, scenario.name, algorithm, scenario.seed)
    checkpoint_path = folder / "checkpoint.pt"
    state = load_checkpoint(checkpoint_path, scenario, algorithm) if (
        resume and checkpoint_path.is_file()) else None
    if state is None:  # a fresh run: nothing of an earlier run may pass for this one's
        for stale in ("summary.json", "checkpoint.pt"):
            (folder / stale).unlink(missing_ok=True)
    writer = RunWriter(folder, scenario, world)
    trainer = make_trainer(algorithm, scenario, world, device)
    selector = make_selector(algorithm, scenario, world)
    selection_rng = np.random.default_rng(world.seeds["selection"])
    log = EventLog()
    rows, best, first_round, wall_before_s = [], (math.nan, 0), 1, 0.0
    if state is not None:
        trainer.load_state_dict(state["trainer"])
        selection_rng.bit_generator.state = state["selection_rng"]
        log.rows = [tuple(e) for e in state["events"]]
        rows, best = list(state["rounds"]), tuple(state["best"])
        first_round, wall_before_s = state["round"] + 1, state["wall_time_s"]
    env = simpy.Environment(initial_time=rows[-1]["sim_time_s"] if rows else 0.0)
    protocol = ALGORITHMS[algorithm].protocol(env, world.cell, trainer, log,
                                              channel.EqualShareAllocator(),
                                              scenario.training.local_iters)
    ds, tr = world.dataset, scenario.training

    def save_checkpoint(r):
        writer.flush(rows, log.rows)
        data = {"identity": checkpoint_identity(scenario, algorithm), "round": r,
                "trainer": trainer.state_dict(), "selection_rng": selection_rng.bit_generator.state,
                "events": log.rows, "rounds": rows, "best": list(best),
                "wall_time_s": wall_before_s + time.perf_counter() - wall_start}
        write_atomic(checkpoint_path, lambda f: torch.save(data, f), binary=True)

    status = "completed"
    for r in range(first_round, tr.rounds + 1):
        selected = selector.select(scenario.num_participants, selection_rng)
        start_s, first_event = env.now, len(log.rows)
        protocol.run_round(r, selected)
        row = round_row(r, log.rows[first_event:], start_s, env.now)
        row["num_clients"] = len(selected)
        row["test_acc"] = math.nan
        diverged = trainer.last_loss is not None and not torch.isfinite(trainer.last_loss).item()
        evaluate_now = (r % tr.eval_every == 0 or r == tr.rounds) and not diverged
        if evaluate_now:
            acc, per_class, loss = trainer.evaluate(ds.test_x, ds.test_y)
            row.update(test_acc=acc, test_loss=loss,
                       **{f"acc_class_{c}": float(a) for c, a in enumerate(per_class)})
            if not acc <= best[0]:  # also replaces the initial NaN
                best = (acc, r)
        rows.append({k: _plain(v) for k, v in row.items()})
        if progress is not None:
            progress(r, env.now, row["test_acc"])
        if diverged:
            status = f"diverged at round {r}"
            writer.flush(rows, log.rows)
            break
        if r % tr.checkpoint_every == 0 and r < tr.rounds:
            save_checkpoint(r)
        elif evaluate_now:
            writer.flush(rows, log.rows)
    frame = pd.DataFrame(rows)
    problems = check_run(pd.DataFrame(log.rows, columns=EVENT_COLUMNS), frame,
                         clients_frame(world), scenario.network, protocol.pipelined_clients)
    if problems:
        status = "invariant violation"
    evaluated = frame["test_acc"].dropna()
    summary = {
        "scenario": scenario.name,
        "algorithm": algorithm,
        "seed": scenario.seed,
        "setting": dict(setting or {}),
        "status": status,
        "rounds": int(frame["round"].iloc[-1]),
        "final_acc": float(evaluated.iloc[-1]) if len(evaluated) else math.nan,
        "best_acc": float(best[0]),
        "best_round": int(best[1]),
        "total_sim_time_s": float(env.now),
        "uplink_bytes": int(frame["uplink_bytes"].sum()),
        "downlink_bytes": int(frame["downlink_bytes"].sum()),
        "client_flops": int(frame["client_flops"].sum()),
        "server_flops": int(frame["server_flops"].sum()),
        "wall_time_s": wall_before_s + time.perf_counter() - wall_start,
        "resumed_from_round": first_round - 1 if state is not None else None,
        "device": str(device),
    }
    writer.summary(summary)
    if problems:
        raise InvariantError([f"{folder}: {p}" for p in problems])
    plot_run(folder, title=f"{scenario.name}: {algorithm}")
    return summary
