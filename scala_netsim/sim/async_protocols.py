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
from collections.abc import Callable, Generator
from typing import Any, ClassVar, TypeVar

import simpy

from channel import Direction
from scala_netsim.core.events import MODEL_TRANSFER, EventKind, EventLog
from scala_netsim.learn.contract import (
    AppliedUpdate,
    AsyncFederatedTrainer,
    AsyncSplitTrainer,
    AsyncTrainer,
)
from scala_netsim.learn.messages import ModelMessage
from scala_netsim.sim import async_state
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.link import AsyncLink
from scala_netsim.sim.stages import SERVER_STAGES, ClientStages, Stage
from scala_netsim.sim.timeouts import Recorded

#: the trainer of an asynchronous protocol (of its contract)
AsyncTrainerT = TypeVar("AsyncTrainerT", bound=AsyncTrainer)


class AsyncProtocol(ClientStages[AsyncTrainerT]):
    """What the asynchronous patterns share: clients started one by one on fixed slots, each
    arriving model applied or buffered, the driver told when a version is made. The sibling
    of the round protocols (scala_netsim.sim.protocols.Protocol) on the same core: it has no
    round, and its trainer none either (an AsyncTrainer). Its driver
    (scala_netsim.runner.drivers.AsynchronousUpdates) says how many clients train at once and
    what to do when one finishes (`drive`), and starts them."""

    trainer_contract: ClassVar[type] = AsyncTrainer
    asynchronous = True

    def __init__(self, env: simpy.Environment, cell: Cell, trainer: AsyncTrainerT,
                 link: AsyncLink, log: EventLog, local_iters: int) -> None:
        super().__init__(env, cell, trainer, link, log, local_iters)
        self.link: AsyncLink = link      # a single cell's, or a network's round-robin air
        self.in_flight: set[int] = set()
        #: event index -> (version, staleness) of each server_update row
        self.updates: dict[int, tuple[int, int]] = {}
        #: (client, staleness) of the updates taken since the last version was made
        self.pending: list[tuple[int, int]] = []
        self.version_made = self.env.event()
        #: the driver's hook (`drive`): a client has finished (its model is in)
        self._on_finish: Callable[[int], None] = lambda k: None
        self._slots: dict[Direction, float] = {}
        self.round = self.trainer.version + 1
        self.link.begin_version(self.round)
        #: client in flight -> (its stage's index and name, the order the event it waits on
        #: was made in, that event, what the stage carries)
        self.position: dict[int, tuple[int, str, int, simpy.Event, Any]] = {}
        self._made = 0    # events the clients have waited on so far

    def drive(self, concurrency: int, on_finish: Callable[[int], None]) -> None:
        """The driver's terms: `concurrency` (Q) clients train at once, each holding 1/Q of
        each band, and `on_finish(k)` is called when client k has finished (its model is
        in; the driver starts another)."""
        self._slots = {d: self.cell.bandwidth_hz(d) / concurrency for d in Direction}
        self._on_finish = on_finish

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
    def stages(self, k: int) -> list[Stage]:
        """Client k's life after it started, one stage per event it waits on."""

    def _client(self, k: int, at: int = 0, event: simpy.Event | None = None,
                carry: Any = None, order: int = 0) -> Generator[simpy.Event, Any, None]:
        """Client k's life from stage `at` (a resumed run: already waiting on `event`, the
        `order`-th event made, holding `carry`); `position` tells a checkpoint where it is."""
        stages = self.stages(k)
        for i in range(at, len(stages)):
            if event is None:
                event, carry = stages[i].begin(carry)
                order, self._made = self._made, self._made + 1
            self.position[k] = (i, stages[i].name, order, event, carry)
            yield event
            del self.position[k]
            carry, event = stages[i].end(carry), None

    # --- checkpoints (scala_netsim.sim.async_state) ---------------------------------------
    def snapshot(self) -> dict:
        """Where every client in flight stands (only when nothing is due at this instant:
        `async_state.quiet`)."""
        if not async_state.quiet(self.env):
            raise RuntimeError("an asynchronous run is saved only when nothing is due now")
        queue = list(self.server_cpu.queue)
        clients = []
        for k, (i, name, order, event, carry) in self.position.items():
            at_server = name in SERVER_STAGES     # carry: (the request, what it carries)
            clients.append({"client": k, "stage": i, "name": name, "order": order,
                            "record": async_state.pack(event.record if isinstance(event, Recorded)
                                                       else None),
                            "queued": queue.index(event) if name == SERVER_STAGES[0] else None,
                            "carry": async_state.pack(carry[1] if at_server else carry)})
        return {"round": self.round, "updates": dict(self.updates),
                "pending": list(self.pending), "made": self._made, "clients": clients}

    def resume(self, state: dict) -> None:
        """Stand where `snapshot` saw the run: the clients' slots given back, the server's
        processor requested again by its user, then by its queue in its order, every timeout
        made again in the order the originals were (SimPy breaks ties of time by it), each
        client's process started at its stage."""
        self.round = int(state["round"])
        self.link.begin_version(self.round)
        self.updates = {int(i): tuple(u) for i, u in state["updates"].items()}
        self.pending = [tuple(p) for p in state["pending"]]
        clients = sorted(state["clients"], key=lambda c: c["order"])
        for c in clients:
            self.in_flight.add(c["client"])
            self.link.assign(c["client"], self._slots, record=False)
        at_server = sorted((c for c in clients if c["name"] in SERVER_STAGES),
                           key=lambda c: -1 if c["queued"] is None else c["queued"])
        requests = {c["client"]: self.server_cpu.request() for c in at_server}
        events = {c["client"]: (async_state.rebuild(self, c["record"])
                                if c["record"] is not None else requests[c["client"]])
                  for c in clients}
        self._made = int(state["made"])
        for c in clients:
            k, carry = c["client"], async_state.unpack(c["carry"])
            if k in requests:
                carry = (requests[k], carry)
            self.env.process(self._client(k, c["stage"], events[k], carry, c["order"]))

    def _apply(self, k: int) -> Callable[[ModelMessage], None]:
        """What happens when client k's model is in: the server applies (or buffers) it."""
        return lambda message: self._arrive(k, self.trainer.server_apply(message))

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
            self.round = update.version + 1
            self.link.begin_version(self.round)
            made.succeed((update, self.pending))
            self.pending = []
        self._on_finish(k)


class AsyncFederatedProtocol(AsyncProtocol[AsyncFederatedTrainer]):
    """FedAsync and FedBuff: download, T local steps, upload, applied on arrival; no round."""

    trainer_contract = AsyncFederatedTrainer

    def stages(self, k: int) -> list[Stage]:
        trainer = self.trainer
        return (self._download_stages(trainer, k) + self._local_stages(trainer, k)
                + self._upload_stages(trainer, k, self._apply(k)))


class AsyncSplitProtocol(AsyncProtocol[AsyncSplitTrainer]):
    """async_sfl and GAS: download the client-side model; T times forward, activations up,
    the server's step on them alone when the processor takes them (no barrier: arrival
    order), their gradient down, backward; the model up, applied or buffered on arrival."""

    trainer_contract = AsyncSplitTrainer
    sends_activations = True
    sends_gradients = True

    def stages(self, k: int) -> list[Stage]:
        trainer = self.trainer
        stages = self._download_stages(trainer, k)
        for t in range(self.local_iters):
            stages += self._split_stages(trainer, trainer, k, t)
        return stages + self._upload_stages(trainer, k, self._apply(k))
