"""Issue 61: what a new user met trying things from the docs. Each message names the real
cause, the value given and what is allowed; each test failed on the code before its fix."""

import importlib.util
import subprocess
import sys

import pytest

from conftest import ROOT

QUICK = ROOT / "scenarios" / "quickstart.yaml"
SMALL = ["--set", "data.train_samples=1000", "--set", "data.test_samples=100",
         "--set", "training.rounds=1", "--set", "training.local_iters=1", "--no-progress",
         "--no-figures", "--no-report"]


@pytest.mark.parametrize("timing", [["--timing-only"], ["--set", "timing_only=true"]])
def test_retime_only_with_timing_only_names_timing_only(cli, tmp_path, timing):
    """A timing-only run trains nothing, so nothing is re-timed from a kept run: refused up
    front naming both, not blamed on a learning that depends on the network."""
    kept = tmp_path / "kept"
    kept.mkdir()
    code, out, err = cli(QUICK, "--out", tmp_path / "out", "--retime-from", kept,
                         "--retime-only", *timing, *SMALL)
    assert code == 2
    assert err == ("error: --retime-only with timing_only (--timing-only): a timing-only run "
                   "trains nothing and records no learning, so none of its runs is re-timed "
                   "from a kept training; drop --retime-only, or time the runs without "
                   "--retime-from\n")
    assert "depends on the network" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags", [[], ["--retime-only"]])
def test_train_if_diverged_without_what_it_applies_to_is_refused(cli, tmp_path, flags):
    """A flag that does not apply is refused, as a key that does not apply is (review of
    issue 61): --train-if-diverged acts on --retime-from's points only, never with
    --retime-only."""
    kept = tmp_path / "kept"
    kept.mkdir()
    source = ["--retime-from", kept] if flags else []
    code, _, err = cli(QUICK, "--out", tmp_path / "out", "--train-if-diverged", *source,
                       *flags, *SMALL)
    assert code == 2
    assert err.startswith("error: --train-if-diverged: trains the points whose re-timing")
    assert not (tmp_path / "out").exists()


def test_a_timing_only_point_under_retime_from_is_said_to_be_timing_only(tmp_path):
    """Without --retime-only (or through the API) the report names timing_only, not the
    network, as why the point is not re-timed."""
    from scala_netsim.tools.retime_from import KeptRuns, why_not
    from scala_netsim.tools.sweep import SweepPoint

    from conftest import tiny_scenario

    point = SweepPoint("scala", (), tiny_scenario(timing_only=True), tmp_path / "run")
    assert why_not(point, KeptRuns(tmp_path)) == (
        "a timing-only run (timing_only, --timing-only) trains nothing, so it is timed, never "
        "re-timed from a training")


@pytest.mark.parametrize("fading, message", [
    ("{kind: none, coherence_s: 0.05}",
     "network.fading.coherence_s: only with coherence: time (a fading block's length in time), "
     "got coherence_s 0.05 with kind none and no coherence (the default is round); kind none "
     "fades nothing: leave coherence_s out, or set kind rayleigh or rician with coherence: "
     "time"),
    ("{kind: rayleigh, coherence: transfer, coherence_s: 0.05}",
     "network.fading.coherence_s: only with coherence: time (a fading block's length in time), "
     "got coherence_s 0.05 with coherence transfer; set coherence: time, or leave coherence_s "
     "out"),
])
def test_coherence_s_without_coherence_time_names_what_was_given(cli, tmp_path, fading,
                                                                  message):
    code, _, err = cli(QUICK, "--out", tmp_path, "--set", f"network.fading={fading}")
    assert code == 2 and message in err
    assert "coherence round" not in err
    assert not any(tmp_path.iterdir())


def test_a_run_whose_clients_were_all_dropped_says_no_client_trained():
    """Its label bias is NaN (no round had an update): the line says why, not 'nan'."""
    from scala_netsim.tools.sweep import finished_line

    summary = {"status": "completed", "best_acc": 0.1, "best_round": 1, "final_acc": 0.1,
               "total_sim_time_s": 12.0, "wall_time_s": 3.0, "dropped_fraction": 1.0,
               "label_bias_tv": float("nan")}
    line = finished_line("fedavg", summary)
    assert "nan" not in line
    assert ", 100.0% of selected clients dropped (no client trained: no label bias), " in line
    some = finished_line("fedavg", {**summary, "dropped_fraction": 0.25, "label_bias_tv": 0.125})
    assert ", 25.0% of selected clients dropped (label bias TV 0.125), " in some


class _Interrupting:
    """A module whose names cannot be read before Ctrl-C comes (the runs going)."""

    def __getattr__(self, name):
        raise KeyboardInterrupt


def test_ctrl_c_says_an_asynchronous_network_run_starts_again(cli, tmp_path, monkeypatch):
    """Such runs are never saved mid-run (docs/model/network.md): the hint that the same
    command continues from the last checkpoints says they start again from the beginning."""
    monkeypatch.setitem(sys.modules, "scala_netsim.api", _Interrupting())
    network = ["--set", "network.layout={kind: hexagonal, sites: 1}",
               "--set", "network.scheduler=round_robin"]
    code, _, err = cli(QUICK, "--out", tmp_path, *SMALL, *network,
                       "--set", "algorithms=[fedasync, scala]")
    assert code == 130
    assert "Run the same command again to continue from the last checkpoints" in err
    assert err.endswith(
        "fedasync: an asynchronous algorithm in a network of cells is not saved mid-run (a "
        "transfer in flight cannot be saved), so it starts again from its beginning\n")
    assert "scala:" not in err
    # in the paper's cell an asynchronous run is saved: nothing more is said
    code, _, err = cli(QUICK, "--out", tmp_path, *SMALL, "--set", "algorithms=[fedasync]")
    assert code == 130 and "not saved mid-run" not in err


def test_a_sweep_point_refused_by_a_cross_key_check_is_answered_without_torch_or_sionna():
    """scenarios/nr.yaml's points validate the NR link abstraction, which needs Sionna: its
    presence is looked up, not imported (importing it took 7 of the 9 s of the answer)."""
    code = ("import sys; from scala_netsim.cli import main; "
            "rc = main(['scenarios/nr.yaml', '--set', "
            "'network.link={mode: fixed_rate, target_rate_bps: 1.0e6}']); "
            "print(rc, 'torch' in sys.modules, 'sionna.sys' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.stdout.split() == ["2", "False", "False"], proc.stderr
    assert ("sweep point case=all_three, seed=2: network.link.mode: fixed_rate with "
            "link_abstraction: nr") in proc.stderr


def test_sionna_is_found_without_importing_it(monkeypatch):
    import channel

    assert channel.nr_link.have_sionna() is (importlib.util.find_spec("sionna") is not None)
    # as if not installed (both: another test may have imported sionna.sys already)
    monkeypatch.setitem(sys.modules, "sionna", None)
    monkeypatch.setitem(sys.modules, "sionna.sys", None)
    assert channel.nr_link.have_sionna() is False


def test_check_validates_and_plans_without_running_or_writing(cli, tmp_path):
    """--check: the scenario checked as a run checks it, its plan and run-time estimate
    printed, nothing run, nothing under --out; exit 0, or 2 with the messages."""
    out = tmp_path / "out"
    sweep = ["--set", "algorithms=[fedavg]",   # (a small model: the estimate times its steps)
             "--set", "model.arch=alexnet14", "--set", "training.batch_size=20",
             "--set", "sweep={network.uplink_bandwidth_hz: [2.0e6, 20.0e6]}"]
    twenty = [a if a != "training.rounds=1" else "training.rounds=20" for a in SMALL]
    code, printed, err = cli(QUICK, "--out", out, "--check", *twenty, *sweep)
    assert code == 0, err
    assert ("1 point(s) differ from another only in network.*/compute.*: they are re-timed "
            "from its run, not trained") in printed
    assert "estimated run time" in printed and ": completed" not in printed
    assert printed.endswith("--check: the scenario is valid, its plan above; nothing was run "
                            "or written\n")
    assert not out.exists()
    zero = [a if a != "training.rounds=1" else "training.rounds=0" for a in SMALL]
    code, printed, err = cli(QUICK, "--out", out, "--check", *zero)
    assert code == 2 and "training.rounds: must be >= 1, got 0" in err
    assert not out.exists()
    # refusals of the plan stage too: a folder holding a run of another scenario
    other = out / "quickstart" / "fedavg" / "seed0"
    other.mkdir(parents=True)
    (other / "scenario.yaml").write_text("name: other\n")
    code, printed, err = cli(QUICK, "--out", out, "--check", *SMALL, "--set",
                             "algorithms=[fedavg]")
    assert code == 2 and "these folders hold runs of another scenario" in err
    assert sorted(p.name for p in out.rglob("*")) == ["fedavg", "quickstart", "scenario.yaml",
                                                      "seed0"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells and signals")
def test_every_guide_that_tells_of_ctrl_c_says_a_background_job_ignores_it():
    """A job started with & by a non-interactive shell ignores SIGINT (checked here: Python
    inherits SIG_IGN and installs no KeyboardInterrupt handler), so Ctrl-C and kill -INT do
    not stop it; every guide that tells of Ctrl-C says so and what does (kill PID: SIGTERM,
    which the command line turns into the same clean stop)."""
    probe = f"{sys.executable} -c 'import signal; print(signal.getsignal(signal.SIGINT))'"
    proc = subprocess.run(["sh", "-c", f"{probe} & wait"], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.strip() == str(int(__import__("signal").SIG_IGN)), proc.stderr
    guides = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
              if "Ctrl-C" in p.read_text() and "studies" not in p.parts]
    assert {p.name for p in guides} >= {"bad-input.md", "reproducibility.md",
                                        "command-line.md"}
    for guide in guides:
        text = " ".join(guide.read_text().split())
        assert "non-interactive shell" in text and "ignores SIGINT" in text, guide
        assert "`kill PID`" in text, guide
