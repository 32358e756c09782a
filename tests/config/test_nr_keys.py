"""The NR link abstraction's keys (issue 49) where Sionna is not installed: `nr` is refused
naming the key, what it needs and how to install it; `shannon` (the default) needs nothing."""

import pytest

import channel
from scala_netsim import load_scenario
from scala_netsim.config.scenario import ScenarioError

NETWORK = {"layout": {"kind": "hexagonal", "sites": 1, "sectors": 3},
           "pathloss": "3gpp_38901_uma", "carrier_frequency_hz": 3.5e9}


def test_nr_without_sionna_is_refused_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(channel.nr_link, "have_sionna", lambda: False)
    with pytest.raises(ScenarioError, match=r"link_abstraction: nr reads Sionna's tables, "
                                            r"which are not installed: pip install"):
        load_scenario("scenarios/quickstart.yaml",
                      {"network": {**NETWORK, "link_abstraction": "nr"}})
    scenario = load_scenario("scenarios/quickstart.yaml", {"network": NETWORK})
    assert scenario.network.link_abstraction == "shannon"


@pytest.mark.parametrize("key, value", [("bler_target", 0.0), ("bler_target", 1.0),
                                        ("bler_target", -0.1), ("harq_max_transmissions", 0),
                                        ("harq_rtt_slots", 0), ("mcs_table", "1024qam")])
def test_bad_nr_values_are_refused_naming_the_field(key, value):
    with pytest.raises(ScenarioError, match=rf"network\.{key}"):
        load_scenario("scenarios/quickstart.yaml", {"network": {**NETWORK, key: value}})


def test_nr_in_the_paper_cell_is_refused():
    with pytest.raises(ScenarioError, match="link_abstraction: nr is the network's"):
        load_scenario("scenarios/quickstart.yaml", {"network": {"link_abstraction": "nr"}})


def test_proportional_fair_is_refused_saying_why():
    with pytest.raises(ScenarioError, match=r"network\.scheduler: .*proportional_fair .* no "
                                            r"per-block fading .* use 'static' or "
                                            r"'round_robin'"):
        load_scenario("scenarios/quickstart.yaml",
                      {"network": {**NETWORK, "scheduler": "proportional_fair"}})


def test_round_robin_in_the_paper_cell_is_refused():
    with pytest.raises(ScenarioError, match="scheduler: round_robin hands out a network's"):
        load_scenario("scenarios/quickstart.yaml", {"network": {"scheduler": "round_robin"}})
    with pytest.raises(ScenarioError, match=r"network\.scheduler"):
        load_scenario("scenarios/quickstart.yaml", {"network": {**NETWORK, "scheduler": "lte"}})


def test_a_network_band_no_nr_carrier_has_is_refused_where_blocks_are_counted():
    """Issue 61 (3): a hexagonal layout counts its bands' resource blocks (TS 38.101-1 Table
    5.3.2-1); 100 MHz at 15 kHz is no carrier. The paper's single cell counts none: any band."""
    with pytest.raises(ScenarioError, match=r"network\.uplink_bandwidth_hz: 100 MHz at 15 kHz "
                                            r"subcarrier spacing is no NR channel bandwidth "
                                            r"\(TS 38.101-1 Table 5.3.2-1, FR1\); allowed at 15 "
                                            r"kHz: 5, 10, 15, 20, 25, 30, 40 or 50 MHz"):
        load_scenario("scenarios/quickstart.yaml", {"network": {
            **NETWORK, "subcarrier_spacing_hz": 15e3, "uplink_bandwidth_hz": 100e6}})
    with pytest.raises(ScenarioError, match=r"network\.downlink_bandwidth_hz: 200 MHz at 30 kHz"):
        load_scenario("scenarios/quickstart.yaml", {"network": {
            **NETWORK, "downlink_bandwidth_hz": 200e6}})
    single = load_scenario("scenarios/quickstart.yaml", {"network": {
        "subcarrier_spacing_hz": 15e3, "uplink_bandwidth_hz": 100e6}})
    assert single.network.uplink_bandwidth_hz == 100e6
