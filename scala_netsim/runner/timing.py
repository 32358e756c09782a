"""Timing-only runs: the same protocols and wireless link, no training beyond what it takes to
meter each step once.

For a network question at scale (10,000 clients, 500 rounds) what matters is when things
happen, and for a trainer with `fixed_step_costs` every step's FLOPs and bytes are a function
of its kind and batch size alone. A `TimingTrainer` wraps the algorithm's real trainer: a round
in which some participant's batch size (or the server step's total batch) has not been seen is
run by the real trainer, for real, and every answer it gives is kept by (step kind, batch size);
every other round is answered from what was kept, computing nothing. A federated trainer's
clients train apart, so there one client of each new batch size is run, at the round's start,
and the round itself is answered from what it gave (memory for one model per new size, not
one per participant). A concatenated round's first local iteration is run at its start, every
participant's forward pass and the server step, but only one client of each new batch size
keeps its graph for a backward pass. The timeline is thus the
one a real run of the same scenario has, exactly (times, bytes, FLOPs); what is not there is
accuracy: a timing-only run evaluates nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import torch

from scala_netsim.algorithms.common import TrainerBase
from scala_netsim.core.errors import Error
from scala_netsim.core.events import MODEL_TRANSFER
from scala_netsim.learn.contract import (
    ConcatSplitTrainer,
    FederatedTrainer,
    Forward,
    KeptModelSplitTrainer,
    LocalStep,
    LocalSteps,
    ServerStep,
    SplitClient,
    SplitServer,
    StepDemand,
    Trainer,
)
from scala_netsim.learn.messages import (
    ActivationMessage,
    GradientMessage,
    ModelMessage,
    RecordedMessage,
)
from scala_netsim.learn.training import apportion_batch_sizes
from scala_netsim.runner.recorded import RecordedTrainer


class TimingError(Error, ValueError):
    """An algorithm whose steps' costs are not fixed by their batch size."""


class TimingMeter(RecordedTrainer):
    """The trainer side of a timing-only run (see the module); `timing_trainer` makes it a
    trainer of the wrapped trainer's pattern. Where a round is run for real (`_live`), the
    model hand-offs go to the real trainer; otherwise they carry nothing, as in a replay."""

    prefix = "Timing"

    def __init__(self, inner: TrainerBase) -> None:
        self.inner = inner
        self.concatenated = isinstance(inner, ConcatSplitTrainer)
        self.federated = isinstance(inner, FederatedTrainer)
        self.live_rounds = 0        # rounds the real trainer ran (to meter new batch sizes)
        #: what the real trainer answered, by (kind, batch size): demands, sizes, FLOPs
        self._costs: dict[tuple, Any] = {}
        self._seen: set[tuple] = set()
        self._batch: dict[int, int] = {}
        self._live = False

    # --- the real trainer as the part of its contract a call needs (the meter is made an
    # --- instance of the same contract, so the protocol calls only what it has) ----------
    def _kept(self) -> KeptModelSplitTrainer:
        assert isinstance(self.inner, KeptModelSplitTrainer)
        return self.inner

    def _split_client(self) -> SplitClient:
        assert isinstance(self.inner, SplitClient)
        return self.inner

    def _split_server(self) -> SplitServer:
        assert isinstance(self.inner, SplitServer)
        return self.inner

    def _local_steps(self) -> LocalSteps:
        assert isinstance(self.inner, LocalSteps)
        return self.inner

    # --- the round ------------------------------------------------------------------------
    def begin_round(self, selected: Sequence[int]) -> None:
        inner = self.inner
        sizes = apportion_batch_sizes([inner.sampler.num_samples(k) for k in selected],
                                      inner.batch_size)
        self._batch = dict(zip(selected, sizes, strict=True))
        needed = {("client", b) for b in sizes}
        needed |= {("server", sum(sizes))} if self.concatenated else {("server", b)
                                                                        for b in sizes}
        self._live = not needed <= self._seen
        if self._live:
            self.live_rounds += 1
            self._seen |= needed
            if self.federated:
                self._meter_local_steps(selected, sizes)
                self._live = False
            elif self.concatenated:
                self._meter_concatenated_step(selected, sizes)
                self._live = False
            else:
                inner.begin_round(selected)

    def _meter_local_steps(self, selected: Sequence[int], sizes: Sequence[int]) -> None:
        """A federated trainer's clients train apart, so one client of each batch size new
        to the round meters that size: its download, one local step and its upload, run now,
        before the round's timeline asks for them; the round is then answered from what was
        kept. (Running the whole round for real would hold a trained copy of the model for
        every participant: 570 of the authors' AlexNet took more than 18 GB.)"""
        inner = self.inner
        first: dict[int, int] = {}   # batch size -> the client that meters it
        for k, b in zip(selected, sizes, strict=True):
            if ("local", b) not in self._costs:
                first.setdefault(b, k)
        inner.begin_round(list(first.values()))
        inner.client_batch_sizes = {k: b for b, k in first.items()}   # the round's own sizes
        for b, k in first.items():
            self._keep(("demand", b), inner.step_demand(k))
            download = inner.client_model_download(k)
            self._keep(("download",), download.payload_bytes)
            inner.client_receive_model(download)
            step = self._local_steps().client_local_step(k, 0)
            upload = None if step.upload is None else step.upload.payload_bytes
            self._keep(("local", b), (step.forward_flops, step.backward_flops, upload))
            self._keep(("upload",), inner.client_model_upload(k).payload_bytes)

    def _meter_concatenated_step(self, selected: Sequence[int], sizes: Sequence[int]) -> None:
        """A concatenated round's server step needs every participant's activations, but a
        client's backward pass only its own: one local iteration is run now, before the
        round's timeline asks for it (every download and forward pass, the server step on the
        concatenated batch), and only one client of each batch size new to the run keeps its
        forward pass's graph and runs its backward pass; the others' forward passes run
        without autograd and their activations are let go after the step. The round is then
        answered from what was kept. (Running the whole round for real would hold every
        participant's graph: 1,050 clients of the authors' AlexNet passed 20 GB.) A
        timing-only run drops no client (scala_netsim.config.scenario), so the server's batch
        is always the round's."""
        inner, client = self.inner, self._split_client()
        inner.begin_round(selected)
        metering: dict[int, int] = {}   # batch size -> the client that meters its backward
        for k, b in zip(selected, sizes, strict=True):
            if ("backward", b) not in self._costs:
                metering.setdefault(b, k)
        metered = set(metering.values())
        uploads: list[ActivationMessage] = []   # the real trainer's: tensors, not sizes
        for k, b in zip(selected, sizes, strict=True):
            if ("demand", b) not in self._costs:
                self._keep(("demand", b), inner.step_demand(k))
            download = inner.client_model_download(k)
            self._keep(("download",), download.payload_bytes)
            inner.client_receive_model(download)
            with torch.set_grad_enabled(k in metered):
                forward = client.client_forward(k, 0)
            self._keep(("forward", b), (forward.flops, forward.upload.payload_bytes))
            uploads.append(cast(ActivationMessage, forward.upload))
        uploads.sort(key=lambda m: m.client_id)     # the protocol's concatenation order
        step = self._split_server().server_step(uploads)
        self._keep(("server", sum(sizes)), (step.flops, bool(step.replies)))
        for reply in step.replies:
            b = self._batch[reply.client_id]
            self._keep(("gradient", b), reply.payload_bytes)
            if reply.client_id in metered:
                self._keep(("backward", b), client.client_backward(cast(GradientMessage, reply)))
        for k in selected:
            if k not in metered:
                inner.drop_client(k)                # its activations are let go
        self._keep(("upload",), inner.client_model_upload(selected[0]).payload_bytes)

    def drop_client(self, k: int) -> None:
        if self._live:
            self.inner.drop_client(k)

    def end_round(self) -> None:
        if self._live:
            self.inner.end_round()
        self.round_loss = torch.zeros((), dtype=torch.float64)   # nothing is learned

    def evaluate(self, test_x: torch.Tensor, test_y: torch.Tensor) -> None:
        return None

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def _keep(self, key: tuple, value: Any) -> Any:
        self._costs[key] = value
        return value

    def step_demand(self, k: int) -> StepDemand:
        key = ("demand", self._batch[k])
        return self._keep(key, self.inner.step_demand(k)) if self._live else self._costs[key]

    # --- model exchange ---------------------------------------------------------------------
    def _model(self, key: str, k: int, message_of: Callable[[int], ModelMessage]
               ) -> ModelMessage | RecordedMessage:
        if self._live:
            message = message_of(k)
            self._keep((key,), message.payload_bytes)
            return message
        return RecordedMessage(k, MODEL_TRANSFER, self._costs[(key,)])

    def client_model_download(self, k: int) -> ModelMessage | RecordedMessage:
        return self._model("download", k, self.inner.client_model_download)

    def client_model_upload(self, k: int) -> ModelMessage | RecordedMessage:
        return self._model("upload", k, self.inner.client_model_upload)

    def client_receive_model(self, message: Any) -> None:
        if self._live:
            self.inner.client_receive_model(message)

    def server_receive_model(self, message: Any) -> None:
        if self._live:
            self.inner.server_receive_model(message)

    def client_resume(self, k: int) -> None:
        if self._live:
            self._kept().client_resume(k)

    def client_keep(self, k: int) -> None:
        if self._live:
            self._kept().client_keep(k)

    # --- steps ------------------------------------------------------------------------------
    def client_forward(self, k: int, local_iter: int) -> Forward:
        key = ("forward", self._batch[k])
        if self._live:
            forward = self._split_client().client_forward(k, local_iter)
            self._keep(key, (forward.flops, forward.upload.payload_bytes))
            return forward
        flops, upload_bytes = self._costs[key]
        return Forward(RecordedMessage(k, local_iter, upload_bytes), flops)

    def client_backward(self, reply: Any) -> int:
        key = ("backward", self._batch[reply.client_id])
        return (self._keep(key, self._split_client().client_backward(reply))
                if self._live else self._costs[key])

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        key = ("local", self._batch[k])
        if self._live:
            step = self._local_steps().client_local_step(k, local_iter)
            upload = None if step.upload is None else step.upload.payload_bytes
            self._keep(key, (step.forward_flops, step.backward_flops, upload))
            return step
        forward, backward, upload = self._costs[key]
        return LocalStep(forward, backward,
                         None if upload is None else RecordedMessage(k, local_iter, upload))

    def server_step(self, uploads: Sequence[Any]) -> ServerStep:
        batches = [self._batch[m.client_id] for m in uploads]
        key = ("server", sum(batches))
        if self._live:
            step = self._split_server().server_step(uploads)
            self._keep(key, (step.flops, bool(step.replies)))
            for reply in step.replies:
                self._keep(("gradient", self._batch[reply.client_id]), reply.payload_bytes)
            return step
        flops, replies = self._costs[key]
        return ServerStep([RecordedMessage(m.client_id, m.local_iter,
                                           self._costs[("gradient", b)])
                           for m, b in zip(uploads, batches, strict=True)] if replies else [],
                          flops)


def timing_trainer(inner: Trainer, contract: type[Trainer]) -> Trainer:
    """A trainer of `contract` that times `inner`'s steps, metering each batch size once."""
    if not type(inner).fixed_step_costs or not isinstance(inner, TrainerBase):
        raise TimingError(f"timing_only: {type(inner).__name__}'s step costs are not fixed by "
                          f"their batch size (its messages change from round to round); run "
                          f"it with training")
    return TimingMeter.of(contract, inner)
