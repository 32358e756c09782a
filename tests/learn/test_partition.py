import numpy as np
import pytest

from scala_netsim.learn.partition import (
    label_counts,
    make_partition,
    partition_dirichlet,
    partition_iid,
    partition_quantity,
)


def balanced_labels(num_classes=10, per_class=600):
    return np.repeat(np.arange(num_classes), per_class)


@pytest.mark.parametrize("num_clients, alpha", [(100, 2), (100, 4), (20, 2), (10, 10), (5, 2)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quantity_skew_invariants(num_clients, alpha, seed):
    labels = balanced_labels()
    parts = partition_quantity(labels, num_clients, alpha, np.random.default_rng(seed), 10)
    counts = label_counts(labels, parts, 10)
    holders = num_clients * alpha // 10
    assert ((counts > 0).sum(axis=1) == alpha).all()          # each client: alpha labels
    assert ((counts > 0).sum(axis=0) == holders).all()        # each label: K*alpha/N holders
    # each label's samples are split into equal portions among its holders
    for y in range(10):
        held = counts[:, y][counts[:, y] > 0]
        assert held.max() - held.min() <= 1
    every = np.concatenate(parts)
    assert len(every) == len(labels) and len(np.unique(every)) == len(labels)


def test_quantity_skew_rejects_impossible_alpha():
    with pytest.raises(ValueError, match="divisible by 10"):
        partition_quantity(balanced_labels(), 15, 3, np.random.default_rng(0), 10)
    with pytest.raises(ValueError, match="alpha <= 10"):
        partition_quantity(balanced_labels(), 100, 11, np.random.default_rng(0), 10)


def test_quantity_skew_draws_varied_label_pairs():
    labels = balanced_labels()
    parts = partition_quantity(labels, 100, 2, np.random.default_rng(0), 10)
    pairs = {tuple(np.flatnonzero(c)) for c in label_counts(labels, parts, 10)}
    assert len(pairs) > 20  # not one fixed pattern of label pairs


@pytest.mark.parametrize("beta", [0.05, 0.1, 0.5])
def test_dirichlet_assigns_every_sample_once_and_no_client_is_empty(beta):
    labels = balanced_labels(per_class=1000)
    parts = partition_dirichlet(labels, 100, beta, np.random.default_rng(3), 10)
    every = np.concatenate(parts)
    assert np.array_equal(np.sort(every), np.arange(len(labels)))
    assert min(len(p) for p in parts) > 0
    # small beta: most clients are dominated by one class
    counts = label_counts(labels, parts, 10)
    dominant = counts.max(axis=1) / counts.sum(axis=1)
    if beta == 0.05:
        assert np.median(dominant) > 0.7


def test_iid_split_and_reproducibility():
    labels = balanced_labels()
    parts = partition_iid(labels, 7, np.random.default_rng(0))
    assert sorted(len(p) for p in parts) == [857] * 6 + [858]
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(6000))
    for kind, kw in [("iid", {}), ("quantity", {"alpha": 2}), ("dirichlet", {"beta": 0.1}),
                     ("sampled", {"samples_per_client": 50})]:
        a = make_partition(kind, labels, 20, 10, np.random.default_rng(5), **kw)
        b = make_partition(kind, labels, 20, 10, np.random.default_rng(5), **kw)
        c = make_partition(kind, labels, 20, 10, np.random.default_rng(6), **kw)
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=False))
        assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=False))


def test_sampled_partition_gives_more_clients_than_samples_their_own_distinct_draws():
    labels = balanced_labels(per_class=10)            # 100 samples, 1,000 clients
    parts = make_partition("sampled", labels, 1000, 10, np.random.default_rng(0),
                           samples_per_client=7)
    assert len(parts) == 1000
    assert all(len(p) == 7 and len(np.unique(p)) == 7 for p in parts)
    assert all(p.min() >= 0 and p.max() < 100 for p in parts)
    counts = label_counts(labels, parts, 10)
    assert counts.sum() == 7000 and np.array_equal(counts.sum(axis=1), np.full(1000, 7))
    # clients draw independently: every sample is held by some client, and each by ~70
    held = np.bincount(np.concatenate(parts), minlength=100)
    assert held.min() > 30 and held.max() < 120
    with pytest.raises(ValueError, match="samples_per_client: must be <= the 100 training"):
        make_partition("sampled", labels, 10, 10, np.random.default_rng(0),
                       samples_per_client=101)


def test_a_partition_that_leaves_a_client_without_samples_is_refused():
    labels = balanced_labels(per_class=10)            # 100 samples for 150 clients
    with pytest.raises(ValueError, match=r"data.num_clients: 150 clients on 100 training samples "
                                         r"leave 50 client\(s\) without a sample under the iid"):
        make_partition("iid", labels, 150, 10, np.random.default_rng(0))


def test_label_counts_match_each_clients_own_bincount():
    labels = np.random.default_rng(1).integers(0, 10, 500)
    parts = partition_dirichlet(labels, 13, 0.3, np.random.default_rng(2), 10)
    expected = np.stack([np.bincount(labels[p], minlength=10) for p in parts])
    assert np.array_equal(label_counts(labels, parts, 10), expected)
