"""The defining behaviour of every baseline, on tiny tensors."""

import copy
from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from channel import Direction
from scala_netsim.algorithms.common import SGDSettings
from scala_netsim.algorithms.federated import (
    FedAvg,
    FedConcat,
    FedDecorr,
    FedDyn,
    FedLA,
    FedLC,
    FedProx,
    decorrelation_penalty,
    fedlc_calibration,
)
from scala_netsim.algorithms.selection import FedCBSSelector, qcid
from scala_netsim.algorithms.splitfed import SplitFedV1, SplitFedV2, SplitFedV3
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.core.events import EventKind
from scala_netsim.learn.models import build_split_model, features_and_head, state_bytes
from scala_netsim.sim.protocols import KeptModelSplitProtocol, PerClientSplitProtocol

from conftest import (
    fl_round_directly,
    make_client_data,
    plain_split_training,
    run_round_directly,
    simulate,
    split_parts,
    tiny_cell,
)

COMMON = dict(lr=0.05, momentum=0.9, weight_decay=0.0)


def sgd(batch_size):
    return SGDSettings(batch_size, **COMMON)


def test_splitfed_v1_with_one_client_equals_plain_split_training():
    data = make_client_data([[0, 1, 2]])
    client, server = split_parts()
    ref_client, ref_server = copy.deepcopy(client), copy.deepcopy(server)
    trainer = SplitFedV1(client, server, data, sgd(4), 7)
    for _ in range(2):
        run_round_directly(trainer, [0], local_iters=3)

    # plain split training; optimisers fresh each round, as in SplitFedV1
    plain_split_training(ref_client, ref_server, data, 7, 4, 2, 3, True, **COMMON)
    for p, q in zip(list(client.parameters()) + list(server.parameters()),
                    list(ref_client.parameters()) + list(ref_server.parameters()), strict=False):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


SPLITFED = {"v1": (SplitFedV1, PerClientSplitProtocol), "v2": (SplitFedV2, PerClientSplitProtocol),
            "v3": (SplitFedV3, KeptModelSplitProtocol)}


def per_client_round(variant, flops_per_s, local_iters=2):
    """One engine round of SplitFed `variant` on 3 clients; -> (trainer, events)."""
    algorithm, protocol = SPLITFED[variant]
    trainer = algorithm(*split_parts(), make_client_data([[0, 1], [2, 3], [4, 5]]), sgd(12), 3)
    sim = simulate(trainer, protocol, tiny_cell([200.0, 200.0, 200.0], flops_per_s), local_iters)
    sim.run_round(1, [0, 1, 2])
    return trainer, sim.log.events


def test_splitfed_v2_serves_activations_in_arrival_order():
    _, events = per_client_round("v2", [1e9, 8e9, 3e9])
    for t in range(2):
        arrivals = sorted((e.t_end_s, e.client_id) for e in events
                          if e.kind is EventKind.ACTIVATION_UPLOAD and e.local_iter == t)
        steps = sorted((e.t_start_s, e.client_id) for e in events
                       if e.kind is EventKind.SERVER_STEP and e.local_iter == t)
        assert [k for _, k in steps] == [k for _, k in arrivals] == [1, 2, 0]
        for (arrival, _), (start, _) in zip(arrivals, steps, strict=False):
            assert start >= arrival
    # one server processor: steps never overlap
    spans = sorted((e.t_start_s, e.t_end_s) for e in events if e.kind is EventKind.SERVER_STEP)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))


def test_a_change_in_the_cell_changes_splitfed_v2_training_but_not_v1():
    def server_weights(variant, flops):
        trainer, _ = per_client_round(variant, flops)
        return torch.cat([p.detach().flatten() for p in trainer.server_model.parameters()])
    fast_first, slow_first = [8e9, 1e9, 3e9], [1e9, 8e9, 3e9]
    assert not torch.equal(server_weights("v2", fast_first), server_weights("v2", slow_first))
    torch.testing.assert_close(server_weights("v1", fast_first), server_weights("v1", slow_first))


def test_splitfed_v3_keeps_each_clients_model_and_sends_none():
    trainer, events = per_client_round("v3", [1e9, 8e9, 3e9])
    assert not {EventKind.MODEL_DOWNLOAD, EventKind.MODEL_UPLOAD} & {e.kind for e in events}
    own = trainer.own_models
    assert set(own) == {0, 1, 2}
    assert not torch.equal(own[0][0], own[1][0])      # never averaged
    initial = split_parts()[0]
    torch.testing.assert_close(trainer.client_model[0].weight, initial[0].weight)


FEDERATED = {"fedavg": FedAvg, "fedprox": FedProx, "fedlc": FedLC, "fedla": FedLA,
             "feddyn": FedDyn, "feddecorr": FedDecorr}


def fl_round(algorithm, selected=(0, 1), **hyper):
    """Two rounds of a federated trainer on 3 clients, steps called directly (no engine)."""
    features, head = features_and_head(*split_parts())
    trainer = FEDERATED[algorithm](features, head, make_client_data([[0, 1], [2, 3], [4]]),
                                   sgd(8), 5, **hyper)
    for _ in range(2):
        fl_round_directly(trainer, selected)
    return trainer


def test_fedprox_with_mu_zero_equals_fedavg():
    a, b = fl_round("fedavg"), fl_round("fedprox", mu=0.0)
    for p, q in zip(a.model.parameters(), b.model.parameters(), strict=False):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    c = fl_round("fedprox", mu=1.0)
    assert not torch.equal(a.model[1].weight, c.model[1].weight)


@pytest.mark.parametrize("loss, hyper", [("fedprox", {"mu": 0.5}), ("feddyn", {"alpha": 0.5})])
def test_regulariser_gradient_in_closed_form_equals_autograd(loss, hyper):
    """FedProx/FedDyn add mu (w - w_g) [- h_k] to the gradient instead of building an autograd
    graph over all weights: the step must equal one on the whole objective by autograd."""
    trainer = fl_round(loss, selected=(0,), **hyper)   # FedDyn has an h_0 now
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
        (p - g).pow(2).sum() for p, g in zip(params, trainer._global_params, strict=False))
    if loss == "feddyn":
        objective = objective - sum((p * h).sum() for p, h in
                                    zip(params, trainer._dyn_client_grads[0], strict=True))
    objective.backward()
    with torch.no_grad():
        for p in params:                          # the first step of fresh momentum SGD
            p.sub_(p.grad, alpha=COMMON["lr"])
    for p, q in zip(model.parameters(), params, strict=False):
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
    for loss, hyper in [("fedla", {}), ("feddecorr", {"coef": 0.5}), ("feddyn", {"alpha": 0.1}),
                        ("fedlc", {})]:
        trainer = fl_round(loss, **hyper)
        assert torch.isfinite(trainer.model[1].weight).all()
        assert not torch.equal(trainer.model[1].weight, base), loss


def test_feddyn_server_update_formula():
    trainer = fl_round("feddyn", selected=(0,), alpha=0.1)
    # one more round by hand: h <- h - alpha/K (w_k - w); w <- mean w_k - h / alpha
    w_prev = [p.detach().clone() for p in trainer.model.parameters()]
    h_prev = [h.clone() for h in trainer._dyn_server_h]
    trainer.begin_round([0])
    trainer.client_receive_model(trainer.client_model_download(0))
    trainer.client_local_step(0, 0)
    upload = trainer.client_model_upload(0)
    trainer.server_receive_model(upload)
    trainer.end_round()
    for p, w, h, wk in zip(trainer.model.parameters(), w_prev, h_prev, upload.tensors,
                           strict=True):
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
    models = [features_and_head(*split_parts(seed=i)) for i in range(5)]
    trainer = FedConcat(models, make_client_data(sets, per_client=20), sgd(10), 0,
                        encoder_rounds=1,
                        cluster_rng=np.random.default_rng(0),
                        classifier_generator=torch.Generator().manual_seed(0))
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


Demand = namedtuple("Demand", "upload_bytes download_bytes compute_flops")
# (no deadline here: nobody dropped; no asynchronous server here)
STEPS = set(EventKind) - {EventKind.CLIENT_DROPPED, EventKind.SERVER_UPDATE}
EXPECTED_KINDS = {
    "split": STEPS,
    "splitfed_v3": STEPS - {EventKind.MODEL_DOWNLOAD, EventKind.MODEL_UPLOAD},
    "sfl_local_loss": STEPS - {EventKind.GRADIENT_DOWNLOAD},
    "federated": {EventKind.MODEL_DOWNLOAD, EventKind.CLIENT_FORWARD, EventKind.CLIENT_BACKWARD,
                  EventKind.MODEL_UPLOAD},
}
FEDERATED_FAMILY = {"fedavg", "fedprox", "fedlc", "fedla", "feddyn", "feddecorr", "fedconcat",
                    "fedcbs", "flower"}


@pytest.mark.parametrize("algorithm", sorted(set(ALGORITHMS)
                                             - set(ALGORITHMS.with_trait("asynchronous"))))
def test_each_algorithm_has_its_events_and_payloads_equal_tensor_sizes(make_run, algorithm):
    """(Every synchronous algorithm: the asynchronous ones have
    tests/algorithms/test_asynchronous.py.)"""
    run = make_run(algorithm)
    demands = {}   # (round, client) -> (upload bytes, download bytes, compute FLOPs) as told
    ask = run.protocol.demands

    def recording(selected):
        told = ask(selected)
        up, down = told[Direction.UPLINK], told[Direction.DOWNLINK]
        for i, k in enumerate(up.client_ids.tolist()):
            demands[(run.protocol.round, k)] = Demand(
                up.payload_bits[i] / 8, down.payload_bits[i] / 8,
                up.compute_time_s[i] * run.world.cell.flops_per_s[k])
        return told

    run.protocol.demands = recording
    for _ in range(2):
        run.step()
    events = run.log.events
    family = "federated" if algorithm in FEDERATED_FAMILY else "split"
    assert {e.kind for e in events} == EXPECTED_KINDS.get(algorithm, EXPECTED_KINDS[family])
    assert run.problems() == []

    batch = 24 // 3  # 100 images per client, 3 participants: B_k = 8
    client_bytes = state_bytes(build_split_model("alexnet14", "S2", 1, 10,
                                                 torch.Generator())[0])
    full_bytes = state_bytes(torch.nn.Sequential(*build_split_model(
        "alexnet14", "S2", 1, 10, torch.Generator())))
    cut = 768                        # floats a sample at S2: 192 x 2 x 2
    if algorithm == "scala_pe":      # its C8S1 bottleneck: 8 x 2 x 2, two 3x3 convolutions
        cut, client_bytes = 8 * 2 * 2, client_bytes + 4 * (192 * 8 * 9 + 8)
    for e in events:
        if e.kind is EventKind.ACTIVATION_UPLOAD:
            assert e.payload_bytes == batch * cut * 4 + batch * 8      # float32 + int64 labels
            assert demands[(e.round, e.client_id)].upload_bytes == e.payload_bytes
        elif e.kind is EventKind.GRADIENT_DOWNLOAD:
            assert e.payload_bytes == batch * cut * 4
            assert demands[(e.round, e.client_id)].download_bytes == e.payload_bytes
        elif e.kind in (EventKind.MODEL_DOWNLOAD, EventKind.MODEL_UPLOAD):
            if algorithm == "sfl_local_loss":
                assert e.payload_bytes == client_bytes + (768 * 10 + 10) * 4   # + the aux head
            elif algorithm == "fedconcat" and e.round == 2:
                classifier = (2 * 256 * 10 + 10) * 4
                assert e.payload_bytes == (2 * full_bytes - 2 * 2570 * 4 + classifier
                                           if e.kind is EventKind.MODEL_DOWNLOAD else classifier)
            elif family == "federated":
                assert e.payload_bytes == full_bytes
            else:
                assert e.payload_bytes == client_bytes
            if family == "federated":   # the model is what an FL client sends in its step
                demand = demands[(e.round, e.client_id)]
                assert e.payload_bytes == (demand.download_bytes if e.kind.is_downlink
                                           else demand.upload_bytes)
        else:
            assert e.payload_bytes == 0 and e.flops > 0     # compute events carry FLOPs
        forward_only = family == "split" and algorithm != "sfl_local_loss"
        if e.kind is EventKind.CLIENT_FORWARD and forward_only:
            assert demands[(e.round, e.client_id)].compute_flops == pytest.approx(e.flops,
                                                                                  rel=1e-12)
