"""Link models: the rate of one transfer on a client's sub-band.

A link model holds the fixed radio settings (powers, noise) from its constructor and is asked,
per transfer, for the rate given that transfer's inputs: direction, the client's large-scale
gain, its sub-band, the time, and a random stream of its own (Sionna's split of parameters and
inputs). Models that fade or fail draw from that stream; the engine never needs to know.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import ClassVar

import numpy as np

from channel.radio import shannon_rate_bps
from channel.units import dbm_to_w


class Direction(str, Enum):
    UPLINK = "uplink"      # client -> base station
    DOWNLINK = "downlink"  # base station -> client


class LinkModel(ABC):
    """Rate of one transfer (bit/s) on an orthogonal sub-band."""

    name: ClassVar[str]
    #: does a client's rate change within a round (fading, outage)? When it does not, the rate
    #: depends on (direction, gain, sub-band) alone and the engine asks once per round
    varies_per_transfer: ClassVar[bool] = True
    #: does it draw from the client's random stream? When it does not, `rng` is None (building
    #: a client's stream costs more than a transfer, and 10,000 clients need 10,000 streams)
    draws: ClassVar[bool] = True

    @abstractmethod
    def rate_bps(self, direction: Direction, gain_linear: float, bandwidth_hz: float,
                 time_s: float, rng: np.random.Generator | None) -> float:
        """The rate of a transfer that starts at `time_s` on a sub-band of `bandwidth_hz`
        between the base station and a client whose large-scale power gain is `gain_linear`."""

    #: can an attempt fail (`succeeds`)? Then the engine draws each attempt's fading and
    #: repeats a failed one (ARQ) up to `max_attempts` in all
    outages: ClassVar[bool] = False
    max_attempts: int = 1

    def succeeds(self, direction: Direction, gain_linear: float, bandwidth_hz: float) -> bool:
        """Does an attempt at the channel's instantaneous gain `gain_linear` (fading included)
        get through? Always, unless the model has outages."""
        return True

    def tx_power_w(self, direction: Direction, bandwidth_hz: float) -> float:
        """The power the sender radiates on a sub-band of `bandwidth_hz` in `direction` (W;
        NaN when the model has no notion of it)."""
        return float("nan")

    def allocation_radio(self, direction: Direction) -> tuple[float, float, bool] | None:
        """(transmit power W, noise PSD W/Hz, whether the power is spread over the band) for
        allocators that weigh the clients' rates (channel.bandwidth.LinkDemand); None when the
        model has no such settings."""
        return None


class AdaptiveShannonLink(LinkModel):
    """Rate adapted to the channel, at Shannon capacity r = b log2(1 + p g / (N0 b)); never an
    outage. Uplink: the client sends at `client_tx_power_w`. Downlink: the base station spreads
    `bs_tx_power_w` evenly over its `downlink_bandwidth_hz` (constant power spectral density),
    so a sub-band of b Hz gets P_bs b / W_dl."""

    name = "adaptive"
    varies_per_transfer = False
    draws = False

    def __init__(self, client_tx_power_w: float, bs_tx_power_w: float,
                 downlink_bandwidth_hz: float, noise_psd_dbm_per_hz: float,
                 bs_noise_figure_db: float = 0.0, client_noise_figure_db: float = 0.0) -> None:
        self.client_tx_power_w = client_tx_power_w
        self.bs_tx_power_w = bs_tx_power_w
        self.downlink_bandwidth_hz = downlink_bandwidth_hz
        self.noise_psd_dbm_per_hz = noise_psd_dbm_per_hz
        self.bs_noise_figure_db = bs_noise_figure_db
        self.client_noise_figure_db = client_noise_figure_db

    def receiver_noise_dbm_per_hz(self, direction: Direction) -> float:
        """The noise PSD at the receiver of `direction`: N0 plus its noise figure (the base
        station's on the uplink, the client's on the downlink)."""
        figure = (self.bs_noise_figure_db if direction is Direction.UPLINK
                  else self.client_noise_figure_db)
        return self.noise_psd_dbm_per_hz + figure

    def tx_power_w(self, direction: Direction, bandwidth_hz: float) -> float:
        """The transmit power on a sub-band of `bandwidth_hz` in `direction`."""
        if direction is Direction.UPLINK:
            return self.client_tx_power_w
        return self.bs_tx_power_w * bandwidth_hz / self.downlink_bandwidth_hz

    def allocation_radio(self, direction: Direction) -> tuple[float, float, bool]:
        noise = float(dbm_to_w(self.receiver_noise_dbm_per_hz(direction)))
        if direction is Direction.UPLINK:
            return self.client_tx_power_w, noise, False
        return self.bs_tx_power_w, noise, True

    def capacity_bps(self, direction: Direction, gain_linear: float,
                     bandwidth_hz: float) -> float:
        """Shannon capacity b log2(1 + p g / (N0 b)) of a sub-band at power gain g."""
        return float(shannon_rate_bps(bandwidth_hz, self.tx_power_w(direction, bandwidth_hz),
                                      gain_linear, self.receiver_noise_dbm_per_hz(direction)))

    def rate_bps(self, direction: Direction, gain_linear: float, bandwidth_hz: float,
                 time_s: float, rng: np.random.Generator | None) -> float:
        return self.capacity_bps(direction, gain_linear, bandwidth_hz)


class FixedRateLink(AdaptiveShannonLink):
    """Sends at a fixed `target_rate_bps`; an attempt fails (outage) when the instantaneous
    capacity b log2(1 + p g |h|^2 / (N0 b)) is below it, and is repeated (ARQ) up to
    `max_attempts` times in all; the engine draws the fading gain of each attempt (a fresh one
    per attempt when the fading's coherence is one transfer)."""

    name = "fixed_rate"
    outages = True

    def __init__(self, client_tx_power_w: float, bs_tx_power_w: float,
                 downlink_bandwidth_hz: float, noise_psd_dbm_per_hz: float,
                 target_rate_bps: float, max_attempts: int, bs_noise_figure_db: float = 0.0,
                 client_noise_figure_db: float = 0.0) -> None:
        super().__init__(client_tx_power_w, bs_tx_power_w, downlink_bandwidth_hz,
                         noise_psd_dbm_per_hz, bs_noise_figure_db, client_noise_figure_db)
        self.target_rate_bps = target_rate_bps
        self.max_attempts = max_attempts

    def rate_bps(self, direction: Direction, gain_linear: float, bandwidth_hz: float,
                 time_s: float, rng: np.random.Generator | None) -> float:
        return self.target_rate_bps

    def succeeds(self, direction: Direction, gain_linear: float, bandwidth_hz: float) -> bool:
        return self.capacity_bps(direction, gain_linear, bandwidth_hz) >= self.target_rate_bps


LINK_MODELS: dict[str, type[LinkModel]] = {m.name: m for m in (AdaptiveShannonLink,
                                                                FixedRateLink)}
