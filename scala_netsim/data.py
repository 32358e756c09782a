"""Datasets kept in memory as normalised float tensors (no per-client DataLoader).

Fashion-MNIST is read by torchvision from the Debian package `dataset-fashion-mnist`
(/usr/share/datasets/fashion-mnist, gzipped IDX files) or from a user `data_dir`.
"""

import gzip
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
import torchvision

DEBIAN_FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
# Per-channel mean and standard deviation of the Fashion-MNIST training images in [0, 1].
FASHION_MNIST_MEAN, FASHION_MNIST_STD = 0.2860, 0.3530

DATASETS = ("fashion_mnist",)


class DataNotFoundError(FileNotFoundError):
    """The dataset files are not where the scenario says they are."""


@dataclass
class Dataset:
    """A labelled image dataset held in memory; images are N x C x 32 x 32 float32."""

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    class_names: tuple

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def in_channels(self) -> int:
        return self.train_x.shape[1]

    def to(self, device) -> "Dataset":
        return Dataset(self.name, self.train_x.to(device), self.train_y.to(device),
                       self.test_x.to(device), self.test_y.to(device), self.class_names)


def cache_dir() -> Path:
    """Where unpacked dataset files are kept ($SCALA_NETSIM_CACHE or ~/.cache/scala_netsim)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "scala_netsim"
    return Path(os.environ.get("SCALA_NETSIM_CACHE", default))


def _fashion_mnist_root(data_dir: Path) -> Path:
    """A torchvision root (ROOT/FashionMNIST/raw/<idx files>) for the IDX files in `data_dir`.

    `data_dir` may already be such a root, hold the raw IDX files, or hold them gzipped (the
    Debian package's layout); gzipped files are unpacked once into the cache.
    """
    if all((data_dir / "FashionMNIST" / "raw" / f).is_file() for f in FASHION_MNIST_FILES):
        return data_dir
    plain = [data_dir / f for f in FASHION_MNIST_FILES]
    packed = [data_dir / (f + ".gz") for f in FASHION_MNIST_FILES]
    if not all(p.is_file() or g.is_file() for p, g in zip(plain, packed)):
        missing = [f for f, p, g in zip(FASHION_MNIST_FILES, plain, packed)
                   if not (p.is_file() or g.is_file())]
        raise DataNotFoundError(
            f"data.data_dir: Fashion-MNIST files {missing} (.gz or unpacked) not found in "
            f"{data_dir}; install them with `apt-get install dataset-fashion-mnist` "
            f"(they land in {DEBIAN_FASHION_MNIST_DIR}) or set data.data_dir to a directory "
            f"holding them"
        )
    root = cache_dir() / "fashion_mnist" / hashlib.sha1(str(data_dir.resolve()).encode()).hexdigest()[:12]
    raw = root / "FashionMNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for name, p, g in zip(FASHION_MNIST_FILES, plain, packed):
        target = raw / name
        if target.is_file():
            continue
        # Unpack to a temporary file and rename, so an interrupted unpack leaves nothing half-written.
        with tempfile.NamedTemporaryFile(dir=raw, delete=False) as tmp:
            with (open(p, "rb") if p.is_file() else gzip.open(g, "rb")) as src:
                shutil.copyfileobj(src, tmp)
        os.replace(tmp.name, target)
    return root


def _to_32x32(images_uint8: torch.Tensor, mean: float, std: float) -> torch.Tensor:
    """N x 28 x 28 uint8 -> N x 1 x 32 x 32 float32: zero-pad 2 pixels a side, then normalise."""
    x = images_uint8.unsqueeze(1).to(torch.float32).div_(255.0)
    x = F.pad(x, (2, 2, 2, 2), value=0.0)
    return x.sub_(mean).div_(std)


def load_fashion_mnist(data_dir=None, train_samples=None, test_samples=None) -> Dataset:
    """Fashion-MNIST padded to 32x32; `*_samples` keep the first n images (small slices)."""
    data_dir = Path(data_dir) if data_dir is not None else DEBIAN_FASHION_MNIST_DIR
    if not data_dir.is_dir():
        raise DataNotFoundError(
            f"data.data_dir: directory {str(data_dir)!r} does not exist; install Fashion-MNIST "
            f"with `apt-get install dataset-fashion-mnist` (files land in "
            f"{DEBIAN_FASHION_MNIST_DIR}) or set data.data_dir to a directory holding the IDX files"
        )
    root = _fashion_mnist_root(data_dir)
    train = torchvision.datasets.FashionMNIST(root, train=True, download=False)
    test = torchvision.datasets.FashionMNIST(root, train=False, download=False)
    train_x, train_y = train.data[:train_samples], train.targets[:train_samples]
    test_x, test_y = test.data[:test_samples], test.targets[:test_samples]
    return Dataset(
        name="fashion_mnist",
        train_x=_to_32x32(train_x, FASHION_MNIST_MEAN, FASHION_MNIST_STD),
        train_y=train_y.to(torch.int64),
        test_x=_to_32x32(test_x, FASHION_MNIST_MEAN, FASHION_MNIST_STD),
        test_y=test_y.to(torch.int64),
        class_names=tuple(train.classes),
    )


def load_dataset(name: str, data_dir=None, train_samples=None, test_samples=None) -> Dataset:
    """The dataset registered under `name` (see DATASETS)."""
    if name == "fashion_mnist":
        return load_fashion_mnist(data_dir, train_samples, test_samples)
    raise ValueError(f"data.dataset: unknown dataset {name!r}; allowed: {list(DATASETS)}")
