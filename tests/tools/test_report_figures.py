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
