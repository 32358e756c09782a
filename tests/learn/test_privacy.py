"""The reconstruction metrics of the model-inversion attack, against hand-computed values."""

import math

import pytest
import torch

from scala_netsim.learn.privacy import PSNR_CAP_DB, reconstruction_metrics, reconstruction_scores

C1, C2 = 0.01**2, 0.03**2   # Wang et al. (2004) with data range 1


def test_identical_images_score_mse_0_ssim_1_and_the_psnr_cap():
    x = torch.rand(3, 1, 32, 32, generator=torch.Generator().manual_seed(0))
    metrics = reconstruction_metrics(x, x.clone())
    assert metrics.mse == 0.0 and metrics.psnr_db == PSNR_CAP_DB == 100.0
    assert metrics.ssim == pytest.approx(1.0, abs=1e-12)


def test_constant_images_have_closed_form_scores():
    original, reconstructed = torch.full((1, 1, 32, 32), 0.5), torch.full((1, 1, 32, 32), 0.6)
    metrics = reconstruction_metrics(original, reconstructed)
    # (0.6 as float32 is 0.6 to 2.4e-8)
    assert metrics.mse == pytest.approx(0.01, rel=1e-6)
    assert metrics.psnr_db == pytest.approx(20.0, rel=1e-6)
    # no variance: SSIM is the luminance term (2 mu_x mu_y + C1) / (mu_x^2 + mu_y^2 + C1)
    assert metrics.ssim == pytest.approx((2 * 0.5 * 0.6 + C1) / (0.25 + 0.36 + C1), rel=1e-6)


def test_each_metric_is_averaged_over_images_not_computed_on_the_mean():
    original = torch.zeros(2, 1, 8, 8)
    reconstructed = torch.stack([torch.full((1, 8, 8), 0.1), torch.full((1, 8, 8), 0.01)])
    mse, _, psnr = reconstruction_scores(original, reconstructed)
    torch.testing.assert_close(mse, torch.tensor([0.01, 0.0001], dtype=torch.float64))
    torch.testing.assert_close(psnr, torch.tensor([20.0, 40.0], dtype=torch.float64))
    metrics = reconstruction_metrics(original, reconstructed)
    assert metrics.psnr_db == pytest.approx(30.0)          # mean of the per-image PSNRs
    assert 10 * math.log10(1 / metrics.mse) == pytest.approx(22.97, abs=0.01)   # not this


def gaussian_ssim(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """SSIM re-implemented: 11 x 11 Gaussian window (sigma 1.5) on the image reflected 5
    pixels out at its borders, the SSIM map averaged over every pixel of each image (Wang et
    al. 2004, eq. 13, with torchmetrics' border)."""
    coords = torch.arange(11, dtype=torch.float64) - 5
    g = torch.exp(-coords**2 / (2 * 1.5**2))
    window = (g[:, None] * g[None, :] / g.sum() ** 2)[None, None]

    def blur(t):
        return torch.nn.functional.conv2d(t, window)

    x, y = (torch.nn.functional.pad(t, (5, 5, 5, 5), mode="reflect") for t in (x, y))

    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx**2, blur(y * y) - my**2, blur(x * y) - mx * my
    s = ((2 * mx * my + C1) * (2 * cxy + C2)) / ((mx**2 + my**2 + C1) * (vx + vy + C2))
    return s.flatten(1).mean(1)


def test_ssim_equals_an_independent_implementation():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(4, 1, 32, 32, generator=g, dtype=torch.float64)
    y = (x + 0.2 * torch.randn(4, 1, 32, 32, generator=g, dtype=torch.float64)).clamp(0, 1)
    _, ssim, _ = reconstruction_scores(x, y)
    torch.testing.assert_close(ssim, gaussian_ssim(x, y), rtol=1e-6, atol=1e-9)
    assert (ssim < 0.9).all()


def test_images_of_different_shapes_are_refused():
    with pytest.raises(ValueError, match=r"N x C x H x W of one shape, got \(2, 1, 8, 8\) and"):
        reconstruction_metrics(torch.zeros(2, 1, 8, 8), torch.zeros(2, 1, 8, 9))


def test_normalised_images_come_back_to_their_pixels_in_0_1(fashion_slice):
    import gzip

    import numpy as np

    from scala_netsim.learn.data import DEBIAN_FASHION_MNIST_DIR, to_unit_range

    back = to_unit_range("fashion_mnist", fashion_slice.test_x[:5])
    assert back.min() >= 0 and back.max() <= 1
    assert torch.all(back[..., :2, :] < 1e-6)           # the 2-pixel zero padding
    with gzip.open(DEBIAN_FASHION_MNIST_DIR / "t10k-images-idx3-ubyte.gz") as f:
        pixels = np.frombuffer(f.read(), dtype=np.uint8, offset=16)   # after the IDX header
    raw = torch.from_numpy(pixels[:5 * 784].reshape(5, 28, 28).astype(np.float32)) / 255
    torch.testing.assert_close(back[:, 0, 2:30, 2:30], raw, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="no normalisation known for 'tiny'"):
        to_unit_range("tiny", back)
