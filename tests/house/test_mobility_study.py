"""The mobility study's report and tables come from its kept run records (issue 64):
analysis.mobility writes them again, to the byte, from the kept comparison.csv, each kept
run's rounds.csv and the handover numbers its full records gave (results/handovers.csv); a
folder that is not the study's is refused, exit 2, before anything is written."""

from pathlib import Path

import pandas as pd
import pytest

from analysis import mobility

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "mobility"


def test_the_report_and_its_table_are_the_ones_written_from_the_kept_runs(tmp_path):
    assert mobility.main([str(STUDY / "results"), "--out", str(tmp_path)]) == 0
    for name in ("report.md", "times.csv", "deadline.csv", "dropped.csv"):
        assert (tmp_path / name).read_text() == (STUDY / name).read_text(), name


def test_the_answers_read_the_tables():
    table = pd.read_csv(STUDY / "times.csv")
    handovers = pd.read_csv(STUDY / "results" / "handovers.csv")
    lines = mobility.answers(table, handovers)
    fast = [line for line in lines if line.startswith("- **30 % of outdoor clients in vehicles "
                                                       "at 120 km/h**")]
    scala = table[(table["algorithm"] == "scala") & (table["case"] == "vehicles_120")]
    assert f"time to 80 % {scala['time_to_0.8_s'].iloc[0]:,.0f} s" in fast[0]
    mean = handovers[(handovers["algorithm"] == "fedavg")
                     & (handovers["case"] == "vehicles_120")]["per_client_hour"].mean()
    assert f"FedAvg: {mean:.1f} handovers a selected client-hour" in fast[0]
    assert lines[-1].startswith("- **Which loses more.**")


def test_another_studys_folder_is_refused_before_anything_is_written(tmp_path, capsys):
    other = ROOT / "docs" / "studies" / "operator" / "results"
    assert mobility.main([str(other), "--out", str(tmp_path / "out")]) == 2
    assert "not the mobility study's results" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _write(folder: Path, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / name, index=False)


def test_who_a_deadline_drops_is_counted_by_hand(tmp_path, monkeypatch):
    """Four clients over two rounds (by hand): 0 indoor; 1 outdoor at 0.83 m/s (0.53 m/s
    over its last move); 2 outdoor at
    33.3 m/s (a vehicle), handed over at t = 5 s in round 1 and dropped in both its rounds;
    3 outdoor with no move recorded (on foot), dropped in round 2."""
    from analysis import mobility_deadline as md

    monkeypatch.setattr(md, "SELECTED_AT_LEAST", 2)
    run = tmp_path / "scala" / "case=vehicles_120_deadline" / "seed0"
    loss = {"pathloss_db": 100.0, "shadowing_db": 0.0, "o2i_db": 0.0, "antenna_gain_db": 0.0}
    _write(run, "clients.csv", [
        {"client_id": k, "indoor": int(k == 0), "flops_per_s": 2e9 if k < 2 else 8e9,
         **{**loss, "pathloss_db": 100.0 + k}} for k in range(4)])
    _write(run, "mobility.csv", [
        {"client_id": 0, "t_s": 5.0, "walked_m": 1.0}, {"client_id": 0, "t_s": 10.0,
                                                          "walked_m": 5.0},
        {"client_id": 1, "t_s": 0.0, "walked_m": 0.0}, {"client_id": 1, "t_s": 10.0,
                                                          "walked_m": 8.3},
        # a handover's row repeats the last move's distance; timed from it, the next move
        # (0.1 m in 0.01 s) would look like a vehicle's
        {"client_id": 1, "t_s": 10.18, "walked_m": 8.3}, {"client_id": 1, "t_s": 10.19,
                                                           "walked_m": 8.4},
        {"client_id": 2, "t_s": 0.0, "walked_m": 0.0}, {"client_id": 2, "t_s": 1.0,
                                                          "walked_m": 33.3}])
    _write(run, "events.csv", [
        {"round": 1, "client_id": 0, "kind": "model_download", "t_start_s": 0.0,
         "t_end_s": 20.0},
        {"round": 1, "client_id": 2, "kind": "client_dropped", "t_start_s": 15.0,
         "t_end_s": 15.0},
        {"round": 2, "client_id": 1, "kind": "model_download", "t_start_s": 20.0,
         "t_end_s": 40.0},
        {"round": 2, "client_id": 2, "kind": "client_dropped", "t_start_s": 35.0,
         "t_end_s": 35.0},
        {"round": 2, "client_id": 3, "kind": "client_dropped", "t_start_s": 35.0,
         "t_end_s": 35.0}])
    _write(run, "demands.csv", [{"round": r, "client_id": k}
                                for r, ks in ((1, (0, 1, 2)), (2, (1, 2, 3))) for k in ks])
    _write(run, "handovers.csv", [{"client_id": 2, "t_s": 5.0}, {"client_id": 1, "t_s": 45.0}])

    chosen = md.selections(run)
    assert dict(zip(chosen["client_id"], chosen["kind"], strict=False)) == {
        0: "indoor on foot", 1: "outdoor on foot", 2: "outdoor in a vehicle",
        3: "outdoor on foot"}
    assert chosen.loc[chosen["handed_over"], ["round", "client_id"]].values.tolist() == [[1, 2]]
    listed = pd.DataFrame([{"algorithm": "scala", "case": "vehicles_120_deadline", "seed": 0,
                            "folder": "scala/case=vehicles_120_deadline/seed0"}])
    table = md.dropped_table(tmp_path, listed).set_index("group")
    assert table.loc["outdoor in a vehicle", ["selected", "dropped"]].tolist() == [2, 2]
    assert table.loc["outdoor on foot", ["selected", "dropped"]].tolist() == [3, 1]
    assert table.loc["indoor on foot", "value"] == 0.0
    assert table.loc["handed over in the round", "value"] == 1.0
    assert table.loc["not handed over in the round", "value"] == 2 / 5
    assert table.loc["1-5.5 GFLOP/s", ["selected", "dropped"]].tolist() == [3, 0]
    assert table.loc["drops carried by the tenth of clients dropped most", "value"] == 2 / 3
    # selected twice or more: clients 1 (never dropped) and 2 (dropped twice)
    assert table.loc["clients selected 2+ times never dropped", "value"] == 0.5
    assert set(table["seed"]) == {0}
    # a second seed kept slim: its rows come from the dropped.csv kept before, and the
    # report pools both (sums of selections and drops; a concentration the seeds' mean)
    kept = md.dropped_table(tmp_path, listed).assign(seed=1)
    kept.loc[kept["group"] == "clients selected 2+ times never dropped", "value"] = 1.0
    kept = kept[kept["group"] != "indoor on foot"]   # (no indoor client selected in seed 1)
    both = pd.concat([listed, listed.assign(seed=1, folder="scala/slim/seed1")])
    with pytest.raises(ValueError, match="seed1: kept slim .* not in the kept dropped.csv"):
        md.dropped_table(tmp_path, both)
    pool = md.pooled(md.dropped_table(tmp_path, both, kept))
    by_group = pool.set_index("group")
    assert by_group.loc["outdoor in a vehicle", ["seeds", "selected", "dropped"]].tolist() \
        == [2, 4, 4]
    assert by_group.loc["outdoor in a vehicle", "value"] == 4 / 4
    assert by_group.loc["outdoor in a vehicle", "share_of_drops"] == 4 / (3 + 3)
    assert by_group.loc["indoor on foot", "selected"] == table.loc["indoor on foot", "selected"]
    assert by_group.loc["clients selected 2+ times never dropped", "value"] == (0.5 + 1.0) / 2
    shares = pool[pool["by"] != "concentration"].groupby("by")["share_of_drops"].sum()
    assert (abs(shares - 1.0) < 1e-12).all(), shares


def test_a_deadlines_cost_is_weighed_seed_by_seed_against_its_own_mobility():
    from analysis import mobility_deadline as md

    comparison = pd.DataFrame([
        {"algorithm": "fedavg", "case": case, "seed": seed, "late_acc": acc,
         "final_acc": acc, "time_to_0.8_s": 100.0, "total_sim_time_s": 500.0, "rounds": 5}
        for case, seed, acc in (("static", 0, 0.80), ("static", 1, 0.82),
                                ("static_deadline", 0, 0.78), ("static_deadline", 1, 0.83))])
    table = md.deadline_table(comparison).set_index("case")
    assert table.loc["static_deadline", "late_cost_pp_per_seed"] == "-2.00 +1.00"
    assert abs(table.loc["static_deadline", "late_cost_pp"] - (-0.5)) < 1e-12
    assert table.loc["static", "round_s"] == 100.0


def test_every_figure_the_index_quotes_of_the_deadline_half_is_in_the_report():
    """docs/studies/index.md's paragraph on the deadline cases: each number it quotes with a
    decimal point is one the report prints (ranges and rounded shares aside)."""
    import re

    index = " ".join((ROOT / "docs" / "studies" / "index.md").read_text().split())
    part = index.split("## [alexnet] Clients that move")[1].split(" ## ")[0]
    half = part.split("The deadline half")[1]
    report = " ".join((STUDY / "report.md").read_text().split())
    quoted = re.findall(r"(?<![\d.-])-?\d[\d,]*\.\d+", half)
    assert len(quoted) > 20
    missing = [q for q in quoted if not re.search(rf"(?<![\d.]){re.escape(q)}(?!\d)", report)]
    assert not missing, missing
