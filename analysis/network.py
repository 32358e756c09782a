"""The network study's answers (issue 39), written from its result folders, so that every
number in its report comes from the tables beside it:

    python -m analysis.network RESULTS/network RESULTS/network_load --out docs/studies/network

- stretch.csv: per algorithm and case of scenarios/network.yaml, the time to 70 and 80 %
  (mean over seeds, and each seed) and its ratio to the paper's cell;
- round_times.csv: per algorithm, clients per cell m and interference (network_load.yaml,
  timing only), the mean round time and its parts;
- stragglers.csv: per client of the 7-site network with interference (SCALA, every seed), its
  mean time busy per round it took part in (its own computations and transfers), its uplink
  transfers' mean SINR, LOS and indoor state;
- spectrum.csv: per case and seed, the uplink band a round's client is granted on average;
- figures/round_time_vs_load.png, figures/stragglers.png (analysis.network_figures), report.md
  (every number from those tables). Regenerate the slim runs first (scala_netsim.tools.regenerate).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import HAND_SET
from scala_netsim.core.files import run_file

CASES = ("paper_cell", "uma_cell", "uma_7sites_quiet", "uma_7sites", "uma_7sites_paper_spectrum")
CASE_TEXT = {"paper_cell": "the paper's cell (36.814)",
             "uma_cell": "the paper's cell under 38.901 UMa, 80 % indoors",
             "uma_7sites_quiet": "7 sites x 3 sectors, UMa, interference off",
             "uma_7sites": "7 sites x 3 sectors, UMa, interference on",
             "uma_7sites_paper_spectrum": "7 sites x 3 sectors, UMa, interference on, 2.8 MHz "
                                          "a cell (the paper's spectrum per client)"}
NAMES = {"scala": "SCALA", "fedavg": "FedAvg"}
UPLINK = ("activation_upload", "model_upload")
CLIENT_KINDS = ("model_download", "client_forward", "activation_upload", "gradient_download",
                "client_backward", "model_upload", "client_local_step")
#: blocks of a load-study cell's 20 MHz at 30 kHz (TS 38.101-1 Table 5.3.2-1; tested
LOAD_BLOCKS = 51   # against channel.nr.resource_blocks: analysis/ does not import channel/)


def stretch(comparison: pd.DataFrame) -> pd.DataFrame:
    """Time to 70 and 80 % per algorithm and case: the mean over seeds, each seed's, and the
    mean's ratio to the paper's cell."""
    rows = []
    for (algorithm, case), group in comparison.groupby(["algorithm", "cell"]):
        group = group.sort_values("seed")
        row = {"algorithm": algorithm, "case": case, "seeds": len(group),
               "wall_time_s": float(group["wall_time_s"].sum())}
        for target in ("0.7", "0.8"):
            times = group[f"time_to_{target}_s"].astype(float)
            row[f"time_to_{target}_s"] = times.mean()
            row[f"time_to_{target}_s_per_seed"] = " ".join(f"{t:.1f}" for t in times)
        rows.append(row)
    table = pd.DataFrame(rows)
    for target in ("0.7", "0.8"):
        paper = table[table["case"] == "paper_cell"].set_index("algorithm")[
            f"time_to_{target}_s"]
        table[f"stretch_{target}"] = table[f"time_to_{target}_s"] / table["algorithm"].map(paper)
    order = {c: i for i, c in enumerate(CASES)}
    return table.sort_values(["algorithm", "case"], key=lambda s: s.map(order)
                             if s.name == "case" else s).reset_index(drop=True)


def cells_over_blocks(run: Path, blocks: int = LOAD_BLOCKS) -> int:
    """The most cells, over a run's rounds, that had more of the round's clients than their
    `blocks` resource blocks (their clients took turns on the blocks): demands.csv's
    participants by clients.csv's serving cell."""
    demands = pd.read_csv(run_file(run, "demands.csv"), usecols=["round", "client_id"])
    serving = pd.read_csv(run_file(run, "clients.csv"),
                          usecols=["client_id", "serving_cell"]).set_index("client_id")
    per_cell = demands.assign(cell=demands["client_id"].map(serving["serving_cell"])).groupby(
        ["round", "cell"]).size()
    return int((per_cell > blocks).groupby(level=0).sum().max())


def round_times(load_root: Path) -> pd.DataFrame:
    """Mean round time (s) and its parts per algorithm, m and interference, from the load
    sweep's run folders (<algorithm>/load=m<m>,interference=<bool>/seed0), and the most cells
    of a round with more clients than blocks."""
    rows = []
    for folder in sorted(load_root.glob("*/load=m*/seed0")):
        found = re.fullmatch(r"load=m(\d+),interference=(true|false)", folder.parent.name)
        if found is None or not run_file(folder, "rounds.csv").exists():
            continue
        rounds = pd.read_csv(run_file(folder, "rounds.csv"))
        summary = json.loads((folder / "summary.json").read_text())
        rows.append({"algorithm": folder.parent.parent.name, "m": int(found[1]),
                     "interference": found[2] == "true", "rounds": len(rounds),
                     "clients_per_round": rounds["num_clients"].mean(),
                     "round_time_s": rounds["round_time_s"].mean(),
                     "uplink_time_s": rounds["uplink_time_s"].mean(),
                     "downlink_time_s": rounds["downlink_time_s"].mean(),
                     "compute_time_s": rounds["compute_time_s"].mean(),
                     # (NaN for a run kept slim: its demands come back from
                     # python -m scala_netsim.tools.regenerate)
                     "cells_over_blocks": (cells_over_blocks(folder)
                                           if run_file(folder, "demands.csv").exists()
                                           else np.nan),
                     "wall_time_s": float(summary["wall_time_s"])})
    return pd.DataFrame(rows).sort_values(["algorithm", "interference", "m"]).reset_index(
        drop=True)


def spectrum(network_root: Path) -> pd.DataFrame:
    """The uplink band a round's client is granted, on average (MHz), per case and seed: the
    mean over SCALA's activation uploads (one per client and round) of the band they were
    sent on, from the run records (regenerated: python -m scala_netsim.tools.regenerate)."""
    rows = []
    for folder in sorted((network_root / "scala").glob("cell=*/seed*")):
        events = pd.read_csv(run_file(folder, "events.csv"),
                             usecols=["round", "client_id", "kind", "bandwidth_hz"])
        up = events[events["kind"] == "activation_upload"].drop_duplicates(
            ["round", "client_id"])
        rows.append({"case": folder.parent.name.removeprefix("cell="),
                     "seed": int(folder.name.removeprefix("seed")),
                     "uplink_mhz_per_client": up["bandwidth_hz"].mean() / 1e6})
    order = {c: i for i, c in enumerate(CASES)}
    return pd.DataFrame(rows).sort_values(["case", "seed"], key=lambda s: s.map(order)
                                          if s.name == "case" else s).reset_index(drop=True)


def stragglers(run: Path) -> pd.DataFrame:
    """Per client of a network run: its mean busy time per round it took part in, its
    uplink transfers' mean SINR (dB), LOS and indoor state, serving cell."""
    events = pd.read_csv(run_file(run, "events.csv"),
                         usecols=["t_start_s", "t_end_s", "round", "client_id", "kind",
                                  "sinr_db"])
    clients = pd.read_csv(run_file(run, "clients.csv"),
                          usecols=["client_id", "serving_cell", "los", "indoor", "d2d_m"])
    own = events[events["kind"].isin(CLIENT_KINDS)]
    busy = (own["t_end_s"] - own["t_start_s"]).groupby(
        [own["client_id"], own["round"]]).sum().groupby(level=0).mean()
    uplink = events[events["kind"].isin(UPLINK)]
    sinr = uplink.groupby("client_id")["sinr_db"].mean()
    out = clients.set_index("client_id").join(busy.rename("busy_per_round_s"), how="inner")
    return out.join(sinr.rename("uplink_sinr_db")).reset_index()


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f} %"


def findings(stretch_table: pd.DataFrame, load: pd.DataFrame, clients: pd.DataFrame,
             spectrum_table: pd.DataFrame) -> list[str]:
    """The study's four answers, every number from the tables."""
    return [propagation_finding(stretch_table), spectrum_finding(stretch_table, spectrum_table),
            load_finding(load), straggler_finding(clients)]


def _and(items: list) -> str:
    """'1, 2 and 5' (or '1 and 2', or '1')."""
    *head, last = [str(i) for i in items]
    return f"{', '.join(head)} and {last}" if head else last


def _seeds_text(stretch_table: pd.DataFrame) -> str:
    """'seeds 0, 1 and 2' (or 'seeds 0 and 1'): the seeds the stretch table's means are over
    (they are numbered from 0)."""
    seeds = list(range(int(stretch_table["seeds"].max())))
    return f"seed{'s' if len(seeds) > 1 else ''} {_and(seeds)}"


def per_seed_change(stretch_table: pd.DataFrame, algorithm: str, case: str) -> list[float]:
    """Each seed's change of the time to 80 % in `case` against the paper's cell (%)."""
    st = stretch_table.set_index(["algorithm", "case"])["time_to_0.8_s_per_seed"]
    times = [[float(t) for t in str(st[(algorithm, c)]).split()] for c in (case, "paper_cell")]
    return [(t / paper - 1) * 100 for t, paper in zip(*times, strict=True)]


def propagation_finding(stretch_table: pd.DataFrame) -> str:
    """(1) What 38.901 propagation, the layout and interference do to the time to 80 %."""
    st = stretch_table.set_index(["algorithm", "case"])

    def t80(algorithm: str, case: str) -> float:
        return float(st.loc[(algorithm, case), "stretch_0.8"])

    def seed_by_seed(algorithm: str) -> str:
        changes = per_seed_change(stretch_table, algorithm, "uma_7sites")
        return ", ".join(f"{c:+.0f} %" for c in changes)

    scala_changes = per_seed_change(stretch_table, "scala", "uma_7sites")
    direction = ("in one direction in every seed"
                 if all(c > 0 for c in scala_changes) or all(c < 0 for c in scala_changes)
                 else "within the seeds' spread, not in one direction")
    first = (
        f"In the paper's 500 m cell under 38.901 UMa with 80 % of clients indoors, SCALA takes "
        f"{t80('scala', 'uma_cell'):,.0f}x and FedAvg {t80('fedavg', 'uma_cell'):,.0f}x as "
        f"long to reach 80 % as under the paper's 36.814 path loss (ratios of the means of "
        f"{_seeds_text(stretch_table)}; seed by seed SCALA "
        f"{_ratio_range(stretch_table, 'scala', 'uma_cell', 0)} and FedAvg "
        f"{_ratio_range(stretch_table, 'fedavg', 'uma_cell', 0)}): every round waits for its "
        f"worst-placed clients, and "
        f"NLOS and O2I losses make them far worse. Seven 3-sector sites 500 m apart, the same "
        f"100 clients dropped over their hexagons and 21 bands: on the mean, SCALA's time to "
        f"80 % changes by {_pct(t80('scala', 'uma_7sites_quiet'))} against the paper's cell "
        f"with interference off and {_pct(t80('scala', 'uma_7sites'))} with it on, FedAvg's by "
        f"{_pct(t80('fedavg', 'uma_7sites_quiet'))} and {_pct(t80('fedavg', 'uma_7sites'))}; "
        f"seed by seed, with interference on, SCALA's moves {seed_by_seed('scala')} and "
        f"FedAvg's {seed_by_seed('fedavg')}: the layout moves it {direction}. At 10 clients a "
        f"round over 21 cells, interference itself adds "
        f"{(t80('scala', 'uma_7sites') / t80('scala', 'uma_7sites_quiet') - 1) * 100:.1f} % "
        f"(SCALA) and "
        f"{(t80('fedavg', 'uma_7sites') / t80('fedavg', 'uma_7sites_quiet') - 1) * 100:.1f} % "
        f"(FedAvg).")
    return first


def spectrum_finding(stretch_table: pd.DataFrame, spectrum_table: pd.DataFrame) -> str:
    """(1b) The layout at equal spectrum per client: what the 7-site network's extra
    spectrum was worth."""
    st = stretch_table.set_index(["algorithm", "case"])["stretch_0.8"]
    mhz = spectrum_table.groupby("case")["uplink_mhz_per_client"].mean()
    equal = "uma_7sites_paper_spectrum"
    both = [st[(a, equal)] for a in ("scala", "fedavg")]
    verdict = ("slower than the paper's cell for both" if min(both) > 1 else
               "faster than the paper's cell for both" if max(both) < 1 else
               "on either side of the paper's cell")
    return (
        f"Those networks are not at the paper's spectrum: 21 cells of 20 MHz give a round's "
        f"client {mhz['uma_7sites']:.2f} MHz of uplink on average against the paper cell's "
        f"{mhz['paper_cell']:.2f} MHz (20 MHz for 10 clients; spectrum.csv, mean of the "
        f"seeds). At the paper's spectrum per client (2.8 MHz a cell, 7 blocks: "
        f"{mhz[equal]:.2f} MHz a client, interference on) the 7-site network takes SCALA "
        f"{st[('scala', equal)]:.2f}x the paper cell's time to 80 % and FedAvg "
        f"{st[('fedavg', equal)]:.2f}x (ratios of the seeds' means; seed by seed SCALA "
        f"{_ratio_range(stretch_table, 'scala', equal)}, FedAvg "
        f"{_ratio_range(stretch_table, 'fedavg', equal)}): at equal spectrum the layout's "
        f"38.901 propagation leaves it {verdict}, and the full-band network's "
        f"{st[('scala', 'uma_7sites')]:.2f}x (SCALA) is its "
        f"{mhz['uma_7sites'] / mhz['paper_cell']:.1f}x the paper cell's spectrum per client "
        f"making up for that.")


def load_finding(load: pd.DataFrame) -> str:
    """(2) Round time against clients per cell: which algorithm is shorter, which link sets
    the pace, what interference adds."""
    on = load[load["interference"]].set_index(["algorithm", "m"])["round_time_s"]
    shared = sorted(set(on["scala"].index) & set(on["fedavg"].index))
    ratios = [on[("fedavg", m)] / on[("scala", m)] for m in shared]
    scala_on = load[(load["algorithm"] == "scala") & load["interference"]].set_index("m")
    top = int(scala_on.index.max())
    effect = (on / load[~load["interference"]].set_index(["algorithm", "m"])["round_time_s"]
              - 1) * 100
    second = (
        f"With interference on, SCALA's mean round grows from {on[('scala', shared[0])]:.1f} s "
        f"at {shared[0]} client per cell to {on[('scala', top)]:.1f} s at {top} "
        f"(32 samples each a step); FedAvg's round is {min(ratios):.1f}x to "
        f"{max(ratios):.1f}x SCALA's at every load both were run at (m = "
        f"{', '.join(str(m) for m in shared)}): it never becomes the shorter. "
        f"{_pace_sentence(scala_on)} At m = {top} "
        f"SCALA's round spends {scala_on.loc[top, 'downlink_time_s']:.1f} s on the downlink "
        f"against {scala_on.loc[top, 'uplink_time_s']:.1f} s on the uplink: with the "
        f"headline's powers (0.2 W a client, 1 W a base station, where TR 36.814 gives a macro "
        f"site 46 dBm) and m clients a cell, a client's 0.2 W lands on about 51/m blocks "
        f"(0.2 m/51 W a block), as dense as the base station's 1 W over all 51 at m = 5 and "
        f"denser beyond, so the downlink (gradients and model downloads), not the uplink's "
        f"activations, becomes the bottleneck.{_turns_sentence(load)} Interference "
        f"lengthens the rounds by {effect.min():.1f} to {effect.max():.1f} %.")
    return second


def _pace_sentence(scala_on: pd.DataFrame) -> str:
    """Where SCALA's uplink (its activations) sets the pace of the round, and where the
    downlink does: the loads at which its mean uplink time exceeds its downlink time."""
    up = scala_on[scala_on["uplink_time_s"] > scala_on["downlink_time_s"]]
    down = scala_on[scala_on["uplink_time_s"] <= scala_on["downlink_time_s"]]
    if up.empty:
        return "SCALA's downlink outlasts its uplink at every load."
    pairs = _and([f"{r.uplink_time_s:.1f} s up against {r.downlink_time_s:.1f} s down at "
                  f"m = {m}" for m, r in up.iterrows()])
    text = (f"SCALA's uplink, its activations, sets the pace only at m = "
            f"{_and(list(up.index))} ({pairs})")
    if down.empty:
        return text + "."
    first = int(down.index.min())
    return (text + f"; from m = {first} on the downlink outlasts it "
            f"({down.loc[first, 'downlink_time_s']:.1f} s against "
            f"{down.loc[first, 'uplink_time_s']:.1f} s at m = {first}).")


def _turns_sentence(load: pd.DataFrame) -> str:
    """Where some cells had more of a round's clients than blocks: how many, at which m."""
    over = load[load["cells_over_blocks"] > 0]
    if over.empty:
        return ""
    parts = [f"{int(n)} of the 21 cells at m = {m}" for m, n in
             over.groupby("m")["cells_over_blocks"].max().items()]
    return (f" With more clients than the {LOAD_BLOCKS} blocks of a cell ({', '.join(parts)}, "
            f"in some round), the clients take turns on the blocks, one block each.")


def straggler_finding(clients: pd.DataFrame) -> str:
    """(3) Who the stragglers are, by LOS and indoor state, SINR and distance: every client
    of every seed pooled, then seed by seed."""
    groups = clients.groupby(["los", "indoor"])["busy_per_round_s"].mean()
    by_seed = clients.groupby(["seed", "los", "indoor"])["busy_per_round_s"].mean()
    seeds = sorted(clients["seed"].unique())
    slowest_group = [s for s in seeds if by_seed[s].idxmax() == (0, 1)]
    outdoor_slower = [s for s in seeds if by_seed[(s, 1, 0)] > by_seed[(s, 1, 1)]]
    sinr = clients.groupby(["los", "indoor"])["uplink_sinr_db"].mean()
    rho = clients[["busy_per_round_s", "uplink_sinr_db"]].corr(method="spearman").iloc[0, 1]
    rho_distance = clients[["busy_per_round_s", "d2d_m"]].corr(method="spearman").iloc[0, 1]
    slowest = clients.nlargest(5, "busy_per_round_s")
    third = (
        f"The stragglers are the indoor NLOS clients: in the 7-site network with interference "
        f"(SCALA, {_seeds_of(seeds)}, every client of each) they are busy "
        f"{groups[(0, 1)]:.2f} s a round on average (uplink SINR "
        f"{sinr[(0, 1)]:.1f} dB), outdoor LOS clients {groups[(1, 0)]:.2f} s "
        f"({sinr[(1, 0)]:.1f} dB), indoor LOS {groups[(1, 1)]:.2f} s and outdoor NLOS "
        f"{groups[(0, 0)]:.2f} s; time busy and SINR have a Spearman correlation of "
        f"{rho:.2f}, and {int((slowest['indoor'] == 1).sum())} of the 5 slowest clients are "
        f"indoors, {int((slowest['los'] == 0).sum())} NLOS (SINR "
        f"{slowest['uplink_sinr_db'].min():.1f} to {slowest['uplink_sinr_db'].max():.1f} dB); "
        f"the distance to the serving site correlates with time busy at only "
        f"{rho_distance:.2f}. Seed by seed, indoor NLOS is the slowest group in "
        f"{len(slowest_group)} of the {len(seeds)} seeds; outdoor LOS clients are busier than "
        f"indoor LOS ones in {_seeds_of(outdoor_slower) if outdoor_slower else 'no seed'} "
        f"(few clients in a group make its mean move from seed to seed: the table below).")
    return third


def _seeds_of(seeds: list) -> str:
    """'seed 2' or 'seeds 0, 1 and 2'."""
    return f"seed{'s' if len(seeds) > 1 else ''} {_and([int(s) for s in seeds])}"


def summary_line(stretch_table: pd.DataFrame, load: pd.DataFrame, clients: pd.DataFrame,
                 spectrum_table: pd.DataFrame) -> str:
    """The study in one line, for the README and the studies index (every number from the
    tables)."""
    st = stretch_table.set_index(["algorithm", "case"])["stretch_0.8"]
    on = load[load["interference"]].set_index(["algorithm", "m"])["round_time_s"]
    shared = sorted(set(on["scala"].index) & set(on["fedavg"].index))
    ratios = [on[("fedavg", m)] / on[("scala", m)] for m in shared]
    busy = clients.groupby(["los", "indoor"])["busy_per_round_s"].mean()
    mhz = spectrum_table.groupby("case")["uplink_mhz_per_client"].mean()
    return (f"38.901 UMa with 80 % of clients indoors stretches SCALA's time to 80 % in the "
            f"paper's cell {st[('scala', 'uma_cell')]:,.0f}x (FedAvg "
            f"{st[('fedavg', 'uma_cell')]:,.0f}x; ratios of the seeds' means); seven 3-sector "
            f"sites of 20 MHz cells bring it back to {st[('scala', 'uma_7sites')]:.2f}x the "
            f"paper's cell's with interference ({_ratio_range(stretch_table)} seed by seed), "
            f"{st[('scala', 'uma_7sites_quiet')]:.2f}x without, but with "
            f"{mhz['uma_7sites'] / mhz['paper_cell']:.1f}x its spectrum per client; at the "
            f"paper's spectrum per client the 7-site network takes "
            f"{st[('scala', 'uma_7sites_paper_spectrum')]:.2f}x. FedAvg's round stays "
            f"{min(ratios):.1f}-{max(ratios):.1f}x SCALA's at {shared[0]}-{shared[-1]} clients "
            f"per cell (timing-only runs, seed 0). Indoor NLOS clients are the stragglers "
            f"({busy[(0, 1)]:.2f} s busy a round against {busy[(1, 0)]:.2f} s outdoors in LOS, "
            f"seeds pooled).")


def _ratio_range(stretch_table: pd.DataFrame, algorithm: str = "scala",
                 case: str = "uma_7sites", digits: int = 2) -> str:
    """`algorithm`'s time to 80 % in `case` over the paper's cell's, seed by seed, lowest to
    highest ('0.87-1.53x')."""
    ratios = [1 + c / 100 for c in per_seed_change(stretch_table, algorithm, case)]
    return f"{min(ratios):,.{digits}f}-{max(ratios):,.{digits}f}x"


def _markdown(table: pd.DataFrame, digits: int = 1) -> str:
    """A table as Markdown, floats rounded to `digits`."""
    shown = table.copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(lambda v: f"{v:,.{digits}f}")
    header = "| " + " | ".join(shown.columns) + " |"
    rule = "|" + "---|" * len(shown.columns)
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in shown.itertuples(False)]
    return "\n".join([header, rule, *rows])


def _intro(stretch_table: pd.DataFrame, load: pd.DataFrame) -> list[str]:
    """The report's title, what was run, the commands and their wall time."""
    return [
        "# A network of cells: what 38.901 propagation, interference and load cost", "",
        "*Generated by `python -m analysis.network` from the tables beside it (stretch.csv, "
        "round_times.csv, stragglers.csv), themselves written from the run records in "
        "`results/` and `load/`; do not edit by hand.*",
        "",
        "The paper's setting (K = 100, quantity skew alpha = 2, T = 5, B = 320, the authors' "
        "AlexNet, 500 rounds) in four networks (scenarios/network.yaml), every one re-timed "
        f"from the headline's kept SCALA and FedAvg trainings of {_seeds_text(stretch_table)} "
        "(the network changes no learning here), and the load question in timing-only runs of "
        "the 7-site network (scenarios/network_load.yaml). The model: [A network of cells]"
        "(../../model/network.md). FedAvg is the headline's own (persistent; issue 61): its "
        "events equal those re-timed from the per-round variant to the digest. " + HAND_SET,
        "",
        "    python -m scala_netsim scenarios/network.yaml --retime-from "
        "docs/studies/cellular_10pct",
        "    python -m scala_netsim scenarios/network_load.yaml",
        "    python -m analysis.network RESULTS/network RESULTS/network_load --out "
        "docs/studies/network",
        "",
        "The re-timed runs are kept slim in results/ (scenario, rounds, summary with the "
        "digests of every file they wrote); their event tables come back, to those digests, "
        "from the kept SCALA and FedAvg trainings:",
        "",
        "    python -m scala_netsim.tools.regenerate docs/studies/network/results --out "
        "RESULTS/network",
        "",
        f"Wall time on 2 CPU cores shared with other work: the {stretch_table['seeds'].sum()} "
        f"re-timings {stretch_table['wall_time_s'].sum():,.0f} s in all, the "
        f"{len(load)} load runs {load['wall_time_s'].sum():,.0f} s (each in round_times.csv).",
        "",
    ]


def report(stretch_table: pd.DataFrame, load: pd.DataFrame, clients: pd.DataFrame,
           spectrum_table: pd.DataFrame) -> str:
    """report.md: the four answers, then the tables they come from."""
    answers = findings(stretch_table, load, clients, spectrum_table)
    cases = stretch_table.assign(case=stretch_table["case"].map(CASE_TEXT),
                                 algorithm=stretch_table["algorithm"].map(NAMES))
    by_state = clients.groupby(["los", "indoor"]).agg(
        clients=("client_id", "size"), busy_per_round_s=("busy_per_round_s", "mean"),
        uplink_sinr_db=("uplink_sinr_db", "mean"), d2d_m=("d2d_m", "mean")).reset_index()
    per_seed = clients.pivot_table(index=["los", "indoor"], columns="seed",
                                   values="busy_per_round_s", aggfunc="mean")
    per_seed.columns = [f"busy_per_round_s_seed{int(c)}" for c in per_seed.columns]
    by_state = by_state.merge(per_seed.reset_index(), on=["los", "indoor"])
    mhz = spectrum_table.pivot_table(index="case", columns="seed",
                                     values="uplink_mhz_per_client")
    mhz.columns = [f"seed{int(c)}" for c in mhz.columns]
    mhz = mhz.loc[[c for c in CASES if c in mhz.index]].reset_index()
    mhz["case"] = mhz["case"].map(CASE_TEXT)
    return "\n".join([
        *_intro(stretch_table, load),
        "## Answers",
        "",
        f"In one line: {summary_line(stretch_table, load, clients, spectrum_table)}",
        "",
        *[f"{i}. {a}\n" for i, a in enumerate(answers, 1)],
        "## 1. Time to 70 and 80 % against the paper's cell",
        "",
        _markdown(cases[["algorithm", "case", "seeds", "time_to_0.7_s", "time_to_0.7_s_per_seed",
                         "time_to_0.8_s", "time_to_0.8_s_per_seed", "stretch_0.7",
                         "stretch_0.8"]], 2),
        "",
        "Times in simulated seconds (mean of the seeds, then each seed); stretch: the mean's "
        "ratio to the paper's cell (a ratio of the seeds' means). Accuracy against time: "
        "[figure](results/figures/accuracy_vs_time.png).",
        "",
        "## 2. Spectrum per client (spectrum.csv)",
        "",
        _markdown(mhz, 2),
        "",
        "The uplink band a round's client is granted, on average (MHz): the mean over SCALA's "
        "activation uploads of the band each was sent on.",
        "",
        "## 3. Round time against clients per cell (timing only)",
        "",
        _markdown(load.assign(algorithm=load["algorithm"].map(NAMES)), 1),
        "",
        "![round time against load](figures/round_time_vs_load.png)",
        "",
        "## 4. Who the stragglers are",
        "",
        _markdown(by_state, 2),
        "",
        "Per client of the 7-site network with interference (SCALA, every client of each "
        "seed): its time busy (its own computations and transfers) per round it took part in, "
        "and the mean SINR of its uploads; the group means pooled over the seeds, then each "
        "seed's; every client in stragglers.csv.",
        "",
        "![stragglers](figures/stragglers.png)",
        ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("network", type=Path, help="scenarios/network.yaml's results")
    parser.add_argument("load", type=Path, help="scenarios/network_load.yaml's results")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from analysis.network_figures import plot_round_times, plot_stragglers

    (args.out / "figures").mkdir(parents=True, exist_ok=True)
    runs = sorted((args.network / "scala" / "cell=uma_7sites").glob("seed*"))
    tables = {"stretch": stretch(pd.read_csv(args.network / "comparison.csv")),
              "round_times": round_times(args.load),
              "stragglers": pd.concat([stragglers(run).assign(seed=int(run.name[4:]))
                                       for run in runs], ignore_index=True),
              "spectrum": spectrum(args.network)}
    for name, table in tables.items():
        table.to_csv(args.out / f"{name}.csv", index=False)
    plot_round_times(tables["round_times"], args.out / "figures" / "round_time_vs_load.png",
                     NAMES)
    plot_stragglers(tables["stragglers"], args.out / "figures" / "stragglers.png")
    (args.out / "report.md").write_text(report(tables["stretch"], tables["round_times"],
                                               tables["stragglers"], tables["spectrum"]))
    print(f"wrote {', '.join(f'{n}.csv' for n in tables)} and figures/ into {args.out}")


if __name__ == "__main__":
    main()
