"""Both links, the paper's cell's (scala_netsim.sim.link.WirelessLink) and a network's
(scala_netsim.sim.network.link.NetworkLink), held to the one `Link` protocol by the same
tests: what they offer, the books they keep after two rounds of the same algorithm, and the
checks of those books, with `Run` asking neither which one it has."""

import inspect

import pytest

from scala_netsim.core.columns import AIR_COLUMNS, EVENT_COLUMNS
from scala_netsim.sim.link import Link, WirelessLink
from scala_netsim.sim.network.link import NetworkLink

from conftest import NETWORK


def protocol_members() -> set[str]:
    members = {name for name in vars(Link) if not name.startswith("_")}
    return members | set(inspect.get_annotations(Link))


@pytest.fixture(params=["cell", "network"])
def run_of_each_link(request, make_run):
    network = {} if request.param == "cell" else NETWORK
    run = make_run("scala", data={"num_clients": 40}, training={"participation": 0.3},
                   network={**network, "record_radio": True})
    run.step()
    run.step()
    return request.param, run


def test_each_link_offers_every_member_of_the_protocol(run_of_each_link):
    kind, run = run_of_each_link
    assert isinstance(run.link, WirelessLink if kind == "cell" else NetworkLink)
    for name in protocol_members():
        assert hasattr(run.link, name), f"{type(run.link).__name__} lacks Link.{name}"
        protocol = getattr(Link, name, None)
        if callable(protocol):
            expected = list(inspect.signature(protocol).parameters)
            assert list(inspect.signature(getattr(type(run.link), name)).parameters) == (
                expected), name


def test_each_links_books_after_two_rounds(run_of_each_link):
    """A grant row per client, direction and round; a transfer row per transfer event,
    pointing at it; the band's grants where they differ from the grant book; a network's air
    row per transfer, in the same order; no problem."""
    kind, run = run_of_each_link
    assert run.link.round == 2
    rounds = {row[0] for row in run.link.grant_rows}
    assert rounds == {1, 2}
    moved = {row[0] for row in run.link.transfer_rows}
    kind_at = EVENT_COLUMNS.index("kind")
    transfers = [i for i, e in enumerate(run.log.rows)
                 if e[kind_at].endswith(("upload", "download"))]
    assert moved == set(transfers) and len(run.link.transfer_rows) == len(transfers)
    width = 6 if kind == "cell" else 9
    assert {len(row) for row in run.link.transfer_rows} == {width}
    band = run.link.band_grant_rows()
    assert (band is None) == (kind == "cell")
    air = run.link.air_record()      # which blocks each transfer held: a network's alone
    assert (air is None) == (kind == "cell")
    if air is not None:
        assert [row[0] for row in air.rows] == [row[0] for row in run.link.transfer_rows]
        assert {len(row) for row in air.rows} == {len(AIR_COLUMNS)}
    assert run.link.problems() == []
    assert run.problems() == []
    states = run.link.stream_states()
    run.link.load_stream_states(states)
    assert run.link.stream_states() == states
