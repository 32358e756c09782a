"""The defining behaviour of every baseline, on tiny tensors."""

import copy

import numpy as np
import pytest
import simpy
import torch
import torch.nn.functional as F

from channel import EqualShareAllocator
from scala_netsim.algorithms.federated import (FedConcatTrainer, FederatedTrainer,
                                               decorrelation_penalty, fedlc_calibration)
from scala_netsim.algorithms.registry import ALGORITHMS, make_selector, make_trainer
from scala_netsim.algorithms.splitfed import PerClientSplitTrainer
from scala_netsim.data import Dataset
from scala_netsim.engine import EVENT_KINDS, Cell, EventLog, PerClientSplitProtocol
from scala_netsim.models import build_split_model, features_and_head, state_bytes
from scala_netsim.run import build_world
from scala_netsim.scenario import ALGORITHMS as SCENARIO_ALGORITHMS
from scala_netsim.scenario import validate_scenario
from scala_netsim.selection import FedCBSSelector, qcid
from scala_netsim.training import ClientSampler

COMMON = dict(lr=0.05, momentum=0.9, weight_decay=0.0)


def tiny_data(label_sets, per_client=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(per_client * len(label_sets), 1, 32, 32, generator=g)
    y = torch.cat([torch.tensor(s)[torch.randint(len(s), (per_client,), generator=g)]
                   for s in label_sets])
    indices = [np.arange(i * per_client, (i + 1) * per_client) for i in range(len(label_sets))]
    return x, y, indices


def parts(seed=0):
    return build_split_model("alexnet14", "S2", 1, 10, torch.Generator().manual_seed(seed))


def run_round_directly(trainer, selected, local_iters):
    """A round of a per-client split trainer, steps called in client order (no engine)."""
    trainer.begin_round(selected)
    for k in selected:
        trainer.client_receive_model(trainer.client_model_download(k))
    for t in range(local_iters):
        for k in selected:
            message, _ = trainer.client_forward(k, t)
            grad, _ = trainer.server_step_one(message)
            trainer.client_backward(grad)
    for k in selected:
        trainer.server_receive_model(trainer.client_model_upload(k))
    trainer.end_round()


def test_registry_and_scenario_name_the_same_algorithms():
    assert set(ALGORITHMS) == set(SCENARIO_ALGORITHMS)


def test_splitfed_v1_with_one_client_equals_plain_split_training():
    x, y, indices = tiny_data([[0, 1, 2]])
    client, server = parts()
    ref_client, ref_server = copy.deepcopy(client), copy.deepcopy(server)
    trainer = PerClientSplitTrainer(client, server, x, y, indices, 10, variant="v1",
                                    batch_size=4, generator=torch.Generator().manual_seed(7),
                                    **COMMON)
    for _ in range(2):
        run_round_directly(trainer, [0], local_iters=3)

    sampler = ClientSampler(indices, torch.Generator().manual_seed(7), "cpu")
    for _ in range(2):  # plain split training; optimisers fresh each round, as in SplitFedV1
        opt_c = torch.optim.SGD(ref_client.parameters(), **COMMON)
        opt_s = torch.optim.SGD(ref_server.parameters(), **COMMON)
        for _ in range(3):
            idx = sampler.next_batch(0, 4)
            a = ref_client(x[idx])
            a_detached = a.detach().requires_grad_(True)
            loss = F.cross_entropy(ref_server(a_detached), y[idx])
            opt_s.zero_grad()
            loss.backward()
            opt_s.step()
            opt_c.zero_grad()
            a.backward(a_detached.grad)
            opt_c.step()
    for p, q in zip(list(client.parameters()) + list(server.parameters()),
                    list(ref_client.parameters()) + list(ref_server.parameters())):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def per_client_round(variant, flops_per_s, local_iters=2):
    """One engine round of SplitFed `variant` on 3 clients; -> (trainer, event rows)."""
    x, y, indices = tiny_data([[0, 1], [2, 3], [4, 5]])
    client, server = parts()
    trainer = PerClientSplitTrainer(client, server, x, y, indices, 10, variant=variant,
                                    batch_size=12, generator=torch.Generator().manual_seed(3),
                                    **COMMON)
    dist = np.array([200.0, 200.0, 200.0])
    cell = Cell(dist, 128.1 + 37.6 * np.log10(dist / 1000), np.asarray(flops_per_s, float),
                1e13, 20e6, 20e6, 0.2, 1.0, -174.0)
    env, log = simpy.Environment(), EventLog()
    protocol = PerClientSplitProtocol(env, cell, trainer, log, EqualShareAllocator(), local_iters)
    protocol.run_round(1, [0, 1, 2])
    return trainer, log.rows


def test_splitfed_v2_serves_activations_in_arrival_order():
    _, rows = per_client_round("v2", [1e9, 8e9, 3e9])
    for t in range(2):
        arrivals = sorted((r[1], r[4]) for r in rows if r[5] == "activation_upload" and r[3] == t)
        steps = sorted((r[0], r[4]) for r in rows if r[5] == "server_step" and r[3] == t)
        assert [k for _, k in steps] == [k for _, k in arrivals] == [1, 2, 0]
        for (arrival, _), (start, _) in zip(arrivals, steps):
            assert start >= arrival
    # one server processor: steps never overlap
    spans = sorted((r[0], r[1]) for r in rows if r[5] == "server_step")
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def test_a_change_in_the_cell_changes_splitfed_v2_training_but_not_v1():
    def server_weights(variant, flops):
        trainer, _ = per_client_round(variant, flops)
        return torch.cat([p.detach().flatten() for p in trainer.server_model.parameters()])
    fast_first, slow_first = [8e9, 1e9, 3e9], [1e9, 8e9, 3e9]
    assert not torch.equal(server_weights("v2", fast_first), server_weights("v2", slow_first))
    torch.testing.assert_close(server_weights("v1", fast_first), server_weights("v1", slow_first))


def test_splitfed_v3_keeps_each_clients_model_and_sends_none():
    trainer, rows = per_client_round("v3", [1e9, 8e9, 3e9])
    assert not {"model_download", "model_upload"} & {r[5] for r in rows}
    own = trainer.own_models
    assert set(own) == {0, 1, 2}
    assert not torch.equal(own[0][0], own[1][0])      # never averaged
    initial = parts()[0]
    torch.testing.assert_close(trainer.client_model[0].weight, initial[0].weight)


def fl_round(loss, selected=(0, 1), **hyper):
    x, y, indices = tiny_data([[0, 1], [2, 3], [4]])
    features, head = features_and_head(*parts())
    trainer = FederatedTrainer(features, head, x, y, indices, 10, loss=loss, batch_size=8,
                               generator=torch.Generator().manual_seed(5), **COMMON, **hyper)
    for _ in range(2):
        trainer.begin_round(list(selected))
        for k in selected:
            trainer.client_receive_model(trainer.client_model_download(k))
            for t in range(3):
                trainer.client_local_step(k, t)
            trainer.server_receive_model(trainer.client_model_upload(k))
        trainer.end_round()
    return trainer


def test_fedprox_with_mu_zero_equals_fedavg():
    a, b = fl_round("fedavg"), fl_round("fedprox", mu=0.0)
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    c = fl_round("fedprox", mu=1.0)
    assert not torch.equal(a.model[1].weight, c.model[1].weight)


@pytest.mark.parametrize("loss", ["fedprox", "feddyn"])
def test_regulariser_gradient_in_closed_form_equals_autograd(loss):
    """FedProx/FedDyn add mu (w - w_g) [- h_k] to the gradient instead of building an autograd
    graph over all weights: the step must equal one on the whole objective by autograd."""
    trainer = fl_round(loss, selected=(0,), mu=0.5, dyn_alpha=0.5)   # FedDyn has an h_0 now
    trainer.begin_round([0])
    trainer.client_receive_model(trainer.client_model_download(0))
    model, optimizer = trainer.slots[0]
    for p in model.parameters():                  # move away from w_g so the term is non-zero
        p.data.add_(0.01)
    reference = copy.deepcopy(model)
    state = copy.deepcopy(trainer.sampler.state_dict())
    trainer.client_local_step(0, 0)
    trainer.sampler.load_state_dict(state)
    x, y = trainer.next_batch(0)
    params, coef = list(reference.parameters()), 0.5
    objective = F.cross_entropy(reference(x), y) + coef / 2 * sum(
        (p - g).pow(2).sum() for p, g in zip(params, trainer._global_params))
    if loss == "feddyn":
        objective = objective - sum((p * h).sum() for p, h in zip(params, trainer._dyn_client_grads[0]))
    objective.backward()
    with torch.no_grad():
        for p in params:                          # the first step of fresh momentum SGD
            p.sub_(p.grad, alpha=COMMON["lr"])
    for p, q in zip(model.parameters(), params):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_fedlc_calibration_formula_and_absent_classes():
    counts = torch.tensor([16, 0, 81, 1])
    shift = fedlc_calibration(counts, tau=2.0)
    torch.testing.assert_close(shift[[0, 2, 3]], torch.tensor([2 / 2, 2 / 3, 2.0]))
    assert shift[1] == float("inf")
    logits = torch.tensor([[0.3, 5.0, -1.0, 0.2]], requires_grad=True)
    loss = F.cross_entropy(logits - shift, torch.tensor([2]))
    present = torch.tensor([0, 2, 3])
    expected = F.cross_entropy((logits - shift)[:, present], torch.tensor([1]))
    torch.testing.assert_close(loss, expected)       # absent class 1 is excluded
    loss.backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[0, 1] == 0


def test_fedla_and_feddecorr_and_feddyn_train_and_differ_from_fedavg():
    base = fl_round("fedavg").model[1].weight
    for loss, hyper in [("fedla", {}), ("feddecorr", {"decorr_coef": 0.5}), ("feddyn", {"dyn_alpha": 0.1}),
                        ("fedlc", {})]:
        trainer = fl_round(loss, **hyper)
        assert torch.isfinite(trainer.model[1].weight).all()
        assert not torch.equal(trainer.model[1].weight, base), loss


def test_feddyn_server_update_formula():
    trainer = fl_round("feddyn", selected=(0,), dyn_alpha=0.1)
    # one more round by hand: h <- h - alpha/K (w_k - w); w <- mean w_k - h / alpha
    w_prev = [p.detach().clone() for p in trainer.model.parameters()]
    h_prev = [h.clone() for h in trainer._dyn_server_h]
    trainer.begin_round([0])
    trainer.client_receive_model(trainer.client_model_download(0))
    trainer.client_local_step(0, 0)
    upload = trainer.client_model_upload(0)
    trainer.server_receive_model(upload)
    trainer.end_round()
    for p, w, h, wk in zip(trainer.model.parameters(), w_prev, h_prev, upload.tensors):
        h_new = h - 0.1 / 3 * (wk - w)
        torch.testing.assert_close(p, wk - h_new / 0.1, rtol=1e-5, atol=1e-6)


def test_decorrelation_penalty_values():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(4000, 6, generator=g)
    assert decorrelation_penalty(z).item() < 0.01                 # nearly uncorrelated
    dup = torch.cat([z[:, :1]] * 6, dim=1)
    assert decorrelation_penalty(dup).item() == pytest.approx(1.0, rel=1e-4)   # fully correlated


def test_fedconcat_clusters_group_clients_with_identical_label_sets():
    sets = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]] * 2
    x, y, indices = tiny_data(sets, per_client=20)
    models = [features_and_head(*parts(seed=i)) for i in range(5)]
    trainer = FedConcatTrainer(models, x, y, indices, 10, encoder_rounds=1, batch_size=10,
                               cluster_rng=np.random.default_rng(0), classifier_generator=torch.Generator().manual_seed(0),
                               generator=torch.Generator().manual_seed(0), **COMMON)
    clusters = trainer.cluster_of
    assert len(set(clusters[:5])) == 5
    assert list(clusters[:5]) == list(clusters[5:])


def test_fedcbs_prefers_the_balanced_set():
    counts = np.array([[10, 0], [10, 0], [0, 10], [0, 10]])
    assert qcid(counts[[0, 2]]) == 0.0 and qcid(counts[[0, 1]]) == 0.5
    selector = FedCBSSelector(counts, trials=3)
    for seed in range(20):
        chosen = selector.select(2, np.random.default_rng(seed))
        assert qcid(counts[chosen]) == 0.0, chosen


def tiny_scenario(algorithm, **overrides):
    doc = {"name": "tiny", "data": {"num_clients": 10}, "algorithms": [algorithm],
           "training": {"rounds": 2, "local_iters": 2, "batch_size": 24, "participation": 0.3},
           "fedconcat": {"clusters": 2, "encoder_round_fraction": 0.5},
           "splitfed_v3": {"eval_clients": 2}}
    doc.update(overrides)
    return validate_scenario(doc)


def tiny_world(scenario, per_class=12):
    g = torch.Generator().manual_seed(0)
    n = 10 * per_class
    ds = Dataset("tiny", torch.randn(n, 1, 32, 32, generator=g), torch.arange(n) % 10,
                 torch.randn(20, 1, 32, 32, generator=g), torch.arange(20) % 10,
                 tuple(str(c) for c in range(10)))
    return build_world(scenario, ds)


EXPECTED_KINDS = {
    "split": set(EVENT_KINDS),
    "splitfed_v3": set(EVENT_KINDS) - {"model_download", "model_upload"},
    "sfl_local_loss": set(EVENT_KINDS) - {"gradient_download"},
    "federated": {"model_download", "client_forward", "client_backward", "model_upload"},
}


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_each_algorithm_has_its_events_and_payloads_equal_tensor_sizes(algorithm):
    scenario = tiny_scenario(algorithm)
    world = tiny_world(scenario)
    trainer = make_trainer(algorithm, scenario, world, torch.device("cpu"))
    selector = make_selector(algorithm, scenario, world)
    env, log = simpy.Environment(), EventLog()
    protocol = ALGORITHMS[algorithm].protocol(env, world.cell, trainer, log,
                                              EqualShareAllocator(), 2)
    rng = np.random.default_rng(0)
    for r in (1, 2):
        protocol.run_round(r, selector.select(3, rng))
    kinds = {row[5] for row in log.rows}
    family = ALGORITHMS[algorithm].family
    assert kinds == EXPECTED_KINDS.get(algorithm, EXPECTED_KINDS[family])

    batch = 24 // 3  # 12 samples per client, 3 participants: B_k = 8
    client_bytes = state_bytes(build_split_model("alexnet14", "S2", 1, 10,
                                                 torch.Generator())[0])
    full_bytes = state_bytes(torch.nn.Sequential(*build_split_model(
        "alexnet14", "S2", 1, 10, torch.Generator())))
    for row in log.rows:
        kind, payload = row[5], row[6]
        if kind == "activation_upload":
            assert payload == batch * 768 * 4 + batch * 8       # float32 + int64 labels
        elif kind == "gradient_download":
            assert payload == batch * 768 * 4
        elif kind in ("model_download", "model_upload"):
            if algorithm == "sfl_local_loss":
                assert payload == client_bytes + (768 * 10 + 10) * 4   # + the aux head
            elif algorithm == "fedconcat" and row[2] == 2:
                classifier = (2 * 256 * 10 + 10) * 4
                assert payload == (2 * full_bytes - 2 * 2570 * 4 + classifier
                                   if kind == "model_download" else classifier)
            elif family == "federated":
                assert payload == full_bytes
            else:
                assert payload == client_bytes
        else:
            assert payload == 0 and row[7] > 0     # compute events carry FLOPs
    assert trainer.evaluate(world.dataset.test_x, world.dataset.test_y)[0] >= 0
