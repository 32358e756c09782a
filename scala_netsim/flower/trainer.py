"""The package's clients under a Flower strategy (issue 65): `algorithms: [flower]` without a
`flower.client_app`. The strategy plays each round through the run's grid
(scala_netsim.flower.strategy); the clients' ClientApp is the package's (`client_app`): the
client loads the message's arrays, trains as the package's FedAvg client does (its batch size
B_k, T local SGD steps, the optimiser settings; FedProx's `proximal-mu` adds mu (w - w_g) to
each gradient before the step) and replies with its trained weights (an ArrayRecord under
"arrays") and a MetricRecord ("metrics": `num-examples` |D_k|, `train_loss`, the mean loss of
its local steps, which QFedAvg weighs, and each step's FLOPs as the package's meter measured
them). Its download, steps and upload are then FedAvg's on the clock: the same bytes, FLOPs
and seconds. Integer buffers (BatchNorm's batch count) travel in a second ArrayRecord
("buffers") beside the arrays: counted on the wire, out of the strategy's arithmetic (the
global model takes the first reply's, as the package's FedAvg does). The package evaluates
the global model on the test set as for every algorithm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from torch import nn

from scala_netsim.algorithms.common import ClientData
from scala_netsim.algorithms.config import FlowerConfig
from scala_netsim.algorithms.federated import FedAvg
from scala_netsim.flower.grid import SimulatedGrid
from scala_netsim.flower.strategy import StrategyRounds
from scala_netsim.learn.messages import ModelMessage


class FlowerFedAvg(StrategyRounds, FedAvg):
    """The package's FedAvg clients under a Flower strategy (the module's docstring). Outside
    a round the strategy plays through the grid (a timing-only run's metering), the client
    side is the package's FedAvg, which the package's ClientApp runs."""

    def __init__(self, features: nn.Module, head: nn.Module, data: ClientData, *args: Any,
                 flower: FlowerConfig, **kwargs: Any) -> None:
        super().__init__(features, head, data, *args, **kwargs)
        self._init_rounds(flower, SimulatedGrid(client_app(self), data.num_clients,
                                                   reports_flops=True),
                          float(self.optim_args["lr"]))
        self._losses: dict[int, list[torch.Tensor]] = {}
        self._anchors: dict[int, list[torch.Tensor]] = {}
        self._mu = 0.0
        # a strategy aggregates its own way: no |D_k| weights for the run's check of them
        self.aggregations = None  # type: ignore[assignment]

    @classmethod
    def hyper_parameters(cls, config: Any) -> dict:
        return {"flower": config}

    @classmethod
    def from_setup(cls, setup: Any, config: Any = None) -> Any:
        """The package's clients, or a user's ClientApp where `flower.client_app` names one
        (scala_netsim.flower.apps)."""
        if config is not None and config.client_app is not None:
            from scala_netsim.flower.apps import FlowerApps

            return FlowerApps.from_setup(setup, config)
        return super().from_setup(setup, config)

    # --- a round --------------------------------------------------------------------------
    def global_arrays(self) -> ArrayRecord:
        """The global model's floating-point tensors (weights, BatchNorm's statistics) as an
        ArrayRecord under their state-dict names: what the strategy aggregates."""
        return ArrayRecord({n: t for n, t in self.model.state_dict().items()
                            if t.is_floating_point()})

    def prepare(self, messages: list[Message]) -> None:
        """The global model's integer tensors (BatchNorm's batch count) beside the arrays."""
        buffers = ArrayRecord({n: t for n, t in self.model.state_dict().items()
                               if not t.is_floating_point()})
        for message in messages:
            if buffers:
                message.content["buffers"] = buffers

    def take_aggregate(self, aggregate: ArrayRecord, buffers: list[ArrayRecord]) -> None:
        with torch.no_grad():
            for name, dst in self.model.state_dict().items():
                source = aggregate if dst.is_floating_point() else buffers[0]
                dst.copy_(torch.from_numpy(source[name].numpy()))

    def begin_round(self, selected: Sequence[int]) -> None:
        super().begin_round(selected)
        self.aggregations = None  # type: ignore[assignment]
        self.begin_strategy_round(selected)
        self._anchors = {}
        self._losses = {k: [] for k in selected}

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

    # --- resume ---------------------------------------------------------------------------
    def extra_state(self) -> dict:
        return {**super().extra_state(), **self.strategy_state()}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state({k: v for k, v in state.items()
                                  if k not in ("server_round", "strategy")})
        self.load_strategy_state(state)


def client_app(trainer: FlowerFedAvg) -> ClientApp:
    """The package's clients as a Flower ClientApp: a train message is answered by
    `trainer.train_client`."""
    app = ClientApp()

    @app.train()
    def train(message: Message, context: Context) -> Message:
        return trainer.train_client(message, context)

    return app
