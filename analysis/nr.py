"""The NR study's answers (issue 49), written from its result folder, so that every number in
its report comes from the tables beside it:

    python -m analysis.nr RESULTS/nr --out docs/studies/nr

- times.csv: per algorithm and case of scenarios/nr.yaml, the time to 70 and 80 % (mean over
  seeds, and each seed), its ratio to today's network, and FedAvg's time over SCALA's;
- time_split.csv: per algorithm and case, a round's mean time and its critical path (rounds.csv),
  and per direction the transfers' time summed over a round: moving bits (of which the slots
  that carried HARQ retransmissions), waiting for the direction's symbols (and an upload's
  grant), and the last block's HARQ wait;
- clients.csv: per algorithm, case, seed and client of the run, its LOS and indoor state, its
  uploads' mean goodput, SINR and MCS, and its time busy per round it took part in;
- report.md (what was run, the three answers, every number from those tables). The re-timed
  runs are kept slim: regenerate them first (python -m scala_netsim.tools.regenerate).

The answers read scala's and fedavg's runs in each of the study's cases (CASES): another
study's folder is refused, exit 2, naming the cases it needs and those found, before anything
is written.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.tables import seed_times
from scala_netsim.core.files import run_file

CASES = ("today", "tdd", "nr", "round_robin", "all_three")
CASE_TEXT = {"today": "today's model (paired bands, Shannon, static blocks)",
             "tdd": "TDD (DDDSU, 10:2:2)", "nr": "NR link abstraction",
             "round_robin": "round robin", "all_three": "TDD + NR + round robin"}
NAMES = {"scala": "SCALA", "fedavg": "FedAvg"}
#: the TDD frame's sensitivity runs (issue 61; --patterns): cases of their own sweep
PATTERNS = {"tdd_40mhz": "TDD (DDDSU, 10:2:2) on one 40 MHz carrier",
            "tdd_dsuuu": "TDD (DSUUU, 10:2:2) on 20 MHz"}
#: the uplink's share of a 5-slot frame's 70 symbols (U slots 14 each, S slot 2 of its 14)
UPLINK_SYMBOLS = {"tdd": "16 of 70 (22.9 %)", "tdd_40mhz": "16 of 70 (22.9 %)",
                  "tdd_dsuuu": "44 of 70 (62.9 %)"}
PATTERN_COMMAND = ("python -m scala_netsim scenarios/nr.yaml --retime-from "
                   "docs/studies/cellular_10pct --set 'sweep={case: {tdd_40mhz: "
                   "{network.duplex: tdd, network.uplink_bandwidth_hz: 4.0e7, "
                   "network.downlink_bandwidth_hz: 4.0e7}, tdd_dsuuu: {network.duplex: {kind: "
                   "tdd, pattern: DSUUU}}}, seed: [0, 1, 2]}' --out RESULTS/nr_patterns")
UPLINK = ("activation_upload", "model_upload")
TRANSFERS = (*UPLINK, "gradient_download", "model_download")
CLIENT_KINDS = ("model_download", "client_forward", "activation_upload", "gradient_download",
                "client_backward", "model_upload", "client_local_step")
#: a slot at the study's 30 kHz (analysis/ does not import channel/)
SLOT_S = 0.5e-3


def runs(root: Path) -> list[tuple[str, str, int, Path]]:
    """(algorithm, case, seed, folder) of every run under the study's results."""
    out = []
    for folder in sorted(root.glob("*/case=*/seed*")):
        out.append((folder.parent.parent.name, folder.parent.name.split("=", 1)[1],
                    int(folder.name[4:]), folder))
    return out


def times(comparison: pd.DataFrame) -> pd.DataFrame:
    """Time to 70 and 80 % per algorithm and case (mean, each seed), its ratio to today's,
    and FedAvg's over SCALA's in the same case (ratios of the seeds' means)."""
    rows = []
    for (algorithm, case), group in comparison.groupby(["algorithm", "case"]):
        group = group.sort_values("seed")
        row = {"algorithm": algorithm, "case": case, "seeds": len(group), **seed_times(group)}
        row["round_time_s"] = float((group["total_sim_time_s"] / group["rounds"]).mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    for target in ("0.7", "0.8"):
        column = f"time_to_{target}_s"
        today = table[table["case"] == "today"].set_index("algorithm")[column]
        table[f"vs_today_{target}"] = table[column] / table["algorithm"].map(today)
        scala = table[table["algorithm"] == "scala"].set_index("case")[column]
        table[f"fedavg_over_scala_{target}"] = np.where(
            table["algorithm"] == "fedavg", table[column] / table["case"].map(scala), np.nan)
    order = {c: i for i, c in enumerate(CASES)}
    return table.sort_values(["algorithm", "case"], key=lambda s: s.map(order)
                             if s.name == "case" else s).reset_index(drop=True)


def patterns(comparison: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The TDD frame's sensitivity runs (`comparison`: their comparison.csv): per algorithm
    and case, the time to 80 % (mean, each seed) and its ratio to today's network and to the
    study's DDDSU case on 20 MHz (`table`: times.csv; ratios of the seeds' means)."""
    base = table.set_index(["algorithm", "case"])["time_to_0.8_s"]
    rows = []
    for (algorithm, case), group in comparison.groupby(["algorithm", "case"], sort=False):
        values = group.sort_values("seed")["time_to_0.8_s"].astype(float)
        rows.append({"algorithm": algorithm, "case": case, "seeds": len(values),
                     "time_to_0.8_s": values.mean(),
                     "time_to_0.8_s_per_seed": " ".join(f"{t:.1f}" for t in values),
                     "vs_today_0.8": values.mean() / base[(algorithm, "today")],
                     "vs_tdd_0.8": values.mean() / base[(algorithm, "tdd")]})
    order = {c: i for i, c in enumerate(PATTERNS)}
    return pd.DataFrame(rows).sort_values(
        ["algorithm", "case"], key=lambda s: s.map(order) if s.name == "case" else s
    ).reset_index(drop=True)


def time_split(run: Path) -> dict[str, float]:
    """A run's round: its mean time and critical path (rounds.csv), and per direction its
    transfers' time summed over a round and split into moving bits, HARQ retransmission
    slots (within the moving), waiting for the symbols, the HARQ wait."""
    rounds = pd.read_csv(run_file(run, "rounds.csv"))
    out = {"round_time_s": float(rounds["round_time_s"].mean())}
    for part in ("compute", "uplink", "downlink", "server", "idle"):
        out[f"critical_{part}_s"] = float(rounds[f"{part}_time_s"].mean())
    events = pd.read_csv(run_file(run, "events.csv"))
    moved = events[events["kind"].isin(TRANSFERS)]
    n_rounds = len(rounds)
    for direction, kinds in (("up", UPLINK), ("down", ("gradient_download", "model_download"))):
        e = moved[moved["kind"].isin(kinds)]
        air = 8.0 * e["payload_bytes"] / e["rate_bps"]
        wait = e["tdd_wait_s"] if "tdd_wait_s" in e else pd.Series(0.0, index=e.index)
        harq = e["harq_wait_s"] if "harq_wait_s" in e else pd.Series(0.0, index=e.index)
        resent = (e["transmissions"] * e["bler"].fillna(0.0) * SLOT_S
                  if "transmissions" in e else pd.Series(0.0, index=e.index))
        # (NR: the air time a transfer sent nothing, its SINR below its lowest MCS's curve)
        stalled = (air - e["transmissions"] * SLOT_S).clip(lower=0.0) if "transmissions" in e \
            else pd.Series(0.0, index=e.index)
        out[f"{direction}_total_s"] = float((e["t_end_s"] - e["t_start_s"]).sum() / n_rounds)
        out[f"{direction}_moving_s"] = float(air.sum() / n_rounds)
        out[f"{direction}_retransmitting_s"] = float(resent.sum() / n_rounds)
        out[f"{direction}_stalled_s"] = float(stalled.sum() / n_rounds)
        out[f"{direction}_symbol_wait_s"] = float(wait.sum() / n_rounds)
        out[f"{direction}_harq_wait_s"] = float(harq.sum() / n_rounds)
    air = pd.read_csv(run_file(run, "air.csv"))
    # round robin: the share of transfers whose blocks changed while they were on the air
    out["regranted_share"] = (float((air.groupby("event_index").size() > 1).mean())
                              if "cap_blocks" in air else np.nan)
    return out


def clients(run: Path) -> pd.DataFrame:
    """Per client of a run: LOS, indoor, its uploads' mean goodput (Mbit/s), SINR (dB) and
    MCS (NaN without the NR abstraction), its time busy per round it took part in."""
    events = pd.read_csv(run_file(run, "events.csv"))
    drop = pd.read_csv(run_file(run, "clients.csv"),
                       usecols=["client_id", "serving_cell", "los", "indoor", "d2d_m"])
    up = events[events["kind"].isin(UPLINK)]
    own = events[events["kind"].isin(CLIENT_KINDS)]
    busy = (own["t_end_s"] - own["t_start_s"]).groupby(
        [own["client_id"], own["round"]]).sum().groupby(level=0).mean()
    per = up.groupby("client_id").agg(
        uplink_mbps=("rate_bps", lambda r: r.mean() / 1e6), uplink_sinr_db=("sinr_db", "mean"),
        uplink_mcs=("mcs", "mean") if "mcs" in up else ("rate_bps", lambda r: np.nan))
    out = drop.set_index("client_id").join(busy.rename("busy_per_round_s"), how="inner")
    return out.join(per).reset_index()


def _markdown(table: pd.DataFrame, digits: int = 1) -> str:
    head = "| " + " | ".join(table.columns) + " |"
    rule = "|" + "---|" * len(table.columns)
    body = []
    for row in table.itertuples(index=False):
        cells = [f"{v:,.{digits}f}" if isinstance(v, float) and np.isfinite(v) else
                 ("—" if isinstance(v, float) else str(v)) for v in row]
        body.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *body])


def _change(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f} %"


def _ratios(t: pd.DataFrame) -> str:
    ratio = t["fedavg_over_scala_0.8"].xs("fedavg")
    return ", ".join(f"{ratio[c]:.1f}x {label}"
                     for c, label in (("today", "today"), ("tdd", "under TDD"),
                                      ("nr", "under NR"), ("all_three", "under all three")))


def _regranted(split: pd.DataFrame) -> str:
    rr = split[split["case"] == "round_robin"].groupby("algorithm")["regranted_share"].mean()
    return (f"{100 * rr['scala']:.1f} % of SCALA's transfers and {100 * rr['fedavg']:.1f} % of "
            f"FedAvg's ever had their blocks split again while on the air.")


def first_answer(table: pd.DataFrame, split: pd.DataFrame) -> str:
    """(1) How each change moves the times to 70 and 80 % and their ratio; which moves most."""
    t = table.set_index(["algorithm", "case"])
    parts = []
    for case in CASES[1:]:
        parts.append(
            f"{CASE_TEXT[case]} moves SCALA's time to 80 % by "
            f"{_change(t.loc[('scala', case), 'vs_today_0.8'])} and FedAvg's by "
            f"{_change(t.loc[('fedavg', case), 'vs_today_0.8'])} (to 70 %: "
            f"{_change(t.loc[('scala', case), 'vs_today_0.7'])} and "
            f"{_change(t.loc[('fedavg', case), 'vs_today_0.7'])}), FedAvg/SCALA "
            f"{t.loc[('fedavg', case), 'fedavg_over_scala_0.8']:.1f}x at 80 %")
    def moved(algorithm: str, case: str) -> float:
        return float(abs(np.log(t.loc[(algorithm, case), "vs_today_0.8"])))
    most = {a: max(CASES[1:4], key=functools.partial(moved, a)) for a in NAMES}
    ratio = t["fedavg_over_scala_0.8"].xs("fedavg")
    slower = [CASE_TEXT[c].split(" (")[0] for c in ("tdd", "nr")
              if t.loc[("scala", c), "vs_today_0.8"] > t.loc[("fedavg", c), "vs_today_0.8"]]
    trend = (f"{' and '.join(slower)} slow{'s' if len(slower) == 1 else ''} SCALA more than "
             f"FedAvg in proportion, so SCALA's advantage shrinks" if slower else
             "neither TDD nor NR slows SCALA more than FedAvg in proportion")
    return (f"Today FedAvg needs {t.loc[('fedavg', 'today'), 'fedavg_over_scala_0.8']:.1f}x "
            f"SCALA's time to 80 % ({t.loc[('scala', 'today'), 'time_to_0.8_s']:,.0f} s "
            f"against {t.loc[('fedavg', 'today'), 'time_to_0.8_s']:,.0f} s, means over the "
            f"seeds). " + "; ".join(parts) + ". Of the three alone, "
            f"{CASE_TEXT[most['scala']]} moves SCALA most and {CASE_TEXT[most['fedavg']]} "
            f"FedAvg most; {trend} (FedAvg/SCALA {_ratios(t)}; between "
            f"{ratio.min():.1f}x and {ratio.max():.1f}x over the five cases, ratios of the "
            f"seeds' means). Round robin "
            f"changes little: {_regranted(split)} With 10 clients a round over 21 cells most "
            f"cells hold one client of the round, who has all 51 blocks under either "
            f"scheduler.")


def tdd_answer(table: pd.DataFrame, frames: pd.DataFrame | None) -> str:
    """What TDD's cost depends on: the frame's uplink share, and the spectrum (FDD's two
    paired bands against TDD's one carrier); with the sensitivity runs, their figures."""
    t = table.set_index(["algorithm", "case"])["vs_today_0.8"]
    text = (f"TDD's cost here is the DDDSU frame's: its uplink has {UPLINK_SYMBOLS['tdd']} "
            f"symbols, and today's paired bands carry twice the spectrum (20 MHz each way) of "
            f"the one 20 MHz TDD carrier, so the {t[('scala', 'tdd')]:.2f}x (SCALA) and "
            f"{t[('fedavg', 'tdd')]:.2f}x (FedAvg) to 80 % depend on the pattern and the "
            f"carrier")
    if frames is None:
        return text + "."
    f = frames.set_index(["algorithm", "case"])
    wider = f.loc[("scala", "tdd_40mhz"), "vs_tdd_0.8"]
    return text + ": " + "; ".join(
        f"{PATTERNS[case]} (uplink {UPLINK_SYMBOLS[case]} symbols) takes SCALA "
        f"{f.loc[('scala', case), 'vs_today_0.8']:.2f}x today's time to 80 % and FedAvg "
        f"{f.loc[('fedavg', case), 'vs_today_0.8']:.2f}x" for case in PATTERNS) + (
        " (ratios of the seeds' means, tdd_patterns.csv); against DDDSU on 20 MHz, the 40 MHz "
        f"carrier moves SCALA's time to 80 % by {_change(wider)} and the DSUUU frame by "
        f"{_change(f.loc[('scala', 'tdd_dsuuu'), 'vs_tdd_0.8'])}" + (
            ": the frame's uplink share sets the cost, twice the carrier barely moves it."
            if abs(wider - 1) < 0.1 else "."))


def second_answer(split: pd.DataFrame) -> str:
    """(2) Where a round's time goes under TDD."""
    lines = []
    for case in ("tdd", "all_three"):
        for algorithm in NAMES:
            r = split[(split["algorithm"] == algorithm) & (split["case"] == case)].mean(
                numeric_only=True)
            lines.append(
                f"{NAMES[algorithm]} under {CASE_TEXT[case]}: a round of "
                f"{r['round_time_s']:.2f} s; its uploads take {r['up_total_s']:.2f} s summed "
                f"over the round's transfers, {_share(r, 'up', 'moving')} on the air "
                f"({_share(r, 'up', 'retransmitting')} in HARQ retransmissions, "
                f"{_share(r, 'up', 'stalled')} sending nothing below the lowest MCS), "
                f"{_share(r, 'up', 'symbol_wait')} waiting for uplink symbols and the grant "
                f"(K2), "
                f"{_share(r, 'up', 'harq_wait')} waiting for the last block's HARQ; its "
                f"downloads {r['down_total_s']:.2f} s, {_share(r, 'down', 'moving')} moving, "
                f"{_share(r, 'down', 'symbol_wait')} waiting for downlink symbols, "
                f"{_share(r, 'down', 'harq_wait')} HARQ")
    return "; ".join(lines) + "."


def _share(r: pd.Series, direction: str, part: str) -> str:
    total = r[f"{direction}_total_s"]
    return f"{100 * r[f'{direction}_{part}_s'] / total:.0f} %" if total > 0 else "—"


def third_answer(per_client: pd.DataFrame) -> str:
    """(3) Do the LOS clients keep their lead once the MCS caps their rate?"""
    scala = per_client[per_client["algorithm"] == "scala"]
    rates = scala.groupby(["case", "los"])["uplink_mbps"].mean()
    busy = scala.groupby(["case", "los"])["busy_per_round_s"].mean()
    parts = []
    for case in ("today", "nr", "all_three"):
        lead = rates[(case, 1)] / rates[(case, 0)]
        parts.append(f"{CASE_TEXT[case]}: LOS clients' uploads {rates[(case, 1)]:.1f} Mbit/s "
                     f"against NLOS {rates[(case, 0)]:.1f} ({lead:.1f}x), busy "
                     f"{busy[(case, 1)]:.2f} s a round against {busy[(case, 0)]:.2f} s")
    nr = scala[scala["case"] == "nr"]
    mcs = nr.groupby("los")["uplink_mcs"].mean()
    top = (nr[nr["los"] == 1]["uplink_mcs"] >= 26.5).mean()
    cut = {los: 1 - rates[("nr", los)] / rates[("today", los)] for los in (0, 1)}
    return ("SCALA, every client of each seed: " + "; ".join(parts)
            + f". The NR abstraction takes {100 * cut[1]:.0f} % off the LOS clients' uplink "
              f"rate and {100 * cut[0]:.0f} % off the NLOS clients' (mean MCS {mcs[1]:.1f} and "
              f"{mcs[0]:.1f}; {100 * top:.0f} % of the LOS clients average the table's top "
              f"MCS 27): the LOS clients keep their lead in rate, and in time busy it grows, "
              f"as the NLOS clients near the lowest MCS lose more to HARQ retransmissions.")


def _intro(comparison: pd.DataFrame) -> list[str]:
    wall = comparison.groupby("case")["wall_time_s"].sum()
    runs_text = ", ".join(f"{CASE_TEXT[c]} {wall[c]:.0f} s" for c in CASES if c in wall)
    return [
        "# NR study: TDD, the NR link abstraction and round robin (issue 49)", "",
        "Built by `python -m analysis.nr RESULTS/nr --out docs/studies/nr` from the study's "
        "run records (kept slim in `results/`: regenerate them first with `python -m "
        "scala_netsim.tools.regenerate docs/studies/nr/results --out RESULTS/nr`). The runs:",
        "", "    python -m scala_netsim scenarios/nr.yaml --retime-from "
        "docs/studies/cellular_10pct", "",
        "The headline's kept SCALA and FedAvg trainings (the paper's setting, the authors' "
        "AlexNet, 500 rounds, seeds 0-2), each re-timed (the same learning, timed again) in a "
        "7-site, 3-sector 38.901 UMa network at 3.5 GHz (ISD 500 m, wraparound, 80 % indoors, "
        "interference on, 20 MHz at 30 kHz: 51 blocks a cell and direction, 46 dBm a cell, "
        "0.2 W a client), 10 of the 100 clients a round over 21 cells, under five cases: "
        + "; ".join(f"`{c}`: {CASE_TEXT[c]}" for c in CASES) + ". Every case radiates 46 dBm a "
        "cell: at the paper cell's 1 W some clients decode no MCS on the downlink, which the "
        "NR cases refuse at the drop. No named deployment (`network.deployment: null`): "
        "every key is set by hand; the nearest, `uma_n78` (docs/model/network.md), has 19 "
        "sites against 7, one 100 MHz carrier (273 blocks) against 20 MHz (51), 56 dBm a cell "
        "against 46, noise figures of 5 dB (base station) and 9 dB (client) against none, "
        "uplink power control against a fixed 0.2 W, and a panel a sector (10 rows steered 12 "
        "degrees down, 8 columns pointing a beam at each served client) against one element "
        "and no downtilt. "
        "30 re-timings on the project's 2-core CPU (one process, "
        "from a worktree at commit adf0575, the round-robin cases again at commit 4431156, "
        "where a download that joins its cell radiates P_bs / N a block to the bit, as one "
        "whose blocks move does (their times moved by at most 4e-16 of a value; 60b6ea3's "
        "faster round robin had moved their time averages of SINR, interference, MCS and BLER "
        "by at most 3e-14 and no time), and once more after issue 50's fixed-rate link, "
        "where a round-robin transfer's time-averaged power is summed exactly (math.fsum), "
        "not by a BLAS dot product whose kernel, and so its last bit, depends on the "
        "processor (their rounds' transmit energies moved by at most 2.4e-16 of a value, "
        "nothing else); numpy's AVX-512 paths off as `python -m "
        "scala_netsim.tools.regenerate` runs them, the last two processes at a time, the others "
        "beside two training lanes; FedAvg's 15 once more at commit 3aba57a, issue 61, from "
        "the headline's own FedAvg, `optimizer_state: persistent` as the scenario now pins it, "
        "where they had been re-timed from its per-round variant: every transfer the same to "
        "the bit, their events, air, clients and cells tables equal to their earlier digests, "
        "only the accuracies differ), wall time summed per "
        f"case over both algorithms and the seeds: {runs_text}.", ""]


def report(comparison: pd.DataFrame, table: pd.DataFrame, split: pd.DataFrame,
           per_client: pd.DataFrame, frames: pd.DataFrame | None = None) -> str:
    """report.md: what was run, the three answers, then the tables they come from; `frames`:
    the TDD frame's sensitivity runs (tdd_patterns.csv), when they were run."""
    cases = table.assign(case=table["case"].map(CASE_TEXT),
                         algorithm=table["algorithm"].map(NAMES))
    parts = split.groupby(["algorithm", "case"], sort=False).mean(numeric_only=True).drop(
        columns="seed").reset_index()
    parts = parts.assign(case=parts["case"].map(CASE_TEXT),
                         algorithm=parts["algorithm"].map(NAMES))
    groups = per_client.groupby(["algorithm", "case", "los", "indoor"]).agg(
        clients=("client_id", "size"), uplink_mbps=("uplink_mbps", "mean"),
        uplink_sinr_db=("uplink_sinr_db", "mean"), uplink_mcs=("uplink_mcs", "mean"),
        busy_per_round_s=("busy_per_round_s", "mean")).reset_index()
    return "\n".join([
        *_intro(comparison),
        "## Answers", "",
        f"1. {first_answer(table, split)} {tdd_answer(table, frames)}", "",
        f"2. {second_answer(split)}", "",
        f"3. {third_answer(per_client)}", "",
        "## Time to 70 and 80 % (times.csv)", "",
        _markdown(cases[["algorithm", "case", "seeds", "time_to_0.7_s", "time_to_0.7_s_per_seed",
                         "time_to_0.8_s", "time_to_0.8_s_per_seed", "vs_today_0.7",
                         "vs_today_0.8", "fedavg_over_scala_0.8", "round_time_s"]], 2), "",
        "Simulated seconds, the mean of the seeds then each seed's; vs_today: the mean's ratio "
        "to today's network; fedavg_over_scala: FedAvg's mean over SCALA's in the case.", "",
        *([] if frames is None else [
            "## The TDD frame (tdd_patterns.csv)", "",
            _markdown(frames.assign(case=frames["case"].map(PATTERNS),
                                    algorithm=frames["algorithm"].map(NAMES)), 2), "",
            "The same re-timings under another TDD pattern or on a 40 MHz carrier (`"
            + PATTERN_COMMAND + "`); vs_today: the mean's ratio to today's network (paired "
            "20 MHz bands), vs_tdd: to the DDDSU case on 20 MHz.", ""]),
        "## Where a round's time goes (time_split.csv)", "",
        _markdown(parts, 3), "",
        "Per round (means over the rounds, then the seeds): the round's time and its critical "
        "path (rounds.csv), and per direction the transfers' durations summed over the round: "
        "moving bits (bits over rate, in the direction's symbols; retransmitting: the slots "
        "that carried HARQ retransmissions, transmissions x TBLER x slot; stalled: the air "
        "time it sent nothing, its SINR below its lowest MCS's curve), waiting for the "
        "direction's symbols and an upload's grant (tdd_wait_s) and the last block's HARQ wait "
        "(harq_wait_s).", "",
        "## LOS and NLOS clients (clients.csv)", "",
        _markdown(groups.assign(algorithm=groups["algorithm"].map(NAMES),
                                case=groups["case"].map(CASE_TEXT)), 2), "",
        "Per group of clients (every client of each seed's run): its uploads' mean goodput "
        "(Mbit/s), SINR and MCS (averaged over each upload's time sending), and its time busy "
        "per round it took part in.", "",
        "## Figures", "",
        "![accuracy against simulated time](figures/accuracy_vs_time.png)", ""])


def not_the_study(results: Path, found: list[tuple[str, str, int, Path]]) -> str | None:
    """Why `results` is not the NR study's results folder (its algorithms' runs in each of
    CASES, and comparison.csv), or None: the answers read every one of them."""
    have = {(algorithm, case) for algorithm, case, _, _ in found}
    if not all((algorithm, case) in have for algorithm in NAMES for case in CASES):
        seen = (f"cases {', '.join(sorted({c for _, c in have}))} of "
                f"{', '.join(sorted({a for a, _ in have}))}" if have else
                "no run under <algorithm>/case=<name>/seed<k>/")
        return (f"{results}: python -m analysis.nr writes the NR study's report "
                f"(scenarios/nr.yaml): it needs runs of {' and '.join(NAMES)} in each of the "
                f"study's cases (its sweep entry case): {', '.join(CASES)}; found {seen}")
    if not (results / "comparison.csv").is_file():
        return (f"{results}: no comparison.csv (the study's run writes it; python -m "
                f"analysis.nr reads the NR study's results folder, OUT/nr)")
    return None


def not_the_patterns(folder: Path) -> str | None:
    """Why `folder` is not the TDD frame's sensitivity runs (--patterns: comparison.csv with
    runs of both algorithms in each of PATTERNS), or None."""
    table = folder / "comparison.csv"
    have = (set() if not table.is_file() else
            set(map(tuple, pd.read_csv(table)[["algorithm", "case"]].to_numpy().tolist())))
    if not all((algorithm, case) in have for algorithm in NAMES for case in PATTERNS):
        return (f"{folder}: --patterns reads the TDD frame's runs (`{PATTERN_COMMAND}`): its "
                f"comparison.csv with runs of {' and '.join(NAMES)} in each of the cases "
                f"{', '.join(PATTERNS)}; found " + (", ".join(sorted(f"{a} {c}" for a, c in have))
                                                    or "no comparison.csv"))
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="scenarios/nr.yaml's results")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--patterns", type=Path, default=None,
                        help="the TDD frame's sensitivity runs' results (their comparison.csv; "
                             "issue 61): tdd_patterns.csv and its paragraph")
    args = parser.parse_args(argv)
    found = runs(args.results)
    problem = not_the_study(args.results, found)   # (before anything is written)
    if problem is None and args.patterns is not None:
        problem = not_the_patterns(args.patterns)
    if problem:
        print(f"error: {problem}; nothing was written", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    comparison = pd.read_csv(args.results / "comparison.csv")
    table = times(comparison)
    split = pd.DataFrame([{"algorithm": a, "case": c, "seed": s, **time_split(f)}
                          for a, c, s, f in found])
    per_client = pd.concat([clients(f).assign(algorithm=a, case=c, seed=s)
                            for a, c, s, f in found], ignore_index=True)
    frames = None
    if args.patterns is not None:
        frames = patterns(pd.read_csv(args.patterns / "comparison.csv"), table)
        frames.to_csv(args.out / "tdd_patterns.csv", index=False)
    table.to_csv(args.out / "times.csv", index=False)
    split.to_csv(args.out / "time_split.csv", index=False)
    per_client.to_csv(args.out / "clients.csv", index=False)
    (args.out / "report.md").write_text(report(comparison, table, split, per_client, frames))
    print(f"wrote times.csv, time_split.csv, clients.csv"
          f"{'' if frames is None else ', tdd_patterns.csv'} and report.md into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
