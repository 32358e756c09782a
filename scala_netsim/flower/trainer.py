"""A Flower strategy over the package's FedAvg clients (issue 65).

Each round, as Flower's own `Strategy.start` loop does it, but on the run's clock:
- `configure_train(round, global arrays, config, grid)`: the strategy builds one train
  message per client. It samples the clients through flwr's `sample_nodes`, whose
  `random.sample` is given, for the call, the clients the run's own selector drew from the
  run's seeded stream (the same clients the package's `fedavg` trains with the same seed);
  a strategy asking for another number of clients is refused. Client k is Flower node
  k + NODE_BASE (node 1 is the SuperLink's).
- Each client trains as the package's FedAvg client does (its batch size B_k, T local SGD
  steps, the optimiser settings), with what its message's config asks for: FedProx's
  `proximal-mu` adds mu (w - w_g) to each gradient before the step. Its download, steps
  and upload are FedAvg's on the clock (the same bytes and FLOPs).
- `aggregate_train(round, replies)`: each reply holds the client's trained weights (an
  ArrayRecord under "arrays") and a MetricRecord ("metrics": `num-examples` |D_k|, and
  `train_loss`, the mean loss of its local steps, which QFedAvg weighs); the strategy's
  arrays become the global model. A client the network dropped sends no reply.
- No federated evaluation (fraction_evaluate 0): the package evaluates the global model on
  the test set as for every algorithm.

What survives a resume: the round counter and the strategy's state that outlives a round
(FedOpt's m_t and v_t, FedAvgM's momentum), as tensors (`extra_state`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any, cast

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import Grid
from flwr.serverapp import strategy as strategies
from flwr.serverapp.strategy import strategy_utils
from flwr.supercore.task_identity import TaskIdentity
from torch import nn

from scala_netsim.algorithms.common import ClientData
from scala_netsim.algorithms.config import FlowerConfig
from scala_netsim.algorithms.federated import FedAvg

# flwr logs each round's sampling and aggregation at INFO: a run prints its own progress
logging.getLogger("flwr").setLevel(logging.WARNING)

#: client k is Flower node k + NODE_BASE (node 1 is the SuperLink's, 0 is never a node)
NODE_BASE = 2
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
    if config.strategy == "QFedAvg":
        options.setdefault("client_learning_rate", client_lr)
    logger = logging.getLogger("flwr")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return getattr(strategies, config.strategy)(
            **options, fraction_train=fraction, fraction_evaluate=0.0,
            min_train_nodes=num_selected, min_evaluate_nodes=0,
            min_available_nodes=num_clients)
    finally:
        logger.setLevel(level)


class Nodes:
    """What a strategy reads of its grid when it configures a round: the node ids (flwr's
    `sample_nodes` asks for nothing else), the run's clients as Flower nodes. Nothing is
    sent through it: the run's protocol carries the messages on its clock."""

    def __init__(self, num_clients: int) -> None:
        self.num_clients = num_clients

    def get_node_ids(self) -> range:
        return range(NODE_BASE, NODE_BASE + self.num_clients)


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


def _as_tensors(value: Any) -> Any:
    """A strategy's state with its NumPy arrays as tensors (a checkpoint holds tensors)."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, copy=True))
    if isinstance(value, dict):
        return {k: _as_tensors(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_tensors(v) for v in value]
    return value


def _as_arrays(value: Any) -> Any:
    """`_as_tensors` undone (a resumed run's tensors are on its device: back to the CPU)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, dict):
        return {k: _as_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_arrays(v) for v in value]
    return value


class FlowerFedAvg(FedAvg):
    """The package's FedAvg clients under a Flower strategy (the module's docstring)."""

    def __init__(self, features: nn.Module, head: nn.Module, data: ClientData, *args: Any,
                 flower: FlowerConfig, **kwargs: Any) -> None:
        super().__init__(features, head, data, *args, **kwargs)
        self.config = flower
        self.nodes = Nodes(data.num_clients)
        # (every strategy the scenario may name derives from flwr's FedAvg)
        self.strategy: strategies.FedAvg | None = None
        self._saved: dict = {}        # a resumed strategy's state, set once it is built
        self.server_round = 0
        self._sent: dict[int, Message] = {}
        self._losses: dict[int, list[torch.Tensor]] = {}
        self._mu = 0.0
        self._global: list[torch.Tensor] = []
        # a strategy aggregates its own way: no |D_k| weights for the run's check of them
        self.aggregations = None  # type: ignore[assignment]

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"flower": config}

    # --- a round --------------------------------------------------------------------------
    def arrays(self) -> ArrayRecord:
        """The global model's floating-point tensors (weights, BatchNorm's statistics) as an
        ArrayRecord under their state-dict names. Integer counters (BatchNorm's batch count)
        stay out of the strategy's arithmetic: the global model takes the first reply's, as
        the package's FedAvg does."""
        return ArrayRecord({n: t for n, t in self.model.state_dict().items()
                            if t.is_floating_point()})

    def begin_round(self, selected: Sequence[int]) -> None:
        super().begin_round(selected)
        self.aggregations = None  # type: ignore[assignment]
        if self.strategy is None:
            self.strategy = build_strategy(self.config, self.nodes.num_clients, len(selected),
                                           float(self.optim_args["lr"]))
            for name, value in self._saved.items():
                setattr(self.strategy, name, _as_arrays(value))
        # this round's number of clients (a timing-only run meters a batch size with fewer)
        self.strategy.fraction_train = (len(selected) + 0.5) / self.nodes.num_clients
        self.strategy.min_train_nodes = len(selected)
        self.server_round += 1
        _identity()
        with _sampling([k + NODE_BASE for k in selected]):
            messages = list(self.strategy.configure_train(
                self.server_round, self.arrays(), ConfigRecord(), cast(Grid, self.nodes)))
        self._sent = {m.metadata.dst_node_id - NODE_BASE: m for m in messages}
        config = messages[0].content.config_records.get("config", ConfigRecord())
        self._mu = float(config.get("proximal-mu", 0.0))   # type: ignore[arg-type]
        # the round's global weights, the proximal term's anchor (a copy only where used)
        self._global = ([p.detach().clone() for p in self.model.parameters()] if self._mu
                        else [])
        self._losses = {k: [] for k in selected}

    def local_loss(self, k: int, features: torch.Tensor, logits: torch.Tensor,
                   labels: torch.Tensor) -> torch.Tensor:
        loss = super().local_loss(k, features, logits, labels)
        self._losses[k].append(loss.detach())
        return loss

    @torch.no_grad()
    def adjust_gradients(self, k: int, model: nn.Module) -> None:
        """FedProx's proximal term, mu (w - w_g), where the round's config asks for it."""
        if self._mu:
            for p, g in zip(model.parameters(), self._global, strict=True):
                if p.grad is not None:
                    p.grad.add_(p - g, alpha=self._mu)

    def end_round(self) -> None:
        assert self.strategy is not None
        state = self.model.state_dict()
        replies = []
        for upload in self._uploads:            # (in client-id order)
            k = upload.client_id
            losses = self._losses[k]
            metrics = MetricRecord({
                "num-examples": self.sampler.num_samples(k),
                "train_loss": float(torch.stack(losses).mean()) if losses else 0.0})
            arrays = ArrayRecord({n: t for n, t in zip(state, upload.tensors, strict=True)
                                  if t.is_floating_point()})
            replies.append(Message(RecordDict({"arrays": arrays, "metrics": metrics}),
                                   reply_to=self._sent[k]))
        aggregate, _ = self.strategy.aggregate_train(self.server_round, replies)
        if aggregate is None:         # no reply: every client dropped
            return
        with torch.no_grad():
            for (name, dst), first in zip(state.items(), self._uploads[0].tensors, strict=True):
                dst.copy_(first if not dst.is_floating_point()
                          else torch.from_numpy(aggregate[name].numpy()))

    # --- resume ---------------------------------------------------------------------------
    def extra_state(self) -> dict:
        state = {name: _as_tensors(getattr(self.strategy, name)) for name in STRATEGY_STATE
                 if getattr(self.strategy, name, None) is not None}
        return {**super().extra_state(), "server_round": self.server_round, "strategy": state}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state({k: v for k, v in state.items()
                                  if k not in ("server_round", "strategy")})
        self.server_round = int(state["server_round"])
        self._saved = dict(state["strategy"])   # (applied when the next round builds it)
        self.strategy = None


def _identity() -> None:
    """The server's Flower task identity (flwr's Message needs one to address a message),
    as flwr's own in-process server sets it."""
    TaskIdentity.task_id = 1
    TaskIdentity.run_id = 0
    TaskIdentity.node_id = SUPERLINK_NODE_ID
