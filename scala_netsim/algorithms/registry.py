"""Every algorithm by its scenario name: which trainer does its math, which protocol times
its communication, which policy selects its clients."""

from dataclasses import dataclass

import numpy as np
import torch

from scala_netsim.algorithms.federated import FedConcatTrainer, FederatedTrainer
from scala_netsim.algorithms.scala import ConcatSplitTrainer
from scala_netsim.algorithms.splitfed import LocalLossSplitTrainer, PerClientSplitTrainer
from scala_netsim.engine import (ConcatSplitProtocol, FederatedProtocol, LocalLossProtocol,
                                 PerClientSplitProtocol)
from scala_netsim.models import build_split_model, features_and_head
from scala_netsim.selection import FedCBSSelector, RandomSelector


@dataclass(frozen=True)
class AlgorithmSpec:
    family: str          # "split" or "federated"
    protocol: type
    description: str
    selection: str = "random"


ALGORITHMS = {
    "scala": AlgorithmSpec("split", ConcatSplitProtocol,
                           "concatenated activations + logit adjustment (SCALA)"),
    "ca_sfl": AlgorithmSpec("split", ConcatSplitProtocol,
                            "concatenated activations, plain cross-entropy (Minibatch-SFL)"),
    "splitfed_v1": AlgorithmSpec("split", PerClientSplitProtocol,
                                 "a server copy per client, copies averaged"),
    "splitfed_v2": AlgorithmSpec("split", PerClientSplitProtocol,
                                 "one shared server model, served in arrival order"),
    "splitfed_v3": AlgorithmSpec("split", PerClientSplitProtocol,
                                 "server copies averaged, client models kept per client"),
    "lla_sfl": AlgorithmSpec("split", PerClientSplitProtocol,
                             "SplitFedV1 with local logit adjustment"),
    "cs_sfl": AlgorithmSpec("split", PerClientSplitProtocol,
                            "SplitFedV1 with Fed-CBS class-balanced selection (our reading)",
                            selection="fedcbs"),
    "sfl_local_loss": AlgorithmSpec("split", LocalLossProtocol,
                                    "local auxiliary loss, no gradients sent back"),
    "fedavg": AlgorithmSpec("federated", FederatedProtocol, "FedAvg"),
    "fedprox": AlgorithmSpec("federated", FederatedProtocol, "FedAvg + proximal term"),
    "fedlc": AlgorithmSpec("federated", FederatedProtocol, "FedAvg with logit calibration"),
    "fedla": AlgorithmSpec("federated", FederatedProtocol,
                           "FedAvg with local logit adjustment"),
    "feddyn": AlgorithmSpec("federated", FederatedProtocol, "FedAvg with dynamic regulariser"),
    "feddecorr": AlgorithmSpec("federated", FederatedProtocol,
                               "FedAvg + feature decorrelation penalty"),
    "fedconcat": AlgorithmSpec("federated", FederatedProtocol,
                               "clustered FedAvg, concatenated encoders + shared classifier"),
    "fedcbs": AlgorithmSpec("federated", FederatedProtocol,
                            "FedAvg with Fed-CBS class-balanced selection", selection="fedcbs"),
}


def make_selector(name: str, scenario, world):
    """The client-selection policy of algorithm `name`."""
    if ALGORITHMS[name].selection == "fedcbs":
        cfg = getattr(scenario, name)
        return FedCBSSelector(world.label_counts, trials=cfg.trials, beta_start=cfg.beta_start,
                              beta_end=cfg.beta_end)
    return RandomSelector(scenario.data.num_clients)


def make_trainer(name: str, scenario, world, device):
    """The learning math of algorithm `name`, models initialised from the scenario's seed (the
    same initial weights for every algorithm)."""
    ds, tr, seeds = world.dataset, scenario.training, world.seeds

    def split_model(seed):
        client, server = build_split_model(
            scenario.model.arch, scenario.model.split, ds.in_channels, ds.num_classes,
            torch.Generator().manual_seed(seed))
        return client.to(device), server.to(device)

    common = dict(batch_size=tr.batch_size, lr=tr.lr, momentum=tr.momentum,
                  weight_decay=tr.weight_decay,
                  generator=torch.Generator().manual_seed(seeds["batches"]))
    data = (ds.train_x, ds.train_y, world.client_indices, ds.num_classes)
    if name in ("scala", "ca_sfl"):
        return ConcatSplitTrainer(*split_model(seeds["model"]), *data, logit_adjust=(name == "scala"), **common)
    if name in ("splitfed_v1", "splitfed_v2", "splitfed_v3", "lla_sfl", "cs_sfl"):
        variant = {"splitfed_v2": "v2", "splitfed_v3": "v3"}.get(name, "v1")
        eval_clients = ()
        if variant == "v3":
            rng = seeds.numpy("selection", "splitfed_v3_eval_clients")
            count = min(scenario.splitfed_v3.eval_clients, scenario.data.num_clients)
            eval_clients = sorted(rng.choice(scenario.data.num_clients, count, replace=False))
        return PerClientSplitTrainer(*split_model(seeds["model"]), *data, variant=variant,
                                     local_logit_adjust=(name == "lla_sfl"),
                                     eval_clients=eval_clients, **common)
    if name == "sfl_local_loss":
        return LocalLossSplitTrainer(*split_model(seeds["model"]), *data,
                                     aux_generator=torch.Generator().manual_seed(
                                         seeds.seed("model", "sfl_aux_head")),
                                     **common)
    if name == "fedconcat":
        cfg = scenario.fedconcat
        # cluster 0 starts from the initial weights every algorithm starts from
        models = [features_and_head(*split_model(
            seeds["model"] if c == 0 else seeds.seed("model", f"fedconcat_cluster{c}")))
            for c in range(cfg.clusters)]
        encoder_rounds = max(1, round(cfg.encoder_round_fraction * tr.rounds))
        return FedConcatTrainer(models, *data, encoder_rounds=encoder_rounds,
                                cluster_rng=seeds.numpy("partition", "fedconcat_clusters"),
                                classifier_generator=torch.Generator().manual_seed(
                                    seeds.seed("model", "fedconcat_classifier")),
                                **common)
    loss = "fedavg" if name == "fedcbs" else name
    hyper = {"fedprox": lambda: dict(mu=scenario.fedprox.mu),
             "fedlc": lambda: dict(tau=scenario.fedlc.tau),
             "feddyn": lambda: dict(dyn_alpha=scenario.feddyn.alpha),
             "feddecorr": lambda: dict(decorr_coef=scenario.feddecorr.coef)}
    return FederatedTrainer(*features_and_head(*split_model(seeds["model"])), *data, loss=loss,
                            **hyper.get(name, dict)(), **common)
