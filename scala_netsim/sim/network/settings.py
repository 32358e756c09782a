"""What a network's link is given beyond its cells (scala_netsim.sim.network.link): the
blocks, noise and powers of its bands, interference, power control, the backhaul, the TDD
frame, the NR link abstraction and the scheduler."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import channel
from channel import Direction
from channel.nr_link import LinkTables
from channel.tdd import TddFrame
from scala_netsim.books.duplexing import Duplexing


@dataclass(frozen=True)
class NrLink:
    """The NR link abstraction of a network (channel.nr_link): each direction's lookups, the
    most transmissions of a transport block and the HARQ round trip (s)."""

    tables: dict[Direction, LinkTables]
    max_transmissions: int
    harq_rtt_s: float
    mcs_table: str = "256qam"

    def tail_s(self, tbler: float) -> float:
        """The expected wait of a transfer's last transport block for its retransmissions:
        the round trip times sum_{i=1}^{H-1} TBLER^i (channel.nr_link)."""
        if not tbler > 0:
            return 0.0
        return self.harq_rtt_s * channel.nr_link.harq_tail_slots(tbler, self.max_transmissions)


@dataclass(frozen=True)
class TrafficSettings:
    """What the link takes of network.traffic: `kind` (full_buffer, ftp3), background users
    a cell (dropped: BackgroundUsers), the directions, FTP model 3's file (bits) and offered
    load, the seed of its arrivals, and whether each file is recorded
    (scala_netsim.sim.network.traffic)."""

    kind: str
    directions: tuple[Direction, ...]
    file_bits: float = 4e6
    #: FTP model 3's offered load by direction (none: 0)
    offered_load: dict[Direction, float] = field(default_factory=dict)
    seed: int = 0
    #: each file's row and stretches kept (traffic.csv, traffic_air.csv: what the checks of
    #: the air derive the rates again with); else each cell's books only (load.csv)
    record_files: bool = False
    #: FTP model 3's files in their mean (network.traffic.model: fluid) rather than each one
    fluid: bool = False


@dataclass(frozen=True)
class NetworkSettings:
    """What the network's link needs beyond the cells: the blocks of each direction's band,
    a block's width, the noise PSD, the powers, power control, interference, the backhaul."""

    blocks: dict[Direction, int]
    block_hz: float
    noise_psd_w_per_hz: float            # at the base station: the uplink's receiver
    client_tx_power_w: float
    bs_tx_power_w: float
    interference: bool = True
    power_control: tuple[float, float] | None = None     # (P0 dBm, alpha)
    backhaul: tuple[float, float] | None = None          # (latency s, bandwidth bit/s)
    downlink_noise_psd_w_per_hz: float | None = None     # at the client; None: the same
    duplexing: Duplexing | None = None   # a TDD frame and K2; None: paired bands
    nr: NrLink | None = None             # the NR link abstraction; None: Shannon rates
    #: `static`: each client's blocks granted for the round; `round_robin` or
    #: `proportional_fair`: handed out instant by instant among the transfers in progress
    #: (scala_netsim.sim.network.schedulers)
    scheduler: str = "static"
    #: proportional fair: the average's weight a slot, and the slot (s: the numerology's)
    pf_beta: float = 0.98
    slot_s: float = 1e-3
    #: other users' traffic (None: none)
    traffic: TrafficSettings | None = None

    @property
    def per_instant(self) -> bool:
        """Are blocks handed out per transfer (not granted for the round)?"""
        return self.scheduler != "static"

    @property
    def frame(self) -> TddFrame | None:
        return None if self.duplexing is None else self.duplexing.frame

    def noise_w_per_hz(self, direction: Direction) -> float:
        """The noise PSD at the receiver of `direction` (its noise figure included)."""
        if direction is Direction.DOWNLINK and self.downlink_noise_psd_w_per_hz is not None:
            return self.downlink_noise_psd_w_per_hz
        return self.noise_psd_w_per_hz

    def power_w(self, direction: Direction, gain_linear: float, blocks: int) -> float:
        """What a transfer radiates on its `blocks` blocks: on the uplink the client's power
        (fixed, or by open-loop power control at its coupling loss to its serving cell,
        `gain_linear`), on the downlink the base station's power spread over the whole band."""
        if direction is Direction.DOWNLINK:
            return self.bs_tx_power_w * blocks / self.blocks[direction]
        if self.power_control is None:
            return self.client_tx_power_w
        p0_dbm, alpha = self.power_control
        loss_db = -10.0 * math.log10(gain_linear)
        dbm = channel.nr.uplink_tx_power_dbm(loss_db, blocks, p0_dbm, alpha,
                                             float(channel.w_to_dbm(self.client_tx_power_w)))
        return float(channel.dbm_to_w(dbm))

    def powers(self, direction: Direction, gain_linear: float,
               blocks: int) -> tuple[float, float]:
        """What a transfer radiates on its `blocks` blocks (`power_w`) and on each of them:
        on the downlink the base station's power a block of the band (the same whatever
        `blocks`, to the bit), on the uplink its power spread over them."""
        power_w = self.power_w(direction, gain_linear, blocks)
        if direction is Direction.DOWNLINK:
            return power_w, self.bs_tx_power_w / self.blocks[direction]
        return power_w, power_w / blocks
