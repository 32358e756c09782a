"""The run loop advances through its driver (scala_netsim.runner.drivers): the synchronous
round driver is one implementation, and the loop records whatever versions a driver produces."""

import pandas as pd

from scala_netsim.core.columns import EVENT_COLUMNS
from scala_netsim.core.events import SERVER_ID
from scala_netsim.runner.drivers import SynchronousRounds, Version


class Recording(SynchronousRounds):
    """The synchronous driver, keeping every version it produced."""

    def __init__(self, inner: SynchronousRounds) -> None:
        super().__init__(inner.selector, inner.rng, inner.num_selected)
        self.versions: list[Version] = []

    def advance(self, number: int) -> Version:
        self.versions.append(super().advance(number))
        return self.versions[-1]


def test_the_loop_records_the_versions_its_driver_produces(make_run):
    run = make_run("scala", training={"rounds": 3})
    run.driver = Recording(run.driver)
    run._simulate_from(0.0, [], [], [])   # bind the new driver to the run's clock
    rows = [run.step() for _ in range(3)]
    versions = run.driver.versions
    assert [v.number for v in versions] == [row["round"] for row in rows] == [1, 2, 3]
    events = pd.DataFrame(run.log.rows, columns=list(EVENT_COLUMNS))
    for version, row in zip(versions, rows, strict=True):
        assert row["num_clients"] == len(version.selected) == run.scenario.num_selected
        mine = events[events["round"] == version.number]
        assert set(mine["client_id"]) - {SERVER_ID} == {int(k) for k in version.selected}
        assert version.first_event == events.index[events["round"] == version.number][0]
    # each version starts where the previous one ended on the one clock
    assert versions[0].start_s == 0.0
    assert [v.start_s for v in versions[1:]] == [row["sim_time_s"] for row in rows[:-1]]


def test_the_synchronous_driver_draws_the_clients_the_selector_draws(make_run):
    run, twin = make_run("fedavg"), make_run("fedavg")
    assert isinstance(run.driver, SynchronousRounds)
    version = run.driver.advance(1)
    drawn = twin.driver.selector.select(twin.scenario.num_selected, twin.selection_rng)
    assert [int(k) for k in version.selected] == [int(k) for k in drawn]
    events = pd.DataFrame(run.log.rows, columns=list(EVENT_COLUMNS))
    assert set(events["client_id"]) - {SERVER_ID} == {int(k) for k in drawn}
