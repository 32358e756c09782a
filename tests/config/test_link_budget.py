"""The network's rule that needs the drop (scala_netsim.config.link_budget, issue 62 item 5):
under the NR link abstraction a client that can decode no MCS on any number of blocks without
interference is refused, naming the field, the clients and what would let them. The rule's
text lives in config/; scala_netsim.runner.world.undecodable_clients drops the clients as the
run will and asks it before anything is written. The network's link no longer checks it."""

import numpy as np
import pytest

from channel import Direction
from scala_netsim.config.link_budget import undecodable_problem

from conftest import tiny_scenario

NETWORK = {"layout": {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3},
           "pathloss": "3gpp_38901_uma", "carrier_frequency_hz": 3.5e9,
           "bs_tx_power_w": 40.0}
SECTIONS = {"data": {"num_clients": 40}, "training": {"participation": 0.3}}
# (clients, blocks 1..3): client 1 decodes on one block only, client 2 on none (best -6.0 dB)
SNR_DB = np.array([[3.0, 0.0, -2.0], [-4.0, -7.0, -9.0], [-6.0, -7.5, -8.0]])
LOWEST_DB = np.array([-4.95, -4.95, -4.95])


def network(**keys):
    return tiny_scenario(network={**NETWORK, "link_abstraction": "nr", **keys}).network


def test_clients_that_decode_something_pass():
    assert undecodable_problem(network(), Direction.UPLINK, SNR_DB[:2], LOWEST_DB) is None


@pytest.mark.parametrize("direction, keys, power", [
    (Direction.UPLINK, {}, "raise network.client_tx_power_w (0.2 W), or use the 64qam table, "),
    (Direction.DOWNLINK, {"mcs_table": "64qam"},
     "raise network.bs_tx_power_w (40 W), or use "),
    (Direction.UPLINK, {"power_control": {"p0_dbm": -120.0, "alpha": 0.8}},
     "raise network.power_control.p0_dbm (-120 dBm) or alpha (0.8), or "
     "network.client_tx_power_w (0.2 W), the power they are capped at, or use the 64qam "
     "table, "),
])
def test_a_client_that_decodes_nothing_is_named_with_what_would_let_it(direction, keys, power):
    net = network(**keys)
    assert undecodable_problem(net, direction, SNR_DB, LOWEST_DB) == (
        f"network.link_abstraction: nr: 1 client(s) can decode no MCS of the {net.mcs_table} "
        f"table on the {direction.value} even without interference, on any number of blocks "
        f"(best SNR a block): 2 (-6.0 dB); the table's lowest MCS needs -4.95 dB at "
        f"bler_target 0.1; {power}a higher bler_target or a smaller layout.isd_m")


# --- the drop's numbers, under Sionna's tables --------------------------------------------
def undecodable(**network_keys):
    pytest.importorskip("sionna.sys", reason="the optional extra [sionna] (Python 3.11+)")
    from scala_netsim.runner.world import undecodable_clients

    return undecodable_clients(tiny_scenario(
        "fedavg", **SECTIONS, network={**NETWORK, "link_abstraction": "nr", **network_keys}))


@pytest.mark.slow     # Sionna's tables: about 5 s to build, once a process
def test_a_drop_whose_clients_decode_nothing_is_refused_before_the_run():
    """The scenario loads (the rule needs the drop); the check before anything is written
    names the clients (earlier the network's link refused them when it was built)."""
    assert undecodable() is None
    problem = undecodable(client_tx_power_w=1e-6, interference=False)
    assert problem is not None
    assert problem.startswith("network.link_abstraction: nr: ")
    assert " client(s) can decode no MCS of the 256qam table on the uplink " in problem
    assert ": 0 (-" in problem


@pytest.mark.slow
def test_under_power_control_the_refusal_names_the_cap_too():
    """A client whose open-loop power is at its cap gains nothing from p0 or alpha: the
    refusal names client_tx_power_w beside them (review of issue 61)."""
    problem = undecodable(client_tx_power_w=1e-6, interference=False,
                          power_control={"p0_dbm": -120.0, "alpha": 0.8})
    assert problem is not None and "on the uplink " in problem
    assert ("raise network.power_control.p0_dbm (-120 dBm) or alpha (0.8), or "
            "network.client_tx_power_w (1e-06 W), the power they are capped at") in problem
