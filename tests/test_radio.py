"""The radio model's draws against their closed forms (Monte Carlo, 10^5 draws, within 1 %),
and the bandwidth allocators against a general-purpose solver."""

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

import channel
from channel.energy import compute_energy_j, transmit_energy_j
from channel.fading import (
    ergodic_rayleigh_capacity_bps,
    fading_power_gain,
    mean_attempts,
    rayleigh_outage_probability,
    shadowing_db,
)

DRAWS = 100_000
N0_W_PER_HZ = float(channel.dbm_to_w(-174.0))


def rng(seed=0):
    return np.random.default_rng(seed)


def test_shadowing_is_normal_in_db_with_the_asked_spread():
    x = shadowing_db(8.0, DRAWS, rng())
    assert abs(x.mean()) < 0.05 and x.std() == pytest.approx(8.0, rel=0.01)
    assert not shadowing_db(0.0, 5, rng()).any()
    with pytest.raises(ValueError, match="must be >= 0 dB, got -1"):
        shadowing_db(-1.0, 5, rng())


def test_rayleigh_and_rician_power_gains_have_their_moments():
    rayleigh = fading_power_gain("rayleigh", rng(), DRAWS)
    assert rayleigh.mean() == pytest.approx(1.0, rel=0.01)
    assert (rayleigh ** 2).mean() == pytest.approx(2.0, rel=0.02)      # Exp(1): E x^2 = 2
    for k_db in (0.0, 6.0, 10.0):
        k = 10 ** (k_db / 10)
        rician = fading_power_gain("rician", rng(1), DRAWS, k_factor_db=k_db)
        assert rician.mean() == pytest.approx(1.0, rel=0.01)
        # E|h|^4 = (K^2 + 4K + 2) / (K + 1)^2 for unit-power Rician fading
        assert (rician ** 2).mean() == pytest.approx((k * k + 4 * k + 2) / (k + 1) ** 2, rel=0.01)
    assert fading_power_gain("none", None) == 1.0
    with pytest.raises(ValueError, match="one of"):
        fading_power_gain("nakagami", rng())


@pytest.mark.parametrize("mean_snr_db, rate_bps", [(10.0, 2e6), (0.0, 0.5e6), (20.0, 5e6)])
def test_rayleigh_outage_attempts_and_ergodic_capacity_against_monte_carlo(mean_snr_db,
                                                                           rate_bps):
    b, snr = 1e6, 10 ** (mean_snr_db / 10)
    gains = fading_power_gain("rayleigh", rng(2), DRAWS)
    capacity = b * np.log2(1 + snr * gains)
    p_out = rayleigh_outage_probability(rate_bps, b, snr)
    assert (capacity < rate_bps).mean() == pytest.approx(p_out, rel=0.01)
    assert capacity.mean() == pytest.approx(ergodic_rayleigh_capacity_bps(b, snr), rel=0.01)
    # ARQ: a fresh draw per attempt, at most M attempts
    for max_attempts in (1, 3, 50):
        failed = (b * np.log2(1 + snr * fading_power_gain(
            "rayleigh", rng(3), (DRAWS, max_attempts))) < rate_bps)
        first_success = np.where(failed.all(axis=1), max_attempts, failed.argmin(axis=1) + 1)
        assert first_success.mean() == pytest.approx(mean_attempts(p_out, max_attempts),
                                                     rel=0.01)
    assert mean_attempts(p_out, 10_000) == pytest.approx(1 / (1 - p_out), rel=1e-12)
    assert mean_attempts(0.0, 4) == 1.0 and mean_attempts(1.0, 4) == 4.0


def test_energy_of_sending_and_computing():
    assert transmit_energy_j(0.2, 3.0) == pytest.approx(0.6)
    # kappa * FLOPs * (FLOP/s)^2: 1e-28 * 1e9 * (2e9)^2 = 0.4 J
    assert compute_energy_j(1e-28, 1e9, 2e9) == pytest.approx(0.4)


# --- bandwidth allocation -----------------------------------------------------------------
def instance(n, seed, constant_psd=False):
    r = rng(seed)
    distance_m = r.uniform(35, 500, n)
    gain = channel.db_to_linear(-channel.Macro3gpp36814().pathloss_db(distance_m)
                                - r.normal(0, 8, n))
    return channel.LinkDemand(np.arange(n), gain, r.uniform(1e5, 1e7, n),
                              r.uniform(0.0, 0.5, n), np.full(n, 1.0 if constant_psd else 0.2),
                              N0_W_PER_HZ, constant_psd)


def finish_s(demand, b, total_hz):
    return demand.compute_time_s + demand.payload_bits / demand.rate_bps(b, total_hz)


@pytest.mark.parametrize("constant_psd", [False, True])
def test_the_closed_form_sub_band_for_a_rate_is_brents_root(constant_psd):
    demand, total = instance(20, 4, constant_psd), 20e6
    target = demand.rate_bps(np.full(20, 1e6), total) * rng(5).uniform(0.2, 1.5, 20)
    b = demand.bandwidth_for_rate_hz(target, total)
    for k in range(20):
        one = channel.LinkDemand(*(np.asarray(v)[[k]] for v in (
            demand.client_ids, demand.gain_linear, demand.payload_bits, demand.compute_time_s,
            demand.tx_power_w)), N0_W_PER_HZ, constant_psd)
        root = brentq(lambda x, k=k, one=one: one.rate_bps(np.array([x]), total)[0] - target[k],
                      1e-3, 1e9, xtol=1e-12, rtol=1e-15)
        assert b[k] == pytest.approx(root, rel=1e-9)
    # a client of fixed power never exceeds p g / (N0 ln 2): no sub-band gives more
    if not constant_psd:
        ceiling = demand.tx_power_w * demand.gain_linear / N0_W_PER_HZ / np.log(2)
        assert np.isinf(demand.bandwidth_for_rate_hz(ceiling * 1.01, total)).all()


@pytest.mark.parametrize("seed", range(6))
def test_min_max_latency_matches_slsqp_and_everyone_finishes_together(seed):
    n, total = 4 + seed, 10e6
    demand = instance(n, seed, constant_psd=seed % 3 == 2)
    b = channel.MinMaxLatencyAllocator().allocate_hz(total, demand)
    assert b.sum() == pytest.approx(total, rel=1e-12) and (b > 0).all()
    finish = finish_s(demand, b, total)
    assert finish.max() == pytest.approx(finish.min(), rel=1e-9)      # equal finish
    # SLSQP on (shares / W, t / T_equal): minimise t s.t. finish_k <= t, sum of shares = 1
    t_equal = finish_s(demand, np.full(n, total / n), total).max()

    def latency(x):
        return (finish_s(demand, x[:n] * total, total) / t_equal)

    result = minimize(lambda x: x[n], np.append(np.full(n, 1 / n), 1.0), method="SLSQP",
                      bounds=[(1e-9, 1)] * n + [(0, None)],
                      constraints=[{"type": "eq", "fun": lambda x: x[:n].sum() - 1},
                                   {"type": "ineq", "fun": lambda x: x[n] - latency(x)}],
                      options={"ftol": 1e-12, "maxiter": 1000})
    assert result.success, result.message
    assert finish.max() == pytest.approx(latency(result.x).max() * t_equal, rel=1e-6)
    assert finish.max() <= t_equal * (1 + 1e-12)                      # never worse than equal


def test_proportional_and_the_fallbacks():
    demand, total = instance(5, 7), 10e6
    b = channel.ProportionalAllocator().allocate_hz(total, demand)
    airtime = demand.payload_bits / demand.rate_bps(np.full(5, total / 5), total)
    assert b.sum() == pytest.approx(total) and b == pytest.approx(total * airtime / airtime.sum())
    one_silent = channel.LinkDemand(np.arange(3), np.ones(3), np.array([1.0, 0.0, 1.0]),
                                    np.zeros(3), np.full(3, 0.2), N0_W_PER_HZ)
    all_silent = channel.LinkDemand(np.arange(3), np.ones(3), np.zeros(3), np.zeros(3),
                                    np.full(3, 0.2), N0_W_PER_HZ)
    empty = channel.LinkDemand(*(np.zeros(0),) * 5, N0_W_PER_HZ)
    # min-max: a client that sends nothing in a step would get no band: equal shares
    assert channel.MinMaxLatencyAllocator().allocate_hz(9e6, one_silent).tolist() == [3e6] * 3
    assert channel.ProportionalAllocator().allocate_hz(9e6, all_silent).tolist() == [3e6] * 3
    for allocator in (channel.MinMaxLatencyAllocator(), channel.ProportionalAllocator()):
        assert allocator.allocate_hz(9e6, empty).size == 0


# --- the radio model in the cell -----------------------------------------------------------
def test_shadowing_is_drawn_once_per_client_from_its_own_stream(fashion_slice):
    from scala_netsim.run import build_world, clients_frame
    from scala_netsim.seeds import Seeds

    from conftest import tiny_scenario

    plain = build_world(tiny_scenario("scala"), fashion_slice)
    assert plain.cell.shadowing_db is None and "shadowing_db" not in clients_frame(plain)
    shadowed = {algorithm: build_world(tiny_scenario(algorithm, network={
        "shadowing_std_db": 8.0}), fashion_slice) for algorithm in ("scala", "fedavg")}
    x = shadowed["scala"].cell.shadowing_db
    assert np.array_equal(x, shadowed["fedavg"].cell.shadowing_db)   # whatever the algorithm
    assert x.std() > 1.0 and np.array_equal(x, shadowing_db(8.0, 10, Seeds(0).numpy("shadowing")))
    # the path loss stays the distance's; the gain carries both; the drop is unchanged
    cell = shadowed["scala"].cell
    assert np.array_equal(cell.distance_m, plain.cell.distance_m)
    assert np.array_equal(cell.pathloss_db, plain.cell.pathloss_db)
    assert cell.gain_linear == pytest.approx(10 ** (-(cell.pathloss_db + x) / 10), rel=1e-12)
    frame = clients_frame(shadowed["scala"])
    assert frame["shadowing_db"].tolist() == x.tolist()
    assert list(frame.columns[:5]) == ["client_id", "distance_m", "pathloss_db",
                                       "shadowing_db", "flops_per_s"]


def test_a_negative_shadowing_spread_is_refused_with_its_field():
    from scala_netsim.scenario import ScenarioError

    from conftest import tiny_scenario

    with pytest.raises(ScenarioError, match=r"network\.shadowing_std_db: must be >= 0\.0, "
                                            r"got -3\.0"):
        tiny_scenario("scala", network={"shadowing_std_db": -3.0})


@pytest.mark.parametrize("allocation", ["proportional", "min_max_latency"])
def test_a_round_under_each_allocator_splits_the_whole_band(make_run, allocation):
    run = make_run("scala", network={"allocation": allocation, "shadowing_std_db": 8.0})
    run.step()
    grants = run.link.grants
    for direction in ("uplink", "downlink"):
        shares = [g.bandwidth_hz for g in grants if g.direction.value == direction]
        assert len(shares) == 3 and sum(shares) == pytest.approx(20e6, rel=1e-12)
    assert not run.problems()


def transfer_rates(run):
    """(round, client, kind) -> the rates of its transfers, in order."""
    rates = {}
    for t in run.link.transfers:
        e = run.log.rows[t.event_index]
        rates.setdefault((e[2], e[4], e[5]), []).append(t.rate_bps)
    return rates


def test_block_fading_per_round_is_one_draw_per_client_direction_and_round(make_run):
    fading = {"fading": {"kind": "rayleigh", "coherence": "round"}}
    runs = {a: make_run(a, network=fading, training={"rounds": 2}) for a in ("scala", "fedavg")}
    for run in runs.values():
        run.step()
        run.step()
    plain = make_run("scala")
    plain.step()
    rates = {a: transfer_rates(r) for a, r in runs.items()}
    link = runs["scala"].link
    for (r, k, kind), values in rates["scala"].items():
        assert len(set(values)) == 1                  # constant over the round
        if kind == "model_download":                  # the same channel whatever the algorithm
            assert rates["fedavg"][(r, k, kind)] == values
    # the rate is Shannon's at the large-scale gain times the draw of (client, round, direction)
    e = next(i for i, row in enumerate(runs["scala"].log.rows) if row[5] == "activation_upload")
    row = runs["scala"].log.rows[e]
    k, r = row[4], row[2]
    link.round = r
    link._round_fading.clear()
    h2 = link.fading_gain(channel.Direction.UPLINK, k)
    t = next(t for t in link.transfers if t.event_index == e)
    expected = channel.shannon_rate_bps(t.bandwidth_hz, 0.2,
                                        runs["scala"].world.cell.gain_linear[k] * h2, -174.0)
    assert t.rate_bps == pytest.approx(float(expected), rel=1e-12)
    # the same clients (selection does not look at the network), other rates than unfaded
    unfaded = transfer_rates(plain)
    round_1 = [key for key in rates["scala"] if key[0] == 1]
    assert sorted(round_1) == sorted(unfaded)
    assert all(unfaded[key][0] != rates["scala"][key][0] for key in round_1)


def test_block_fading_per_transfer_draws_again_for_each_transfer(make_run):
    run = make_run("scala", network={"fading": {"kind": "rician", "k_factor_db": 3.0,
                                                "coherence": "transfer"}})
    run.step()
    uploads = [v for (r, k, kind), v in transfer_rates(run).items()
               if kind == "activation_upload"]
    assert all(len(set(v)) == len(v) == 2 for v in uploads)   # T = 2, two draws
    assert not run.problems()


def test_fixed_rate_links_retransmit_until_an_attempt_is_below_capacity(make_run):
    """Per-transfer Rayleigh fading at a rate near the clients' mean capacity: some transfers
    take several attempts, each lasts attempts x bits / R, and the attempts are those the
    fading draws give (recomputed here from the same streams)."""
    run = make_run("scala", network={
        "fading": {"kind": "rayleigh", "coherence": "transfer"},
        "link": {"mode": "fixed_rate", "target_rate_bps": 2e7, "max_attempts": 30}},
        training={"rounds": 2})
    run.step()
    run.step()
    transfers = run.link.transfers
    assert all(t.rate_bps == 2e7 for t in transfers)
    attempts = [t.attempts for t in transfers]
    assert max(attempts) > 1 and min(attempts) == 1
    for t in transfers:
        row = run.log.rows[t.event_index]
        assert row[1] - row[0] == pytest.approx(t.attempts * row[6] * 8 / 2e7, rel=1e-12)
    assert not run.problems()
    # an attempt count that disagrees with the duration is caught by the invariants
    run.link.transfer_rows[0] = (*run.link.transfer_rows[0][:3], 99)
    assert any("attempts x payload bits" in p for p in run.problems())


def test_a_transfer_that_exhausts_its_attempts_names_client_and_round(make_run, tmp_path):
    from scala_netsim.engine import TransferLost

    for attempts in (1, 2):
        run = make_run("fedavg", network={"link": {
            "mode": "fixed_rate", "target_rate_bps": 1e12, "max_attempts": attempts}})
        with pytest.raises(TransferLost, match=rf"client \d+'s model_download in round 1 was "
                                               rf"lost: {attempts} attempt\(s\) at 1e\+12 bit/s"):
            run.step()


def test_the_cli_stops_a_lost_transfer_with_exit_2(cli, tmp_path):
    from conftest import ROOT

    code, out, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path,
                         "--set", "data.train_samples=600", "--set", "data.test_samples=100",
                         "--set", "algorithms=[fedavg]", "--set", "training.rounds=1",
                         "--set", "network.link={mode: fixed_rate, target_rate_bps: 1.0e12}")
    assert code == 2 and "was lost" in err and "target_rate_bps" in err
    assert "warning: network.link.target_rate_bps: 1e+12 bit/s is above what a client at the " \
           "cell edge" in err
