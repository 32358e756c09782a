"""Named deployments (`network.deployment`): a network section's keys set as 3GPP's evaluation
assumptions set them, every one still overridable. docs/model/network.md's table gives each
value and its source (TR 38.901, TR 38.913, TR 38.802, TS 38.101-1, TS 38.104, and TR 36.814
where the NR documents set no power); tests/config/test_deployments.py reads that table and
checks it against DEPLOYMENTS, both ways.

Within one document (a scenario file, a run's scenario.yaml) a deployment fills the keys the
document leaves out: the document's own keys win, and a nested section (layout, duplex,
power_control) is filled key by key, unless the document gives it another kind (`duplex:
fdd` on a TDD deployment takes none of its frame) or null (`with_deployment`). A deployment
given as an override (`--set network.deployment=uma_n78`, or the Python API's overrides) is a
later layer: its keys replace the file's (its nested sections whole), and the other overrides
replace its keys (`deploy`). So a scenario file written in full still takes a deployment
from the command line, and a run's scenario.yaml, which writes the deployment beside every
key it resolved to, reads back the same (a layout it wrote before a key came in takes that
key's default: LAYOUT_WRITTEN_IN_FULL)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _w(dbm: float) -> float:
    return 10.0 ** ((dbm - 30.0) / 10.0)


#: the macro layer of 3GPP's urban evaluations on band n78
UMA_N78: dict[str, Any] = {
    "pathloss": "3gpp_38901_uma",
    "carrier_frequency_hz": 3.5e9,
    "bs_height_m": 25.0,
    "ut_height_m": 1.5,
    "indoor_share": 0.8,
    "indoor_floors": True,
    "min_distance_m": 35.0,
    "layout": {"kind": "hexagonal", "sites": 19, "isd_m": 500.0, "sectors": 3,
               "wraparound": True, "downtilt_deg": 12.0, "panel_rows": 10,
               "panel_columns": 8},
    "duplex": {"kind": "tdd", "pattern": "DDDSU", "special_slot": [10, 2, 2]},
    "uplink_bandwidth_hz": 100e6,
    "downlink_bandwidth_hz": 100e6,
    "subcarrier_spacing_hz": 30e3,
    "bs_tx_power_w": _w(56.0),              # 49 dBm a 20 MHz, at 100 MHz
    "client_tx_power_w": 0.2,               # 23 dBm, power class 3
    "bs_noise_figure_db": 5.0,
    "client_noise_figure_db": 9.0,
    "power_control": {"p0_dbm": -80.0, "alpha": 0.8},
    "interference": True,
}

#: a small-cell layer (UMi street canyon) on band n78
UMI_N78: dict[str, Any] = {
    **UMA_N78,
    "pathloss": "3gpp_38901_umi",
    "bs_height_m": 10.0,
    "min_distance_m": 10.0,
    "layout": {**UMA_N78["layout"], "isd_m": 200.0},
    "bs_tx_power_w": _w(38.0),              # a medium range base station's most
}

#: a rural macro on a paired low band (n28, its downlink at 780 MHz)
RMA_FDD: dict[str, Any] = {
    "pathloss": "3gpp_38901_rma",
    "carrier_frequency_hz": 0.78e9,         # n28's downlink (its uplink: 0.6 dB less loss)
    "bs_height_m": 35.0,
    "ut_height_m": 1.5,
    "indoor_share": 0.5,
    "min_distance_m": 35.0,
    "layout": {"kind": "hexagonal", "sites": 19, "isd_m": 1732.0, "sectors": 3,
               "wraparound": True},
    "duplex": {"kind": "fdd"},
    "uplink_bandwidth_hz": 20e6,
    "downlink_bandwidth_hz": 20e6,
    "subcarrier_spacing_hz": 15e3,
    "bs_tx_power_w": _w(49.0),              # a 20 MHz carrier's
    "client_tx_power_w": 0.2,
    "bs_noise_figure_db": 5.0,
    "client_noise_figure_db": 9.0,
    "power_control": {"p0_dbm": -80.0, "alpha": 0.8},
    "interference": True,
}

DEPLOYMENTS: dict[str, dict[str, Any]] = {
    "uma_n78": UMA_N78, "umi_n78": UMI_N78, "rma_fdd": RMA_FDD}
#: the nested sections a deployment fills key by key
NESTED = ("layout", "duplex", "power_control")
#: a layout section that holds all of these was written in full (a run's scenario.yaml since
#: the deployments came in writes them all): a key that came later (panel_columns) takes its
#: default there, not the deployment's, so a run kept before it reads back as it ran
LAYOUT_WRITTEN_IN_FULL = {"kind", "sites", "isd_m", "sectors", "wraparound", "downtilt_deg",
                          "panel_rows"}


def with_deployment(network: Mapping[str, Any]) -> dict[str, Any]:
    """A network section with its deployment's keys under its own (see the module's
    docstring); unchanged without `deployment`. ValueError naming the allowed names for an
    unknown one."""
    name = network.get("deployment")
    if name is None:
        return dict(network)
    if not isinstance(name, str) or name not in DEPLOYMENTS:
        raise ValueError(f"deployment: {name!r} is not a deployment (allowed: "
                         f"{', '.join(DEPLOYMENTS)}; or null for none)")
    merged = {**DEPLOYMENTS[name], **network}
    for key in NESTED:
        preset, given = DEPLOYMENTS[name].get(key), network.get(key)
        if key == "duplex" and isinstance(given, str):
            given = {"kind": given}
        if isinstance(preset, dict) and isinstance(given, Mapping):
            same_kind = given.get("kind", preset.get("kind")) == preset.get("kind")
            in_full = key == "layout" and set(given) >= LAYOUT_WRITTEN_IN_FULL
            merged[key] = {**preset, **given} if same_kind and not in_full else dict(given)
    return merged


def deploy(document: dict, name: Any) -> None:
    """Deployment `name`'s keys into `document`'s network section, replacing what it gives
    there (its nested sections whole): a deployment given as an override (see the module's
    docstring). An unknown name changes nothing here (the section's validation names the
    allowed ones)."""
    if not isinstance(name, str) or name not in DEPLOYMENTS:
        return
    network = document.get("network")
    if not isinstance(network, dict):
        network = document["network"] = {}
    for key, value in DEPLOYMENTS[name].items():
        network[key] = dict(value) if isinstance(value, dict) else value
