"""FedAvg with server momentum (FedAvgM, Hsu et al. 2019), a server-side plugin: the server
treats the round's average change of the model as a gradient and takes a momentum step with
it. Its velocity outlives a round, so it is saved in the checkpoint (`extra_state`) and
restored on resume (`load_extra_state`); without them a resumed run would restart it at zero."""
from collections.abc import Sequence
from typing import Any

import torch
from pydantic import Field

from scala_netsim.algorithms.config import AlgorithmConfig
from scala_netsim.algorithms.federated import FedAvg
from scala_netsim.config.registry import AlgorithmSpec
from scala_netsim.sim.protocols import FederatedProtocol


class FedAvgMConfig(AlgorithmConfig):              # the scenario section `fedavgm:`
    server_lr: float = Field(default=1.0, gt=0)
    beta: float = Field(default=0.9, ge=0, lt=1)


class FedAvgM(FedAvg):
    def __init__(self, *args: Any, server_lr: float, beta: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.server_lr, self.beta = server_lr, beta
        self.velocity = [torch.zeros_like(p) for p in self.model.parameters()]

    @classmethod
    def hyper_parameters(cls, config: FedAvgMConfig) -> dict:
        return {"server_lr": config.server_lr, "beta": config.beta}

    def begin_round(self, selected: Sequence[int]) -> None:
        # the global model the round starts from (self.model is the server's global model)
        self.start = [p.detach().clone() for p in self.model.parameters()]
        super().begin_round(selected)

    @torch.no_grad()
    def end_round(self) -> None:
        super().end_round()                        # self.model: the average of the uploads
        for p, w, v in zip(self.model.parameters(), self.start, self.velocity, strict=True):
            v.mul_(self.beta).add_(w - p)          # the round's pseudo-gradient
            p.copy_(w - self.server_lr * v)

    # what must survive a resume besides the model and the optimisers (the checkpoint holds
    # those): tensors, numbers, and lists and dicts of them
    def extra_state(self) -> dict:
        return {"velocity": self.velocity}

    def load_extra_state(self, state: dict) -> None:
        self.velocity = list(state["velocity"])


SPEC = AlgorithmSpec("fedavgm", FedAvgM, FederatedProtocol,
                     "FedAvg with server momentum", config=FedAvgMConfig)
