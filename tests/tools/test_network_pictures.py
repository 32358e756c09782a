"""A network run's pictures (issue 63): the map, the SINR CDF and a round's timeline, each
read back from what it drew and checked against the run's files, which the pictures module
does not compute them from in the same way (demands.csv for who was selected, air.csv and
events.csv recomputed here)."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from analysis.network_pictures import (
    DOWNLINK,
    UPLINK,
    median_round,
    network_map_figure,
    read_network_run,
    round_timeline_figure,
    sinr_cdf_figure,
    transfer_parts,
)
from scala_netsim.core.files import NETWORK_FIGURES, RUN_FIGURES

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
#: one worker runs the module's one network run (its fixture) for all its tests
pytestmark = pytest.mark.xdist_group("pictures")
#: FedAvg timing only in 7 sites x 3 sectors of UMa at 3.5 GHz, TDD + NR + round robin, 40
#: clients, 10 a round, a 100 s deadline that drops some of them
SETTINGS = ["timing_only=true", "algorithms=[fedavg]", "data.num_clients=40",
            "training.participation=0.25", "training.rounds=3", "data.test_samples=100",
            "data.train_samples=2000",
            "network.layout={kind: hexagonal, sites: 7, isd_m: 500, sectors: 3}",
            "network.pathloss=3gpp_38901_uma", "network.carrier_frequency_hz=3.5e9",
            "network.duplex=tdd", "network.link_abstraction=nr", "network.scheduler=round_robin",
            "network.bs_tx_power_w=40", "training.deadline_s=100"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from scala_netsim.cli import main

    out = tmp_path_factory.mktemp("pictures")
    args = [str(ROOT / "scenarios" / "cellular_10pct.yaml"), "--out", str(out),
            "--no-progress", "--no-report"]
    for setting in SETTINGS:
        args += ["--set", setting]
    assert main(args) == 0
    return out / "cellular_10pct" / "fedavg" / "seed0"


@pytest.fixture(scope="module")
def run(run_dir):
    return read_network_run(run_dir)


def by_gid(ax, prefix):
    return [c for c in ax.collections if (c.get_gid() or "").startswith(prefix)]


def test_the_command_writes_the_three_pictures_beside_the_runs_figures(run_dir, tmp_path):
    for name in NETWORK_FIGURES + RUN_FIGURES[2:]:
        assert (run_dir / name).stat().st_size > 10_000, name
    assert read_network_run(tmp_path) is None        # (the paper's cell: no cells.csv)


def test_the_map_draws_every_client_where_it_was_dropped_by_cell_and_state(run):
    fig = network_map_figure(run)
    left, right = fig.axes[:2]
    clients = run.clients.set_index("client_id")
    palette = plt.get_cmap("tab20")
    drawn = 0
    for collection in by_gid(left, "clients"):
        los, indoor = (int(p.split("=")[1]) for p in collection.get_gid().split()[1:])
        group = clients[(clients["los"] == los) & (clients["indoor"] == indoor)].sort_index()
        assert np.allclose(collection.get_offsets(), group[["x_m", "y_m"]].to_numpy())
        colors = collection.get_edgecolors() if indoor else collection.get_facecolors()
        expected = [palette(c % 20) for c in group["serving_cell"]]
        assert np.allclose(colors, expected)
        assert (collection.get_facecolors().size == 0) == bool(indoor)   # hollow indoors
        drawn += len(group)
    assert drawn == len(clients) == 40
    sites = run.cells.drop_duplicates("site")
    assert len([p for p in left.patches if p.__class__.__name__ == "RegularPolygon"]) == 7
    assert np.allclose(left.collections[0].get_offsets(), sites[["x_m", "y_m"]].to_numpy())

    round_ = median_round(run.rounds)
    demands = pd.read_csv(run.folder / "demands.csv")
    selected = sorted(demands.loc[demands["round"] == round_, "client_id"])
    dropped = sorted(run.events.loc[(run.events["round"] == round_)
                                    & (run.events["kind"] == "client_dropped"), "client_id"])
    assert len(selected) == 10 and dropped              # the deadline drops some
    for gid, who in (("selected", selected), ("dropped", dropped)):
        (collection,) = by_gid(right, gid)
        assert np.allclose(collection.get_offsets(), clients.loc[who, ["x_m", "y_m"]])
    plt.close(fig)


def test_the_sinr_cdf_steps_through_each_clients_mean_and_each_transfer(run):
    fig = sinr_cdf_figure(run)
    lines = {line.get_gid(): line for line in fig.axes[0].get_lines()}
    events = pd.read_csv(run.folder / "events.csv")
    for name, kinds in (("uplink", UPLINK), ("downlink", DOWNLINK)):
        rows = events[events["kind"].isin(kinds) & events["sinr_db"].notna()]
        means = np.sort([g["sinr_db"].mean() for _, g in rows.groupby("client_id")])
        for what, values in (("clients' mean", means), ("transfers", np.sort(rows["sinr_db"]))):
            line = lines[f"{name} {what}"]
            assert np.allclose(line.get_xdata(), values)
            assert np.allclose(line.get_ydata(), np.arange(1, len(values) + 1) / len(values))
    plt.close(fig)


def test_a_transfers_parts_tile_it_and_its_bits_take_their_air_time(run):
    """Every transfer of the run: its parts follow one another from its start to its end,
    and its bits take payload x attempts / rate (its time on its blocks less the waits for
    the direction's symbols)."""
    air = run.air.groupby("event_index")
    transfers = run.events[run.events["kind"].isin(UPLINK + DOWNLINK)]
    for index, event in transfers.iterrows():
        parts = transfer_parts(event, air.get_group(index) if index in air.groups
                               else run.air.iloc[:0], tdd=True)
        assert parts[0][1] == pytest.approx(event["t_start_s"], abs=1e-9)
        assert parts[-1][2] == pytest.approx(event["t_end_s"], abs=1e-9)
        for (_, _, end), (_, start, _) in zip(parts, parts[1:], strict=False):
            assert start == pytest.approx(end, abs=1e-9)
        if index in air.groups:
            bits = sum(e - s for part, s, e in parts if part == "bits")
            airtime = event["attempts"] * 8 * event["payload_bytes"] / event["rate_bps"]
            assert bits == pytest.approx(airtime, rel=1e-9)


def test_the_timeline_draws_the_rounds_clients_and_the_busiest_cells_blocks(run):
    round_ = median_round(run.rounds)
    fig = round_timeline_figure(run)
    rows_ax, up_ax, down_ax = fig.axes
    events = run.events[run.events["round"] == round_]
    clients = sorted(set(events.loc[events["client_id"] >= 0, "client_id"]))
    labels = [t.get_text() for t in rows_ax.get_yticklabels()]
    assert labels[0] == "server" and sorted(map(int, labels[1:])) == clients
    # each client's compute, as events.csv times it
    for y, label in enumerate(labels[1:], start=1):
        client = int(label)
        compute = events[(events["client_id"] == client)
                         & events["kind"].isin(["client_forward", "client_backward"])]
        drawn = sum(w for c in rows_ax.collections if c.get_gid() == f"compute {y}"
                    for _, w in _spans(c))
        assert drawn == pytest.approx((compute["t_end_s"] - compute["t_start_s"]).sum())
    # the busiest cell: the most blocks x seconds in the round, recomputed from air.csv
    air = pd.read_csv(run.folder / "air.csv")
    mine = air[air["event_index"].isin(events.index)]
    held = (mine["blocks"] * (mine["end_s"] - mine["start_s"])).groupby(mine["cell"]).sum()
    cell = int(held.idxmax())
    for ax, direction in ((up_ax, "uplink"), (down_ax, "downlink")):
        assert ax.get_title().startswith(f"cell {cell}, {direction}")
        rows = mine[(mine["cell"] == cell) & (mine["direction"] == direction)]
        boxes = sorted((p.get_x(), p.get_y(), p.get_width(), p.get_height())
                       for p in ax.patches)
        expected = sorted(zip(rows["start_s"], rows["first_block"],
                              rows["end_s"] - rows["start_s"], rows["blocks"], strict=True))
        assert np.allclose(boxes, expected)
    plt.close(fig)


def _spans(collection):
    """(x, width) of each bar of a broken_barh collection."""
    out = []
    for path in collection.get_paths():
        xs = path.vertices[:, 0]
        out.append((xs.min(), xs.max() - xs.min()))
    return out


def test_a_transfer_without_air_rows_is_its_waits_and_a_download_crosses_the_backhaul_first():
    """Parts of transfers built by hand (no run): a download's backhaul comes before its air;
    one cut before it got blocks is a wait, not symbols; an upload's backhaul comes last."""
    empty = pd.DataFrame(columns=["start_s", "end_s"])
    down = pd.Series({"kind": "model_download", "t_start_s": 1.0, "t_end_s": 4.0,
                      "harq_wait_s": 0.5, "backhaul_s": 1.0, "rate_bps": 8e6,
                      "payload_bytes": 1e6, "attempts": 1})
    assert transfer_parts(down, empty, tdd=True) == [
        ("backhaul", 1.0, 2.0), ("bits", 2.0, 3.0), ("grant", 3.0, 3.5), ("harq", 3.5, 4.0)]
    air = pd.DataFrame({"start_s": [2.5], "end_s": [3.5]})
    assert transfer_parts(down, air, tdd=True) == [
        ("backhaul", 1.0, 2.0), ("grant", 2.0, 2.5), ("bits", 2.5, 3.5), ("harq", 3.5, 4.0)]
    up = pd.Series({"kind": "model_upload", "t_start_s": 0.0, "t_end_s": 6.0,
                    "harq_wait_s": 0.0, "backhaul_s": 1.0, "rate_bps": 4e6,
                    "payload_bytes": 1e6, "attempts": 1})
    air = pd.DataFrame({"start_s": [1.0, 2.0], "end_s": [2.0, 5.0]})
    assert transfer_parts(up, air, tdd=True) == [
        ("grant", 0.0, 1.0), ("bits", 1.0, 3.0), ("symbols", 3.0, 5.0), ("backhaul", 5.0, 6.0)]
