"""A Flower `Grid` on the run's simulated clock (issue 65).

A strategy talks to its clients through a Grid only: `push_messages`, `pull_messages` and
`send_and_receive(messages, timeout)`. `SimulatedGrid` is one whose messages travel on the
run's cell or network, as any algorithm's do:
- `push_messages` addresses each message to its node (client k is node k + NODE_BASE); the
  run's protocol (scala_netsim.flower.protocol.GridProtocol) then carries it: the download of
  its arrays, the client's ClientApp called in-process on it (`deliver`), the client's compute
  at its FLOP/s, the upload of the reply's arrays (`arrived` puts it in the inbox);
- `send_and_receive` pushes, lets the run's clock carry the messages (`carry`, set by the
  protocol for the round) until every reply is in or `timeout` simulated seconds have passed
  (a client still busy then is dropped and recorded as a round deadline drops it), and pulls
  the replies that arrived. Nothing sleeps in wall-clock time.

Bytes: a message's arrays, each Array's elements times its element size, as the package
counts every message (`array_bytes`); configs and metrics are not counted (a few bytes), nor
Flower's framing. FLOPs: what the reply's MetricRecord reports per local step
(`flops-forward` and `flops-backward`, lists of one entry a step; the package's own ClientApp
reports what its model meter measured), otherwise torch's FLOP counter around the call
(`CountedFlops`: the registered matrix products and convolutions of the forward and of the
backward pass apart; element-wise operations, normalisation and the optimiser's update count
nothing, and work outside torch is not seen). A counted call is timed as one forward and one
backward computation at local iteration 0, since where an app's steps begin and end is not
visible: the run's later local iterations then take no time (0 FLOPs each). The counter slows
every torch operation, so once an app has reported its FLOPs its calls run without it (a
later reply that reports none is then an error).

Randomness: a user's ClientApp that draws from the global generators (torch's, NumPy's,
Python's `random`: a DataLoader's shuffling, dropout, an initialisation) draws, in each call,
from generators seeded from the run's seed, the round and the node (`seeded_globals`), and
the global state is put back after the call: a run repeats under its seed, and a resumed run
draws what the uninterrupted one drew, whatever the order of the calls (the user's
initial_arrays and evaluate_fn likewise, as node 1: scala_netsim.flower.apps). The package's
own clients draw from their own generators only (no `seed` given)."""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import Grid
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity
from torch.utils.flop_counter import FlopCounterMode

from scala_netsim.core.errors import Error

#: client k is Flower node k + NODE_BASE (node 1 is the SuperLink's, 0 is never a node)
NODE_BASE = 2
#: what flwr's TaskIdentity holds (restored after a call)
IDENTITY = ("task_id", "run_id", "node_id")
#: the run id the grid's messages and its clients' Contexts carry
RUN_ID = 0
#: the MetricRecord key that weighs a reply in the strategies' aggregation
WEIGHT_KEY = "num-examples"
#: the MetricRecord keys of a reply that report its local steps' FLOPs
FLOP_KEYS = ("flops-forward", "flops-backward")


class FlowerAppError(Error, RuntimeError):
    """A client's ClientApp raised, or replied with what a strategy cannot aggregate; or the
    strategy addressed other clients than the run selected, or raised as it aggregated."""


def array_bytes(content: RecordDict) -> int:
    """Bytes of a message's arrays on the wire: elements x element size, every Array of
    every ArrayRecord (framing and serialisation headers not counted, as for every message
    of the package)."""
    return sum(math.prod(array.shape) * np.dtype(array.dtype).itemsize
               for record in content.array_records.values() for array in record.values())


class CountedFlops(FlopCounterMode):
    """torch's FLOP counter with the backward pass's FLOPs apart: an operation counts as
    backward while autograd's engine runs a graph task."""

    def __init__(self) -> None:
        super().__init__(display=False)
        self.forward_flops = 0
        self.backward_flops = 0

    def _count_flops(self, func_packet: Any, out: Any, args: Any, kwargs: Any) -> Any:
        if func_packet in self.flop_registry:
            flops = int(self.flop_registry[func_packet](*args, **kwargs, out_val=out))
            if torch._C._current_graph_task_id() == -1:
                self.forward_flops += flops
            else:
                self.backward_flops += flops
        return super()._count_flops(func_packet, out, args, kwargs)


@dataclass(frozen=True)
class Delivered:
    """A client's reply to the message it was sent, and the compute it took: (forward FLOPs,
    backward FLOPs) a local step, reported by the app or counted (`counted`)."""

    reply: Message
    steps: tuple[tuple[int, int], ...]
    counted: bool


class SimulatedGrid(Grid):
    """A Grid whose messages travel on the run's clock (the module's docstring).
    `app` is the clients' ClientApp; each node's Context (its `state` kept from call to call,
    as a SuperNode keeps it) says `partition-id` k and `num-partitions` K in its node_config,
    Flower's convention for which data a client holds."""

    def __init__(self, app: ClientApp, num_clients: int,
                 run_config: dict[str, Any] | None = None, reports_flops: bool = False,
                 seed: int | None = None) -> None:
        self.app, self.num_clients, self.seed = app, num_clients, seed
        #: does the app report its steps' FLOPs? Then its calls run without torch's counter
        #: (which slows every operation); learnt from its first reply that reports them
        self.reports_flops = reports_flops
        self.run_config = dict(run_config or {})
        self._run = Run.create_empty(RUN_ID)
        self.contexts: dict[int, Context] = {}
        #: the round the messages belong to (named in a ClientApp's errors)
        self.round = 0
        #: lets the run's clock carry the pushed messages for at most `timeout` simulated
        #: seconds (None: until every reply is in); the protocol sets it for each round
        self.carry: Callable[[float | None], None] | None = None
        self._pushed: dict[int, Message] = {}
        self._delivered: dict[int, Delivered] = {}
        self._inbox: dict[str, Message] = {}

    # --- flwr's Grid ----------------------------------------------------------------------
    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return self._run

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int,
                       group_id: str, ttl: float | None = None) -> Message:
        with identity(SUPERLINK_NODE_ID):
            return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> range:
        """The run's clients as Flower nodes."""
        return range(NODE_BASE, NODE_BASE + self.num_clients)

    def push_messages(self, messages: Iterable[Message]) -> list[str]:
        """Address each message to its node (one a node at a time); -> their ids, which
        `pull_messages` takes. The ids are the round and the node (reproducible)."""
        ids = []
        for message in messages:
            node = message.metadata.dst_node_id
            if node not in self.get_node_ids():
                raise ValueError(f"a message for node {node}: the run's nodes are "
                                 f"{NODE_BASE}..{NODE_BASE + self.num_clients - 1}")
            if node in self._pushed:
                raise ValueError(f"node {node} has a message in flight already")
            message.metadata.__dict__["_message_id"] = f"{self.round}-{node}"
            # each node its own records (a strategy puts one RecordDict, the global model's
            # arrays, in every message): what an app changes in place stays its own
            message.content = RecordDict({name: record.copy()
                                          for name, record in message.content.items()})
            self._pushed[node] = message
            ids.append(message.metadata.message_id)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> list[Message]:
        """The replies in to the messages `message_ids`, in node order; each is pulled once."""
        wanted = set(message_ids)
        replies = [self._inbox.pop(i) for i in sorted(self._inbox) if i in wanted]
        return sorted(replies, key=lambda reply: reply.metadata.src_node_id)

    def send_and_receive(self, messages: Iterable[Message], *,
                         timeout: float | None = None) -> list[Message]:
        """Push `messages`, let the run's clock carry them until every reply is in or
        `timeout` simulated seconds have passed, and pull the replies that arrived (a client
        still busy at the timeout is dropped: its message is withdrawn)."""
        if self.carry is None:
            raise RuntimeError("a SimulatedGrid carries messages on a run's clock: it is "
                               "given one by the run's protocol (algorithms: [flower])")
        ids = self.push_messages(messages)
        try:
            self.carry(timeout)
            return self.pull_messages(ids)
        finally:      # (a message not answered by now is withdrawn, its reply never pulled)
            self._pushed.clear()
            self._delivered.clear()
            self._inbox.clear()

    # --- what the run's protocol calls as it carries node k's message ----------------------
    @property
    def pushed(self) -> frozenset[int]:
        """The nodes with a message in flight."""
        return frozenset(self._pushed)

    def outgoing(self, node: int) -> Message:
        """The message pushed to `node`."""
        return self._pushed[node]

    def deliver(self, node: int) -> Delivered:
        """Call `node`'s ClientApp on its message, in-process: its reply, checked, and the
        FLOPs it took."""
        message = self._pushed[node]
        context = self.contexts.setdefault(node, Context(
            run_id=RUN_ID, node_id=node, node_config={
                "partition-id": node - NODE_BASE, "num-partitions": self.num_clients},
            state=RecordDict(), run_config=dict(self.run_config)))
        counter = CountedFlops() if not self.reports_flops else contextlib.nullcontext()
        try:
            with identity(node), counter, self._global_generators(node):
                reply = self.app(message, context)
        except Exception as error:
            raise self.client_error(node, f"its ClientApp raised {type(error).__name__}: "
                                          f"{error}") from error
        self._check(node, message, reply)
        try:
            steps = _reported_steps(reply)
        except ValueError as error:
            raise self.client_error(node, str(error)) from error
        counted = steps is None
        if steps is not None:
            self.reports_flops = True
        elif isinstance(counter, CountedFlops):
            steps = ((counter.forward_flops, counter.backward_flops),)
        else:
            raise self.client_error(node, f"its reply reports no FLOPs ({', '.join(FLOP_KEYS)}), "
                                          f"which the app's earlier replies did")
        self._check_alike(node, reply)
        delivered = Delivered(reply, steps, counted)
        self._delivered[node] = delivered
        return delivered

    def reply(self, node: int) -> Message:
        """The reply `node`'s ClientApp gave (once `deliver` has called it)."""
        return self._delivered[node].reply

    def arrived(self, node: int) -> None:
        """`node`'s reply is in at the server."""
        reply = self._delivered[node].reply
        self._inbox[self._pushed[node].metadata.message_id] = reply

    def _global_generators(self, node: int) -> contextlib.AbstractContextManager[None]:
        """The global generators seeded for `node`'s call in this round (`seeded_globals`;
        nothing where the grid has no `seed`: the package's own clients)."""
        if self.seed is None:
            return contextlib.nullcontext()
        return seeded_globals(self.seed, self.round, node)

    # --- checks ---------------------------------------------------------------------------
    def client_error(self, node: int, what: str) -> FlowerAppError:
        """The error of `node`'s reply in this round, naming the client and the round."""
        return FlowerAppError(f"flower: client {node - NODE_BASE} (node {node}) in round "
                              f"{self.round}: {what}")

    def _check(self, node: int, message: Message, reply: Any) -> None:
        """A reply a strategy can aggregate, as flwr's own checks want it (its link state's
        and `validate_message_reply_consistency`), named: a Message without an error, a reply
        to the message from its node, with the arrays it was sent, name for name in their
        order and shape for shape, in one ArrayRecord (and the package's "buffers"), and one
        MetricRecord with a number `num-examples` (the strategies' weight). (`_check_alike`
        then: its records' names and keys those of the round's first reply.)"""
        if not isinstance(reply, Message):
            raise self.client_error(node, f"its ClientApp returned a {type(reply).__name__}, "
                                          f"not a flwr Message")
        if reply.has_error():
            raise self.client_error(node, f"its reply carries an error: {reply.error.reason}")
        meta = reply.metadata
        if meta.reply_to_message_id != message.metadata.message_id or meta.src_node_id != node:
            raise self.client_error(
                node, f"its ClientApp returned a Message that is no reply to the one it was "
                      f"sent (reply_to_message_id {meta.reply_to_message_id!r}, src_node_id "
                      f"{meta.src_node_id}): build it as Message(content, reply_to=message)")
        records = sorted(set(reply.content.array_records) - {"buffers"})
        metrics = list(reply.content.metric_records.items())
        if not records:
            raise self.client_error(node, "its reply holds no arrays (an ArrayRecord of the "
                                          "model it trained is expected)")
        if len(records) != 1:
            raise self.client_error(node, f"its reply holds {len(records)} ArrayRecords "
                                          f"{records}: one is expected")
        if len(metrics) != 1 or WEIGHT_KEY not in metrics[0][1]:
            raise self.client_error(node, f"its reply holds {len(metrics)} MetricRecords: one with "
                                          f"{WEIGHT_KEY!r} is expected")
        weight = metrics[0][1][WEIGHT_KEY]
        if not is_number(weight):
            raise self.client_error(node, f"its reply's {WEIGHT_KEY!r} is {weight!r}: one number "
                                          f"(int or float) is expected")
        self._check_arrays(node, message, reply.content.array_records[records[0]])

    def _check_arrays(self, node: int, message: Message, got: Any) -> None:
        """The reply's arrays are those it was sent: names in their order (strategies such
        as Krum and QFedAvg pair them by position), shapes."""
        sent = {name: tuple(array.shape) for record_name, record
                in message.content.array_records.items() if record_name != "buffers"
                for name, array in record.items()}
        shapes = {name: tuple(array.shape) for name, array in got.items()}
        changed = {name: (sent.get(name), shape) for name, shape in shapes.items()
                   if sent.get(name) != shape}
        missing = sorted(set(sent) - set(shapes))
        if changed or missing:
            detail = "; ".join([f"{n}: sent {a}, returned {b}" for n, (a, b) in changed.items()]
                               + [f"{n}: sent, not returned" for n in missing])
            raise self.client_error(node, f"its reply's arrays differ from those it was sent: "
                                          f"{detail}")
        if list(shapes) != list(sent):
            raise self.client_error(node, f"its reply's arrays are in another order than those it "
                                          f"was sent ({list(shapes)} against {list(sent)})")

    def _check_alike(self, node: int, reply: Message) -> None:
        """The reply's ArrayRecord name and its MetricRecord's name and keys are those of the
        round's first reply (what flwr's strategies aggregate together)."""
        if not self._delivered:
            return
        first_node, first = next(iter(self._delivered.items()))
        client = first_node - NODE_BASE
        mine, theirs = (
            {n: sorted(r) for n, r in content.metric_records.items()}
            for content in (reply.content, first.reply.content))
        if mine != theirs:
            raise self.client_error(node, f"its reply's MetricRecord {mine} differs from "
                                          f"client {client}'s {theirs} in the round: a "
                                          f"strategy aggregates the same keys from every reply")
        named, first_named = ([n for n in content.array_records if n != "buffers"]
                              for content in (reply.content, first.reply.content))
        if named != first_named:
            raise self.client_error(node, f"its reply's ArrayRecord is named {named}, client "
                                          f"{client}'s {first_named} in the round: a strategy "
                                          f"aggregates one name")


def is_number(value: Any) -> bool:
    """One int or float (not a bool, not a list): what flwr's strategies weigh by."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _reported_steps(reply: Message) -> tuple[tuple[int, int], ...] | None:
    """(forward, backward) FLOPs a local step as the reply's MetricRecord reports them."""
    for record in reply.content.metric_records.values():
        if all(key in record for key in FLOP_KEYS):
            forward, backward = (record[key] for key in FLOP_KEYS)
            forward = forward if isinstance(forward, list) else [forward]
            backward = backward if isinstance(backward, list) else [backward]
            if len(forward) != len(backward):
                raise ValueError(f"a reply reports {len(forward)} forward and "
                                 f"{len(backward)} backward FLOP counts")
            return tuple((int(f), int(b)) for f, b in zip(forward, backward, strict=True))
    return None


@contextlib.contextmanager
def seeded_globals(*key: int) -> Iterator[None]:
    """torch's, NumPy's and Python's global generators seeded from `key` (the run's seed, the
    round, the node) for the block, their state put back afterwards: the CPU's, and where
    CUDA is available every device's (torch.manual_seed seeds them too)."""
    seed = int(np.random.SeedSequence(list(key)).generate_state(1)[0])
    saved_numpy, saved_python = np.random.get_state(), random.getstate()
    devices = range(torch.cuda.device_count()) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(saved_numpy)
            random.setstate(saved_python)


@contextlib.contextmanager
def identity(node: int) -> Iterator[None]:
    """Flower's task identity of `node` (a Message made there is from it), as flwr's
    in-process runtimes set it."""
    saved = [getattr(TaskIdentity, f"_{name}", None) for name in IDENTITY]
    TaskIdentity.task_id = node
    TaskIdentity.run_id = RUN_ID
    TaskIdentity.node_id = node
    try:
        yield
    finally:
        for name, value in zip(IDENTITY, saved, strict=True):
            setattr(TaskIdentity, f"_{name}", value)
