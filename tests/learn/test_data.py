import gzip
import json
import pickle
import struct

import numpy as np
import pytest
import torch

from scala_netsim.learn.data import (
    CIFAR10_CLASSES,
    DEBIAN_FASHION_MNIST_DIR,
    FASHION_MNIST_CLASSES,
    FASHION_MNIST_FILES,
    RGB_STATS,
    DataNotFoundError,
    _fashion_mnist_files,
    load_dataset,
    load_fashion_mnist,
    read_idx,
)


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
    images = {"train": rng.integers(0, 256, (n_train, 28, 28)),
              "t10k": rng.integers(0, 256, (n_test, 28, 28))}
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


def test_a_replaced_gzipped_file_is_unpacked_again(tmp_path):
    folder = tmp_path / "fmnist"
    folder.mkdir()
    make_idx_dir(folder, compress=True)
    assert load_fashion_mnist(folder).train_y.tolist() == [0, 1, 2, 3, 4, 5]
    write_idx(folder / "train-labels-idx1-ubyte", np.array([9, 8, 7, 6, 5, 4]), compress=True)
    assert load_fashion_mnist(folder).train_y.tolist() == [9, 8, 7, 6, 5, 4]


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


def test_idx_files_read_as_torchvision_reads_them(tmp_path):
    """The package parses the IDX files itself (no torchvision import); the arrays, labels and
    class names are torchvision's, on the real files."""
    torchvision = pytest.importorskip("torchvision")
    files = [path for path, _ in _fashion_mnist_files(DEBIAN_FASHION_MNIST_DIR)]
    root = tmp_path / "torchvision"                 # the layout torchvision reads: the same files
    (root / "FashionMNIST").mkdir(parents=True)
    (root / "FashionMNIST" / "raw").symlink_to(files[0].parent)
    for path, name in zip(files, FASHION_MNIST_FILES, strict=True):
        (path.parent / name).symlink_to(path.name)
    for train, images, labels in ((True, *files[:2]), (False, *files[2:])):
        ref = torchvision.datasets.FashionMNIST(root, train=train, download=False)
        assert torch.equal(read_idx(images), ref.data)
        assert torch.equal(read_idx(labels).long(), ref.targets)
    assert tuple(ref.classes) == FASHION_MNIST_CLASSES
    assert torch.equal(load_fashion_mnist(root).test_y, ref.targets)   # torchvision's layout


def test_a_file_that_is_not_idx_is_refused_with_its_path(tmp_path):
    folder = tmp_path / "fmnist"
    folder.mkdir()
    make_idx_dir(folder, compress=False)
    for junk in (b"<html>not found</html>", b"\x00\x00\x08\x03\x00\x00"):  # a cut header
        (folder / "train-labels-idx1-ubyte").write_bytes(junk)
        with pytest.raises(DataNotFoundError, match="train-labels-idx1-ubyte is not an IDX"):
            load_fashion_mnist(folder)
    make_idx_dir(folder, compress=False)
    data = (folder / "t10k-images-idx3-ubyte").read_bytes()
    (folder / "t10k-images-idx3-ubyte").write_bytes(data[:-5])     # truncated
    with pytest.raises(DataNotFoundError, match=r"header says \(4, 28, 28\)"):
        load_fashion_mnist(folder)


def test_missing_data_says_how_to_get_it(tmp_path):
    with pytest.raises(DataNotFoundError,
                       match="does not exist.*apt-get install dataset-fashion-mnist"):
        load_fashion_mnist(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="not found in .*empty.*data.data_dir"):
        load_fashion_mnist(tmp_path / "empty")
    with pytest.raises(ValueError, match="data.dataset: unknown dataset 'svhn'"):
        load_dataset("svhn")


# --- CIFAR-10/100 and CINIC-10 from a data_dir, on small files written in their formats ---
def write_cifar(root, name, n_train=10, n_test=4):
    """The 'python version' layout: pickled dicts with bytes keys, data N x 3072 uint8 (the
    red, green then blue planes of each 32x32 image, row-major)."""
    rng = np.random.default_rng(1)
    folder = root / {"cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}[name]
    folder.mkdir(parents=True)
    classes = 10 if name == "cifar10" else 100
    label_key = b"labels" if name == "cifar10" else b"fine_labels"
    images = rng.integers(0, 256, (n_train + n_test, 3072), dtype=np.uint8)
    labels = (np.arange(n_train + n_test) * 7) % classes

    def dump(path, start, stop):
        batch = {b"data": images[start:stop], label_key: labels[start:stop].tolist()}
        if name == "cifar100":
            batch[b"coarse_labels"] = (labels[start:stop] // 5).tolist()
        path.write_bytes(pickle.dumps(batch, protocol=2))

    if name == "cifar10":
        per = n_train // 5
        for i in range(5):
            dump(folder / f"data_batch_{i + 1}", i * per, (i + 1) * per)
        dump(folder / "test_batch", n_train, n_train + n_test)
        meta = {b"label_names": [f"c{i}".encode() for i in range(10)]}
        (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))
    else:
        dump(folder / "train", 0, n_train)
        dump(folder / "test", n_train, n_train + n_test)
        meta = {b"fine_label_names": [f"f{i}".encode() for i in range(100)],
                b"coarse_label_names": [f"g{i}".encode() for i in range(20)]}
        (folder / "meta").write_bytes(pickle.dumps(meta, protocol=2))
    return images, labels


@pytest.mark.parametrize("name, classes", [("cifar10", 10), ("cifar100", 100)])
def test_loads_cifar_python_version_from_a_data_dir(tmp_path, name, classes):
    images, labels = write_cifar(tmp_path, name)
    for data_dir in (tmp_path, next(tmp_path.iterdir())):     # the parent or the folder itself
        ds = load_dataset(name, data_dir)
        assert ds.train_x.shape == (10, 3, 32, 32) and ds.test_x.shape == (4, 3, 32, 32)
        assert ds.num_classes == classes and ds.in_channels == 3
        assert ds.train_y.tolist() == labels[:10].tolist() and ds.test_y.dtype == torch.int64
        mean, std = RGB_STATS[name]
        # test image 2, green plane (offset 1024), row 5, column 7
        expected = (images[12, 1024 + 5 * 32 + 7] / 255.0 - mean[1]) / std[1]
        assert ds.test_x[2, 1, 5, 7].item() == pytest.approx(expected, abs=1e-6)
    assert load_dataset(name, tmp_path, train_samples=3).train_x.shape[0] == 3


def test_cifar_files_that_are_not_cifar_are_refused_not_run(tmp_path):
    write_cifar(tmp_path, "cifar10")
    folder = tmp_path / "cifar-10-batches-py"

    class Evil:
        def __reduce__(self):
            return (print, ("this must never run",))

    (folder / "test_batch").write_bytes(pickle.dumps({b"data": Evil()}))
    with pytest.raises(DataNotFoundError, match="refusing to load builtins.print"):
        load_dataset("cifar10", tmp_path)
    (folder / "data_batch_3").unlink()
    with pytest.raises(DataNotFoundError, match=r"\['data_batch_3'\] not found"):
        load_dataset("cifar10", tmp_path)
    with pytest.raises(DataNotFoundError, match="data.data_dir: required for cifar100"):
        load_dataset("cifar100", None)


def test_loads_cinic10_class_folders_of_png_once(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(2)
    written = {}
    for split, per_class in (("train", 2), ("valid", 1), ("test", 1)):
        for c, cls in enumerate(CIFAR10_CLASSES):
            (tmp_path / "cinic" / split / cls).mkdir(parents=True)
            for i in range(per_class):
                image = torch.from_numpy(rng.integers(0, 256, (3, 32, 32), dtype=np.uint8))
                Image.fromarray(image.permute(1, 2, 0).numpy()).save(
                    tmp_path / "cinic" / split / cls / f"{i}.png")
                written[(split, c, i)] = image
    ds = load_dataset("cinic10", tmp_path / "cinic")
    assert ds.train_x.shape == (20, 3, 32, 32) and ds.test_x.shape == (10, 3, 32, 32)
    assert ds.train_y.tolist() == [c for c in range(10) for _ in range(2)]
    mean, std = RGB_STATS["cinic10"]
    expected = (written[("test", 4, 0)][2, 9, 3].item() / 255.0 - mean[2]) / std[2]
    assert ds.test_x[4, 2, 9, 3].item() == pytest.approx(expected, abs=1e-6)   # PNG is lossless
    cached = list((tmp_path / "cache" / "cinic10").rglob("*.npz"))
    assert sorted(p.name for p in cached) == ["test.npz", "train.npz"]
    for p in (tmp_path / "cinic" / "train").rglob("*.png"):
        p.unlink()                                    # the second load reads the cache only
    assert torch.equal(load_dataset("cinic10", tmp_path / "cinic").train_x, ds.train_x)


@pytest.mark.slow   # trains end to end for more than 5 s
def test_a_cifar10_scenario_runs_end_to_end_from_a_data_dir(cli, tmp_path):
    from conftest import ROOT

    write_cifar(tmp_path / "data", "cifar10", n_train=100, n_test=20)
    code, out, err = cli(
        ROOT / "scenarios/quickstart.yaml", "--out", tmp_path / "out",
        "--set", "data.dataset=cifar10", "--set", f"data.data_dir={tmp_path / 'data'}",
        "--set", "data.num_clients=10", "--set", "training.participation=0.5",
        "--set", "training.batch_size=20", "--set", "training.rounds=2",
        "--set", "training.eval_every=1", "--set", "data.test_samples=null",
        "--set", "algorithms=[scala, fedavg]", "--no-progress", "--no-report")
    assert code == 0, err
    assert "data: cifar10, 100 train / 20 test images" in out
    summary = json.loads((tmp_path / "out/quickstart/scala/seed0/summary.json").read_text())
    assert summary["status"] == "completed"
