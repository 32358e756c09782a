"""A client's life as a list of stages, each one event its process waits on: what the
synchronous patterns run one after another in a round's process, and what lets an
asynchronous run's checkpoint say where each client in flight stands
(scala_netsim.sim.async_state)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import simpy

import channel
from scala_netsim.core.events import MODEL_TRANSFER, EventKind
from scala_netsim.learn.contract import ServerStep
from scala_netsim.learn.messages import ActivationMessage, ModelMessage

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


class ClientStages:
    """The stages of a client's life that the patterns share (a Protocol's base: it uses the
    protocol's trainer, link, server processor and timed computations)."""

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

    def _server_stages(self, local_iter: int, client_id: int) -> list[Stage]:
        """Wait for the server processor (FIFO), then run the server step on the uploads the
        stages begin with, at the moment the server starts it, and hold the processor for its
        FLOPs / server FLOP/s; they end with the ServerStep. The step belongs to the process
        of `client_id` (SERVER_ID: the server's own). Both stages carry (the request, ...)."""
        def turn(uploads: list[ActivationMessage]) -> tuple[simpy.Event, Any]:
            request = self.server_cpu.request()
            return request, (request, uploads)

        def serve(carry: tuple) -> tuple[simpy.Event, Any]:
            request, uploads = carry
            step = self.trainer.server_step(uploads)
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

    def _server_compute(self, local_iter: int, client_id: int,
                        uploads: Sequence[ActivationMessage]
                        ) -> Generator[simpy.Event, Any, ServerStep]:
        """The server processor's turn and step on `uploads` (`_server_stages`)."""
        return (yield from self._run_stages(self._server_stages(local_iter, client_id),
                                            list(uploads)))

    def _split_stages(self, k: int, t: int) -> list[Stage]:
        """Client k's local iteration t of per-client split learning: forward, activations
        up, the server's step on them alone when the processor takes them, their gradient
        down, backward."""
        trainer, link = self.trainer, self.link

        def forward(_: Any) -> tuple[simpy.Event, Any]:
            step = trainer.client_forward(k, t)
            return self._compute(t, k, EventKind.CLIENT_FORWARD, step.flops), step.upload

        def upload(message: ActivationMessage) -> tuple[simpy.Event, Any]:
            return link.upload(message, EventKind.ACTIVATION_UPLOAD, t), [message]

        def gradient(step: ServerStep) -> tuple[simpy.Event, Any]:
            (reply,) = step.replies
            return link.download(reply, EventKind.GRADIENT_DOWNLOAD, t), reply

        def backward(reply: Any) -> tuple[simpy.Event, Any]:
            return self._compute(t, k, EventKind.CLIENT_BACKWARD,
                                 trainer.client_backward(reply)), None

        return [Stage("forward", forward), Stage("activation_upload", upload),
                *self._server_stages(t, k), Stage("gradient_download", gradient),
                Stage("backward", backward)]

    def _split_step(self, k: int, t: int) -> Generator[simpy.Event, Any, None]:
        yield from self._run_stages(self._split_stages(k, t))

    def _download_stages(self, k: int) -> list[Stage]:
        """The client-side model down, received by client k."""
        def download(_: Any) -> tuple[simpy.Event, Any]:
            message = self.trainer.client_model_download(k)
            return self.link.download(message, EventKind.MODEL_DOWNLOAD, MODEL_TRANSFER), message

        return [Stage("model_download", download, self.trainer.client_receive_model)]

    def _download_model(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._run_stages(self._download_stages(k))

    def _local_stages(self, k: int) -> list[Stage]:
        """Client k's T local steps on the whole model it holds (the FL family): each step
        trained, then its forward and backward passes timed at the client's FLOP/s."""
        stages = []
        for t in range(self.local_iters):
            def forward(_: Any, t: int = t) -> tuple[simpy.Event, Any]:
                step = self.trainer.client_local_step(k, t)
                return (self._compute(t, k, EventKind.CLIENT_FORWARD, step.forward_flops),
                        step.backward_flops)

            def backward(flops: int, t: int = t) -> tuple[simpy.Event, Any]:
                return self._compute(t, k, EventKind.CLIENT_BACKWARD, flops), None

            stages += [Stage("forward", forward), Stage("backward", backward)]
        return stages

    def _local_steps(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._run_stages(self._local_stages(k))

    def _upload_stages(self, k: int, arrived: Callable[[ModelMessage], Any]) -> list[Stage]:
        """Client k's model up; `arrived(message)` when it is in."""
        def upload(_: Any) -> tuple[simpy.Event, Any]:
            message = self.trainer.client_model_upload(k)
            return self.link.upload(message, EventKind.MODEL_UPLOAD, MODEL_TRANSFER), message

        return [Stage("model_upload", upload, arrived)]

    def _upload_model(self, k: int) -> Generator[simpy.Event, Any, None]:
        def arrived(message: ModelMessage) -> None:
            self.trainer.server_receive_model(message)
            if self.drops is not None:
                self._finish(k)

        yield from self._run_stages(self._upload_stages(k, arrived))
