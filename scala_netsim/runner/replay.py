"""Train once, re-time many: a finished run's learning trajectory replayed under another cell.

What a synchronous algorithm learns does not depend on the network when its client selection
does not look at it: the same seed gives the same participants, batches, gradients and
accuracies under any bandwidth, power, radius or FLOP/s; only the timeline changes. A run
folder records every step (events.csv: client, local iteration, kind, bytes, FLOPs), every
participant's step demand (demands.csv) and every evaluation (rounds.csv). A `Replayer` is a
trainer that answers the protocol's calls from that record instead of computing, so the same
SimPy protocol and wireless link code time the same steps under the new cell; evaluations are
copied round by round.

Nothing is assumed: at every call the replayer checks that what the protocol asks for is what
was recorded (the same participants, the same client and step, the same set of messages at a
barrier, every recorded step asked for exactly once a round) and, for a trainer whose learning
depends on the order of the server's steps (`Trainer.server_order_matters`: SplitFedV2, SFL with
local loss), that the server takes them in the recorded order. A new timeline that would change
what training sees raises `TimelineDiverged`; the caller then trains the cell for real. A record
that is not a finished run of the same learning settings, or whose files are not the ones its
run wrote, is refused with `RecordError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import (
    Scenario,
    differing_keys,
    learning_identity,
    validate_scenario,
)
from scala_netsim.core.columns import (
    COMPLETED_COLUMN,
    DEMAND_COLUMNS,
    DUPLEX_COLUMNS,
    EVENT_COLUMNS,
    MOBILITY_TRANSFER_COLUMNS,
    NETWORK_TRANSFER_COLUMNS,
    NR_TRANSFER_COLUMNS,
    RADIO_COLUMNS,
)
from scala_netsim.core.errors import Error
from scala_netsim.core.events import MODEL_TRANSFER, SERVER_ID, EventKind
from scala_netsim.core.files import (
    DEMANDS_CSV,
    EVENTS_CSV,
    FINISHED,
    ROUNDS_CSV,
    SCENARIO_YAML,
    SUMMARY_JSON,
    run_file,
)
from scala_netsim.core.results import (
    SOURCE_NEEDS,
    damaged_record,
    open_record,
    read_csv,
    read_written_yaml,
)
from scala_netsim.learn.contract import (
    ConcatSplitTrainer,
    Evaluation,
    Forward,
    LocalStep,
    ServerStep,
    StepDemand,
    Trainer,
)
from scala_netsim.learn.messages import RecordedMessage
from scala_netsim.runner.recorded import RecordedTrainer


class RecordError(Error, ValueError):
    """A run folder that cannot be replayed: not a finished run, damaged, of other learning
    settings, or not what the protocol asks for."""


class TimelineDiverged(Exception):  # noqa: N818 (an outcome of a replay, not a bug)
    """The new cell's timeline changes what training would see (e.g. SplitFedV2's server
    steps in another order): the cell must be trained for real."""

    def __init__(self, round_: int, reason: str) -> None:
        super().__init__(round_, reason)   # (SimPy re-raises a process's exception by its args)
        self.round, self.reason = round_, reason

    def __str__(self) -> str:
        return f"round {self.round}: {self.reason}"


_KINDS = list(EventKind)
_KIND_CODE = {kind.value: code for code, kind in enumerate(_KINDS)}


class Record:
    """A finished run folder, read back and checked against its summary's digests."""

    def __init__(self, folder: Path, scenario: Scenario, algorithm: str, summary: dict,
                 rounds: pd.DataFrame, events: pd.DataFrame, demands: pd.DataFrame) -> None:
        self.folder, self.scenario, self.algorithm = folder, scenario, algorithm
        self.summary, self.rounds = summary, rounds
        self.diverged_round = (int(rounds["round"].iloc[-1])
                               if summary["status"].startswith("diverged") else None)
        # events by round: the log is in end-time order and rounds follow one another
        self._round = events["round"].to_numpy(np.int64)
        self._local_iter = events["local_iter"].to_numpy(np.int64)
        self._client = events["client_id"].to_numpy(np.int64)
        self._kind = events["kind"].map(_KIND_CODE).to_numpy(np.int64)
        self._payload = events["payload_bytes"].to_numpy(np.int64)
        self._flops = events["flops"].to_numpy(np.int64)
        # round -> {client: its demand}, in the order the clients were selected
        self._demands: dict[int, dict[int, StepDemand]] = {}
        for r, k, up, down, flops in demands.itertuples(index=False):
            self._demands.setdefault(int(r), {})[int(k)] = StepDemand(int(up), int(down),
                                                                      int(flops))
        self._classes = [c for c in rounds.columns if c.startswith("acc_class_")]

    @classmethod
    def load(cls, folder: Path | str) -> Record:
        """Read and check a run folder. Raises RecordError saying what is wrong with it."""
        folder = Path(folder)
        summary = _finished_summary(folder)
        where = str(folder)
        if not (folder / SCENARIO_YAML).is_file():
            raise RecordError(f"{where}: holds no {SCENARIO_YAML}; {SOURCE_NEEDS}")
        try:
            scenario = validate_scenario(read_written_yaml(folder / SCENARIO_YAML))
        except (OSError, yaml.YAMLError, ScenarioError) as exc:
            raise RecordError(f"{where}/scenario.yaml: not a valid scenario ({exc})") from None
        algorithm = summary.get("algorithm")
        if (not isinstance(algorithm, str) or algorithm not in ALGORITHMS
                or list(scenario.algorithms) != [algorithm]):
            raise RecordError(f"{where}: summary.json's algorithm {algorithm!r} is not the "
                              f"one run of its scenario.yaml ({list(scenario.algorithms)})")
        rounds, events, demands = _record_tables(folder, summary)
        return cls(folder, scenario, algorithm, summary, rounds, events, demands)

    @property
    def num_rounds(self) -> int:
        return len(self.rounds)

    def check_learns_as(self, scenario: Scenario, algorithm: str) -> None:
        """The record must have been trained with `scenario`'s learning settings (everything
        but `network`, `compute` and `report`) and be of `algorithm`."""
        if algorithm != self.algorithm:
            raise RecordError(f"{self.folder}: a run of {self.algorithm}, not of {algorithm}")
        mine, theirs = learning_identity(self.scenario), learning_identity(scenario)
        if mine != theirs:
            differ = sorted(differing_keys(mine, theirs))
            raise RecordError(f"{self.folder}: trained with other learning settings (they "
                              f"differ in {', '.join(differ)}); only network.* and compute.* "
                              f"may change in a re-timing")

    def participants(self, round_: int) -> list[int]:
        """The round's clients in the order they were selected (as their demands were)."""
        return list(self._demands.get(round_, ()))

    def demand(self, round_: int, k: int) -> StepDemand:
        return self._demands[round_][k]

    def round_steps(self, round_: int) -> tuple[dict[tuple[int, int, int], list[int]],
                                                list[tuple[int, int]]]:
        """{(kind code, local_iter, client_id): [payload_bytes, flops, times asked]} of the
        round, and its server steps' (local_iter, client_id) in the order the server took
        them (a FIFO processor: the order they were recorded in)."""
        lo, hi = np.searchsorted(self._round, [round_, round_ + 1])
        steps, server = {}, []
        server_code = _KIND_CODE[EventKind.SERVER_STEP.value]
        for i in range(lo, hi):
            key = (int(self._kind[i]), int(self._local_iter[i]), int(self._client[i]))
            if key in steps:
                raise RecordError(f"{self.folder}/events.csv: round {round_} records "
                                  f"{_KINDS[key[0]].value} of client {key[2]} at local "
                                  f"iteration {key[1]} twice")
            steps[key] = [int(self._payload[i]), int(self._flops[i]), 0]
            if key[0] == server_code:
                server.append((key[1], key[2]))
        return steps, server

    def evaluation(self, round_: int) -> Evaluation | None:
        row = self.rounds.iloc[round_ - 1]   # rounds are 1..n (checked by `load`)
        if np.isnan(row["test_acc"]):
            return None
        return Evaluation(float(row["test_acc"]),
                          row[self._classes].to_numpy(dtype=float), float(row["test_loss"]))



def _finished_summary(folder: Path) -> dict:
    """The summary.json of a finished run whose record files are the ones it wrote."""
    where = str(folder)
    if not folder.is_dir():
        raise RecordError(f"{where}: no such run folder")
    summary_path = folder / SUMMARY_JSON
    if not summary_path.is_file():
        raise RecordError(f"{where}: not a finished run (no summary.json; an interrupted "
                          f"or running run cannot be re-timed)")
    try:
        summary = json.loads(summary_path.read_text())
        status = summary["status"]
    except (ValueError, KeyError, TypeError) as exc:
        raise RecordError(f"{where}/summary.json: not a run summary ({exc})") from None
    if not status.startswith(FINISHED):
        raise RecordError(f"{where}: not a finished run (status {status!r}; only completed "
                          f"or diverged runs can be re-timed)")
    digests = summary.get("files_sha256")
    if not isinstance(digests, dict):
        raise RecordError(f"{where}/summary.json: holds no digests of the record files "
                          f"(written by an older scala_netsim); train it again")
    if problem := damaged_record(folder, digests):
        raise RecordError(problem)
    return summary


def _record_tables(folder: Path, summary: dict
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(rounds, events, demands) of a finished run, their columns and order checked."""
    where = str(folder)
    # (read_csv: evaluations are copied bit for bit)
    with open_record(run_file(folder, EVENTS_CSV), "rt") as f:
        header = tuple(f.readline().rstrip("\n").split(","))
    demands = read_csv(run_file(folder, DEMANDS_CSV))
    network = ((), NETWORK_TRANSFER_COLUMNS, NETWORK_TRANSFER_COLUMNS + NR_TRANSFER_COLUMNS,
               NETWORK_TRANSFER_COLUMNS + MOBILITY_TRANSFER_COLUMNS,
               NETWORK_TRANSFER_COLUMNS + NR_TRANSFER_COLUMNS + MOBILITY_TRANSFER_COLUMNS)
    allowed = [EVENT_COLUMNS + extra + radio for extra in ((), (COMPLETED_COLUMN,))
               for radio in ((), *(RADIO_COLUMNS + cells + duplex for cells in network
                                   for duplex in ((), DUPLEX_COLUMNS)))]
    if header not in allowed or tuple(demands.columns) != DEMAND_COLUMNS:
        raise RecordError(f"{where}: events.csv or demands.csv has other columns than "
                          f"{EVENT_COLUMNS} (and, where clients can be dropped, "
                          f"{COMPLETED_COLUMN}; with the radio model, {RADIO_COLUMNS}, in a "
                          f"network of cells then {NETWORK_TRANSFER_COLUMNS} and under the NR "
                          f"link abstraction {NR_TRANSFER_COLUMNS}, in a TDD frame "
                          f"{DUPLEX_COLUMNS}) and "
                          f"{DEMAND_COLUMNS}")
    # what was sent and computed is all a replay needs (the radio columns are timing)
    events = read_csv(run_file(folder, EVENTS_CSV), usecols=list(EVENT_COLUMNS))
    rounds = read_csv(run_file(folder, ROUNDS_CSV))
    unknown = set(events["kind"]) - set(_KIND_CODE)
    if unknown:
        raise RecordError(f"{where}/events.csv: unknown event kinds {sorted(unknown)}")
    if (events["kind"] == EventKind.CLIENT_DROPPED.value).any():
        raise RecordError(f"{where}: its run dropped clients, so what it learned depended "
                          f"on its network; it cannot be re-timed")
    expected = list(range(1, len(rounds) + 1))
    if rounds["round"].tolist() != expected or len(rounds) != summary.get("rounds"):
        raise RecordError(f"{where}/rounds.csv: rounds are not 1..{summary.get('rounds')}")
    if np.any(np.diff(events["round"].to_numpy()) < 0):
        raise RecordError(f"{where}/events.csv: rounds are not in order")
    return rounds, events, demands


class Replayer(RecordedTrainer):
    """The trainer side of a replay: every method of every trainer contract, answered from a
    `Record` and checked against it (`replay_trainer` makes it a trainer of one pattern)."""

    prefix = "Replay"

    def __init__(self, record: Record, server_order_matters: bool) -> None:
        self.record = record
        self.server_order_matters = server_order_matters
        self.round = 0
        self._steps: dict[tuple[int, int, int], list[int]] = {}
        self._server_order: list[tuple[int, int]] = []
        self._next_server = 0
        self._participants: list[int] = []   # the round's clients in id order

    # --- the round ------------------------------------------------------------------------
    def begin_round(self, selected: Sequence[int]) -> None:
        self.round += 1
        r = self.round
        if r > self.record.num_rounds:
            raise RecordError(f"{self.record.folder}: the run asks for round {r}, the record "
                              f"ends at round {self.record.num_rounds}")
        recorded = self.record.participants(r)
        if [int(k) for k in selected] != recorded:
            raise RecordError(f"{self.record.folder}: round {r} selected clients "
                              f"{list(selected)}, the record {recorded}; the record is not "
                              f"of this scenario")
        self._steps, self._server_order = self.record.round_steps(r)
        self._next_server = 0
        self._participants = sorted(recorded)

    def drop_client(self, k: int) -> None:
        raise TimelineDiverged(self.round, f"client {k} is dropped (a transfer lost after all "
                               f"its attempts): what the round learns changes")

    def end_round(self) -> None:
        missed = [key for key, step in self._steps.items() if step[2] != 1]
        if missed:
            kind, t, k = missed[0]
            raise RecordError(f"{self.record.folder}: round {self.round} recorded "
                              f"{_KINDS[kind].value} of client {k} at local iteration {t}, "
                              f"which this replay never asked for ({len(missed)} such steps)")
        diverged = self.round == self.record.diverged_round
        self.round_loss = torch.tensor(float("nan") if diverged else 0.0, dtype=torch.float64)

    def step_demand(self, k: int) -> StepDemand:
        return self.record.demand(self.round, k)

    def evaluate(self, test_x: torch.Tensor, test_y: torch.Tensor) -> Evaluation:
        evaluation = self.record.evaluation(self.round)
        if evaluation is None:
            raise RecordError(f"{self.record.folder}: round {self.round} is evaluated now but "
                              f"was not in the record")
        return evaluation

    def state_dict(self) -> dict:
        return {"round": self.round}

    def load_state_dict(self, state: dict) -> None:
        self.round = state["round"]

    # --- steps ------------------------------------------------------------------------------
    def _take(self, kind: EventKind, local_iter: int, k: int) -> tuple[int, int]:
        step = self._steps.get((_KIND_CODE[kind.value], local_iter, k))
        if step is None or step[2]:
            raise RecordError(f"{self.record.folder}: round {self.round}: the protocol asks "
                              f"for {kind.value} of client {k} at local iteration {local_iter}"
                              + (" again" if step else ", which the record does not hold"))
        step[2] += 1
        return step[0], step[1]

    def _has(self, kind: EventKind, local_iter: int, k: int) -> bool:
        return (_KIND_CODE[kind.value], local_iter, k) in self._steps

    def _message(self, kind: EventKind, local_iter: int, k: int) -> RecordedMessage:
        return RecordedMessage(k, local_iter, self._take(kind, local_iter, k)[0])

    def client_model_download(self, k: int) -> RecordedMessage:
        return self._message(EventKind.MODEL_DOWNLOAD, MODEL_TRANSFER, k)

    def client_model_upload(self, k: int) -> RecordedMessage:
        return self._message(EventKind.MODEL_UPLOAD, MODEL_TRANSFER, k)

    def client_forward(self, k: int, local_iter: int) -> Forward:
        flops = self._take(EventKind.CLIENT_FORWARD, local_iter, k)[1]
        return Forward(self._message(EventKind.ACTIVATION_UPLOAD, local_iter, k), flops)

    def client_backward(self, reply: RecordedMessage) -> int:
        return self._take(EventKind.CLIENT_BACKWARD, reply.local_iter, reply.client_id)[1]

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        forward = self._take(EventKind.CLIENT_FORWARD, local_iter, k)[1]
        backward = self._take(EventKind.CLIENT_BACKWARD, local_iter, k)[1]
        upload = (self._message(EventKind.ACTIVATION_UPLOAD, local_iter, k)
                  if self._has(EventKind.ACTIVATION_UPLOAD, local_iter, k) else None)
        return LocalStep(forward, backward, upload)

    def server_step(self, uploads: Sequence[RecordedMessage]) -> ServerStep:
        (t,) = {m.local_iter for m in uploads}
        ids = [m.client_id for m in uploads]
        if isinstance(self, ConcatSplitTrainer):  # one step on everyone's activations
            if ids != self._participants:
                raise RecordError(f"{self.record.folder}: round {self.round}: a server step "
                                  f"on clients {ids}, not on every client of the round in id "
                                  f"order")
            self._check_server_order(t, SERVER_ID)
            flops = self._take(EventKind.SERVER_STEP, t, SERVER_ID)[1]
            return ServerStep([self._message(EventKind.GRADIENT_DOWNLOAD, t, k) for k in ids],
                              flops)
        (k,) = ids
        self._check_server_order(t, k)
        flops = self._take(EventKind.SERVER_STEP, t, k)[1]
        replies = ([self._message(EventKind.GRADIENT_DOWNLOAD, t, k)]
                   if self._has(EventKind.GRADIENT_DOWNLOAD, t, k) else [])
        return ServerStep(replies, flops)

    def _check_server_order(self, t: int, server_id: int) -> None:
        order, i = self._server_order, self._next_server
        if self.server_order_matters and i < len(order) and order[i] != (t, server_id):
            raise TimelineDiverged(
                self.round, f"the server takes client {server_id}'s step {t} where the trained "
                f"run took client {order[i][1]}'s step {order[i][0]}; "
                f"{self.record.algorithm}'s learning depends on that order")
        self._next_server += 1


def replay_trainer(record: Record) -> Trainer:
    """A trainer of the record's algorithm's pattern that replays the record."""
    spec = ALGORITHMS[record.algorithm]
    return Replayer.of(spec.protocol.trainer_contract, record,
                       spec.trainer.learns_server_order(spec.section(record.scenario)))
