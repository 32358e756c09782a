"""A Flower strategy over the package's clients, as Flower's own `Strategy.start` plays a
round (issue 65), on the run's clock:
- `configure_train(round, global arrays, config, grid)`: the strategy builds one train
  message per client. It samples the clients through flwr's `sample_nodes`, whose
  `random.sample` is given, for the call, the clients the run's own selector drew from the
  run's seeded stream (the same clients the package's `fedavg` trains with the same seed);
  a strategy asking for another number of clients is refused. The config says the run's
  `local-steps` T (flwr adds `server-round`; FedProx adds `proximal-mu`).
- `grid.send_and_receive(messages, timeout)`: the run's SimulatedGrid (scala_netsim.flower.
  grid) carries each message on the cell or network: its arrays down, the client's ClientApp
  called in-process, its compute at the client's FLOP/s, the reply's arrays up. `timeout` is
  the round's deadline (training.deadline_s): late clients are dropped and send no reply.
- `aggregate_train(round, replies)`: the strategy's arrays become the global model.
- No federated evaluation (fraction_evaluate 0): the package evaluates the global model on
  the test set as for every algorithm.

The clients' ClientApp is the package's (`client_app`): the client loads the message's arrays,
trains as the package's FedAvg client does (its batch size B_k, T local SGD steps, the
optimiser settings; FedProx's `proximal-mu` adds mu (w - w_g) to each gradient before the
step) and replies with its trained weights (an ArrayRecord under "arrays") and a MetricRecord
("metrics": `num-examples` |D_k|, `train_loss`, the mean loss of its local steps, which
QFedAvg weighs, and each step's FLOPs as the package's meter measured them). Its download,
steps and upload are then FedAvg's on the clock: the same bytes, FLOPs and seconds. Integer
buffers (BatchNorm's batch count) travel in a second ArrayRecord ("buffers") beside the
arrays: counted on the wire, out of the strategy's arithmetic (the global model takes the
first reply's, as the package's FedAvg does).

What survives a resume: the round counter and the strategy's state that outlives a round
(FedOpt's m_t and v_t, FedAvgM's momentum), as tensors (`extra_state`)."""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import strategy as strategies
from flwr.serverapp.strategy import strategy_utils
from torch import nn

from scala_netsim.algorithms.common import ClientData
from scala_netsim.algorithms.config import FlowerConfig
from scala_netsim.algorithms.federated import FedAvg
from scala_netsim.flower.grid import NODE_BASE, SimulatedGrid, array_bytes, identity
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
    """The package's FedAvg clients under a Flower strategy (the module's docstring). Outside
    a round the strategy plays through the grid (a timing-only run's metering), the client
    side is the package's FedAvg, which the package's ClientApp runs."""

    def __init__(self, features: nn.Module, head: nn.Module, data: ClientData, *args: Any,
                 flower: FlowerConfig, **kwargs: Any) -> None:
        super().__init__(features, head, data, *args, **kwargs)
        self.config = flower
        self.grid = SimulatedGrid(client_app(self), data.num_clients)
        # (every strategy the scenario may name derives from flwr's FedAvg)
        self.strategy: strategies.FedAvg | None = None
        self._saved: dict = {}        # a resumed strategy's state, set once it is built
        self.server_round = 0
        self._steps: dict[int, tuple[tuple[int, int], ...]] = {}
        self._losses: dict[int, list[torch.Tensor]] = {}
        self._anchors: dict[int, list[torch.Tensor]] = {}
        self._mu = 0.0
        # a strategy aggregates its own way: no |D_k| weights for the run's check of them
        self.aggregations = None  # type: ignore[assignment]

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"flower": config}

    # --- a round --------------------------------------------------------------------------
    def arrays(self) -> ArrayRecord:
        """The global model's floating-point tensors (weights, BatchNorm's statistics) as an
        ArrayRecord under their state-dict names: what the strategy aggregates."""
        return ArrayRecord({n: t for n, t in self.model.state_dict().items()
                            if t.is_floating_point()})

    def buffers(self) -> ArrayRecord:
        """The global model's integer tensors (BatchNorm's batch count)."""
        return ArrayRecord({n: t for n, t in self.model.state_dict().items()
                            if not t.is_floating_point()})

    def begin_round(self, selected: Sequence[int]) -> None:
        super().begin_round(selected)
        self.aggregations = None  # type: ignore[assignment]
        if self.strategy is None:
            self.strategy = build_strategy(self.config, self.grid.num_clients, len(selected),
                                           float(self.optim_args["lr"]))
            for name, value in self._saved.items():
                setattr(self.strategy, name, _as_arrays(value))
        # this round's number of clients (a timing-only run meters a batch size with fewer)
        self.strategy.fraction_train = (len(selected) + 0.5) / self.grid.num_clients
        self.strategy.min_train_nodes = len(selected)
        self.server_round += 1
        self.grid.round = self.server_round
        self._selected = list(selected)
        self._steps, self._anchors = {}, {}
        self._losses = {k: [] for k in selected}

    def play_round(self, local_steps: int, timeout_s: float | None) -> None:
        """The round as Flower's `Strategy.start` plays it (the module's docstring); the
        grid's clock is the run's (the protocol gave it the round)."""
        assert self.strategy is not None
        with identity(SUPERLINK_NODE_ID), _sampling([k + NODE_BASE for k in self._selected]):
            messages = list(self.strategy.configure_train(
                self.server_round, self.arrays(), ConfigRecord({"local-steps": local_steps}),
                self.grid))
        buffers = self.buffers()
        for message in messages:
            if buffers:
                message.content["buffers"] = buffers
        replies = self.grid.send_and_receive(messages, timeout=timeout_s)
        counters = [reply.content.array_records.pop("buffers", None) for reply in replies]
        aggregate, _ = self.strategy.aggregate_train(self.server_round, replies)
        if aggregate is None:         # no reply: every client dropped
            return
        with torch.no_grad():
            for name, dst in self.model.state_dict().items():
                source = aggregate if dst.is_floating_point() else counters[0]
                assert source is not None
                dst.copy_(torch.from_numpy(source[name].numpy()))

    # --- the package's ClientApp: client k trains on the message it was sent --------------
    def train_client(self, message: Message, context: Context) -> Message:
        """Client `partition-id` loads the message's arrays, takes its T local steps as the
        package's FedAvg client and replies (the module's docstring)."""
        k = int(context.node_config["partition-id"])
        arrays = message.content.array_records["arrays"]
        buffers = message.content.array_records.get("buffers", ArrayRecord())
        state = self.model.state_dict()
        tensors = tuple(torch.from_numpy((arrays if t.is_floating_point() else buffers)[n]
                                         .numpy()).to(t.device) for n, t in state.items())
        FedAvg.client_receive_model(self, ModelMessage(k, tensors))
        config = message.content.config_records["config"]
        self._mu = float(config.get("proximal-mu", 0.0))   # type: ignore[arg-type]
        if self._mu:    # the proximal term's anchor: the weights the client was sent
            self._anchors[k] = [p.detach().clone() for p in self.slots[k][0].parameters()]
        steps = [FedAvg.client_local_step(self, k, t)
                 for t in range(int(config["local-steps"]))]  # type: ignore[arg-type]
        trained = FedAvg.client_model_upload(self, k).tensors
        losses = self._losses[k]
        reply = RecordDict({
            "arrays": ArrayRecord({n: t for n, t in zip(state, trained, strict=True)
                                   if t.is_floating_point()}),
            "metrics": MetricRecord({
                "num-examples": self.sampler.num_samples(k),
                "train_loss": float(torch.stack(losses).mean()) if losses else 0.0,
                "flops-forward": [s.forward_flops for s in steps],
                "flops-backward": [s.backward_flops for s in steps]})})
        counters = {n: t for n, t in zip(state, trained, strict=True)
                    if not t.is_floating_point()}
        if counters:
            reply["buffers"] = ArrayRecord(counters)
        return Message(reply, reply_to=message)

    def local_loss(self, k: int, features: torch.Tensor, logits: torch.Tensor,
                   labels: torch.Tensor) -> torch.Tensor:
        loss = super().local_loss(k, features, logits, labels)
        self._losses.setdefault(k, []).append(loss.detach())
        return loss

    @torch.no_grad()
    def adjust_gradients(self, k: int, model: nn.Module) -> None:
        """FedProx's proximal term, mu (w - w_g), where the round's config asks for it."""
        if self._mu:
            for p, g in zip(model.parameters(), self._anchors[k], strict=True):
                if p.grad is not None:
                    p.grad.add_(p - g, alpha=self._mu)

    # --- the trainer contract as the protocol carries node k's message ---------------------
    def _in_grid(self, k: int) -> bool:
        return self.grid.carry is not None and k + NODE_BASE in self.grid.pushed

    def client_model_download(self, k: int) -> ModelMessage:
        """Client k's message, its arrays' bytes on the wire."""
        if not self._in_grid(k):
            return super().client_model_download(k)
        return ModelMessage(k, (), wire_bytes=array_bytes(
            self.grid.outgoing(k + NODE_BASE).content))

    def client_receive_model(self, message: ModelMessage) -> None:
        """(the ClientApp loads the message's arrays when it is called)"""
        if not self._in_grid(message.client_id):
            super().client_receive_model(message)

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        """Local iteration 0 calls client k's ClientApp (all its steps); each iteration is
        then timed with the FLOPs the reply reports for it (0 past those it reports)."""
        if not self._in_grid(k):
            return super().client_local_step(k, local_iter)
        if local_iter == 0:
            self._steps[k] = self.grid.deliver(k + NODE_BASE).steps
        steps = self._steps[k]
        return LocalStep(*steps[local_iter]) if local_iter < len(steps) else LocalStep(0, 0)

    def client_model_upload(self, k: int) -> ModelMessage:
        """Client k's reply, its arrays' bytes on the wire."""
        if not self._in_grid(k):
            return super().client_model_upload(k)
        return ModelMessage(k, (), wire_bytes=array_bytes(
            self.grid.reply(k + NODE_BASE).content))

    def server_receive_model(self, message: ModelMessage) -> None:
        if not self._in_grid(message.client_id):
            super().server_receive_model(message)
        else:
            self.grid.arrived(message.client_id + NODE_BASE)

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


def client_app(trainer: FlowerFedAvg) -> ClientApp:
    """The package's clients as a Flower ClientApp: a train message is answered by
    `trainer.train_client`."""
    app = ClientApp()

    @app.train()
    def train(message: Message, context: Context) -> Message:
        return trainer.train_client(message, context)

    return app
