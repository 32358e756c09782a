"""The network's rule that needs the drop (scala_netsim.config.link_budget, issue 62 item 5):
under the NR link abstraction a client that can decode no MCS on any number of blocks without
interference is refused, naming the field, the clients and what would let them. The rule's
text lives in config/; scala_netsim.runner.world.undecodable_clients drops the clients as the
run will and asks it before anything is written. The network's link no longer checks it.
And the warning of a fixed-rate link whose target a client at the cell edge cannot reach."""

import math

import numpy as np
import pytest

from channel import Direction
from scala_netsim.config.link_budget import edge_rate_warning, undecodable_problem

from conftest import NETWORK as SEVEN_SITES
from conftest import tiny_scenario

NETWORK = {**SEVEN_SITES, "carrier_frequency_hz": 3.5e9, "bs_tx_power_w": 40.0}
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
def test_other_users_out_of_coverage_are_not_refused_as_clients():
    """Issue 63 (review): other users (network.traffic) are radio-map rows after the
    clients; one out of coverage gets no traffic, and the refusal reads the clients alone:
    with 500 other users a cell at a power no one decodes, it names the same clients."""
    quiet = undecodable(client_tx_power_w=1e-6, interference=False)
    loaded = undecodable(client_tx_power_w=1e-6, interference=False,
                         scheduler="round_robin",
                         traffic={"kind": "full_buffer", "users_per_cell": 500})
    assert quiet is not None and loaded == quiet
    assert undecodable(scheduler="round_robin",
                       traffic={"kind": "full_buffer", "users_per_cell": 500}) is None


@pytest.mark.slow
def test_under_power_control_the_refusal_names_the_cap_too():
    """A client whose open-loop power is at its cap gains nothing from p0 or alpha: the
    refusal names client_tx_power_w beside them (review of issue 61)."""
    problem = undecodable(client_tx_power_w=1e-6, interference=False,
                          power_control={"p0_dbm": -120.0, "alpha": 0.8})
    assert problem is not None and "on the uplink " in problem
    assert ("raise network.power_control.p0_dbm (-120 dBm) or alpha (0.8), or "
            "network.client_tx_power_w (1e-06 W), the power they are capped at") in problem


# --- a fixed-rate link's target at the cell edge ------------------------------------------
def test_a_target_above_the_cell_edges_capacity_is_warned_of():
    """The paper's cell (500 m, 2 GHz, 20 MHz each way, 0.2 W and 1 W, -174 dBm/Hz): at the
    edge PL = 128.1 + 37.6 log10(0.5) = 116.78 dB (TR 36.814), capacity B log2(1 + P g /
    (N0 B)) by hand; 200 Mbit/s is above both directions', 1 Mbit/s above neither."""
    from scala_netsim.runner.world import cell_edge_warning, link_model, pathloss_model

    def scenario(rate_bps: float, mode: str = "fixed_rate"):
        link = {"mode": mode, **({"target_rate_bps": rate_bps} if mode != "adaptive" else {})}
        return tiny_scenario("fedavg", network={"link": link})

    gain = 10.0 ** (-(128.1 + 37.6 * math.log10(0.5)) / 10.0)
    noise_w = 10.0 ** ((-174.0 - 30.0) / 10.0) * 20e6
    up, down = (20e6 * math.log2(1.0 + p * gain / noise_w) for p in (0.2, 1.0))
    high = scenario(2e8)
    assert edge_rate_warning(high.network, link_model(high), pathloss_model(high.network)) == (
        f"network.link.target_rate_bps: 2e+08 bit/s is above what a client at the cell edge "
        f"(500 m, no fading) can reach: uplink {up:.4g} bit/s on all 2e+07 Hz; downlink "
        f"{down:.4g} bit/s on all 2e+07 Hz; such clients lose every transfer unless fading "
        f"lifts them")
    assert cell_edge_warning(high) == edge_rate_warning(high.network, link_model(high),
                                                        pathloss_model(high.network))
    assert cell_edge_warning(scenario(1e6)) is None
    assert cell_edge_warning(scenario(0.0, "adaptive")) is None
