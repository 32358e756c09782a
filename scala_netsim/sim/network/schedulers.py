"""The schedulers of a network's air, behind one door: who holds which of a cell's blocks.

`static` (`Static`) grants each of the round's clients its blocks for the round (the
allocator's shares made whole blocks, `Static.begin_round`, as the link's round begins); it is
asked for a transfer's blocks as the transfer starts (`Static.grant`), and its client holds
them, idle or not, until the round ends; in a cell with more of the round's clients than
blocks each gets one block, taken in turns (`Static.turn`: a SimPy resource a block).

The others are work-conserving and per instant: the air asks `assign(cell, requests, held,
now)` whenever one of the cell's transfers starts or ends (and, for a scheduler that looks at
the channel, `reacts_to_gains`, whenever the gains of one change on the radio map), and
gets each transfer in progress its blocks, a set of the cell's (empty: none now):

- `round_robin`: equal shares, in the order the transfers joined, none above a transfer's cap
  (channel.network.round_robin_shares); a transfer that finds as many transfers on the air as
  blocks waits, first come first served, and one on the air always keeps a block. Its sets
  are ranges, contiguous from block 0 in the order the transfers joined (`placed`), all
  placed again at each decision.
- `proportional_fair`: the blocks to the transfers in order of instantaneous over averaged
  rate (channel.network.proportional_fair_shares), each taking what it can use; the average of
  each client is updated slot by slot, T <- beta T + (1 - beta) r (beta 0.98 by default, as
  Sionna's PFSchedulerSUMIMO and 5G-LENA's PF), in closed form over the time between two
  decisions at the rate its allocation gave it (channel.network.proportional_fair_average).
  A transfer may lose every block to a better one and wait on the air (parked) until it wins
  again. Its blocks are placed moving as few as it can (channel.network.kept_blocks): each
  keeps the lowest of those it holds, and one that needs more takes the lowest free, so a
  set need not be a range (air.csv gives a row for each run of consecutive blocks).

Between two decisions an allocation stands: the time shares of a slot scheduler, which decides
again every slot, are not modelled; the decisions come at the starts and ends of transfers and,
for proportional fair, at every change of gain (fading in blocks of time: each block's
boundary)."""

from __future__ import annotations

import abc
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

import channel
from channel import Direction
from channel import network as channel_network
from scala_netsim.sim.network.pf_book import DecisionBook, decision_problems
from scala_netsim.sim.network.pool import Flow
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.settings import NetworkSettings

#: a transfer's blocks of its cell: a set of block indices, increasing (empty: none now)
Blocks = np.ndarray
#: no block
NONE = np.zeros(0, np.int64)


@dataclass
class Request:
    """A transfer that asks a per-instant scheduler for its cell's blocks: its flow, client,
    cell, receive gain (its serving cell's, faded, now), the power it radiates on n blocks
    and on each of them (`powers(n)`: on the downlink the cell's power a block, whatever n),
    and the most blocks it can use (`cap`)."""

    flow: Flow
    client: int
    cell: int
    gain: float
    powers: Callable[[int], tuple[float, float]]
    cap: int
    #: other users' load in its mean (network.traffic.model: fluid): the interference it
    #: adds on each block (W) and the share of the blocks' time it leaves
    floor_w: float = 0.0
    share: float = 1.0


#: a request's rate (bit/s) on n blocks of its cell at its gain now, with no interference
RateOn = Callable[[Request, int], float]


class Scheduler(abc.ABC):
    """A per-instant scheduler (see the module's docstring): `assign` gives each request of a
    cell its blocks, the first len(held) of them on the air (in the order they joined) and
    holding `held`, the rest waiting (first come first served)."""

    #: the scenario's name for it (network.scheduler)
    name = ""
    #: does it decide again when a transfer's gains change (RadioMap.post)?
    reacts_to_gains = False

    @abc.abstractmethod
    def assign(self, cell: int, requests: Sequence[Request], held: Sequence[Blocks],
               now: float) -> list[Blocks]:
        """Each request's blocks of `cell` from `now` (empty: none). The first len(held)
        requests are on the air, holding `held` (in the order they joined), the rest
        waiting (first come first served)."""

    def problems(self) -> list[str]:
        """Broken invariants of its decisions so far (none checked here)."""
        return []

    @staticmethod
    def placed(counts: Sequence[int]) -> list[Blocks]:
        """Counts as contiguous ranges from block 0, in the order given."""
        if not counts:
            return []
        firsts = itertools.accumulate(counts[:-1], initial=0)
        return [np.arange(f, f + n) for f, n in zip(firsts, counts, strict=True)]


class RoundRobin(Scheduler):
    """Equal shares among the transfers on the air and those waiting that now fit (see the
    module's docstring)."""

    name = "round_robin"

    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = num_blocks

    def assign(self, cell: int, requests: Sequence[Request], held: Sequence[Blocks],
               now: float) -> list[Blocks]:
        del cell, now
        on_air = len(held)
        admitted = min(len(requests) - on_air, self.num_blocks - on_air)
        taking = requests[:on_air + admitted]
        counts = channel_network.round_robin_shares(self.num_blocks, [r.cap for r in taking])
        return self.placed(counts) + [NONE] * (len(requests) - len(taking))


class ProportionalFair(Scheduler):
    """Instantaneous over averaged rate (see the module's docstring). `rate_on(request, n)`:
    a request's rate on n blocks at its gain now, with no interference (the air's: Shannon or
    the NR goodput); `beta`: the average's weight a slot; `slot_s`: the slot. A client's
    average starts, at its first request, at its rate on the blocks it can use (its metric
    1), and moves at every decision of its cell over the time since the last: toward the rate
    its allocation gave it, toward 0 while it has none. Every decision goes in its `book`
    (scala_netsim.sim.network.pf_book), which `problems` checks."""

    name = "proportional_fair"
    reacts_to_gains = True

    def __init__(self, num_blocks: int, rate_on: RateOn, beta: float = 0.98,
                 slot_s: float = 1e-3) -> None:
        self.num_blocks, self.rate_on, self.beta, self.slot_s = (
            num_blocks, rate_on, beta, slot_s)
        #: each cell's clients: their average (bit/s), the rate their allocation gives them
        #: and since when
        self.averages: dict[int, dict[int, list[float]]] = {}
        #: every decision: the instant, the cell and per request the numbers behind it
        self.book = DecisionBook()

    def assign(self, cell: int, requests: Sequence[Request], held: Sequence[Blocks],
               now: float) -> list[Blocks]:
        averages = self.averages.setdefault(cell, {})
        before = [averages[r.client][0] if r.client in averages else math.nan
                  for r in requests]
        for state in averages.values():         # every client of the cell, up to now
            state[0] = channel_network.proportional_fair_average(
                state[0], state[1], self.beta, (now - state[2]) / self.slot_s)
            state[1], state[2] = 0.0, now
        usable = [min(r.cap, self.num_blocks) for r in requests]
        rates = [self.rate_on(r, n) for r, n in zip(requests, usable, strict=True)]
        for r, rate in zip(requests, rates, strict=True):
            averages.setdefault(r.client, [rate, 0.0, now])
        metrics = [rate / averages[r.client][0] if averages[r.client][0] > 0 else math.inf
                   for r, rate in zip(requests, rates, strict=True)]
        counts = channel_network.proportional_fair_shares(self.num_blocks, usable, metrics)
        given = [0.0 if n == 0 else rate if n == usable_n else self.rate_on(r, n)
                 for r, n, usable_n, rate in zip(requests, counts, usable, rates, strict=True)]
        for r, n, rate in zip(requests, counts, given, strict=True):
            if n > 0:
                averages[r.client][1] = rate
        self.book.record(now, cell, [
            (r.client, usable_n, rate, was, averages[r.client][0], metric, n, rate_given)
            for r, usable_n, rate, was, metric, n, rate_given
            in zip(requests, usable, rates, before, metrics, counts, given, strict=True)])
        # placed moving as few blocks as it can: a set, not always a range
        return channel_network.kept_blocks(
            self.num_blocks, [*held, *[NONE] * (len(requests) - len(held))], counts)

    def problems(self) -> list[str]:
        """Broken invariants of its decisions so far, from its book alone
        (pf_book.decision_problems): no block idle while a transfer of the cell waits, the
        blocks in order of metric, each metric the rate over the average, each average moved
        as stated."""
        return decision_problems(self.book, self.num_blocks, self.beta, self.slot_s)

    def average(self, cell: int, client: int) -> float:
        """Client's average as last updated (bit/s; NaN: never asked)."""
        state = self.averages.get(cell, {}).get(client)
        return math.nan if state is None else state[0]


def per_instant(name: str, num_blocks: int, rate_on: RateOn, beta: float = 0.98,
                slot_s: float = 1e-3) -> Scheduler | None:
    """The per-instant scheduler network.scheduler names for a direction's `num_blocks`
    blocks (None for `static`, whose grants are the round's)."""
    if name == "static":
        return None
    if name == RoundRobin.name:
        return RoundRobin(num_blocks)
    if name == ProportionalFair.name:
        return ProportionalFair(num_blocks, rate_on, beta, slot_s)
    raise ValueError(f"network.scheduler: {name!r} is not a scheduler (allowed: static, "
                     f"{RoundRobin.name}, {ProportionalFair.name})")


class Static:
    """The static scheduler of a network's link (see the module's docstring): each round's
    grants, recorded in `grant_rows` (GRANT_COLUMNS), `block_rows` (BLOCK_GRANT_COLUMNS) and
    `shared_rows` (SHARED_GRANT_COLUMNS). `radios[direction]`: what the allocator is told of
    each client's radio (LinkModel.allocation_radio); `uplink_blocks(k, n)`: the blocks of n
    granted an upload uses under NR (NrBlocks.uplink_blocks; None: all of them)."""

    name = "static"

    def __init__(self, env: simpy.Environment, settings: NetworkSettings, radio: RadioMap,
                 allocator: channel.BandwidthAllocator, radios: dict[Direction, Any],
                 uplink_blocks: Callable[[int, int], int] | None, grant_rows: list[tuple],
                 block_rows: list[tuple], shared_rows: list[tuple]) -> None:
        self.env, self.settings, self.radio, self.allocator = env, settings, radio, allocator
        self.radios, self.uplink_blocks = radios, uplink_blocks
        self.grant_rows, self.block_rows, self.shared_rows = grant_rows, block_rows, shared_rows
        #: each client's grant of the round: (first, count, its blocks as an array, which the
        #: air copies: made once a round, not once a transfer)
        self._blocks: dict[Direction, dict[int, tuple[int, int, np.ndarray]]] = {
            d: {} for d in Direction}
        #: the round's clients that take turns on a block, with the block's queue
        self._turns: dict[Direction, dict[int, simpy.Resource]] = {d: {} for d in Direction}

    def grant(self, direction: Direction, client: int) -> tuple[int, int, np.ndarray]:
        """Client's blocks of the round in `direction`: (first, count), a range, and its
        blocks first..first + count - 1 (not to be written to)."""
        return self._blocks[direction][client]

    def turn(self, direction: Direction, client: int) -> simpy.Resource | None:
        """The queue of client's block where it takes turns on it (None: its own blocks)."""
        return self._turns[direction].get(client)

    def begin_round(self, round_: int, demands: dict[Direction, channel.LinkDemand]) -> None:
        """Hand out each cell's blocks among its clients of the round, per direction: the
        allocator's shares of the cell's band made whole blocks (channel.network.whole_blocks),
        contiguous from block 0 in the order of the demand; under NR an upload's share is first
        capped at the blocks it uses (`uplink_blocks`) and the blocks placed by those, what the
        caps leave idle above the last client's (docs/model/network.md, issue 61); in a cell
        with more clients than blocks, one block each, taken in turns (`_share_blocks`)."""
        block_hz = self.settings.block_hz
        for direction, demand in demands.items():
            total = self.settings.blocks[direction]
            demand = demand.with_radio(self.radios[direction])
            value = direction._value_       # (`.value` is a slow descriptor)
            held = self._blocks[direction] = {}
            self._turns[direction] = {}
            serving = self.radio.serving[demand.client_ids]
            for c in np.unique(serving).tolist():
                mine = serving == c
                if np.count_nonzero(mine) > total:
                    self._share_blocks(round_, direction, c, demand.client_ids[mine].tolist())
                    continue
                part = demand.subset(mine)
                shares = self.allocator.allocate_hz(total * block_hz, part)
                blocks = channel.network.whole_blocks(shares, total, block_hz)
                if self.uplink_blocks is not None and direction is Direction.UPLINK:
                    blocks = np.array([self.uplink_blocks(k, n) for k, n in zip(
                        part.client_ids.tolist(), blocks.tolist(), strict=True)], np.int64)
                first = np.concatenate([[0], np.cumsum(blocks)[:-1]])
                for k, f, n in zip(part.client_ids.tolist(), first.tolist(), blocks.tolist(),
                                   strict=True):
                    held[k] = (f, n, np.arange(f, f + n))
                    self.grant_rows.append((round_, k, value, n * block_hz))
                    self.block_rows.append((round_, k, value, c, f, n))

    def _share_blocks(self, round_: int, direction: Direction, c: int,
                      clients: list[int]) -> None:
        """Cell c's clients, more than its blocks: client i gets block i mod N_RB, one queue
        (a SimPy resource) a block for the round."""
        total = self.settings.blocks[direction]
        queues = [simpy.Resource(self.env) for _ in range(total)]
        for i, k in enumerate(clients):
            block = i % total
            self._blocks[direction][k] = (block, 1, np.arange(block, block + 1))
            self._turns[direction][k] = queues[block]
            self.grant_rows.append((round_, k, direction.value, self.settings.block_hz))
            self.shared_rows.append((round_, k, direction.value, c, block))
