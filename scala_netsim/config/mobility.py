"""Clients that move and are handed over (issue 64): network.mobility and network.handover as
pydantic models, and what a network cannot run them with (`mobility_problems`, checked with
the rest of the network's keys).

`network.mobility.kind`: `static` (the default: every client stands at its drop point all
run), `random_waypoint` or `random_direction` (channel.mobility): indoor clients walk at
`pedestrian_speed_kmh` inside their building (a disk of `building_radius_m` around their
drop point, their O2I loss kept), outdoor clients walk at it over the network, and a share
`vehicle_share` of the outdoor ones drive at `vehicle_speed_kmh` (TR 38.901's evaluation
assumptions: 3 km/h indoor and pedestrian, 30 to 120 km/h in vehicles); pauses uniform in
`pause_s`, random direction's legs at most `leg_m`. A followed client's gains are drawn
again every `update_m` metres it walks (null: half the shortest correlation distance its
links read, TR 38.901 Table 7.5-6: an indoor client's O2I shadowing's, an outdoor one's the
least of its LOS and NLOS shadowing's and its LOS state's).

`network.handover` (read only with mobility): TS 38.331's event A3 on each connected
client's RSRPs, `a3_offset_db` and `hysteresis_db` (0.5 dB steps, -15..15 and 0..15 dB),
`time_to_trigger_s` one of TS 38.331's TimeToTrigger values; the handover interrupts the
client's data for `interruption_s`. Defaults: 5G-LENA's A3-RSRP handover algorithm
(nr-a3-rsrp-handover-algorithm.cc: 3 dB hysteresis, 256 ms time to trigger, no offset) and
Simu5G's handoverLatency (0.05 s). A client with nothing in flight for `inactivity_s` (10
s: an RRC inactivity timer, the network's setting, [choice]) goes idle until its next
transfer, when it re-selects the best cell."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

import channel
from channel.handover import A3
from scala_netsim.algorithms.config import Strict

#: the fastest a client may move (km/h): a high-speed train's 500 km/h (TR 38.913 6.1.5)
MAX_SPEED_KMH = 500.0
#: the keys every scenario.yaml since network.mobility came in writes
WRITTEN_MOBILITY_KEYS = {"pedestrian_speed_kmh", "vehicle_share", "vehicle_speed_kmh",
                         "pause_s", "leg_m", "building_radius_m", "update_m"}


def _speed(value: float) -> float:
    if not (math.isfinite(value) and 0 < value <= MAX_SPEED_KMH):
        raise ValueError(f"must be a speed in (0, {MAX_SPEED_KMH:g}] km/h (a high-speed "
                         f"train's 500 km/h at most), got {value!r}")
    return value


class MobilityConfig(Strict):
    """How the clients move (see the module's docstring)."""

    kind: Literal["static", "random_waypoint", "random_direction"] = "static"
    pedestrian_speed_kmh: float = 3.0
    vehicle_share: float = Field(default=0.0, ge=0, le=1)
    vehicle_speed_kmh: float = 30.0
    pause_s: tuple[float, float] = (0.0, 0.0)
    leg_m: float = Field(default=200.0, gt=0, le=1e5)
    building_radius_m: float = Field(default=25.0, gt=0, le=1e3)
    update_m: float | None = Field(default=None, gt=0, le=1e4)

    @model_validator(mode="before")
    @classmethod
    def _kind_alone(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    _speeds = field_validator("pedestrian_speed_kmh", "vehicle_speed_kmh")(_speed)

    @field_validator("pause_s")
    @classmethod
    def _a_range_of_pauses(cls, pause: tuple[float, float]) -> tuple[float, float]:
        lo, hi = pause
        if not (math.isfinite(hi) and 0 <= lo <= hi <= 1e6):
            raise ValueError(f"must be [lo, hi] seconds with 0 <= lo <= hi, got {list(pause)}")
        return pause

    @model_validator(mode="after")
    def _keys_of_a_moving_kind(self) -> MobilityConfig:
        """Static clients read no other key: one given on purpose is refused (a section
        written in full, as a run's scenario.yaml writes it, stands at its defaults)."""
        fields = type(self).model_fields
        given = self.model_fields_set - {"kind"}
        if given >= WRITTEN_MOBILITY_KEYS:
            given = {k for k in given if getattr(self, k) != fields[k].default}
        if self.kind == "static" and given:
            key = sorted(given)[0]
            raise ValueError(f"{key}: static clients do not move; set network.mobility.kind: "
                             f"random_waypoint or random_direction, or leave {key} out")
        if self.kind != "random_direction" and "leg_m" in given:
            raise ValueError(f"leg_m: a random-direction leg's most length; kind {self.kind} "
                             f"reads none (set kind: random_direction, or leave leg_m out)")
        return self

    @property
    def moving(self) -> bool:
        return self.kind != "static"


class HandoverConfig(Strict):
    """TS 38.331's event A3 and the interruption of a handover (module's docstring)."""

    a3_offset_db: float = 0.0
    hysteresis_db: float = 3.0
    time_to_trigger_s: float = 0.256
    interruption_s: float = Field(default=0.05, ge=0, le=10)
    #: a client with nothing to send for this long goes idle (RRC's inactivity timer): no
    #: longer measured or handed over; it re-selects the best cell at its next transfer
    inactivity_s: float = Field(default=10.0, ge=0, le=3600)

    @model_validator(mode="after")
    def _values_of_ts_38_331(self) -> HandoverConfig:
        try:
            A3(self.a3_offset_db, self.hysteresis_db, self.time_to_trigger_s)
        except ValueError as error:     # (its message names handover.<key>: the key alone)
            raise ValueError(str(error).removeprefix("handover.")) from None
        if self.a3_offset_db + self.hysteresis_db < 0:
            raise ValueError(f"a3_offset_db: {self.a3_offset_db:g} with hysteresis_db "
                             f"{self.hysteresis_db:g} makes A3 hold both ways at once (a "
                             f"neighbour better by offset + hysteresis < 0): a client would "
                             f"be handed back and forth for ever; allowed: a3_offset_db + "
                             f"hysteresis_db >= 0")
        return self

    @property
    def event(self) -> A3:
        return A3(self.a3_offset_db, self.hysteresis_db, self.time_to_trigger_s)


def mobility_problems(network: Any) -> list[str]:
    """What a network (config.network.NetworkConfig) cannot run moving clients with, each
    naming both keys: the paper's single cell (not wired yet), a path loss other than TR
    38.901's (moving links carry its LOS and shadowing draws), the static scheduler (a
    client's blocks are granted for the round in its drop's cell) and a fixed-rate link (its
    attempts' flows are not handed over yet); handover keys without mobility."""
    mobility = network.mobility
    kind = f"mobility.kind: {mobility.kind}"
    if not mobility.moving:
        changed = [k for k in network.handover.model_fields_set
                   if getattr(network.handover, k) != HandoverConfig.model_fields[k].default]
        if changed:
            return [f"handover.{sorted(changed)[0]}: handovers happen to clients that move; "
                    f"set network.mobility.kind: random_waypoint or random_direction, or "
                    f"leave network.handover out"]
        return []
    problems = []
    if network.layout.kind == "single":
        problems.append(f"{kind} moves clients in a network of cells (network.layout.kind: "
                        f"hexagonal, sites: 1 for one cell); the single layout (the paper's "
                        f"cell) has static clients only")
    if not hasattr(channel.PATHLOSS_MODELS[network.pathloss], "table"):
        problems.append(f"{kind} carries TR 38.901's LOS and shadowing draws along the paths; "
                        f"network.pathloss: {network.pathloss} has none (allowed: a 38.901 "
                        f"model, e.g. 3gpp_38901_uma)")
    if network.scheduler == "static":
        problems.append(f"{kind} with network.scheduler: static: a static grant holds blocks "
                        f"of the drop's cell for the round, and a handover moves the client "
                        f"to another cell; allowed: round_robin or proportional_fair")
    if network.link.mode != "adaptive":
        problems.append(f"{kind} with network.link.mode: {network.link.mode}: a fixed-rate "
                        f"transfer's attempts are not handed over; allowed: adaptive")
    return problems

