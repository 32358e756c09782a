"""The network's pure math (channel.network): the cells of a layout, the coupling gains and the
serving cell, whole resource blocks, and the rates of transfers that share blocks across cells,
against values computed by hand."""

import math

import numpy as np
import pytest

from channel import layout, network

BLOCK_HZ = 360e3                  # 12 subcarriers at 30 kHz
NOISE_PSD = 1e-13 / BLOCK_HZ      # 1e-13 W of noise per block


def test_the_cells_of_seven_three_sector_sites():
    cells = network.hexagonal_cells(7, 500.0, 3)
    assert len(cells) == 21
    assert cells.site.tolist() == [s for s in range(7) for _ in range(3)]
    assert cells.azimuth_deg[:6].tolist() == [30.0, 150.0, 270.0] * 2
    assert (cells.x_m[3], cells.y_m[3]) == (500.0, 0.0)       # site 1, east of the centre
    omni = network.hexagonal_cells(19, 200.0, 1)
    assert len(omni) == 19 and np.isnan(omni.azimuth_deg).all()
    with pytest.raises(ValueError, match="layout.sectors: must be 1 or 3, got 2"):
        network.hexagonal_cells(7, 500.0, 2)


def test_coupling_is_minus_the_loss_plus_the_sector_gain_and_the_strongest_serves():
    cells = network.hexagonal_cells(1, 500.0, 3)
    # a client due east of the site (azimuth 0): 30 degrees off sector 0's boresight, 150 off
    # sector 1's, 90 off sector 2's
    geometry = network.link_geometry(np.array([[100.0, 0.0]]), layout.hexagonal_sites(1, 500.0),
                                     None)
    assert geometry.d2d_m[0, 0] == 100.0 and geometry.azimuth_deg[0, 0] == 0.0
    antenna = network.antenna_gain_db(cells, geometry.azimuth_deg)
    a_30 = 8.0 - min(12 * (30 / 65) ** 2, 30.0)
    a_90 = 8.0 - min(12 * (90 / 65) ** 2, 30.0)
    assert antenna[0].tolist() == pytest.approx([a_30, 8.0 - 30.0, a_90], abs=1e-12)
    coupling = network.coupling_gain_db(cells, np.array([[100.0]]), antenna)
    assert coupling[0].tolist() == pytest.approx([-100.0 + a_30, -122.0, -100.0 + a_90])
    assert network.serving_cells(coupling).tolist() == [0]


def test_a_downtilt_applies_the_vertical_pattern_at_each_links_zenith_angle():
    """38.901 Table 7.3-1: A_V = -min(12 ((theta - theta_tilt)/65)^2, 30), theta_tilt = 90 +
    downtilt; theta = 90 + arctan((h_BS - h_UT)/d_2D), 7.5."""
    # a client 23.5 m from a 25 m mast, at 1.5 m: 45 degrees below the horizon
    assert network.zenith_angle_deg(np.array([23.5]), 25.0, 1.5)[0] == pytest.approx(135.0)
    assert network.zenith_angle_deg(np.array([1e9]), 25.0, 1.5)[0] == pytest.approx(90.0)
    cells = network.hexagonal_cells(1, 500.0, 3)
    geometry = network.link_geometry(np.array([[100.0, 0.0], [23.5, 0.0]]),
                                     layout.hexagonal_sites(1, 500.0), None)
    zenith = network.zenith_angle_deg(geometry.d2d_m, 25.0, 1.5)
    tilted = network.antenna_gain_db(cells, geometry.azimuth_deg, zenith, 12.0)
    flat = network.antenna_gain_db(cells, geometry.azimuth_deg)
    a_h = -min(12 * (30 / 65) ** 2, 30.0)               # 30 degrees off sector 0's boresight
    theta = 90 + math.degrees(math.atan(23.5 / 100))    # the client at 100 m: 103.2 degrees
    a_v = -min(12 * ((theta - 102.0) / 65) ** 2, 30.0)
    assert tilted[0, 0] == pytest.approx(8.0 - min(-(a_h + a_v), 30.0), abs=1e-12)
    # the client under the mast (135 degrees) loses 3.1 dB more to a 12 degree tilt's pattern
    a_v_near = -min(12 * ((135.0 - 102.0) / 65) ** 2, 30.0)
    assert tilted[1, 0] == pytest.approx(8.0 - min(-(a_h + a_v_near), 30.0), abs=1e-12)
    assert a_v_near == pytest.approx(-3.09, abs=0.01)
    # without a downtilt there is no vertical pattern: what the network had before
    assert flat[0, 0] == pytest.approx(8.0 + a_h, abs=1e-12)


def test_a_beam_toward_each_served_client_adds_n_on_its_link_and_the_sectors_mean_elsewhere():
    """An 8-column panel on 7 sites: the same serving cells as the column alone; on each
    client's serving link 10 log10 8 = 9.03 dB more, on its link to any other cell the row's
    gain averaged over that cell's sector, at u = sin(theta) sin(phi) computed here from the
    client's position (phi off that cell's boresight, theta its zenith angle)."""
    sites = layout.hexagonal_sites(7, 500.0)
    offsets = layout.wraparound_offsets(7, 500.0)
    cells = network.hexagonal_cells(7, 500.0, 3)
    points = layout.drop_uniform_in_hexagons(30, sites, 500.0, 35.0, np.random.default_rng(3))
    loss = 100.0 + np.random.default_rng(4).uniform(0, 30, (30, 7))

    def losses_of(d2d_m: np.ndarray) -> network.LinkLosses:
        zero = np.zeros(len(d2d_m))
        return network.LinkLosses(loss, np.zeros_like(loss), np.ones_like(loss), zero, zero,
                                  np.full(len(d2d_m), 1.5))

    column = network.drop_network(cells, points, sites, offsets, losses_of, 12.0, 25.0, 10)
    beam = network.drop_network(cells, points, sites, offsets, losses_of, 12.0, 25.0, 10, 8)
    assert beam.serving.tolist() == column.serving.tolist()
    added = beam.antenna_db - column.antenna_db
    np.testing.assert_allclose(beam.coupling_db - column.coupling_db, added, atol=1e-9)
    rows = np.arange(30)
    assert added[rows, beam.serving] == pytest.approx(np.full(30, 10 * math.log10(8)))
    checked = {"front": 0, "side or behind": 0}
    for client in range(30):
        for cell in range(21):
            if cell == beam.serving[client]:
                continue
            site = cells.site[cell]
            image = sites[site] + offsets[np.argmin(np.hypot(
                *(points[client] - sites[site] - offsets).T))]
            vector = points[client] - image
            phi = math.degrees(math.atan2(vector[1], vector[0])) - cells.azimuth_deg[cell]
            phi = (phi + 180) % 360 - 180
            theta = 90 + math.degrees(math.atan2(25.0 - 1.5, math.hypot(*vector)))
            u = math.sin(math.radians(theta)) * math.sin(math.radians(phi))
            mean = layout.mean_row_gain(np.array([u]), 8, 102.0)[0]
            assert added[client, cell] == pytest.approx(10 * math.log10(mean), abs=1e-9)
            checked["front" if abs(phi) < 60 else "side or behind"] += 1
    assert min(checked.values()) > 50           # links in front of a panel and off it


def test_wraparound_serves_a_client_at_the_edge_from_the_nearest_image():
    sites = layout.hexagonal_sites(7, 500.0)
    offsets = layout.wraparound_offsets(7, 500.0)
    edge = sites[1] + np.array([240.0, 0.0])    # 240 m east of site 1, nearest to site 1
    far = network.link_geometry(edge[None, :], sites, None)
    wrapped = network.link_geometry(edge[None, :], sites, offsets)
    assert far.d2d_m[0, 1] == pytest.approx(240.0)
    # without wraparound the westmost site (4, at -500, 0) is 1,240 m away; its image east of
    # the cluster (shifted by the cluster's period) is much nearer
    assert far.d2d_m[0, 4] == pytest.approx(1240.0)
    assert wrapped.d2d_m[0, 4] < 1000.0
    assert np.all(wrapped.d2d_m <= far.d2d_m + 1e-9)


def test_whole_blocks_from_equal_shares_and_too_many_clients():
    blocks = network.whole_blocks(np.full(4, 51 * BLOCK_HZ / 4), 51, BLOCK_HZ)
    assert blocks.tolist() == [13, 13, 13, 12]            # remainders tie: the first ones
    uneven = network.whole_blocks(np.array([10.6, 20.3, 20.1]) * BLOCK_HZ, 51, BLOCK_HZ)
    assert uneven.tolist() == [11, 20, 20] and uneven.sum() == 51
    with pytest.raises(ValueError, match="52 transfers share 51 resource blocks"):
        network.whole_blocks(np.full(52, 51 * BLOCK_HZ / 52), 51, BLOCK_HZ)


def two_transfers(first_block_1: int = 5, cells=(0, 1)) -> network.Transfers:
    """Two uplink transfers of 0.2 W on 10 blocks each: the first on blocks 0-9 with gain
    1e-10 to its cell, the second on blocks first_block_1.. with gain 2e-10; the first's
    client is heard at the second's cell at 3e-12, the second's at the first's at 1e-12."""
    return network.Transfers(
        cell=np.array(cells), first_block=np.array([0, first_block_1]),
        num_blocks=np.array([10, 10]), power_w=np.array([0.2, 0.2]),
        gain=np.array([1e-10, 2e-10]),
        client_gains=np.array([[1e-10, 3e-12], [1e-12, 2e-10]]))


def test_two_transfers_sharing_five_blocks_by_hand():
    rates = network.transfer_rates(two_transfers(), 20, BLOCK_HZ, NOISE_PSD, True)
    # per block: 0.02 W; noise 1e-13 W. Transfer 0: SNR 0.02e-10 / 1e-13 = 20 on blocks 0-4,
    # on 5-9 interference 0.02 x 1e-12 = 2e-14: SINR 2e-12 / 1.2e-13 = 50/3. Transfer 1: SNR
    # 40 on 10-14, on 5-9 interference 0.02 x 3e-12 = 6e-14: SINR 4e-12 / 1.6e-13 = 25.
    expected_0 = BLOCK_HZ * (5 * math.log2(21) + 5 * math.log2(1 + 50 / 3))
    expected_1 = BLOCK_HZ * (5 * math.log2(41) + 5 * math.log2(26))
    assert rates.rate_bps.tolist() == pytest.approx([expected_0, expected_1], rel=1e-12)
    assert rates.sinr.tolist() == pytest.approx([(20 + 50 / 3) / 2, (40 + 25) / 2], rel=1e-12)
    assert rates.interference_w.tolist() == pytest.approx([5 * 2e-14, 5 * 6e-14], rel=1e-12)


@pytest.mark.parametrize("uplink", [True, False])
def test_a_client_heard_80_db_above_its_interference_keeps_the_interferences_digits(uplink):
    """A client 35 m from its site with the beam on it (coupling -56 dB) and a far one of
    the other cell's (-140 dB to the first's cell): the interference each hears is the other
    cell's term alone, to 1e-12, not the whole less its own (which keeps 8 of its digits)."""
    near, far_01, far_10 = 10 ** -5.6, 10 ** -14.0, 10 ** -14.3
    transfers = network.Transfers(
        cell=np.array([0, 1]), first_block=np.array([0, 0]), num_blocks=np.array([4, 4]),
        power_w=np.array([0.4, 0.4]), gain=np.array([near, 1e-9]),
        client_gains=np.array([[near, far_01], [far_10, 1e-9]]))
    rates = network.transfer_rates(transfers, 4, BLOCK_HZ, NOISE_PSD, True, uplink)
    # uplink: cell 0 hears client 1 (g[1, 0]), cell 1 client 0 (g[0, 1]); downlink: client 0
    # hears cell 1 (g[0, 1]), client 1 cell 0 (g[1, 0]); 0.1 W a block, 4 blocks
    heard = [far_10, far_01] if uplink else [far_01, far_10]
    assert rates.interference_w.tolist() == pytest.approx([0.4 * g for g in heard], rel=1e-12,
                                                          abs=0.0)


def test_without_overlap_or_interference_the_sinr_is_the_snr_to_the_bit():
    apart = network.transfer_rates(two_transfers(first_block_1=10), 20, BLOCK_HZ, NOISE_PSD,
                                   True)
    off = network.transfer_rates(two_transfers(), 20, BLOCK_HZ, NOISE_PSD, False)
    same_cell = network.transfer_rates(two_transfers(cells=(0, 0), first_block_1=10), 20,
                                       BLOCK_HZ, NOISE_PSD, True)
    snr = np.array([0.2 / 10 * 1e-10, 0.2 / 10 * 2e-10]) / (NOISE_PSD * BLOCK_HZ)
    for rates in (apart, off, same_cell):
        assert rates.sinr.tolist() == snr.tolist()           # exactly
        assert rates.interference_w.tolist() == [0.0, 0.0]
        assert rates.rate_bps.tolist() == (10 * BLOCK_HZ * np.log2(1 + snr)).tolist()


def test_a_download_hears_the_other_cells_base_stations():
    """The same two transfers as downloads: transfer 0's client hears cell 1's base station
    at 3e-12 on the five shared blocks, transfer 1's client hears cell 0's at 1e-12."""
    rates = network.transfer_rates(two_transfers(), 20, BLOCK_HZ, NOISE_PSD, True,
                                   uplink=False)
    assert rates.interference_w.tolist() == pytest.approx([5 * 0.02 * 3e-12,
                                                           5 * 0.02 * 1e-12], rel=1e-12)
    expected_0 = BLOCK_HZ * (5 * math.log2(21) + 5 * math.log2(1 + 2e-12 / (1e-13 + 6e-14)))
    assert rates.rate_bps[0] == pytest.approx(expected_0, rel=1e-12)


def brute_force_interference(transfers, total_blocks, uplink):
    """I_ib summed transfer by transfer: the definition, in (transfers^2 x blocks)."""
    held = transfers.occupancy(total_blocks)
    per_block = transfers.power_w / transfers.num_blocks
    n = len(transfers.cell)
    out = np.zeros(held.shape)
    for i in range(n):
        for j in range(n):
            if transfers.cell[i] == transfers.cell[j]:
                continue
            heard = (transfers.client_gains[j, transfers.cell[i]] if uplink
                     else transfers.client_gains[i, transfers.cell[j]])
            out[i] += (held[i] & held[j]) * per_block[j] * heard
    return out


def random_transfers(seed: int, n: int = 12, cells: int = 4) -> network.Transfers:
    """Transfers of `cells` cells with disjoint blocks within each cell."""
    rng = np.random.default_rng(seed)
    cell = rng.integers(0, cells, n)
    first, count = np.zeros(n, dtype=int), rng.integers(1, 6, n)
    for c in range(cells):                                 # consecutive ranges in each cell
        mine = np.flatnonzero(cell == c)
        first[mine] = np.concatenate([[0], np.cumsum(count[mine])[:-1]]) + rng.integers(0, 3)
    return network.Transfers(cell, first, count, rng.uniform(0.01, 0.2, n),
                             10 ** rng.uniform(-13, -9, n), 10 ** rng.uniform(-14, -10, (n, cells)))


@pytest.mark.parametrize("uplink", [True, False])
def test_the_per_cell_sums_equal_the_definition(uplink):
    for seed in range(5):
        transfers = random_transfers(seed)
        held = transfers.occupancy(51)
        fast = network.received_interference_w(transfers, held,
                                                transfers.power_w / transfers.num_blocks, uplink)
        assert np.allclose(fast, brute_force_interference(transfers, 51, uplink), rtol=1e-9,
                           atol=0)


def test_interference_never_raises_a_rate():
    transfers = random_transfers(0)
    on = network.transfer_rates(transfers, 51, BLOCK_HZ, NOISE_PSD, True)
    off = network.transfer_rates(transfers, 51, BLOCK_HZ, NOISE_PSD, False)
    assert np.all(on.rate_bps <= off.rate_bps * (1 + 1e-12))
    assert np.all(on.sinr <= off.sinr * (1 + 1e-12))


def test_shadowing_correlated_between_sites():
    """sqrt(rho) Z_k + sqrt(1 - rho) Z_ks: a client's links to two sites correlate by rho,
    each link standard normal; rho = 0 draws what independent links draw, to the bit."""
    from channel import pathloss

    def stream(name, site=None):
        return np.random.default_rng([7, sum(map(ord, name)), 99 if site is None else site])

    z = pathloss.site_normals(stream, 20_000, 3, 0.5)
    assert np.corrcoef(z[:, 0], z[:, 1])[0, 1] == pytest.approx(0.5, abs=0.03)
    assert z.std(axis=0) == pytest.approx([1.0] * 3, abs=0.03)
    d2d = np.tile([100.0, 300.0, 600.0], (20_000, 1))
    uma = pathloss.Uma38901(3.5e9)
    independent = uma.draw_links(d2d, stream)
    assert np.array_equal(uma.draw_links(d2d, stream, site_correlation=0.0).shadowing_db,
                          independent.shadowing_db)
    correlated = uma.draw_links(d2d, stream, site_correlation=0.5)
    # the same LOS states and losses; only the shadowing changes, each link still N(0, sigma)
    assert np.array_equal(correlated.los, independent.los)
    assert np.array_equal(correlated.pathloss_db, independent.pathloss_db)
    sigma = np.where(correlated.los, 4.0, 6.0)
    normal = correlated.shadowing_db / sigma
    assert np.corrcoef(normal[:, 0], normal[:, 2])[0, 1] == pytest.approx(0.5, abs=0.03)
    assert abs(np.corrcoef(independent.shadowing_db[:, 0] / sigma[:, 0],
                           independent.shadowing_db[:, 2] / sigma[:, 2])[0, 1]) < 0.03
    macro = pathloss.Macro3gpp36814().draw_links(d2d, stream, 8.0, site_correlation=1.0)
    assert np.allclose(macro.shadowing_db[:, 0], macro.shadowing_db[:, 1])   # rho = 1: one


def test_kept_blocks_move_as_few_as_they_can_and_a_growing_transfer_takes_free_ones():
    """Four transfers on 8 blocks, two ranges each; the first and third end (none left), the
    second keeps its two, the fourth grows to four: it keeps its own and takes the lowest
    free, 0 and 1, a set that is not a range; a newcomer takes the rest."""
    held = [np.array([0, 1]), np.array([2, 3]), np.array([4, 5]), np.array([6, 7]),
            np.zeros(0, np.int64)]
    out = network.kept_blocks(8, held, [0, 2, 0, 4, 2])
    assert [o.tolist() for o in out] == [[], [2, 3], [], [0, 1, 6, 7], [4, 5]]
    shrunk = network.kept_blocks(8, held[:4], [1, 1, 1, 1])      # each keeps its lowest
    assert [o.tolist() for o in shrunk] == [[0], [2], [4], [6]]
    with pytest.raises(ValueError, match="summing to 9"):
        network.kept_blocks(8, held[:4], [3, 2, 2, 2])


@pytest.mark.parametrize("floors", [False, True])
def test_moved_links_at_the_drops_own_draws_are_the_drops_links_to_the_bit(floors):
    """Tr38901.moved_links with the drop's distances, LOS states, normals and environment
    heights (drawn here again from the same streams as draw_links draws them) gives
    draw_links's losses to the bit; every client moved 30 m nearer the sites has, made NLOS,
    the table's NLOS loss at its new distance and its normal times 6 dB, made LOS the LOS
    loss and 4 dB."""
    import functools

    from channel import pathloss, tr38901

    def stream(name, site=None):
        return np.random.default_rng([7, sum(map(ord, name)), 99 if site is None else site])

    uma = pathloss.Uma38901(3.5e9, indoor_floors=floors)
    d2d = np.random.default_rng(1).uniform(40.0, 900.0, (200, 4))
    drop = uma.draw_links(d2d, stream)
    normals = np.column_stack([stream("shadowing", s).normal(0.0, 1.0, 200) for s in range(4)])
    environment = np.column_stack([
        np.broadcast_to(uma._environment(d2d[:, s], drop.h_ut_m,
                                         functools.partial(stream, "environment", s)), 200)
        for s in range(4)])
    again = uma.moved_links(d2d, drop.los, normals, environment, drop)
    for name in ("pathloss_db", "shadowing_db", "los", "o2i_db", "indoor", "h_ut_m"):
        assert np.array_equal(getattr(again, name), getattr(drop, name)), name
    # the drop keeps its own draws for a client that moves: the same numbers
    assert np.array_equal(drop.shadowing_normal, normals)
    assert np.array_equal(drop.environment_m, environment)
    probability = np.column_stack([tr38901.los_probability(
        tr38901.UMA, np.maximum(d2d[:, s] - drop.indoor_distance_m, 0.0), drop.h_ut_m)
        for s in range(4)])
    assert np.array_equal(drop.los_uniform < probability, drop.los)
    assert np.array_equal(drop.los_uniform, np.column_stack(
        [stream("los", s).random(200) for s in range(4)]))
    nearer = uma.moved_links(d2d - 30.0, np.zeros_like(drop.los), normals, environment, drop)
    expected = tr38901.pathloss_nlos_db(tr38901.UMA, d2d[:, 0] - 30.0, 3.5e9, 25.0,
                                        drop.h_ut_m, environment[:, 0])
    assert np.array_equal(nearer.pathloss_db[:, 0], expected)
    assert np.array_equal(nearer.shadowing_db[:, 0], normals[:, 0] * 6.0)    # NLOS sigma
    seen = uma.moved_links(d2d - 30.0, np.ones_like(drop.los), normals, environment, drop)
    expected = tr38901.pathloss_los_db(tr38901.UMA, d2d[:, 1] - 30.0, 3.5e9, 25.0,
                                       drop.h_ut_m, environment[:, 1])
    assert np.array_equal(seen.pathloss_db[:, 1], expected)
    assert np.array_equal(seen.shadowing_db[:, 1], normals[:, 1] * 4.0)      # LOS sigma


def test_a_beam_per_client_on_omnidirectional_cells_is_refused():
    cells = network.hexagonal_cells(1, 500.0, 1)
    with pytest.raises(ValueError, match="layout.panel_columns: a beam per client needs "
                                         "sectors"):
        network.beam_gain_db(cells, np.zeros((2, 1)), np.full((2, 1), 95.0),
                             np.zeros(2, dtype=np.int64), 12.0, 8)
