"""How well an image is reconstructed from what it sent (MSE, SSIM and PSNR), and the
inversion decoder that reconstructs it (the attacker's in scala_netsim.attack, and the
simulated one SCALA-PE trains against).

Images are scaled to [0, 1]; each metric is computed per image and then averaged over the
images, as the SCALA journal's Table VI reports them (so its mean PSNR is not 10 log10(1 /
mean MSE)). SSIM is Wang et al. (2004) with an 11 x 11 Gaussian window (sigma 1.5) and
C1 = (0.01 L)^2, C2 = (0.03 L)^2 for L = 1, from torchmetrics: the image is reflected at its
borders and the SSIM map averaged over every pixel (ResSFL's pytorch_ssim pads with zeros,
Wang's MATLAB code keeps the valid region only; on 32 x 32 images the three differ by up to a
few hundredths). PSNR = 10 log10(1 / MSE) dB, capped at PSNR_CAP_DB where the images are
identical (MSE 0 would give infinity).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

DECODER_WIDTH = 64        # channels inside an inversion decoder (the attacker's, SCALA-PE's)
PSNR_CAP_DB = 100.0   # the PSNR of an exact reconstruction (MSE <= 1e-10)


@dataclass(frozen=True)
class Reconstruction:
    """Per-image averages of one attack: lower MSE, higher SSIM and PSNR mean a better
    reconstruction (a weaker defence)."""

    mse: float
    ssim: float
    psnr_db: float


def reconstruction_scores(original: torch.Tensor, reconstructed: torch.Tensor
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-image MSE, SSIM and PSNR (dB) of N x C x H x W images in [0, 1]."""
    if original.shape != reconstructed.shape or original.dim() != 4:
        raise ValueError(f"images must be N x C x H x W of one shape, got "
                         f"{tuple(original.shape)} and {tuple(reconstructed.shape)}")
    original, reconstructed = original.double(), reconstructed.double()
    mse = (original - reconstructed).square().flatten(1).mean(1)
    psnr = torch.where(mse > 10 ** (-PSNR_CAP_DB / 10),
                       10 * torch.log10(1 / mse.clamp_min(1e-300)),
                       torch.full_like(mse, PSNR_CAP_DB))
    # imported here: torchmetrics imports torch._dynamo, about 2 s a process, and only an
    # attack scores images
    from torchmetrics.functional.image import structural_similarity_index_measure

    ssim = structural_similarity_index_measure(reconstructed, original, data_range=1.0,
                                               reduction="none")
    if not isinstance(ssim, torch.Tensor):   # (a pair only when asked for the full image)
        raise TypeError("SSIM per image: torchmetrics returned more than the index")
    return mse, ssim, psnr


def reconstruction_metrics(original: torch.Tensor,
                           reconstructed: torch.Tensor) -> Reconstruction:
    """MSE, SSIM and PSNR, each computed per image, averaged over the images."""
    mse, ssim, psnr = reconstruction_scores(original, reconstructed)
    return Reconstruction(mse.mean().item(), ssim.mean().item(), psnr.mean().item())


def inversion_decoder(activation_shape: Sequence[int], out_channels: int,
                      image_size: int = 32, width: int = DECODER_WIDTH,
                      sigmoid: bool = True) -> nn.Sequential:
    """A shallow convolutional decoder from C x H x W activations to out_channels x
    image_size x image_size images: a 3x3 convolution to `width` channels, one stride-2
    transposed convolution per doubling of H up to the image size (each with BatchNorm and
    ReLU), a 3x3 convolution to the image's channels, then a sigmoid (images in [0, 1]) or
    nothing (`sigmoid` False: normalised images)."""
    channels, height, width_in = activation_shape
    doublings = math.log2(image_size / height)
    if height != width_in or doublings < 0 or doublings != int(doublings):
        raise ValueError(f"activations of {height} x {width_in} cannot be decoded to "
                         f"{image_size} x {image_size} by doublings")
    layers: list[nn.Module] = [nn.Conv2d(channels, width, 3, padding=1), nn.BatchNorm2d(width),
                               nn.ReLU()]
    for _ in range(int(doublings)):
        layers += [nn.ConvTranspose2d(width, width, 3, stride=2, padding=1, output_padding=1),
                   nn.BatchNorm2d(width), nn.ReLU()]
    layers.append(nn.Conv2d(width, out_channels, 3, padding=1))
    return nn.Sequential(*layers, *([nn.Sigmoid()] if sigmoid else []))
