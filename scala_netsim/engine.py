"""The SimPy co-simulation of one cell.

Clients and the server are SimPy processes that exchange typed messages over a wireless link;
the link asks `channel` for each client's rate and turns payload bits into timeouts, compute
steps turn measured FLOPs into timeouts at the node's FLOP/s, and the server's processor is a
SimPy resource that server steps queue on. The real torch computation of a step is invoked by
the process at the simulated moment the step starts. Time passes nowhere else.
"""

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


class ConcatSplitProtocol:
    """The communication pattern of SCALA and CA-SFL, one round at a time:
    model download; T x (client forward, activation upload, barrier on all activations, ONE
    server step, gradient downloads, client backward); model upload; aggregation.
    """

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
        activations = simpy.Store(self.env)
        models = simpy.Store(self.env)
        gradients = {k: simpy.Store(self.env) for k in selected}
        procs = [self.env.process(self._client(round_, k, activations, gradients[k], models))
                 for k in selected]
        procs.append(self.env.process(self._server(round_, len(selected), activations,
                                                   gradients, models)))
        done = self.env.all_of(procs)
        self.env.run(until=done)

    def _compute(self, round_, local_iter, k, kind, flops):
        start = self.env.now
        yield self.env.timeout(float(channel.compute_time_s(flops, self.cell.flops_per_s[k])))
        self.log.add(start, self.env.now, round_, local_iter, k, kind, 0, flops)

    def _client(self, round_, k, activations, gradients, models):
        trainer = self.trainer
        download = trainer.client_model_download(k)
        yield from self.link.download(download, "model_download", round_, -1)
        trainer.client_receive_model(download)
        for t in range(self.local_iters):
            message, flops = trainer.client_forward(k, t)
            yield from self._compute(round_, t, k, "client_forward", flops)
            yield from self.link.upload(message, "activation_upload", round_, t)
            activations.put(message)
            grad = yield gradients.get()
            yield from self.link.download(grad, "gradient_download", round_, t)
            yield from self._compute(round_, t, k, "client_backward", trainer.client_backward(grad))
        upload = trainer.client_model_upload(k)
        yield from self.link.upload(upload, "model_upload", round_, -1)
        models.put(upload)

    def _server(self, round_, num_clients, activations, gradients, models):
        for t in range(self.local_iters):
            arrived = []
            for _ in range(num_clients):            # barrier: wait for every client
                arrived.append((yield activations.get()))
            arrived.sort(key=lambda m: m.client_id)  # concatenation order is by client id
            with self.server_cpu.request() as turn:
                yield turn
                start = self.env.now
                grads, flops = self.trainer.server_step(arrived)
                yield self.env.timeout(float(channel.compute_time_s(
                    flops, self.cell.server_flops_per_s)))
                self.log.add(start, self.env.now, round_, t, SERVER_ID, "server_step", 0, flops)
            for g in grads:
                gradients[g.client_id].put(g)
        for _ in range(num_clients):
            self.trainer.server_receive_model((yield models.get()))
        self.trainer.end_round()
