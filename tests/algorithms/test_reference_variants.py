"""The split and federated baselines as their reference code runs them (issue 46), each
option against today's behaviour on a tiny round: the server's order (every step on arrival,
or one client's T steps as a block), SFL with local loss's server (one shared part, or a
copy per client averaged) and optimisers that keep their state across a client's rounds."""

import copy

import pytest
import torch
import torch.nn.functional as F

from scala_netsim.algorithms.common import SGDSettings
from scala_netsim.algorithms.federated import FedAvg
from scala_netsim.algorithms.scala import CASFL, SCALA
from scala_netsim.algorithms.splitfed import SFLLocalLoss, SplitFedV1, SplitFedV2
from scala_netsim.config.documents import ScenarioError
from scala_netsim.core.events import EventKind
from scala_netsim.learn.models import features_and_head
from scala_netsim.learn.training import ClientSampler
from scala_netsim.sim.drops import NO_RULES, RoundRules
from scala_netsim.sim.protocols import LocalLossProtocol, PerClientSplitProtocol

from conftest import (
    fl_round_directly,
    make_client_data,
    plain_split_training,
    run_round_directly,
    simulate,
    split_parts,
    tiny_cell,
    tiny_scenario,
)

COMMON = dict(lr=0.05, momentum=0.9, weight_decay=0.0)
SEQUENTIAL = RoundRules(sequential_server=True)
#: client 1 computes fastest, then 2, then 0: arrival order 1, 2, 0
UNEVEN_FLOPS = [1e9, 8e9, 3e9]
OTHER_FLOPS = [8e9, 1e9, 3e9]
LABELS = [[0, 1], [2, 3], [4, 5]]


def sgd(batch_size, keep=False):
    return SGDSettings(batch_size, **COMMON, keep_optimizer_state=keep)


def weights(*modules):
    return torch.cat([p.detach().flatten() for m in modules for p in m.parameters()])


def server_steps(events):
    """(client, local iteration, start, end) of every server step, in the order taken."""
    return [(e.client_id, e.local_iter, e.t_start_s, e.t_end_s)
            for e in sorted(events, key=lambda e: e.t_start_s)
            if e.kind is EventKind.SERVER_STEP]


def engine_round(trainer, protocol, flops, rules, local_iters=2):
    sim = simulate(trainer, protocol, tiny_cell([200.0, 200.0, 200.0], flops), local_iters,
                   rules=rules)
    sim.run_round(1, [0, 1, 2])
    return sim.log.events


def splitfed_v2(flops, rules):
    trainer = SplitFedV2(*split_parts(), make_client_data(LABELS), sgd(12), 3)
    return trainer, engine_round(trainer, PerClientSplitProtocol, flops, rules)


def sfl_local_loss(flops, rules, per_client_server=False):
    trainer = SFLLocalLoss(*split_parts(), make_client_data(LABELS), sgd(12), 3,
                           aux_generator=torch.Generator().manual_seed(1),
                           per_client_server=per_client_server)
    return trainer, engine_round(trainer, LocalLossProtocol, flops, rules)


# --- the server's order ----------------------------------------------------------------------
def test_sequential_splitfed_v2_serves_each_client_as_a_block_in_id_order():
    _, arrival = splitfed_v2(UNEVEN_FLOPS, NO_RULES)
    order = [(k, t) for k, t, _, _ in server_steps(arrival)]
    assert order[:2] == [(1, 0), (2, 0)] and order != sorted(order)   # today: interleaved
    _, events = splitfed_v2(UNEVEN_FLOPS, SEQUENTIAL)
    steps = server_steps(events)
    assert [(k, t) for k, t, _, _ in steps] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    uploaded = {(e.client_id, e.local_iter): e.t_end_s for e in events
                if e.kind is EventKind.ACTIVATION_UPLOAD}
    # client 1's activations were in before client 0's block ended, and waited for it
    client0_done = steps[1][3]
    assert uploaded[(1, 0)] < client0_done <= steps[2][2]
    assert uploaded[(2, 0)] < steps[3][3] <= steps[4][2]


def test_sequential_splitfed_v2_learns_the_reference_loop_in_any_cell():
    """Thapa et al.'s loop: for each client, its T iterations on the shared server model."""
    trainer, _ = splitfed_v2(UNEVEN_FLOPS, SEQUENTIAL)
    other, _ = splitfed_v2(OTHER_FLOPS, SEQUENTIAL)
    assert torch.equal(weights(trainer.server_model, trainer.client_model),
                       weights(other.server_model, other.client_model))

    direct = SplitFedV2(*split_parts(), make_client_data(LABELS), sgd(12), 3)
    direct.begin_round([0, 1, 2])
    for k in (0, 1, 2):
        direct.client_receive_model(direct.client_model_download(k))
        for t in range(2):
            (reply,) = direct.server_step([direct.client_forward(k, t).upload]).replies
            direct.client_backward(reply)
        direct.server_receive_model(direct.client_model_upload(k))
    direct.end_round()
    torch.testing.assert_close(weights(trainer.server_model, trainer.client_model),
                               weights(direct.server_model, direct.client_model),
                               rtol=0, atol=0)

    arrival, _ = splitfed_v2(UNEVEN_FLOPS, NO_RULES)
    assert not torch.equal(weights(arrival.server_model), weights(trainer.server_model))


def test_sequential_sfl_local_loss_takes_each_clients_activations_as_a_block():
    _, arrival = sfl_local_loss(UNEVEN_FLOPS, NO_RULES)
    order = [(k, t) for k, t, _, _ in server_steps(arrival)]
    assert order[:2] == [(1, 0), (2, 0)] and order != sorted(order)   # today: interleaved
    a, events = sfl_local_loss(UNEVEN_FLOPS, SEQUENTIAL)
    steps = server_steps(events)
    assert [(k, t) for k, t, _, _ in steps] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert all(end <= start
               for (_, _, _, end), (_, _, start, _) in zip(steps, steps[1:], strict=False))
    b, _ = sfl_local_loss(OTHER_FLOPS, SEQUENTIAL)
    assert torch.equal(weights(a.server_model), weights(b.server_model))


# --- SFL with local loss: one server part, or a copy per client -----------------------------
def test_sfl_local_loss_per_client_server_averages_copies_whatever_the_order():
    shared_a, _ = sfl_local_loss(UNEVEN_FLOPS, NO_RULES)
    shared_b, _ = sfl_local_loss(OTHER_FLOPS, NO_RULES)
    assert not torch.equal(weights(shared_a.server_model), weights(shared_b.server_model))
    copies_a, _ = sfl_local_loss(UNEVEN_FLOPS, NO_RULES, per_client_server=True)
    copies_b, _ = sfl_local_loss(OTHER_FLOPS, NO_RULES, per_client_server=True)
    torch.testing.assert_close(weights(copies_a.server_model), weights(copies_b.server_model),
                               rtol=0, atol=0)
    assert not torch.equal(weights(copies_a.server_model), weights(shared_a.server_model))
    server = [(k, w) for group, k, w in copies_a.aggregations if group == "server"]
    assert [k for k, _ in server] == [0, 1, 2] and sum(w for _, w in server) == pytest.approx(1)
    assert copies_a.persistent_optimizers() == {}
    assert not SFLLocalLoss.learns_server_order(tiny_scenario(
        "sfl_local_loss", sfl_local_loss={"server": "per_client"}).sfl_local_loss)
    assert SFLLocalLoss.learns_server_order(tiny_scenario("sfl_local_loss").sfl_local_loss)


def test_sfl_local_loss_per_client_server_with_one_client_is_plain_local_loss_training():
    """Round 1 with one client: its copy is the server part trained on its activations alone,
    which the average then is."""
    data = make_client_data([[0, 1, 2]])
    client, server = split_parts()
    shared = SFLLocalLoss(*split_parts(), data, sgd(4), 3,
                          aux_generator=torch.Generator().manual_seed(1))
    copies = SFLLocalLoss(client, server, data, sgd(4), 3,
                          aux_generator=torch.Generator().manual_seed(1),
                          per_client_server=True)
    for trainer in (shared, copies):
        trainer.begin_round([0])
        trainer.client_receive_model(trainer.client_model_download(0))
        for t in range(3):
            trainer.server_step([trainer.client_local_step(0, t).upload])
        trainer.server_receive_model(trainer.client_model_upload(0))
        trainer.end_round()
    torch.testing.assert_close(weights(copies.server_model), weights(shared.server_model))


# --- optimisers that keep their state -------------------------------------------------------
def test_persistent_splitfed_v1_with_one_client_is_plain_split_training_with_one_optimiser():
    """As tests/algorithms/test_baselines.py's plain-training test, but with one optimiser
    each for the client and the server across both rounds (the authors' code keeps one)."""
    data = make_client_data([[0, 1, 2]])
    client, server = split_parts()
    ref_client, ref_server = copy.deepcopy(client), copy.deepcopy(server)
    trainer = SplitFedV1(client, server, data, sgd(4, keep=True), 7)
    per_round = SplitFedV1(*split_parts(), data, sgd(4), 7)
    for t in (trainer, per_round):
        for _ in range(2):
            run_round_directly(t, [0], local_iters=3)

    plain_split_training(ref_client, ref_server, data, 7, 4, 2, 3, False, **COMMON)
    torch.testing.assert_close(weights(client, server), weights(ref_client, ref_server),
                               rtol=1e-5, atol=1e-6)
    assert not torch.allclose(weights(per_round.client_model, per_round.server_model),
                              weights(ref_client, ref_server), rtol=1e-5, atol=1e-6)


def test_persistent_ca_sfl_with_one_client_is_plain_split_training_with_one_optimiser():
    """Issue 61: CA-SFL's (and SCALA's) client optimiser keeps its momentum across a
    client's rounds with optimizer_state: persistent. With one client CA-SFL's server and
    client losses are the one cross-entropy, so two rounds are plain split training with one
    optimiser each for the whole run; per round, the client's restarts every round."""
    data = make_client_data([[0, 1, 2]])
    client, server = split_parts()
    ref_client, ref_server = copy.deepcopy(client), copy.deepcopy(server)
    trainer = CASFL(client, server, data, sgd(4, keep=True), 7)
    per_round = CASFL(*split_parts(), data, sgd(4), 7)
    for t in (trainer, per_round):
        for _ in range(2):
            run_round_directly(t, [0], local_iters=3)
    plain_split_training(ref_client, ref_server, data, 7, 4, 2, 3, False, **COMMON)
    torch.testing.assert_close(weights(client, server), weights(ref_client, ref_server),
                               rtol=1e-5, atol=1e-6)
    assert not torch.allclose(weights(per_round.client_model), weights(ref_client),
                              rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("keep", [False, True])
def test_scala_client_takes_up_its_own_momentum_only_when_persistent(keep):
    trainer = SCALA(*split_parts(), make_client_data(LABELS), sgd(12, keep), 3)
    run_round_directly(trainer, [0, 1], 2)
    kept = trainer.slots.kept_state()
    assert set(kept) == ({0, 1} if keep else set())
    run_round_directly(trainer, [1, 2], 2)
    trainer.begin_round([0])
    trainer.client_receive_model(trainer.client_model_download(0))
    _, optimizer = trainer.slots[0]
    params = [p for g in optimizer.param_groups for p in g["params"]]
    if keep:   # round 3: client 0's momentum as its round 1 left it
        assert all(torch.equal(optimizer.state[p]["momentum_buffer"], b)
                   for p, b in zip(params, kept[0], strict=True))
    else:
        assert all("momentum_buffer" not in optimizer.state[p] for p in params)


def fedavg_rounds(keep, rounds):
    trainer = FedAvg(*features_and_head(*split_parts()), make_client_data(LABELS), sgd(8, keep),
                     5)
    for selected in rounds:
        fl_round_directly(trainer, selected)
    return trainer


def test_persistent_fedavg_with_one_client_is_plain_training_with_one_optimiser():
    trainer = fedavg_rounds(True, [[0], [0]])
    ref = torch.nn.Sequential(*features_and_head(*split_parts()))
    data = make_client_data(LABELS)
    sampler = ClientSampler(data.client_indices, 5, "cpu")
    optimizer = torch.optim.SGD(ref.parameters(), **COMMON)
    for _ in range(6):
        idx = sampler.next_batch(0, 8 * 8 // 8)   # B_0 = B (it is the round's only client)
        loss = F.cross_entropy(ref(data.train_x[idx]), data.train_y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.testing.assert_close(weights(trainer.model), weights(ref), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(weights(fedavg_rounds(False, [[0], [0]]).model), weights(ref),
                              rtol=1e-5, atol=1e-6)


def test_a_client_takes_up_its_own_momentum_after_rounds_without_it():
    """Client 0 sits out round 2: in round 3 it continues its round-1 momentum, and client
    1's momentum of round 2 stays client 1's."""
    trainer = fedavg_rounds(True, [[0], [1]])
    kept = trainer.slots.kept_state()
    assert set(kept) == {0, 1}
    saved0 = [b.clone() for b in kept[0]]
    trainer.begin_round([0])
    trainer.client_receive_model(trainer.client_model_download(0))
    _, optimizer = trainer.slots[0]
    params = [p for g in optimizer.param_groups for p in g["params"]]
    for p, b in zip(params, saved0, strict=True):
        assert torch.equal(optimizer.state[p]["momentum_buffer"], b)
    assert not torch.equal(saved0[0], kept[1][0])


@pytest.mark.parametrize("keep", [False, True])
def test_kept_optimiser_state_survives_a_checkpoint(keep):
    def v1(keep):
        return SplitFedV1(*split_parts(), make_client_data(LABELS), sgd(12, keep), 3)

    straight = v1(keep)
    for _ in range(2):
        run_round_directly(straight, [0, 2], 2)
    first = v1(keep)
    run_round_directly(first, [0, 2], 2)
    state = first.state_dict()
    assert bool(state["kept_optimizers"]["server"]) is keep
    resumed = v1(keep)
    resumed.load_state_dict(copy.deepcopy(state))
    run_round_directly(resumed, [0, 2], 2)
    assert torch.equal(weights(straight.client_model, straight.server_model),
                       weights(resumed.client_model, resumed.server_model))


# --- the scenario keys ---------------------------------------------------------------------------
def test_the_keys_default_to_todays_behaviour_and_refuse_other_values():
    scenario = tiny_scenario("splitfed_v2")
    assert scenario.splitfed_v2.server_order == "arrival"
    assert scenario.sfl_local_loss.server == "shared"
    for name in ("splitfed_v1", "splitfed_v2", "sfl_local_loss", "fedavg", "fedprox", "fedlc",
                 "scala", "ca_sfl", "scala_pe"):
        assert getattr(scenario, name).optimizer_state == "per_round"
    for key, value in (("splitfed_v2", {"server_order": "fifo"}),
                       ("sfl_local_loss", {"server": "copies"}),
                       ("fedprox", {"optimizer_state": "kept"})):
        with pytest.raises(ScenarioError) as info:
            tiny_scenario(key, **{key: value})
        (field, bad), = value.items()
        assert f"{key}.{field}" in str(info.value) and bad in str(info.value)


@pytest.mark.parametrize("algorithm, section", [
    ("splitfed_v2", {"server_order": "sequential", "optimizer_state": "persistent"}),
    ("sfl_local_loss", {"server_order": "sequential", "server": "per_client",
                        "optimizer_state": "persistent"}),
    ("splitfed_v1", {"optimizer_state": "persistent"}),
    ("fedprox", {"optimizer_state": "persistent"}),
    ("scala", {"optimizer_state": "persistent"}),
    ("ca_sfl", {"optimizer_state": "persistent"}),
])
def test_each_variant_runs_end_to_end_with_every_invariant(make_run, algorithm, section):
    run = make_run(algorithm, **{algorithm: section})
    for _ in range(2):
        run.step()
    assert run.problems() == []
    if section.get("server_order") == "sequential":
        for round_ in (1, 2):
            order = [(k, t) for k, t, _, _ in server_steps(
                [e for e in run.log.events if e.round == round_])]
            assert order == sorted(order)   # client by client, each one's steps in order
    assert bool(run.trainer.slots.kept_state()) is (section["optimizer_state"] == "persistent")
