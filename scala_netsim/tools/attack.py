"""The model-inversion attack on what a client sends (ResSFL's recipe, Li et al., CVPR 2022).

The attacker holds a white-box copy of the final global client-side model (the run's
model.pt) and an auxiliary set: the first half of the test set. It computes that set's
activations with the copy, trains a decoder to map activations back to images (MSE loss, Adam
1e-3, batch 32, `epochs` passes), then reconstructs the other half of the test set from its
activations. Scores: MSE, SSIM and PSNR on images in [0, 1], per image and then averaged
(scala_netsim.learn.privacy), mean and standard deviation over attack seeds.

The command `python -m scala_netsim.attack RUN_DIR` (scala_netsim/attack.py) runs it on a
finished run and writes RUN_DIR/attack.json and RUN_DIR/attack.png (originals above their
reconstructions); a scenario's `attack` section runs it after each training.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path

import numpy as np
import torch
from torch import nn

from scala_netsim.config.scenario import Scenario
from scala_netsim.core.errors import Error
from scala_netsim.core.files import ATTACK_JSON, ATTACK_PNG, MODEL_PT, SCENARIO_YAML
from scala_netsim.learn.privacy import (
    DECODER_WIDTH,
    Reconstruction,
    inversion_decoder,
    reconstruction_metrics,
)

BATCH_SIZE, LEARNING_RATE = 32, 1e-3


@torch.no_grad()
def activations_of(client_model: nn.Module, images: torch.Tensor,
                   chunk: int = 500) -> torch.Tensor:
    """What the client would send for `images` (its model in evaluation mode)."""
    client_model.eval()
    return torch.cat([client_model(images[i:i + chunk]) for i in range(0, len(images), chunk)])


def train_decoder(activations: torch.Tensor, images01: torch.Tensor, epochs: int,
                  seed: int) -> nn.Sequential:
    """The attacker's decoder trained on (activation, image in [0, 1]) pairs; its weights and
    batch order drawn from `seed`."""
    torch.manual_seed(seed)   # the decoder's initial weights (nn defaults use the global RNG)
    decoder = inversion_decoder(tuple(activations.shape[1:]), images01.shape[1],
                                images01.shape[-1]).to(activations.device)
    optimizer = torch.optim.Adam(decoder.parameters(), lr=LEARNING_RATE)
    order = torch.Generator().manual_seed(seed)
    decoder.train()
    for _ in range(epochs):
        permutation = torch.randperm(len(images01), generator=order).to(activations.device)
        for start in range(0, len(images01), BATCH_SIZE):
            batch = permutation[start:start + BATCH_SIZE]
            if len(batch) < 2:   # BatchNorm needs two samples
                continue
            loss = nn.functional.mse_loss(decoder(activations[batch]), images01[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return decoder.eval()


@torch.no_grad()
def reconstruct(decoder: nn.Module, activations: torch.Tensor, chunk: int = 500) -> torch.Tensor:
    return torch.cat([decoder(activations[i:i + chunk])
                      for i in range(0, len(activations), chunk)])


def attack(client_model: nn.Module, aux_images01: torch.Tensor, aux_inputs: torch.Tensor,
           target_images01: torch.Tensor, target_inputs: torch.Tensor, epochs: int,
           seeds: Sequence[int]) -> tuple[dict, torch.Tensor]:
    """Train a decoder per seed on the auxiliary pairs and score its reconstructions of the
    targets. -> ({"mse"|"ssim"|"psnr_db": {"mean", "std", "per_seed"}}, the first seed's
    reconstructions)."""
    aux_activations = activations_of(client_model, aux_inputs)
    target_activations = activations_of(client_model, target_inputs)
    scores: dict[str, list[float]] = {f.name: [] for f in fields(Reconstruction)}
    first: torch.Tensor | None = None
    for seed in seeds:
        decoder = train_decoder(aux_activations, aux_images01, epochs, seed)
        rebuilt = reconstruct(decoder, target_activations)
        metrics = reconstruction_metrics(target_images01, rebuilt)
        for name in scores:
            scores[name].append(getattr(metrics, name))
        first = rebuilt if first is None else first
    if first is None:
        raise AttackError("the attack needs at least one seed")
    summary = {name: {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1))
                      if len(v) > 1 else 0.0, "per_seed": v} for name, v in scores.items()}
    return summary, first


class AttackError(Error, ValueError):
    """The run folder cannot be attacked (says why and what is allowed)."""


def attackable(algorithm: str) -> str | None:
    """Why `algorithm`'s runs cannot be attacked, or None (its registry traits say)."""
    from scala_netsim.config.registry import ALGORITHMS

    return ALGORITHMS[algorithm].traits.why_not_attackable(algorithm)


def client_model_of(run_dir: Path, scenario: Scenario, in_channels: int,
                    num_classes: int, image_size: int = 32) -> nn.Module:
    """The final global client-side model of a run (model.pt's "client"), as its algorithm
    builds its client part (Trainer.trained_client_part), for images of `image_size`."""
    from scala_netsim.algorithms.common import TrainerBase
    from scala_netsim.config.registry import ALGORITHMS
    from scala_netsim.learn.models import build_split_model

    path = run_dir / MODEL_PT
    if not path.is_file():
        raise AttackError(f"{run_dir}: no model.pt (it is written when a trained run "
                          f"completes)")
    state = torch.load(path, map_location="cpu", weights_only=True)["modules"]["client"]
    client, server = build_split_model(scenario.model.arch, scenario.model.split, in_channels,
                                       num_classes, torch.Generator(), fast_layout=False,
                                       image_size=image_size)
    spec = ALGORITHMS[scenario.algorithms[0]]
    if not issubclass(spec.trainer, TrainerBase):
        raise AttackError(f"{run_dir}: {spec.trainer.__name__} does not say which part of its "
                          f"model a client sends (TrainerBase.trained_client_part)")
    return spec.trainer.trained_client_part(client, server,
                                            (in_channels, image_size, image_size),
                                            spec.section(scenario), state)


def after_training(scenario: Scenario) -> Callable[[Path], object] | None:
    """What a completed trained run of `scenario` does on its folder before its summary is
    written (scala_netsim.runner.execute.execute_run's `finish`): the attack, where `privacy`
    asks."""
    if scenario.privacy is None:
        return None
    return functools.partial(run_attack, epochs=scenario.privacy.attack_epochs,
                             seeds=scenario.privacy.attack_seeds)


def run_attack(run_dir: Path | str, epochs: int = 20, seeds: Sequence[int] = (0, 1, 2),
               figure: bool = True) -> dict:
    """Attack a finished run folder; writes attack.json (and attack.png) there."""
    from scala_netsim.config.scenario import validate_scenario
    from scala_netsim.core.results import read_written_yaml, write_json
    from scala_netsim.learn.data import to_unit_range
    from scala_netsim.runner.world import scenario_dataset

    run_dir = Path(run_dir)
    if not (run_dir / SCENARIO_YAML).is_file():
        raise AttackError(f"{run_dir}: not a run folder (no scenario.yaml)")
    scenario = validate_scenario(read_written_yaml(run_dir / SCENARIO_YAML),
                                 run_dir / SCENARIO_YAML)
    algorithm = scenario.algorithms[0]
    why = attackable(algorithm)
    if why is not None:
        raise AttackError(f"{run_dir}: {why}; the attack needs an algorithm that sends "
                          f"activations from a global client-side model (scala, ca_sfl, "
                          f"splitfed_v1, splitfed_v2, ...)")
    if epochs < 1 or not seeds:
        raise AttackError(f"epochs must be >= 1 and at least one seed, got {epochs}, {seeds}")
    data = scenario_dataset(scenario, "cpu")
    client = client_model_of(run_dir, scenario, data.in_channels, data.num_classes,
                             data.image_size)
    half = len(data.test_y) // 2
    images01 = to_unit_range(data.name, data.test_x)
    scores, rebuilt = attack(client, images01[:half], data.test_x[:half], images01[half:],
                             data.test_x[half:], epochs, seeds)
    result = {"algorithm": algorithm, "arch": scenario.model.arch,
              "split": scenario.model.split, "dataset": data.name,
              "aux_images": half, "target_images": len(data.test_y) - half,
              "epochs": epochs, "seeds": list(seeds), "batch_size": BATCH_SIZE,
              "lr": LEARNING_RATE, "decoder_width": DECODER_WIDTH, **scores}
    write_json(run_dir / ATTACK_JSON, result)
    if figure:
        from analysis.plots import reconstruction_figure

        reconstruction_figure(images01[half:half + 8].numpy(), rebuilt[:8].numpy(),
                              run_dir / ATTACK_PNG,
                              title=f"{algorithm} {scenario.model.arch} {scenario.model.split}:"
                                    f" test images (top) and the attack's reconstructions")
    return result
