"""How well an image is reconstructed from what it sent: MSE, SSIM and PSNR.

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

from dataclasses import dataclass

import torch
from torchmetrics.functional.image import structural_similarity_index_measure

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
    ssim = structural_similarity_index_measure(reconstructed, original, data_range=1.0,
                                               reduction="none")
    return mse, ssim, psnr


def reconstruction_metrics(original: torch.Tensor,
                           reconstructed: torch.Tensor) -> Reconstruction:
    """MSE, SSIM and PSNR, each computed per image, averaged over the images."""
    mse, ssim, psnr = reconstruction_scores(original, reconstructed)
    return Reconstruction(mse.mean().item(), ssim.mean().item(), psnr.mean().item())
