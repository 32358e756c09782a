"""The network study's report, tables and quoted numbers come from its kept run records:
report.md is the one analysis.network writes from the tables beside it, the tables are the
ones it writes from the records in results/ and load/, and the README and the studies index
quote its one-line summary as written."""

from pathlib import Path

import pandas as pd
import pytest

from analysis import network

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "network"


def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return tuple(pd.read_csv(STUDY / f"{name}.csv")   # type: ignore[return-value]
                 for name in ("stretch", "round_times", "stragglers", "spectrum"))


def test_the_report_is_the_one_written_from_its_tables():
    assert (STUDY / "report.md").read_text() == network.report(*tables())


def test_the_readme_and_the_index_quote_the_summary_as_written():
    line = network.summary_line(*tables())
    assert line in (ROOT / "README.md").read_text()
    assert line in (ROOT / "docs" / "studies" / "index.md").read_text()


def test_the_tables_are_the_ones_written_from_the_kept_records():
    """The load runs are kept slim (scenario, rounds, summary: issue 46): every column but
    the cells with more clients than blocks, which reads their demands (regenerated to their
    digests by tests/tools/test_regenerate.py, so they give the same count); the straggler
    table, from a run kept slim: the slow test below."""
    stretch, round_times, _, _ = tables()
    rebuilt = network.stretch(pd.read_csv(STUDY / "results" / "comparison.csv"))
    pd.testing.assert_frame_equal(rebuilt, stretch, check_exact=False, rtol=1e-12)
    slim = network.round_times(STUDY / "load")
    assert slim["cells_over_blocks"].isna().all()
    pd.testing.assert_frame_equal(slim.drop(columns="cells_over_blocks"),
                                  round_times.drop(columns="cells_over_blocks"),
                                  check_exact=False, rtol=1e-12)


@pytest.mark.slow
def test_the_straggler_and_spectrum_tables_come_back_from_regenerated_records(tmp_path):
    """The 7-site network's SCALA run of seed 2, regenerated from its kept slim record (python
    -m scala_netsim.tools.regenerate), gives its rows of the straggler and spectrum tables as
    kept."""
    from scala_netsim.tools.regenerate import regenerate_run

    _, _, stragglers, spectrum = tables()
    run = tmp_path / "scala" / "cell=uma_7sites" / "seed2"
    regenerate_run(STUDY / "results" / "scala" / "cell=uma_7sites" / "seed2", run)
    kept = stragglers[stragglers["seed"] == 2].drop(columns="seed").reset_index(drop=True)
    pd.testing.assert_frame_equal(network.stragglers(run), kept, check_exact=False,
                                  rtol=1e-12)
    rebuilt = network.spectrum(tmp_path)
    pd.testing.assert_frame_equal(
        rebuilt, spectrum[(spectrum["case"] == "uma_7sites") & (spectrum["seed"] == 2)]
        .reset_index(drop=True), check_exact=False, rtol=1e-12)


def test_the_comparison_is_rebuilt_from_the_kept_records():
    """The comparison the stretch table reads comes out of the kept slim records (rounds.csv
    and summary.json are all a comparison row reads)."""
    from analysis.compare import comparison_table

    kept = pd.read_csv(STUDY / "results" / "comparison.csv")
    rebuilt = comparison_table(STUDY / "results", [0.6, 0.7, 0.8])
    columns = ["algorithm", "seed", "cell", "time_to_0.7_s", "time_to_0.8_s", "best_acc",
               "final_acc", "total_sim_time_s", "uplink_bytes"]
    pd.testing.assert_frame_equal(rebuilt[columns].reset_index(drop=True),
                                  kept[columns].reset_index(drop=True))


def test_a_run_trained_on_a_gpu_re_times_a_cell_of_device_auto():
    """The per-round FedAvg seed 2 (the headline's until issue 46) was trained on a lent GPU
    (`device: cuda` in its scenario.yaml): the network study's cells (`device: auto`) are
    re-timed from it, as the device is no learning setting of a re-timing; anything else
    that differs still refuses."""
    from scala_netsim.config.scenario import load_scenario
    from scala_netsim.runner.replay import Record, RecordError

    kept = (ROOT / "docs" / "studies" / "cellular_10pct" / "variants"
            / "fedavg.optimizer_state=per_round" / "fedavg" / "seed2")
    record = Record.load(kept)
    assert record.scenario.device == "cuda"
    cell = load_scenario(kept / "scenario.yaml", ["device=auto", "name=network",
                                                  "network.pathloss=3gpp_38901_uma"])
    record.check_learns_as(cell, "fedavg")
    with pytest.raises(RecordError, match="differ in training.lr"):
        record.check_learns_as(load_scenario(kept / "scenario.yaml", ["training.lr=0.02"]),
                               "fedavg")


def test_the_load_studys_block_count_is_its_scenarios():
    """analysis.network counts the cells with more clients than LOAD_BLOCKS (analysis/ does
    not import channel/): the load scenario's band and spacing give that many."""
    import channel
    from scala_netsim.config.scenario import load_scenario

    net = load_scenario(ROOT / "scenarios" / "network_load.yaml").network
    for bandwidth_hz in (net.uplink_bandwidth_hz, net.downlink_bandwidth_hz):
        assert channel.nr.resource_blocks(bandwidth_hz, net.subcarrier_spacing_hz) == \
            network.LOAD_BLOCKS
