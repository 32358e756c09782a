"""Other users' traffic in a network's cells (network.traffic): its keys as a pydantic model,
and what the network cannot run it with (`traffic_problems`, checked with the rest of the
network's keys).

`none` (the default): each cell carries only the learning's transfers. `full_buffer`:
`users_per_cell` background users a cell, always backlogged in each direction of
`directions` (3GPP's full-buffer model). `ftp3`: 3GPP FTP model 3 (TR 36.889):
files of `file_bytes` (0.5 MB) arriving at each cell as a Poisson process, each for one of
the cell's background users drawn at random, at the rate that makes the cell's
`offered_load` (a share of its blocks' time, in [0, 1)) with `users_per_cell` users
(scala_netsim.sim.network.traffic says how the rate follows). `record_files` writes every
file and its blocks (traffic.csv, traffic_air.csv) besides each cell's load (load.csv)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from scala_netsim.algorithms.config import Strict

#: FTP model 3's file: 0.5 Mbytes (TR 36.889; the value MATLAB's networkTrafficFTP sets for it)
FTP3_FILE_BYTES = 500_000
#: background users a cell where none are given: one full-buffer user (the hand-computed
#: case), ten for FTP model 3 (a common number a cell in 3GPP's system evaluations)
DEFAULT_USERS = {"full_buffer": 1, "ftp3": 10}


#: the keys every scenario.yaml since network.traffic came in writes (`model` came later): a
#: section with all of them was written in full, and its keys at their defaults stand
WRITTEN_TRAFFIC_KEYS = {"users_per_cell", "offered_load", "file_bytes", "directions",
                        "record_files"}


class TrafficConfig(Strict):
    """Other users' traffic (see the module's docstring)."""

    kind: Literal["none", "full_buffer", "ftp3"] = "none"
    users_per_cell: int | None = Field(default=None, ge=0)
    # a share in [0, 1) for every direction, or one for each: {uplink: 0.1, downlink: 0.6}
    offered_load: float | dict[Literal["uplink", "downlink"], float] | None = None
    file_bytes: int = Field(default=FTP3_FILE_BYTES, gt=0)
    directions: tuple[Literal["uplink", "downlink"], ...] = ("uplink", "downlink")
    # each file's row and blocks written (traffic.csv, traffic_air.csv), with which the run's
    # checks derive every rate again; else each cell's load alone (load.csv): a loaded
    # network moves tens of files a second a cell, and their records grow with the run
    record_files: bool = False
    # ftp3: `files`, every file simulated, or `fluid`, the files in their mean: the learning's
    # transfers get 1 - offered_load of their cell's blocks' time and the other cells' files
    # interfere at the level their load's on/off states average to (the load coupling:
    # scala_netsim.sim.network.traffic.LoadTerms)
    model: Literal["files", "fluid"] = "files"

    @model_validator(mode="before")
    @classmethod
    def _kind_alone(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("offered_load")
    @classmethod
    def _a_share_of_the_blocks(cls, load: float | dict | None) -> float | dict | None:
        for value in (load.values() if isinstance(load, dict) else [load]):
            if value is not None and not 0.0 <= value < 1.0:
                raise ValueError(f"must be in [0, 1) (the share of a cell's blocks' time its "
                                 f"background users' files take; 1 or more never drains), "
                                 f"got {value:g}")
        return load

    @field_validator("directions")
    @classmethod
    def _each_direction_once(cls, directions: tuple[str, ...]) -> tuple[str, ...]:
        if not directions or len(set(directions)) != len(directions):
            raise ValueError(f"must name uplink, downlink or both, each once, got "
                             f"{list(directions)}")
        return directions

    @model_validator(mode="after")
    def _keys_of_the_kind(self) -> TrafficConfig:
        """A key the kind does not read, given on purpose, is refused (config.network's
        one rule, not_applying: a section written in full, as a run's scenario.yaml writes
        it, gives every key, those that do not apply at their defaults)."""
        fields = type(self).model_fields
        given = self.model_fields_set - {"kind"}
        if given >= WRITTEN_TRAFFIC_KEYS:           # written in full: what is not a default
            given = {k for k in given if getattr(self, k) != fields[k].default}
        if self.kind == "none" and given:
            key = sorted(given)[0]
            raise ValueError(f"{key}: no background users with kind none; set "
                             f"network.traffic.kind: full_buffer or ftp3, or leave {key} out")
        if self.kind != "none" and self.users_per_cell == 0:
            raise ValueError(f"users_per_cell: kind {self.kind} needs at least 1 background "
                             f"user a cell, got 0; or set kind: none")
        if self.kind == "ftp3" and self.offered_load is None:
            raise ValueError("offered_load: kind ftp3 needs the share of each cell's blocks' "
                             "time its files take, in [0, 1) (e.g. 0.5)")
        if isinstance(self.offered_load, dict) and set(self.offered_load) != set(
                self.directions):
            raise ValueError(f"offered_load: one for each direction of directions "
                             f"({', '.join(self.directions)}), got "
                             f"{', '.join(self.offered_load) or 'none'}")
        if self.model == "fluid" and self.kind != "ftp3":
            raise ValueError(f"model: fluid takes FTP model 3's files in their mean; with kind "
                             f"{self.kind} there are none (allowed: files)")
        if self.model == "fluid" and self.record_files:
            raise ValueError("record_files: model fluid simulates no file to record; set "
                             "model: files, or leave record_files out")
        if self.kind == "full_buffer":
            for key in ("offered_load", "file_bytes"):
                if key in given:
                    raise ValueError(f"{key}: full-buffer users are always backlogged (no "
                                     f"files, no load to offer); only with kind ftp3, or "
                                     f"leave {key} out")
        return self

    @property
    def on(self) -> bool:
        return self.kind != "none"

    def load_of(self, direction: str) -> float:
        """The offered load in `direction` (0 without one)."""
        load = self.offered_load
        if isinstance(load, dict):
            return float(load.get(direction, 0.0))  # type: ignore[call-overload]
        return 0.0 if load is None else float(load)

    @property
    def users(self) -> int:
        """Background users a cell (DEFAULT_USERS where none are given)."""
        if self.users_per_cell is not None:
            return self.users_per_cell
        return DEFAULT_USERS.get(self.kind, 0)


def traffic_problems(network: Any) -> list[str]:
    """What a network (config.network.NetworkConfig) cannot run other users' traffic with:
    the paper's single cell, the static scheduler (a client holds its blocks for the round,
    so there is nothing to share), a fixed-rate link and fading (background users have no
    attempts and no fading draws: left out)."""
    traffic = network.traffic
    if not traffic.on:
        return []
    kind = f"traffic.kind: {traffic.kind}"
    problems = []
    if network.layout.kind == "single":
        problems.append(f"{kind} drops users in a network's cells; the single layout (the "
                        f"paper's cell) has none (network.layout.kind: hexagonal, sites: 1 "
                        f"for one cell)")
    if network.scheduler == "static":
        problems.append(f"{kind} shares each cell's blocks under a work-conserving scheduler; "
                        f"network.scheduler: static grants the learning's clients their blocks "
                        f"for the round; allowed: round_robin or proportional_fair")
    if network.link.mode != "adaptive":
        problems.append(f"{kind} with network.link.mode: {network.link.mode}: background "
                        f"users send at adaptive rates only; allowed: adaptive")
    if network.fading.kind != "none":
        problems.append(f"{kind} with network.fading.kind: {network.fading.kind}: background "
                        f"users see their large-scale gains only (no fading draws); allowed: "
                        f"none")
    return problems
