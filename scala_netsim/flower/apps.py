"""A user's own Flower ClientApp on the run's clock (issue 65): `algorithms: [flower]` with
`flower.client_app: module:app`.

The app brings its own model and data (a client reads which part it holds from its
Context's node_config: `partition-id` k of `num-partitions` K, Flower's convention); the run
brings the clients' places, radio and FLOP/s, their selection from its seeded stream, and the
strategy. Three things of the user's, by import path (`module:attribute`, imported as Python
imports any module: on its path, i.e. from the folder `python -m` runs in, or PYTHONPATH):
- `client_app`: the flwr ClientApp, called in-process on each train message;
- `initial_arrays`: a function returning the initial global model (an ArrayRecord, a state
  dict or a torch module), what a ServerApp passes `Strategy.start`;
- `evaluate_fn`: Flower's `evaluate_fn(server_round, arrays) -> MetricRecord`, with
  `accuracy` (and `loss`): the run's evaluation of the global model, at the rounds
  training.eval_every says (per-class accuracies are not known: empty columns).

What is timed: each message's arrays down and the reply's up (their bytes), and the app's
compute at the client's FLOP/s: the FLOPs its reply reports per local step (`flops-forward`,
`flops-backward`), else torch's count around the call (scala_netsim.flower.grid). The round's
demands for the static allocators: the global arrays' bytes both ways, and a step's share of
the FLOPs of the client's last call (0 before its first). What survives a resume: the global
arrays, the round counter, the strategy's state, each client's last FLOPs and every node's
Context (its `state`, which a ClientApp may keep between rounds), serialised with Flower's own
protobuf. The global generators an app draws from are seeded call by call from the run's
"flower_app" seed stream (scala_netsim.flower.grid.seeded_globals; initial_arrays and
evaluate_fn as node 1, the SuperLink's), so nothing of theirs needs saving."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.common.serde import context_from_proto, context_to_proto
from flwr.proto.message_pb2 import Context as ProtoContext
from torch import nn

from scala_netsim.algorithms.config import FlowerConfig, imported
from scala_netsim.flower.grid import (
    FlowerAppError,
    SimulatedGrid,
    array_bytes,
    seeded_globals,
)
from scala_netsim.flower.strategy import StrategyRounds
from scala_netsim.learn.contract import Evaluation, FederatedTrainer, LocalStep, StepDemand


def as_array_record(model: Any) -> ArrayRecord:
    """An initial model as an ArrayRecord (from an ArrayRecord, a state dict or a module)."""
    if isinstance(model, ArrayRecord):
        return model
    if isinstance(model, nn.Module):
        model = model.state_dict()
    if isinstance(model, dict):
        return ArrayRecord({name: torch.as_tensor(t).detach().cpu()
                            for name, t in model.items()})
    raise TypeError(f"flower.initial_arrays: an ArrayRecord, a state dict or a torch module "
                    f"is expected, got a {type(model).__name__}")


def _as_dtype(array: Array, dtype: str) -> Array:
    """`array` in `dtype`: itself if it is; rounded to the nearest first for an integer dtype
    (an average of 7s may come out 6.999999999999999)."""
    if array.dtype == dtype:
        return array
    values, target = array.numpy(), np.dtype(dtype)
    if np.issubdtype(target, np.integer):
        values = np.rint(values)
    return Array(values.astype(target))


class FlowerApps(StrategyRounds, FederatedTrainer):
    """A user's ClientApp under a Flower strategy (the module's docstring)."""

    server_order_matters = False

    def __init__(self, app: ClientApp, initial: ArrayRecord,
                 evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None],
                 num_clients: int, num_classes: int, config: FlowerConfig,
                 client_lr: float, seed: int) -> None:
        self._init_rounds(config, SimulatedGrid(app, num_clients, config.run_config,
                                                seed=seed), client_lr)
        self.arrays, self.evaluate_fn, self.num_classes = initial, evaluate_fn, num_classes
        self.seed = seed
        self._step_flops: dict[int, int] = {}

    @classmethod
    def from_setup(cls, setup: Any, config: Any = None) -> FlowerApps:
        assert config is not None and config.client_app is not None
        seed = setup.seeds.seed("flower_app")
        with seeded_globals(seed, 0, SUPERLINK_NODE_ID):
            initial = as_array_record(imported(config.initial_arrays)())
        return cls(imported(config.client_app), initial, imported(config.evaluate_fn),
                   setup.data.num_clients, setup.data.num_classes, config, setup.sgd.lr,
                   seed=seed)

    # --- a round --------------------------------------------------------------------------
    def global_arrays(self) -> ArrayRecord:
        return self.arrays

    def take_aggregate(self, aggregate: ArrayRecord, buffers: list[ArrayRecord]) -> None:
        """The aggregate, each array in the dtype of the global model's (flwr 1.42's FedAdam
        and QFedAvg return float64 arrays under NumPy 2: a NumPy float64 scalar times a
        float32 array; sent as they are, the next round's downloads would be twice the
        model's bytes; an integer array, which flwr averages in float64, is rounded)."""
        self.arrays = ArrayRecord({name: _as_dtype(array, self.arrays[name].dtype)
                                   for name, array in aggregate.items()})

    def begin_round(self, selected: Sequence[int]) -> None:
        self.begin_strategy_round(selected)

    def end_round(self) -> None:
        """(the strategy aggregated the replies in `play_round`)"""

    def client_local_step(self, k: int, local_iter: int) -> LocalStep:
        step = super().client_local_step(k, local_iter)
        if local_iter == 0:     # a step's share of the call: its steps' FLOPs over T
            self._step_flops[k] = sum(f + b for f, b in self._steps[k]) // self._local_steps
        return step

    def step_demand(self, k: int) -> StepDemand:
        """The global arrays both ways; a step's share of the FLOPs of the client's last call
        (its FLOPs over local-steps T; 0 before its first)."""
        model_bytes = array_bytes(RecordDict({"arrays": self.arrays}))
        return StepDemand(model_bytes, model_bytes, self._step_flops.get(k, 0))

    def evaluate(self, test_x: torch.Tensor, test_y: torch.Tensor) -> Evaluation:
        """The user's evaluate_fn on the global arrays (the run's test set is not the app's:
        it is not used)."""
        with seeded_globals(self.seed, self.server_round, SUPERLINK_NODE_ID):
            metrics = self.evaluate_fn(self.server_round, self.arrays)
        if not isinstance(metrics, MetricRecord) or "accuracy" not in metrics:
            raise FlowerAppError(f"flower.evaluate_fn: {self.config.evaluate_fn} returned "
                                 f"{metrics!r} after round {self.server_round}: a MetricRecord "
                                 f"with 'accuracy' (and 'loss') is expected")
        loss = metrics.get("loss", float("nan"))
        return Evaluation(float(metrics["accuracy"]),  # type: ignore[arg-type]
                          np.full(self.num_classes, np.nan), float(loss))  # type: ignore[arg-type]

    # --- resume ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        contexts = {str(node): torch.frombuffer(bytearray(
                        context_to_proto(context).SerializeToString()), dtype=torch.uint8)
                    for node, context in self.grid.contexts.items()}
        return {"arrays": self.arrays.to_torch_state_dict(), "contexts": contexts,
                "step_flops": {str(k): flops for k, flops in self._step_flops.items()},
                **self.strategy_state()}

    def load_state_dict(self, state: dict) -> None:
        self.arrays = ArrayRecord({n: t.cpu() for n, t in state["arrays"].items()})
        self.grid.contexts = {}
        for node, data in state["contexts"].items():
            proto = ProtoContext()
            proto.ParseFromString(data.cpu().numpy().tobytes())
            self.grid.contexts[int(node)] = context_from_proto(proto)
        self._step_flops = {int(k): int(flops) for k, flops in state["step_flops"].items()}
        self.load_strategy_state(state)

