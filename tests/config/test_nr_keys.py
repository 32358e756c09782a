"""The NR link abstraction's keys (issue 49) where Sionna is not installed: `nr` is refused
naming the key, what it needs and how to install it; `shannon` (the default) needs nothing."""

import pytest

import channel
from scala_netsim import load_scenario
from scala_netsim.config.scenario import ScenarioError

from conftest import NETWORK as SEVEN_SITES

NETWORK = {**SEVEN_SITES, "layout": {"kind": "hexagonal", "sites": 1, "sectors": 3},
           "carrier_frequency_hz": 3.5e9}


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


def test_proportional_fair_loads_and_its_combinations_are_refused_saying_why():
    scenario = load_scenario("scenarios/quickstart.yaml",
                             {"network": {**NETWORK, "scheduler": "proportional_fair",
                                          "pf_beta": 0.9}})
    assert (scenario.network.scheduler, scenario.network.pf_beta) == ("proportional_fair", 0.9)
    with pytest.raises(ScenarioError, match=r"network\.scheduler: proportional_fair may leave "
                                            r".* fixed_rate.* allowed with fixed_rate: static "
                                            r"or round_robin"):
        load_scenario("scenarios/quickstart.yaml",
                      {"network": {**NETWORK, "scheduler": "proportional_fair",
                                   "link": {"mode": "fixed_rate", "target_rate_bps": 1e6}}})
    with pytest.raises(ScenarioError, match=r"pf_beta: 0\.9 weighs .* only with scheduler: "
                                            r"proportional_fair \(got round_robin\)"):
        load_scenario("scenarios/quickstart.yaml",
                      {"network": {**NETWORK, "scheduler": "round_robin", "pf_beta": 0.9}})
    with pytest.raises(ScenarioError, match=r"network\.pf_beta"):
        load_scenario("scenarios/quickstart.yaml",
                      {"network": {**NETWORK, "scheduler": "proportional_fair",
                                   "pf_beta": 1.0}})


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


@pytest.mark.parametrize("network, message", [
    ({"duplex": {"kind": "fdd", "pattern": "DDSUU"}},
     "network.duplex.pattern: only with kind tdd (paired bands have no frame), got DDSUU with "
     "kind fdd; set network.duplex.kind: tdd, or leave pattern out"),
    ({"duplex": {"kind": "fdd", "special_slot": [6, 4, 4]}},
     "network.duplex.special_slot: only with kind tdd (paired bands have no frame), got "
     "[6, 4, 4] with kind fdd"),
    ({"duplex": {"kind": "fdd", "k2_slots": 2}},
     "network.duplex.k2_slots: only with kind tdd (paired bands have no frame), got 2"),
    # given alone, at its default: set on purpose all the same (as `--set network.layout.sites=7`)
    ({"duplex": {"pattern": "DDDSU"}}, "network.duplex.pattern: only with kind tdd"),
    ({**NETWORK, "bler_target": 0.2},
     "network.bler_target: only with link_abstraction nr (the NR link abstraction's link "
     "adaptation and HARQ read it), got 0.2 with link_abstraction shannon; set "
     "network.link_abstraction: nr, or leave bler_target out (in a sweep: set it in the cases "
     "that set nr)"),
    ({**NETWORK, "mcs_table": "64qam"}, "network.mcs_table: only with link_abstraction nr"),
    ({**NETWORK, "harq_max_transmissions": 2},
     "network.harq_max_transmissions: only with link_abstraction nr"),
    ({"harq_rtt_slots": 8}, "network.harq_rtt_slots: only with link_abstraction nr"),
])
def test_a_key_that_does_not_apply_is_refused_naming_what_it_needs(network, message):
    """Issue 61 (4): as a layout key the layout's kind ignores, a TDD key under paired bands
    and an NR key under Shannon rates are refused, not run without a word."""
    with pytest.raises(ScenarioError) as refused:
        load_scenario("scenarios/quickstart.yaml", {"network": network})
    assert message in str(refused.value)


def test_keys_written_out_at_their_defaults_stand():
    """A run's scenario.yaml, and a scenario file written in full (cellular_10pct.yaml), write
    every key, those that do not apply at their defaults: read back, they stand."""
    written = {"duplex": {"kind": "fdd", "pattern": "DDDSU", "special_slot": [10, 2, 2],
                          "k2_slots": None},
               "link_abstraction": "shannon", "bler_target": 0.1, "mcs_table": "256qam",
               "harq_max_transmissions": 4, "harq_rtt_slots": None}
    scenario = load_scenario("scenarios/quickstart.yaml", {"network": {**NETWORK, **written}})
    assert scenario.network.duplex.kind == "fdd"
    assert load_scenario("scenarios/cellular_10pct.yaml").network.bler_target == 0.1
    # written in full, a value other than the default is refused all the same
    with pytest.raises(ScenarioError, match=r"network\.duplex\.k2_slots: only with kind tdd"):
        load_scenario("scenarios/cellular_10pct.yaml", ["network.duplex.k2_slots=3"])
    with pytest.raises(ScenarioError, match=r"network\.mcs_table: only with link_abstraction"):
        load_scenario("scenarios/cellular_10pct.yaml", ["network.mcs_table=64qam"])


def test_a_key_given_twice_with_set_is_refused():
    """Issue 61 (4): `--set a.b=1 --set a.b=2` is refused as the YAML refuses a key twice."""
    with pytest.raises(ScenarioError, match=r"--set training\.rounds: given twice \('1' and "
                                            r"'2'\); give it once"):
        load_scenario("scenarios/quickstart.yaml", ["training.rounds=1", "training.rounds=2"])
    # a section, then a key inside it: each given once
    scenario = load_scenario("scenarios/quickstart.yaml", [
        "network.layout={kind: hexagonal}", "network.layout.sites=1"])
    assert scenario.network.layout.sites == 1
    # a key, then its section: the section would drop the key without a word (review)
    with pytest.raises(ScenarioError, match=r"--set network\.layout: replaces the whole "
                                            r"section, dropping the earlier --set "
                                            r"network\.layout\.sites"):
        load_scenario("scenarios/quickstart.yaml", [
            "network.layout.sites=1", "network.layout={kind: hexagonal}"])


@pytest.mark.parametrize("network, message", [
    ({"duplex": {"kind": "tdd", "k2_slots": 1000}},
     "network.duplex.k2_slots: must be from 0 to 32 (slots; TS 38.331's k2 of "
     "PUSCH-TimeDomainResourceAllocation, INTEGER (0..32)), got 1000"),
    ({"duplex": {"kind": "tdd", "k2_slots": -1}}, "network.duplex.k2_slots: must be from 0 to 32"),
    ({**NETWORK, "link_abstraction": "nr", "harq_rtt_slots": 1000000},
     "network.harq_rtt_slots: must be from 1 to 32 (slots; every slot sends a transport block, "
     "so a round trip of n slots needs n HARQ processes, at most 32 in TS 38.331 Rel-17), got "
     "1e6"),
])
def test_the_grant_delay_and_the_harq_round_trip_are_bounded_by_the_standard(network, message):
    """Issue 61 (5): K2 and the HARQ round trip had no upper bound (k2_slots: 1000 ran)."""
    with pytest.raises(ScenarioError) as refused:
        load_scenario("scenarios/quickstart.yaml", {"network": network})
    assert message in str(refused.value)
    edge = {"duplex": {"kind": "tdd", "k2_slots": 32}} if "duplex" in network else {
        **NETWORK, "link_abstraction": "nr", "harq_rtt_slots": 32}
    assert load_scenario("scenarios/quickstart.yaml", {"network": edge}).network


def test_a_tdd_patterns_period_is_held_to_the_harq_round_trips_bound():
    """Review of issue 61: with harq_rtt_slots null under TDD the round trip is the
    pattern's period, which had no bound (a 40-slot pattern ran a 40-slot round trip)."""
    long = {**NETWORK, "link_abstraction": "nr",
            "duplex": {"kind": "tdd", "pattern": "DDDDDDDSUU" * 4}}
    with pytest.raises(ScenarioError, match=r"network.harq_rtt_slots: null under tdd is the "
                                            r"pattern's period, 40 slots .* above the 32 slots"):
        load_scenario("scenarios/quickstart.yaml", {"network": long})
    given = {**long, "harq_rtt_slots": 8}
    assert load_scenario("scenarios/quickstart.yaml", {"network": given}).network
