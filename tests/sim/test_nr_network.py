"""The NR link abstraction in a network of cells (network.link_abstraction: nr, issue 49 item
2): each transfer moves at the goodput of the MCS link adaptation picks at its blocks' SINRs
(channel.nr_link), waits for its last block's HARQ retransmissions, and records its MCS,
BLER and transmissions; the air record's rates derive again under the same tables. (A drop
whose clients decode nothing is refused before the run: tests/config/test_link_budget.py.)"""

import math

import numpy as np
import pandas as pd
import pytest

from channel import Direction
from scala_netsim import load_scenario

from conftest import NETWORK as SEVEN_SITES
from conftest import per_instant_air

pytest.importorskip("sionna.sys", reason="the optional extra [sionna] (Python 3.11+)")
pytestmark = pytest.mark.slow     # Sionna's tables: about 5 s to build, once a process

NETWORK = {**SEVEN_SITES, "carrier_frequency_hz": 3.5e9,
           "bs_tx_power_w": 40.0}   # 46 dBm: at the paper cell's 1 W some decode nothing
NR = {**NETWORK, "link_abstraction": "nr"}
SECTIONS = {"data": {"num_clients": 40}, "training": {"participation": 0.3}}


def transfers(run) -> pd.DataFrame:
    columns, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    return events[events["kind"].str.endswith(("upload", "download"))]


@pytest.mark.parametrize("algorithm, duplex", [("scala", "fdd"), ("fedavg", "tdd")])
def test_transfers_move_at_the_goodput_of_the_mcs_link_adaptation_picks(make_run, algorithm,
                                                                       duplex):
    from scala_netsim.books.air_rates import air_rate_problems

    run = make_run(algorithm, **SECTIONS, network={**NR, "duplex": duplex,
                                                   "backhaul": {"latency_s": 0.002}})
    run.step()
    run.step()
    assert run.problems() == []
    moved = transfers(run)
    assert moved["mcs"].notna().all() and (moved["mcs"] >= 0).all()
    # (above the target only where the lowest MCS misses it: link adaptation falls back to it)
    lowest = {d: int(run.link.settings.nr.tables[d].mcs[0]) for d in Direction}
    above = moved["bler"] > 0.1
    assert ((moved["bler"] >= 0) & (moved["bler"] < 1)).all()
    assert (moved["mcs"][above] < [lowest[Direction.UPLINK if kind.endswith("upload")
                                          else Direction.DOWNLINK] + 1
                                   for kind in moved["kind"][above]]).all()
    # a transfer moves its payload at its recorded goodput in its air time; every slot of
    # it carries a transmission, a new block with probability 1 - TBLER
    settings = run.link.settings
    slot_s = settings.nr.tables[Direction.UPLINK].slot_s
    # (a transfer whose SINR dropped below every MCS for a while sent in fewer of them; one
    # nobody interfered with kept its MCS and TBLER throughout)
    airtime = (8.0 * moved["payload_bytes"] / moved["rate_bps"]).to_numpy()
    quiet = (moved["interference_dbm"] == -np.inf).to_numpy()
    assert (moved["transmissions"].to_numpy() <= airtime / slot_s * (1 + 1e-9)).all()
    np.testing.assert_allclose(moved["transmissions"][quiet], airtime[quiet] / slot_s,
                               rtol=1e-9)
    assert (moved["mcs"][quiet] == moved["mcs"][quiet].round()).all()
    # the HARQ wait of its last block: the round trip times sum TBLER^i
    expected = [settings.nr.tail_s(p) for p in moved["bler"][quiet]]
    np.testing.assert_allclose(moved["harq_wait_s"][quiet], expected, rtol=1e-9)
    record = run.link.air_record()
    columns, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    assert air_rate_problems(record.frame(), events, record.settings) == []


def test_a_lone_transfer_ends_at_its_goodput_by_hand(make_run):
    """One client in the network: its upload's rate is TBS(MCS, n) (1 - TBLER) / slot at its
    SNR, the MCS the highest whose TBLER meets the target, and it lasts bits / rate plus the
    HARQ wait and the backhaul."""
    run = make_run("fedavg", data={"num_clients": 10}, training={"participation": 0.1},
                   network={**NR, "interference": False})
    run.step()
    assert run.problems() == []
    moved = transfers(run)
    up = moved[moved["kind"].str.endswith("upload")].iloc[0]
    settings = run.link.settings
    tables = settings.nr.tables[Direction.UPLINK]
    n = int(round(up["bandwidth_hz"] / settings.block_hz))
    k = int(up["client_id"])
    snr = (up["tx_power_w"] / n * run.world.cell.gain_linear[k]
           / (settings.noise_w_per_hz(Direction.UPLINK) * settings.block_hz))
    mcs, tbler, _ = tables.choose(np.full(n, snr))
    row = int(np.flatnonzero(tables.mcs == mcs)[0])
    rate = tables.tb_bits[row, n] * (1 - tbler) / tables.slot_s
    assert up["mcs"] == mcs and up["bler"] == pytest.approx(tbler, rel=1e-12)
    assert up["rate_bps"] == pytest.approx(rate, rel=1e-12)
    wait = settings.nr.harq_rtt_s * sum(tbler ** i for i in range(1, 4))
    assert up["t_end_s"] - up["t_start_s"] == pytest.approx(
        8 * up["payload_bytes"] / rate + wait, rel=1e-9)


def test_nr_is_slower_than_shannon_at_high_snr_where_the_mcs_caps_the_rate(make_run):
    shannon = make_run("fedavg", **SECTIONS, network={**NETWORK, "interference": False})
    nr = make_run("fedavg", **SECTIONS, network={**NR, "interference": False})
    for run in (shannon, nr):
        run.step()
    keys = ["round", "local_iter", "client_id", "kind"]
    both = transfers(shannon).merge(transfers(nr), on=keys, suffixes=("_shannon", "_nr"))
    assert len(both) == len(transfers(nr))
    same_blocks = both["bandwidth_hz_shannon"] == both["bandwidth_hz_nr"]
    capped = both[same_blocks & (both["sinr_db_shannon"] > 25.0)]
    assert len(capped)
    assert (capped["rate_bps_nr"] < capped["rate_bps_shannon"]).all()


def test_a_run_built_past_the_drops_refusal_stops_naming_the_transfers(make_run):
    """The drop's refusal is asked before a run is written (tests/config/test_link_budget.py);
    a run built without it (as here) does not hang: the air stops it at run time, naming the
    transfers that deliver nothing with no interference."""
    run = make_run("fedavg", **SECTIONS,
                   network={**NR, "client_tx_power_w": 1e-6, "interference": False})
    with pytest.raises(RuntimeError, match=r"uplink transfer\(s\) deliver nothing under the "
                                           r"NR link abstraction .*with no interference"):
        run.step()


def test_a_power_limited_client_sends_on_fewer_blocks_than_granted(make_run):
    """With all of a cell's band to itself a cell-edge client's upload spreads its 0.2 W too
    thin to decode; it sends on the blocks that give it the best goodput instead."""
    run = make_run("fedavg", data={"num_clients": 10}, training={"participation": 1.0},
                   network={**NR, "interference": False})
    run.step()
    assert run.problems() == []
    moved = transfers(run)
    up = moved[moved["kind"].str.endswith("upload")]
    down = moved[moved["kind"].str.endswith("download")].set_index("client_id")
    fewer = up["bandwidth_hz"].to_numpy() < down.loc[up["client_id"], "bandwidth_hz"].to_numpy()
    assert fewer.any()
    link = run.link
    for k in up["client_id"][fewer].tolist():
        tables = link.settings.nr.tables[Direction.UPLINK]
        snr = 10 ** (link.best_snr_db(Direction.UPLINK, k)[0] / 10)
        n = int(round(up.set_index("client_id").loc[k, "bandwidth_hz"] / link.settings.block_hz))
        granted = int(round(down.loc[k, "bandwidth_hz"] / link.settings.block_hz))
        goodput = [tables.goodput_bps(np.full(m, snr[m - 1])) for m in range(1, granted + 1)]
        assert goodput[n - 1] == max(goodput) > goodput[granted - 1]
    # placed by the blocks used (docs/model/network.md, issue 61): contiguous from block 0,
    # what the caps leave idle above the cell's last client's blocks
    total = link.settings.blocks[Direction.UPLINK]
    held = pd.DataFrame(link.block_rows, columns=["round", "client", "direction", "cell",
                                                  "first", "blocks"])
    for _, cell in held[held["direction"] == Direction.UPLINK.value].groupby("cell"):
        cell = cell.sort_values("first")
        assert cell["first"].tolist() == [0, *np.cumsum(cell["blocks"]).tolist()[:-1]]
        assert cell["blocks"].sum() <= total
    capped = held[held["client"].isin(up["client_id"][fewer].tolist())
                  & (held["direction"] == Direction.UPLINK.value)]
    assert (held[held["cell"].isin(capped["cell"]) & (held["direction"] == Direction.UPLINK.value)]
            .groupby("cell")["blocks"].sum() < total).all()


def test_harq_waits_longer_with_more_transmissions_allowed():
    from scala_netsim.runner.world import nr_link
    one = nr_link(load_scenario("scenarios/quickstart.yaml", {"network": {
        **NR, "harq_max_transmissions": 1}}))
    four = nr_link(load_scenario("scenarios/quickstart.yaml", {"network": NR}))
    tdd = nr_link(load_scenario("scenarios/quickstart.yaml", {"network": {
        **NR, "duplex": "tdd"}}))
    assert one.tail_s(0.1) == 0.0
    assert four.tail_s(0.1) == pytest.approx(4 * 0.5e-3 * 0.111, rel=1e-12)
    assert tdd.harq_rtt_s == pytest.approx(5 * 0.5e-3)      # DDDSU: a period
    assert math.isclose(four.tail_s(0.0), 0.0)


def test_an_nr_tdd_run_is_re_timed_under_shannon_and_back(tmp_path):
    """A network run under TDD and the NR abstraction writes events.csv with the network's,
    the NR and the TDD columns; it is a re-timing's source (the same learning timed under
    Shannon rates and paired bands equals that run trained), and a Shannon run re-timed
    under NR equals the NR run trained."""
    import scala_netsim as sn

    base = {"algorithms": ["fedavg"], "training.rounds": 2, "data.num_clients": 20,
            **{f"network.{key}": value for key, value in NETWORK.items()}}
    nr_tdd = {"network.link_abstraction": "nr", "network.duplex": "tdd"}
    runs = {}
    for name, overrides in (("nr", nr_tdd), ("shannon", {})):
        runs[name] = sn.run(load_scenario("tests/golden/scenario.yaml", {**base, **overrides}),
                            out=tmp_path / name, echo=False, estimate=False)
    assert {"mcs", "bler", "transmissions", "harq_wait_s", "tdd_wait_s"} <= set(
        runs["nr"].events)
    for name, source, overrides in (("as_shannon", "nr", {}), ("as_nr", "shannon", nr_tdd)):
        retimed = sn.run(load_scenario("tests/golden/scenario.yaml", {**base, **overrides}),
                         out=tmp_path / name, echo=False, estimate=False,
                         retime_from=tmp_path / source, retime_only=True)
        trained = runs["shannon" if source == "nr" else "nr"]
        assert retimed.rounds.equals(trained.rounds)


@pytest.mark.parametrize("algorithm", ["scala"])
def test_tdd_nr_and_round_robin_together_keep_every_invariant(make_run, algorithm):
    """All three of issue 49 at once: every invariant, the air record's rates derived again
    from its stretches under the frame and the tables, no block idle."""
    run = make_run(algorithm, **SECTIONS, network={**NR, "duplex": "tdd",
                                                   "scheduler": "round_robin"})
    run.step()
    run.step()
    assert run.problems() == []
    per_instant_air(run)
    moved = transfers(run)
    assert (moved["transmissions"] > 0).all() and (moved["tdd_wait_s"] >= -1e-12).all()
