"""The SimPy co-simulation of one cell.

Clients and the server are SimPy processes that exchange typed messages over a wireless link;
the link asks `channel` for each client's rate and turns payload bits into timeouts, compute
steps turn measured FLOPs into timeouts at the node's FLOP/s, and the server's processor is a
SimPy resource that server steps queue on. The real torch computation of a step is invoked by
the process at the simulated moment the step starts. Time passes nowhere else.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import simpy

import channel

EVENT_KINDS = ("model_download", "client_forward", "activation_upload", "server_step",
               "gradient_download", "client_backward", "model_upload")
EVENT_COLUMNS = ("t_start_s", "t_end_s", "round", "local_iter", "client_id", "kind",
                 "payload_bytes", "flops")
SERVER_ID = -1  # client_id of events that happen on the server


@dataclass
class Cell:
    """The dropped clients of one cell and the radio and compute settings (SI units)."""

    distance_m: np.ndarray
    pathloss_db: np.ndarray
    flops_per_s: np.ndarray
    server_flops_per_s: float
    uplink_bandwidth_hz: float
    downlink_bandwidth_hz: float
    client_tx_power_w: float
    bs_tx_power_w: float
    noise_psd_dbm_per_hz: float

    @property
    def gain_linear(self) -> np.ndarray:
        return channel.db_to_linear(-self.pathloss_db)

    def uplink_rate_bps(self, k: int, bandwidth_hz: float) -> float:
        """Client k's uplink Shannon rate on a sub-band of `bandwidth_hz`."""
        return float(channel.shannon_rate_bps(bandwidth_hz, self.client_tx_power_w,
                                              self.gain_linear[k], self.noise_psd_dbm_per_hz))

    def downlink_rate_bps(self, k: int, bandwidth_hz: float) -> float:
        """Downlink rate to client k. The base station spreads its power evenly over its band
        (constant PSD), so a sub-band of b Hz gets P_bs * b / W_dl."""
        tx_power_w = self.bs_tx_power_w * bandwidth_hz / self.downlink_bandwidth_hz
        return float(channel.shannon_rate_bps(bandwidth_hz, tx_power_w, self.gain_linear[k],
                                              self.noise_psd_dbm_per_hz))


class EventLog:
    """Tidy rows, one per timed event (columns EVENT_COLUMNS)."""

    def __init__(self):
        self.rows = []

    def add(self, t_start_s, t_end_s, round_, local_iter, client_id, kind, payload_bytes=0,
            flops=0):
        self.rows.append((t_start_s, t_end_s, round_, local_iter, client_id, kind,
                          payload_bytes, flops))


class WirelessLink:
    """The cell's orthogonal up- and downlink. Each round the allocator splits both bands
    among the participating clients; a transfer lasts payload bits / the client's rate."""

    def __init__(self, env: simpy.Environment, cell: Cell, log: EventLog,
                 allocator: channel.BandwidthAllocator):
        self.env, self.cell, self.log, self.allocator = env, cell, log, allocator
        self.uplink_rate_bps, self.downlink_rate_bps = {}, {}

    def allocate(self, client_ids) -> None:
        """Split the bands among `client_ids` for the coming round."""
        up = self.allocator.allocate_hz(self.cell.uplink_bandwidth_hz, client_ids)
        down = self.allocator.allocate_hz(self.cell.downlink_bandwidth_hz, client_ids)
        self.uplink_rate_bps = {k: self.cell.uplink_rate_bps(k, b) for k, b in up.items()}
        self.downlink_rate_bps = {k: self.cell.downlink_rate_bps(k, b) for k, b in down.items()}

    def upload(self, message, kind, round_, local_iter):
        yield from self._transfer(message, kind, round_, local_iter,
                                  self.uplink_rate_bps[message.client_id])

    def download(self, message, kind, round_, local_iter):
        yield from self._transfer(message, kind, round_, local_iter,
                                  self.downlink_rate_bps[message.client_id])

    def _transfer(self, message, kind, round_, local_iter, rate_bps):
        start = self.env.now
        yield self.env.timeout(float(channel.airtime_s(message.payload_bytes, rate_bps)))
        self.log.add(start, self.env.now, round_, local_iter, message.client_id, kind,
                     message.payload_bytes)


class Protocol(ABC):
    """One algorithm's communication pattern, simulated a round at a time. Subclasses write
    the SimPy processes of a round; the real computation is the trainer's."""

    pipelined_clients = False  # may a client compute while its uplink is busy?

    def __init__(self, env: simpy.Environment, cell: Cell, trainer, log: EventLog,
                 allocator: channel.BandwidthAllocator, local_iters: int):
        self.env, self.cell, self.trainer, self.log = env, cell, trainer, log
        self.local_iters = local_iters
        self.link = WirelessLink(env, cell, log, allocator)
        self.server_cpu = simpy.Resource(env, capacity=1)

    def run_round(self, round_: int, selected) -> None:
        """Simulate (and really train) one round; the clock advances to the round's end."""
        self.trainer.begin_round(selected)
        self.link.allocate(selected)
        self.env.run(until=self.env.all_of(self.round_processes(round_, selected)))
        self.trainer.end_round()

    @abstractmethod
    def round_processes(self, round_, selected) -> list:
        """The SimPy processes of one round (the round ends when all have finished)."""

    def _compute(self, round_, local_iter, k, kind, flops):
        """Client k computes `flops` at its FLOP/s."""
        start = self.env.now
        yield self.env.timeout(float(channel.compute_time_s(flops, self.cell.flops_per_s[k])))
        self.log.add(start, self.env.now, round_, local_iter, k, kind, 0, flops)

    def _server_compute(self, round_, local_iter, client_id, step):
        """Wait for the server processor (FIFO), then run `step()` -> (result, FLOPs) at the
        moment the server starts it and hold the processor for FLOPs / server FLOP/s."""
        with self.server_cpu.request() as turn:
            yield turn
            start = self.env.now
            result, flops = step()
            yield self.env.timeout(float(channel.compute_time_s(
                flops, self.cell.server_flops_per_s)))
            self.log.add(start, self.env.now, round_, local_iter, client_id, "server_step", 0,
                         flops)
        return result

    def _download_model(self, round_, k):
        message = self.trainer.client_model_download(k)
        yield from self.link.download(message, "model_download", round_, -1)
        self.trainer.client_receive_model(message)

    def _upload_model(self, round_, k):
        message = self.trainer.client_model_upload(k)
        yield from self.link.upload(message, "model_upload", round_, -1)
        self.trainer.server_receive_model(message)


class ConcatSplitProtocol(Protocol):
    """SCALA and CA-SFL: model download; T x (client forward, activation upload, barrier on
    all activations, ONE server step, gradient downloads, client backward); model upload."""

    def round_processes(self, round_, selected):
        activations = simpy.Store(self.env)
        gradients = {k: simpy.Store(self.env) for k in selected}
        procs = [self.env.process(self._client(round_, k, activations, gradients[k]))
                 for k in selected]
        procs.append(self.env.process(self._server(round_, len(selected), activations,
                                                   gradients)))
        return procs

    def _client(self, round_, k, activations, gradients):
        trainer = self.trainer
        yield from self._download_model(round_, k)
        for t in range(self.local_iters):
            message, flops = trainer.client_forward(k, t)
            yield from self._compute(round_, t, k, "client_forward", flops)
            yield from self.link.upload(message, "activation_upload", round_, t)
            activations.put(message)
            grad = yield gradients.get()
            yield from self.link.download(grad, "gradient_download", round_, t)
            yield from self._compute(round_, t, k, "client_backward", trainer.client_backward(grad))
        yield from self._upload_model(round_, k)

    def _server(self, round_, num_clients, activations, gradients):
        for t in range(self.local_iters):
            arrived = []
            for _ in range(num_clients):            # barrier: wait for every client
                arrived.append((yield activations.get()))
            arrived.sort(key=lambda m: m.client_id)  # concatenation order is by client id
            grads = yield from self._server_compute(
                round_, t, SERVER_ID, lambda: self.trainer.server_step(arrived))
            for g in grads:
                gradients[g.client_id].put(g)


class PerClientSplitProtocol(Protocol):
    """SplitFed V1/V2/V3, LLA-SFL, CS-SFL: every client's activations get their own server
    step as soon as the server processor is free, in arrival order (a FIFO SimPy resource);
    no barrier. SplitFedV2's shared model is thus updated in the order the clock decides.
    SplitFedV3 sends no client model either way (clients keep their own)."""

    def round_processes(self, round_, selected):
        return [self.env.process(self._client(round_, k)) for k in selected]

    def _client(self, round_, k):
        trainer = self.trainer
        if trainer.sends_client_model:
            yield from self._download_model(round_, k)
        else:
            trainer.client_resume(k)
        for t in range(self.local_iters):
            message, flops = trainer.client_forward(k, t)
            yield from self._compute(round_, t, k, "client_forward", flops)
            yield from self.link.upload(message, "activation_upload", round_, t)
            grad = yield from self._server_compute(
                round_, t, k, lambda: trainer.server_step_one(message))
            yield from self.link.download(grad, "gradient_download", round_, t)
            yield from self._compute(round_, t, k, "client_backward", trainer.client_backward(grad))
        if trainer.sends_client_model:
            yield from self._upload_model(round_, k)
        else:
            trainer.client_keep(k)


class LocalLossProtocol(Protocol):
    """SFL with local loss: a client never waits for the server. Each local step is computed,
    its activations queue on the client's uplink (one transfer at a time) while the client
    goes on with the next step, the server consumes them in arrival order, and no gradient
    comes back. The model upload follows the client's last activations on its uplink."""

    pipelined_clients = True

    def round_processes(self, round_, selected):
        return [self.env.process(self._client(round_, k)) for k in selected]

    def _client(self, round_, k):
        trainer = self.trainer
        uplink = simpy.Resource(self.env, capacity=1)  # the client's own uplink: FIFO
        yield from self._download_model(round_, k)
        shipments = []
        for t in range(self.local_iters):
            message, forward_flops, backward_flops = trainer.client_local_step(k, t)
            yield from self._compute(round_, t, k, "client_forward", forward_flops)
            yield from self._compute(round_, t, k, "client_backward", backward_flops)
            shipments.append(self.env.process(self._ship(round_, t, message, uplink)))
        with uplink.request() as turn:
            yield turn
            yield from self._upload_model(round_, k)
        yield self.env.all_of(shipments)  # the round waits for the server's last steps too

    def _ship(self, round_, t, message, uplink):
        with uplink.request() as turn:
            yield turn
            yield from self.link.upload(message, "activation_upload", round_, t)
        yield from self._server_compute(
            round_, t, message.client_id, lambda: (None, self.trainer.server_consume(message)))


class FederatedProtocol(Protocol):
    """FL family: model download, T local steps of client compute on the model it trains,
    model upload. What the model messages hold is the trainer's business (FedConcat sends the
    frozen encoders once, then only its classifier)."""

    def round_processes(self, round_, selected):
        return [self.env.process(self._client(round_, k)) for k in selected]

    def _client(self, round_, k):
        yield from self._download_model(round_, k)
        for t in range(self.local_iters):
            forward_flops, backward_flops = self.trainer.client_local_step(k, t)
            yield from self._compute(round_, t, k, "client_forward", forward_flops)
            yield from self._compute(round_, t, k, "client_backward", backward_flops)
        yield from self._upload_model(round_, k)
