"""The report's figures as a reader sees them (issue 61): the effect figure draws uplink and
downlink each where it shows, and no line hides another."""

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from analysis.figures import effect_figure

KEY = "network.uplink_bandwidth_hz"


def drawn_panels(draw, path):
    """Call draw(); -> per visible panel of the figure saved to `path`, its y label and its
    lines as (label, colour, dash pattern, marker, x, y) (the pattern, not get_linestyle(),
    which names every dashed pattern '--')."""
    kept = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, where, **kwargs):
        kept[where] = [(ax.get_ylabel(), [
            (line.get_label(), line.get_color(), line._unscaled_dash_pattern, line.get_marker(),
             np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float))
            for line in ax.get_lines()]) for ax in fig.axes if ax.get_visible()]
        return real_savefig(fig, where, **kwargs)

    plt.Figure.savefig = keep
    try:
        result = draw()
    finally:
        plt.Figure.savefig = real_savefig
    return result, kept[path]


def constructed_runs() -> pd.DataFrame:
    """Two seeds of three algorithms over two bandwidths; each sends as much up as down a
    round (a model each way, activations up and their gradients down), and fedlc's bytes,
    FLOPs and times are fedavg's."""
    rows = []
    for algorithm, mb, times in (("scala", 20.8, (10.0, 2.0)), ("fedavg", 154.7, (5.0, 4.0)),
                                 ("fedlc", 154.7, (5.0, 4.0))):
        for seed, (band, time_s) in itertools.product((0, 1), zip((1e6, 2e6), times,
                                                                  strict=True)):
            rows.append({"algorithm": algorithm, "seed": seed, KEY: band,
                         "final_acc": 0.5 + 0.1 * seed, "uplink_MB_per_round": mb + seed,
                         "downlink_MB_per_round": mb + seed, "time_per_round_s": time_s,
                         "client_GFLOP_per_round": 36.1 if algorithm == "scala" else 514.7})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("with_accuracy", [True, False])
def test_the_effect_figure_shows_uplink_and_downlink_each_and_no_line_hides_another(
        tmp_path, with_accuracy):
    """Issue 61: the effect figure drew a round's downlink dashed over its uplink in the
    uplink's colour; where they carry the same bytes (every algorithm here) the dashed line
    was invisible. Uplink and downlink now have a panel each with every algorithm's mean over
    the seeds, and wherever two lines lie on each other they differ in colour and in line
    style (the one on top shows the other through its gaps), as fedavg's and fedlc's do."""
    runs = constructed_runs()
    path = tmp_path / "effect.png"
    texts, panels = drawn_panels(
        lambda: effect_figure(runs, KEY, [KEY], path, with_accuracy=with_accuracy), path)
    assert path.stat().st_size > 10_000
    ylabels = [ylabel for ylabel, _ in panels]
    assert ylabels == (["final test accuracy (%)"] if with_accuracy else []) + [
        "uplink per round (MB)", "downlink per round (MB)", "simulated time per round (s)",
        "client computation per round (GFLOP)"]
    for ylabel, column in (("uplink per round (MB)", "uplink_MB_per_round"),
                           ("downlink per round (MB)", "downlink_MB_per_round")):
        (lines,) = [lines for label, lines in panels if label == ylabel]
        named = {line[0]: line[5] for line in lines if not line[0].startswith("_")}
        means = runs.groupby(["algorithm", KEY], sort=False)[column].mean()
        assert named.keys() == {"scala", "fedavg", "fedlc"}
        for algorithm, y in named.items():
            np.testing.assert_array_equal(y, means[algorithm].to_numpy())
    for ylabel, lines in panels:
        named = [line for line in lines if not line[0].startswith("_")]
        for a, b in itertools.combinations(named, 2):
            if len(a[5]) == len(b[5]) and np.array_equal(a[5], b[5]):
                assert a[1] != b[1] and a[2] != b[2] and a[3] != b[3], (ylabel, a[0], b[0])
    # the time-per-round lines still cross (scala 10 -> 2 s, fedavg 5 -> 4 s), marked there
    assert any("scala and fedavg: time per round crosses" in t for t in texts)
    (time_lines,) = [lines for label, lines in panels if label.startswith("simulated time")]
    assert [line[3] for line in time_lines].count("X") == 2   # (scala-fedavg, scala-fedlc)


# --- the latency breakdown (analysis.plots.plot_run) -----------------------------------------
def breakdown_drawn(run_dir, tmp_path):
    """plot_run on `run_dir`: -> (the round panel's legend labels, the bar panel's labels)."""
    from analysis.plots import plot_run

    path = run_dir / "latency_breakdown.png"
    kept = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, where, **kwargs):
        if where == path:
            rounds_ax, total_ax = fig.axes
            kept["legend"] = [t.get_text() for t in rounds_ax.get_legend().get_texts()]
            kept["bars"] = [t.get_text() for t in total_ax.get_xticklabels()]
        return real_savefig(fig, where, **kwargs)

    plt.Figure.savefig = keep
    try:
        plot_run(run_dir)
    finally:
        plt.Figure.savefig = real_savefig
    assert path.stat().st_size > 10_000
    return kept["legend"], kept["bars"]


FIVE = ["client compute", "uplink", "downlink", "server compute", "waiting"]


def test_a_run_without_waits_keeps_its_five_parts_from_rounds_csv(tmp_path):
    """The golden FedAvg run (paired bands, no radio columns): the breakdown is rounds.csv's
    critical path as it was, five parts."""
    import shutil

    from analysis import read_rounds
    from analysis.plots import critical_path_parts
    from scala_netsim.core.columns import CRITICAL_PATH_COLUMNS

    from conftest import ROOT

    run = tmp_path / "fedavg"
    shutil.copytree(ROOT / "tests" / "golden" / "fedavg", run)
    rounds = read_rounds(run)
    pd.testing.assert_frame_equal(critical_path_parts(run, rounds),
                                  rounds[list(CRITICAL_PATH_COLUMNS)])
    assert breakdown_drawn(run, tmp_path) == (FIVE, FIVE)


def test_the_breakdown_shows_a_tdd_frames_waits_apart_and_still_sums_to_the_round(tmp_path):
    """Issue 61: under network.duplex: tdd a transfer waits for its direction's symbols (an
    upload for its grant, K2, too): events.csv's tdd_wait_s. The breakdown counted those
    waits as uplink and downlink; now each direction's TDD wait is a part of its own, the
    parts still add up to the round's time, each direction's air time and wait to rounds.csv's
    time of that direction, and the rest are rounds.csv's. In FedAvg's round the critical path
    is the last upload's client's download, local steps and upload: its two transfers'
    tdd_wait_s are the waits."""
    import scala_netsim as sn
    from analysis import read_rounds
    from scala_netsim import load_scenario

    results = sn.run(load_scenario("tests/golden/scenario.yaml", {
        "algorithms": ["fedavg"], "training.rounds": 2, "network.duplex": "tdd"}),
        out=tmp_path, echo=False, estimate=False)
    run = results.runs[0].folder
    legend, bars = breakdown_drawn(run, tmp_path)
    parts_shown = ["client compute", "uplink", "uplink: TDD wait", "downlink",
                   "downlink: TDD wait", "server compute", "waiting"]
    assert legend == bars == parts_shown
    from analysis.plots import critical_path_parts

    rounds = read_rounds(run)
    parts = critical_path_parts(run, rounds)
    assert list(parts.columns) == ["compute_time_s", "uplink_time_s", "uplink_tdd_wait_s",
                                   "downlink_time_s", "downlink_tdd_wait_s", "server_time_s",
                                   "idle_time_s"]
    np.testing.assert_allclose(parts.sum(axis=1), rounds["round_time_s"], rtol=1e-12)
    for direction in ("uplink", "downlink"):
        np.testing.assert_allclose(
            parts[f"{direction}_time_s"] + parts[f"{direction}_tdd_wait_s"],
            rounds[f"{direction}_time_s"], rtol=1e-12)
    for column in ("compute_time_s", "server_time_s", "idle_time_s"):
        assert parts[column].tolist() == rounds[column].tolist()
    events = results.events
    for i, r in enumerate(rounds["round"]):
        own = events[events["round"] == r]
        last = own[own["kind"] == "model_upload"].sort_values("t_end_s").iloc[-1]
        download = own[(own["kind"] == "model_download")
                       & (own["client_id"] == last["client_id"])].iloc[0]
        assert parts["uplink_tdd_wait_s"][i] == last["tdd_wait_s"] > 0
        assert parts["downlink_tdd_wait_s"][i] == download["tdd_wait_s"] > 0
        assert parts["uplink_time_s"][i] == pytest.approx(
            8.0 * last["payload_bytes"] / last["rate_bps"], rel=1e-12)


@pytest.mark.slow
def test_the_breakdown_shows_harq_waits_stalls_and_the_backhaul_apart(tmp_path):
    """Under the NR link abstraction in a TDD network with a backhaul, SCALA's transfers on
    the critical path also wait for their last block's HARQ retransmissions (harq_wait_s),
    stall below their lowest MCS (air time less the slots they sent in) and cross the
    backhaul (backhaul_s, which tdd_wait_s holds too): each a part of its own, and the parts
    add up to the round's time, each direction's to rounds.csv's."""
    pytest.importorskip("sionna.sys", reason="the optional extra [sionna] (Python 3.11+)")
    import scala_netsim as sn
    from analysis import read_rounds
    from analysis.plots import critical_path_parts
    from scala_netsim import load_scenario

    results = sn.run(load_scenario("tests/golden/scenario.yaml", {
        "algorithms": ["scala"], "training.rounds": 2, "data.num_clients": 40,
        "network.layout": {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3},
        "network.pathloss": "3gpp_38901_uma", "network.carrier_frequency_hz": 3.5e9,
        "network.bs_tx_power_w": 40.0, "network.link_abstraction": "nr",
        "network.duplex": "tdd", "network.backhaul": {"latency_s": 0.002}}),
        out=tmp_path, echo=False, estimate=False)
    run = results.runs[0].folder
    rounds = read_rounds(run)
    parts = critical_path_parts(run, rounds)
    waits = [f"{d}_{w}_s" for d in ("uplink", "downlink")
             for w in ("tdd_wait", "harq_wait", "backhaul")] + ["uplink_stalled_s"]
    assert set(waits) <= set(parts.columns)
    assert (parts[waits].sum() > 0).all()
    legend, bars = breakdown_drawn(run, tmp_path)
    assert legend == bars and {"uplink: HARQ wait", "uplink: stalled (NR)", "uplink: backhaul",
                               "downlink: TDD wait", "downlink: backhaul"} <= set(legend)
    np.testing.assert_allclose(parts.sum(axis=1), rounds["round_time_s"], rtol=1e-12)
    for direction in ("uplink", "downlink"):
        mine = [c for c in parts.columns if c.startswith(direction)]
        np.testing.assert_allclose(parts[mine].sum(axis=1), rounds[f"{direction}_time_s"],
                                   rtol=1e-12)
    # no part is negative, and a direction's backhaul is at most its transfers' in the round
    assert (parts >= 0).all().all()
    events = results.events
    for direction, kinds in (("uplink", ("activation_upload", "model_upload")),
                             ("downlink", ("gradient_download", "model_download"))):
        backhaul = events[events["kind"].isin(kinds)].groupby("round")["backhaul_s"].sum()
        assert (parts[f"{direction}_backhaul_s"].to_numpy() <= backhaul.to_numpy()).all()
