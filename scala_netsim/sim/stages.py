"""A client's life as a list of stages, each one event its process waits on: what the
synchronous patterns run one after another in a round's process, and what lets an
asynchronous run's checkpoint say where each client in flight stands
(scala_netsim.sim.async_state)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import simpy

import channel
from scala_netsim.core.events import MODEL_TRANSFER, SERVER_ID, EventKind, EventLog
from scala_netsim.learn.contract import (
    ExchangesModels,
    LocalSteps,
    ServerStep,
    SplitClient,
    SplitServer,
    Trainer,
)
from scala_netsim.learn.messages import ActivationMessage, ModelMessage
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.link import Link, share_done
from scala_netsim.sim.timeouts import Recorded, RecordedTimeout

#: the trainer a protocol drives (of its contract)
TrainerT = TypeVar("TrainerT", bound=Trainer)

#: the stages of a client at the server's processor, waiting for it and holding it: both
#: carry (the request, what the stage carries)
SERVER_STAGES = ("turn", "serve")


def _keep(carry: Any) -> Any:
    return carry


def _nothing(carry: Any) -> None:
    return None


@dataclass(frozen=True)
class Stage:
    """One event a client's process waits on. `begin(carry)` does the trainer's work due then
    and returns the event and what the stage carries; `end(carry)`, once the event has
    happened, returns what the next stage begins with; `abandon(carry)` runs instead when the
    process is interrupted while it waits (a dropped client). A client's life as a list of
    stages is what lets an asynchronous run's checkpoint say where each client stands
    (scala_netsim.sim.async_state); a round's processes run the same stages."""

    name: str
    begin: Callable[[Any], tuple[simpy.Event, Any]]
    end: Callable[[Any], Any] = _keep
    abandon: Callable[[Any], None] = _nothing


class ClientStages(ABC, Generic[TrainerT]):
    """The core that the round protocols (scala_netsim.sim.protocols.Protocol) and the
    asynchronous ones (scala_netsim.sim.async_protocols.AsyncProtocol), siblings, share:
    the cell, the trainer of the pattern's contract, the link, the server's processor, the
    timed computations, and the stages of a client's life. The stage builders take the part
    of the trainer they call (its contract's pieces), so that each is typed by what it needs.
    """

    trainer_contract: ClassVar[type] = Trainer   # the contract the trainer must implement
    pipelined_clients: ClassVar[bool] = False  # may a client compute while its uplink is busy?
    has_barrier: ClassVar[bool] = False        # does the server wait for every client's step?
    sends_activations: ClassVar[bool] = False  # do clients upload cut-layer activations?
    sends_gradients: ClassVar[bool] = False    # does the server send their gradients down?
    keeps_client_models: ClassVar[bool] = False  # one client-side model per client, kept?
    asynchronous: ClassVar[bool] = False       # clients started one by one by a driver, no round

    def __init__(self, env: simpy.Environment, cell: Cell, trainer: TrainerT,
                 link: Link, log: EventLog, local_iters: int) -> None:
        if not isinstance(trainer, self.trainer_contract):
            raise TypeError(f"{type(self).__name__} needs a {self.trainer_contract.__name__}, "
                            f"got {type(trainer).__name__}")
        self.env, self.cell, self.trainer, self.link, self.log = env, cell, trainer, link, log
        self.local_iters = local_iters
        self.server_cpu = simpy.Resource(env, capacity=1)
        #: the round (a round protocol's) or version being built (an asynchronous one's)
        self.round = 0
        self._compute_s: dict[tuple[int, int], float] = {}  # (client, FLOPs) -> seconds
        #: the book of drops, when clients can be dropped (the link's: it cuts transfers);
        #: None keeps the plain, faster path
        self.drops: Drops | None = link.drops

    # --- timed computations ---------------------------------------------------------------
    def _compute(self, local_iter: int, k: int, kind: EventKind, flops: int) -> simpy.Event:
        """Client k computes `flops` at its FLOP/s, starting now: a timeout that records the
        step when it ends; yield it to wait for the end."""
        key = (k, flops)
        if key not in self._compute_s:
            self._compute_s[key] = float(channel.compute_time_s(flops, self.cell.flops_per_s[k]))
        return self._timed(k, k, local_iter, kind, self._compute_s[key], flops)

    def _timed(self, owner: int, who: int, local_iter: int, kind: EventKind, duration_s: float,
               flops: int) -> simpy.Event:
        """A computation of `flops` lasting `duration_s` from now, recorded when it ends (a
        callback: before the process waiting on it resumes); when clients can be dropped, cut
        (the FLOPs done so far recorded) if its owner is dropped first. Its `.record` keeps
        what the record will say (an asynchronous run's checkpoint saves it)."""
        start = self.env.now
        timeout = RecordedTimeout(self.env, duration_s,
                                  ("compute", start, duration_s, local_iter, who, kind, flops))
        if self.drops is None:
            timeout.callbacks.append(self._computed)
            return timeout

        def cut() -> None:
            self.log.record_cut(start, self.env.now, self.round, local_iter, who, kind, 0,
                                share_done(flops, start, self.env.now, duration_s))

        return self.drops.track(owner, timeout, self._computed, cut,
                                None if who == SERVER_ID else local_iter)

    def _computed(self, timeout: simpy.Event) -> None:
        """Record the computation `timeout` ended (see `_timed`)."""
        assert isinstance(timeout, Recorded)
        _, start, _, local_iter, who, kind, flops = timeout.record
        self.log.record(start, self.env.now, self.round, local_iter, who, kind, 0, flops)

    def _run_stages(self, stages: Sequence[Stage], carry: Any = None
                    ) -> Generator[simpy.Event, Any, Any]:
        """Run `stages` one after another in this process; returns what the last one ended
        with."""
        for stage in stages:
            event, carry = stage.begin(carry)
            try:
                yield event
            except BaseException:    # interrupted (dropped): let go of what it holds
                stage.abandon(carry)
                raise
            carry = stage.end(carry)
        return carry

    def _server_stages(self, server: SplitServer, local_iter: int,
                       client_id: int) -> list[Stage]:
        """Wait for the server processor (FIFO), then run the server step on the uploads the
        stages begin with, at the moment the server starts it, and hold the processor for its
        FLOPs / server FLOP/s; they end with the ServerStep. The step belongs to the process
        of `client_id` (SERVER_ID: the server's own). Both stages carry (the request, ...)."""
        def turn(uploads: list[ActivationMessage]) -> tuple[simpy.Event, Any]:
            request = self.server_cpu.request()
            return request, (request, uploads)

        def serve(carry: tuple) -> tuple[simpy.Event, Any]:
            request, uploads = carry
            step = server.server_step(uploads)
            duration_s = float(channel.compute_time_s(step.flops, self.cell.server_flops_per_s))
            return (self._timed(client_id, client_id, local_iter, EventKind.SERVER_STEP,
                                duration_s, step.flops), (request, step))

        def served(carry: tuple) -> ServerStep:
            request, step = carry
            self.server_cpu.release(request)
            return step

        def release(carry: tuple) -> None:
            self.server_cpu.release(carry[0])

        waiting, holding = SERVER_STAGES
        return [Stage(waiting, turn, abandon=release),
                Stage(holding, serve, served, abandon=release)]

    def _split_stages(self, client: SplitClient, server: SplitServer, k: int,
                      t: int) -> list[Stage]:
        """Client k's local iteration t of per-client split learning: forward, activations
        up, the server's step on them alone when the processor takes them, their gradient
        down, backward."""
        link = self.link

        def forward(_: Any) -> tuple[simpy.Event, Any]:
            step = client.client_forward(k, t)
            return self._compute(t, k, EventKind.CLIENT_FORWARD, step.flops), step.upload

        def upload(message: ActivationMessage) -> tuple[simpy.Event, Any]:
            return link.upload(message, EventKind.ACTIVATION_UPLOAD, t), [message]

        def gradient(step: ServerStep) -> tuple[simpy.Event, Any]:
            (reply,) = step.replies
            return link.download(reply, EventKind.GRADIENT_DOWNLOAD, t), reply

        def backward(reply: Any) -> tuple[simpy.Event, Any]:
            return self._compute(t, k, EventKind.CLIENT_BACKWARD,
                                 client.client_backward(reply)), None

        return [Stage("forward", forward), Stage("activation_upload", upload),
                *self._server_stages(server, t, k), Stage("gradient_download", gradient),
                Stage("backward", backward)]

    def _download_stages(self, models: ExchangesModels, k: int) -> list[Stage]:
        """The client-side model down, received by client k."""
        def download(_: Any) -> tuple[simpy.Event, Any]:
            message = models.client_model_download(k)
            return self.link.download(message, EventKind.MODEL_DOWNLOAD, MODEL_TRANSFER), message

        return [Stage("model_download", download, models.client_receive_model)]

    def _local_stages(self, steps: LocalSteps, k: int) -> list[Stage]:
        """Client k's T local steps on the whole model it holds (the FL family): each step
        trained, then its forward and backward passes timed at the client's FLOP/s."""
        stages: list[Stage] = []
        for t in range(self.local_iters):
            def forward(_: Any, t: int = t) -> tuple[simpy.Event, Any]:
                step = steps.client_local_step(k, t)
                return (self._compute(t, k, EventKind.CLIENT_FORWARD, step.forward_flops),
                        step.backward_flops)

            def backward(flops: int, t: int = t) -> tuple[simpy.Event, Any]:
                return self._compute(t, k, EventKind.CLIENT_BACKWARD, flops), None

            stages += [Stage("forward", forward), Stage("backward", backward)]
        return stages

    def _upload_stages(self, models: ExchangesModels, k: int,
                       arrived: Callable[[ModelMessage], Any]) -> list[Stage]:
        """Client k's model up; `arrived(message)` when it is in."""
        def upload(_: Any) -> tuple[simpy.Event, Any]:
            message = models.client_model_upload(k)
            return self.link.upload(message, EventKind.MODEL_UPLOAD, MODEL_TRANSFER), message

        return [Stage("model_upload", upload, arrived)]
