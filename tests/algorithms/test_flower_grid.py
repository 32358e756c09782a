"""The SimulatedGrid (issue 65): Flower's messages on the run's clock, the ClientApp called
in-process, its bytes and FLOPs, its deadline and its errors."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import scala_netsim as sn

from conftest import ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("flwr") is None,
                                reason="the optional extra: pip install -e '.[flower]'")

QUICK = ROOT / "scenarios" / "quickstart.yaml"
TINY = {"data.train_samples": 600, "data.test_samples": 100, "data.num_clients": 10,
        "training.participation": 0.3, "training.local_iters": 2, "training.batch_size": 30,
        "training.eval_every": 1, "model.arch": "alexnet14", "algorithms": ["flower"]}


def test_a_messages_bytes_are_its_arrays_elements_times_their_size():
    from flwr.app import ArrayRecord, ConfigRecord, RecordDict

    from scala_netsim.flower.grid import array_bytes

    content = RecordDict({"arrays": ArrayRecord({"w": torch.zeros(3, 4)}),
                          "buffers": ArrayRecord({"n": torch.zeros(2, dtype=torch.int64)}),
                          "config": ConfigRecord({"local-steps": 5})})
    assert array_bytes(content) == 3 * 4 * 4 + 2 * 8


def test_the_counted_flops_keep_the_backward_pass_apart():
    """Two linear layers on a batch of 2 (4 -> 3 -> 2): forward 2*2*4*3 + 2*2*3*2 = 72;
    backward: the second layer's weight and input gradients 24 + 24, the first's weight
    gradient 48 (its input needs none)."""
    from scala_netsim.flower.grid import CountedFlops

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    with CountedFlops() as counter:
        model(torch.randn(2, 4)).sum().backward()
    assert (counter.forward_flops, counter.backward_flops) == (72, 96)
    assert counter.get_total_flops() == 168


def echo_app(change=None):
    """A ClientApp that sends its arrays back (after `change(message, arrays)`)."""
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(message, context):
        arrays = message.content["arrays"].to_torch_state_dict()
        model = torch.nn.Linear(2, 1, bias=False)
        model.weight.data.copy_(arrays["w"])
        model(torch.ones(3, 2)).sum().backward()      # 2*3*2*1 forward, 12 backward
        content = RecordDict({"arrays": ArrayRecord({"w": model.weight.detach()}),
                              "metrics": MetricRecord({"num-examples": context.node_config[
                                  "partition-id"] + 1})})
        if change is not None:
            content = change(message, content)
        if content is None or isinstance(content, Message):
            return content
        return Message(content, reply_to=message)

    return app


def messages_for(grid, nodes):
    from flwr.app import ArrayRecord, Message, RecordDict

    from scala_netsim.flower.grid import identity

    with identity(1):
        return [Message(RecordDict({"arrays": ArrayRecord({"w": torch.ones(1, 2)})}), node,
                        "train") for node in nodes]


def immediate(grid):
    """A clock on which every pushed message is carried at once (the protocol's order)."""
    def carry(timeout_s):
        for node in sorted(grid.pushed):
            grid.deliver(node)
            grid.arrived(node)
    return carry


def test_the_grid_carries_each_message_to_its_clients_app_and_returns_the_replies():
    from scala_netsim.flower.grid import SimulatedGrid

    grid = SimulatedGrid(echo_app(), num_clients=4)
    assert list(grid.get_node_ids()) == [2, 3, 4, 5]
    with pytest.raises(RuntimeError, match="carries messages on a run's clock"):
        grid.send_and_receive(messages_for(grid, [3]))
    grid.carry = immediate(grid)
    grid.round = 7
    sent = messages_for(grid, [5, 3])
    replies = grid.send_and_receive(sent)
    assert [r.metadata.src_node_id for r in replies] == [3, 5]
    assert [r.metadata.reply_to_message_id for r in replies] == ["7-3", "7-5"]
    assert [r.content["metrics"]["num-examples"] for r in replies] == [2, 4]
    assert grid.pull_messages(["7-3", "7-5"]) == []          # each reply is pulled once
    # the app's FLOPs are counted around the call, forward and backward apart
    grid.push_messages(messages_for(grid, [4]))
    assert grid.deliver(4).steps == ((12, 12),) and grid.deliver(4).counted
    with pytest.raises(ValueError, match="node 9: the run's nodes are 2..5"):
        grid.push_messages(messages_for(grid, [9]))


@pytest.mark.parametrize(("change", "says"), [
    (lambda m, c: 1 / 0, r"its ClientApp raised ZeroDivisionError: division by zero"),
    (lambda m, c: None, r"its ClientApp returned a NoneType, not a flwr Message"),
    (lambda m, c: type(c)({"metrics": c["metrics"]}), r"its reply holds no arrays"),
    (lambda m, c: type(c)({**c, "more": c["arrays"]}),
     r"its reply holds 2 ArrayRecords \['arrays', 'more'\]: one is expected"),
    (lambda m, c: type(c)({**c, "metrics": type(c["metrics"])({"loss": 1.0})}),
     r"its reply holds 1 MetricRecords: one with 'num-examples' is expected"),
    (lambda m, c: type(c)({**c, "arrays": type(c["arrays"])({"w": torch.ones(2, 1)})}),
     r"its reply's arrays differ from those it was sent: w: sent \(1, 2\), returned \(2, 1\)"),
    (lambda m, c: type(c)({**c, "metrics": type(c["metrics"])({"num-examples": [1, 2]})}),
     r"its reply's 'num-examples' is \[1, 2\]: one number \(int or float\) is expected"),
    (lambda m, c: type(m)(c, dst_node_id=1, message_type="train"),
     r"its ClientApp returned a Message that is no reply to the one it was sent "
     r"\(reply_to_message_id '', src_node_id 4\): build it as Message\(content, "
     r"reply_to=message\)"),
])
def test_a_bad_reply_is_an_error_naming_the_client_and_the_round(change, says):
    from scala_netsim.flower.grid import FlowerAppError, SimulatedGrid

    grid = SimulatedGrid(echo_app(change), num_clients=4)
    grid.carry, grid.round = immediate(grid), 3
    with pytest.raises(FlowerAppError, match=r"flower: client 2 \(node 4\) in round 3: " + says):
        grid.send_and_receive(messages_for(grid, [4]))


def test_replies_the_strategies_would_pair_wrongly_are_errors_naming_the_client():
    """Arrays in another order (Krum and QFedAvg pair them by position), and a client whose
    metric keys differ from the round's first reply's."""
    from flwr.app import ArrayRecord, Message, RecordDict

    from scala_netsim.flower.grid import FlowerAppError, SimulatedGrid, identity

    def swapped(message, content):
        arrays = message.content["arrays"].to_torch_state_dict()
        return type(content)({**content, "arrays": ArrayRecord(dict(reversed(arrays.items())))})

    grid = SimulatedGrid(echo_app(swapped), num_clients=4)
    grid.carry, grid.round = immediate(grid), 2
    with identity(1):
        sent = [Message(RecordDict({"arrays": ArrayRecord({"w": torch.ones(1, 2),
                                                           "b": torch.ones(1)})}), 3, "train")]
    with pytest.raises(FlowerAppError, match=r"client 1 \(node 3\) in round 2: its reply's "
                                             r"arrays are in another order than those it was "
                                             r"sent \(\['b', 'w'\] against \['w', 'b'\]\)"):
        grid.send_and_receive(sent)

    def more_on_node_5(message, content):
        if message.metadata.dst_node_id == 5:
            content["metrics"]["loss"] = 0.5
        return content

    grid = SimulatedGrid(echo_app(more_on_node_5), num_clients=4)
    grid.carry, grid.round = immediate(grid), 2
    with pytest.raises(FlowerAppError, match=r"client 3 \(node 5\) in round 2: its reply's "
                                             r"MetricRecord \{'metrics': \['loss', "
                                             r"'num-examples'\]\} differs from client 1's"):
        grid.send_and_receive(messages_for(grid, [3, 5]))


def test_a_users_app_draws_from_global_generators_seeded_by_round_and_node():
    """Each call's global generators are the run's seed's for its round and node (the same
    draws in another run, whatever the order of the calls), put back after the call."""
    import random

    import numpy as np

    from scala_netsim.flower.grid import SimulatedGrid

    def drawn(message, content):
        content["arrays"]["w"] = type(content["arrays"]["w"]).from_torch_tensor(
            torch.rand(1, 2) + float(np.random.rand()) + random.random())
        return content

    def draws(nodes, round_, seed=5):
        grid = SimulatedGrid(echo_app(drawn), num_clients=4, seed=seed)
        grid.carry, grid.round = immediate(grid), round_
        return {r.metadata.src_node_id: r.content["arrays"]["w"].numpy().tolist()
                for r in grid.send_and_receive(messages_for(grid, nodes))}

    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    first = draws([3, 4], 1)
    after = (torch.rand(1).item(), np.random.rand(), random.random())
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    assert after == (torch.rand(1).item(), np.random.rand(), random.random())
    assert draws([4], 1)[4] == first[4] and draws([3, 4], 2) != first
    assert first[3] != first[4] and draws([3, 4], 1, seed=6) != first


def test_a_clientapp_failing_mid_run_names_itself_and_keeps_the_rounds_before(tmp_path,
                                                                               monkeypatch):
    """The package's ClientApp, one client of round 2 replying with a reshaped array: the
    run stops with the error, the rounds before it are on disk."""
    from flwr.app import ArrayRecord
    from flwr.clientapp import ClientApp

    import scala_netsim.flower.trainer as trainer_module
    from scala_netsim.flower.grid import FlowerAppError

    package_app = trainer_module.client_app

    def broken(trainer):
        inner, app = package_app(trainer), ClientApp()

        @app.train()
        def train(message, context):
            reply = inner(message, context)
            if message.content["config"]["server-round"] == 2:
                first = next(iter(reply.content["arrays"]))
                arrays = reply.content["arrays"].to_torch_state_dict()
                arrays[first] = arrays[first].unsqueeze(0)
                reply.content["arrays"] = ArrayRecord(arrays)
            return reply

        return app

    monkeypatch.setattr(trainer_module, "client_app", broken)
    scenario = sn.load_scenario(QUICK, {**TINY, "training.rounds": 3})
    with pytest.raises(FlowerAppError, match=r"flower: client \d+ \(node \d+\) in round 2: "
                                             r"its reply's arrays differ"):
        sn.run(scenario, out=tmp_path, echo=False)
    rounds = pd.read_csv(tmp_path / "quickstart/flower/seed0/rounds.csv")
    assert rounds["round"].tolist() == [1]


def upload_ends(folder: Path) -> pd.Series:
    """Each client's model upload's end (s), uploads cut by a drop left out."""
    events = pd.read_csv(folder / "events.csv")
    uploads = events[(events.kind == "model_upload")
                     & (events.get("completed", pd.Series(1, events.index)) == 1)]
    return uploads.set_index("client_id")["t_end_s"]


def test_a_timeout_drops_exactly_the_clients_whose_replies_arrive_after_it(tmp_path):
    """One round without a deadline gives each client's reply instant; a deadline between
    two of them drops the later ones, and only they send no reply (the strategy aggregates
    the others: the model is FedAvg's of those clients)."""
    free = sn.run(sn.load_scenario(QUICK, {**TINY, "training.rounds": 1,
                                           "algorithms": ["flower"]}),
                  out=tmp_path / "free", echo=False)
    assert free.summary["status"].tolist() == ["completed"]
    ends = upload_ends(tmp_path / "free/quickstart/flower/seed0").sort_values()
    deadline_s = float(np.mean(ends.iloc[:2]))
    keys = {**TINY, "training.rounds": 1, "training.deadline_s": deadline_s,
            "algorithms": ["fedavg", "flower"]}
    sn.run(sn.load_scenario(QUICK, keys), out=tmp_path / "cut", echo=False)
    root = tmp_path / "cut/quickstart"
    events = pd.read_csv(root / "flower/seed0/events.csv")
    dropped = sorted(events[events.kind == "client_dropped"].client_id)
    assert dropped == sorted(ends.index[ends > deadline_s]) and len(dropped) == 2
    assert upload_ends(root / "flower/seed0").index.tolist() == [ends.index[0]]
    # the same drops, bytes and times as the package's FedAvg under that deadline, and the
    # same model: only the replies that arrived were aggregated
    for name in ("events.csv", "rounds.csv"):
        assert ((root / "fedavg/seed0" / name).read_bytes()
                == (root / "flower/seed0" / name).read_bytes()), name


def test_reported_flops_are_the_steps_and_turn_the_counter_off():
    """An app that reports its steps' FLOPs is timed by them, its later calls run without
    torch's counter, and a later reply reporting none is an error."""
    from flwr.app import MetricRecord

    from scala_netsim.flower.grid import FlowerAppError, SimulatedGrid

    calls = []

    def report_once(message, content):
        calls.append(1)
        if len(calls) == 1:
            content["metrics"] = MetricRecord({"num-examples": 1, "flops-forward": [5, 7],
                                               "flops-backward": [10, 14]})
        return content

    grid = SimulatedGrid(echo_app(report_once), num_clients=4)
    grid.round = 1
    grid.push_messages(messages_for(grid, [2, 3]))
    first = grid.deliver(2)
    assert first.steps == ((5, 10), (7, 14)) and not first.counted and grid.reports_flops
    with pytest.raises(FlowerAppError, match=r"client 1 \(node 3\) in round 1: its reply "
                                             r"reports no FLOPs \(flops-forward, "
                                             r"flops-backward\), which the app's earlier"):
        grid.deliver(3)


def test_a_reply_not_in_when_the_clock_stops_is_withdrawn():
    """A clock that delivers two nodes' messages but brings one reply in (the other client
    dropped on its way up): only that reply is pulled, and the grid is empty for the next
    round. The two messages share their records, as a strategy's do: what the first app
    changes in place, the second does not see."""
    from flwr.app import Array, Message

    from scala_netsim.flower.grid import SimulatedGrid, identity

    seen = []

    def scribble(message, content):
        seen.append(message.content["arrays"]["w"].numpy().tolist())
        message.content["arrays"]["w"] = Array(np.zeros((1, 2), np.float32))
        return content

    grid = SimulatedGrid(echo_app(scribble), num_clients=4)

    def one_in(timeout_s):
        for node in sorted(grid.pushed):
            grid.deliver(node)
        grid.arrived(2)

    grid.carry, grid.round = one_in, 1
    shared = messages_for(grid, [2])[0].content
    with identity(1):
        sent = [Message(shared, node, "train") for node in (2, 3)]
    replies = grid.send_and_receive(sent)
    assert [r.metadata.src_node_id for r in replies] == [2]
    assert seen == [[[1.0, 1.0]], [[1.0, 1.0]]]
    assert grid.pushed == frozenset()
    grid.carry, grid.round = immediate(grid), 2
    assert [r.metadata.src_node_id for r in grid.send_and_receive(messages_for(grid, [3]))] \
        == [3]
