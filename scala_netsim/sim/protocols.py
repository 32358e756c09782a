"""The five communication patterns (SimPy processes of a round), each calling the trainer
contract of its pattern (scala_netsim.learn.contract) and knowing nothing of gradients
beyond it."""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Callable, Generator, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import simpy

import channel
from channel import Direction
from scala_netsim.core.events import MODEL_TRANSFER, SERVER_ID, EventKind, EventLog
from scala_netsim.learn.contract import (
    ConcatSplitTrainer,
    ExchangesModels,
    FederatedTrainer,
    KeptModelSplitTrainer,
    LocalLossTrainer,
    LocalSteps,
    PerClientSplitTrainer,
    RoundTrainer,
    ServerStep,
    SplitClient,
    SplitServer,
)
from scala_netsim.learn.messages import ActivationMessage, ModelMessage, RecordedMessage
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.drops import NO_RULES, Drops, RoundRules
from scala_netsim.sim.link import Link, TransferLost
from scala_netsim.sim.stages import SERVER_STAGES, ClientStages, Stage

#: what a client sends the server: activations (or their recorded size: a replay, a
#: timing-only run)
Upload = ActivationMessage | RecordedMessage

#: the trainer of a round protocol (of its contract)
RoundTrainerT = TypeVar("RoundTrainerT", bound=RoundTrainer)


class Protocol(ClientStages[RoundTrainerT]):
    """One algorithm's communication pattern of rounds, simulated a round at a time.
    Subclasses write the SimPy processes of a round and call the trainer contract
    `trainer_contract` (a RoundTrainer); the real computation is the trainer's. The
    asynchronous patterns (scala_netsim.sim.async_protocols.AsyncProtocol) are its siblings
    on the same core (ClientStages).

    When clients can be dropped (RoundRules, or a link that loses transfers) every process of
    a round runs guarded: a dropped client's processes are interrupted, its steps in flight
    cut and recorded up to the drop (events.completed 0), a `client_dropped` event marks the
    drop, and the trainer is told (`Trainer.drop_client`)."""

    trainer_contract: ClassVar[type] = RoundTrainer

    def __init__(self, env: simpy.Environment, cell: Cell, trainer: RoundTrainerT,
                 link: Link, log: EventLog, local_iters: int,
                 rules: RoundRules = NO_RULES) -> None:
        super().__init__(env, cell, trainer, link, log, local_iters)
        self.rules = rules
        if rules.active and link.drops is None:
            raise ValueError("round rules (deadlines, over-selection) drop clients: the link "
                             "must be given the book of drops (WirelessLink(..., drops=Drops()))")

    @property
    def book(self) -> Drops:
        """The book of drops (only where clients can be dropped)."""
        if self.drops is None:
            raise RuntimeError("no client can be dropped in this run: it keeps no book of drops")
        return self.drops

    def run_round(self, round_: int, selected: Sequence[int]) -> None:
        """Simulate (and really train) one round; the clock advances to the round's end."""
        self.round = round_
        self._compute_s.clear()
        self.trainer.begin_round(selected)
        self.carry(selected, self.rules.deadline_s)
        self.trainer.end_round()

    def carry(self, selected: Sequence[int], deadline_s: float | None) -> None:
        """Run the round's processes on the link until they have all ended; a client still in
        the round `deadline_s` after its start is dropped."""
        self.link.begin_round(self.round, self.demands(selected))
        drops = self.drops
        if drops is not None:
            drops.begin(self.round, selected)
            if deadline_s is not None:
                # (a round that ends earlier leaves its deadline in the queue: `_expire`
                # ignores it when it comes, in a later round)
                deadline = self.env.timeout(deadline_s, value=self.round)
                deadline.callbacks.append(self._expire)
        self.env.run(until=self.env.all_of(self.round_processes(selected)))

    # --- drops ----------------------------------------------------------------------------
    def _spawn(self, owner: int, body: Generator) -> simpy.Process:
        """`body` as a process of `owner` (a client, or SERVER_ID), guarded when clients can
        be dropped."""
        if self.drops is None:
            return self.env.process(body)
        process = self.env.process(self._guarded(owner, body))
        self.drops.processes.setdefault(owner, []).append(process)
        return process

    def _guarded(self, owner: int, body: Generator) -> Generator[simpy.Event, Any, None]:
        try:
            yield from body
        except simpy.Interrupt:   # dropped (or the round's deadline passed): stop here
            pass
        except TransferLost:      # one of its transfers failed all its attempts
            self._drop(owner, "lost")

    def _drop(self, k: int, reason: str) -> None:
        """Drop client k from the round now: its steps in flight are cut, its processes
        stopped, a client_dropped event recorded."""
        drops = self.book
        if k not in drops.active:
            return
        drops.active.discard(k)
        drops.dropped.append((k, reason))
        self._stop(k)
        self.log.record(self.env.now, self.env.now, self.round,
                        drops.local_iter.get(k, MODEL_TRANSFER), k, EventKind.CLIENT_DROPPED)
        self.trainer.drop_client(k)
        self._left(k)

    def _stop(self, owner: int) -> None:
        """Cut `owner`'s steps in flight and interrupt its processes (but the running one)."""
        self.book.cut(owner)
        for process in self.book.processes.get(owner, ()):
            if process.is_alive and process is not self.env.active_process:
                process.interrupt()

    def _left(self, k: int) -> None:  # noqa: B027 (a hook: only a barrier needs it)
        """Client k was dropped (a barrier stops waiting for it)."""

    def _finish(self, k: int) -> None:
        """Client k's round is done (its model is in, or SplitFedV3 keeps it). Over-selection
        without a barrier: the first `keep` to finish are kept, the others dropped then."""
        drops = self.book
        drops.active.discard(k)
        drops.finished.append(k)
        keep = self.rules.keep
        if keep is not None and not self.has_barrier and len(drops.finished) == keep:
            for other in sorted(drops.active):
                self._drop(other, "over_selection")

    def _expire(self, deadline: simpy.Event) -> None:
        """The round's deadline: every client still in the round is dropped, and what the
        others (or the server) still had going is cut."""
        drops = self.book
        if deadline.value != drops.round:   # its round ended before it (the clock only runs
            return                          # within a round: it comes in a later one)
        for k in sorted(drops.active):
            self._drop(k, "deadline")
        for owner in sorted(drops.processes):
            self._stop(owner)

    def demands(self, selected: Sequence[int]) -> dict[Direction, channel.LinkDemand]:
        """What each participant needs from each band in one local step (for the allocator)."""
        steps = [self.trainer.step_demand(k) for k in selected]
        for k, s in zip(selected, steps, strict=True):
            self.log.record_demand(self.round, int(k), s.upload_bytes, s.download_bytes,
                                   s.compute_flops)
        ids = np.asarray(selected, dtype=int)
        gain = self.cell.gain_linear[ids]
        compute_s = channel.compute_time_s([s.compute_flops for s in steps],
                                           self.cell.flops_per_s[ids])
        up = np.asarray([8 * s.upload_bytes for s in steps], dtype=float)
        down = np.asarray([8 * s.download_bytes for s in steps], dtype=float)
        return {Direction.UPLINK: channel.LinkDemand(ids, gain, up, compute_s),
                Direction.DOWNLINK: channel.LinkDemand(ids, gain, down, compute_s)}

    @abstractmethod
    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        """The SimPy processes of one round (the round ends when all have finished)."""

    # --- a client's stages run in a round's process ----------------------------------------
    def _download_model(self, models: ExchangesModels, k: int
                        ) -> Generator[simpy.Event, Any, None]:
        yield from self._run_stages(self._download_stages(models, k))

    def _local_steps(self, steps: LocalSteps, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._run_stages(self._local_stages(steps, k))

    def _split_step(self, client: SplitClient, server: SplitServer, k: int,
                    t: int) -> Generator[simpy.Event, Any, None]:
        yield from self._run_stages(self._split_stages(client, server, k, t))

    def _server_compute(self, server: SplitServer, local_iter: int, client_id: int,
                        uploads: Sequence[Upload]
                        ) -> Generator[simpy.Event, Any, ServerStep]:
        """The server processor's turn and step on `uploads` (`_server_stages`)."""
        return (yield from self._run_stages(self._server_stages(server, local_iter, client_id),
                                            list(uploads)))

    def _upload_model(self, models: ExchangesModels, k: int
                      ) -> Generator[simpy.Event, Any, None]:
        def arrived(message: ModelMessage) -> None:
            models.server_receive_model(message)
            if self.drops is not None:
                self._finish(k)

        yield from self._run_stages(self._upload_stages(models, k, arrived))


class ConcatSplitProtocol(Protocol[ConcatSplitTrainer]):
    """SCALA and CA-SFL: model download; T x (client forward, activation upload, barrier on
    all activations, ONE server step, gradient downloads, client backward); model upload.

    With a step deadline the barrier waits at most that long (from the moment the server is
    ready for the iteration) and the server steps on the activations that came; the others'
    clients are dropped. With over-selection the first local iteration's barrier keeps the
    first `keep` activations to arrive and drops the other clients then."""

    trainer_contract = ConcatSplitTrainer
    sends_activations = True
    sends_gradients = True
    has_barrier = True

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        keep = self.rules.keep
        self._meetings = [_Meeting(self.env, selected, keep if t == 0 else None)
                          for t in range(self.local_iters)]
        procs = [self._spawn(k, self._client(k, self._meetings)) for k in selected]
        procs.append(self._spawn(SERVER_ID, self._server(self._meetings)))
        return procs

    def _left(self, k: int) -> None:
        for meeting in self._meetings:
            meeting.leave(k)

    def _client(self, k: int, meetings: list[_Meeting]) -> Generator[simpy.Event, Any, None]:
        trainer = self.trainer
        yield from self._download_model(trainer, k)
        for t, meeting in enumerate(meetings):
            forward = trainer.client_forward(k, t)
            yield self._compute(t, k, EventKind.CLIENT_FORWARD, forward.flops)
            yield self.link.upload(forward.upload, EventKind.ACTIVATION_UPLOAD, t)
            meeting.arrive(forward.upload)
            reply = yield meeting.replies[k]
            yield self.link.download(reply, EventKind.GRADIENT_DOWNLOAD, t)
            yield self._compute(t, k, EventKind.CLIENT_BACKWARD, trainer.client_backward(reply))
        yield from self._upload_model(trainer, k)

    def _server(self, meetings: list[_Meeting]) -> Generator[simpy.Event, Any, None]:
        step_deadline_s = self.rules.step_deadline_s
        for t, meeting in enumerate(meetings):
            if step_deadline_s is None:
                yield meeting.all_in                 # barrier: wait for every client
            else:                                    # ... or until the step deadline
                yield meeting.all_in | self.env.timeout(step_deadline_s)
            arrived = list(meeting.arrived)
            if self.drops is not None:
                came = {m.client_id for m in arrived}
                reason = "step_deadline" if not meeting.all_in.triggered else "over_selection"
                for k in sorted(meeting.waiting - came):
                    self._drop(k, reason)
            if not arrived:                          # nobody left in the round
                return
            arrived.sort(key=lambda m: m.client_id)  # concatenation order is by client id
            step = yield from self._server_compute(self.trainer, t, SERVER_ID, arrived)
            for reply in step.replies:
                meeting.replies[reply.client_id].succeed(reply)


class _Meeting:
    """One local iteration of a concatenated round at the server: the activations in the order
    they arrive, `all_in` (fires with them when the last client's has, or the first `quorum`
    clients' have), and one event per client that fires with its gradients. Plain SimPy
    events: a Store would cost two more scheduler steps per message, on the hottest path of a
    SCALA run."""

    def __init__(self, env: simpy.Environment, clients: Sequence[int],
                 quorum: int | None = None) -> None:
        self.size = len(clients) if quorum is None else min(quorum, len(clients))
        self.waiting = {int(k) for k in clients}   # clients still in the round
        self.arrived: list[Upload] = []
        self.all_in = env.event()
        self.replies = {k: env.event() for k in clients}

    def arrive(self, upload: Upload) -> None:
        self.arrived.append(upload)
        if len(self.arrived) == self.size:
            self.all_in.succeed(self.arrived)

    def leave(self, k: int) -> None:
        """Client k was dropped: the barrier no longer waits for it."""
        if k not in self.waiting:
            return
        self.waiting.discard(k)
        if not any(m.client_id == k for m in self.arrived):
            self.size = min(self.size, len(self.waiting))
            if len(self.arrived) >= self.size and not self.all_in.triggered:
                self.all_in.succeed(self.arrived)


class _ServerBlocks:
    """The server's turns in a round whose server takes one client's local iterations as a
    block (RoundRules.sequential_server): clients in id order, client k's turn comes when
    the client before it has had its turn and is done (its last server step taken) or was
    dropped. Plain SimPy events, chained: each turn waits on one condition."""

    def __init__(self, env: simpy.Environment, clients: Sequence[int]) -> None:
        order = sorted(int(k) for k in clients)
        self.done = {k: env.event() for k in order}
        first = env.event()
        first.succeed()
        self.turns: dict[int, simpy.Event] = {}
        turn: simpy.Event = first
        for k in order:
            self.turns[k] = turn
            turn = env.all_of([turn, self.done[k]])

    def turn(self, k: int) -> simpy.Event:
        """Fires when the server is free for client k's block."""
        return self.turns[k]

    def finish(self, k: int) -> None:
        """Client k's block is over (its last server step taken, or it was dropped)."""
        if not self.done[k].triggered:
            self.done[k].succeed()


class ServerBlocksMixin:
    """What a pattern whose server may take clients one block at a time shares: the round's
    blocks (None: the server takes each step as it arrives) and their release when a client
    is dropped."""

    _blocks: _ServerBlocks | None = None
    env: simpy.Environment
    rules: RoundRules

    def _open_blocks(self, selected: Sequence[int]) -> None:
        """The round's blocks, when its rules make the server take one client at a time."""
        self._blocks = _ServerBlocks(self.env, selected) if self.rules.sequential_server else None

    def _left(self, k: int) -> None:
        if self._blocks is not None:
            self._blocks.finish(k)


class PerClientSplitProtocol(ServerBlocksMixin, Protocol[PerClientSplitTrainer]):
    """SplitFed V1/V2, LLA-SFL, CS-SFL: model download; T x (client forward, activation
    upload, its own server step as soon as the server processor is free, in arrival order (a
    FIFO SimPy resource), gradient download, client backward); model upload. No barrier:
    SplitFedV2's shared model is thus updated in the order the clock decides. With a
    sequential server (RoundRules.sequential_server) a client's first server step waits for
    its block: the server serves its T steps before the next client's (Thapa et al.'s
    reference SplitFedV2), so the order is the clients' ids whatever the clock."""

    trainer_contract = PerClientSplitTrainer
    sends_activations = True
    sends_gradients = True

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        self._open_blocks(selected)
        return [self._spawn(k, self._client(k)) for k in selected]

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        trainer = self.trainer
        yield from self._download_model(trainer, k)
        for t in range(self.local_iters):
            stages = self._split_stages(trainer, trainer, k, t)
            if self._blocks is not None:
                stages = self._in_block(stages, k, t)
            yield from self._run_stages(stages)
        yield from self._upload_model(trainer, k)

    def _in_block(self, stages: list[Stage], k: int, t: int) -> list[Stage]:
        """Local iteration t's stages with client k's block: its first server step waits for
        the block, its last ends it."""
        blocks = self._blocks
        assert blocks is not None
        waiting, holding = SERVER_STAGES
        out: list[Stage] = []
        for stage in stages:
            if stage.name == waiting and t == 0:
                out.append(Stage("server_block", lambda carry: (blocks.turn(k), carry)))
            if stage.name == holding and t == self.local_iters - 1:
                def end(carry: Any, served: Callable[[Any], Any] = stage.end) -> Any:
                    step = served(carry)
                    blocks.finish(k)
                    return step
                stage = dataclasses.replace(stage, end=end)
            out.append(stage)
        return out


class KeptModelSplitProtocol(Protocol[KeptModelSplitTrainer]):
    """SplitFedV3: as the per-client pattern, but every client keeps its own client model, so
    no model is sent either way."""

    trainer_contract = KeptModelSplitTrainer
    sends_activations = True
    sends_gradients = True
    keeps_client_models = True

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        return [self._spawn(k, self._client(k)) for k in selected]

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        trainer = self.trainer
        trainer.client_resume(k)
        for t in range(self.local_iters):
            yield from self._split_step(trainer, trainer, k, t)
        trainer.client_keep(k)
        if self.drops is not None:
            self._finish(k)


class LocalLossProtocol(ServerBlocksMixin, Protocol[LocalLossTrainer]):
    """SFL with local loss: a client never waits for the server. Each local step is computed,
    its activations queue on the client's uplink (one transfer at a time) while the client
    goes on with the next step, the server consumes them in arrival order, and no gradient
    comes back. The model upload follows the client's last activations on its uplink. With a
    sequential server (RoundRules.sequential_server) the server takes a client's activations
    only in its block: all T of one client's, then the next client's, in id order."""

    trainer_contract = LocalLossTrainer
    sends_activations = True
    pipelined_clients = True

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        self._open_blocks(selected)
        return [self._spawn(k, self._client(k)) for k in selected]

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        uplink = simpy.Resource(self.env, capacity=1)  # the client's own uplink: FIFO
        yield from self._download_model(self.trainer, k)
        shipments = []
        for t in range(self.local_iters):
            step = self.trainer.client_local_step(k, t)
            yield self._compute(t, k, EventKind.CLIENT_FORWARD, step.forward_flops)
            yield self._compute(t, k, EventKind.CLIENT_BACKWARD, step.backward_flops)
            if step.upload is None:
                raise RuntimeError(f"{type(self.trainer).__name__}: a local-loss step uploads "
                                   f"its activations (LocalStep.upload)")
            shipments.append(self._spawn(k, self._ship(t, step.upload, uplink)))
        with uplink.request() as turn:
            yield turn
            yield from self._upload_model(self.trainer, k)
        yield self.env.all_of(shipments)  # the round waits for the server's last steps too

    def _ship(self, t: int, upload: Upload,
              uplink: simpy.Resource) -> Generator[simpy.Event, Any, None]:
        with uplink.request() as turn:
            yield turn
            yield self.link.upload(upload, EventKind.ACTIVATION_UPLOAD, t)
        k = upload.client_id
        if self._blocks is not None:   # every step waits (the uplink may deliver the next
            yield self._blocks.turn(k)  # before the server takes this one)
        yield from self._server_compute(self.trainer, t, k, [upload])
        if self._blocks is not None and t == self.local_iters - 1:
            self._blocks.finish(k)


class FederatedProtocol(Protocol[FederatedTrainer]):
    """FL family: model download, T local steps of client compute on the model it trains,
    model upload. What the model messages hold is the trainer's business (FedConcat sends the
    frozen encoders once, then only its classifier)."""

    trainer_contract = FederatedTrainer

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        return [self._spawn(k, self._client(k)) for k in selected]

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._download_model(self.trainer, k)
        yield from self._local_steps(self.trainer, k)
        yield from self._upload_model(self.trainer, k)
