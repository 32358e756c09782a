"""The network section of a scenario file as pydantic models (network: its link, fading,
layout, power control, backhaul, duplexing and the NR link abstraction's keys), the names it
allows, taken from the channel's registries, and the one rule for a key that does not apply
(`not_applying`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

import channel
from scala_netsim.algorithms.config import Strict
from scala_netsim.config.deployments import with_deployment
from scala_netsim.config.mobility import HandoverConfig, MobilityConfig, mobility_problems
from scala_netsim.config.ranges import (
    BACKHAUL_LATENCY,
    BAND,
    BIT_RATE,
    BS_POWER,
    CARRIER,
    CLIENT_POWER,
    COHERENCE,
    DISTANCE,
    HARQ_RTT_SLOTS,
    HEIGHT,
    K2_SLOTS,
    K_FACTOR,
    NOISE_FIGURE,
    NOISE_PSD,
    P0,
    SHADOWING,
)
from scala_netsim.config.sections import one_of
from scala_netsim.config.traffic import TrafficConfig, traffic_problems

if TYPE_CHECKING:
    LinkMode: TypeAlias = str
    FadingKind: TypeAlias = str
    AllocatorName: TypeAlias = str
else:
    LinkMode, FadingKind = one_of(channel.LINK_MODELS), one_of(channel.FADING_KINDS)
    AllocatorName = one_of(channel.ALLOCATORS)


class LinkConfig(Strict):
    """How a transfer's rate is set (channel.LINK_MODELS): adaptive (Shannon rate, never an
    outage) or fixed_rate (target_rate_bps; an attempt below capacity fails, ARQ repeats it up
    to max_attempts in all)."""
    mode: LinkMode = "adaptive"
    target_rate_bps: Annotated[float, BIT_RATE] | None = None
    max_attempts: int = Field(default=4, ge=1)

    @model_validator(mode="after")
    def _target_with_fixed_rate(self) -> LinkConfig:
        if self.mode == "fixed_rate" and self.target_rate_bps is None:
            raise ValueError("target_rate_bps: required with mode fixed_rate (bit/s)")
        if self.mode != "fixed_rate" and self.target_rate_bps is not None:
            raise ValueError(f"target_rate_bps: only with mode fixed_rate, got "
                             f"{self.target_rate_bps} with mode {self.mode}")
        return self


class FadingConfig(Strict):
    """Small-scale block fading (channel.fading): |h|^2 per client and direction, drawn per
    round or per transfer from the `fading` seed stream, or in a network of cells per block
    of `coherence_s` seconds of time (`coherence: time`)."""
    kind: FadingKind = "none"
    k_factor_db: Annotated[float, K_FACTOR] | None = None   # Rician K (line of sight / scattered)
    coherence: Literal["round", "transfer", "time"] = "round"
    coherence_s: Annotated[float, COHERENCE] | None = None   # with coherence: time

    @model_validator(mode="after")
    def _keys_with_their_kind_only(self) -> FadingConfig:
        if self.coherence == "time" and self.coherence_s is None:
            raise ValueError("coherence_s: required with coherence time (s: the channel's "
                             "coherence time, a fading block's length)")
        if self.coherence != "time" and self.coherence_s is not None:
            given = (f"coherence {self.coherence}" if "coherence" in self.model_fields_set
                     else f"no coherence (the default is {self.coherence})")
            fix = ("kind none fades nothing: leave coherence_s out, or set kind rayleigh or "
                   "rician with coherence: time" if self.kind == "none"
                   else "set coherence: time, or leave coherence_s out")
            raise ValueError(f"coherence_s: only with coherence: time (a fading block's length "
                             f"in time), got coherence_s {self.coherence_s:g} with "
                             f"{'kind none and ' if self.kind == 'none' else ''}{given}; {fix}")
        if self.kind == "rician" and self.k_factor_db is None:
            raise ValueError("k_factor_db: required with kind rician (the power of the line-of-"
                             "sight path over the scattered power, in dB)")
        if self.kind != "rician" and self.k_factor_db is not None:
            raise ValueError(f"k_factor_db: only with kind rician, got {self.k_factor_db} with "
                             f"kind {self.kind}")
        return self


def not_applying(section: BaseModel, keys: Iterable[str], written: set[str]) -> list[str]:
    """Of `keys`, which do not apply to `section` as set, those it was given on purpose: the
    one rule for a key that does not apply (a layout key its kind ignores, a TDD key under
    paired bands, an NR key under Shannon rates), which is then refused naming it and what it
    needs. A run's scenario.yaml (and a scenario file written in full) writes every key,
    those that do not apply at their defaults: a key given at its default beside every key of
    `written` (the keys such a file writes) stands; one with another value, or given without
    them (`--set network.layout.sites=7` alone), was set on purpose."""
    fields, given = type(section).model_fields, section.model_fields_set
    full = written <= given
    return [k for k in keys if k in given
            and not (full and getattr(section, k) == fields[k].default)]


def shown(value: Any) -> str:
    """A value as a scenario file writes it: a tuple as a list, a float without trailing
    digits."""
    if isinstance(value, tuple):
        return str(list(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


#: the layout keys every scenario.yaml since the layout came in writes (downtilt_deg came later)
WRITTEN_LAYOUT_KEYS = {"sites", "isd_m", "sectors", "wraparound"}


class LayoutConfig(Strict):
    """Where the base stations stand. `single`: the paper's one cell of `radius_m` (no blocks,
    no neighbours). `hexagonal`: 1, 7 or 19 sites `isd_m` apart, each of 1 or 3 sectors (38.901
    antenna element), clients dropped uniformly over the sites' hexagons, each served by its
    strongest cell; with wraparound every distance is to a site's nearest image. A hexagonal
    layout's area follows from `isd_m`: it ignores `radius_m`."""

    kind: Literal["single", "hexagonal"] = "single"
    sites: Literal[1, 7, 19] = 7
    isd_m: Annotated[float, DISTANCE] = 500.0
    sectors: Literal[1, 3] = 3
    wraparound: bool = True
    #: the sectors' downtilt below the horizon (38.901 theta_tilt = 90 + this): each link's
    #: vertical pattern at its zenith angle; null = no vertical pattern (every client at the
    #: horizon of the element)
    downtilt_deg: float | None = Field(default=None, ge=0, le=90)
    #: each sector a column of this many 38.901 elements half a wavelength apart, its beam
    #: steered electrically to downtilt_deg (TR 38.901 Table 7.8-1's antenna: 10 rows, 102
    #: degrees); null = one element, tilted by downtilt_deg itself
    panel_rows: int | None = Field(default=None, ge=2, le=64)
    #: and this many such columns half a wavelength apart, one beam toward the client each
    #: cell serves (one layer): N on the served link, the sector's average on the others;
    #: null = the column alone (no beam per client)
    panel_columns: int | None = Field(default=None, ge=2, le=64)

    @model_validator(mode="after")
    def _keys_the_kind_reads(self) -> LayoutConfig:
        """A key the kind ignores is refused, not run without a word (`--set
        network.layout.sites=7` alone would run the paper's one cell). A run's scenario.yaml
        writes every key, those the kind ignores at their defaults: read back, it stands."""
        keys = [k for k in type(self).model_fields if k != "kind"]
        ignored = not_applying(self, keys, WRITTEN_LAYOUT_KEYS)
        if self.kind == "single" and ignored:
            key = ignored[0]
            what = {"isd_m": "inter-site distance", "downtilt_deg": "downtilt",
                    "panel_rows": "antenna panel",
                    "panel_columns": "antenna panel"}.get(key, key)
            raise ValueError(f"{key}: the single layout (the paper's one cell of radius_m) has "
                             f"no {what}; set network.layout.kind: hexagonal, or leave {key} out")
        if self.kind == "hexagonal" and self.sites == 1 and "wraparound" in ignored:
            raise ValueError("wraparound: one site has no neighbours to wrap around; leave it "
                             "out or set sites: 7 or 19")
        return self


class PowerControlConfig(Strict):
    """Uplink open-loop power control (TS 38.213 7.1.1): P = min(client_tx_power_w,
    P0 + 10 log10(M_RB) + alpha PL) with PL the client's coupling loss to its serving cell."""

    p0_dbm: Annotated[float, P0] = -80.0
    alpha: float = Field(default=0.8, ge=0, le=1)


class BackhaulConfig(Strict):
    """Each cell's link to the one server behind all cells: a latency and a bandwidth shared
    equally by the cell's transfers crossing it at the same time (per direction)."""

    latency_s: Annotated[float, BACKHAUL_LATENCY] = 0.001
    bandwidth_bps: Annotated[float, BIT_RATE] = 1e9


class DuplexConfig(Strict):
    """How the up- and downlink share the air (channel.tdd): `fdd`, paired bands (the paper's
    cell: uplink_bandwidth_hz and downlink_bandwidth_hz, each all the time), or `tdd`, one
    carrier whose slots follow `pattern` (D, S, U), the special slot's symbols split
    (downlink, guard, uplink) as `special_slot`; an uplink transfer starts no earlier than
    `k2_slots` slots after it is ready (the grant delay K2 of TS 38.214 6.1.2.1, 0 to 32 as
    TS 38.331's k2; None: its default time-domain table's j, 1 slot at 15 and 30 kHz, 2 at
    60 kHz)."""

    kind: Literal["fdd", "tdd"] = "fdd"
    pattern: str = "DDDSU"
    special_slot: tuple[int, int, int] = (10, 2, 2)
    k2_slots: Annotated[int, K2_SLOTS] | None = None

    @model_validator(mode="before")
    @classmethod
    def _kind_alone(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _a_frame(self) -> DuplexConfig:
        try:
            channel.tdd.TddFrame(self.pattern, self.special_slot, 1e-3)
        except ValueError as error:
            raise ValueError(str(error)) from None
        return self

    @model_validator(mode="after")
    def _frame_keys_with_tdd_only(self) -> DuplexConfig:
        """Paired bands have no frame: a frame key given on purpose (not_applying) under
        kind fdd is refused, not run without a word."""
        frame_keys = ("pattern", "special_slot", "k2_slots")
        if self.kind == "fdd" and (keys := not_applying(self, frame_keys, set(frame_keys))):
            key = keys[0]
            raise ValueError(f"{key}: only with kind tdd (paired bands have no frame), got "
                             f"{shown(getattr(self, key))} with kind fdd; set "
                             f"network.duplex.kind: tdd, or leave {key} out")
        return self


#: the keys only the NR link abstraction reads (network.link_abstraction: nr)
NR_KEYS = ("bler_target", "mcs_table", "harq_max_transmissions", "harq_rtt_slots")


class NetworkConfig(Strict):
    # a named deployment (config.deployments: uma_n78, umi_n78, rma_fdd) filling the keys
    # left out with 3GPP's evaluation assumptions (docs/model/network.md); null: none
    deployment: str | None = None
    radius_m: Annotated[float, DISTANCE] = 500.0
    min_distance_m: float = Field(default=35.0, ge=0)
    # a name in channel.PATHLOSS_MODELS, read when a scenario is validated (so a model
    # registered after this module is imported, by a plugin or a script, is accepted)
    pathloss: str = "3gpp_36814_macro"
    carrier_frequency_hz: Annotated[float, CARRIER] = 2e9
    # the 3GPP TR 38.901 models' geometry and buildings (the 36.814 model reads none of them):
    # base-station height (None: the scenario's, UMa 25 m, UMi 10 m), client height, the share
    # of clients indoors and their buildings' O2I loss model
    bs_height_m: Annotated[float, HEIGHT] | None = None
    ut_height_m: Annotated[float, HEIGHT] = 1.5
    indoor_share: float = Field(default=0.8, ge=0, le=1)
    o2i: Literal["low_loss", "high_loss"] = "low_loss"
    # UMa and UMi: indoor clients on a floor drawn as TR 38.901 Table 7.2-1 draws it (1.5 to
    # 22.5 m; UMa then draws each link's effective environment height), not at ut_height_m
    indoor_floors: bool = False
    uplink_bandwidth_hz: Annotated[float, BAND] = 20e6
    downlink_bandwidth_hz: Annotated[float, BAND] = 20e6
    client_tx_power_w: Annotated[float, CLIENT_POWER] = 0.2
    bs_tx_power_w: Annotated[float, BS_POWER] = 1.0
    noise_psd_dbm_per_hz: Annotated[float, NOISE_PSD] = -174.0
    # the receivers' noise figures: the base station's (uplink), the client's (downlink)
    bs_noise_figure_db: Annotated[float, NOISE_FIGURE] = 0.0
    client_noise_figure_db: Annotated[float, NOISE_FIGURE] = 0.0
    # log-normal shadowing (dB) added to each client's path loss, drawn once at the drop
    # (3GPP TR 36.814 Table A.2.1.1.2-3: 8 dB in the macro cell); 0 = none
    shadowing_std_db: Annotated[float, SHADOWING] = 0.0
    #: a hexagonal layout: the correlation of a client's shadowing on its links to two sites
    #: (0: independent; 3GPP TR 36.814 takes 0.5)
    shadowing_site_correlation: float = Field(default=0.0, ge=0, le=1)
    fading: FadingConfig = Field(default_factory=FadingConfig)
    link: LinkConfig = Field(default_factory=LinkConfig)
    allocation: AllocatorName = "equal"
    # a network of cells (channel.network; the single layout is the paper's cell and reads
    # none of the four keys below)
    layout: LayoutConfig = Field(default_factory=LayoutConfig)
    interference: bool = True
    power_control: PowerControlConfig | None = None
    subcarrier_spacing_hz: float = 30e3        # NR numerology: 15, 30 or 60 kHz (FR1)
    backhaul: BackhaulConfig | None = None
    duplex: DuplexConfig = Field(default_factory=DuplexConfig)
    # a network transfer's rate (channel.nr_link): `shannon`, each block's capacity at its
    # SINR, or `nr`, the goodput of the MCS that link adaptation picks for `bler_target` from
    # `mcs_table` (TS 38.214 Table 5.1.3.1-2, 256QAM, or -1, 64QAM), with HARQ: at most
    # `harq_max_transmissions` of a transport block, `harq_rtt_slots` apart (None: 4 slots
    # with paired bands, the pattern's period under TDD; at most 32, the HARQ processes of
    # TS 38.331 Rel-17: config.ranges.HARQ_RTT_SLOTS); Sionna's tables (the extra [sionna])
    link_abstraction: Literal["shannon", "nr"] = "shannon"
    bler_target: float = Field(default=0.1, gt=0, lt=1)
    mcs_table: Literal["256qam", "64qam"] = "256qam"
    harq_max_transmissions: int = Field(default=4, ge=1)
    harq_rtt_slots: Annotated[int, HARQ_RTT_SLOTS] | None = None
    # how a cell's blocks are handed out: `static`, to each client of the round for the round
    # (the allocator's shares), or instant by instant among the transfers in progress
    # (work-conserving: a client with nothing to send holds nothing), `round_robin` (equal
    # shares) or `proportional_fair` (instantaneous over averaged rate, the average's weight
    # a slot `pf_beta`, Sionna's and 5G-LENA's 0.98 by default; scala_netsim.sim.network.
    # schedulers)
    scheduler: Literal["static", "round_robin", "proportional_fair"] = "static"
    pf_beta: float = Field(default=0.98, gt=0, lt=1)
    # other users' traffic in every cell (config.traffic: none, full_buffer, ftp3)
    traffic: TrafficConfig = Field(default_factory=TrafficConfig)
    # clients that move and are handed over (config.mobility: static, random_waypoint,
    # random_direction; TS 38.331's event A3 and the interruption)
    mobility: MobilityConfig = Field(default_factory=MobilityConfig)
    handover: HandoverConfig = Field(default_factory=HandoverConfig)
    # write the radio and energy columns (scala_netsim.books.radio) even when no part of the
    # radio model above is on (they are written whenever one is)
    record_radio: bool = False

    @model_validator(mode="before")
    @classmethod
    def _deployment_under_the_keys_given(cls, value: Any) -> Any:
        return with_deployment(value) if isinstance(value, Mapping) else value

    @field_validator("pathloss")
    @classmethod
    def _known_pathloss(cls, name: str) -> str:
        if name not in channel.PATHLOSS_MODELS:
            names = [repr(n) for n in channel.PATHLOSS_MODELS]
            expected = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1
                                   else names)
            raise PydanticCustomError("literal_error", "Input should be {expected}",
                                      {"expected": expected})
        return name

    @model_validator(mode="after")
    def _carrier_in_the_models_range(self) -> NetworkConfig:
        model = channel.PATHLOSS_MODELS[self.pathloss]
        table = getattr(model, "table", None)   # a 38.901 model: its table's ranges
        if table is not None:
            problems = channel.tr38901.check_ranges(
                table, self.carrier_frequency_hz, self.ut_height_m,
                table.bs_height_m if self.bs_height_m is None else self.bs_height_m,
                self.o2i)
            if self.shadowing_std_db > 0:
                problems.append(f"shadowing_std_db: {self.pathloss} draws its own shadow "
                                f"fading (TR 38.901 Table 7.4.1-1, by LOS state); leave it 0, "
                                f"got {self.shadowing_std_db:g}")
            if problems:
                raise ValueError(problems[0])
        if self.indoor_floors and getattr(table, "name", None) not in ("uma", "umi"):
            raise ValueError(f"indoor_floors: floors are TR 38.901's UMa and UMi (Table 7.2-1); "
                             f"{self.pathloss} has its clients at ut_height_m; leave "
                             f"indoor_floors false")
        span = model.carrier_range_hz
        if span is not None and not span[0] <= self.carrier_frequency_hz <= span[1]:
            allowed = (f"{span[0] / 1e9:g} GHz" if span[0] == span[1] else
                       f"{span[0] / 1e9:g} to {span[1] / 1e9:g} GHz")
            raise ValueError(f"carrier_frequency_hz: {self.pathloss} is defined at {allowed} "
                             f"only, got {self.carrier_frequency_hz:g}; choose another "
                             f"network.pathloss for this carrier")
        return self

    @field_validator("subcarrier_spacing_hz")
    @classmethod
    def _nr_spacing(cls, spacing: float) -> float:
        if spacing not in channel.nr.MAX_BLOCKS:
            raise ValueError(f"must be 15e3, 30e3 or 60e3 (Hz, NR numerologies 0-2 in FR1), "
                             f"got {spacing:g}")
        return spacing

    @model_validator(mode="after")
    def _one_carrier_in_tdd(self) -> NetworkConfig:
        if self.duplex.kind != "tdd":
            return self
        if self.uplink_bandwidth_hz != self.downlink_bandwidth_hz:
            raise ValueError(f"duplex: tdd has one carrier for both directions: "
                             f"uplink_bandwidth_hz and downlink_bandwidth_hz must be equal (the "
                             f"carrier's width), got {self.uplink_bandwidth_hz:g} and "
                             f"{self.downlink_bandwidth_hz:g}")
        return self

    @model_validator(mode="after")
    def _harq_round_trip_in_range(self) -> NetworkConfig:
        """Under TDD a null harq_rtt_slots is the pattern's period: held to the same bound as
        one given (review of issue 61: a 40-slot pattern ran a 40-slot round trip)."""
        period = len(self.duplex.pattern)
        if (self.link_abstraction == "nr" and self.duplex.kind == "tdd"
                and self.harq_rtt_slots is None and period > HARQ_RTT_SLOTS.high):
            raise ValueError(f"harq_rtt_slots: null under tdd is the pattern's period, "
                             f"{period} slots ({self.duplex.pattern}), above the "
                             f"{HARQ_RTT_SLOTS.high:g} slots allowed (HARQ processes, TS 38.331 "
                             f"Rel-17); give harq_rtt_slots, or a shorter pattern")
        return self

    @model_validator(mode="after")
    def _nr_keys_with_nr_only(self) -> NetworkConfig:
        """Shannon rates have no MCS and no HARQ: an NR key given on purpose (not_applying)
        under link_abstraction shannon is refused, not run without a word."""
        if self.link_abstraction == "nr":
            return self
        keys = not_applying(self, NR_KEYS, set(NR_KEYS))
        if keys:
            key = keys[0]
            raise ValueError(f"{key}: only with link_abstraction nr (the NR link "
                             f"abstraction's link adaptation and HARQ read it), got "
                             f"{shown(getattr(self, key))} with link_abstraction "
                             f"{self.link_abstraction}; set network.link_abstraction: nr, or "
                             f"leave {key} out (in a sweep: set it in the cases that set nr)")
        return self

    @model_validator(mode="after")
    def _nr_in_a_network_with_sionna(self) -> NetworkConfig:
        if self.link_abstraction != "nr":
            return self
        if self.layout.kind == "single":
            raise ValueError("link_abstraction: nr is the network's (network.layout.kind: "
                             "hexagonal, sites: 1 for one cell); the single layout, the "
                             "paper's cell, has shannon only")
        if not channel.nr_link.have_sionna():
            raise ValueError(f"link_abstraction: nr reads Sionna's tables, which are not "
                             f"installed: {channel.nr_link.INSTALL}; or use shannon")
        return self

    @model_validator(mode="after")
    def _a_scheduler_of_the_network(self) -> NetworkConfig:
        if self.scheduler == "proportional_fair" and self.link.mode == "fixed_rate":
            raise ValueError("scheduler: proportional_fair may leave a transfer with no block "
                             "for a while, and a fixed-rate link's attempt (network.link.mode: "
                             "fixed_rate) lasts its air time whatever its blocks; allowed "
                             "with fixed_rate: static or round_robin")
        if self.pf_beta != 0.98 and self.scheduler != "proportional_fair":
            raise ValueError(f"pf_beta: {self.pf_beta:g} weighs a proportional-fair "
                             f"scheduler's average; only with scheduler: proportional_fair "
                             f"(got {self.scheduler})")
        if problems := traffic_problems(self) + mobility_problems(self):
            raise ValueError(problems[0])
        if self.scheduler != "static" and self.layout.kind == "single":
            raise ValueError(f"scheduler: {self.scheduler} hands out a network's resource "
                             f"blocks (network.layout.kind: hexagonal, sites: 1 for one "
                             f"cell); the single layout, the paper's cell, is static only")
        return self

    @model_validator(mode="after")
    def _network_keys_fit_the_layout(self) -> NetworkConfig:
        if self.layout.kind == "single":
            for key in ("power_control", "backhaul"):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key}: the single layout (the paper's cell) has no "
                                     f"{key.replace('_', ' ')}; set network.layout.kind: "
                                     f"hexagonal (sites: 1 for one cell) or {key}: null")
            if self.shadowing_site_correlation > 0:
                raise ValueError(f"shadowing_site_correlation: the single layout has one site; "
                                 f"set network.layout.kind: hexagonal or 0, got "
                                 f"{self.shadowing_site_correlation:g}")
            return self
        for direction in ("uplink", "downlink"):
            band_hz = getattr(self, f"{direction}_bandwidth_hz")
            try:
                channel.nr.resource_blocks(band_hz, self.subcarrier_spacing_hz)
            except ValueError as error:
                raise ValueError(f"{direction}_bandwidth_hz: {error}") from None
        # what the network's link cannot run (beside NR's HARQ no other retransmission)
        if (self.fading.kind != "none" and self.link_abstraction == "nr"
                and self.fading.coherence != "time"):
            raise ValueError(f"fading.coherence: {self.fading.coherence} with "
                             f"link_abstraction: nr: a transfer faded below its lowest MCS "
                             f"would deliver nothing for its whole fading block (a "
                             f"{self.fading.coherence}: the channel stays until it ends), so "
                             f"it would never end; use coherence: time (with coherence_s) "
                             f"with nr, whose blocks end while a transfer waits")
        if self.link.mode != "adaptive" and self.link_abstraction == "nr":
            raise ValueError(f"link.mode: {self.link.mode} with link_abstraction: nr: HARQ is "
                             f"NR's retransmission (harq_max_transmissions), and an ARQ beside "
                             f"it would send again what HARQ already delivered; use 'adaptive' "
                             f"with nr")
        tilt = self.layout.downtilt_deg
        if self.layout.panel_rows is not None and tilt is None:
            raise ValueError(f"layout.panel_rows: a column of {self.layout.panel_rows} "
                             f"elements steers its beam to the downtilt; give "
                             f"layout.downtilt_deg (TR 38.901 Table 7.8-1: 12), or leave "
                             f"panel_rows out")
        if self.layout.panel_columns is not None and self.layout.panel_rows is None:
            raise ValueError(f"layout.panel_columns: {self.layout.panel_columns} columns "
                             f"steer a beam from the panel's rows; give layout.panel_rows "
                             f"(TR 38.901 Table 7.8-1: 10) and layout.downtilt_deg, or leave "
                             f"panel_columns out")
        if tilt is not None and (self.layout.sectors != 3 or not hasattr(
                channel.PATHLOSS_MODELS[self.pathloss], "table")):
            raise ValueError(f"layout.downtilt_deg: a downtilt needs 3 sectors (the 38.901 "
                             f"element) and a 38.901 path loss (base-station and client "
                             f"heights); got {tilt:g} with {self.layout.sectors} sector(s) and "
                             f"{self.pathloss}")
        return self

    @model_validator(mode="after")
    def _room_beyond_min_distance(self) -> NetworkConfig:
        if self.layout.kind == "single" and self.radius_m <= self.min_distance_m:
            raise ValueError(f"radius_m: must be > min_distance_m ({self.min_distance_m}), "
                             f"got {self.radius_m}")
        # a site's hexagon must hold its exclusion circle (inradius isd/2): else the clients'
        # drop, by rejection, finds few points or none and never ends
        if self.layout.kind == "hexagonal" and self.layout.isd_m <= 2 * self.min_distance_m:
            raise ValueError(f"layout.isd_m: must be > 2 x min_distance_m = "
                             f"{2 * self.min_distance_m:g} m (each site's hexagon, of inradius "
                             f"isd_m / 2, must hold the circle no client is dropped in), got "
                             f"{self.layout.isd_m:g}")
        return self
