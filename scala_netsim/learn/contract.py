"""The trainer contract: what the engine's protocols call, and what they get back.

A protocol (scala_netsim.sim.protocols) is one communication pattern written as SimPy processes; it
decides WHEN each step happens and calls the trainer, which does the learning math and knows
nothing of time. Each pattern has one abstract class below listing exactly the methods its
protocol calls; an algorithm's trainer implements the one of its pattern (a missing method is
a TypeError when the trainer is built). Every FLOP count comes from the real computation
(scala_netsim.learn.flops) and every payload from the real tensors (scala_netsim.learn.messages).

    pattern                protocol                 trainer contract
    concatenated split     ConcatSplitProtocol      ConcatSplitTrainer
    per-client split       PerClientSplitProtocol   PerClientSplitTrainer
    split, models kept     KeptModelSplitProtocol   KeptModelSplitTrainer
    split, local loss      LocalLossProtocol        LocalLossTrainer
    federated              FederatedProtocol        FederatedTrainer
    asynchronous FL        AsyncFederatedProtocol   AsyncFederatedTrainer
    asynchronous split     AsyncSplitProtocol       AsyncSplitTrainer

Every round is: begin_round(selected); the pattern's calls (and drop_client(k) for each
client the network drops); end_round(). Evaluation and checkpoints happen between rounds. The
asynchronous patterns have no round: a driver starts each client (client_start), and the
server applies or buffers each trained model when it arrives (server_apply).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np
import torch
from torch import nn

from scala_netsim.learn.compression import Wire
from scala_netsim.learn.messages import (
    ActivationMessage,
    GradientMessage,
    ModelMessage,
    RecordedMessage,
)


@dataclass(frozen=True)
class Forward:
    """A client's forward pass: the activations (and labels) it uploads, and its FLOPs (a
    replayed or timing-only trainer uploads a RecordedMessage: the size, no tensors)."""

    upload: ActivationMessage | RecordedMessage
    flops: int


@dataclass(frozen=True)
class ServerStep:
    """One server step: the gradients it sends back (one per client served; none for a local
    loss) and its FLOPs."""

    replies: list[GradientMessage] | list[RecordedMessage]
    flops: int


@dataclass(frozen=True)
class LocalStep:
    """A client's whole local step (forward and backward on its own), and what it uploads
    after it: activations for SFL with local loss, nothing for federated learning."""

    forward_flops: int
    backward_flops: int
    upload: ActivationMessage | RecordedMessage | None = None


@dataclass(frozen=True)
class StepDemand:
    """What client k needs from the cell in one local step of the coming round, known before
    the round runs (for bandwidth allocators): the bytes it sends up after the step and the
    bytes it receives for it (split learning: activations and labels up, their gradient down;
    where nothing comes down within a step, as in SFL with local loss, the model it receives
    at the start of the round; federated learning: its model both ways), and the FLOPs it
    computes before it sends (split learning: its forward pass; SFL with local loss and
    federated learning: a whole cross-entropy step, regularisers not counted)."""

    upload_bytes: int
    download_bytes: int
    compute_flops: int


class Evaluation(NamedTuple):
    """Test metrics of the global model."""

    accuracy: float
    per_class: np.ndarray
    loss: float


class Trainer(ABC):
    """What every protocol, round or asynchronous, and the run loop call: the core that the
    round trainers (RoundTrainer, its patterns below) and the asynchronous ones
    (AsyncTrainer) share. A trainer is one or the other, never both, so that a protocol
    refuses by type a trainer of the other clock (scala_netsim.config.registry).

    What a trainer learns may depend on the clock in one way only, which it declares: the
    order in which the server runs different clients' steps (`server_order_matters`). Its
    client calls must depend on that client's own state and the round's global model alone
    (never on which client the clock served before), and whatever it aggregates it
    aggregates in client-id order. The simulated clock interleaves the clients differently
    in every cell, and re-timing a run in another cell (scala_netsim.runner.replay) relies on it.
    """

    #: does what is learned depend on the order in which the server takes different
    #: clients' steps (one shared server model stepped per upload)? Assumed unless a trainer
    #: says otherwise; a re-timing that reorders such a trainer's server steps is refused and
    #: the cell trained for real
    server_order_matters: ClassVar[bool] = True

    @classmethod
    def learns_server_order(cls, config: Any) -> bool:
        """`server_order_matters` for a run whose algorithm section is `config` (None where
        it has none): a trainer whose section can take the order out says so here."""
        return cls.server_order_matters

    #: are every step's FLOPs and bytes a function of its kind and batch size alone, the
    #: same in every round (what a timing-only run relies on, scala_netsim.runner.timing)?
    fixed_step_costs: ClassVar[bool] = False

    #: the sum of the round's (or version's) training losses so far (0-d float64 tensor;
    #: None until a step reports one); the run takes it at the round's end (`take_loss`) and
    #: stops when it is not finite: when any step of the round had a non-finite loss,
    #: whatever order the clock put the steps in (never just the last step's)
    round_loss: torch.Tensor | None = None

    #: the round's aggregations, (what was averaged, client, its weight), each group's
    #: weights summing to 1, checked by the run's invariants when clients can be dropped;
    #: None: the trainer does not report them (that check is skipped)
    aggregations: list[tuple[str, int, float]] | None = None

    if TYPE_CHECKING:   # what a registered trainer class provides (TrainerBase's subclasses
        # do; the replay and timing trainers are never built from a setup): the trainer of a
        # run on `setup` (scala_netsim.algorithms.common.TrainerSetup) with the algorithm's
        # scenario section `config` (None when it has none)
        @classmethod
        def from_setup(cls, setup: Any, config: Any = None) -> Trainer: ...

    def persistent_modules(self) -> dict[str, nn.Module] | None:
        """The modules of the trained global model by name (model.pt, what the attack reads);
        None: the trainer names none, and no model.pt is written."""
        return None

    def use_wire(self, wire: Wire) -> None:
        """Build every message through `wire` (the scenario's compression), from the first
        round on; a trainer that builds its messages without a Wire refuses."""
        raise ValueError(f"compression: {type(self).__name__} builds its messages without a "
                         f"Wire (scala_netsim.learn.compression), so it cannot compress them")

    def note_loss(self, loss: torch.Tensor) -> None:
        """Add a step's training loss to `round_loss` (no device synchronisation)."""
        loss = loss.detach().double()
        self.round_loss = loss if self.round_loss is None else self.round_loss + loss

    def take_loss(self) -> torch.Tensor | None:
        """The losses summed since the last call (`round_loss`), which starts again at None:
        the run takes it when a round or version is made."""
        loss, self.round_loss = self.round_loss, None
        return loss

    def drop_client(self, k: int) -> None:  # noqa: B027 (a hook: most trainers need nothing)
        """The network dropped client k from the round (a deadline, a lost transfer,
        over-selection): what it sent so far was received and used, what it would still have
        sent never comes, and it is not aggregated at the end of the round."""

    @abstractmethod
    def step_demand(self, k: int) -> StepDemand:
        """Client k's demand in one local step of the round begun last."""

    @abstractmethod
    def evaluate(self, test_x: torch.Tensor, test_y: torch.Tensor) -> Evaluation:
        """Metrics of the global model on the test set."""

    @abstractmethod
    def state_dict(self) -> dict:
        """Everything that outlives a round (tensors, numbers, lists and dicts of them)."""

    @abstractmethod
    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` returned."""


class RoundTrainer(Trainer):
    """A trainer of rounds: every round is begin_round(selected), the pattern's calls,
    end_round()."""

    @abstractmethod
    def begin_round(self, selected: Sequence[int]) -> None:
        """Start a round with these participants (in increasing id order)."""

    @abstractmethod
    def end_round(self) -> None:
        """Finish the round: aggregate what the participants sent."""


class ExchangesModels(ABC):
    """The model a client trains goes down at the start of its round and up at the end."""

    @abstractmethod
    def client_model_download(self, k: int) -> ModelMessage:
        """What the server sends client k before it trains."""

    @abstractmethod
    def client_receive_model(self, message: ModelMessage) -> None:
        """Client k loads what it received."""

    @abstractmethod
    def client_model_upload(self, k: int) -> ModelMessage:
        """Client k's trained model (part), sent up at the end of its round."""

    @abstractmethod
    def server_receive_model(self, message: ModelMessage) -> None:
        """The server keeps an upload for `end_round`."""


class SplitClient(ABC):
    """The client side of split learning: forward to the cut, later backward from it."""

    @abstractmethod
    def client_forward(self, k: int, local_iter: int) -> Forward:
        """Client k draws a minibatch and computes its cut-layer activations."""

    @abstractmethod
    def client_backward(self, reply: GradientMessage) -> int:
        """Client k backpropagates the gradient it received and steps. -> FLOPs."""


class LocalSteps(ABC):
    """A client that trains on its own, step by step (federated learning, and split
    learning with a local loss)."""

    @abstractmethod
    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        """Client k's forward, loss, backward and SGD step (its local iteration
        `local_iter`) on the model it holds."""


class SplitServer(ABC):
    """The server side of split learning."""

    @abstractmethod
    def server_step(self, uploads: Sequence[ActivationMessage]) -> ServerStep:
        """One step of the server part on the uploads the protocol hands over."""


class ConcatSplitTrainer(RoundTrainer, ExchangesModels, SplitClient, SplitServer):
    """Concatenated split learning (SCALA, CA-SFL): in every local iteration `server_step`
    receives every participant's upload at once, in client-id order, and replies to each."""


class PerClientSplitTrainer(RoundTrainer, ExchangesModels, SplitClient, SplitServer):
    """Per-client split learning (SplitFed V1/V2, LLA-SFL, CS-SFL): `server_step` receives
    one client's upload, in the order the server processor takes them, and replies to it."""


class KeptModelSplitTrainer(RoundTrainer, SplitClient, SplitServer):
    """Per-client split learning where every client keeps its own client model (SplitFed V3):
    nothing goes down or up at round boundaries."""

    @abstractmethod
    def client_resume(self, k: int) -> None:
        """Client k continues from its own model."""

    @abstractmethod
    def client_keep(self, k: int) -> None:
        """Client k keeps its trained model for its next round."""


class LocalLossTrainer(RoundTrainer, ExchangesModels, LocalSteps, SplitServer):
    """Split learning with a local loss: a client trains on its own (`client_local_step`:
    forward, local loss, backward, SGD step) and uploads activations after each step
    (`LocalStep.upload`); `server_step` consumes one upload and replies nothing."""


class FederatedTrainer(RoundTrainer, ExchangesModels, LocalSteps):
    """Federated learning: the whole model trains on the client, T steps a round."""


class AppliedUpdate(NamedTuple):
    """What the server of an asynchronous algorithm did with a client's arriving model:
    `version` is the global model version the update is part of (the one it created, or, when
    it was buffered, the next one), `staleness` the server's version when the update arrived
    minus the version the client downloaded (0: nothing was applied meanwhile), `applied`
    whether a new global version exists now, `contributors` the clients whose updates that new
    version took (empty when the update was buffered)."""

    version: int
    staleness: int
    applied: bool
    contributors: tuple[int, ...] = ()


class AsyncTrainer(Trainer):
    """A trainer without rounds: a driver starts each client (`client_start`), and the server
    applies or buffers each trained model when it arrives (`server_apply`)."""

    #: the global model versions applied so far (0: the initial model)
    version: int = 0

    @abstractmethod
    def client_start(self, k: int) -> None:
        """Client k begins training (its batch size, a model slot); its download follows."""

    @abstractmethod
    def server_apply(self, message: Any) -> AppliedUpdate:
        """Client `message.client_id`'s trained model has arrived: apply or buffer it."""


class AsyncFederatedTrainer(AsyncTrainer, ExchangesModels, LocalSteps):
    """Asynchronous federated learning: a client downloads the global model as it is when its
    download starts, trains T local steps on it, and uploads; the server applies each upload
    when it arrives (FedAsync) or buffers it (FedBuff)."""


class AsyncSplitTrainer(AsyncTrainer, ExchangesModels, SplitClient, SplitServer):
    """Asynchronous split learning (async_sfl, GAS): a client downloads the global client-side
    model as it is when its download starts, then in each of its T local iterations sends
    its activations up; `server_step` receives that one upload when the server processor
    takes it (arrival order, no barrier) and replies with its gradient; after T iterations
    the client uploads its model and `server_apply` mixes it in or buffers it (`version`
    counts the global client-side model's versions)."""
