"""Asynchronous federated and split learning in the cell: clients train at once, each on a
fixed slot of the bands, and the server takes each model when it arrives.

A client's life: it is started (by the run's driver), downloads the global model on its
slot of the downlink, trains T local steps (federated: each computed at its FLOP/s; split:
forward, activations up, the server's step when the server processor takes it, first come
first served, the gradient down, backward), uploads its model on its slot of the uplink, and
the server applies (or buffers) the model at the instant it arrives; the driver then starts
another client in its place. The band: each of the Q clients in flight holds a
fixed 1/Q of each band (W/Q Hz) from its start to its end, so that the sub-bands in use never
exceed the band, and a client's transfer times do not depend on who else is sending (what a
scheduler that reserves resource blocks per active client does; re-dividing the band among
the clients sending at each instant is the other choice, not built).

Records: every event carries in events.csv's `round` the global version being built when it
ended (the version the next update will create), so that rounds.csv's row of version v sums
exactly the events that ended while v was being built; each arrival adds a `server_update`
event (zero duration, the client's id) whose `version` and `staleness` columns say which
version the update is part of and how stale it was.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Generator, Sequence
from typing import Any

import simpy

from channel import Direction
from scala_netsim.algorithms.contract import (
    AppliedUpdate,
    AsyncFederatedTrainer,
    AsyncSplitTrainer,
)
from scala_netsim.core.events import MODEL_TRANSFER, EventKind
from scala_netsim.sim.protocols import Protocol


class AsyncProtocol(Protocol):
    """What the asynchronous patterns share: clients started one by one on fixed slots, each
    arriving model applied or buffered, the driver told when a version is made."""

    asynchronous = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.trainer: AsyncFederatedTrainer | AsyncSplitTrainer
        self.in_flight: set[int] = set()
        #: event index -> (version, staleness) of each server_update row
        self.updates: dict[int, tuple[int, int]] = {}
        #: (client, staleness) of the updates taken since the last version was made
        self.pending: list[tuple[int, int]] = []
        self.version_made = self.env.event()
        #: the driver's hook: a client has finished (its model is in); start another
        self.on_finish: Callable[[int], None] = lambda k: None
        self._slots: dict[Direction, float] = {}
        self.round = self.link.round = self.trainer.version + 1

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        raise RuntimeError("an asynchronous protocol has no rounds; its driver starts clients")

    def set_concurrency(self, concurrency: int) -> None:
        """Each client in flight holds 1/Q of each band."""
        self._slots = {d: self.cell.bandwidth_hz(d) / concurrency for d in Direction}

    def start(self, k: int) -> simpy.Process:
        """Client k starts now: its slot, its batch size, its process."""
        if k in self.in_flight:
            raise RuntimeError(f"client {k} is already training")
        self.in_flight.add(k)
        self.trainer.client_start(k)
        demand = self.trainer.step_demand(k)
        self.log.record_demand(self.round, k, demand.upload_bytes, demand.download_bytes,
                               demand.compute_flops)
        self.link.assign(k, self._slots)
        return self.env.process(self._client(k))

    @abstractmethod
    def _train(self, k: int) -> Generator[simpy.Event, Any, None]:
        """Client k's T local steps, between its download and its upload."""

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._download_model(k)
        yield from self._train(k)
        message = self.trainer.client_model_upload(k)
        yield self.link.upload(message, EventKind.MODEL_UPLOAD, MODEL_TRANSFER)
        self._arrive(k, self.trainer.server_apply(message))

    def _arrive(self, k: int, update: AppliedUpdate) -> None:
        """Record the update, and when it made a new global version, tell the driver; then
        the driver starts a client in k's place."""
        self.updates[len(self.log)] = (update.version, update.staleness)
        self.log.record(self.env.now, self.env.now, self.round, MODEL_TRANSFER, k,
                        EventKind.SERVER_UPDATE)
        self.pending.append((k, update.staleness))
        self.in_flight.discard(k)
        if update.applied:
            made, self.version_made = self.version_made, self.env.event()
            self.round = self.link.round = update.version + 1
            made.succeed((update, self.pending))
            self.pending = []
        self.on_finish(k)


class AsyncFederatedProtocol(AsyncProtocol):
    """FedAsync and FedBuff: download, T local steps, upload, applied on arrival; no round."""

    trainer_contract = AsyncFederatedTrainer

    def _train(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._local_steps(k)


class AsyncSplitProtocol(AsyncProtocol):
    """async_sfl and GAS: download the client-side model; T times forward, activations up,
    the server's step on them alone when the processor takes them (no barrier: arrival
    order), their gradient down, backward; the model up, applied or buffered on arrival."""

    trainer_contract = AsyncSplitTrainer
    sends_activations = True
    sends_gradients = True

    def _train(self, k: int) -> Generator[simpy.Event, Any, None]:
        for t in range(self.local_iters):
            yield from self._split_step(k, t)
