"""The network shapes the learning: round and step deadlines, over-selection and lost
transfers drop clients, with exact values worked out from the timeline."""

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

import channel
from analysis.compare import class_losses
from scala_netsim.algorithms.common import state_tensors
from scala_netsim.books.rounds import label_bias_tv
from scala_netsim.core.events import EventKind
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world

from conftest import N0_DBM_PER_HZ, ROOT, events_of, tiny_cell, tiny_scenario

# Three clients on a line from the base station: two near, one at the cell edge; equal FLOP/s,
# so the far client's slow radio alone makes it late.
DISTANCES_M = (100.0, 150.0, 480.0)
FAR = 2


def three_client_run(fashion_slice, algorithm: str, training: dict | None = None,
                     **sections: dict) -> Run:
    """`algorithm` on the Fashion-MNIST slice, 3 clients (all selected), iid, B = 24, the cell
    of DISTANCES_M at 1e10 FLOP/s each."""
    scenario = tiny_scenario(algorithm, data={"num_clients": 3, "partition": {"kind": "iid"}},
                             training={"participation": 1.0, "rounds": 1, **(training or {})},
                             **sections)
    world = build_world(scenario, fashion_slice)
    world.cell = tiny_cell(DISTANCES_M, (1e10,) * 3)
    return Run(scenario, algorithm, world, torch.device("cpu"))


def ends(run: Run, kind: EventKind) -> dict[int, float]:
    """Client -> the end of its (last) event of `kind`."""
    frame = events_of(run)
    frame = frame[frame["kind"] == kind.value]
    return frame.groupby("client_id")["t_end_s"].max().to_dict()


def test_fedavg_round_deadline_averages_exactly_the_clients_in_time(fashion_slice):
    free = three_client_run(fashion_slice, "fedavg")
    free.step()
    uploads = {m.client_id: [t.clone() for t in m.tensors] for m in free.trainer._uploads}
    finish = ends(free, EventKind.MODEL_UPLOAD)
    assert max(finish, key=finish.get) == FAR      # the far client is the last one in
    deadline = (sorted(finish.values())[1] + finish[FAR]) / 2

    run = three_client_run(fashion_slice, "fedavg", {"deadline_s": deadline})
    row = run.step()
    # the global model is the |D_k|-weighted average of clients 0 and 1, exactly
    sizes = [run.trainer.sampler.num_samples(k) for k in (0, 1)]
    fractions = [s / sum(sizes) for s in sizes]
    for got, w0, w1 in zip(state_tensors(run.trainer.model), uploads[0], uploads[1], strict=True):
        assert torch.equal(got, (w0 * fractions[0]).add_(w1, alpha=fractions[1]))
    assert run.trainer.aggregations == [("client", 0, fractions[0]), ("client", 1, fractions[1])]
    # the round ends at the deadline; the far client's upload is cut there, then it is dropped
    assert row["round_time_s"] == deadline and row["sim_time_s"] == deadline
    assert (row["num_selected"], row["num_contributing"], row["num_dropped"]) == (3, 2, 1)
    assert row["num_dropped_deadline"] == 1 and row["num_dropped_lost"] == 0
    counts = run.world.label_counts
    assert [row[f"contrib_label_{c}"] for c in range(10)] == (counts[0] + counts[1]).tolist()
    p, q = counts[[0, 1]].sum(0) / counts[[0, 1]].sum(), counts.sum(0) / counts.sum()
    assert row["label_bias_tv"] == pytest.approx(0.5 * np.abs(p - q).sum(), rel=1e-12)
    events = events_of(run)
    far = events[events["client_id"] == FAR]
    upload, dropped = far.iloc[-2], far.iloc[-1]
    assert upload["kind"] == "model_upload" and upload["completed"] == 0
    assert upload["t_end_s"] == deadline
    whole = free.log.rows[[i for i, r in enumerate(free.log.rows)
                           if r[4] == FAR and r[5] == "model_upload"][0]]
    assert upload["t_start_s"] == whole[0]                       # the same timeline before
    assert upload["payload_bytes"] == int(whole[6] * (deadline - whole[0]) / (whole[1] - whole[0]))
    assert (dropped["kind"], dropped["t_start_s"], dropped["t_end_s"]) == (
        "client_dropped", deadline, deadline)
    assert events.loc[events["client_id"] != FAR, "completed"].eq(1).all()
    assert not run.problems()


def test_fedavg_round_without_contributor_keeps_the_global_model(fashion_slice):
    run = three_client_run(fashion_slice, "fedavg", {"deadline_s": 0.1})
    before = [t.clone() for t in state_tensors(run.trainer.model)]
    row = run.step()
    assert (row["num_contributing"], row["num_dropped"], row["round_time_s"]) == (0, 3, 0.1)
    assert math.isnan(row["label_bias_tv"])
    assert all(torch.equal(a, b) for a, b in zip(before, state_tensors(run.trainer.model),
                                                 strict=True))
    assert run.trainer.aggregations == [] and not run.problems()


def test_scala_step_deadline_steps_on_the_others_with_their_prior(fashion_slice, monkeypatch):
    labels_sent = {}   # (client, local iteration) -> the labels it sends (its own batches)
    forward = type(three_client_run(fashion_slice, "scala").trainer).client_forward

    def record_forward(self, k, t):
        result = forward(self, k, t)
        labels_sent[(k, t)] = result.upload.labels.numpy()
        return result

    free = three_client_run(fashion_slice, "scala")
    monkeypatch.setattr(type(free.trainer), "client_forward", record_forward)
    free.step()
    arrivals = events_of(free).query("kind == 'activation_upload' and local_iter == 0")
    arrival = dict(zip(arrivals["client_id"], arrivals["t_end_s"], strict=True))
    assert max(arrival, key=arrival.get) == FAR
    step_deadline = (sorted(arrival.values())[1] + arrival[FAR]) / 2

    run = three_client_run(fashion_slice, "scala", {"step_deadline_s": step_deadline})
    seen = []
    losses = type(run.trainer).losses

    def spy(self, logits, labels, owner):
        server_loss, per_sample = losses(self, logits, labels, owner)
        seen.append((logits.detach().double().numpy(), labels.numpy(), owner.numpy(),
                     server_loss.item()))
        return server_loss, per_sample

    monkeypatch.setattr(type(run.trainer), "losses", spy)
    row = run.step()
    assert len(seen) == 2                       # both local iterations stepped, on 0 and 1 only
    for t, (logits, labels, owner, server_loss) in enumerate(seen):
        assert sorted(set(owner)) == [0, 1]
        assert np.array_equal(labels, np.concatenate([labels_sent[(0, t)], labels_sent[(1, t)]]))
        prior = np.bincount(labels, minlength=10) / len(labels)   # the two clients' labels
        adjusted = logits + np.log(np.maximum(prior, 1e-12))
        top = adjusted.max(axis=1, keepdims=True)
        log_softmax = adjusted - top - np.log(np.exp(adjusted - top).sum(axis=1, keepdims=True))
        hand = -log_softmax[np.arange(len(labels)), labels].mean()
        assert server_loss == pytest.approx(hand, rel=1e-5)
        everyone = np.concatenate([labels, labels_sent[(FAR, t)]])
        wrong = np.bincount(everyone, minlength=10) / len(everyone)
        assert not np.allclose(prior, wrong)    # the late client's labels would change it
    # the late client: cut at the step deadline, dropped, never aggregated
    assert (row["num_contributing"], row["num_dropped_step_deadline"]) == (2, 1)
    assert [k for _, k, _ in run.trainer.aggregations] == [0, 1]
    events = events_of(run)
    far = events[events["client_id"] == FAR]
    assert far.iloc[-1]["kind"] == "client_dropped"
    assert far.iloc[-1]["t_end_s"] == pytest.approx(step_deadline, rel=1e-12)
    assert far.iloc[-2]["completed"] == 0      # what it was doing then was cut
    assert not run.problems()


def test_over_selection_keeps_the_first_finishers_of_a_hand_computed_timeline(fashion_slice):
    """4 selected, 2 kept (participation 2/4, over_selection 1): each client's finish time
    worked out from the radio formulas; the two earliest are kept, the round ends at the
    second, the others are cut and dropped then."""
    scenario = tiny_scenario("fedavg", data={"num_clients": 4, "partition": {"kind": "iid"}},
                             training={"participation": 0.5, "over_selection": 1.0,
                                       "rounds": 1, "local_iters": 2, "batch_size": 24})
    assert (scenario.num_participants, scenario.num_selected) == (2, 4)
    world = build_world(scenario, fashion_slice)
    distances, flops_per_s = (300.0, 120.0, 400.0, 60.0), (2e9, 8e9, 5e9, 1e9)
    world.cell = tiny_cell(distances, flops_per_s)
    run = Run(scenario, "fedavg", world, torch.device("cpu"))
    row = run.step()
    events = events_of(run)
    model_bytes = run.trainer.model_bytes()
    # a local step's FLOPs as each client declared them (demands.csv; the metered forward and
    # backward passes add up to them), two local steps
    flops = run.log.demands_frame().set_index("client_id")["compute_flops"] * 2
    band = 20e6 / 4                                    # equal shares of both bands
    noise_w = channel.dbm_to_w(N0_DBM_PER_HZ) * band
    finish = {}
    for k, (d, f) in enumerate(zip(distances, flops_per_s, strict=True)):
        gain = 10 ** (-(128.1 + 37.6 * math.log10(d / 1000)) / 10)
        down = band * math.log2(1 + 1.0 * band / 20e6 * gain / noise_w)
        up = band * math.log2(1 + 0.2 * gain / noise_w)
        finish[k] = 8 * model_bytes / down + flops[k] / f + 8 * model_bytes / up
    first, second, *late = sorted(finish, key=finish.get)
    assert row["round_time_s"] == pytest.approx(finish[second], rel=1e-9)
    assert sorted(k for _, k, _ in run.trainer.aggregations) == sorted([first, second])
    assert (row["num_contributing"], row["num_dropped_over_selection"]) == (2, 2)
    drops = events[events["kind"] == "client_dropped"]
    assert sorted(drops["client_id"]) == sorted(late)
    assert np.allclose(drops["t_end_s"], finish[second], rtol=1e-9)
    assert not run.problems()


def test_scala_over_selection_keeps_the_first_activations_of_the_first_iteration(
        fashion_slice):
    scenario = tiny_scenario("scala", data={"num_clients": 4, "partition": {"kind": "iid"}},
                             training={"participation": 0.5, "over_selection": 1.0,
                                       "rounds": 1})
    world = build_world(scenario, fashion_slice)
    world.cell = tiny_cell((300.0, 120.0, 400.0, 60.0), (2e9, 8e9, 5e9, 1e9))
    run = Run(scenario, "scala", world, torch.device("cpu"))
    row = run.step()
    events = events_of(run)
    first = events.query("kind == 'activation_upload' and local_iter == 0 and completed == 1")
    kept = sorted(first["client_id"])
    assert len(kept) == 2 and row["num_dropped_over_selection"] == 2
    drops = events[events["kind"] == "client_dropped"]
    assert (drops["t_end_s"] == first["t_end_s"].max()).all()   # at the second arrival
    steps = events[events["kind"] == "server_step"]
    assert len(steps) == 2 and sorted(k for _, k, _ in run.trainer.aggregations) == kept
    gradients = events[events["kind"] == "gradient_download"]
    assert sorted(set(gradients["client_id"])) == kept
    assert not run.problems()


def test_a_lost_transfer_drops_its_client(make_run):
    """A fixed rate no client reaches: every model download is lost after its attempts; each
    client is dropped when its last attempt ends, nobody contributes, the model is kept."""
    run = make_run("fedavg", network={"link": {"mode": "fixed_rate", "target_rate_bps": 1e12,
                                               "max_attempts": 2}})
    before = [t.clone() for t in state_tensors(run.trainer.model)]
    row = run.step()
    assert (row["num_contributing"], row["num_dropped_lost"]) == (0, 3)
    events = events_of(run)
    downloads = events[events["kind"] == "model_download"]
    assert downloads["completed"].eq(0).all() and downloads["attempts"].eq(2).all()
    assert (downloads["payload_bytes"] == run.trainer.model_bytes()).all()
    drops = events[events["kind"] == "client_dropped"].set_index("client_id")["t_end_s"]
    assert drops.to_dict() == downloads.set_index("client_id")["t_end_s"].to_dict()
    assert all(torch.equal(a, b) for a, b in zip(before, state_tensors(run.trainer.model),
                                                 strict=True))
    assert not run.problems()


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["splitfed_v1", "splitfed_v3", "sfl_local_loss",
                                       "fedconcat", "feddyn"])
def test_each_pattern_drops_at_the_round_deadline_and_balances_its_books(fashion_slice,
                                                                        algorithm):
    """The patterns and aggregations not covered above (SplitFedV2: the SIGKILL test of
    tests/runner/test_reliability.py; CA-SFL: SCALA's protocol): the late client is dropped and not
    averaged, and the books balance."""
    free = three_client_run(fashion_slice, algorithm)
    free.step()
    kind = (EventKind.CLIENT_BACKWARD if algorithm == "splitfed_v3"
            else EventKind.MODEL_UPLOAD)
    finish = ends(free, kind)
    deadline = (sorted(finish.values())[1] + max(finish.values())) / 2
    run = three_client_run(fashion_slice, algorithm, {"deadline_s": deadline})
    row = run.step()
    late = max(finish, key=finish.get)
    assert (row["num_contributing"], row["num_dropped_deadline"]) == (2, 1)
    assert late not in {k for _, k, _ in run.trainer.aggregations}
    assert row["round_time_s"] <= deadline
    assert not run.problems()


def test_the_invariants_catch_broken_drop_books(fashion_slice):
    run = three_client_run(fashion_slice, "fedavg", {"deadline_s": 0.1})
    run.step()
    assert not run.problems()
    good = list(run.log.rows)
    drop = next(i for i, r in enumerate(good) if r[5] == "client_dropped")
    k = good[drop][4]
    run.log.rows.append((good[drop][1], good[drop][1] + 1.0, 1, 0, k, "client_forward", 0, 0))
    assert any(f"client {k} has 1 events after its drop" in p for p in run.problems())
    run.log.rows = good
    run.rows[-1]["num_dropped"] = 2
    assert any("do not match its 3 selected clients and 3 client_dropped" in p
               for p in run.problems())
    run.rows[-1]["num_dropped"] = 3
    run.rows[-1]["contrib_label_0"] = 1
    assert any("contrib_label_* are not the contributors' label counts" in p
               for p in run.problems())
    run.rows[-1]["contrib_label_0"] = 0
    run.aggregation_rows = [(1, "client", 0, 0.7)]
    problems = run.problems()
    assert any("weights sum to 0.7, not 1" in p for p in problems)
    assert any("averaged clients [0], not the contributors []" in p for p in problems)


def test_label_bias_tv_is_half_the_l1_distance():
    assert label_bias_tv(np.array([1, 1, 0]), np.array([1, 1, 2])) == pytest.approx(0.5)
    assert label_bias_tv(np.array([2, 0]), np.array([1, 0])) == 0.0


def test_a_run_that_cannot_drop_writes_no_drop_records(make_run):
    run = make_run("scala")
    row = run.step()
    assert "num_selected" not in row and "completed" not in run.event_table()[0]
    assert run.protocol.drops is None


@pytest.mark.slow
def test_a_deadline_sweep_trains_every_cell_and_reports_drops_and_label_bias(cli, tmp_path):
    """Two deadline cases under shadowing and fading: each cell is trained (the clock decides
    what is learned, so nothing is re-timed), the records carry the drop columns, the report
    its drops table and the accuracy-against-deadline figure; a record with drops is refused
    as the source of a re-timing."""
    from scala_netsim.runner.replay import Record, RecordError

    cases = ("sweep={deadline: {none: {training.deadline_s: null}, "
             "tight: {training.deadline_s: 14.0}}}")
    code, out, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path,
                         "--set", "data.train_samples=2000", "--set", "data.test_samples=200",
                         "--set", "training.rounds=1", "--set", "training.local_iters=2",
                         "--set", "training.eval_every=1", "--set", "algorithms=[fedavg]",
                         "--set", "model.arch=alexnet14",   # the deadline is set for its times
                         "--set", "network.shadowing_std_db=8",
                         "--set", "network.fading={kind: rayleigh, coherence: transfer}",
                         "--set", cases, "--no-progress")
    assert code == 0, err
    assert "re-timed" not in out
    assert re.search(r"fedavg deadline=tight: completed, .* of selected clients dropped \(label "
                     r"bias TV 0\.\d{3}\)", out), out
    root = tmp_path / "quickstart"
    tight = root / "fedavg" / "deadline=tight" / "seed0"
    rounds = pd.read_csv(tight / "rounds.csv")
    assert (rounds["num_dropped_deadline"] > 0).all() and (rounds["num_contributing"] > 0).all()
    summary = json.loads((tight / "summary.json").read_text())
    assert summary["dropped_fraction"] == rounds["num_dropped"].sum() / rounds[
        "num_selected"].sum()
    assert summary["label_bias_tv"] == pytest.approx(rounds["label_bias_tv"].mean())
    none = pd.read_csv(root / "fedavg" / "deadline=none" / "seed0" / "rounds.csv")
    assert "num_dropped" not in none      # no deadline, an adaptive link: nobody can be dropped
    comparison = pd.read_csv(root / "comparison.csv")
    assert {"dropped_fraction", "label_bias_tv"} <= set(comparison.columns)
    report = (root / "report.md").read_text()
    assert "## Drops and label bias" in report and "label bias (TV)" in report
    assert "(figures/accuracy_vs_deadline.png)" in report
    assert "What each deadline costs in accuracy against none, seed by seed" in report
    assert "| fedavg | tight |" in report and "Δ end-of-training acc vs none (pp)" in report
    # which labels the deadline took: per class, 1 - aggregated / selected samples
    clients = pd.read_csv(tight / "clients.csv").set_index("client_id")
    selected = pd.read_csv(tight / "demands.csv")["client_id"]
    labels = [f"label_{c}" for c in range(10)]
    by_class = clients.loc[selected, labels].sum().to_numpy()
    aggregated = rounds[[f"contrib_label_{c}" for c in range(10)]].sum().to_numpy()
    lost, accuracy = class_losses(tight, rounds)
    expected = np.where(by_class > 0, 1 - aggregated / np.maximum(by_class, 1), np.nan)
    np.testing.assert_allclose(lost, expected)
    assert np.nanmax(lost) > 0
    np.testing.assert_allclose(accuracy, rounds[[f"acc_class_{c}" for c in range(10)]].mean())
    cells = " / ".join(f"{100 * v:.0f}" for v in lost)
    assert f"| fedavg | tight | {cells} |" in report and "correlation (seeds x classes)" in report
    assert (root / "figures" / "accuracy_vs_deadline.png").stat().st_size > 10_000
    with pytest.raises(RecordError, match="dropped clients"):
        Record.load(tight)


def test_a_round_that_ends_early_leaves_no_deadline_to_the_next(fashion_slice):
    """Round 1 ends well before its deadline; the stale deadline comes during round 2 and
    must not drop round 2's clients (round 2 has its own deadline)."""
    free = three_client_run(fashion_slice, "fedavg", {"rounds": 2})
    free.step()
    finish = max(ends(free, EventKind.MODEL_UPLOAD).values())
    run = three_client_run(fashion_slice, "fedavg", {"rounds": 2, "deadline_s": 1.5 * finish})
    first, second = run.step(), run.step()
    assert first["num_dropped"] == second["num_dropped"] == 0
    assert second["round_time_s"] == pytest.approx(first["round_time_s"], rel=0.2)
    assert not run.problems()


# --- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("document, message", [
    ({"training": {"deadline_s": 0}}, "training.deadline_s: must be > 0.0, got 0"),
    ({"training": {"deadline_s": -5.0}}, "training.deadline_s: must be > 0.0, got -5.0"),
    ({"training": {"step_deadline_s": 0.0}, "algorithms": ["scala"]},
     "training.step_deadline_s: must be > 0.0, got 0.0"),
    ({"training": {"step_deadline_s": 2.0}, "algorithms": ["fedavg", "splitfed_v1"]},
     "training.step_deadline_s: only for algorithms with a barrier (scala, scala_pe, ca_sfl); "
     "fedavg, splitfed_v1 have none, got 2.0"),
    ({"training": {"over_selection": -0.1}}, "training.over_selection: must be >= 0.0, got -0.1"),
    ({"data": {"num_clients": 20}, "training": {"participation": 0.5, "over_selection": 1.5}},
     "training.over_selection: selects ceil((1 + 1.5) x 10) = 25 clients, more than the 20 "
     "there are (data.num_clients); allowed: at most 1"),
    ({"timing_only": True, "training": {"deadline_s": 30.0}, "algorithms": ["scala"]},
     "timing_only: scala with deadlines, over-selection or a fixed-rate link"),
])
def test_bad_deadline_settings_name_field_value_and_what_is_allowed(document, message):
    from scala_netsim.config.documents import ScenarioError
    from scala_netsim.config.scenario import validate_scenario

    with pytest.raises(ScenarioError) as error:
        validate_scenario({"name": "x", **document})
    assert any(p.startswith(message) for p in error.value.problems), error.value.problems


def test_a_step_deadline_stays_with_the_algorithms_that_have_a_barrier(tmp_path):
    from scala_netsim.config.scenario import validate_scenario
    from scala_netsim.tools.sweep import expand_sweep

    scenario = validate_scenario({"name": "x", "algorithms": ["scala", "fedavg"],
                                  "training": {"deadline_s": 60.0, "step_deadline_s": 2.0}})
    cells = {c.algorithm: c.scenario.training for c in expand_sweep(scenario, tmp_path)}
    assert (cells["scala"].step_deadline_s, cells["scala"].deadline_s) == (2.0, 60.0)
    assert (cells["fedavg"].step_deadline_s, cells["fedavg"].deadline_s) == (None, 60.0)


@pytest.mark.parametrize("setting, message", [
    ("training.deadline_s=0", "training.deadline_s: must be > 0.0, got 0"),
    ("training.step_deadline_s=1.0", "training.step_deadline_s: only for algorithms with a "
                                     "barrier"),
    ("training.over_selection=-1", "training.over_selection: must be >= 0.0, got -1"),
    ("training.over_selection=2", "training.over_selection: selects ceil((1 + 2) x 10) = 30"),
])
def test_the_cli_refuses_bad_deadlines_with_exit_2_and_writes_nothing(cli, tmp_path, setting,
                                                                      message):
    code, _, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path,
                       "--set", "algorithms=[fedavg]", "--set", setting)
    assert code == 2 and message in err, err
    assert not any(tmp_path.iterdir())
