"""The radio model's draws against their closed forms (Monte Carlo, 10^5 draws, within 1 %),
and the bandwidth allocators against a general-purpose solver."""

import copy

import numpy as np
import pandas as pd
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
    from scala_netsim.core.seeds import Seeds
    from scala_netsim.runner.world import build_world, clients_frame

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
    from scala_netsim.config.documents import ScenarioError

    from conftest import tiny_scenario

    with pytest.raises(ScenarioError, match=r"network\.shadowing_std_db: must be from 0 to 30 "
                                            r"\(dB; the 36\.814 macro cell's is 8\), got -3"):
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
    link.begin_version(r)   # the round the fading draw is for
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
    first = run.link.transfer_rows[0]
    run.link.transfer_rows[0] = (*first[:3], 99, *first[4:])
    assert any("attempts x payload bits" in p for p in run.problems())


def test_a_transfer_that_exhausts_its_attempts_drops_its_client(make_run):
    """(Issue 12: a lost transfer drops its client from the round; tests/sim/test_deadlines.py.)"""
    for attempts in (1, 2):
        run = make_run("fedavg", network={"link": {
            "mode": "fixed_rate", "target_rate_bps": 1e12, "max_attempts": attempts}})
        row = run.step()
        assert (row["num_dropped_lost"], row["num_contributing"]) == (3, 0)
        lost = [t for t in run.link.transfers]
        assert len(lost) == 3 and all(t.attempts == attempts for t in lost)
        assert not run.problems()


@pytest.mark.slow
def test_the_cli_warns_of_an_unreachable_fixed_rate_and_runs(cli, tmp_path):
    from conftest import ROOT

    code, out, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path,
                         "--set", "data.train_samples=600", "--set", "data.test_samples=100",
                         "--set", "algorithms=[fedavg]", "--set", "training.rounds=1",
                         "--set", "network.link={mode: fixed_rate, target_rate_bps: 1.0e12}",
                         "--no-figures", "--no-report")
    assert code == 0, err
    assert "warning: network.link.target_rate_bps: 1e+12 bit/s is above what a client at the " \
           "cell edge" in err
    rounds = pd.read_csv(tmp_path / "quickstart" / "fedavg" / "seed0" / "rounds.csv")
    assert rounds["num_dropped_lost"].tolist() == [10]
    assert rounds["num_contributing"].tolist() == [0]


# --- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("network, compute, message", [
    ({"fading": {"kind": "nakagami"}}, {},
     "network.fading.kind: must be one of 'none', 'rayleigh' or 'rician', got 'nakagami'"),
    ({"fading": {"kind": "rayleigh", "k_factor_db": 3.0}}, {},
     "network.fading.k_factor_db: only with kind rician, got 3.0 with kind rayleigh"),
    ({"fading": {"kind": "rician"}}, {},
     "network.fading.k_factor_db: required with kind rician"),
    ({"fading": {"kind": "rayleigh", "coherence": "slot"}}, {},
     "network.fading.coherence: must be one of 'round', 'transfer' or 'time', got 'slot'"),
    ({"link": {"mode": "fixed_rate", "target_rate_bps": 0}}, {},
     "network.link.target_rate_bps: must be from 1000 to 1e13 (bit/s; 10 Gbit/s is 1e10), got 0"),
    ({"link": {"mode": "fixed_rate", "target_rate_bps": -1e6}}, {},
     "network.link.target_rate_bps: must be from 1000 to 1e13 (bit/s; 10 Gbit/s is 1e10), got "
     "-1e6"),
    ({"link": {"mode": "fixed_rate", "target_rate_bps": 1e6, "max_attempts": 0}}, {},
     "network.link.max_attempts: must be >= 1, got 0"),
    ({"link": {"mode": "fixed_rate"}}, {},
     "network.link.target_rate_bps: required with mode fixed_rate"),
    ({"link": {"target_rate_bps": 1e6}}, {},
     "network.link.target_rate_bps: only with mode fixed_rate, got 1000000.0 with mode adaptive"),
    ({"record_radio": "sometimes"}, {},
     "network.record_radio: must be true or false, got 'sometimes'"),
    ({}, {"energy_coefficient": -1e-28},
     "compute.energy_coefficient: must be from 0 to 1e-20 (J s^2 per FLOP^3; the usual value is "
     "1e-28), got -1e-28"),
])
def test_bad_radio_settings_name_field_value_and_what_is_allowed(network, compute, message):
    from scala_netsim.config.documents import ScenarioError
    from scala_netsim.config.scenario import validate_scenario

    with pytest.raises(ScenarioError) as error:
        validate_scenario({"name": "x", "network": network, "compute": compute})
    assert any(p.startswith(message) for p in error.value.problems), error.value.problems


def test_the_cli_refuses_a_bad_radio_setting_with_exit_2_and_writes_nothing(cli, tmp_path):
    from conftest import ROOT

    code, out, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path,
                         "--set", "network.fading={kind: rician}")
    assert code == 2 and "network.fading.k_factor_db: required with kind rician" in err
    assert not any(tmp_path.iterdir())


# --- the events contract: radio and energy columns -----------------------------------------
def events_table(run):
    import pandas as pd

    columns, rows = run.event_table()
    return pd.DataFrame(rows, columns=list(columns))


def check(run, events):
    """The run's invariants on `events` (events.csv as the run would write it)."""
    import pandas as pd

    from scala_netsim.books.invariants import check_run
    from scala_netsim.books.tables import grants_frame, transfers_frame

    cell = run.world.cell
    return check_run(events, pd.DataFrame(run.rows), grants_frame(run.link.grant_rows),
                     transfers_frame(run.link.transfer_rows, cell.network is not None),
                     {"uplink": cell.uplink_bandwidth_hz, "downlink": cell.downlink_bandwidth_hz},
                     run.protocol.pipelined_clients, run.radio_settings())


def test_a_default_cell_writes_todays_columns_and_record_radio_adds_the_contract(make_run):
    from scala_netsim.core.columns import ENERGY_COLUMNS, EVENT_COLUMNS, RADIO_COLUMNS

    plain, recorded = make_run("scala"), make_run("scala", network={"record_radio": True})
    plain.step()
    recorded.step()
    assert plain.event_table()[0] == EVENT_COLUMNS and not set(ENERGY_COLUMNS) & set(plain.rows[0])
    assert recorded.event_table()[0] == EVENT_COLUMNS + RADIO_COLUMNS
    # the same run: the first eight columns and the round's other figures are unchanged
    assert [r[:8] for r in recorded.event_table()[1]] == plain.log.rows
    same = {k: v for k, v in recorded.rows[0].items() if k not in ENERGY_COLUMNS}
    assert str(same) == str(plain.rows[0])                  # (NaN test_acc: compared as text)
    assert list(recorded.rows[0])[13:16] == list(ENERGY_COLUMNS)   # after num_clients


@pytest.mark.parametrize("network", [
    {"shadowing_std_db": 8.0, "fading": {"kind": "rayleigh", "coherence": "round"},
     "allocation": "min_max_latency"},
    {"shadowing_std_db": 8.0, "fading": {"kind": "rician", "k_factor_db": 6.0,
                                         "coherence": "transfer"}},
])
def test_every_duration_rate_and_joule_recomputes_from_the_columns_alone(make_run, network):
    """What an independent checker does with events.csv and the cell's settings: no engine."""
    run = make_run("scala", network=network)
    run.step()
    events = events_table(run)
    n0, p_up = float(channel.dbm_to_w(-174.0)), 0.2
    moved = events[events["bandwidth_hz"] > 0]
    assert set(moved["kind"]) == {"model_download", "activation_upload", "gradient_download",
                                  "model_upload"}
    assert len(moved) == (events["payload_bytes"] > 0).sum()
    b, g = moved["bandwidth_hz"], 10 ** (moved["gain_db"] / 10)
    assert (moved["t_end_s"] - moved["t_start_s"]).to_numpy() == pytest.approx(
        (moved["attempts"] * moved["payload_bytes"] * 8 / moved["rate_bps"]).to_numpy(), rel=1e-9)
    assert moved["rate_bps"].to_numpy() == pytest.approx(
        (b * np.log2(1 + moved["tx_power_w"] * g / (n0 * b))).to_numpy(), rel=1e-9)
    up = moved["kind"].isin(["activation_upload", "model_upload"])
    assert (moved.loc[up, "tx_power_w"] == p_up).all()
    assert moved.loc[~up, "tx_power_w"].to_numpy() == pytest.approx(
        (1.0 * moved.loc[~up, "bandwidth_hz"] / 20e6).to_numpy(), rel=1e-12)
    # the gain is the client's shadowed path loss plus its fading draw (which varies)
    cell = run.world.cell
    loss_db = (cell.pathloss_db + cell.shadowing_db)[moved["client_id"].to_numpy()]
    fading_db = moved["gain_db"].to_numpy() + loss_db
    assert np.ptp(fading_db) > 1.0
    for _, frame in moved.assign(up=up).groupby(["round", "up"]):
        assert frame.groupby("client_id")["bandwidth_hz"].max().sum() == pytest.approx(20e6)
    # energy: p x airtime up, nothing down, kappa FLOPs f^2 for client compute, nothing on the
    # server; rounds.csv sums them
    assert moved.loc[up, "energy_j"].to_numpy() == pytest.approx(
        (p_up * (moved.loc[up, "t_end_s"] - moved.loc[up, "t_start_s"])).to_numpy(), rel=1e-9)
    assert (moved.loc[~up, "energy_j"] == 0).all()
    compute = events[events["kind"].isin(["client_forward", "client_backward"])]
    f = cell.flops_per_s[compute["client_id"].to_numpy()]
    assert compute["energy_j"].to_numpy() == pytest.approx(
        1e-28 * compute["flops"].to_numpy() * f ** 2, rel=1e-12)
    assert (events.loc[events["kind"] == "server_step", ["energy_j", "bandwidth_hz"]] == 0).all(
        axis=None)
    row = run.rows[0]
    assert row["client_energy_j"] == pytest.approx(events["energy_j"].sum(), rel=1e-12)
    assert row["client_transmit_energy_j"] == pytest.approx(moved.loc[up, "energy_j"].sum())
    assert row["client_compute_energy_j"] == pytest.approx(compute["energy_j"].sum())
    assert not check(run, events)


def test_the_invariants_catch_a_corrupted_rate_gain_sub_band_or_joule(make_run):
    run = make_run("fedavg", network={"shadowing_std_db": 8.0, "allocation": "proportional"})
    run.step()
    events = events_table(run)
    assert not check(run, events)
    upload = events.index[events["kind"] == "model_upload"][0]

    def corrupted(column, factor):
        bad = events.copy()
        bad.loc[upload, column] *= factor
        return "\n".join(check(run, bad))

    text = corrupted("rate_bps", 1.001)
    assert "1 transfers do not last attempts x payload_bytes x 8 / rate_bps" in text
    assert "1 transfers' rate_bps is not bandwidth_hz log2(1 + tx_power_w" in text
    assert "rate_bps is not bandwidth_hz log2" in corrupted("gain_db", 1.01)
    assert "the uplink sub-bands used sum to" in corrupted("bandwidth_hz", 50.0)
    assert "1 events' energy_j is not tx_power_w x" in corrupted("energy_j", 1.01)
    rows = [dict(r) for r in run.rows]
    rows[0]["client_transmit_energy_j"] *= 1.01
    run.rows = rows
    assert "rounds.csv client_transmit_energy_j differs from the sum" in "\n".join(
        check(run, events))


def test_a_fixed_rate_transfer_spends_energy_on_every_attempt(make_run):
    run = make_run("scala", network={
        "fading": {"kind": "rayleigh", "coherence": "transfer"},
        "link": {"mode": "fixed_rate", "target_rate_bps": 2e7, "max_attempts": 30}})
    run.step()
    events = events_table(run)
    up = events[events["kind"] == "activation_upload"]
    assert up["attempts"].max() > 1 and (up["rate_bps"] == 2e7).all()
    assert up["energy_j"].to_numpy() == pytest.approx(
        (0.2 * up["attempts"] * up["payload_bytes"] * 8 / 2e7).to_numpy(), rel=1e-12)
    # the recorded gain is that of the attempt that got through: its capacity reaches R
    b = up["bandwidth_hz"]
    capacity = b * np.log2(1 + 0.2 * 10 ** (up["gain_db"] / 10)
                           / (float(channel.dbm_to_w(-174.0)) * b))
    assert (capacity >= 2e7).all()
    assert not check(run, events)


@pytest.mark.parametrize("algorithm", ["scala", "splitfed_v1"])
def test_under_min_max_every_client_ends_its_first_forward_and_upload_together(make_run,
                                                                              algorithm):
    """Min-max latency, no fading inside the round: each participant's first client forward
    plus activation upload (the step the allocator balanced) lasts the same."""
    run = make_run(algorithm, network={"shadowing_std_db": 8.0, "allocation": "min_max_latency"})
    run.step()
    events = events_table(run)
    first = events[(events["local_iter"] == 0)
                   & events["kind"].isin(["client_forward", "activation_upload"])]
    spent = (first["t_end_s"] - first["t_start_s"]).groupby(first["client_id"]).sum()
    assert len(spent) == 3 and spent.max() == pytest.approx(spent.min(), rel=1e-9)
    equal = make_run(algorithm, network={"shadowing_std_db": 8.0})
    equal.step()
    events = events_table(equal)
    first = events[(events["local_iter"] == 0)
                   & events["kind"].isin(["client_forward", "activation_upload"])]
    unequal = (first["t_end_s"] - first["t_start_s"]).groupby(first["client_id"]).sum()
    assert unequal.max() > spent.max() * 1.01     # equal shares leave someone slower


def test_a_run_resumed_from_its_state_continues_the_same_radio_records(make_run):
    """Checkpoints keep each transfer's gain and power: a run restored after round 1 writes
    the events and rounds of the uninterrupted run (per-transfer fading streams included)."""
    network = {"shadowing_std_db": 8.0, "allocation": "min_max_latency",
               "fading": {"kind": "rayleigh", "coherence": "transfer"},
               "link": {"mode": "fixed_rate", "target_rate_bps": 1e6, "max_attempts": 30}}
    whole = make_run("scala", network=network)
    whole.step()
    state = copy.deepcopy(whole.state_dict())   # (a checkpoint is written at once)
    whole.step()
    resumed = make_run("scala", network=network)
    resumed.load_state_dict(state)
    resumed.step()
    assert resumed.event_table() == whole.event_table()
    assert str(resumed.rows) == str(whole.rows)


def test_a_receivers_noise_figure_raises_its_noise_and_nothing_else(make_run):
    """Issue 47 (13): bs_noise_figure_db raises the noise at the base station (the uplink's
    rates are Shannon's at N0 + 5 dB), client_noise_figure_db at the clients (the downlink's
    at N0 + 9 dB), recomputed from the columns alone; the invariants use the same noise."""
    run = make_run("scala", network={"record_radio": True, "bs_noise_figure_db": 5.0,
                                     "client_noise_figure_db": 9.0})
    run.step()
    events = events_table(run)
    moved = events[events["bandwidth_hz"] > 0]
    up = moved["kind"].isin(["activation_upload", "model_upload"]).to_numpy()
    noise = np.where(up, float(channel.dbm_to_w(-174.0 + 5.0)),
                     float(channel.dbm_to_w(-174.0 + 9.0)))
    b, g = moved["bandwidth_hz"].to_numpy(), 10 ** (moved["gain_db"].to_numpy() / 10)
    assert moved["rate_bps"].to_numpy() == pytest.approx(
        b * np.log2(1 + moved["tx_power_w"].to_numpy() * g / (noise * b)), rel=1e-12)
    assert run.problems() == []
    plain = make_run("scala", network={"record_radio": True})
    plain.step()
    quiet = events_table(plain)
    quiet = quiet[quiet["bandwidth_hz"] > 0]
    assert (moved["rate_bps"].to_numpy() < quiet["rate_bps"].to_numpy()).all()
