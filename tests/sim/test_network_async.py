"""Asynchronous algorithms in a network of cells (issue 50): no round, so the round-robin air
grants blocks per transfer; staleness and versions as in the cell; transfers of different
versions overlap on the air and interfere, and every rate derives again from the air record."""

import pandas as pd
import pytest

from scala_netsim.config.scenario import ScenarioError

NETWORK = {"layout": {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3},
           "pathloss": "3gpp_38901_uma", "scheduler": "round_robin"}


def events_of(run) -> pd.DataFrame:
    names, rows = run.event_table()
    return pd.DataFrame(rows, columns=list(names))


@pytest.mark.parametrize("algorithm, sections", [
    ("fedasync", {}),
    ("fedbuff", {"fedbuff": {"buffer_size": 2}}),
    ("async_sfl", {}),
    ("gas", {"gas": {"model_buffer": 2, "activation_buffer": 2}}),
])
def test_asynchronous_algorithms_run_in_a_network_and_keep_its_invariants(
        make_run, algorithm, sections):
    run = make_run(algorithm, data={"num_clients": 40},
                   training={"participation": 0.3, "rounds": 6}, network=NETWORK, **sections)
    for _ in range(6):
        run.step()
    assert run.problems() == []
    events = events_of(run)
    assert events["version"].max() >= 5
    moved = events[events["bandwidth_hz"] > 0]
    # transfers of different versions overlap in time on the air
    air = pd.DataFrame(run.link.air_record().rows).iloc[:, :7]
    air.columns = ["event_index", "cell", "direction", "first", "blocks", "start", "end"]
    versions = events["round"].to_numpy()[air["event_index"].to_numpy()]
    air = air.assign(version=versions).sort_values("start")
    overlapping = (air["start"].to_numpy()[1:] < air["end"].cummax().to_numpy()[:-1]) & (
        air["version"].to_numpy()[1:] != air["version"].to_numpy()[:-1])
    assert overlapping.any() and len(moved) > 0


def test_asynchronous_algorithms_in_a_network_need_round_robin():
    from conftest import tiny_scenario

    with pytest.raises(ScenarioError, match=r"network\.scheduler: static grants a network's "
                                            r"blocks per round, and fedasync has no round"):
        tiny_scenario("fedasync", network={**NETWORK, "scheduler": "static"})
