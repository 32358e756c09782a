"""network.traffic's keys (issue 63 item 2): what each kind reads, the refusals that name the
keys (a key the kind ignores, a load outside [0, 1), a network that cannot carry other users,
asynchronous algorithms), and a written scenario reading back."""

import pytest
import yaml

from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.scenario import scenario_yaml, validate_scenario

from conftest import NETWORK as SEVEN_SITES

NETWORK = {**SEVEN_SITES, "layout": {"kind": "hexagonal", "sites": 1, "sectors": 3},
           "carrier_frequency_hz": 3.5e9, "scheduler": "round_robin"}


def scenario(traffic, algorithms=("scala",), **network):
    return validate_scenario({"name": "x", "algorithms": list(algorithms),
                              "network": {**NETWORK, **network, "traffic": traffic}})


def test_the_defaults_of_each_kind():
    assert not scenario({"kind": "none"}).network.traffic.on
    full = scenario("full_buffer").network.traffic
    assert (full.kind, full.users, full.directions) == ("full_buffer", 1,
                                                         ("uplink", "downlink"))
    ftp = scenario({"kind": "ftp3", "offered_load": 0.5}).network.traffic
    assert (ftp.users, ftp.file_bytes, ftp.offered_load) == (10, 500_000, 0.5)
    assert (ftp.load_of("uplink"), ftp.load_of("downlink")) == (0.5, 0.5)
    each = scenario({"kind": "ftp3", "offered_load": {"uplink": 0.1, "downlink": 0.6}})
    assert (each.network.traffic.load_of("uplink"),
            each.network.traffic.load_of("downlink")) == (0.1, 0.6)


@pytest.mark.parametrize("traffic,network,message", [
    ({"kind": "ftp3", "offered_load": 1.0}, {},
     "network.traffic.offered_load: must be in [0, 1)"),
    ({"kind": "ftp3", "offered_load": -0.1}, {}, "got -0.1"),
    ({"kind": "ftp3", "offered_load": {"uplink": 0.2, "downlink": 1.5}}, {},
     "network.traffic.offered_load: must be in [0, 1)"),
    ({"kind": "ftp3", "offered_load": {"uplink": 0.2}}, {},
     "network.traffic.offered_load: one for each direction of directions (uplink, downlink), "
     "got uplink"),
    ({"kind": "ftp3"}, {}, "network.traffic.offered_load: kind ftp3 needs the share"),
    ({"kind": "full_buffer", "users_per_cell": -1}, {},
     "network.traffic.users_per_cell: must be >= 0, got -1"),
    ({"kind": "full_buffer", "users_per_cell": 0}, {},
     "network.traffic.users_per_cell: kind full_buffer needs at least 1 background user a "
     "cell, got 0"),
    ({"kind": "full_buffer", "offered_load": 0.3}, {},
     "network.traffic.offered_load: full-buffer users are always backlogged"),
    ({"kind": "none", "users_per_cell": 3}, {},
     "network.traffic.users_per_cell: no background users with kind none"),
    ({"kind": "full_buffer", "directions": ["uplink", "uplink"]}, {},
     "network.traffic.directions: must name uplink, downlink or both, each once"),
    ({"kind": "full_buffer", "model": "fluid"}, {},
     "network.traffic.model: fluid takes FTP model 3's files in their mean"),
    ({"kind": "ftp3", "offered_load": 0.5, "model": "fluid", "record_files": True}, {},
     "network.traffic.record_files: model fluid simulates no file to record"),
    ("full_buffer", {"scheduler": "static"},
     "network.traffic.kind: full_buffer shares each cell's blocks under a work-conserving "
     "scheduler; network.scheduler: static grants"),
    ("full_buffer", {"layout": {"kind": "single"}, "scheduler": "static",
                     "pathloss": "3gpp_36814_macro", "carrier_frequency_hz": 2e9},
     "the single layout (the paper's cell) has none"),
    ("full_buffer", {"link": {"mode": "fixed_rate", "target_rate_bps": 1e7}},
     "with network.link.mode: fixed_rate: background users send at adaptive rates only"),
    ("full_buffer", {"fading": {"kind": "rayleigh"}},
     "with network.fading.kind: rayleigh: background users see their large-scale gains only"),
])
def test_a_refusal_names_the_key_the_value_and_what_is_allowed(traffic, network, message):
    with pytest.raises(ScenarioError) as error:
        scenario(traffic, **network)
    assert message in str(error.value)


def test_asynchronous_algorithms_refuse_other_users():
    with pytest.raises(ScenarioError) as error:
        scenario("full_buffer", algorithms=("fedasync",))
    assert ("network.traffic: asynchronous algorithms (fedasync) are saved when nothing is on "
            "the air, and other users' files always are; allowed: none, got full_buffer"
            ) in str(error.value)


@pytest.mark.parametrize("traffic", [{"kind": "none"}, "full_buffer",
                                     {"kind": "ftp3", "offered_load": 0.3,
                                      "record_files": True},
                                     {"kind": "ftp3", "model": "fluid",
                                      "offered_load": {"uplink": 0.1, "downlink": 0.6}}])
def test_a_written_scenario_reads_back(traffic):
    written = scenario(traffic)
    assert validate_scenario(yaml.safe_load(scenario_yaml(written))) == written


def test_a_section_written_before_model_came_in_reads_back():
    """A run's scenario.yaml written before network.traffic.model existed (the operator
    study's first frames) gives every other key at its default: it stands."""
    written = {"kind": "none", "users_per_cell": None, "offered_load": None,
               "file_bytes": 500000, "directions": ["uplink", "downlink"],
               "record_files": False}
    assert not scenario(written).network.traffic.on
