"""docs/model/network.md's NR numbers come from the tables they describe (issue 61): its table
of carriers is channel.nr.MAX_BLOCKS (TS 38.101-1 Table 5.3.2-1), and the BLER grid's range
and lower edge it quotes are those of Sionna's tables as channel.nr_link loads them."""

from pathlib import Path

import pytest

import channel

NETWORK_MD = Path(__file__).resolve().parents[2] / "docs" / "model" / "network.md"


def test_the_carriers_table_is_the_one_the_network_counts_blocks_by():
    text = NETWORK_MD.read_text()
    start = text.index("| subcarrier spacing | channel bandwidth (MHz): N_RB |")
    rows = text[start:].split("\n\n")[0].splitlines()[2:]
    assert rows == [f"| {spacing_hz / 1e3:g} kHz | "
                    + ", ".join(f"{band_hz / 1e6:g}: {blocks}" for band_hz, blocks
                                in carriers.items()) + " |"
                    for spacing_hz, carriers in channel.nr.MAX_BLOCKS.items()]
    assert max(max(c.values()) for c in channel.nr.MAX_BLOCKS.values()) <= 275


@pytest.mark.slow   # Sionna's tables: about 5 s to build
def test_the_bler_grid_quoted_is_sionnas():
    pytest.importorskip("sionna.sys", reason="the optional extra [sionna] (Python 3.11+)")
    text = " ".join(NETWORK_MD.read_text().split())
    for mcs_table in channel.nr_link.MCS_TABLES:
        first, step, count = channel.nr_link.tables(channel.Direction.UPLINK, mcs_table, 1,
                                                    0.5e-3, 0.1).snr_db
        assert f"{step:g} dB from {first:g} to {first + (count - 1) * step:g} dB" in text
        assert f"under {first - step / 2:g} dB" in text
