"""Asynchronous federated learning (FedAsync, FedBuff) on the run loop's driver seam: a
three-client timeline worked out by hand, the servers' arithmetic to the bit, the books of a
real run, and what a scenario may not ask of them."""

import io
import math

import numpy as np
import pandas as pd
import pytest
import simpy
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from scala_netsim.algorithms.async_trainers import FedAsync, FedBuff
from scala_netsim.algorithms.common import ClientData, SGDSettings
from scala_netsim.books.versions import check_asynchronous
from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import validate_scenario
from scala_netsim.core.events import EventKind
from scala_netsim.learn.contract import ServerStep
from scala_netsim.learn.messages import ActivationMessage, GradientMessage, ModelMessage
from scala_netsim.learn.models import features_and_head
from scala_netsim.learn.training import to_device
from scala_netsim.runner.drivers import AsynchronousUpdates
from scala_netsim.sim import async_state
from scala_netsim.sim.async_protocols import AsyncFederatedProtocol
from scala_netsim.sim.timeouts import RecordedAt

from conftest import N0_DBM_PER_HZ, simulate, split_parts, tiny_cell, tiny_scenario

DIST_M, FLOPS_PER_S = (100.0, 250.0, 450.0), (3e9, 1e9, 8e9)
W, P_UE, P_BS, LOCAL_ITERS = 20e6, 0.2, 1.0, 2


def three_clients(trainer_class, **hyper):
    """Three clients of 4, 6 and 8 random images, all three training at once (Q = 3), B = 6:
    B_k = round(6 |D_k| / (3 x 6)) = 1, 2, 3."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(18, 1, 32, 32, generator=g), torch.randint(10, (18,), generator=g)
    data = ClientData(x, y, [np.arange(0, 4), np.arange(4, 10), np.arange(10, 18)], 10)
    trainer = trainer_class(*features_and_head(*split_parts()), data,
                            SGDSettings(6, 0.01, 0.9), 0, concurrency=3, **hyper)
    sim = simulate(trainer, AsyncFederatedProtocol, tiny_cell(DIST_M, FLOPS_PER_S, W, W),
                   LOCAL_ITERS, P_UE, P_BS)
    driver = AsynchronousUpdates(np.random.default_rng(0), 3, 3)
    driver.bind(sim.env, sim.protocol, sim.link, sim.log)
    return trainer, sim, driver


def spy_on_the_server(trainer):
    """Record, for every arrival: the client, the global model before, the model it sent,
    the model it downloaded, and what the server answered."""
    seen, apply = [], trainer.server_apply

    def server_apply(message):
        before = [t.clone() for t in trainer.model.state_dict().values()]
        base = trainer.downloaded[message.client_id][1]
        sent = [t.clone() for t in message.tensors]   # (its slot is reused by the next client)
        update = apply(message)
        seen.append((message.client_id, before, sent, base, update))
        return update

    trainer.server_apply = server_apply
    return seen


def client_time_s(trainer, sim, k):
    """Client k's download + T local steps + upload, from the formulas: its 1/3 slot of each
    band, Shannon rates (the base station's power spread over the band), its FLOP/s."""
    gain = 10 ** (-sim.link.cell.pathloss_db[k] / 10)
    n0 = 10 ** (N0_DBM_PER_HZ / 10) / 1e3
    b = W / 3
    rate_down = b * math.log2(1 + P_BS * (b / W) * gain / (n0 * b))
    rate_up = b * math.log2(1 + P_UE * gain / (n0 * b))
    bits = 8 * trainer.model_bytes()
    events = sim.log.frame()
    flops = events.loc[(events["client_id"] == k) & events["kind"].isin(
        ["client_forward", "client_backward"]), "flops"].iloc[:2 * LOCAL_ITERS].sum()
    return bits / rate_down + flops / FLOPS_PER_S[k] + bits / rate_up


def test_a_three_client_fedasync_timeline_worked_out_by_hand():
    """With Q = K = 3 every client restarts the moment its model arrives (it is the only
    one free), so client k's j-th model arrives at j d_k; the versions are those arrivals in
    time order; an update's staleness is the number of versions made while it trained; the
    server mixes w <- w + a (tau + 1)^(-1/2) (w_k - w), to the bit."""
    trainer, sim, driver = three_clients(FedAsync, alpha=0.6, staleness_exponent=0.5)
    seen = spy_on_the_server(trainer)
    made = [driver.advance(v) for v in range(1, 8)]
    d = [client_time_s(trainer, sim, k) for k in range(3)]
    arrivals = sorted((j * d[k], k, j) for k in range(3) for j in range(1, 8))[:7]
    assert [v.selected for v in made] == [[k] for _, k, _ in arrivals]
    times = [v.start_s for v in made[1:]] + [sim.env.now]
    assert np.allclose(times, [t for t, _, _ in arrivals], rtol=1e-12, atol=0)
    for i, (t, k, j) in enumerate(arrivals):
        # the versions made after its download started ((j - 1) d_k: the moment its previous
        # model arrived, or 0) and before it arrived
        staleness = sum(1 for u, _, _ in arrivals[:i] if (j - 1) * d[k] < u < t)
        client, before, sent, _, update = seen[i]
        assert (client, update.staleness, update.version) == (k, staleness, i + 1)
        weight = 0.6 * (staleness + 1) ** -0.5
        after = list(trainer.model.state_dict().values()) if i == len(seen) - 1 else seen[i + 1][1]
        for w0, wk, w1 in zip(before, sent, after, strict=True):
            assert torch.equal(w1, w0.lerp(wk, weight))
    assert {s for _, s in driver.taken} <= {0, 1, 2, 3}
    assert sorted(sim.protocol.in_flight) == [0, 1, 2]      # all three training again


def test_each_client_trains_on_the_model_as_it_was_when_its_download_started():
    trainer, sim, driver = three_clients(FedAsync)
    seen = spy_on_the_server(trainer)
    for v in range(1, 6):
        driver.advance(v)
    globals_at = {0: [t.clone() for t in seen[0][1]]}       # the initial model
    for _, before, _, _, update in seen:
        globals_at[update.version - 1] = before
    for _, _, _, base, update in seen:
        version = update.version - 1 - update.staleness     # the version it downloaded
        assert all(torch.equal(a, b) for a, b in zip(base, globals_at[version], strict=True))


def test_fedbuff_applies_exactly_the_mean_of_its_buffered_deltas():
    trainer, sim, driver = three_clients(FedBuff, buffer_size=2, server_lr=0.5)
    seen = spy_on_the_server(trainer)
    for v in range(1, 4):
        driver.advance(v)
    assert len(seen) == 6 and [u.applied for *_, u in seen] == [False, True] * 3
    for first, second in zip(seen[0::2], seen[1::2], strict=True):
        before = first[1]
        after = (list(trainer.model.state_dict().values()) if second is seen[-1]
                 else seen[seen.index(second) + 1][1])
        deltas = [[s - b for s, b in zip(sent, base, strict=True)]
                  for _, _, sent, base, _ in (first, second)]
        for i, (w0, w1) in enumerate(zip(before, after, strict=True)):
            mean = torch.stack([deltas[0][i], deltas[1][i]]).sum(0) / 2
            assert torch.equal(w1, w0 + 0.5 * mean)
            exact = w0.double() + 0.5 * (deltas[0][i].double() + deltas[1][i].double()) / 2
            assert torch.allclose(w1.double(), exact, rtol=0, atol=1e-6)
        assert second[4].contributors == (first[0], second[0])


def test_a_real_fedasync_run_keeps_its_books(make_run):
    """Fashion-MNIST, 10 clients, Q = 3: one row per version, a server_update per arrival
    whose staleness the invariants recompute from the recorded times; broken books are
    caught."""
    run = make_run("fedasync", training={"rounds": 6, "concurrency": 3, "eval_every": 3})
    while not run.finished:
        run.step()
    assert run.problems() == []
    rounds = pd.DataFrame(run.rows)
    assert list(rounds["round"]) == [1, 2, 3, 4, 5, 6]
    assert (rounds["num_clients"] == 1).all() and (rounds["in_flight"] == 3).all()
    assert "compute_time_s" not in rounds          # no critical path: clients overlap
    columns, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    updates = events[events["kind"] == EventKind.SERVER_UPDATE.value]
    assert list(updates["version"]) == [1, 2, 3, 4, 5, 6]
    assert list(updates["staleness"]) == list(rounds["staleness_max"])
    transfers = pd.DataFrame(run.link.transfer_rows,
                             columns=["event_index", "bandwidth_hz", "rate_bps", "attempts",
                                      "gain_linear", "tx_power_w"])
    band = {"uplink": 20e6, "downlink": 20e6}
    assert check_asynchronous(events, rounds, transfers, band, 3) == []
    stale = events.copy()
    stale.loc[updates.index[-1], "staleness"] += 1
    assert any("staleness is not the number of versions" in p
               for p in check_asynchronous(stale, rounds, transfers, band, 3))
    assert any("more than Q = 2" in p
               for p in check_asynchronous(events, rounds, transfers, band, 2))


def test_asynchronous_algorithms_are_never_re_timed_nor_timed_alone():
    for name in ("fedasync", "fedbuff"):
        traits = ALGORITHMS[name].traits
        assert traits.asynchronous and not traits.retimeable and not traits.timeable
        ALGORITHMS[name].classes()          # the classes agree with the traits
    from scala_netsim.tools.sweep import SweepPoint, learning_key

    scenario = tiny_scenario("fedasync")
    assert learning_key(SweepPoint("fedasync", (), scenario, None)) is None


@pytest.mark.parametrize("sections, message", [
    ({"training": {"concurrency": 11}},
     "training.concurrency: at most the 10 clients there are (data.num_clients), got 11"),
    ({"training": {"concurrency": 0}}, "training.concurrency: must be >= 1, got 0"),
    ({"training": {"deadline_s": 30.0}},
     "training.deadline_s: asynchronous algorithms (fedasync) have no round to cut"),
    ({"training": {"over_selection": 0.2}},
     "training.over_selection: asynchronous algorithms (fedasync) have no round to cut"),
    ({"network": {"allocation": "proportional"}},
     "network.allocation: asynchronous algorithms (fedasync) give each client in flight a "
     "fixed 1/Q slot"),
    ({"network": {"link": {"mode": "fixed_rate", "target_rate_bps": 1e6}}},
     "network.link.mode: asynchronous algorithms (fedasync) need a link that loses nothing"),
    ({"timing_only": True}, "timing_only: asynchronous algorithms (fedasync) cannot be timed"),
    ({"fedasync": {"alpha": 1.5}}, "fedasync.alpha: must be <= 1"),
    ({"fedasync": {"staleness_exponent": -1}}, "fedasync.staleness_exponent: must be >= 0"),
])
def test_what_an_asynchronous_scenario_may_not_ask(sections, message):
    document = tiny_scenario("fedasync").model_dump(mode="json")
    for key, value in sections.items():
        document[key] = ({**document[key], **value} if isinstance(value, dict)
                         and isinstance(document.get(key), dict) else value)
    with pytest.raises(ScenarioError) as caught:
        validate_scenario(document)
    assert message in str(caught.value)


def test_fedbuff_needs_a_buffer():
    document = tiny_scenario("fedbuff").model_dump(mode="json")
    document["fedbuff"] = {"buffer_size": 0}
    with pytest.raises(ScenarioError, match="fedbuff.buffer_size: must be >= 1, got 0"):
        validate_scenario(document)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm, sections", [
    ("fedasync", {}),
    ("fedbuff", {"fedbuff": {"buffer_size": 2}}),
    ("async_sfl", {"network": {"shadowing_std_db": 8.0,
                               "fading": {"kind": "rayleigh", "coherence": "transfer"}}}),
    ("gas", {"gas": {"model_buffer": 2, "activation_buffer": 2},
             "compute": {"client_flops_per_s": [1.0e9, 1.0e10]}}),
])
def test_a_run_saved_between_versions_resumes_as_if_never_stopped(make_run, algorithm, sections):
    """Saved after version 3 or later with clients in flight (their stages, the timeouts
    they wait on, the server's queue, what the trainer holds for them; with a fading draw
    per transfer, or compute spread over the clients), written and read as a checkpoint is
    (torch.save, weights_only), then resumed in a new run: every row, event, grant and
    transfer, and the final model, are the uninterrupted run's to the bit."""
    training = {"training": {"rounds": 8, "concurrency": 3, "eval_every": 2,
                             "local_iters": 2}}
    whole = make_run(algorithm, **training, **sections)
    while not whole.finished:
        whole.step()

    first = make_run(algorithm, **training, **sections)
    first.step()
    while first.round < 3 or not first.checkpointable:
        first.step()
    assert not first.finished and first.protocol.position, "nothing was in flight"
    saved = io.BytesIO()
    torch.save(first.state_dict(), saved)
    saved.seek(0)
    resumed = make_run(algorithm, **training, **sections)
    resumed.load_state_dict(torch.load(saved, weights_only=True))
    while not resumed.finished:
        resumed.step()

    pd.testing.assert_frame_equal(pd.DataFrame(resumed.rows), pd.DataFrame(whole.rows))
    assert resumed.event_table() == whole.event_table()
    assert resumed.link.grant_rows == whole.link.grant_rows
    assert resumed.link.transfer_rows == whole.link.transfer_rows
    for (name, a), (_, b) in zip(resumed.trainer.state_dict()["modules"].items(),
                                 whole.trainer.state_dict()["modules"].items(), strict=True):
        for key in a:
            assert torch.equal(a[key], b[key]), (name, key)


@given(st.floats(0, 1e6), st.floats(0, 1), st.floats(0, 1e4))
@example(now=0.3333333333333333, share=0.5, left=0.5361979518145433)   # no d: now + d == end
def test_a_rebuilt_timeout_ends_at_the_same_float_instant(now, share, left):
    """The event standing for a timeout that began at `start` (before the checkpoint at
    `now`) and lasted `duration` happens at start + duration to the bit, which no timeout
    made at `now` could always do (now + d cannot reach every float)."""
    start = now * share
    end = start + ((now - start) + left)
    assume(end >= now)
    env = simpy.Environment(initial_time=now)
    env.run(until=RecordedAt(env, end, ("compute",)))
    assert env.now == end


def test_what_a_stage_carries_survives_a_checkpoint_file():
    """Messages (with their tensors), server steps, event kinds, lists and tuples are saved
    as plain types and come back equal, through torch.save/torch.load(weights_only)."""
    activations = ActivationMessage(3, 1, torch.randn(2, 4), torch.tensor([1, 7]), wire_bytes=40)
    carry = ([activations], ServerStep([GradientMessage(3, 1, torch.randn(2, 4))], 123),
             ModelMessage(3, (torch.ones(2),)), ("compute", 0.5, 0.25, 1, 3,
                                                 EventKind.CLIENT_FORWARD, 99))
    saved = io.BytesIO()
    torch.save(async_state.pack(carry), saved)
    saved.seek(0)
    back = async_state.unpack(torch.load(saved, weights_only=True))
    (a,), step, model, record = back
    assert (a.client_id, a.local_iter, a.wire_bytes) == (3, 1, 40)
    assert torch.equal(a.activations, activations.activations)
    assert torch.equal(a.labels, activations.labels)
    assert step.flops == 123 and torch.equal(step.replies[0].gradients,
                                             carry[1].replies[0].gradients)
    assert torch.equal(model.tensors[0], torch.ones(2))
    assert record == carry[3] and record[5] is EventKind.CLIENT_FORWARD


def test_a_checkpoint_read_onto_the_cpu_goes_back_to_the_run_device():
    """What trainers and clients in flight held (through dicts, lists and tuples, messages
    packed as dicts) is moved to the run's device on resuming; numbers and names stay as
    they are (the meta device stands in for a GPU)."""
    packed = async_state.pack(([ActivationMessage(3, 1, torch.randn(2, 4), torch.tensor([1, 7]))],
                               {"buffer": [(4, (torch.ones(2),))], "counter": 7}))
    moved = to_device(packed, torch.device("meta"))
    (message,), extra = async_state.unpack(moved)
    assert message.activations.is_meta and message.labels.is_meta and message.client_id == 3
    assert extra["buffer"][0][1][0].is_meta and extra["buffer"][0][0] == 4
    assert extra["counter"] == 7
