"""A network's clients under the NR link abstraction with no interference: each one's SNR a
block on 1..N blocks and the blocks a power-limited client's uploads use
(scala_netsim.sim.network.link). A drop whose clients can decode nothing is refused before
the run (scala_netsim.config.link_budget)."""

from __future__ import annotations

import numpy as np

import channel
from channel import Direction
from scala_netsim.sim.network.radio_map import RadioMap
from scala_netsim.sim.network.settings import NetworkSettings


class NrBlocks:
    """The numbers above for a network's radio map `radio` (each client's large-scale gain
    to its serving cell) and link `settings`."""

    def __init__(self, radio: RadioMap, settings: NetworkSettings) -> None:
        self.radio, self.settings = radio, settings
        #: under the NR abstraction, each client's uplink goodput on 1..N blocks, quiet (a
        #: client that moves has its own forgotten: RadioMap.move)
        self._goodput: dict[int, np.ndarray] = {}
        radio.on_move(self._forget)

    def _forget(self, client: int) -> None:
        self._goodput.pop(client, None)

    def best_snr_db(self, direction: Direction, client: int | None = None) -> np.ndarray:
        """(clients, blocks 1..N) each client's SNR a block on its serving cell with n blocks
        and no interference (dB): on the uplink its power (power_w) spread over them, on the
        downlink the base station's a block, the same for every n. One client's row alone
        where `client` is given."""
        s, gain = self.settings, self.radio.serving_gains
        if client is not None:
            gain = gain[[client]]
        n = np.arange(1, s.blocks[direction] + 1, dtype=float)
        noise_w = s.noise_w_per_hz(direction) * s.block_hz
        if direction is Direction.DOWNLINK:
            per_block_w = np.full((len(gain), len(n)), s.bs_tx_power_w / s.blocks[direction])
        elif s.power_control is None:
            per_block_w = s.client_tx_power_w / n[None, :] + np.zeros((len(gain), 1))
        else:
            p0_dbm, alpha = s.power_control
            dbm = channel.nr.uplink_tx_power_dbm(-10.0 * np.log10(gain)[:, None], n[None, :],
                                                 p0_dbm, alpha,
                                                 float(channel.w_to_dbm(s.client_tx_power_w)))
            per_block_w = channel.dbm_to_w(dbm) / n[None, :]
        return 10.0 * np.log10(per_block_w * gain[:, None] / noise_w)

    def cap(self, direction: Direction, k: int) -> int:
        """The most blocks client k's transfers use under a per-instant scheduler: all the
        cell's, but under the NR abstraction an upload's the number with the best goodput
        (uplink_blocks)."""
        total = self.settings.blocks[direction]
        if self.settings.nr is None or direction is Direction.DOWNLINK:
            return total
        return self.uplink_blocks(k, total)

    def uplink_blocks(self, k: int, granted: int) -> int:
        """Under the NR link abstraction, the blocks a client's uploads use of the `granted`:
        the number (at most those) whose goodput with no interference is the highest, its
        power spread over them: a power-limited client at the cell edge sends on fewer
        blocks at a decodable SINR rather than on all at none (the largest such number
        where several give the same goodput)."""
        goodput = self._goodput.get(k)
        if goodput is None:
            assert self.settings.nr is not None
            tables = self.settings.nr.tables[Direction.UPLINK]
            snr = 10.0 ** (self.best_snr_db(Direction.UPLINK, k)[0] / 10.0)
            goodput = self._goodput[k] = np.array(
                [tables.goodput_bps(np.full(n, snr[n - 1])) for n in range(1, len(snr) + 1)])
        best = goodput[:granted]
        return int(np.flatnonzero(best == best.max())[-1]) + 1
