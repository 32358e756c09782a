"""A network's clients under the NR link abstraction with no interference: each one's SNR a
block on 1..N blocks, the blocks a power-limited client's uploads use, and the refusal at the
drop of a client that can decode nothing (scala_netsim.sim.network.link)."""

from __future__ import annotations

import numpy as np

import channel
from channel import Direction
from scala_netsim.sim.cell import Cell
from scala_netsim.sim.network.settings import NetworkSettings


class NrBlocks:
    """The numbers above for a network's `cell` and link `settings`."""

    def __init__(self, cell: Cell, settings: NetworkSettings) -> None:
        self.cell, self.settings = cell, settings
        #: under the NR abstraction, each client's uplink goodput on 1..N blocks, quiet
        self._goodput: dict[int, np.ndarray] = {}

    def best_snr_db(self, direction: Direction, client: int | None = None) -> np.ndarray:
        """(clients, blocks 1..N) each client's SNR a block on its serving cell with n blocks
        and no interference (dB): on the uplink its power (power_w) spread over them, on the
        downlink the base station's a block, the same for every n. One client's row alone
        where `client` is given."""
        s, gain = self.settings, np.asarray(self.cell.gain_linear, float)
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

    def undecodable(self) -> str | None:
        """Under the NR link abstraction every client must decode some MCS on some number of
        blocks with no interference, in each direction: else its transfers would never end.
        None, or the problem: the first such clients of the first direction, their best SNR a
        block, the lowest MCS's threshold and what would let them."""
        s, nr = self.settings, self.settings.nr
        assert nr is not None
        for direction, tables in nr.tables.items():
            snr_db = self.best_snr_db(direction)
            lowest = tables.lowest_sinr_db()[1:]
            never = np.flatnonzero(~(snr_db >= lowest[None, :]).any(axis=1))
            if not len(never):
                continue
            best = snr_db[never].max(axis=1)
            names = ", ".join(f"{k} ({b:.1f} dB)" for k, b in
                              zip(never[:5].tolist(), best[:5].tolist(), strict=True))
            if direction is Direction.DOWNLINK:
                power = f"raise network.bs_tx_power_w ({s.bs_tx_power_w:g} W)"
            elif s.power_control is None:
                power = f"raise network.client_tx_power_w ({s.client_tx_power_w:g} W)"
            else:
                power = (f"raise network.power_control.p0_dbm ({s.power_control[0]:g} dBm) "
                         f"or alpha ({s.power_control[1]:g}), or network.client_tx_power_w "
                         f"({s.client_tx_power_w:g} W), the power they are capped at")
            table = "" if nr.mcs_table == "64qam" else "the 64qam table, "
            return (f"network.link_abstraction: nr: {len(never)} client(s) can decode no MCS "
                    f"of the {nr.mcs_table} table on the {direction.value} even without "
                    f"interference, on any number of blocks (best SNR a block): {names}; the "
                    f"table's lowest MCS needs {lowest.min():.2f} dB at bler_target "
                    f"{tables.bler_target:g}; {power}, or use {table}a higher bler_target or "
                    f"a smaller layout.isd_m")
        return None

    def refuse_undecodable(self) -> None:
        """ValueError with `undecodable`'s problem, where there is one (the run's own check;
        scala_netsim.runner.world.undecodable_clients asks before anything is written)."""
        problem = self.undecodable()
        if problem is not None:
            raise ValueError(problem)
