import gzip
import struct

import numpy as np
import pytest
import torch

from scala_netsim.data import (DEBIAN_FASHION_MNIST_DIR, DataNotFoundError, load_dataset,
                               load_fashion_mnist)


def write_idx(path, array: np.ndarray, compress: bool):
    """IDX format (big-endian dims, unsigned bytes), as the Fashion-MNIST files."""
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(np.uint8).tobytes()
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


def make_idx_dir(folder, compress, n_train=6, n_test=4):
    rng = np.random.default_rng(0)
    images = {"train": rng.integers(0, 256, (n_train, 28, 28)), "t10k": rng.integers(0, 256, (n_test, 28, 28))}
    labels = {"train": np.arange(n_train) % 10, "t10k": np.arange(n_test) % 10}
    for split in ("train", "t10k"):
        write_idx(folder / f"{split}-images-idx3-ubyte", images[split], compress)
        write_idx(folder / f"{split}-labels-idx1-ubyte", labels[split], compress)
    return images, labels


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SCALA_NETSIM_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("compress", [True, False])
def test_loads_idx_files_from_a_data_dir(tmp_path, compress):
    folder = tmp_path / "fmnist"
    folder.mkdir()
    images, labels = make_idx_dir(folder, compress)
    ds = load_fashion_mnist(folder)
    assert ds.train_x.shape == (6, 1, 32, 32) and ds.test_x.shape == (4, 1, 32, 32)
    assert ds.train_x.dtype == torch.float32 and ds.train_y.dtype == torch.int64
    assert ds.train_y.tolist() == labels["train"].tolist()
    # padded by 2 zero pixels a side, then normalised with the Fashion-MNIST statistics
    pad_value = (0.0 - 0.2860) / 0.3530
    assert torch.allclose(ds.train_x[:, :, :2, :], torch.tensor(pad_value))
    expected = (images["t10k"][1, 5, 7] / 255.0 - 0.2860) / 0.3530
    assert ds.test_x[1, 0, 7, 9].item() == pytest.approx(expected, rel=1e-5)
    assert (ds.num_classes, ds.in_channels) == (10, 1)


def test_first_n_samples_slices():
    ds = load_dataset("fashion_mnist", None, train_samples=100, test_samples=50)
    assert len(ds.train_y) == 100 and len(ds.test_y) == 50


def test_debian_package_is_the_default_source():
    assert (DEBIAN_FASHION_MNIST_DIR / "train-images-idx3-ubyte.gz").is_file(), \
        "install the data: apt-get install dataset-fashion-mnist (scripts/setup.sh does)"
    ds = load_dataset("fashion_mnist")
    assert ds.train_x.shape == (60000, 1, 32, 32) and ds.test_x.shape == (10000, 1, 32, 32)
    assert torch.bincount(ds.train_y).tolist() == [6000] * 10
    assert ds.class_names[0] == "T-shirt/top"


def test_missing_data_says_how_to_get_it(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist.*apt-get install dataset-fashion-mnist"):
        load_fashion_mnist(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="not found in .*empty.*data.data_dir"):
        load_fashion_mnist(tmp_path / "empty")
    with pytest.raises(ValueError, match="data.dataset: unknown dataset 'svhn'"):
        load_dataset("svhn")
