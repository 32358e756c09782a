"""network.mobility's and network.handover's keys (issue 64): their defaults, the refusals
that name the key, the value and what is allowed (speeds, TS 38.331's values, an update
distance of 0, the combinations a moving network cannot run), and a written scenario
reading back."""

import math

import pytest
import yaml

from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.scenario import scenario_yaml, validate_scenario

from conftest import NETWORK as SEVEN_SITES

NETWORK = {**SEVEN_SITES, "carrier_frequency_hz": 3.5e9, "scheduler": "round_robin"}
MOVING = {"kind": "random_waypoint"}


def scenario(mobility=None, handover=None, algorithms=("scala",), **network):
    section = {**NETWORK, **network}
    if mobility is not None:
        section["mobility"] = mobility
    if handover is not None:
        section["handover"] = handover
    return validate_scenario({"name": "x", "algorithms": list(algorithms),
                              "network": section})


def test_the_defaults():
    static = scenario().network
    assert not static.mobility.moving
    moving = scenario({**MOVING, "vehicle_share": 0.3}).network
    m, h = moving.mobility, moving.handover
    assert (m.pedestrian_speed_kmh, m.vehicle_share, m.vehicle_speed_kmh, m.update_m) == (
        3.0, 0.3, 30.0, None)
    assert (h.a3_offset_db, h.hysteresis_db, h.time_to_trigger_s, h.interruption_s) == (
        0.0, 3.0, 0.256, 0.05)


@pytest.mark.parametrize("mobility,handover,network,message", [
    ({**MOVING, "vehicle_speed_kmh": -30}, None, {},
     "network.mobility.vehicle_speed_kmh: must be a speed in (0, 500] km/h (a high-speed "
     "train's 500 km/h at most), got -30.0"),
    ({**MOVING, "pedestrian_speed_kmh": math.nan}, None, {},
     "network.mobility.pedestrian_speed_kmh: must be a speed in (0, 500] km/h"),
    ({**MOVING, "vehicle_speed_kmh": 501}, None, {}, "got 501.0"),
    ({**MOVING, "update_m": 0}, None, {}, "network.mobility.update_m: must be > 0.0, got 0"),
    ({**MOVING, "vehicle_share": 1.5}, None, {},
     "network.mobility.vehicle_share: must be <= 1.0, got 1.5"),
    ({**MOVING, "pause_s": [5, 1]}, None, {},
     "network.mobility.pause_s: must be [lo, hi] seconds with 0 <= lo <= hi, got [5.0, 1.0]"),
    ({"kind": "static", "vehicle_share": 0.3}, None, {},
     "network.mobility.vehicle_share: static clients do not move"),
    ({**MOVING, "leg_m": 50}, None, {},
     "network.mobility.leg_m: a random-direction leg's most length; kind random_waypoint"),
    ({"kind": "teleport"}, None, {}, "network.mobility.kind: must be one of 'static', "
                                       "'random_waypoint' or 'random_direction', got 'teleport'"),
    (MOVING, {"time_to_trigger_s": 0.3}, {},
     "network.handover.time_to_trigger_s: must be one of TS 38.331's TimeToTrigger values "
     "(0, 0.04, 0.064"),
    (MOVING, {"hysteresis_db": 1.2}, {},
     "network.handover.hysteresis_db: must be in [0, 15] dB in steps of 0.5 dB (TS 38.331), "
     "got 1.2"),
    (MOVING, {"a3_offset_db": -16}, {},
     "network.handover.a3_offset_db: must be in [-15, 15] dB in steps of 0.5 dB"),
    (MOVING, {"interruption_s": -0.01}, {},
     "network.handover.interruption_s: must be >= 0"),
    (None, {"hysteresis_db": 1.0}, {},
     "network.handover.hysteresis_db: handovers happen to clients that move"),
    (MOVING, None, {"scheduler": "static"},
     "network.mobility.kind: random_waypoint with network.scheduler: static: a static grant "
     "holds blocks of the drop's cell for the round"),
    (MOVING, None, {"link": {"mode": "fixed_rate", "target_rate_bps": 1e7}},
     "with network.link.mode: fixed_rate: a fixed-rate transfer's attempts are not handed "
     "over"),
    (MOVING, None, {"pathloss": "3gpp_36814_macro", "carrier_frequency_hz": 2e9},
     "network.pathloss: 3gpp_36814_macro has none"),
    (MOVING, None, {"layout": {"kind": "single"}, "scheduler": "static",
                    "pathloss": "3gpp_36814_macro", "carrier_frequency_hz": 2e9},
     "the single layout (the paper's cell) has static clients only"),
])
def test_a_refusal_names_the_key_the_value_and_what_is_allowed(mobility, handover, network,
                                                              message):
    with pytest.raises(ScenarioError) as error:
        scenario(mobility, handover, **network)
    assert message in str(error.value)


@pytest.mark.parametrize("mobility,handover", [
    (None, None), ({**MOVING, "vehicle_share": 0.3, "vehicle_speed_kmh": 120},
                   {"time_to_trigger_s": 0.64, "a3_offset_db": 1.5}),
    ({"kind": "random_direction", "leg_m": 50, "update_m": 2.5, "pause_s": [0, 10]}, None)])
def test_a_written_scenario_reads_back(mobility, handover):
    written = scenario(mobility, handover)
    assert validate_scenario(yaml.safe_load(scenario_yaml(written))) == written


def test_an_offset_and_hysteresis_that_let_a3_hold_both_ways_are_refused():
    """Review of issue 64: a3_offset_db + hysteresis_db < 0 lets a neighbour and the serving
    cell each be 'better' than the other; with no time to trigger a client was handed back
    at the very instant, for ever."""
    with pytest.raises(ScenarioError) as error:
        scenario(MOVING, {"a3_offset_db": -3.0, "hysteresis_db": 0.0,
                          "time_to_trigger_s": 0.0})
    assert ("network.handover.a3_offset_db: -3 with hysteresis_db 0 makes A3 hold both ways "
            "at once") in str(error.value)
    assert scenario(MOVING, {"a3_offset_db": -3.0, "hysteresis_db": 3.0}).network.handover
