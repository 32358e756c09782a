"""scala_netsim.tools.carried_load (issue 63): the share of each cell's blocks' time FTP model
3's files carry at an offered load, every file simulated with the learning silent: a row per
load and direction, written where asked; a lone cell's downlink carries its offered load
within its sampling error; bad input exits 2."""

from pathlib import Path

import pandas as pd

from scala_netsim.tools import carried_load

ROOT = Path(__file__).resolve().parents[2]
ONE_SITE = ["data.num_clients=20", "data.train_samples=1000", "data.test_samples=200",
            "model.arch=alexnet14", "algorithms=[scala]",
            "network.layout={kind: hexagonal, sites: 1, sectors: 1}",
            "network.pathloss=3gpp_38901_uma", "network.carrier_frequency_hz=3.5e9",
            "network.scheduler=round_robin", "network.bs_tx_power_w=40"]


def test_a_row_per_load_and_direction_written_as_printed(tmp_path, capsys):
    out = tmp_path / "carried.csv"
    args = [str(ROOT / "scenarios" / "cellular_10pct.yaml"), "--load", "0.2", "0.6",
            "--seconds", "60", "--out", str(out)]
    for override in ONE_SITE:
        args += ["--set", override]
    assert carried_load.main(args) == 0
    table = pd.read_csv(out)
    assert tuple(table.columns) == carried_load.CARRIED_COLUMNS
    assert list(zip(table["offered_load"], table["direction"], strict=True)) == [
        (0.2, "uplink"), (0.2, "downlink"), (0.6, "uplink"), (0.6, "downlink")]
    assert (table["cells"] == 1).all() and (table["files"] > 0).all()
    # a lone cell's downlink (the same power a block: a file's block-seconds whatever it
    # shares) carries its offered load, here within 0.1 over 60 s of files
    down = table[table["direction"] == "downlink"].set_index("offered_load")["carried_load"]
    assert abs(down[0.2] - 0.2) < 0.1 and abs(down[0.6] - 0.6) < 0.1
    assert capsys.readouterr().out.count("offered_load") == 4


def test_bad_input_exits_2(tmp_path, capsys):
    assert carried_load.main([str(ROOT / "scenarios" / "cellular_10pct.yaml"), "--load", "0.3",
                              "--seconds", "0"]) == 2
    assert "--seconds: must be > 0, got 0" in capsys.readouterr().err
    assert carried_load.main([str(ROOT / "scenarios" / "cellular_10pct.yaml"), "--load", "1.2",
                              "--set", "network.scheduler=round_robin"]) == 2
    assert "offered_load: must be in [0, 1)" in capsys.readouterr().err
