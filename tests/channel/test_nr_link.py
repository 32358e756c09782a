"""The NR link abstraction (channel.nr_link) against Sionna, its referee: transport blocks
equal to calculate_tb_size, BLER and TBLER equal to PHYAbstraction's, the MCS equal to
InnerLoopLinkAdaptation's, the effective SINR equal to EESM's; and its numbers by hand."""

import math

import numpy as np
import pytest

from channel import Direction, nr_link

sionna_sys = pytest.importorskip("sionna.sys", reason="the optional extra [sionna] (Python 3.11+)")
torch = pytest.importorskip("torch")
nr_utils = pytest.importorskip("sionna.phy.nr.utils")

SLOT_S = 0.5e-3
MAX_BLOCKS = 51
pytestmark = pytest.mark.slow   # Sionna's tables take about 5 s to build, once a process


def tables(direction=Direction.DOWNLINK, mcs_table="256qam", target=0.1):
    return nr_link.tables(direction, mcs_table, MAX_BLOCKS, SLOT_S, target)


@pytest.mark.parametrize("mcs_table", ["64qam", "256qam"])
def test_transport_blocks_equal_sionnas_calculate_tb_size(mcs_table):
    t = tables(mcs_table=mcs_table)
    index = nr_link.MCS_TABLES[mcs_table]
    blocks = np.array([1, 2, 3, 5, 8, 13, 24, 37, 51])
    for row, mcs in enumerate(t.mcs.tolist()):
        order, rate = nr_utils.decode_mcs_index(mcs, table_index=index, is_pusch=False,
                                                device="cpu")
        tb, cbs, num_cb, *_ = nr_utils.calculate_tb_size(
            torch.full((len(blocks),), int(order)), torch.full((len(blocks),), float(rate)),
            num_prbs=torch.as_tensor(blocks), num_ofdm_symbols=nr_link.SYMBOLS,
            num_dmrs_per_prb=nr_link.DMRS_PER_BLOCK, num_ov=nr_link.OVERHEAD_PER_BLOCK,
            return_cw_length=False, device="cpu")
        assert t.tb_bits[row, blocks].tolist() == tb.numpy().astype(float).tolist()
        assert t.num_cb[row, blocks].tolist() == num_cb.numpy().astype(float).tolist()


@pytest.mark.parametrize("direction", list(Direction))
def test_bler_and_tbler_equal_phy_abstractions_lookup(direction):
    t = tables(direction)
    phy, _ = nr_link.sionna_tables()
    category, bler_index = nr_link.BLER_TABLE[direction, "256qam"]
    rng = np.random.default_rng(1)
    for row, mcs in enumerate(t.mcs.tolist()):
        for n in (1, 4, 51):
            sinr = 10 ** (rng.uniform(-6, 32, 8) / 10)
            ours = np.array([nr_link.transport_bler(row, n, s, t.num_cb, t.cbs_row, t.bler,
                                                    t.snr_db[0], t.snr_db[1]) for s in sinr])
            *_, tbler, _ = phy(torch.full((8,), mcs, dtype=torch.int32),
                               sinr_eff=torch.as_tensor(sinr),
                               num_allocated_re=torch.full((8,), n * nr_link.RE_PER_BLOCK),
                               mcs_table_index=bler_index, mcs_category=category)
            # Sionna decodes the MCS of its own (category, index): the same Q_m and R as
            # ours for the 64QAM tables and for PDSCH table 2, whose numbers we read
            # below the grid (its first point -5 dB less half a step) nothing decodes,
            # where Sionna's lookup clamps to the grid's first point (issue 61)
            below = 10 * np.log10(sinr) < t.snr_db[0] - t.snr_db[1] / 2
            assert (ours[below] == 1.0).all()
            np.testing.assert_allclose(ours[~below], tbler.numpy()[~below], rtol=1e-12, atol=0)


@pytest.mark.parametrize("direction", list(Direction))
def test_the_mcs_is_inner_loop_link_adaptations_choice(direction):
    t = tables(direction)
    phy, _ = nr_link.sionna_tables()
    category, bler_index = nr_link.BLER_TABLE[direction, "256qam"]
    illa = sionna_sys.InnerLoopLinkAdaptation(phy, bler_target=0.1, precision="double",
                                              device="cpu")
    sinr_db = np.arange(-6.0, 32.0, 0.37)
    for n in (1, 3, 20, 51):
        chosen = illa(sinr_eff=torch.as_tensor(10 ** (sinr_db / 10)),
                      num_allocated_re=torch.full((len(sinr_db),), n * nr_link.RE_PER_BLOCK),
                      mcs_table_index=bler_index, mcs_category=category).numpy()
        ours = [t.choose(np.full(n, 10 ** (s / 10)))[0] for s in sinr_db]
        # (where no MCS meets the target both take the lowest)
        assert ours == chosen.tolist()
        assert ours[0] == t.mcs[0] and ours[-1] > ours[0]


def test_the_effective_sinr_is_eesms():
    _, betas = nr_link.sionna_tables()
    eesm = sionna_sys.EESM(precision="double", device="cpu")
    rng = np.random.default_rng(2)
    sinr = 10 ** (rng.uniform(-5, 25, (6, 12)) / 10)             # 6 transfers x 12 blocks
    for mcs in (3, 10, 20, 27):
        expected = eesm(torch.as_tensor(sinr.T[None, :, :, None]),
                        torch.full((6,), mcs), mcs_table_index=2).numpy()
        ours = [nr_link.effective_sinr(s, betas[2][mcs]) for s in sinr]
        np.testing.assert_allclose(ours, expected, rtol=1e-12)


def test_goodput_by_hand_and_no_mcs_below_the_tables():
    t = tables()
    n, sinr = 10, 10 ** (12.0 / 10)
    mcs, tbler, eff = t.choose(np.full(n, sinr))
    row = int(np.flatnonzero(t.mcs == mcs)[0])
    assert eff == sinr and 0 <= tbler <= 0.1
    assert t.goodput_bps(np.full(n, sinr)) == t.tb_bits[row, n] * (1 - tbler) / SLOT_S
    # the next MCS up misses the target: link adaptation took the highest that meets it
    if row + 1 < len(t.mcs):
        assert nr_link.transport_bler(row + 1, n, sinr, t.num_cb, t.cbs_row, t.bler,
                                      *t.snr_db[:2]) > 0.1
    # below the lowest MCS's curve: that MCS, every block lost, nothing delivered
    assert t.choose(np.full(n, 10 ** (-8 / 10)))[:2] == (t.mcs[0], 1.0)
    assert t.goodput_bps(np.full(n, 10 ** (-8 / 10))) == 0.0
    # a stricter target never picks a higher MCS
    strict = nr_link.tables(Direction.DOWNLINK, "256qam", MAX_BLOCKS, SLOT_S, 0.01)
    assert strict.choose(np.full(n, sinr))[0] <= mcs


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("mcs_table", ["64qam", "256qam"])
def test_below_the_bler_grid_nothing_decodes(direction, mcs_table):
    """Issue 61 (2): Sionna's BLER grid runs from -5 to 30 dB in 0.1 dB steps, read at the
    nearest point; below its first point's half step (-5.05 dB) no MCS decodes (TBLER 1,
    nothing delivered; Sionna's lookup would clamp to -5 dB), so the least SINR that
    delivers anything is finite on every block count, for both tables."""
    t = tables(direction, mcs_table)
    first, step, count = t.snr_db
    assert (first, step, count) == (-5.0, 0.1, 351)
    edge_db = first - step / 2
    for n in (1, 5, 51):
        for sinr_db in (-10.2, edge_db - 1e-6):
            sinr = np.full(n, 10 ** (sinr_db / 10))
            assert t.choose(sinr)[:2] == (t.mcs[0], 1.0)
            assert t.goodput_bps(sinr) == 0.0
        # at the grid's first point: its first column's TBLER, 1 - (1 - BLER)^C
        at_first = nr_link.transport_bler(0, n, 10 ** (first / 10), t.num_cb, t.cbs_row, t.bler,
                                          first, step)
        assert at_first == 1 - (1 - t.bler[0, t.cbs_row[0, n], 0]) ** t.num_cb[0, n]
    lowest = t.lowest_sinr_db()[1:]
    assert np.isfinite(lowest).all() and (lowest >= edge_db).all()


def test_harq_tail_is_the_truncated_geometric_sum():
    assert nr_link.harq_tail_slots(0.1, 4) == pytest.approx(0.1 + 0.01 + 0.001, rel=1e-15)
    assert nr_link.harq_tail_slots(0.1, 1) == 0.0
    assert nr_link.harq_tail_slots(0.0, 4) == 0.0
    assert math.isclose(nr_link.harq_tail_slots(0.5, 50), 1.0, rel_tol=1e-12)


def looked_up_row_by_row(t, sinr):
    """Link adaptation as its definition reads: the EESM and TBLER of every row, highest
    first, the first that meets the target, else the lowest."""
    low, high = 10 ** (nr_link.SINR_EFF_DB[0] / 10), 10 ** (nr_link.SINR_EFF_DB[1] / 10)
    for row in range(len(t.beta) - 1, -1, -1):
        eff = (min(max(sinr[0], low), high) if sinr.min() == sinr.max()
               else nr_link.effective_sinr(sinr, t.beta[row]))
        p = nr_link.transport_bler(row, len(sinr), eff, t.num_cb, t.cbs_row, t.bler,
                                   *t.snr_db[:2])
        if p <= t.bler_target or row == 0:
            return int(t.mcs[row]), p, eff


@pytest.mark.parametrize("direction", [Direction.UPLINK, Direction.DOWNLINK])
def test_bounds_choose_as_looking_every_row_up(direction):
    """`choose` skips the EESM of rows whose first column meeting the target lies above the
    mean SINR's: the same MCS, TBLER and SINR_eff, to the bit, as every row looked up, on
    blocks at spread SINRs from below the lowest MCS to above the highest."""
    t = tables(direction)
    assert (t.meets[:, 1:] >= 0).mean() > 0.95       # the bounds decide nearly every row
    rng = np.random.default_rng(7)
    for _ in range(3000):
        n = int(rng.integers(1, MAX_BLOCKS + 1))
        centre, spread = rng.uniform(-12, 35), rng.choice([0.0, 0.05, 1.0, 6.0])
        sinr = 10 ** ((centre + spread * rng.standard_normal(n)) / 10)
        assert t.choose(sinr) == looked_up_row_by_row(t, sinr)
