"""Clients that move on the radio map (scala_netsim.sim.network.movement): a followed client
is brought to where it stands when followed, then moved every update_m metres it walks, at
the instants its path reaches them, to the coupling its links give where it stands; one no
longer followed is not moved, and followed again is first brought to where it stands; one
never followed costs nothing; a change of serving cell couples its last links again."""

import math

import numpy as np
import pytest
import simpy

from channel import layout, mobility, moving, network, pathloss
from scala_netsim.sim.network.movement import Movement
from scala_netsim.sim.network.radio_map import RadioMap

SITES = layout.hexagonal_sites(7, 500.0)
OFFSETS = layout.wraparound_offsets(7, 500.0)
CELLS = network.hexagonal_cells(7, 500.0, 3)


def stream(name, site=None):
    return np.random.default_rng([13, sum(map(ord, name)), 99 if site is None else site])


def world(clients: int = 12):
    """uma_n78's antennas over 7 sites, clients walking at 3 km/h: the radio map of their
    drop, their moving links, and their coupling where they stand (serving cells kept)."""
    points = layout.drop_uniform_in_hexagons(clients, SITES, 500.0, 35.0,
                                             np.random.default_rng(2))
    uma = pathloss.Uma38901(3.5e9)
    drop = network.drop_network(CELLS, points, SITES, OFFSETS,
                                lambda d2d_m: uma.draw_links(d2d_m, stream), 12.0, 25.0, 10, 8)
    radio = RadioMap(10 ** (drop.coupling_db / 10), drop.serving)
    area = mobility.Area(SITES, 500.0, OFFSETS)
    paths = [mobility.Path(points[k], mobility.Walk("random_waypoint", 3 / 3.6,
                                                    pause_s=(0.0, 20.0)),
                           area, np.random.default_rng([3, k])) for k in range(clients)]
    links = moving.MovingLinks(uma, SITES, OFFSETS, points, drop.losses, paths,
                               lambda kind, s: stream(f"field {kind}", s))

    def couple(ks, where, losses):
        _, coupling_db, _ = network.couple(CELLS, network.link_geometry(where, SITES, OFFSETS),
                                           losses, 12.0, 25.0, 10, 8, drop.serving[ks])
        return 10 ** (coupling_db / 10)

    return radio, links, couple, drop


def drop_point(drop, k):
    return float(drop.x_m[k]), float(drop.y_m[k])


def followed(client: int, until: float, update_m: float = 5.0, clients: int = 12):
    """A Movement over world(clients) following `client` from 0 until `until`."""
    radio, links, couple, drop = world(clients)
    env = simpy.Environment()
    movement = Movement(env, radio, links, couple, update_m)
    movement.follow(client)
    env.run(until=until)
    return radio, links, couple, drop, env, movement


def test_a_followed_client_moves_every_five_metres_to_its_links_coupling():
    radio, links, couple, drop, _, movement = followed(0, 200.0)
    path = links.paths[0]
    walked = path.moved_m(200.0)
    assert movement.rows[0] == (0, 0.0, *drop_point(drop, 0), 0.0, drop.serving[0])
    assert len(movement.rows) - 1 == math.floor(walked / 5.0) > 20
    for j, (client, t, x, y, metres, serving) in enumerate(movement.rows[1:], start=1):
        assert (client, metres, serving) == (0, 5.0 * j, drop.serving[0])
        assert t == pytest.approx(path.when_moved(5.0 * j), abs=1e-9)
        assert [x, y] == pytest.approx(path.position(t).tolist(), abs=1e-9)
    last = movement.rows[-1][1]
    points, losses = links.at(last, np.array([0]))
    assert radio.large_scale(0).tolist() == couple(np.array([0]), points, losses)[0].tolist()
    assert radio.serving_cell(0) == drop.serving[0]          # (no handover here)
    # a client nobody follows is not moved: its gains are the drop's
    assert radio.large_scale(1).tolist() == radio.coupling[1].tolist()


def test_unfollowed_a_client_stays_and_followed_again_it_is_first_brought_to_where_it_is():
    _, links, _, _, env, movement = followed(3, 30.0)
    movement.unfollow(3)
    before = len(movement.rows)
    env.run(until=60.0)
    assert len(movement.rows) == before                  # nothing while not followed
    movement.follow(3)
    client, t, _, _, metres, _ = movement.rows[-1]
    assert (client, t) == (3, 60.0)
    assert metres == pytest.approx(links.paths[3].moved_m(60.0), abs=1e-12)
    env.run(until=90.0)
    # then every 5 metres again, counted from the drop
    later = [r[4] for r in movement.rows[before + 1:]]
    assert later and all(m / 5.0 == pytest.approx(round(m / 5.0), abs=1e-9) for m in later)


def test_an_update_distance_of_no_metres_is_refused():
    radio, links, couple, _ = world(2)
    with pytest.raises(ValueError, match="mobility.update_m: must be a finite distance > 0 m, "
                                         "got 0.0"):
        Movement(simpy.Environment(), radio, links, couple, 0.0)


@pytest.mark.parametrize("update_m", [0.7, 1.1, 12.3])
def test_a_step_whose_metres_round_below_a_whole_count_still_moves_on(update_m):
    """0.7 m and the like: k x 0.7 / 0.7 may round just below k, which once brought the same
    step back at the same instant, for ever. Over 200 s each move is a step further, its
    instant later than the last's, and there are as many as the metres walked allow."""
    radio, links, _, _, _, movement = followed(0, 200.0, update_m, clients=2)
    metres = [r[4] for r in movement.rows[1:]]         # (the first: where it was followed)
    assert metres == [update_m * j for j in range(1, len(metres) + 1)]
    assert all(b[1] >= a[1] for a, b in zip(movement.rows, movement.rows[1:], strict=False))
    walked = links.paths[0].moved_m(200.0)
    assert len(metres) in (math.floor(walked / update_m), math.floor(walked / update_m) - 1)
    # after a move the map serves the coupling it was given, in both directions unfaded
    from channel import Direction

    assert radio.gains(Direction.UPLINK)[0].tolist() == radio.large_scale(0).tolist()
    assert radio.serving_gain(0) == radio.large_scale(0)[radio.serving_cell(0)]
    with pytest.raises(ValueError, match="a move's coupling row has"):
        radio.move(0, np.ones(3))


def test_the_nr_blocks_forget_a_moved_clients_uplink_goodputs():
    """Under NR (the operator study's network), its strongest client moved 40 dB further
    off gets the uplink blocks a map that had dropped it there gives (252 of 273: power-
    limited now), not the 273 it had before and the blocks had kept."""
    from channel import Direction
    from scala_netsim.config.scenario import load_scenario
    from scala_netsim.core.seeds import Seeds
    from scala_netsim.runner.world import network_cell, network_settings
    from scala_netsim.sim.network.nr import NrBlocks

    from conftest import ROOT

    scenario = load_scenario(ROOT / "scenarios" / "operator.yaml", ["sweep={}"])
    settings = network_settings(scenario)
    cell = network_cell(scenario, Seeds(scenario.seed))
    radio = RadioMap.of(cell)
    blocks = NrBlocks(radio, settings)
    k = int(np.argmax(radio.serving_gains))                    # the strongest: all blocks
    before = blocks.cap(Direction.UPLINK, k)
    weaker = radio.coupling.copy()
    weaker[k] /= 1e4
    radio.move(k, weaker[k])
    fresh = NrBlocks(RadioMap(weaker, radio.serving), settings)
    assert blocks.cap(Direction.UPLINK, k) == fresh.cap(Direction.UPLINK, k)
    assert before == 273 and fresh.cap(Direction.UPLINK, k) < before
