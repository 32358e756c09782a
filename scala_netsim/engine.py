"""The SimPy co-simulation of one cell.

Clients and the server are SimPy processes that exchange typed messages over a wireless link;
the link asks `channel`'s link model for each transfer's rate and turns payload bits into
timeouts (as SimPy's `Cable` example turns latency into them), compute steps turn measured
FLOPs into timeouts at the node's FLOP/s, and the server's processor is a SimPy resource that
server steps queue on. The real torch computation of a step is invoked by the process at the
simulated moment the step starts. Time passes nowhere else.

A protocol is one communication pattern; it calls the trainer contract of its pattern
(scala_netsim.algorithms.contract) and knows nothing of gradients beyond that.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd
import simpy

import channel
from channel import Direction
from scala_netsim.algorithms.contract import (
    ConcatSplitTrainer,
    FederatedTrainer,
    KeptModelSplitTrainer,
    LocalLossTrainer,
    PerClientSplitTrainer,
    ServerStep,
    Trainer,
)
from scala_netsim.core.events import MODEL_TRANSFER, SERVER_ID, EventKind, EventLog
from scala_netsim.messages import ActivationMessage, GradientMessage, ModelMessage, Transfer

# what a protocol hands the link: a real trainer's message, or a recorded one (a replay, a
# timing-only run); the engine reads only Transfer's client_id and payload_bytes
Message = ActivationMessage | GradientMessage | ModelMessage | Transfer


@dataclass
class Cell:
    """The dropped clients of one cell (one entry per client), the server and the bands, in
    SI units. `gain_linear` is each client's large-scale power gain 10^(-(PL + X)/10): the
    distance's path loss PL and, when the cell has shadowing, the client's shadowing X (dB)."""

    distance_m: np.ndarray
    pathloss_db: np.ndarray
    flops_per_s: np.ndarray
    server_flops_per_s: float
    uplink_bandwidth_hz: float
    downlink_bandwidth_hz: float
    shadowing_db: np.ndarray | None = None
    gain_linear: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        loss_db = np.asarray(self.pathloss_db)
        if self.shadowing_db is not None:
            loss_db = loss_db + self.shadowing_db
        self.gain_linear = channel.db_to_linear(-loss_db)

    def bandwidth_hz(self, direction: Direction) -> float:
        """The whole band in `direction`."""
        return (self.uplink_bandwidth_hz if direction is Direction.UPLINK
                else self.downlink_bandwidth_hz)


@dataclass(frozen=True, slots=True)
class Grant:
    """The sub-band a client holds in one direction for one round."""

    round: int
    client_id: int
    direction: Direction
    bandwidth_hz: float

    def as_row(self) -> tuple:
        return (self.round, self.client_id, self.direction.value, self.bandwidth_hz)

    @classmethod
    def from_row(cls, row: Sequence) -> Grant:
        round_, client_id, direction, bandwidth_hz = row
        return cls(round_, client_id, Direction(direction), bandwidth_hz)


class TransferRate(NamedTuple):
    """The sub-band and rate a transfer used, its number of attempts (ARQ; it lasts
    attempts * bits / rate), the channel's power gain it saw (large-scale times fading; of the
    attempt that got through) and the power radiated on its sub-band; `event_index` is its
    position in the log."""

    event_index: int
    bandwidth_hz: float
    rate_bps: float
    attempts: int = 1
    gain_linear: float = float("nan")
    tx_power_w: float = float("nan")


TRANSFER_COLUMNS = TransferRate._fields


class TransferLost(Exception):  # noqa: N818 (what happened, as the message says)
    """Thrown into a client's process when one of its transfers failed all its attempts
    (fixed-rate link in outage): the client is dropped from the round."""


class RoundRules(NamedTuple):
    """How the network may drop clients from a round (the scenario's training section).

    `deadline_s`: a client whose round is not done this long after the round's start (its
    model upload, or for SplitFedV3 its last step, not finished) is dropped. `step_deadline_s`
    (algorithms with a barrier): the server waits this long for each local iteration's
    activations, from the moment it is ready for them (the round's start, then the end of its
    previous step), steps on those that came and drops the others. `keep` (over-selection):
    the round keeps its first `keep` finishers (model uploads; for a barrier, activations of
    the first local iteration) and drops the others then."""

    deadline_s: float | None = None
    step_deadline_s: float | None = None
    keep: int | None = None

    @property
    def active(self) -> bool:
        return (self.deadline_s is not None or self.step_deadline_s is not None
                or self.keep is not None)


NO_RULES = RoundRules()   # nobody is dropped but for a lost transfer


def share_done(total: int, start_s: float, now_s: float, duration_s: float) -> int:
    """Of a step of `total` bytes or FLOPs lasting `duration_s` from `start_s`, what is done
    by `now_s` (rounded down): what a step cut short at `now_s` records."""
    if duration_s <= 0:
        return total
    return min(total, int(total * (now_s - start_s) / duration_s))


def grants_frame(grant_rows: Sequence[tuple]) -> pd.DataFrame:
    """The grants' rows (Grant.as_row) as a table (round, client_id, direction, bandwidth_hz),
    for the invariants."""
    return pd.DataFrame(grant_rows, columns=["round", "client_id", "direction", "bandwidth_hz"])


def transfers_frame(transfers: Sequence[tuple]) -> pd.DataFrame:
    """The transfers (TransferRate or its rows) as a table, one column per field."""
    return pd.DataFrame(transfers, columns=list(TRANSFER_COLUMNS))


def child_rng(seed: np.random.SeedSequence, *key: int) -> np.random.Generator:
    """A generator on the child of `seed` named by `key` (its spawn key extended by it): the
    same draws whatever else drew from `seed`."""
    return np.random.default_rng(np.random.SeedSequence(seed.entropy,
                                                        spawn_key=(*seed.spawn_key, *key)))


class WirelessLink:
    """The cell's orthogonal up- and downlink. At the start of each round the allocator splits
    both bands among the participants, given what each needs; a transfer lasts payload bits /
    the rate the link model gives for the client's gain and sub-band at the transfer's start.

    Every grant and every transfer's rate is recorded (`grants`, `transfers`) so that the
    run's books can be checked against them. They are kept as plain rows (`grant_rows`,
    `transfer_rows`): a tuple of numbers and text is untracked by the garbage collector, whereas
    a dataclass or NamedTuple per transfer, millions in a timing-only run, made every
    collection walk them all (about a fifth of the time of a 10,000-client run).
    """

    def __init__(self, env: simpy.Environment, cell: Cell, model: channel.LinkModel,
                 allocator: channel.BandwidthAllocator, log: EventLog,
                 seed: np.random.SeedSequence, fading: channel.Fading | None = None,
                 fading_seed: np.random.SeedSequence | None = None) -> None:
        self.env, self.cell, self.model, self.allocator, self.log = env, cell, model, allocator, log
        self.fading = channel.Fading() if fading is None else fading
        self._fading_seed = fading_seed
        self._fading_rngs: dict[int, np.random.Generator] = {}
        self._round_fading: dict[tuple[Direction, int], float] = {}
        self.grant_rows: list[tuple] = []       # Grant.as_row()
        self.transfer_rows: list[tuple] = []    # TransferRate's fields
        self.round = 0
        self._bandwidth_hz: dict[Direction, dict[int, float]] = {d: {} for d in Direction}
        self._seed = seed
        self._rngs: dict[int, np.random.Generator] = {}
        # when the link model's rate does not vary within a round: (direction, client) ->
        # (rate, gain, power) and (direction, client, payload bytes) -> airtime for this round (a
        # client sends the same messages every local iteration: the radio math runs once per
        # kind of message)
        self._rate_bps: dict[tuple[Direction, int], tuple[float, float, float]] = {}
        self._airtime_s: dict[tuple[Direction, int, int], float] = {}
        # what an allocator weighing the clients' rates needs of the link model (fixed)
        self._radio = {d: model.allocation_radio(d) for d in Direction}
        # the protocol's book of steps in flight, when clients can be dropped (else None)
        self.drops: Drops | None = None

    @property
    def grants(self) -> list[Grant]:
        return [Grant.from_row(g) for g in self.grant_rows]

    @property
    def transfers(self) -> list[TransferRate]:
        return [TransferRate(*t) for t in self.transfer_rows]

    def stream_states(self) -> dict[str, dict[int, dict]]:
        """Where each client's own streams stand (per-transfer fading, the link model's): what
        a checkpoint keeps, so that a resumed run draws what the uninterrupted run draws."""
        return {name: {k: g.bit_generator.state for k, g in streams.items()}
                for name, streams in (("fading", self._fading_rngs), ("link", self._rngs))}

    def load_stream_states(self, states: dict[str, dict[int, dict]]) -> None:
        for name, streams in (("fading", self._fading_rngs), ("link", self._rngs)):
            for k, state in states.get(name, {}).items():
                generator = np.random.default_rng()
                generator.bit_generator.state = state
                streams[int(k)] = generator

    def rng(self, k: int) -> np.random.Generator:
        """Client k's own random stream for the link model (the same whatever the algorithm)."""
        if k not in self._rngs:
            self._rngs[k] = child_rng(self._seed, k)
        return self._rngs[k]

    def fading_gain(self, direction: Direction, k: int) -> float:
        """|h|^2 of client k's channel in `direction` now. Per round: one draw per (client,
        round, direction), each from its own child of the fading stream, so that client k's
        channel in round r is the same whatever the algorithm did before. Per transfer: the
        client's next draw from its own fading stream (the i-th transfer of client k sees the
        same draw in every run of the scenario)."""
        fading = self.fading
        if not fading.fades:
            return 1.0
        seed = self._fading_seed
        if fading.per_round:
            key = (direction, k)
            if key not in self._round_fading:
                self._round_fading[key] = fading.draw(
                    child_rng(seed, k, self.round, direction is Direction.DOWNLINK))
            return self._round_fading[key]
        if k not in self._fading_rngs:
            self._fading_rngs[k] = child_rng(seed, k)
        return fading.draw(self._fading_rngs[k])

    def begin_round(self, round_: int, demands: dict[Direction, channel.LinkDemand]) -> None:
        """Split each band among the round's clients according to their demand."""
        self.round = round_
        self._rate_bps.clear()
        self._airtime_s.clear()
        self._round_fading.clear()
        for direction, demand in demands.items():
            if self.fading.per_round:  # known for the round: the allocator may weigh it
                demand = dataclasses.replace(demand, gain_linear=demand.gain_linear * np.array(
                    [self.fading_gain(direction, int(k)) for k in demand.client_ids]))
            radio = self._radio[direction]
            if radio is not None:
                power_w, noise_psd_w_per_hz, constant_psd = radio
                demand = dataclasses.replace(
                    demand, tx_power_w=np.full(len(demand), power_w),
                    noise_psd_w_per_hz=noise_psd_w_per_hz, constant_psd=constant_psd)
            shares = self.allocator.allocate_hz(self.cell.bandwidth_hz(direction), demand)
            self._bandwidth_hz[direction] = dict(zip(demand.client_ids.tolist(), shares.tolist(),
                                                     strict=True))
            self.grant_rows.extend((round_, k, direction.value, b)
                                   for k, b in self._bandwidth_hz[direction].items())

    def upload(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Timeout:
        """Client -> base station, starting now; yield it to wait for the transfer's end."""
        return self._transfer(message, kind, local_iter, Direction.UPLINK)

    def download(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Timeout:
        """Base station -> client, starting now; yield it to wait for the transfer's end."""
        return self._transfer(message, kind, local_iter, Direction.DOWNLINK)

    def _rate_and_airtime(self, direction: Direction, k: int,
                          payload_bytes: int) -> tuple[float, float, float, float]:
        """(rate, airtime, the gain the rate was given, transmit power) of a transfer of
        client k now."""
        if self.model.varies_per_transfer or self.fading.per_transfer:
            rate_bps, gain, tx_power_w = self._rate(direction, k)
            return rate_bps, float(channel.airtime_s(payload_bytes, rate_bps)), gain, tx_power_w
        key = (direction, k)
        if key not in self._rate_bps:
            self._rate_bps[key] = self._rate(direction, k)
        rate_bps, gain, tx_power_w = self._rate_bps[key]
        key = (direction, k, payload_bytes)
        if key not in self._airtime_s:
            self._airtime_s[key] = float(channel.airtime_s(payload_bytes, rate_bps))
        return rate_bps, self._airtime_s[key], gain, tx_power_w

    def _rate(self, direction: Direction, k: int) -> tuple[float, float, float]:
        """The link model's rate for client k now, on its sub-band in `direction`, at its
        large-scale gain times its fading gain; that gain; the power on the sub-band."""
        gain, bandwidth_hz = self.cell.gain_linear[k], self._bandwidth_hz[direction][k]
        if self.fading.fades and not self.model.outages:  # models with outages: _attempts
            gain = gain * self.fading_gain(direction, k)
        return (self.model.rate_bps(direction, gain, bandwidth_hz, self.env.now,
                                    self.rng(k) if self.model.draws else None), float(gain),
                self.model.tx_power_w(direction, bandwidth_hz))

    def _attempts(self, direction: Direction, k: int) -> tuple[int, float, bool]:
        """Attempts until one gets through at the channel's gain (large-scale times fading:
        the same all round under per-round coherence, a fresh draw per attempt under
        per-transfer coherence), the gain of the last one, and whether it got through (False
        when all max_attempts failed: the transfer is lost)."""
        bandwidth_hz, model = self._bandwidth_hz[direction][k], self.model
        for attempt in range(1, model.max_attempts + 1):
            gain = self.cell.gain_linear[k] * self.fading_gain(direction, k)
            if model.succeeds(direction, gain, bandwidth_hz):
                return attempt, float(gain), True
        return model.max_attempts, float(gain), False

    def _transfer(self, message: Message, kind: EventKind, local_iter: int,
                  direction: Direction) -> simpy.Event:
        """A timeout lasting the message's airtime that records the transfer when it ends
        (before the process waiting on it resumes: a callback, not a generator, as a process
        makes millions of these). A transfer lost after all its attempts is an event that
        fails with TransferLost when the last attempt ends."""
        k, start, payload_bytes = message.client_id, self.env.now, message.payload_bytes
        bandwidth_hz = self._bandwidth_hz[direction][k]
        rate_bps, airtime_s, gain, tx_power_w = self._rate_and_airtime(direction, k,
                                                                       payload_bytes)
        attempts, delivered = 1, True
        if self.model.outages:
            attempts, gain, delivered = self._attempts(direction, k)
            airtime_s = airtime_s * attempts
        transfer = self.env.timeout(airtime_s)

        def record(_: simpy.Event) -> None:
            self.transfer_rows.append((len(self.log), bandwidth_hz, rate_bps, attempts, gain,
                                       tx_power_w))
            self.log.record(start, self.env.now, self.round, local_iter, k, kind, payload_bytes)

        if self.drops is None:
            transfer.callbacks.append(record)
            return transfer

        def cut(done: int | None = None) -> None:
            """Recorded up to now, not completed, with the share of its bytes sent so far
            (`done`: all of them, as a transfer lost after its last attempt)."""
            if done is None:
                done = share_done(payload_bytes, start, self.env.now, airtime_s)
            self.transfer_rows.append((len(self.log), bandwidth_hz, rate_bps, attempts, gain,
                                       tx_power_w))
            self.log.record_cut(start, self.env.now, self.round, local_iter, k, kind, done)

        if delivered:
            return self.drops.track(k, transfer, record, cut, local_iter)
        lost = self.env.event()

        def give_up(_: simpy.Event) -> None:
            cut(payload_bytes)
            lost.fail(TransferLost(k, kind.value, self.round))

        self.drops.track(k, transfer, give_up, cut, local_iter)
        return lost


class Drops:
    """Who may still be dropped from the round and what each client (and the server,
    SERVER_ID) has in flight, so that a client dropped mid-round has its step cut at that
    moment and recorded as not completed; who finished and who was dropped, and why."""

    def __init__(self) -> None:
        self.round = 0
        self.active: set[int] = set()       # selected, neither finished nor dropped
        self.finished: list[int] = []       # in the order they finished
        self.dropped: list[tuple[int, str]] = []   # (client, reason) in the order dropped
        self.processes: dict[int, list[simpy.Process]] = {}
        self.local_iter: dict[int, int] = {}    # the step each client is in
        self._steps: dict[int, list[tuple[simpy.Event, Any, Any]]] = {}

    def begin(self, round_: int, selected: Sequence[int]) -> None:
        self.round = round_
        self.active = {int(k) for k in selected}
        self.finished, self.dropped = [], []
        self.processes, self.local_iter, self._steps = {}, {}, {}

    def track(self, owner: int, timeout: simpy.Event, record: Any, cut: Any,
              local_iter: int | None = None) -> simpy.Event:
        """`timeout` ends `owner`'s step: `record` logs it then; `cut()` logs it up to now if
        its owner is dropped first."""
        timeout.callbacks.append(record)
        self._steps.setdefault(owner, []).append((timeout, record, cut))
        if local_iter is not None:
            self.local_iter[owner] = local_iter
        return timeout

    def cut(self, owner: int) -> None:
        """Cut every step `owner` has in flight now (in the order they began): those whose
        timeout has not been processed yet (its callbacks not run)."""
        for timeout, record, cut in self._steps.pop(owner, ()):
            if timeout.callbacks is not None:
                timeout.callbacks.remove(record)
                cut()


class Protocol(ABC):
    """One algorithm's communication pattern, simulated a round at a time. Subclasses write
    the SimPy processes of a round and call the trainer contract `trainer_contract`; the real
    computation is the trainer's.

    When clients can be dropped (RoundRules, or a link that loses transfers) every process of
    a round runs guarded: a dropped client's processes are interrupted, its steps in flight
    cut and recorded up to the drop (events.completed 0), a `client_dropped` event marks the
    drop, and the trainer is told (`Trainer.drop_client`)."""

    trainer_contract: ClassVar[type[Trainer]] = Trainer
    pipelined_clients: ClassVar[bool] = False  # may a client compute while its uplink is busy?
    has_barrier: ClassVar[bool] = False        # does the server wait for every client's step?
    sends_activations: ClassVar[bool] = False  # do clients upload cut-layer activations?
    sends_gradients: ClassVar[bool] = False    # does the server send their gradients down?
    keeps_client_models: ClassVar[bool] = False  # one client-side model per client, kept?

    def __init__(self, env: simpy.Environment, cell: Cell, trainer: Trainer, link: WirelessLink,
                 log: EventLog, local_iters: int, rules: RoundRules = NO_RULES) -> None:
        if not isinstance(trainer, self.trainer_contract):
            raise TypeError(f"{type(self).__name__} needs a {self.trainer_contract.__name__}, "
                            f"got {type(trainer).__name__}")
        self.env, self.cell, self.trainer, self.link, self.log = env, cell, trainer, link, log
        self.local_iters = local_iters
        self.rules = rules
        self.server_cpu = simpy.Resource(env, capacity=1)
        self.round = 0
        self._compute_s: dict[tuple[int, int], float] = {}  # (client, FLOPs) -> seconds
        # the book of drops, when clients can be dropped; None keeps the plain, faster path
        self.drops = Drops() if rules.active or link.model.outages else None
        link.drops = self.drops

    def run_round(self, round_: int, selected: Sequence[int]) -> None:
        """Simulate (and really train) one round; the clock advances to the round's end."""
        self.round = round_
        self._compute_s.clear()
        self.trainer.round_loss = None
        self.trainer.begin_round(selected)
        self.link.begin_round(round_, self.demands(selected))
        drops = self.drops
        if drops is not None:
            drops.begin(round_, selected)
            if self.rules.deadline_s is not None:
                # (a round that ends earlier leaves its deadline in the queue: `_expire`
                # ignores it when it comes, in a later round)
                deadline = self.env.timeout(self.rules.deadline_s, value=round_)
                deadline.callbacks.append(self._expire)
        self.env.run(until=self.env.all_of(self.round_processes(selected)))
        self.trainer.end_round()

    # --- drops ----------------------------------------------------------------------------
    def _spawn(self, owner: int, body: Generator) -> simpy.Process:
        """`body` as a process of `owner` (a client, or SERVER_ID), guarded when clients can
        be dropped."""
        if self.drops is None:
            return self.env.process(body)
        process = self.env.process(self._guarded(owner, body))
        self.drops.processes.setdefault(owner, []).append(process)
        return process

    def _guarded(self, owner: int, body: Generator) -> Generator[simpy.Event, Any, None]:
        try:
            yield from body
        except simpy.Interrupt:   # dropped (or the round's deadline passed): stop here
            pass
        except TransferLost:      # one of its transfers failed all its attempts
            self._drop(owner, "lost")

    def _drop(self, k: int, reason: str) -> None:
        """Drop client k from the round now: its steps in flight are cut, its processes
        stopped, a client_dropped event recorded."""
        drops = self.drops
        if k not in drops.active:
            return
        drops.active.discard(k)
        drops.dropped.append((k, reason))
        self._stop(k)
        self.log.record(self.env.now, self.env.now, self.round,
                        drops.local_iter.get(k, MODEL_TRANSFER), k, EventKind.CLIENT_DROPPED)
        self.trainer.drop_client(k)
        self._left(k)

    def _stop(self, owner: int) -> None:
        """Cut `owner`'s steps in flight and interrupt its processes (but the running one)."""
        self.drops.cut(owner)
        for process in self.drops.processes.get(owner, ()):
            if process.is_alive and process is not self.env.active_process:
                process.interrupt()

    def _left(self, k: int) -> None:  # noqa: B027 (a hook: only a barrier needs it)
        """Client k was dropped (a barrier stops waiting for it)."""

    def _finish(self, k: int) -> None:
        """Client k's round is done (its model is in, or SplitFedV3 keeps it). Over-selection
        without a barrier: the first `keep` to finish are kept, the others dropped then."""
        drops = self.drops
        drops.active.discard(k)
        drops.finished.append(k)
        keep = self.rules.keep
        if keep is not None and not self.has_barrier and len(drops.finished) == keep:
            for other in sorted(drops.active):
                self._drop(other, "over_selection")

    def _expire(self, deadline: simpy.Event) -> None:
        """The round's deadline: every client still in the round is dropped, and what the
        others (or the server) still had going is cut."""
        drops = self.drops
        if deadline.value != drops.round:   # its round ended before it (the clock only runs
            return                          # within a round: it comes in a later one)
        for k in sorted(drops.active):
            self._drop(k, "deadline")
        for owner in sorted(drops.processes):
            self._stop(owner)

    def demands(self, selected: Sequence[int]) -> dict[Direction, channel.LinkDemand]:
        """What each participant needs from each band in one local step (for the allocator)."""
        steps = [self.trainer.step_demand(k) for k in selected]
        for k, s in zip(selected, steps, strict=True):
            self.log.record_demand(self.round, int(k), s.upload_bytes, s.download_bytes,
                                   s.compute_flops)
        ids = np.asarray(selected, dtype=int)
        gain = self.cell.gain_linear[ids]
        compute_s = channel.compute_time_s([s.compute_flops for s in steps],
                                           self.cell.flops_per_s[ids])
        up = np.asarray([8 * s.upload_bytes for s in steps], dtype=float)
        down = np.asarray([8 * s.download_bytes for s in steps], dtype=float)
        return {Direction.UPLINK: channel.LinkDemand(ids, gain, up, compute_s),
                Direction.DOWNLINK: channel.LinkDemand(ids, gain, down, compute_s)}

    @abstractmethod
    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        """The SimPy processes of one round (the round ends when all have finished)."""

    def _compute(self, local_iter: int, k: int, kind: EventKind, flops: int) -> simpy.Timeout:
        """Client k computes `flops` at its FLOP/s, starting now: a timeout that records the
        step when it ends; yield it to wait for the end."""
        key = (k, flops)
        if key not in self._compute_s:
            self._compute_s[key] = float(channel.compute_time_s(flops, self.cell.flops_per_s[k]))
        return self._timed(k, k, local_iter, kind, self._compute_s[key], flops)

    def _timed(self, owner: int, who: int, local_iter: int, kind: EventKind, duration_s: float,
               flops: int) -> simpy.Timeout:
        """A computation of `flops` lasting `duration_s` from now, recorded when it ends (a
        callback: before the process waiting on it resumes); when clients can be dropped, cut
        (the FLOPs done so far recorded) if its owner is dropped first."""
        start = self.env.now

        def record(_: simpy.Event) -> None:
            self.log.record(start, self.env.now, self.round, local_iter, who, kind, 0, flops)

        timeout = self.env.timeout(duration_s)
        if self.drops is None:
            timeout.callbacks.append(record)
            return timeout

        def cut() -> None:
            self.log.record_cut(start, self.env.now, self.round, local_iter, who, kind, 0,
                                share_done(flops, start, self.env.now, duration_s))

        return self.drops.track(owner, timeout, record, cut,
                                None if who == SERVER_ID else local_iter)

    def _server_compute(self, local_iter: int, client_id: int,
                        uploads: Sequence[ActivationMessage]
                        ) -> Generator[simpy.Event, Any, ServerStep]:
        """Wait for the server processor (FIFO), then run the server step on `uploads` at the
        moment the server starts it and hold the processor for its FLOPs / server FLOP/s. The
        step belongs to the process of `client_id` (SERVER_ID: the server's own)."""
        with self.server_cpu.request() as turn:
            yield turn
            result = self.trainer.server_step(uploads)
            yield self._timed(client_id, client_id, local_iter, EventKind.SERVER_STEP,
                              float(channel.compute_time_s(result.flops,
                                                           self.cell.server_flops_per_s)),
                              result.flops)
        return result

    def _download_model(self, k: int) -> Generator[simpy.Event, Any, None]:
        message = self.trainer.client_model_download(k)
        yield self.link.download(message, EventKind.MODEL_DOWNLOAD, MODEL_TRANSFER)
        self.trainer.client_receive_model(message)

    def _upload_model(self, k: int) -> Generator[simpy.Event, Any, None]:
        message = self.trainer.client_model_upload(k)
        yield self.link.upload(message, EventKind.MODEL_UPLOAD, MODEL_TRANSFER)
        self.trainer.server_receive_model(message)
        if self.drops is not None:
            self._finish(k)


class ConcatSplitProtocol(Protocol):
    """SCALA and CA-SFL: model download; T x (client forward, activation upload, barrier on
    all activations, ONE server step, gradient downloads, client backward); model upload.

    With a step deadline the barrier waits at most that long (from the moment the server is
    ready for the iteration) and the server steps on the activations that came; the others'
    clients are dropped. With over-selection the first local iteration's barrier keeps the
    first `keep` activations to arrive and drops the other clients then."""

    trainer_contract = ConcatSplitTrainer
    sends_activations = True
    sends_gradients = True
    has_barrier = True

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        keep = self.rules.keep
        self._meetings = [_Meeting(self.env, selected, keep if t == 0 else None)
                          for t in range(self.local_iters)]
        procs = [self._spawn(k, self._client(k, self._meetings)) for k in selected]
        procs.append(self._spawn(SERVER_ID, self._server(self._meetings)))
        return procs

    def _left(self, k: int) -> None:
        for meeting in self._meetings:
            meeting.leave(k)

    def _client(self, k: int, meetings: list[_Meeting]) -> Generator[simpy.Event, Any, None]:
        trainer = self.trainer
        yield from self._download_model(k)
        for t, meeting in enumerate(meetings):
            forward = trainer.client_forward(k, t)
            yield self._compute(t, k, EventKind.CLIENT_FORWARD, forward.flops)
            yield self.link.upload(forward.upload, EventKind.ACTIVATION_UPLOAD, t)
            meeting.arrive(forward.upload)
            reply = yield meeting.replies[k]
            yield self.link.download(reply, EventKind.GRADIENT_DOWNLOAD, t)
            yield self._compute(t, k, EventKind.CLIENT_BACKWARD, trainer.client_backward(reply))
        yield from self._upload_model(k)

    def _server(self, meetings: list[_Meeting]) -> Generator[simpy.Event, Any, None]:
        step_deadline_s = self.rules.step_deadline_s
        for t, meeting in enumerate(meetings):
            if step_deadline_s is None:
                yield meeting.all_in                 # barrier: wait for every client
            else:                                    # ... or until the step deadline
                yield meeting.all_in | self.env.timeout(step_deadline_s)
            arrived = list(meeting.arrived)
            if self.drops is not None:
                came = {m.client_id for m in arrived}
                reason = "step_deadline" if not meeting.all_in.triggered else "over_selection"
                for k in sorted(meeting.waiting - came):
                    self._drop(k, reason)
            if not arrived:                          # nobody left in the round
                return
            arrived.sort(key=lambda m: m.client_id)  # concatenation order is by client id
            step = yield from self._server_compute(t, SERVER_ID, arrived)
            for reply in step.replies:
                meeting.replies[reply.client_id].succeed(reply)


class _Meeting:
    """One local iteration of a concatenated round at the server: the activations in the order
    they arrive, `all_in` (fires with them when the last client's has, or the first `quorum`
    clients' have), and one event per client that fires with its gradients. Plain SimPy
    events: a Store would cost two more scheduler steps per message, on the hottest path of a
    SCALA run."""

    def __init__(self, env: simpy.Environment, clients: Sequence[int],
                 quorum: int | None = None) -> None:
        self.size = len(clients) if quorum is None else min(quorum, len(clients))
        self.waiting = {int(k) for k in clients}   # clients still in the round
        self.arrived: list[ActivationMessage] = []
        self.all_in = env.event()
        self.replies = {k: env.event() for k in clients}

    def arrive(self, upload: ActivationMessage) -> None:
        self.arrived.append(upload)
        if len(self.arrived) == self.size:
            self.all_in.succeed(self.arrived)

    def leave(self, k: int) -> None:
        """Client k was dropped: the barrier no longer waits for it."""
        if k not in self.waiting:
            return
        self.waiting.discard(k)
        if not any(m.client_id == k for m in self.arrived):
            self.size = min(self.size, len(self.waiting))
            if len(self.arrived) >= self.size and not self.all_in.triggered:
                self.all_in.succeed(self.arrived)


class PerClientSplitProtocol(Protocol):
    """SplitFed V1/V2, LLA-SFL, CS-SFL: model download; T x (client forward, activation
    upload, its own server step as soon as the server processor is free, in arrival order (a
    FIFO SimPy resource), gradient download, client backward); model upload. No barrier:
    SplitFedV2's shared model is thus updated in the order the clock decides."""

    trainer_contract = PerClientSplitTrainer
    sends_activations = True
    sends_gradients = True

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        return [self._spawn(k, self._client(k)) for k in selected]

    def _start_client(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._download_model(k)

    def _finish_client(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._upload_model(k)

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        trainer = self.trainer
        yield from self._start_client(k)
        for t in range(self.local_iters):
            forward = trainer.client_forward(k, t)
            yield self._compute(t, k, EventKind.CLIENT_FORWARD, forward.flops)
            yield self.link.upload(forward.upload, EventKind.ACTIVATION_UPLOAD, t)
            step = yield from self._server_compute(t, k, [forward.upload])
            (reply,) = step.replies
            yield self.link.download(reply, EventKind.GRADIENT_DOWNLOAD, t)
            yield self._compute(t, k, EventKind.CLIENT_BACKWARD, trainer.client_backward(reply))
        yield from self._finish_client(k)


class KeptModelSplitProtocol(PerClientSplitProtocol):
    """SplitFedV3: as the per-client pattern, but every client keeps its own client model, so
    no model is sent either way."""

    trainer_contract = KeptModelSplitTrainer
    keeps_client_models = True

    def _start_client(self, k: int) -> Generator[simpy.Event, Any, None]:
        self.trainer.client_resume(k)
        yield from ()

    def _finish_client(self, k: int) -> Generator[simpy.Event, Any, None]:
        self.trainer.client_keep(k)
        if self.drops is not None:
            self._finish(k)
        yield from ()


class LocalLossProtocol(Protocol):
    """SFL with local loss: a client never waits for the server. Each local step is computed,
    its activations queue on the client's uplink (one transfer at a time) while the client
    goes on with the next step, the server consumes them in arrival order, and no gradient
    comes back. The model upload follows the client's last activations on its uplink."""

    trainer_contract = LocalLossTrainer
    sends_activations = True
    pipelined_clients = True

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        return [self._spawn(k, self._client(k)) for k in selected]

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        uplink = simpy.Resource(self.env, capacity=1)  # the client's own uplink: FIFO
        yield from self._download_model(k)
        shipments = []
        for t in range(self.local_iters):
            step = self.trainer.client_local_step(k, t)
            yield self._compute(t, k, EventKind.CLIENT_FORWARD, step.forward_flops)
            yield self._compute(t, k, EventKind.CLIENT_BACKWARD, step.backward_flops)
            shipments.append(self._spawn(k, self._ship(t, step.upload, uplink)))
        with uplink.request() as turn:
            yield turn
            yield from self._upload_model(k)
        yield self.env.all_of(shipments)  # the round waits for the server's last steps too

    def _ship(self, t: int, upload: ActivationMessage,
              uplink: simpy.Resource) -> Generator[simpy.Event, Any, None]:
        with uplink.request() as turn:
            yield turn
            yield self.link.upload(upload, EventKind.ACTIVATION_UPLOAD, t)
        yield from self._server_compute(t, upload.client_id, [upload])


class FederatedProtocol(Protocol):
    """FL family: model download, T local steps of client compute on the model it trains,
    model upload. What the model messages hold is the trainer's business (FedConcat sends the
    frozen encoders once, then only its classifier)."""

    trainer_contract = FederatedTrainer

    def round_processes(self, selected: Sequence[int]) -> list[simpy.Process]:
        return [self._spawn(k, self._client(k)) for k in selected]

    def _client(self, k: int) -> Generator[simpy.Event, Any, None]:
        yield from self._download_model(k)
        for t in range(self.local_iters):
            step = self.trainer.client_local_step(k, t)
            yield self._compute(t, k, EventKind.CLIENT_FORWARD, step.forward_flops)
            yield self._compute(t, k, EventKind.CLIENT_BACKWARD, step.backward_flops)
        yield from self._upload_model(k)
