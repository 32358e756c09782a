"""Label-skew partitions of a labelled dataset over K clients (SCALA-NOTES section 5).

Each partitioner is a pure function of the labels and a NumPy generator and returns one
array of sample indices per client.
"""

from collections.abc import Sequence

import numpy as np

from scala_netsim.core.errors import Error


class PartitionError(Error, ValueError):
    """The partition asked for cannot be made from these samples (the message names the
    scenario field)."""


def partition_iid(labels: np.ndarray, num_clients: int,
                  rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffle and split into `num_clients` near-equal shards."""
    return [np.sort(part) for part in np.array_split(rng.permutation(len(labels)), num_clients)]


def partition_sampled(labels: np.ndarray, num_clients: int, samples_per_client: int,
                      rng: np.random.Generator) -> list[np.ndarray]:
    """Each client holds `samples_per_client` distinct samples drawn uniformly, independently
    of the other clients: clients may share samples, so there may be more clients than
    samples (a timing study of 100,000 clients on a 60,000-image dataset). No label skew."""
    n = len(labels)
    if samples_per_client > n:
        raise PartitionError(f"data.partition.samples_per_client: must be <= the {n} "
                             f"training samples, got {samples_per_client}")
    parts = np.sort(rng.integers(0, n, size=(num_clients, samples_per_client)), axis=1)
    repeated = np.flatnonzero((parts[:, 1:] == parts[:, :-1]).any(axis=1))
    for k in repeated:  # a sample drawn twice for one client: draw that client again
        parts[k] = np.sort(rng.choice(n, size=samples_per_client, replace=False))
    return list(parts)


def quantity_label_sets(num_clients: int, num_classes: int, alpha: int,
                        rng: np.random.Generator) -> list[np.ndarray]:
    """Assign each client `alpha` distinct labels so that every label has exactly
    K*alpha/N holders.

    Clients are filled one at a time. With m clients left and c_l open slots of label l, a
    completion exists iff every c_l <= m (each client holds a label at most once), so labels
    with c_l == m are forced; the rest are drawn with probability proportional to c_l. This
    keeps the draw random without the rejection loop of a shuffle-and-redraw.
    """
    holders = num_clients * alpha // num_classes
    open_slots = np.full(num_classes, holders)
    label_sets = []
    for client in range(num_clients):
        clients_left = num_clients - client
        forced = np.flatnonzero(open_slots == clients_left)
        free = np.flatnonzero((open_slots > 0) & (open_slots < clients_left))
        extra = alpha - len(forced)
        chosen = (rng.choice(free, size=extra, replace=False,
                             p=open_slots[free] / open_slots[free].sum()) if extra
                  else np.zeros(0, dtype=int))
        labels = np.sort(np.concatenate([forced, chosen]).astype(int))
        open_slots[labels] -= 1
        label_sets.append(labels)
    return label_sets


def partition_quantity(labels: np.ndarray, num_clients: int, alpha: int,
                       rng: np.random.Generator, num_classes: int) -> list[np.ndarray]:
    """Quantity-based label skew: each label's samples are split into K*alpha/N equal portions
    and every client receives `alpha` portions of distinct labels.
    """
    if alpha < 1 or alpha > num_classes or (num_clients * alpha) % num_classes:
        raise PartitionError(
            f"quantity partition needs 1 <= alpha <= {num_classes} and num_clients*alpha "
            f"divisible by {num_classes}, got alpha={alpha}, num_clients={num_clients}"
        )
    label_sets = quantity_label_sets(num_clients, num_classes, alpha, rng)
    holders_of = {y: [k for k, s in enumerate(label_sets) if y in s] for y in range(num_classes)}
    parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for y in range(num_classes):
        idx = rng.permutation(np.flatnonzero(labels == y))
        holders = rng.permutation(holders_of[y])
        for k, portion in zip(holders, np.array_split(idx, len(holders)), strict=True):
            parts[k].append(portion)
    return [np.sort(np.concatenate(p)) for p in parts]


def partition_dirichlet(labels: np.ndarray, num_clients: int, beta: float,
                        rng: np.random.Generator, num_classes: int,
                        max_draws: int = 100) -> list[np.ndarray]:
    """Distribution-based label skew: p_k ~ Dir_N(beta) per client; client k receives the
    share p_{k,y} / sum_j p_{j,y} of class y's samples. Drawn again until no client is empty.
    """
    if beta <= 0:
        raise PartitionError(f"dirichlet partition needs beta > 0, got {beta}")
    for _ in range(max_draws):
        proportions = rng.dirichlet(np.full(num_classes, beta), size=num_clients)
        parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for y in range(num_classes):
            idx = rng.permutation(np.flatnonzero(labels == y))
            share = proportions[:, y] / proportions[:, y].sum()
            cuts = np.round(np.cumsum(share)[:-1] * len(idx)).astype(int)
            for k, portion in enumerate(np.split(idx, cuts)):
                parts[k].append(portion)
        clients = [np.sort(np.concatenate(p)) for p in parts]
        if min(len(c) for c in clients) > 0:
            return clients
    raise PartitionError(
        f"dirichlet partition with beta={beta} left a client empty in {max_draws} draws; "
        f"use fewer clients or a larger beta"
    )


def make_partition(kind: str, labels: np.ndarray, num_clients: int, num_classes: int,
                   rng: np.random.Generator, alpha: int | None = None,
                   beta: float | None = None,
                   samples_per_client: int | None = None) -> list[np.ndarray]:
    """Dispatch on the scenario's `data.partition.kind`; every client gets a sample."""
    if kind == "iid":
        parts = partition_iid(labels, num_clients, rng)
    elif kind == "quantity" and alpha is not None:
        parts = partition_quantity(labels, num_clients, alpha, rng, num_classes)
    elif kind == "dirichlet" and beta is not None:
        parts = partition_dirichlet(labels, num_clients, beta, rng, num_classes)
    elif kind == "sampled" and samples_per_client is not None:
        parts = partition_sampled(labels, num_clients, samples_per_client, rng)
    else:
        needs = {"quantity": "alpha", "dirichlet": "beta", "sampled": "samples_per_client"}
        raise PartitionError(f"data.partition: a {kind} partition needs {needs[kind]}"
                             if kind in needs else
                             f"data.partition.kind: unknown {kind!r}; allowed: iid, "
                             f"quantity, dirichlet, sampled")
    empty = sum(len(p) == 0 for p in parts)
    if empty:
        raise PartitionError(
            f"data.num_clients: {num_clients} clients on {len(labels)} training samples leave "
            f"{empty} client(s) without a sample under the {kind} partition; use fewer "
            f"clients, or data.partition {{kind: sampled, samples_per_client: n}} (clients "
            f"draw their samples independently and may share them)")
    return parts


def label_counts(labels: np.ndarray, parts: Sequence[np.ndarray], num_classes: int) -> np.ndarray:
    """K x N matrix of per-client label counts (one bincount over all clients)."""
    owner = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    flat = np.bincount(owner * num_classes + labels[np.concatenate(parts)],
                       minlength=len(parts) * num_classes)
    return flat.reshape(len(parts), num_classes)
