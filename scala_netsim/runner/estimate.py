"""An estimate of the real (wall-clock) time of a scenario's runs on this machine, from the
measured time of training steps of the scenario's model."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import Scenario
from scala_netsim.learn.data import Dataset
from scala_netsim.learn.models import build_split_model
from scala_netsim.learn.training import grad_of


def synchronize(device: torch.device) -> None:
    """Wait for the kernels queued on a GPU (it runs them after the calls return)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(step: Callable[[], None], device: torch.device, steps: int) -> float:
    """Seconds of one call of `step`, averaged over `steps` calls after one warm-up call."""
    step()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(device)
    return (time.perf_counter() - start) / steps


def _parts(scenario: Scenario, dataset: Dataset, device: torch.device
           ) -> tuple[nn.Module, nn.Module]:
    """A throwaway (client, server) pair of the scenario's model on `device`."""
    client, server = build_split_model(scenario.model.arch, scenario.model.split,
                                       dataset.in_channels, dataset.num_classes,
                                       torch.Generator().manual_seed(0),
                                       image_size=dataset.image_size)
    return client.to(device), server.to(device)


def train_step_s(scenario: Scenario, dataset: Dataset, device: torch.device, batch_size: int,
                 steps: int = 3) -> float:
    """Seconds of one training step of the whole model on `batch_size` images (a throwaway
    model, lr 0), measured after one warm-up step."""
    model = nn.Sequential(*_parts(scenario, dataset, device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    batch = min(batch_size, len(dataset.train_y))
    x, y = dataset.train_x[:batch], dataset.train_y[:batch]

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return _timed(step, device, steps)


def concatenated_step_s(scenario: Scenario, dataset: Dataset, device: torch.device,
                        steps: int = 3) -> float:
    """Seconds of one local iteration of SCALA's pattern (a throwaway model, lr 0): each of
    the round's clients runs its part forward on B / (r K) images, the server part steps on
    the concatenated activations (a backward pass for its weights, an input-only one for the
    activations' gradient), each client runs its part backward. Measured, not derived from a
    whole-model step: on a GPU the clients' small batches cost kernel launches, not FLOPs."""
    client, server = _parts(scenario, dataset, device)
    clients = scenario.num_participants
    batch = max(1, min(scenario.training.batch_size // clients, len(dataset.train_y)))
    x, y = dataset.train_x[:batch], dataset.train_y[:batch].repeat(clients)
    client_optimizer = torch.optim.SGD(client.parameters(), lr=0.0)
    server_optimizer = torch.optim.SGD(server.parameters(), lr=0.0)

    def iteration() -> None:
        outputs = [client(x) for _ in range(clients)]
        activations = torch.cat([out.detach() for out in outputs]).requires_grad_(True)
        loss = nn.functional.cross_entropy(server(activations), y)
        server_optimizer.zero_grad()
        loss.backward(retain_graph=True, inputs=list(server.parameters()))
        loss.backward(inputs=[activations])
        server_optimizer.step()
        client_optimizer.zero_grad()
        for out, grad in zip(outputs, grad_of(activations).split(batch), strict=True):
            out.backward(grad)
        for _ in range(clients):   # one step per client model (here all the one part)
            client_optimizer.step()

    return _timed(iteration, device, steps)


@dataclass(frozen=True)
class StepCosts:
    """Measured seconds per training sample at the server batch B, at a client's B / (r K),
    and in a local iteration of the concatenated-activations pattern (SCALA, CA-SFL)."""

    server_batch_s: float
    client_batch_s: float
    concatenated_s: float

    @classmethod
    def measure(cls, scenario: Scenario, dataset: Dataset, device: torch.device,
                threads: int | None = None) -> StepCosts:
        """Timed here, with `threads` torch threads (a worker's or a Ray task's; default: as
        many as this process uses)."""
        tr = scenario.training
        client_batch = max(1, tr.batch_size // scenario.num_participants)
        before = torch.get_num_threads()
        torch.set_num_threads(threads or before)
        try:
            return cls(train_step_s(scenario, dataset, device, tr.batch_size) / tr.batch_size,
                       train_step_s(scenario, dataset, device, client_batch) / client_batch,
                       concatenated_step_s(scenario, dataset, device)
                       / (client_batch * scenario.num_participants))
        finally:
            torch.set_num_threads(before)


def run_time_s(scenario: Scenario, algorithm: str, num_test: int, costs: StepCosts) -> float:
    """Seconds of one algorithm's run: rounds x T x B training samples, plus evaluations.

    Algorithms with concatenated activations (SCALA, CA-SFL): the per-sample time of their
    own pattern, measured (StepCosts.concatenated_s). Every other algorithm
    computes everything at the clients' batch B_k, about one plain step per sample: the
    per-sample time at B_k, which is higher on CPUs (small convolutions use the cores less
    well). An evaluation is a forward pass over the test set (a third of a step per image).
    Overheads of the baselines' own (weight copies, FedDyn's extra arithmetic) are not counted.
    """
    tr = scenario.training
    concatenated = ALGORITHMS[algorithm].traits.barrier   # SCALA and CA-SFL
    per_sample_s = costs.concatenated_s if concatenated else costs.client_batch_s
    evals = tr.rounds // tr.eval_every + (tr.rounds % tr.eval_every != 0)
    eval_s = costs.server_batch_s / 3 * num_test
    return tr.rounds * tr.local_iters * tr.batch_size * per_sample_s + evals * eval_s


def format_duration(seconds: float) -> str:
    """Seconds as a short human duration: '42 s', '3.5 min', '2.1 h'."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 3 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def makespan_s(durations: Sequence[float], slots: int) -> float:
    """How long `durations` take on `slots` workers that each take the next run, in the order
    given (the order the runs are submitted), as they come free."""
    loads = [0.0] * max(1, slots)
    for duration in durations:
        loads[loads.index(min(loads))] += duration
    return max(loads)


class Spread(NamedTuple):
    """How an executor runs the points: how many at once, torch threads each, and where (words
    for the estimate line; empty for one after another here)."""

    slots: int
    threads: int
    where: str


#: The run-time estimate times 8 training steps; below this many local iterations in all the
#: runs to train (a smoke test, a one-round check) it would cost a good part of the work
#: itself, and none is printed.
MIN_STEPS_TO_ESTIMATE = 20


def estimate_line(scenario: Scenario, todo: Sequence[Any], trained: Sequence[Any],
                  resumed: dict[Path, int], dataset: Dataset, device: torch.device,
                  spread: Spread | None) -> str:
    """The run-time estimate of the sweep's runs `trained` (a resumed one: the share of its
    rounds left), spread as the executor runs them, or why there is none (`spread` None: the
    user asked for none)."""
    steps = sum(c.scenario.training.rounds * c.scenario.training.local_iters for c in trained)
    if any(c.scenario.training.time_budget_s is not None for c in trained):
        return ("no run-time estimate: the runs stop at a simulated time budget "
                "(training.time_budget_s), so how many rounds they take shows only as they run")
    if trained and not scenario.timing_only and steps >= MIN_STEPS_TO_ESTIMATE:
        if spread is None:
            return "no run-time estimate (--no-estimate)"
        slots, threads, where = spread
        costs = StepCosts.measure(scenario, dataset, device, threads)
        each = [run_time_s(c.scenario, c.algorithm, len(dataset.test_y), costs)
                * (1 - resumed.get(c.folder, 0) / c.scenario.training.rounds) for c in trained]
        left = " (what is left of them)" if any(resumed.get(c.folder) for c in trained) else ""
        serial = f"{format_duration(sum(each))} for {len(trained)} run(s){left} one after another"
        if slots == 1:
            return f"estimated run time on this machine: {serial}" + where
        return (f"estimated run time: {format_duration(makespan_s(each, slots))} for "
                f"{len(trained)} run(s){left} spread over {where}, {threads} torch thread(s) "
                f"each, measured on this machine ({serial})")
    if not todo:
        return "every run is finished already (--force reruns them); rebuilding the report"
    if not trained:
        return ("no run-time estimate: every run left is re-timed from another's records "
                "(seconds each), none trained")
    if scenario.timing_only:
        return ("no run-time estimate: a timing-only run trains only the rounds that meter a "
                "new batch size, and how many those are shows only as it runs")
    return (f"no run-time estimate: {steps} local step(s) in all, fewer than it takes to "
            f"time them ({MIN_STEPS_TO_ESTIMATE})")


# --- memory ------------------------------------------------------------------------------
#: what the process holds before any client's model: the interpreter, torch and the run's
#: bookkeeping (measured: 1.1-1.2 GB for a point of the headline's scenario on CPU)
BASE_BYTES = 1.2e9
#: an event row held in memory until the run's files are written (a tuple of 7 numbers)
EVENT_ROW_BYTES = 200


def memory_bytes(scenario: Scenario, algorithm: str, dataset: Dataset) -> tuple[float, str]:
    """(bytes, what they are) a run of `algorithm` holds at its peak, roughly: each client
    training at once holds its model, its gradient and its momentum (3 copies of the client
    part; of the whole model for the federated family: measured 2.2 copies a FedAvg client),
    each per-client server copy likewise, a kept optimiser state one copy per client of the
    data, the dataset, the events of the rounds between two writes."""
    from scala_netsim.algorithms.splitfed import ServerCopies

    client_b, server_b = _part_bytes(scenario.model.arch, scenario.model.split,
                                     dataset.in_channels, dataset.num_classes,
                                     dataset.image_size)
    spec = ALGORITHMS[algorithm]
    config = spec.section(scenario)
    at_once = scenario.concurrency if spec.traits.asynchronous else scenario.num_selected
    own = client_b if spec.traits.activations else client_b + server_b
    copies = issubclass(spec.trainer, ServerCopies) or getattr(config, "server", "") == "per_client"
    # (a timing-only run meters each batch size with one real trainer: no client of its own)
    parts = [] if scenario.timing_only else [("clients' models", at_once * 3 * own)]
    if copies and not scenario.timing_only:
        parts.append(("per-client server copies", at_once * 3 * server_b))
    if not scenario.timing_only and getattr(config, "keeps_optimizer_state", lambda: False)():
        kept = own + (server_b if copies else 0.0)
        parts.append(("kept optimiser states", scenario.data.num_clients * kept))
    tr = scenario.training
    rounds_held = tr.rounds if scenario.timing_only else min(tr.rounds, tr.checkpoint_every)
    parts.append(("events", rounds_held * at_once * (4 * tr.local_iters + 4) * EVENT_ROW_BYTES))
    parts.append(("dataset", float(dataset.train_x.element_size() * dataset.train_x.numel()
                                   + dataset.test_x.element_size() * dataset.test_x.numel())))
    total = BASE_BYTES + sum(b for _, b in parts)
    what = ", ".join(f"{name} {b / 1e9:.1f} GB" for name, b in parts if b >= 0.05e9)
    return total, f"{at_once:,} client(s) at once; {what}" if what else f"{at_once:,} client(s)"


@functools.cache
def _part_bytes(arch: str, split: str, in_channels: int, num_classes: int,
                image_size: int) -> tuple[float, float]:
    """The parameter bytes of the client and the server part (built once per model: a
    sweep's points share it)."""
    client, server = build_split_model(arch, split, in_channels, num_classes,
                                       torch.Generator().manual_seed(0), image_size=image_size)
    client_b, server_b = (float(sum(t.numel() * t.element_size() for t in m.parameters()))
                          for m in (client, server))
    return client_b, server_b


def available_memory_bytes() -> float | None:
    """The memory the machine can give a new process now (Linux: MemAvailable), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def memory_check(points: Sequence[Any], dataset: Dataset,
                 at_once: int) -> tuple[str | None, str | None]:
    """(why the runs would not fit in this machine's memory, or None; a warning where they
    take more than half of it, or None) for the sweep's runs `points` to train, `at_once` of
    them at a time (the largest together)."""
    available = available_memory_bytes()
    if available is None or not points:
        return None, None
    needs = sorted(((*memory_bytes(c.scenario, c.algorithm, dataset), c.label) for c in points),
                   reverse=True)
    peak = sum(b for b, _, _ in needs[:max(1, at_once)])
    largest, what, label = needs[0]
    figure = (f"about {peak / 1e9:.1f} GB of memory ({label}: {largest / 1e9:.1f} GB, {what}"
              f"{f'; {at_once} runs at once' if at_once > 1 else ''}), this machine has "
              f"{available / 1e9:.1f} GB available")
    if peak > available:
        return (f"the runs would need {figure}; take fewer clients a round "
                f"(training.participation, training.concurrency) or fewer runs at once "
                f"(--jobs), or a machine with more memory"), None
    if peak > available / 2:
        return None, f"warning: the runs need {figure}"
    return None, None
