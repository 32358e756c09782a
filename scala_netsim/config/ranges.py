"""Plausible ranges for the physical keys of a scenario (powers, frequencies, bands,
distances, noise, compute), each with its unit, so that a value typed in the wrong unit
(23 dBm as client_tx_power_w, 3.5 GHz as carrier_frequency_hz=3.5) or a number no radio has
(noise_psd_dbm_per_hz: 10) is refused before it runs, with what was meant.

A range is wide: it refuses what no study of a cellular uplink means, not what this one's
defaults leave out. `Physical(low, high, unit, hint)` is a type for pydantic:
`Annotated[float, Physical(...)]`; NaN and infinities are refused too."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema


def number(value: float) -> str:
    """A value as a scenario file would write it: 1e8, 1e-6, 0.2, -174."""
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + m[1].replace("+", "") + m[2], f"{value:g}")


@dataclass(frozen=True)
class Physical:
    """A float in [low, high] (`unit`), `hint` saying how a common value is written."""

    low: float
    high: float
    unit: str
    hint: str

    def check(self, value: float) -> float:
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise ValueError(f"must be from {number(self.low)} to {number(self.high)} "
                             f"({self.unit}; {self.hint}), got {number(value)}")
        return value

    def __get_pydantic_core_schema__(self, source: Any,
                                     handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))


# --- the ranges, by what they measure ---------------------------------------------------
#: the carrier: NR's FR1 and FR2 lie inside 0.41-71 GHz; 38.901's models cover 0.5-100 GHz
CARRIER = Physical(1e8, 1e11, "Hz", "3.5 GHz is 3.5e9")
#: a band of one cell and direction: from an NB-IoT-like 180 kHz channel down to 1 kHz, up to
#: a few GHz of mmWave
BAND = Physical(1e3, 1e10, "Hz", "20 MHz is 20e6")
#: a client's transmit power: 23 dBm (0.2 W) is NR's power class 3, 26-29 dBm the high-power
#: classes; 10 W is a fixed wireless terminal's ceiling
CLIENT_POWER = Physical(1e-6, 10.0, "W", "23 dBm is 0.2 W")
#: a base station's (a cell's) transmit power: 46 dBm (40 W) a macro cell, 24-30 dBm a small one
BS_POWER = Physical(1e-3, 1e3, "W", "46 dBm is 39.8 W")
#: thermal noise is -174 dBm/Hz at 290 K; a noise figure raises it by a few dB
NOISE_PSD = Physical(-200.0, -130.0, "dBm/Hz", "thermal noise at 290 K is -174")
#: a receiver's noise figure: 5-9 dB for a client, 2-5 dB for a base station
NOISE_FIGURE = Physical(0.0, 30.0, "dB", "a base station's is about 5, a client's about 9")
#: distances of a cell's geometry: a cell radius, an inter-site distance
DISTANCE = Physical(1.0, 1e5, "m", "500 m is 500")
#: antenna heights (38.901 checks its own, narrower, ranges)
HEIGHT = Physical(0.5, 500.0, "m", "a macro mast is 25")
#: log-normal shadowing's standard deviation (36.814: 8 dB; 38.901: 4-8 dB)
SHADOWING = Physical(0.0, 30.0, "dB", "the 36.814 macro cell's is 8")
#: a Rician K factor (the line of sight's power over the scattered power)
K_FACTOR = Physical(-40.0, 40.0, "dB", "9 dB is a strong line of sight")
#: a fading block's length in time (network.fading.coherence: time): the channel's coherence
#: time, about 0.42 / the Doppler shift (Rappaport 5.4.3); no shorter than a slot of 120 kHz
#: subcarriers (the rates are recomputed at a block's boundary, never per slot)
COHERENCE = Physical(1e-4, 1e3, "s", "a walker at 3 km/h on 3.5 GHz: about 0.04")
#: P0 of open-loop power control: TS 38.331's p0-NominalWithGrant spans -202 to 24 dBm
P0 = Physical(-202.0, 24.0, "dBm", "TS 38.331's p0-NominalWithGrant range")
#: the grant delay K2 of an uplink transfer (TS 38.214 6.1.2.1): TS 38.331's
#: PUSCH-TimeDomainResourceAllocation k2 is INTEGER (0..32) slots
K2_SLOTS = Physical(0, 32, "slots", "TS 38.331's k2 of PUSCH-TimeDomainResourceAllocation, "
                                    "INTEGER (0..32)")
#: the HARQ round trip: every slot of a transfer sends a transport block (channel.nr_link), so a
#: round trip of n slots keeps n HARQ processes busy; TS 38.331 allows at most 16 (Rel-15,
#: nrofHARQ-ProcessesForPDSCH, -ForPUSCH) and 32 since Rel-17 (nrofHARQ-ProcessesForPDSCH-v1700,
#: nrofHARQ-ProcessesForPUSCH-r17: n32)
HARQ_RTT_SLOTS = Physical(1, 32, "slots", "every slot sends a transport block, so a round trip "
                                          "of n slots needs n HARQ processes, at most 32 in "
                                          "TS 38.331 Rel-17")
#: a backhaul's one-way latency: fibre takes milliseconds, a geostationary hop 0.27 s; the clock
#: of a run whose messages each wait longer would no longer resolve a microsecond transfer
BACKHAUL_LATENCY = Physical(0.0, 1.0, "s, one way", "a geostationary satellite hop is 0.27")
#: a backhaul's or a fixed link's rate
BIT_RATE = Physical(1e3, 1e13, "bit/s", "10 Gbit/s is 1e10")
#: a client's or the server's computing speed
FLOPS = Physical(1e3, 1e19, "FLOP/s", "a phone's 1 TFLOP/s is 1e12")
#: kappa of the CMOS energy model E = kappa FLOPs f^2
ENERGY_COEFFICIENT = Physical(0.0, 1e-20, "J s^2 per FLOP^3", "the usual value is 1e-28")
