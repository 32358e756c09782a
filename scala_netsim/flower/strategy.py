"""A round of a Flower strategy on the run's clock, as Flower's own `Strategy.start` plays it
(issue 65), shared by the package's clients (scala_netsim.flower.trainer) and a user's
ClientApp (scala_netsim.flower.apps):
- `configure_train(round, global arrays, config, grid)`: the strategy builds one train
  message per client. It samples the clients through flwr's `sample_nodes`, whose
  `random.sample` is given, for the call, the clients the run's own selector drew from the
  run's seeded stream; a strategy asking for another number of clients is refused. The
  config says the run's `local-steps` T (flwr adds `server-round`; FedProx adds
  `proximal-mu`), beside a user's `flower.train_config` (a ServerApp's train_config).
- `grid.send_and_receive(messages, timeout)`: the run's SimulatedGrid (scala_netsim.flower.
  grid) carries each message on the cell or network: its arrays down, the client's ClientApp
  called in-process, its compute at the client's FLOP/s, the reply's arrays up. `timeout` is
  the round's deadline (training.deadline_s): late clients are dropped and send no reply.
- `aggregate_train(round, replies)`: the strategy's arrays become the global model.
- No federated evaluation (fraction_evaluate 0): the run evaluates the global model itself.

The strategy: one of flwr's twelve by name, or a user's subclass of flwr's FedAvg by import
path (`flower.strategy: module:Class`). What survives a resume: the round counter and the
strategy's state that outlives a round (FedOpt's m_t and v_t, FedAvgM's momentum), as
tensors, and a user's strategy's own `extra_state()` (restored by its
`load_extra_state(state)`); a user's strategy without them cannot resume, and says so
(`strategy_state`)."""

from __future__ import annotations

import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Message
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import strategy as strategies
from flwr.serverapp.strategy import strategy_utils

from scala_netsim.algorithms.config import FlowerConfig
from scala_netsim.core.errors import RefusedError
from scala_netsim.flower.grid import (
    NODE_BASE,
    FlowerAppError,
    SimulatedGrid,
    array_bytes,
    identity,
    is_number,
)
from scala_netsim.learn.contract import LocalStep
from scala_netsim.learn.messages import ModelMessage

# flwr logs each round's sampling and aggregation at INFO: a run prints its own progress
logging.getLogger("flwr").setLevel(logging.WARNING)

#: the strategy attributes that outlive a round (FedOpt's moments, FedAvgM's momentum)
STRATEGY_STATE = ("m_t", "v_t", "momentum_vector")


def build_strategy(config: FlowerConfig, num_clients: int, num_selected: int,
                   client_lr: float) -> strategies.FedAvg:
    """The scenario's strategy with its options, sampling `num_selected` of `num_clients`
    (fraction_train (n + 1/2) / K: flwr takes int(K x fraction)), no federated evaluation
    (flwr's warning that it is skipped is not shown: the run says so). QFedAvg's
    client_learning_rate, unless an option sets it, is the clients' (training.lr)."""
    fraction = (num_selected + 0.5) / num_clients
    options = dict(config.options)
    cls = config.strategy_class()
    if issubclass(cls, strategies.QFedAvg):
        options.setdefault("client_learning_rate", client_lr)
    logger = logging.getLogger("flwr")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return cls(
            **options, fraction_train=fraction, fraction_evaluate=0.0,
            min_train_nodes=num_selected, min_evaluate_nodes=0,
            min_available_nodes=num_clients)
    finally:
        logger.setLevel(level)


class _Drawn:
    """`random` for flwr's sample_nodes while a strategy configures a round: its `sample`
    gives the nodes the run's selector drew."""

    def __init__(self, nodes: Sequence[int]) -> None:
        self.nodes = list(nodes)

    def sample(self, population: Sequence[int], k: int) -> list[int]:
        if k != len(self.nodes) or not set(self.nodes) <= set(population):
            raise ValueError(f"the Flower strategy asks for {k} of {len(population)} nodes; "
                             f"the run selected {len(self.nodes)} (training.participation)")
        return list(self.nodes)


@contextlib.contextmanager
def _sampling(nodes: Sequence[int]) -> Iterator[None]:
    previous = strategy_utils.random
    strategy_utils.random = _Drawn(nodes)  # type: ignore[assignment]
    try:
        yield
    finally:
        strategy_utils.random = previous


def as_tensors(value: Any) -> Any:
    """A strategy's state with its NumPy arrays and scalars as tensors, its tuples as lists
    (what a checkpoint read with weights_only holds)."""
    if isinstance(value, np.ndarray | np.generic):
        return torch.from_numpy(np.array(value, copy=True))
    if isinstance(value, dict):
        return {k: as_tensors(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_tensors(v) for v in value]
    return value


def as_arrays(value: Any) -> Any:
    """`as_tensors` undone (a resumed run's tensors are on its device: back to the CPU)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, dict):
        return {k: as_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_arrays(v) for v in value]
    return value


class StrategyRounds(ABC):
    """A trainer whose rounds a Flower strategy plays through its grid (the module's
    docstring). It provides the federated trainer contract's model hand-offs as the run's
    protocol carries each node's message; outside a round the strategy plays (a timing-only
    run's metering) they are the next class's in the trainer's bases."""

    def _init_rounds(self, config: FlowerConfig, grid: SimulatedGrid, client_lr: float) -> None:
        self.config, self.grid, self.client_lr = config, grid, client_lr
        # (every strategy the scenario may name derives from flwr's FedAvg)
        self.strategy: strategies.FedAvg | None = None
        self._saved: dict = {}        # a resumed strategy's state, set once it is built
        self._saved_user: Any = None  # (a user's strategy's own)
        self.server_round = 0
        self._selected: list[int] = []
        self._steps: dict[int, tuple[tuple[int, int], ...]] = {}
        self._local_steps = 0

    # --- what a trainer supplies ------------------------------------------------------------
    @abstractmethod
    def global_arrays(self) -> ArrayRecord:
        """The global model the strategy aggregates, as arrays."""

    @abstractmethod
    def take_aggregate(self, aggregate: ArrayRecord, buffers: list[ArrayRecord]) -> None:
        """The strategy's aggregate becomes the global model; `buffers`: the replies'
        "buffers" records, in node order (what the strategy does not aggregate)."""

    def prepare(self, messages: list[Message]) -> None:  # noqa: B027 (a hook)
        """Add to the round's messages what the trainer's clients need beside the strategy's
        records (nothing here)."""

    # --- a round ----------------------------------------------------------------------------
    def begin_strategy_round(self, selected: Sequence[int]) -> None:
        """Build (or restore) the strategy and set this round's number of clients (a
        timing-only run meters a batch size with fewer)."""
        if self.strategy is None:
            self.strategy = build_strategy(self.config, self.grid.num_clients, len(selected),
                                           self.client_lr)
            for name, value in self._saved.items():
                setattr(self.strategy, name, as_arrays(value))
            if self._saved_user is not None:      # a user's strategy's own, restored
                self.strategy.load_extra_state(as_arrays(self._saved_user))  # type: ignore[attr-defined]
        self.strategy.fraction_train = (len(selected) + 0.5) / self.grid.num_clients
        self.strategy.min_train_nodes = len(selected)
        self.server_round += 1
        self.grid.round = self.server_round
        self._selected = list(selected)
        self._steps = {}

    def play_round(self, local_steps: int, timeout_s: float | None) -> None:
        """The round as Flower's `Strategy.start` plays it; the grid's clock is the run's
        (the protocol gave it the round)."""
        assert self.strategy is not None
        self._local_steps = local_steps
        with identity(SUPERLINK_NODE_ID), _sampling([k + NODE_BASE for k in self._selected]):
            messages = list(self.strategy.configure_train(
                self.server_round, self.global_arrays(),
                ConfigRecord({**self.config.train_config, "local-steps": local_steps}),
                self.grid))
        self._check_addressed(messages)
        self.prepare(messages)
        replies = self.grid.send_and_receive(messages, timeout=timeout_s)
        buffers = [reply.content.array_records.pop("buffers", ArrayRecord())
                   for reply in replies]
        self._check_losses(replies)
        try:
            aggregate, _ = self.strategy.aggregate_train(self.server_round, replies)
        except Exception as error:
            raise FlowerAppError(
                f"flower: round {self.server_round}: {type(self.strategy).__name__}."
                f"aggregate_train raised {type(error).__name__}: {error}") from error
        if aggregate is not None:       # None: no reply (every client dropped)
            self.take_aggregate(aggregate, buffers)

    def _check_addressed(self, messages: list[Message]) -> None:
        """The round's messages go to the clients the run selected, one each (a strategy
        that builds its own list of nodes is stopped here, naming the difference)."""
        addressed = [message.metadata.dst_node_id - NODE_BASE for message in messages]
        if sorted(addressed) != sorted(self._selected):
            raise FlowerAppError(
                f"flower: round {self.server_round}: {type(self.strategy).__name__}."
                f"configure_train addressed clients {sorted(addressed)}; the run selected "
                f"{sorted(self._selected)} (one message each: a strategy's clients are those "
                f"its sample_nodes draws, the run's selection)")

    def _check_losses(self, replies: list[Message]) -> None:
        """A strategy that weighs the clients' train losses (QFedAvg's `train_loss_key`)
        gets a number under that key from every reply."""
        key = getattr(self.strategy, "train_loss_key", None)
        if key is None:
            return
        for reply in replies:
            metrics = next(iter(reply.content.metric_records.values()))
            loss = metrics.get(key)
            if not is_number(loss):
                raise self.grid.client_error(
                    reply.metadata.src_node_id,
                    f"its reply's {key!r} is {loss!r}; {type(self.strategy).__name__} weighs "
                    f"each client by its train loss (one number)")

    # --- the trainer contract as the protocol carries node k's message ---------------------
    def in_grid(self, k: int) -> bool:
        """Is client k's message on the grid (a round the strategy plays)?"""
        return self.grid.carry is not None and k + NODE_BASE in self.grid.pushed

    def client_model_download(self, k: int) -> ModelMessage:
        """Client k's message, its arrays' bytes on the wire."""
        if not self.in_grid(k):
            return super().client_model_download(k)  # type: ignore[misc]
        return ModelMessage(k, (), wire_bytes=array_bytes(
            self.grid.outgoing(k + NODE_BASE).content))

    def client_receive_model(self, message: ModelMessage) -> None:
        """(the ClientApp loads the message's arrays when it is called)"""
        if not self.in_grid(message.client_id):
            super().client_receive_model(message)  # type: ignore[misc]

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        """Local iteration 0 calls client k's ClientApp (all its steps); each iteration is
        then timed with the FLOPs the reply reports for it (0 past those it reports)."""
        if not self.in_grid(k):
            return super().client_local_step(k, local_iter)  # type: ignore[misc]
        if local_iter == 0:
            delivered = self.grid.deliver(k + NODE_BASE)
            if not delivered.counted and len(delivered.steps) != self._local_steps:
                raise self.grid.client_error(
                    k + NODE_BASE, f"its reply reports {len(delivered.steps)} steps' FLOPs, "
                                   f"the round has local-steps {self._local_steps} "
                                   f"(training.local_iters)")
            self._steps[k] = delivered.steps
        steps = self._steps[k]
        return LocalStep(*steps[local_iter]) if local_iter < len(steps) else LocalStep(0, 0)

    def client_model_upload(self, k: int) -> ModelMessage:
        """Client k's reply, its arrays' bytes on the wire."""
        if not self.in_grid(k):
            return super().client_model_upload(k)  # type: ignore[misc]
        return ModelMessage(k, (), wire_bytes=array_bytes(
            self.grid.reply(k + NODE_BASE).content))

    def server_receive_model(self, message: ModelMessage) -> None:
        if not self.in_grid(message.client_id):
            super().server_receive_model(message)  # type: ignore[misc]
        else:
            self.grid.arrived(message.client_id + NODE_BASE)

    # --- resume -----------------------------------------------------------------------------
    def strategy_state(self) -> dict:
        """The round counter and the strategy's state that outlives a round, as tensors: the
        built-in strategies' attributes (STRATEGY_STATE), and a user's strategy's own
        `extra_state()` where it defines one (None where it does not: such a run cannot
        resume)."""
        if self.strategy is None:                  # (restored, not yet rebuilt)
            state, user = dict(self._saved), self._saved_user
        else:
            state = {name: as_tensors(getattr(self.strategy, name))
                     for name in STRATEGY_STATE
                     if getattr(self.strategy, name, None) is not None}
            own = getattr(self.strategy, "extra_state", None)
            user = as_tensors(own()) if own is not None else None
        saved = {"server_round": self.server_round, "strategy": state}
        return {**saved, "user_strategy": user} if self.config.user_strategy else saved

    def load_strategy_state(self, state: dict) -> None:
        """Restore `strategy_state` (applied when the next round builds the strategy); a
        user's strategy that saves no state of its own is refused past round 0."""
        self.server_round = int(state["server_round"])
        self._saved = dict(state["strategy"])
        self._saved_user = state.get("user_strategy")
        keeps = (self._saved_user is not None
                 and callable(getattr(self.config.strategy_class(), "load_extra_state", None)))
        if self.config.user_strategy and not keeps and self.server_round:
            raise RefusedError(
                f"flower.strategy: {self.config.strategy} does not define both extra_state() "
                f"and load_extra_state(state), so what it keeps from round to round is not in "
                f"the checkpoint of round {self.server_round}: its run cannot resume; run it "
                f"from the start (--force), or give the class those two methods")
        self.strategy = None
