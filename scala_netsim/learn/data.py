"""Datasets kept in memory as normalised float tensors (no per-client DataLoader).

Fashion-MNIST is read from the Debian package `dataset-fashion-mnist`
(/usr/share/datasets/fashion-mnist, gzipped IDX files) or from a user `data_dir`: the IDX files
torchvision reads, parsed here with NumPy (a 16-byte header and the pixels) because importing
torchvision costs each process about 2.5 s (it imports torch._dynamo), more than a re-timed
sweep point; tests check the arrays equal torchvision's. CIFAR-10,
CIFAR-100 and CINIC-10 cannot be downloaded here; they are read from `data_dir` in their
standard formats (the "python version" pickles of CIFAR, CINIC-10's class folders of PNGs).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from scala_netsim.core.errors import Error

PathLike = str | Path | None

DEBIAN_FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
                         "Shirt", "Sneaker", "Bag", "Ankle boot")
FASHION_MNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)

# Per-channel mean and standard deviation of the Fashion-MNIST training images in [0, 1].
FASHION_MNIST_MEAN, FASHION_MNIST_STD = 0.2860, 0.3530

DATASETS = ("fashion_mnist", "cifar10", "cifar100", "cinic10")
# Per-channel mean and standard deviation of the training images in [0, 1] (the values
# commonly used with these datasets; CINIC-10's from its authors).
RGB_STATS = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "cinic10": ((0.4789, 0.4723, 0.4305), (0.2421, 0.2383, 0.2587)),
}
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck")


def to_unit_range(dataset_name: str, images: torch.Tensor) -> torch.Tensor:
    """Normalised images of a dataset back in [0, 1] (x std + mean per channel): what image
    quality metrics (scala_netsim.learn.privacy) compare."""
    mean: tuple[float, ...]
    std: tuple[float, ...]
    if dataset_name == "fashion_mnist":
        mean, std = (FASHION_MNIST_MEAN,), (FASHION_MNIST_STD,)
    elif dataset_name in RGB_STATS:
        mean, std = RGB_STATS[dataset_name]
    else:
        raise ValueError(f"to_unit_range: no normalisation known for {dataset_name!r}; "
                         f"allowed: {list(DATASETS)}")
    shape = (1, len(mean), 1, 1)
    mean_t = torch.tensor(mean, dtype=images.dtype, device=images.device).view(shape)
    std_t = torch.tensor(std, dtype=images.dtype, device=images.device).view(shape)
    return (images * std_t + mean_t).clamp_(0, 1)


class DataNotFoundError(Error, FileNotFoundError):
    """The dataset files are not where the scenario says they are."""


@dataclass
class Dataset:
    """A labelled image dataset held in memory; images are N x C x 32 x 32 float32
    (Fashion-MNIST 28 x 28 when loaded unpadded)."""

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

    @property
    def image_size(self) -> int:
        return self.train_x.shape[-1]

    def to(self, device: torch.device | str) -> Dataset:
        return Dataset(self.name, self.train_x.to(device), self.train_y.to(device),
                       self.test_x.to(device), self.test_y.to(device), self.class_names)


def cache_dir() -> Path:
    """Where unpacked dataset files are kept ($SCALA_NETSIM_CACHE or ~/.cache/scala_netsim)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "scala_netsim"
    return Path(os.environ.get("SCALA_NETSIM_CACHE", default))


def _fashion_mnist_files(data_dir: Path) -> list[tuple[Path, Path]]:
    """(file to read, file the user gave) for each of FASHION_MNIST_FILES in `data_dir`.

    `data_dir` may be a torchvision root (DIR/FashionMNIST/raw/<idx files>), hold the IDX
    files, or hold them gzipped (the Debian package's layout). Plain files are read where they
    are; a gzipped file is unpacked once into the cache, under a name that carries its size and
    modification time, so that a replaced file is unpacked again.
    """
    torchvision_raw = data_dir / "FashionMNIST" / "raw"
    if all((torchvision_raw / f).is_file() for f in FASHION_MNIST_FILES):
        return [(torchvision_raw / f, torchvision_raw / f) for f in FASHION_MNIST_FILES]
    plain = [data_dir / f for f in FASHION_MNIST_FILES]
    packed = [data_dir / (f + ".gz") for f in FASHION_MNIST_FILES]
    missing = [f for f, p, g in zip(FASHION_MNIST_FILES, plain, packed, strict=True)
               if not (p.is_file() or g.is_file())]
    if missing:
        raise DataNotFoundError(
            f"data.data_dir: Fashion-MNIST files {missing} (.gz or unpacked) not found in "
            f"{data_dir}; install them with `apt-get install dataset-fashion-mnist` "
            f"(they land in {DEBIAN_FASHION_MNIST_DIR}) or set data.data_dir to a directory "
            f"holding them"
        )
    digest = hashlib.sha1(str(data_dir.resolve()).encode()).hexdigest()[:12]
    cache = cache_dir() / "fashion_mnist" / digest
    files = []
    for name, p, g in zip(FASHION_MNIST_FILES, plain, packed, strict=True):
        if p.is_file():
            files.append((p, p))
            continue
        stat = g.stat()
        target = cache / f"{name}.{stat.st_size}.{stat.st_mtime_ns}"
        if not target.is_file():
            cache.mkdir(parents=True, exist_ok=True)
            # Unpack to a temporary file and rename: an interrupted unpack leaves nothing
            # half-written under the file's name.
            with (tempfile.NamedTemporaryFile(dir=cache, delete=False) as tmp,
                  gzip.open(g, "rb") as src):
                shutil.copyfileobj(src, tmp)
            os.replace(tmp.name, target)
        files.append((target, g))
    return files


def read_idx(path: Path, source: Path | None = None) -> torch.Tensor:
    """An IDX file of unsigned bytes (magic 0x00000800 + number of dimensions, big-endian
    dimension sizes, then the data), as a uint8 tensor of those dimensions. Errors name
    `source` (the file the user gave, when `path` is its unpacked copy)."""
    source = path if source is None else source
    raw = bytearray(path.read_bytes())      # writable: the tensor shares it, no copy
    magic = int.from_bytes(raw[:4], "big")
    ndim = magic - 0x0800
    if not 1 <= ndim <= 3 or len(raw) < 4 + 4 * ndim:
        raise DataNotFoundError(f"data.data_dir: {source} is not an IDX file of unsigned bytes "
                                f"(magic number {magic:#010x})")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise DataNotFoundError(f"data.data_dir: {source} holds {data.size} bytes of data, its "
                                f"header says {shape}")
    return torch.from_numpy(data.reshape(shape))


def _normalised(images_uint8: torch.Tensor, mean: float, std: float,
                pad_to_32: bool = True) -> torch.Tensor:
    """N x 28 x 28 uint8 -> N x 1 x 32 x 32 float32 (zero-padded 2 pixels a side), or
    N x 1 x 28 x 28 when not `pad_to_32`, then normalised."""
    x = images_uint8.unsqueeze(1).to(torch.float32).div_(255.0)
    if pad_to_32:
        x = F.pad(x, (2, 2, 2, 2), value=0.0)
    return x.sub_(mean).div_(std)


def load_fashion_mnist(data_dir: PathLike = None, train_samples: int | None = None,
                       test_samples: int | None = None, pad_to_32: bool = True) -> Dataset:
    """Fashion-MNIST padded to 32x32 (or at its own 28x28 when not `pad_to_32`); `*_samples`
    keep the first n images (small slices)."""
    data_dir = Path(data_dir) if data_dir is not None else DEBIAN_FASHION_MNIST_DIR
    if not data_dir.is_dir():
        raise DataNotFoundError(
            f"data.data_dir: directory {str(data_dir)!r} does not exist; install Fashion-MNIST "
            f"with `apt-get install dataset-fashion-mnist` (files land in "
            f"{DEBIAN_FASHION_MNIST_DIR}) or set data.data_dir to a directory holding the IDX files"
        )
    train_x, train_y, test_x, test_y = (read_idx(path, source)
                                        for path, source in _fashion_mnist_files(data_dir))
    train_x, train_y = train_x[:train_samples], train_y[:train_samples]
    test_x, test_y = test_x[:test_samples], test_y[:test_samples]
    return Dataset(
        name="fashion_mnist",
        train_x=_normalised(train_x, FASHION_MNIST_MEAN, FASHION_MNIST_STD, pad_to_32),
        train_y=train_y.to(torch.int64),
        test_x=_normalised(test_x, FASHION_MNIST_MEAN, FASHION_MNIST_STD, pad_to_32),
        test_y=test_y.to(torch.int64),
        class_names=FASHION_MNIST_CLASSES,
    )


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles CIFAR's files (dicts of lists, bytes and numpy arrays) and nothing else: a
    pickle naming any other class is refused instead of run."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"),
               ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}

    def find_class(self, module: str, name: str) -> type:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


def _read_cifar_pickle(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            raw = _ArrayUnpickler(io.BytesIO(f.read()), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise DataNotFoundError(f"data.data_dir: {path} is not a CIFAR python-version batch "
                                f"file ({exc})") from None
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in raw.items()}


def _rgb_tensor(images_uint8: np.ndarray, name: str) -> torch.Tensor:
    """N x 3 x 32 x 32 uint8 -> float32 in [0, 1], normalised per channel."""
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in RGB_STATS[name])
    images = torch.from_numpy(np.ascontiguousarray(images_uint8)).to(torch.float32)
    return images.div_(255.0).sub_(mean).div_(std)


def _require_dir(data_dir: PathLike, name: str, expected: str) -> Path:
    if data_dir is None:
        raise DataNotFoundError(
            f"data.data_dir: required for {name} (it cannot be downloaded here); set it to the "
            f"directory holding {expected}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataNotFoundError(f"data.data_dir: directory {str(data_dir)!r} does not exist; it "
                                f"must hold {expected}")
    return data_dir


def load_cifar(name: str, data_dir: PathLike, train_samples: int | None = None,
               test_samples: int | None = None) -> Dataset:
    """CIFAR-10 (`cifar-10-batches-py/`: data_batch_1..5, test_batch, batches.meta) or
    CIFAR-100 (`cifar-100-python/`: train, test, meta; the 100 fine labels), as distributed by
    their authors ("python version"). `data_dir` may be that folder or its parent."""
    folder_name = {"cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}[name]
    data_dir = _require_dir(data_dir, name, f"{folder_name}/ (the python version)")
    folder = data_dir / folder_name if (data_dir / folder_name).is_dir() else data_dir
    if name == "cifar10":
        train_files = [folder / f"data_batch_{i}" for i in range(1, 6)]
        test_files, meta_file = [folder / "test_batch"], folder / "batches.meta"
        label_key, names_key = "labels", "label_names"
    else:
        train_files, test_files = [folder / "train"], [folder / "test"]
        meta_file, label_key, names_key = folder / "meta", "fine_labels", "fine_label_names"
    missing = [f.name for f in [*train_files, *test_files, meta_file] if not f.is_file()]
    if missing:
        raise DataNotFoundError(f"data.data_dir: {name} files {missing} not found in {folder} "
                                f"(expected the python version of {name}: {folder_name}/)")

    def read(files: list[Path], limit: int | None) -> tuple[np.ndarray, torch.Tensor]:
        batches = [_read_cifar_pickle(f) for f in files]
        x = np.concatenate([np.asarray(b["data"], dtype=np.uint8) for b in batches])
        y = np.concatenate([np.asarray(b[label_key], dtype=np.int64) for b in batches])
        return x.reshape(-1, 3, 32, 32)[:limit], torch.from_numpy(y[:limit])

    train_x, train_y = read(train_files, train_samples)
    test_x, test_y = read(test_files, test_samples)
    classes = tuple(c.decode() if isinstance(c, bytes) else c
                    for c in _read_cifar_pickle(meta_file)[names_key])
    return Dataset(name, _rgb_tensor(train_x, name), train_y, _rgb_tensor(test_x, name), test_y,
                   classes)


def _image_folder_arrays(folder: Path, classes: Sequence[str]) -> tuple:
    """(N x 3 x 32 x 32 uint8, labels) of `folder/<class>/*.png`, classes in the given order."""
    images, labels = [], []
    for label, cls in enumerate(classes):
        for path in sorted((folder / cls).glob("*.png")):
            with Image.open(path) as img:
                image = np.asarray(img.convert("RGB")).transpose(2, 0, 1)
            if image.shape != (3, 32, 32):
                raise DataNotFoundError(f"data.data_dir: {path} is {tuple(image.shape)}, "
                                        f"CINIC-10 images are 3 x 32 x 32")
            images.append(image)
            labels.append(label)
    if not images:
        raise DataNotFoundError(f"data.data_dir: no PNG images in {folder}/<class>/")
    return np.stack(images), np.asarray(labels, dtype=np.int64)


def load_cinic10(data_dir: PathLike, train_samples: int | None = None,
                 test_samples: int | None = None) -> Dataset:
    """CINIC-10 as distributed: `train/`, `valid/`, `test/`, each with one folder of 32x32 PNGs
    per class. Training uses `train/`, testing `test/`. The decoded images are kept in the
    cache (one .npz per split), so the PNGs are read once."""
    data_dir = _require_dir(data_dir, "cinic10", "train/ and test/ with one folder per class")
    missing = [f"{split}/{cls}" for split in ("train", "test") for cls in CIFAR10_CLASSES
               if not (data_dir / split / cls).is_dir()]
    if missing:
        raise DataNotFoundError(f"data.data_dir: CINIC-10 folders {missing[:4]}"
                                f"{' ...' if len(missing) > 4 else ''} not found in {data_dir}")
    digest = hashlib.sha1(str(data_dir.resolve()).encode()).hexdigest()[:12]
    cache = cache_dir() / "cinic10" / digest
    arrays = {}
    for split in ("train", "test"):
        path = cache / f"{split}.npz"
        if not path.is_file():
            x, y = _image_folder_arrays(data_dir / split, CIFAR10_CLASSES)
            cache.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=cache, delete=False, suffix=".npz") as tmp:
                np.savez(tmp, x=x, y=y)
            os.replace(tmp.name, path)
        with np.load(path) as f:
            arrays[split] = (f["x"], f["y"])
    (train_x, train_y), (test_x, test_y) = arrays["train"], arrays["test"]
    return Dataset("cinic10", _rgb_tensor(train_x[:train_samples], "cinic10"),
                   torch.from_numpy(train_y[:train_samples]),
                   _rgb_tensor(test_x[:test_samples], "cinic10"),
                   torch.from_numpy(test_y[:test_samples]), CIFAR10_CLASSES)


def load_dataset(name: str, data_dir: PathLike = None, train_samples: int | None = None,
                 test_samples: int | None = None, pad_to_32: bool = True) -> Dataset:
    """The dataset registered under `name` (see DATASETS). `pad_to_32` False feeds
    Fashion-MNIST at its own 28 x 28 (the others are 32 x 32 already)."""
    if name == "fashion_mnist":
        return load_fashion_mnist(data_dir, train_samples, test_samples, pad_to_32)
    if name in ("cifar10", "cifar100"):
        return load_cifar(name, data_dir, train_samples, test_samples)
    if name == "cinic10":
        return load_cinic10(data_dir, train_samples, test_samples)
    raise ValueError(f"data.dataset: unknown dataset {name!r}; allowed: {list(DATASETS)}")
