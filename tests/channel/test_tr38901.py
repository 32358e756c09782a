"""3GPP TR 38.901 propagation (issue 39, first part: the tables as functions), against values
worked by hand from Tables 7.4.1-1, 7.4.2-1 and 7.4.3-2 at 3.5 GHz."""

import math
import re

import numpy as np
import pytest
from scipy import stats

from channel import tr38901 as tr

C = 299_792_458.0
F = 3.5e9


def test_uma_path_loss_below_and_beyond_the_breakpoint_and_nlos():
    # d'_BP = 4 (25 - 1)(1.5 - 1) 3.5e9 / c = 560.38 m
    assert tr.breakpoint_distance_m(F, 25.0, 1.5) == pytest.approx(4 * 24 * 0.5 * F / C)
    assert tr.breakpoint_distance_m(F, 25.0, 1.5) == pytest.approx(560.38, abs=0.01)
    # 100 m: PL1 = 28 + 22 log10(102.724) + 20 log10(3.5) = 83.14 dB
    d3d = math.hypot(100, 23.5)
    pl1 = 28.0 + 22 * math.log10(d3d) + 20 * math.log10(3.5)
    assert tr.pathloss_los_db(tr.UMA, 100.0, F, 25.0, 1.5) == pytest.approx(pl1, abs=1e-9)
    assert pl1 == pytest.approx(83.14, abs=0.01)
    # 1,000 m: PL2 = 28 + 40 log10(1000.28) + 20 log10(3.5) - 9 log10(560.38^2 + 23.5^2)
    d_bp = 4 * 24 * 0.5 * F / C
    pl2 = (28.0 + 40 * math.log10(math.hypot(1000, 23.5)) + 20 * math.log10(3.5)
           - 9 * math.log10(d_bp ** 2 + 23.5 ** 2))
    assert tr.pathloss_los_db(tr.UMA, 1000.0, F, 25.0, 1.5) == pytest.approx(pl2, abs=1e-9)
    assert pl2 == pytest.approx(109.41, abs=0.01)
    # NLOS at 100 m: 13.54 + 39.08 log10(102.724) + 20 log10(3.5) = 103.04 dB (> LOS)
    nlos = 13.54 + 39.08 * math.log10(d3d) + 20 * math.log10(3.5)
    assert tr.pathloss_nlos_db(tr.UMA, 100.0, F, 25.0, 1.5) == pytest.approx(nlos, abs=1e-9)
    assert nlos == pytest.approx(103.04, abs=0.01)


def test_umi_path_loss_los_and_nlos():
    # d'_BP = 4 (10 - 1)(1.5 - 1) 3.5e9 / c = 210.15 m; 100 m is below it
    assert tr.breakpoint_distance_m(F, 10.0, 1.5) == pytest.approx(210.15, abs=0.01)
    d3d = math.hypot(100, 8.5)
    los = 32.4 + 21 * math.log10(d3d) + 20 * math.log10(3.5)
    assert tr.pathloss_los_db(tr.UMI, 100.0, F, 10.0, 1.5) == pytest.approx(los, abs=1e-9)
    assert los == pytest.approx(85.31, abs=0.01)
    nlos = 35.3 * math.log10(d3d) + 22.4 + 21.3 * math.log10(3.5)
    assert tr.pathloss_nlos_db(tr.UMI, 100.0, F, 10.0, 1.5) == pytest.approx(nlos, abs=1e-9)
    assert nlos == pytest.approx(104.64, abs=0.01)


def test_rma_path_loss_below_and_beyond_the_breakpoint_nlos_and_los_probability():
    """RMa at 3.5 GHz, h_BS 35 m, h_UT 1.5 m, building height h = 5 m, street width W = 20 m
    (Table 7.4.1-1's defaults)."""
    # d_BP = 2 pi 35 1.5 3.5e9 / c = 3,851.1 m (the actual heights, not h - h_E)
    assert tr.rma_breakpoint_distance_m(F, 35.0, 1.5) == pytest.approx(2 * math.pi * 52.5 * F / C)
    assert tr.rma_breakpoint_distance_m(F, 35.0, 1.5) == pytest.approx(3851.12, abs=0.01)

    def pl1(d3d):   # 20 log10(40 pi d3D f / 3) + min(0.03 h^1.72, 10) log10(d3D) - ...
        return (20 * math.log10(40 * math.pi * d3d * 3.5 / 3) + 0.03 * 5 ** 1.72
                * math.log10(d3d) - 0.044 * 5 ** 1.72 + 0.002 * math.log10(5) * d3d)
    d3d = math.hypot(1000, 33.5)
    assert tr.pathloss_los_db(tr.RMA, 1000.0, F, 35.0, 1.5) == pytest.approx(pl1(d3d), abs=1e-9)
    assert pl1(d3d) == pytest.approx(105.46, abs=0.01)
    # 6 km, beyond d_BP: PL2 = PL1(d_BP) + 40 log10(d3D / d_BP) = 129.13 dB
    d_bp = 2 * math.pi * 52.5 * F / C
    pl2 = pl1(d_bp) + 40 * math.log10(math.hypot(6000, 33.5) / d_bp)
    assert tr.pathloss_los_db(tr.RMA, 6000.0, F, 35.0, 1.5) == pytest.approx(pl2, abs=1e-9)
    assert pl2 == pytest.approx(129.13, abs=0.01)
    # NLOS at 1 km: 161.04 - 7.1 log10(20) + 7.5 log10(5) - (24.37 - 3.7 (5/35)^2) log10(35)
    # + (43.42 - 3.1 log10(35)) (log10(d3D) - 3) + 20 log10(3.5) - (3.2 log10(17.625)^2 - 4.97)
    nlos = (161.04 - 7.1 * math.log10(20) + 7.5 * math.log10(5)
            - (24.37 - 3.7 * (5 / 35) ** 2) * math.log10(35)
            + (43.42 - 3.1 * math.log10(35)) * (math.log10(d3d) - 3) + 20 * math.log10(3.5)
            - (3.2 * math.log10(11.75 * 1.5) ** 2 - 4.97))
    assert tr.pathloss_nlos_db(tr.RMA, 1000.0, F, 35.0, 1.5) == pytest.approx(nlos, abs=1e-9)
    assert nlos == pytest.approx(130.42, abs=0.01)
    # LOS probability: 1 up to 10 m, exp(-(d - 10)/1000) beyond: 0.3716 at 1 km
    assert tr.los_probability(tr.RMA, [5.0, 10.0]).tolist() == [1.0, 1.0]
    assert tr.los_probability(tr.RMA, 1000.0) == pytest.approx(math.exp(-0.99))
    # shadow fading: LOS 4 dB up to d_BP, 6 dB beyond; NLOS 8 dB (UMa: 4 and 6 dB)
    d = np.array([1000.0, 6000.0, 1000.0])
    los = np.array([True, True, False])
    assert tr.shadowing_std_db(tr.RMA, los, d, F, 35.0, 1.5).tolist() == [4.0, 6.0, 8.0]
    assert tr.shadowing_std_db(tr.UMA, los, d, F, 25.0, 1.5).tolist() == [4.0, 4.0, 6.0]
    # indoors: the least of two U(0, 10 m) draws (UMa, UMi: 25 m), mean 10/3
    rng = np.random.default_rng(0)
    assert tr.draw_indoor_distance_m(100_000, rng, 10.0).mean() == pytest.approx(10 / 3,
                                                                                 rel=0.01)


@pytest.mark.parametrize("scenario, bs_height", [(tr.UMA, 25.0), (tr.UMI, 10.0),
                                                (tr.RMA, 35.0)])
def test_los_path_loss_is_continuous_at_the_breakpoint_and_nlos_never_below_los(scenario,
                                                                               bs_height):
    d_bp = float(tr.breakpoint_distance_m(F, bs_height, 1.5))
    below = tr.pathloss_los_db(scenario, d_bp * (1 - 1e-9), F, bs_height, 1.5)
    beyond = tr.pathloss_los_db(scenario, d_bp * (1 + 1e-9), F, bs_height, 1.5)
    assert below == pytest.approx(beyond, abs=0.05)   # the two slopes meet at d'_BP
    d = np.geomspace(10, 5000, 200)
    assert (tr.pathloss_nlos_db(scenario, d, F, bs_height, 1.5)
            >= tr.pathloss_los_db(scenario, d, F, bs_height, 1.5)).all()


def test_los_probability_by_hand():
    # UMa, 100 m: 18/100 + exp(-100/63)(1 - 18/100) = 0.3477; UMi: exp(-100/36): 0.2310
    assert tr.los_probability(tr.UMA, 100.0) == pytest.approx(0.18 + math.exp(-100 / 63) * 0.82)
    assert tr.los_probability(tr.UMA, 100.0) == pytest.approx(0.3477, abs=1e-4)
    assert tr.los_probability(tr.UMI, 100.0) == pytest.approx(0.2310, abs=1e-4)
    assert tr.los_probability(tr.UMA, [5.0, 18.0]).tolist() == [1.0, 1.0]
    # a UT above 13 m in UMa: the C'(h_UT) term raises it
    assert tr.los_probability(tr.UMA, 100.0, 20.0) > tr.los_probability(tr.UMA, 100.0, 1.5)


def test_the_los_share_of_10000_drops_is_within_binomial_bounds_in_distance_bins():
    rng = np.random.default_rng(0)
    d = rng.uniform(10, 500, 10_000)
    los = tr.draw_los(tr.UMA, d, 1.5, rng)
    for low in range(10, 500, 70):
        inside = (d >= low) & (d < low + 70)
        p = float(tr.los_probability(tr.UMA, d[inside]).mean())
        n, k = int(inside.sum()), int(los[inside].sum())
        # a two-sided 99.9 % interval of the binomial count (Poisson-binomial: the mean p)
        lo, hi = stats.binom.interval(0.999, n, p)
        assert lo <= k <= hi, (low, n, k, p)


def test_o2i_building_losses_by_hand():
    # low loss at 3.5 GHz: L_glass 2.7, L_concrete 19 dB:
    # 5 - 10 log10(0.3 10^-0.27 + 0.7 10^-1.9) = 12.70 dB
    assert tr.o2i_building_loss_db("low_loss", F) == pytest.approx(12.70, abs=0.01)
    # high loss: L_IIRglass 24.05 dB: 5 - 10 log10(0.7 10^-2.405 + 0.3 10^-1.9) = 26.85 dB
    assert tr.o2i_building_loss_db("high_loss", F) == pytest.approx(26.85, abs=0.01)
    with pytest.raises(ValueError, match="o2i: must be 'low_loss' or 'high_loss'"):
        tr.o2i_building_loss_db("brick", F)
    d_in = tr.draw_indoor_distance_m(100_000, np.random.default_rng(1))
    # the least of two U(0, 25): mean 25/3, never above 25
    assert d_in.max() <= 25 and d_in.mean() == pytest.approx(25 / 3, rel=0.01)


def test_ranges_the_tables_do_not_cover_are_named():
    assert tr.check_ranges(tr.UMA, F, 1.5, 25.0) == []
    problems = tr.check_ranges(tr.UMA, 0.3e9, 30.0, 25.0)
    assert problems[0].startswith("carrier_frequency_hz: 3gpp_38901_uma is defined from 0.5 to "
                                  "100 GHz, got 3e+08")
    assert problems[1] == "ut_height_m: 3gpp_38901_uma is defined for 1.5 to 22.5 m, got 30"


# --- in a scenario: network.pathloss 3gpp_38901_uma / _umi ---------------------------------
def cell_world(num_clients=2000, pathloss="3gpp_38901_uma", **network):
    from scala_netsim.runner.world import build_world, clients_frame

    from conftest import tiny_dataset, tiny_scenario

    scenario = tiny_scenario(data={"num_clients": num_clients},
                             training={"participation": 1 / num_clients}, network={
        "pathloss": pathloss, "carrier_frequency_hz": F, **network})
    world = build_world(scenario, tiny_dataset(per_class=num_clients // 5))
    return world, clients_frame(world)


def assert_state_losses(clients, table, bs_height):
    """Each client's basic path loss is its LOS state's formula at its distance. -> the LOS
    mask."""
    los = clients["los"] == 1
    for state, formula in ((los, tr.pathloss_los_db), (~los, tr.pathloss_nlos_db)):
        np.testing.assert_allclose(clients.loc[state, "pathloss_db"], formula(
            table, clients.loc[state, "distance_m"], F, bs_height, 1.5))
    return los


def test_a_38901_cell_draws_los_indoor_o2i_and_shadowing_per_client():
    world, clients = cell_world()
    for column in ("pathloss_db", "shadowing_db", "o2i_db", "d3d_m", "h_ut_m", "los",
                   "indoor"):
        assert column in clients.columns, column
    # the gain is the basic loss, the shadowing and the O2I loss together
    total = clients["pathloss_db"] + clients["shadowing_db"] + clients["o2i_db"]
    np.testing.assert_allclose(world.cell.gain_linear, 10 ** (-total.to_numpy() / 10))
    # 80 % indoors (38.901's assumption), binomial bounds
    lo, hi = stats.binom.interval(0.999, len(clients), 0.8)
    assert lo <= clients["indoor"].sum() <= hi
    outdoor = clients[clients["indoor"] == 0]
    assert (outdoor["o2i_db"] == 0).all()
    assert (clients.loc[clients["indoor"] == 1, "o2i_db"].mean()
            == pytest.approx(tr.o2i_building_loss_db("low_loss", F) + 0.5 * 25 / 3, abs=0.5))
    # each state's path loss and shadow-fading deviation (4 dB LOS, 6 dB NLOS)
    los = assert_state_losses(clients, tr.UMA, 25.0)
    assert clients.loc[los, "shadowing_db"].std() == pytest.approx(4.0, rel=0.15)
    assert clients.loc[~los, "shadowing_db"].std() == pytest.approx(6.0, rel=0.1)


def test_an_rma_cell_draws_with_rmas_tables():
    world, clients = cell_world(pathloss="3gpp_38901_rma")
    total = clients["pathloss_db"] + clients["shadowing_db"] + clients["o2i_db"]
    np.testing.assert_allclose(world.cell.gain_linear, 10 ** (-total.to_numpy() / 10))
    los = assert_state_losses(clients, tr.RMA, 35.0)
    # in a 500 m cell every LOS client is below the 3.85 km breakpoint: 4 dB; NLOS 8 dB
    assert clients.loc[los, "shadowing_db"].std() == pytest.approx(4.0, rel=0.1)
    assert clients.loc[~los, "shadowing_db"].std() == pytest.approx(8.0, rel=0.15)
    # indoors at the least of two U(0, 10 m): 0.5 x 10/3 dB on top of the low-loss wall
    assert (clients.loc[clients["indoor"] == 1, "o2i_db"].mean()
            == pytest.approx(tr.o2i_building_loss_db("low_loss", F) + 0.5 * 10 / 3, abs=0.5))
    # RMa's LOS probability is far higher than UMa's at these distances
    assert los.mean() > 0.6


def test_the_paper_cells_clients_file_is_unchanged():
    from scala_netsim.runner.world import build_world, clients_frame

    from conftest import tiny_dataset, tiny_scenario

    clients = clients_frame(build_world(tiny_scenario(), tiny_dataset()))
    assert not {"o2i_db", "los", "indoor", "d3d_m"} & set(clients.columns)


@pytest.mark.parametrize("network, message", [
    ({"carrier_frequency_hz": 0.3e9}, "network.carrier_frequency_hz: 3gpp_38901_uma is "
                                      "defined from 0.5 to 100 GHz, got 3e+08"),
    ({"ut_height_m": 30.0}, "network.ut_height_m: 3gpp_38901_uma is defined for 1.5 to 22.5 m"),
    ({"shadowing_std_db": 8.0}, "network.shadowing_std_db: 3gpp_38901_uma draws its own "
                                "shadow fading"),
    ({"indoor_share": 1.5}, "network.indoor_share: must be <= 1"),
    ({"o2i": "brick"}, "network.o2i: must be one of 'low_loss' or 'high_loss', got 'brick'"),
    ({"pathloss": "3gpp_38901_rma", "carrier_frequency_hz": 40e9},
     "network.carrier_frequency_hz: 3gpp_38901_rma is defined from 0.5 to 30 GHz, got 4e+10"),
    ({"pathloss": "3gpp_38901_rma", "bs_height_m": 5.0},
     "network.bs_height_m: 3gpp_38901_rma is defined for 10 to 150 m, got 5"),
    ({"pathloss": "3gpp_38901_rma", "ut_height_m": 12.0},
     "network.ut_height_m: 3gpp_38901_rma is defined for 1 to 10 m, got 12"),
    ({"pathloss": "3gpp_38901_rma", "o2i": "high_loss"},
     "network.o2i: 3gpp_38901_rma has the low-loss building model only (TR 38.901 7.4.3.1), "
     "got 'high_loss'"),
])
def test_settings_the_38901_tables_do_not_cover_are_refused(network, message):
    import scala_netsim as sn

    from conftest import tiny_scenario

    with pytest.raises(sn.ScenarioError, match=re.escape(message)):
        tiny_scenario(network={"pathloss": "3gpp_38901_uma", **network})


# --- Sionna as the referee (the optional extra [sionna]) -----------------------------------
@pytest.mark.parametrize("name, bs_height", [("UMa", 25.0), ("UMi", 10.0), ("RMa", 35.0)])
def test_path_loss_and_los_probability_agree_with_sionna(name, bs_height):
    """Sionna's TR 38.901 scenarios (sionna-no-rt 2.x, pure PyTorch) compute the same basic
    path loss in LOS and NLOS, and the same LOS probability, for the same geometry, in
    double precision (below and beyond the breakpoint, outdoor clients at 1.5 m)."""
    sionna = pytest.importorskip("sionna.phy.channel.tr38901",
                                 reason="the optional extra [sionna] (Python 3.11+)")
    import torch

    ours = tr.SCENARIOS[name.lower()]
    array = sionna.PanelArray(num_rows_per_panel=1, num_cols_per_panel=1,
                              polarization="single", polarization_type="V",
                              antenna_pattern="omni", carrier_frequency=F)
    o2i = () if name == "RMa" else ("low",)    # RMa has the low-loss model only
    scenario = getattr(sionna, f"{name}Scenario")(F, *o2i, array, array, "uplink",
                                                  enable_shadow_fading=False,
                                                  precision="double")
    # RMa's breakpoint at 3.5 GHz is 2 pi 35 m 1.5 m f / c = 3.85 km: 6 km is beyond it
    d = np.array([20.0, 50.0, 100.0, 300.0, 800.0, 1500.0, 6000.0])
    n, f64 = len(d), torch.float64
    ut = torch.tensor(np.column_stack([d, np.zeros(n), np.full(n, 1.5)]), dtype=f64)[None]
    zeros = torch.zeros(1, n, 3, dtype=f64)
    site = torch.tensor([[[0.0, 0.0, bs_height]]], dtype=f64)
    for los, formula in ((True, tr.pathloss_los_db), (False, tr.pathloss_nlos_db)):
        scenario.set_topology(ut_loc=ut, bs_loc=site, ut_orientations=zeros,
                              bs_orientations=torch.zeros(1, 1, 3, dtype=f64),
                              ut_velocities=zeros, in_state=torch.zeros(1, n, dtype=torch.bool),
                              los=los)
        np.testing.assert_allclose(formula(ours, d, F, bs_height, 1.5),
                                   scenario.basic_pathloss.flatten().numpy(), rtol=1e-12)
    np.testing.assert_allclose(tr.los_probability(ours, d),
                               scenario.los_probability.flatten().numpy(), rtol=1e-9)
