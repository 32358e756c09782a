"""Pictures of a network run, from its files alone (cells.csv, clients.csv, events.csv,
air.csv, rounds.csv and scenario.yaml): what Sionna's and 5G-LENA's tutorials open with.

- `network_map.png`: the sites, their hexagons and sectors' boresights; each client where it
  was dropped, coloured by its serving cell, its marker by LOS/NLOS, hollow indoors; beside
  it the same clients coloured by their mean uplink SINR (the mean in dB over their uploads'
  SINRs; grey: never selected), the shown round's selected clients ringed and its dropped
  ones crossed out.
- `sinr_cdf.png`: the CDF over clients of each one's mean SINR up and down (its uploads',
  its downloads'), and the CDF over the transfers themselves.
- `round_timeline.png`: one round (the median round by round time unless asked: the one a
  reader should see), one row per client: compute, each transfer's waits (for its grant or
  blocks, for the backhaul) at their instants, its time on the air split into moving bits
  and waiting for the direction's symbols (TDD: drawn as shares of its time on the air, not
  at their instants, which come every frame), its HARQ tail, and the server's steps; under it
  the busiest cell's blocks over the round, up and down, each transfer's blocks in its
  client's colour.

Each `*_figure` returns the matplotlib Figure (the tests read back what it drew);
`plot_network_run` writes the three files beside the run's other figures."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle, RegularPolygon  # noqa: E402

from analysis.cells import DOWNLINK, UPLINK  # noqa: E402
from scala_netsim.core.events import CLIENT_COMPUTE_KINDS  # noqa: E402
from scala_netsim.core.files import (  # noqa: E402
    AIR_CSV,
    CELLS_CSV,
    CLIENTS_CSV,
    EVENTS_CSV,
    NETWORK_FIGURES,
    ROUNDS_CSV,
    SCENARIO_YAML,
    run_file,
)
from scala_netsim.core.results import read_record  # noqa: E402

COMPUTE = sorted(k.value for k in CLIENT_COMPUTE_KINDS)
SERVER_STEP = "server_step"
#: the parts of a client's row in the timeline, in the legend's order, and their colours
PARTS = {"compute": "C2", "grant": "0.75", "backhaul": "C5", "bits": "C0",
         "symbols": "C9", "harq": "C3", "server": "C1"}
PART_LABELS = {"compute": "client compute", "grant": "waiting for a grant or blocks",
               "backhaul": "backhaul", "bits": "moving bits",
               "symbols": "waiting for the direction's symbols (TDD; share)",
               "harq": "HARQ tail", "server": "server step"}
#: the timeline shows at most this many clients (the slowest to finish), to stay legible
MAX_ROWS = 40


@dataclass
class NetworkRun:
    """What the pictures read of a network run's folder."""

    folder: Path
    cells: pd.DataFrame
    clients: pd.DataFrame
    events: pd.DataFrame
    air: pd.DataFrame
    rounds: pd.DataFrame
    network: dict

    @property
    def isd_m(self) -> float:
        return float(self.network["layout"]["isd_m"])


def read_network_run(run_dir: Path | str) -> NetworkRun | None:
    """A network run's files (None for a run of the paper's single cell: no cells.csv)."""
    folder = Path(run_dir)
    if not run_file(folder, CELLS_CSV).is_file():
        return None
    events = read_record(folder, EVENTS_CSV)
    events.index.name = "event_index"
    air = (read_record(folder, AIR_CSV) if run_file(folder, AIR_CSV).is_file()
           else pd.DataFrame(columns=["event_index", "cell", "direction", "first_block",
                                      "blocks", "start_s", "end_s"]))
    scenario = yaml.safe_load((folder / SCENARIO_YAML).read_text())
    return NetworkRun(folder, read_record(folder, CELLS_CSV), read_record(folder, CLIENTS_CSV),
                      events, air, read_record(folder, ROUNDS_CSV), scenario["network"])


def median_round(rounds: pd.DataFrame) -> int:
    """The round whose round time is the median's (the lower middle of an even count; the
    middle round where rounds.csv has no round time)."""
    times = rounds.sort_values(["round_time_s", "round"] if "round_time_s" in rounds
                               else ["round"])
    return int(times["round"].iloc[(len(times) - 1) // 2])


def mean_sinr_db(events: pd.DataFrame, kinds: list[str]) -> pd.Series:
    """Each client's mean SINR (dB) over its transfers of `kinds` that have one."""
    rows = events[events["kind"].isin(kinds)].dropna(subset=["sinr_db"])
    return rows.groupby("client_id")["sinr_db"].mean()


def _hexagons(ax: plt.Axes, run: NetworkRun) -> None:
    """Each site's hexagon (the points nearer it than any other: inradius ISD / 2, its
    corners at 30 + 60 k degrees), its sectors' borders and boresights."""
    sites = run.cells.drop_duplicates("site")
    radius = run.isd_m / np.sqrt(3.0)
    for x, y in zip(sites["x_m"], sites["y_m"], strict=True):
        ax.add_patch(RegularPolygon((x, y), 6, radius=radius, orientation=0.0, fill=False,
                                    edgecolor="0.55", lw=0.8))
    ax.scatter(sites["x_m"], sites["y_m"], marker="^", s=60, c="k", zorder=4, label="site")
    sectored = run.cells.dropna(subset=["azimuth_deg"])
    for x, y, azimuth in zip(sectored["x_m"], sectored["y_m"], sectored["azimuth_deg"],
                             strict=True):
        a = np.radians(azimuth)
        ax.annotate("", (x + 0.3 * run.isd_m * np.cos(a), y + 0.3 * run.isd_m * np.sin(a)),
                    (x, y), arrowprops={"arrowstyle": "->", "color": "k", "lw": 0.8})
        border = np.radians(azimuth + 60.0)     # (between two boresights: a hexagon corner)
        ax.plot([x, x + radius * np.cos(border)], [y, y + radius * np.sin(border)],
                color="0.55", lw=0.5, ls=":")
    ax.set_aspect("equal")
    ax.set(xlabel="x (m)", ylabel="y (m)")


def _states(ax: plt.Axes, clients: pd.DataFrame, colors: np.ndarray) -> None:
    """Clients at their positions in `colors` (one a client), the marker their LOS state,
    hollow indoors."""
    for los, marker in ((1, "o"), (0, "s")):
        for indoor in (0, 1):
            pick = ((clients["los"] == los) & (clients["indoor"] == indoor)).to_numpy()
            if not pick.any():
                continue
            style = ({"facecolors": "none", "edgecolors": colors[pick]} if indoor
                     else {"c": colors[pick]})
            ax.scatter(clients["x_m"][pick], clients["y_m"][pick], marker=marker, s=14,
                       lw=0.8, zorder=3, gid=f"clients los={los} indoor={indoor}", **style)


def network_map_figure(run: NetworkRun, round_: int | None = None) -> Figure:
    """The deployment: by serving cell and LOS/indoor state (left), by mean uplink SINR with
    round `round_`'s selected and dropped clients (right; the median round by default)."""
    round_ = median_round(run.rounds) if round_ is None else round_
    clients = run.clients.sort_values("client_id").reset_index(drop=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6.2))
    for ax in (left, right):
        _hexagons(ax, run)
    palette = plt.get_cmap("tab20")
    _states(left, clients, np.array([palette(c % 20) for c in clients["serving_cell"]]))
    left.set_title(f"{len(run.cells)} cells, {len(clients)} clients by serving cell")
    keys = [Line2D([], [], marker="^", ls="", color="k", label="site"),
            Line2D([], [], marker="o", ls="", color="0.3", label="LOS"),
            Line2D([], [], marker="s", ls="", color="0.3", label="NLOS"),
            Line2D([], [], marker="o", ls="", mfc="none", color="0.3", label="indoor (hollow)")]
    left.legend(handles=keys, fontsize=8, loc="upper right")

    sinr = mean_sinr_db(run.events, UPLINK).reindex(clients["client_id"]).to_numpy()
    known = ~np.isnan(sinr)
    norm = plt.Normalize(*(np.nanpercentile(sinr, [2, 98]) if known.any() else (0.0, 1.0)))
    cmap = plt.get_cmap("viridis")
    colors = np.array([cmap(norm(s)) if k else (0.8, 0.8, 0.8, 1.0)
                       for s, k in zip(sinr, known, strict=True)])
    _states(right, clients, colors)
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=right, shrink=0.8,
                 label="mean uplink SINR (dB; grey: never selected)")
    in_round = run.events[run.events["round"] == round_]
    where = clients.set_index("client_id")
    chosen = sorted(set(in_round.loc[in_round["client_id"] >= 0, "client_id"]))
    right.scatter(where.loc[chosen, "x_m"], where.loc[chosen, "y_m"], s=90, facecolors="none",
                  edgecolors="r", lw=1.2, zorder=5, gid="selected",
                  label=f"selected in round {round_} ({len(chosen)})")
    dropped = sorted(set(in_round.loc[in_round["kind"] == "client_dropped", "client_id"]))
    if dropped:
        right.scatter(where.loc[dropped, "x_m"], where.loc[dropped, "y_m"], s=90, marker="x",
                      c="r", lw=1.5, zorder=6, gid="dropped",
                      label=f"dropped in round {round_} ({len(dropped)})")
    right.legend(fontsize=8, loc="upper right")
    right.set_title(f"mean uplink SINR; round {round_}")
    fig.tight_layout()
    return fig


def sinr_cdf_figure(run: NetworkRun) -> Figure:
    """CDFs of the clients' mean SINR up and down (solid) and of the transfers' (dashed)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for kinds, name, color in ((UPLINK, "uplink", "C0"), (DOWNLINK, "downlink", "C1")):
        per_client = np.sort(mean_sinr_db(run.events, kinds).to_numpy())
        transfers = np.sort(run.events.loc[run.events["kind"].isin(kinds), "sinr_db"]
                            .dropna().to_numpy())
        for values, style, what in ((per_client, "-", "clients' mean"),
                                    (transfers, "--", "transfers")):
            if len(values):
                ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post",
                        color=color, ls=style, gid=f"{name} {what}",
                        label=f"{name}, {what} ({len(values)})")
    ax.set(xlabel="SINR (dB)", ylabel="CDF", ylim=(0, 1.01),
           title="SINR of the clients and of their transfers")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def transfer_parts(event: pd.Series, stretches: pd.DataFrame,
                   tdd: bool) -> list[tuple[str, float, float]]:
    """A transfer's parts as (part, start, end): before its first block (a grant's wait, K2,
    a round-robin cell's queue; down, the backhaul first); from its first block to its last,
    its air time (payload x attempts / rate: moving bits; a transfer parked a while without
    blocks under proportional fair has that time inside its bits, its rate being its bits
    over all its time on the air) and the rest of that span (under TDD waiting for the
    direction's symbols, drawn as a share after the bits); its HARQ tail; and up, the
    backhaul last. A transfer with no air row (cut before it got blocks) is its waits."""
    start, end = float(event["t_start_s"]), float(event["t_end_s"])
    harq = float(event.get("harq_wait_s", 0.0) or 0.0)
    backhaul = float(event.get("backhaul_s", 0.0) or 0.0)
    up = event["kind"] in UPLINK
    parts = []
    if not up and backhaul > 0:
        parts.append(("backhaul", start, start + backhaul))
    air_start = float(stretches["start_s"].min()) if len(stretches) else (
        start + (0.0 if up else backhaul))
    air_end = (float(stretches["end_s"].max()) if len(stretches)
               else end - harq - (backhaul if up else 0.0))
    before = start + (0.0 if up else backhaul)
    if air_start > before:
        parts.append(("grant", before, air_start))
    rate = float(event["rate_bps"])
    airtime = (float(event.get("attempts", 1)) * 8.0 * float(event["payload_bytes"]) / rate
               if rate > 0 else air_end - air_start)
    moving = min(max(airtime, 0.0), max(air_end - air_start, 0.0))
    parts.append(("bits", air_start, air_start + moving))
    if air_end > air_start + moving:
        parts.append(("symbols" if tdd and len(stretches) else "grant", air_start + moving,
                      air_end))
    if harq > 0:
        parts.append(("harq", air_end, air_end + harq))
    if up and backhaul > 0:
        parts.append(("backhaul", end - backhaul, end))
    return parts


def _client_rows(ax: plt.Axes, run: NetworkRun, events: pd.DataFrame,
                 order: list[int]) -> None:
    """One row a client (`order`, top down) and one for the server: its parts as bars."""
    tdd = run.network.get("duplex", {}).get("kind") == "tdd"
    air = run.air[run.air["event_index"].isin(events.index)].groupby("event_index")
    stretches = {i: air.get_group(i) for i in air.groups}
    empty = run.air.iloc[:0]
    row_of = {client: len(order) - i for i, client in enumerate(order)}
    for index, event in events.iterrows():
        if event["kind"] == SERVER_STEP:
            spans = [("server", float(event["t_start_s"]), float(event["t_end_s"]))]
            y = 0
        elif event["client_id"] not in row_of:
            continue
        else:
            y = row_of[event["client_id"]]
            spans = ([("compute", float(event["t_start_s"]), float(event["t_end_s"]))]
                     if event["kind"] in COMPUTE else
                     transfer_parts(event, stretches.get(index, empty), tdd)
                     if event["kind"] in UPLINK + DOWNLINK else [])
        for part, start, end in spans:
            if end > start:
                ax.broken_barh([(start, end - start)], (y - 0.4, 0.8), color=PARTS[part],
                               gid=f"{part} {y}")
    ax.set_yticks(range(len(order) + 1), ["server"] + [str(c) for c in reversed(order)],
                  fontsize=7 if len(order) > 20 else 8)
    ax.set_ylim(-0.7, len(order) + 0.7)
    ax.set_ylabel("client")


def busiest_cell(run: NetworkRun, events: pd.DataFrame) -> int | None:
    """The cell whose blocks were held longest (blocks x seconds, both directions) by the
    transfers of `events` (None: no air row)."""
    rows = run.air[run.air["event_index"].isin(events.index)]
    if rows.empty:
        return None
    held = (rows["blocks"] * (rows["end_s"] - rows["start_s"])).groupby(rows["cell"]).sum()
    return int(held.idxmax())


def _occupancy(ax: plt.Axes, run: NetworkRun, events: pd.DataFrame, cell: int,
               direction: str, colors: dict[int, tuple], span: float) -> None:
    """Cell's blocks of `direction` over the round: each air row a rectangle in its client's
    colour, named where it is wider than 2 % of the round's `span` (s)."""
    rows = run.air[(run.air["cell"] == cell) & (run.air["direction"] == direction)
                   & run.air["event_index"].isin(events.index)]
    clients = events["client_id"]
    for _, row in rows.iterrows():
        if row["blocks"] <= 0:
            continue
        client = int(clients.loc[row["event_index"]])
        ax.add_patch(Rectangle((row["start_s"], row["first_block"]),
                               row["end_s"] - row["start_s"], row["blocks"],
                               facecolor=colors[client], edgecolor="k", lw=0.3,
                               gid=f"{direction} {client}"))
        if row["end_s"] - row["start_s"] > 0.02 * span:    # (wide enough to be named)
            ax.text(row["start_s"] + 0.5 * (row["end_s"] - row["start_s"]),
                    row["first_block"] + 0.5 * row["blocks"], str(client), ha="center",
                    va="center", fontsize=7)
    total = _blocks(run, direction)
    ax.set(ylim=(0, total), ylabel=f"{direction} block",
           title=f"cell {cell}, {direction}: {len(rows)} stretches on {total} blocks")


def _blocks(run: NetworkRun, direction: str) -> int:
    """A cell's blocks in `direction` as far as the run shows them: the highest block any
    transfer of the run held in any cell, or could have used (air.csv's cap_blocks)."""
    rows = run.air[run.air["direction"] == direction]
    if rows.empty:
        return 1
    reach = (rows["first_block"] + rows["blocks"]).max()
    return int(max(reach, rows["cap_blocks"].max() if "cap_blocks" in rows else 0))


def round_timeline_figure(run: NetworkRun, round_: int | None = None) -> Figure:
    """Round `round_` (the median round by default): a row a client, the server's steps, and
    the busiest cell's blocks up and down (see the module's docstring)."""
    round_ = median_round(run.rounds) if round_ is None else round_
    events = run.events[run.events["round"] == round_]
    ends = events[events["client_id"] >= 0].groupby("client_id")["t_end_s"].max()
    order = list(ends.sort_values(ascending=False).index[:MAX_ROWS])[::-1]
    shown = "" if len(ends) <= MAX_ROWS else f" (the {MAX_ROWS} last to finish of {len(ends)})"
    cell = busiest_cell(run, events)
    heights = [max(3.0, 0.22 * len(order) + 1.5)] + ([1.6, 1.6] if cell is not None else [])
    fig, axes = plt.subplots(len(heights), 1, figsize=(11, sum(heights) + 1.6), sharex=True,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    _client_rows(axes[0, 0], run, events, order)
    axes[0, 0].set_title(f"round {round_}{shown}")
    row = run.rounds.set_index("round").loc[round_]
    start = float(events["t_start_s"].min())    # (an asynchronous version's may start
    if "round_time_s" in row:                    # before its round: its clients overlap)
        start = min(start, float(row["sim_time_s"] - row["round_time_s"]))
    end = float(events["t_end_s"].max())
    if cell is not None:
        palette = plt.get_cmap("tab20b")     # (not the parts' colours above)
        colors = {c: palette(i % 20) for i, c in enumerate(sorted(set(events["client_id"])))}
        for ax, direction in zip(axes[1:, 0], ("uplink", "downlink"), strict=True):
            _occupancy(ax, run, events, cell, direction, colors, end - start)
    axes[-1, 0].set_xlim(start, end)
    axes[-1, 0].set_xlabel("simulated time (s)")
    fig.legend(handles=[Patch(color=PARTS[p], label=PART_LABELS[p]) for p in PARTS],
               fontsize=8, ncol=4, loc="lower center")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def plot_network_run(run_dir: Path | str, round_: int | None = None) -> list[Path]:
    """network_map.png, sinr_cdf.png and round_timeline.png in a network run's folder (none
    for the paper's single cell). -> the paths written."""
    run = read_network_run(run_dir)
    if run is None:
        return []
    figures = (network_map_figure(run, round_), sinr_cdf_figure(run),
               round_timeline_figure(run, round_))
    written = []
    for name, fig in zip(NETWORK_FIGURES, figures, strict=True):
        fig.savefig(run.folder / name, dpi=110)
        plt.close(fig)
        written.append(run.folder / name)
    return written
