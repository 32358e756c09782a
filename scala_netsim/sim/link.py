"""The wireless link of the co-simulation: the band's allocation among the transfers in flight
(channel's allocators), each transfer's rate from the link model, fading and retransmissions, and
the grant and transfer books the invariants check. Payload bits become SimPy timeouts here."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import simpy

import channel
from channel import Direction
from scala_netsim.books.blocks import AirRecord
from scala_netsim.books.duplexing import Duplexing
from scala_netsim.core.events import EventKind, EventLog
from scala_netsim.learn.messages import ActivationMessage, GradientMessage, ModelMessage, Transfer
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.drops import Drops
from scala_netsim.sim.timeouts import Recorded, RecordedTimeout

# what a protocol hands the link: a real trainer's message, or a recorded one (a replay, a
# timing-only run); the engine reads only Transfer's client_id and payload_bytes
Message = ActivationMessage | GradientMessage | ModelMessage | Transfer


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



class Link(typing.Protocol):
    """What a protocol of synchronous rounds asks of a link: WirelessLink (one cell), or a
    network's scala_netsim.sim.network.link.NetworkLink."""

    round: int
    drops: Drops | None
    grant_rows: list[tuple]
    transfer_rows: list[tuple]

    def begin_round(self, round_: int,
                    demands: dict[Direction, channel.LinkDemand]) -> None: ...

    def upload(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event: ...

    def download(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event: ...

    def stream_states(self) -> dict[str, dict[int, dict]]: ...

    def load_stream_states(self, states: dict[str, dict[int, dict]]) -> None: ...

    def problems(self) -> list[str]:
        """Broken invariants of the books only the link holds (a network's grants of blocks and
        turns); the event, grant, transfer and air books are checked by
        scala_netsim.runner.checks."""
        ...

    def band_grant_rows(self) -> list[tuple] | None:
        """The grants as the round's sum over the band counts them, where that is not the
        grant book (`grant_rows`) itself (a network's blocks taken in turns); None where it
        is."""
        ...

    def air_record(self) -> AirRecord | None:
        """The blocks each transfer held over its air time (air.csv) and what deriving its
        rates again needs: a network's; None in the paper's cell (no blocks)."""
        ...


@typing.runtime_checkable
class AsyncLink(Link, typing.Protocol):
    """What an asynchronous protocol asks of a link beyond Link: versions instead of rounds,
    and each client's slot when it starts (WirelessLink: a fixed 1/Q of each band; a
    network's NetworkLink: none, its round-robin air grants blocks per transfer)."""

    def begin_version(self, number: int) -> None: ...

    def assign(self, k: int, shares: dict[Direction, float], record: bool = True) -> None: ...


class TransferLost(Exception):  # noqa: N818 (what happened, as the message says)
    """Thrown into a client's process when one of its transfers failed all its attempts
    (fixed-rate link in outage): the client is dropped from the round."""


def share_done(total: int, start_s: float, now_s: float, duration_s: float) -> int:
    """Of a step of `total` bytes or FLOPs lasting `duration_s` from `start_s`, what is done
    by `now_s` (rounded down): what a step cut short at `now_s` records."""
    if duration_s <= 0:
        return total
    return min(total, int(total * (now_s - start_s) / duration_s))


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
                 fading_seed: np.random.SeedSequence | None = None, drops: Drops | None = None,
                 grant_rows: list[tuple] | None = None,
                 transfer_rows: list[tuple] | None = None,
                 duplexing: Duplexing | None = None) -> None:
        """`drops`: the book of steps in flight when clients can be dropped (round rules, or
        a link model that loses transfers), shared with the protocol; None keeps the plain,
        faster path. `grant_rows` and `transfer_rows`: the books so far (a resumed run's).
        `duplexing`: a TDD frame (None: paired bands, FDD): a transfer's airtime passes in its
        direction's symbols only, an upload's from K2 after it is ready (its grant)."""
        if duplexing is not None and drops is not None:
            raise ValueError("a TDD frame times whole transfers only: no book of drops")
        self.duplexing = duplexing
        if model.outages and drops is None:
            raise ValueError(f"{type(model).__name__} loses transfers: the link needs the book "
                             f"of drops (drops=Drops())")
        self.env, self.cell, self.model, self.allocator, self.log = env, cell, model, allocator, log
        self.fading = channel.Fading() if fading is None else fading
        if self.fading.fades and fading_seed is None:
            raise ValueError("a fading channel needs the fading stream's seed (fading_seed)")
        self._fading_seed = seed if fading_seed is None else fading_seed  # (unused unfaded)
        self._fading_rngs: dict[int, np.random.Generator] = {}
        self._round_fading: dict[tuple[Direction, int], float] = {}
        self.grant_rows: list[tuple] = [] if grant_rows is None else grant_rows  # Grant.as_row()
        self.transfer_rows: list[tuple] = (   # TransferRate's fields
            [] if transfer_rows is None else transfer_rows)
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
        self.drops = drops

    @property
    def grants(self) -> list[Grant]:
        return [Grant.from_row(g) for g in self.grant_rows]

    @property
    def transfers(self) -> list[TransferRate]:
        return [TransferRate(*t) for t in self.transfer_rows]

    def problems(self) -> list[str]:
        """Nothing beyond the books the invariants check (a cell has no blocks or turns)."""
        return []

    def band_grant_rows(self) -> list[tuple] | None:
        """None: the grant book is what the band's sums read."""
        return None

    def air_record(self) -> AirRecord | None:
        """None: a cell's sub-bands are not blocks (the transfer book holds each one's)."""
        return None

    def stream_states(self) -> dict[str, dict[int, dict]]:
        """Where each client's own streams stand (per-transfer fading, the link model's): what
        a checkpoint keeps, so that a resumed run draws what the uninterrupted run draws."""
        return {name: {k: dict(g.bit_generator.state) for k, g in streams.items()}
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
            demand = demand.with_radio(self._radio[direction])
            shares = self.allocator.allocate_hz(self.cell.bandwidth_hz(direction), demand)
            self._bandwidth_hz[direction] = dict(zip(demand.client_ids.tolist(), shares.tolist(),
                                                     strict=True))
            self.grant_rows.extend((round_, k, direction.value, b)
                                   for k, b in self._bandwidth_hz[direction].items())

    def begin_version(self, number: int) -> None:
        """An asynchronous run builds global version `number` from now: the round its
        records carry (a round's protocol says it with begin_round)."""
        self.round = number

    def assign(self, k: int, shares: dict[Direction, float], record: bool = True) -> None:
        """Give client k a sub-band of its own in each direction (Hz), from now until it is
        given another: an asynchronous run's fixed slot, granted when the client starts (its
        grant rows carry the link's current `round`, the global version being built; not
        recorded again when a resumed run gives a client in flight its slot back)."""
        for direction, bandwidth_hz in shares.items():
            self._bandwidth_hz[direction][k] = bandwidth_hz
            self._rate_bps.pop((direction, k), None)
            if record:
                self.grant_rows.append((self.round, k, direction.value, bandwidth_hz))

    def upload(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event:
        """Client -> base station, starting now; yield it to wait for the transfer's end."""
        return self._transfer(message, kind, local_iter, Direction.UPLINK)

    def download(self, message: Message, kind: EventKind, local_iter: int) -> simpy.Event:
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
        sized = (direction, k, payload_bytes)
        if sized not in self._airtime_s:
            self._airtime_s[sized] = float(channel.airtime_s(payload_bytes, rate_bps))
        return rate_bps, self._airtime_s[sized], gain, tx_power_w

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

    def _transferred(self, transfer: simpy.Event) -> None:
        """Record the transfer `transfer` ended (its `.record`, set by `_transfer`): its row
        of the link's book, then its event."""
        assert isinstance(transfer, Recorded)
        _, start, _, local_iter, k, kind, payload_bytes, *radio = transfer.record
        self.transfer_rows.append((len(self.log), *radio))
        self.log.record(start, self.env.now, self.round, local_iter, k, kind, payload_bytes)

    def _transfer(self, message: Message, kind: EventKind, local_iter: int,
                  direction: Direction) -> simpy.Event:
        """A timeout lasting the message's airtime (under a TDD frame: until that much of its
        direction's symbols have passed from its grant) that records the transfer when it ends
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
        duration_s = airtime_s
        if self.duplexing is not None:   # its airtime in its direction's symbols, from its grant
            duration_s = self.duplexing.frame.finish(
                direction, self.duplexing.grant(direction, start), airtime_s) - start
        # what the record will say (an asynchronous run's checkpoint saves it)
        transfer = RecordedTimeout(self.env, duration_s, (
            "transfer", start, duration_s, local_iter, k, kind, payload_bytes, bandwidth_hz,
            rate_bps, attempts, gain, tx_power_w))
        if self.drops is None:
            transfer.callbacks.append(self._transferred)
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
            return self.drops.track(k, transfer, self._transferred, cut, local_iter)
        lost = self.env.event()

        def give_up(_: simpy.Event) -> None:
            cut(payload_bytes)
            lost.fail(TransferLost(k, kind.value, self.round))

        self.drops.track(k, transfer, give_up, cut, local_iter)
        return lost
