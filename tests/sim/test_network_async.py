"""Asynchronous algorithms in a network of cells (issue 50): no round, so the round-robin air
grants blocks per transfer; staleness and versions as in the cell; transfers of different
versions overlap on the air and interfere, and every rate derives again from the air record."""

import numpy as np
import pandas as pd
import pytest

from scala_netsim.config.scenario import ScenarioError

from conftest import NETWORK as SEVEN_SITES
from conftest import events_of

NETWORK = {**SEVEN_SITES, "scheduler": "round_robin"}


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


@pytest.mark.slow
def test_a_stop_with_transfers_in_flight_leaves_the_air_before_it_checkable(make_run):
    """An asynchronous run stops with transfers in flight, not in the air record: every
    transfer that ends by the earliest of their starts (`until`) derives again, with those
    recorded that end later as its interferers (which they were). Dropping those too, as the
    checks once did, lost interference a transfer had met and failed a study's GAS run. Each
    transfer's start (up to the run's own stop's) is taken as the earliest in flight."""
    from scala_netsim.books.air_rates import air_rate_problems
    from scala_netsim.books.blocks import round_robin_problems

    run = make_run("async_sfl", data={"num_clients": 40},
                   training={"participation": 0.3, "rounds": 30}, network=NETWORK)
    for _ in range(30):
        run.step()
    record, events = run.link.air_record(), events_of(run)
    frame = record.frame()
    first = frame.groupby("event_index")["start_s"].transform("min").to_numpy()
    last = frame.groupby("event_index")["end_s"].transform("max").to_numpy()
    dropped_too = 0
    for until in np.unique(first[first <= run.link.recorded_until]).tolist()[1:]:
        recorded = frame[first < until]
        assert air_rate_problems(recorded, events, record.settings, until=until) == []
        assert round_robin_problems(recorded, record.settings.blocks, until) == []
        dropped_too += bool(air_rate_problems(frame[last <= until], events, record.settings))
    assert dropped_too > 0
