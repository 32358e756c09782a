"""The command line, called as `main(args)` in this process (the golden run in conftest runs
it as a user does, in a subprocess): bad input, every scenario file, the study sweeps."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from scala_netsim.config.scenario import load_scenario
from scala_netsim.tools.sweep import expand_sweep

from conftest import ROOT

SMALL = ["--set", "data.train_samples=1000", "--set", "data.test_samples=100",
         "--set", "training.rounds=1", "--set", "training.local_iters=1", "--no-progress"]


#: The radio model is opt-in: the default scenarios time every step as they did before it.
#: SHA-256 (its first 128 bits) of each run's timing files (they do not depend on the machine's
#: speed) under the command of test_every_scenario_file_runs, recorded with the code of commit
#: 761ab03 (the last one before the radio model), numpy held to its AVX2 paths (conftest).
BEFORE_THE_RADIO_MODEL = dict(line.split() for line in """
cellular_10pct/fedavg/events.csv 6cddbeddc0bc53175992bbf1f0d63f8b
cellular_10pct/fedlc/events.csv 6cddbeddc0bc53175992bbf1f0d63f8b
cellular_10pct/fedprox/events.csv 6cddbeddc0bc53175992bbf1f0d63f8b
cellular_10pct/scala/events.csv c2b094d598148384ca3b7fbbdd7c823b
cellular_10pct/sfl_local_loss/events.csv aad37ef20437bb2861e91d6cbf046a98
cellular_10pct/splitfed_v1/events.csv 87d83fd8741c749538b0ac61caa24c3f
cellular_10pct/splitfed_v2/events.csv 87d83fd8741c749538b0ac61caa24c3f
quickstart/scala/events.csv a0829e428e7df7def95f7b8fa618b050
cellular_10pct/fedavg/demands.csv 44d02b330e0cef5b7627907b97b0b994
cellular_10pct/fedlc/demands.csv 44d02b330e0cef5b7627907b97b0b994
cellular_10pct/fedprox/demands.csv 44d02b330e0cef5b7627907b97b0b994
cellular_10pct/scala/demands.csv 7065c63c834c8a74cee0d86cbc122204
cellular_10pct/sfl_local_loss/demands.csv 3bf6cfec478c4ae5f2a49b5b7795fb58
cellular_10pct/splitfed_v1/demands.csv 7065c63c834c8a74cee0d86cbc122204
cellular_10pct/splitfed_v2/demands.csv 7065c63c834c8a74cee0d86cbc122204
quickstart/scala/demands.csv 1b7b210e439b051bc1bb0d9f218602e7
cellular_10pct/fedavg/clients.csv b2d77f04b2f3bf2b8ca07f0af19df0fb
cellular_10pct/fedlc/clients.csv b2d77f04b2f3bf2b8ca07f0af19df0fb
cellular_10pct/fedprox/clients.csv b2d77f04b2f3bf2b8ca07f0af19df0fb
cellular_10pct/scala/clients.csv b2d77f04b2f3bf2b8ca07f0af19df0fb
cellular_10pct/sfl_local_loss/clients.csv b2d77f04b2f3bf2b8ca07f0af19df0fb
cellular_10pct/splitfed_v1/clients.csv b2d77f04b2f3bf2b8ca07f0af19df0fb
cellular_10pct/splitfed_v2/clients.csv b2d77f04b2f3bf2b8ca07f0af19df0fb
quickstart/scala/clients.csv da1fe3edb7d9ea8438902083beaf5f2f
""".strip().splitlines())


#: Files whose models are too heavy for one CPU round at B = 320 in a unit test: a smaller
#: batch (and a one-epoch, one-seed attack)
LIGHTER = {"split_points_resnet.yaml": ["--set", "training.batch_size=20"],
           # its 1,050 clients need all 60,000 images; trained here, to count the accuracy
           "network_load.yaml": ["--set", "data.num_clients=100", "--set", "timing_only=false"],
           "privacy.yaml": ["--set", "training.batch_size=20",
                            "--set", "privacy={attack_epochs: 1, attack_seeds: [0]}"]}


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml")))
def test_every_scenario_file_runs(cli, tmp_path, scenario):
    """One round, one local iteration, of every algorithm of each file, its sweep left out
    (every sweep point is validated by test_every_study_sweep_expands_to_valid_cells); the
    default scenarios' timing files are those of the code before the radio model."""
    code, out, err = cli(ROOT / "scenarios" / scenario, "--out", tmp_path, *SMALL,
                         *LIGHTER.get(scenario, []), "--set", "sweep={}", "--no-report",
                         "--no-figures")
    assert code == 0, err
    name = scenario.removesuffix(".yaml")
    algorithms = load_scenario(ROOT / "scenarios" / scenario).algorithms
    assert sorted(p.parent.parent.name for p in (tmp_path / name).glob("*/seed0/summary.json")) \
        == sorted(algorithms)
    assert out.count(": completed, best accuracy") == len(algorithms)
    assert "estimated run time" not in out   # fewer than 20 local iterations: not worth timing
    pinned = {key: digest for key, digest in BEFORE_THE_RADIO_MODEL.items()
              if key.startswith(f"{name}/")}
    assert bool(pinned) == (name in ("quickstart", "cellular_10pct"))
    pinned_dir = tmp_path
    if pinned and load_scenario(ROOT / "scenarios" / scenario).model.arch != "alexnet14":
        # the digests were recorded on alexnet14, the files' model then (cellular_10pct moved
        # to the authors' alexnet since): the same file on alexnet14 must still give them
        pinned_dir = tmp_path / "alexnet14"
        code, _, err = cli(ROOT / "scenarios" / scenario, "--out", pinned_dir, *SMALL,
                           "--set", "model.arch=alexnet14", "--set", "sweep={}", "--no-report",
                           "--no-figures")
        assert code == 0, err
    for key, digest in pinned.items():
        _, algorithm, file = key.split("/")
        data = (pinned_dir / name / algorithm / "seed0" / file).read_bytes()
        assert hashlib.sha256(data).hexdigest()[:32] == digest, key


@pytest.mark.parametrize("args, message", [
    (["scenarios/missing.yaml"], "scenario file not found"),
    (["scenarios/quickstart.yaml", "--set", "network.uplink_bandwidth_hz=-5"],
     "network.uplink_bandwidth_hz: must be from 1000 to 1e10 (Hz; 20 MHz is 20e6), got -5"),
    (["scenarios/quickstart.yaml", "--set", "training.rounds"], "expected dotted.key=value"),
    (["scenarios/quickstart.yaml", "--set", "training.rounds=[1"],
     "--set training.rounds: value '[1' is not valid YAML"),
    (["scenarios/quickstart.yaml", "--set", "algorithms=[scala, fedsgd]"],
     "algorithms.1: must be one of"),
    (["scenarios/quickstart.yaml", "--set", "model.split=S9"],
     "model.split: 'S9' is not a split point of alexnet; allowed: S1, S2, S3, S4, S5"),
    (["scenarios/quickstart.yaml", "--set", "data.dataset=mnist"],
     "data.dataset: must be one of 'fashion_mnist', 'cifar10'"),
    (["scenarios/quickstart.yaml", "--set", "data.dataset=cifar10"],
     "data.data_dir: required for cifar10"),
    (["scenarios/quickstart.yaml", "--set", "data.data_dir=/no/such/dir"],
     "apt-get install dataset-fashion-mnist"),
    (["scenarios/quickstart.yaml", "--jobs", "0"], "--jobs: must be a whole number >= 1, got 0"),
    (["scenarios/quickstart.yaml", "--set", "data.train_samples=500", "--set",
      "data.num_clients=800", "--set", "data.partition={kind: iid}", "--set",
      "training.participation=0.01"],
     "data.num_clients: 800 clients on 500 training samples leave 300 client(s) without a "
     "sample under the iid partition"),
    # issue 47: physical keys have plausible ranges and say their unit (8); a geometry whose
    # drop never ends (7), a layout key the kind ignores (9), a clock pushed past its
    # resolution (2) are refused
    (["scenarios/quickstart.yaml", "--set", "network.noise_psd_dbm_per_hz=10"],
     "network.noise_psd_dbm_per_hz: must be from -200 to -130 (dBm/Hz; thermal noise at 290 K "
     "is -174), got 10"),
    (["scenarios/quickstart.yaml", "--set", "network.client_tx_power_w=23"],
     "network.client_tx_power_w: must be from 1e-6 to 10 (W; 23 dBm is 0.2 W), got 23"),
    (["scenarios/quickstart.yaml", "--set", "network.carrier_frequency_hz=3.5"],
     "network.carrier_frequency_hz: must be from 1e8 to 1e11 (Hz; 3.5 GHz is 3.5e9), got 3.5"),
    (["scenarios/quickstart.yaml", "--set", "network.layout={kind: hexagonal, isd_m: 60}",
      "--set", "network.power_control={p0_dbm: 100}"],
     "network.power_control.p0_dbm: must be from -202 to 24 (dBm; TS 38.331's "
     "p0-NominalWithGrant range), got 100"),
    (["scenarios/quickstart.yaml", "--set", "network.layout={kind: hexagonal, isd_m: 60}"],
     "network.layout.isd_m: must be > 2 x min_distance_m = 70 m"),
    (["scenarios/quickstart.yaml", "--set", "network.layout.sites=7"],
     "network.layout.sites: the single layout (the paper's one cell of radius_m) has no sites; "
     "set network.layout.kind: hexagonal, or leave sites out"),
    (["scenarios/quickstart.yaml", "--set", "network.layout={kind: single, downtilt_deg: 6}"],
     "network.layout.downtilt_deg: the single layout (the paper's one cell of radius_m) has no "
     "downtilt"),
    (["scenarios/quickstart.yaml", "--set", "network.layout={kind: hexagonal, sites: 1, "
      "wraparound: true}"], "network.layout.wraparound: one site has no neighbours"),
    # (10) a run that cannot fit in memory: refused before it starts, with the figure
    (["scenarios/quickstart.yaml", "--set", "algorithms=[fedavg]", "--set",
      "data.num_clients=100000", "--set", "data.partition={kind: sampled, samples_per_client: 6}",
      "--set", "training.participation=1.0", "--set", "training.batch_size=100000"],
     "error: the runs would need about "),
    (["scenarios/quickstart.yaml", "--set", "network.layout={kind: hexagonal}", "--set",
      "network.backhaul={latency_s: 1e9}"],
     "network.backhaul.latency_s: must be from 0 to 1 (s, one way; a geostationary satellite "
     "hop is 0.27), got 1e9"),
    # issue 50: what a network of cells still refuses names both keys and why
    (["scenarios/quickstart.yaml", "--set", "network.layout={kind: hexagonal}", "--set",
      "algorithms=[fedasync]"],
     "network.scheduler: static grants a network's blocks per round, and fedasync has no "
     "round (asynchronous); allowed with them: round_robin or proportional_fair (blocks per "
     "transfer)"),
    (["scenarios/quickstart.yaml", "--set", "network.duplex={kind: tdd}", "--set",
      "network.downlink_bandwidth_hz=20e6", "--set", "training.deadline_s=5"],
     "network.duplex: tdd in the paper's cell times whole transfers only: no deadlines"),
    (["scenarios/quickstart.yaml", "--set",
      "network.fading={kind: rayleigh, coherence: time, coherence_s: 0.043}"],
     "network.fading.coherence: time needs a network of cells (network.layout.kind: "
     "hexagonal"),
    (["scenarios/quickstart.yaml", "--set", "network.fading={kind: rayleigh, coherence: time}"],
     "network.fading.coherence_s: required with coherence time"),
    # issue 61 (4): a key given twice, a key that does not apply (the file writes every key)
    (["scenarios/quickstart.yaml", "--set", "training.rounds=1", "--set", "training.rounds=2"],
     "--set training.rounds: given twice ('1' and '2'); give it once"),
    (["scenarios/cellular_10pct.yaml", "--set", "network.duplex.pattern=DDSUU"],
     "network.duplex.pattern: only with kind tdd (paired bands have no frame), got DDSUU with "
     "kind fdd; set network.duplex.kind: tdd, or leave pattern out"),
    (["scenarios/cellular_10pct.yaml", "--set", "network.harq_rtt_slots=8"],
     "network.harq_rtt_slots: only with link_abstraction nr"),
    (["scenarios/cellular_10pct.yaml", "--set", "network.deployment=uma_n79"],
     "network.deployment: 'uma_n79' is not a deployment (allowed: uma_n78, umi_n78, rma_fdd"),
    (["scenarios/cellular_10pct.yaml", "--set", "network.deployment=uma_n78", "--set",
      "network.subcarrier_spacing_hz=15e3"],
     "network.uplink_bandwidth_hz: 100 MHz at 15 kHz subcarrier spacing is no NR channel"),
    # issue 63: other users' traffic
    (["scenarios/cellular_10pct.yaml", "--set", "network.traffic={kind: ftp3, offered_load: 1}"],
     "network.traffic.offered_load: must be in [0, 1) (the share of a cell's blocks' time its "
     "background users' files take; 1 or more never drains), got 1"),
    (["scenarios/cellular_10pct.yaml", "--set",
      "network.traffic={kind: full_buffer, users_per_cell: -2}"],
     "network.traffic.users_per_cell: must be >= 0, got -2"),
    (["scenarios/cellular_10pct.yaml", "--set", "network.deployment=uma_n78", "--set",
      "network.traffic=full_buffer"],
     "network.traffic.kind: full_buffer shares each cell's blocks under a work-conserving "
     "scheduler; network.scheduler: static grants"),
    (["scenarios/cellular_10pct.yaml", "--set", "network.deployment=uma_n78", "--set",
      "network.scheduler=round_robin", "--set",
      "network.mobility={kind: random_waypoint, vehicle_speed_kmh: 600}"],
     "network.mobility.vehicle_speed_kmh: must be a speed in (0, 500] km/h"),
    (["scenarios/cellular_10pct.yaml", "--set", "network.deployment=uma_n78", "--set",
      "network.mobility=random_waypoint"],
     "network.mobility.kind: random_waypoint with network.scheduler: static"),
])
def test_bad_input_exits_2_with_a_message_and_writes_nothing(cli, tmp_path, args, message):
    earlier = tmp_path / "quickstart" / "scala" / "seed0" / "rounds.csv"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("round,test_acc\n1,0.5\n")
    code, out, err = cli(*[ROOT / a if a.startswith("scenarios/") else a for a in args],
                         "--out", tmp_path)
    assert code == 2
    assert message in err and err.startswith("error: ")
    assert earlier.read_text() == "round,test_acc\n1,0.5\n"         # nothing written is lost
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["rounds.csv"]


def test_unwritable_output_directory_is_refused_before_any_work(cli, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me")
    code, _, err = cli(ROOT / "scenarios/quickstart.yaml", "--out", blocker / "results")
    assert code == 2 and "--out: cannot write results" in err
    assert blocker.read_text() == "keep me"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc on this system")
def test_an_out_under_a_virtual_file_system_gets_the_true_reason(cli):
    """Issue 47 (11): /proc answers 'No such file or directory' for a folder that is there."""
    code, _, err = cli(ROOT / "scenarios/quickstart.yaml", "--out", "/proc/results")
    assert code == 2
    assert ("--out: cannot write results under '/proc/results' ('/proc': its file system "
            "lets no folder be made in it (a virtual file system such as /proc or /sys))") in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_refused(cli, tmp_path):
    code, _, err = cli(ROOT / "scenarios/quickstart.yaml", "--device", "cuda", "--out", tmp_path)
    assert code == 2
    assert "device: 'cuda' was asked for but no CUDA GPU is available" in err
    assert not any(tmp_path.iterdir())


def test_help_lists_the_options(capsys):
    from scala_netsim.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in ("--out", "--set", "--device", "--force", "--jobs", "--executor", "--no-report"):
        assert option in text
    assert "--resume" not in text


@pytest.mark.parametrize("scenario, cells", [("local_iters", 8), ("participation", 36),
                                             ("split_points", 15), ("bandwidth", 18),
                                             ("fading", 24), ("allocation", 18)])
def test_every_study_sweep_expands_to_valid_points(tmp_path, scenario, cells):
    expanded = expand_sweep(load_scenario(ROOT / "scenarios" / f"{scenario}.yaml"), tmp_path)
    assert len(expanded) == cells
    assert len({c.folder for c in expanded}) == cells


@pytest.mark.slow   # trains end to end for more than 5 s
def test_no_figures_leaves_the_run_figures_to_analysis_plots(cli, tmp_path):
    from analysis.plots import main as plots_main

    code, out, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path, *SMALL,
                         "--set", "algorithms=[scala]", "--no-figures", "--no-report")
    assert code == 0, err
    run_dir = tmp_path / "quickstart" / "scala" / "seed0"
    assert (run_dir / "rounds.csv").is_file() and not list(run_dir.glob("*.png"))
    assert plots_main([str(run_dir)]) == 0
    assert sorted(p.name for p in run_dir.glob("*.png")) == [
        "accuracy_vs_rounds.png", "accuracy_vs_time.png", "latency_breakdown.png"]
    scenario_dir = tmp_path / "quickstart"
    assert (scenario_dir / "comparison.csv").is_file() and not list(scenario_dir.glob("*.png"))
    assert not (scenario_dir / "figures").exists()
    assert plots_main([str(scenario_dir)]) == 0
    # one accuracy-against-time figure per scenario folder, the report's (issue 37: there were
    # two in different styles, OUT/<scenario>/ and OUT/<scenario>/figures/)
    assert sorted(p.relative_to(scenario_dir).as_posix() for p in scenario_dir.glob("**/*.png")
                  if p.parent.name == "figures" or p.parent == scenario_dir) == [
        "figures/accuracy_vs_rounds.png", "figures/accuracy_vs_time.png"]
    assert plots_main([str(tmp_path / "nothing")]) == 2


@pytest.mark.slow   # trains end to end for more than 5 s
def test_a_finished_run_leaves_its_final_model_which_scores_the_final_accuracy(cli, tmp_path):
    """model.pt holds the global model at the end: loaded into a fresh split model it gives
    exactly the final test accuracy of summary.json (on the same test slice)."""
    import json

    from scala_netsim.learn.data import load_dataset
    from scala_netsim.learn.models import build_split_model
    from scala_netsim.learn.training import evaluate

    code, _, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path,
                       "--set", "data.train_samples=1000", "--set", "data.test_samples=200",
                       "--set", "data.num_clients=10", "--set", "training.participation=0.3",
                       "--set", "training.batch_size=30", "--set", "training.rounds=2",
                       "--no-progress", "--no-figures", "--no-report")
    assert code == 0, err
    folder = tmp_path / "quickstart" / "scala" / "seed0"
    modules = torch.load(folder / "model.pt", weights_only=True)["modules"]
    assert set(modules) == {"client", "server"}
    # the authors' AlexNet, fed Fashion-MNIST at 28 x 28
    client, server = build_split_model("alexnet", "S2", 1, 10, torch.Generator(), image_size=28)
    client.load_state_dict(modules["client"])
    server.load_state_dict(modules["server"])
    data = load_dataset("fashion_mnist", None, train_samples=1000, test_samples=200,
                        pad_to_32=False)
    accuracy, _, _ = evaluate(torch.nn.Sequential(client, server), data.test_x, data.test_y, 10)
    assert accuracy == json.loads((folder / "summary.json").read_text())["final_acc"]


def test_bad_input_is_answered_without_loading_torch():
    """The CLI validates the scenario before it imports torch (a fresh interpreter)."""
    code = ("import sys; from scala_netsim.cli import main; "
            "rc = main(['scenarios/quickstart.yaml', '--set', 'training.rounds=0']); "
            "print(rc, 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.stdout.split() == ["2", "False"], proc.stderr
    assert "training.rounds: must be >= 1, got 0" in proc.stderr


def test_the_run_time_estimate_times_each_pattern_as_it_runs():
    """SCALA and CA-SFL are estimated from a measured local iteration of their own pattern
    (the clients' parts at B / (r K), the server part on the concatenation), the per-client
    algorithms from whole-model steps at the clients' batch; evaluations from the server batch."""
    from scala_netsim.runner.estimate import StepCosts, concatenated_step_s, run_time_s

    from conftest import tiny_dataset, tiny_scenario

    costs = StepCosts(server_batch_s=1e-4, client_batch_s=2e-4, concatenated_s=3e-4)
    scenario = tiny_scenario(training={"rounds": 20, "eval_every": 10})   # T = 2, B = 24
    evaluations = 2 * 1e-4 / 3 * 100
    assert run_time_s(scenario, "scala", 100, costs) == pytest.approx(20 * 2 * 24 * 3e-4
                                                                      + evaluations)
    assert run_time_s(scenario, "ca_sfl", 100, costs) == run_time_s(scenario, "scala", 100,
                                                                    costs)
    assert run_time_s(scenario, "fedavg", 100, costs) == pytest.approx(20 * 2 * 24 * 2e-4
                                                                       + evaluations)
    measured = concatenated_step_s(scenario, tiny_dataset(), torch.device("cpu"), steps=1)
    assert 0 < measured < float("inf")


def test_the_ray_cpus_flag_keeps_its_earlier_name():
    """A sweep's runs are its points, not cells (issue 48): --ray-cpus-per-run, and the flag's
    earlier name --ray-cpus-per-cell still means the same."""
    from scala_netsim.cli import parse_args

    for flag in ("--ray-cpus-per-run", "--ray-cpus-per-cell"):
        assert parse_args(["s.yaml", flag, "3"]).ray_cpus_per_run == 3


#: the NR study's nr case alone, seed 0
NR_CASE = "sweep={case: {nr: {network.link_abstraction: nr}}, seed: [0]}"


@pytest.mark.slow   # Sionna's tables: about 5 s to build, once a process
@pytest.mark.parametrize("overrides, message", [
    # the paper cell's 1 W over 51 downlink blocks: two clients below the lowest MCS
    (["--set", "network.bs_tx_power_w=1", "--set", NR_CASE],
     "error: scala case=nr seed=0: network.link_abstraction: nr: 2 client(s) can decode no MCS "
     "of the 256qam table on the downlink even without interference, on any number of blocks "
     "(best SNR a block): 24 (-6.0 dB), 55 (-5.5 dB); the table's lowest MCS needs -4.95 dB "
     "at bler_target 0.1; raise network.bs_tx_power_w (1 W), or use the 64qam table, a higher "
     "bler_target or a smaller layout.isd_m"),
    # one site of 3 sectors: clients at a sector's edge, 0.2 W spread over any blocks
    (["--set", "network.layout={kind: hexagonal, sites: 1, sectors: 3}", "--set", NR_CASE],
     "error: scala case=nr seed=0: network.link_abstraction: nr: 2 client(s) can decode no MCS "
     "of the 256qam table on the uplink even without interference, on any number of blocks "
     "(best SNR a block): 29 (-5.4 dB), 95 (-6.8 dB); the table's lowest MCS needs -4.95 dB at "
     "bler_target 0.1; raise network.client_tx_power_w (0.2 W), or use the 64qam table"),
    # issue 61 (2): the 64qam table's lowest MCS decodes at the BLER grid's first point, and
    # below the grid nothing does: the refusal holds for it too (the table set in the NR case:
    # under the base's Shannon link it does not apply)
    (["--set", "network.bs_tx_power_w=1", "--set", "sweep={case: {nr: {network.link_abstraction: "
      "nr, network.mcs_table: 64qam}}, seed: [0]}"],
     "nr: 2 client(s) can decode no MCS of the 64qam table on the downlink even without "
     "interference, on any number of blocks (best SNR a block): 24 (-6.0 dB), 55 (-5.5 dB); "
     "the table's lowest MCS needs -5.05 dB at bler_target 0.1; raise network.bs_tx_power_w "
     "(1 W), or use a higher bler_target or a smaller layout.isd_m"),
])
def test_clients_that_decode_no_mcs_are_refused_before_anything_is_written(cli, tmp_path,
                                                                           overrides, message):
    """Issue 61 (1): the drop's refusal answers as bad input (exit 2, no traceback) before a
    file is written, so that the corrected command may run into the same --out."""
    code, _, err = cli(ROOT / "scenarios" / "nr.yaml", "--out", tmp_path, *SMALL, *overrides,
                       "--set", "algorithms=[scala]", "--no-report", "--no-figures")
    assert code == 2, err
    assert message in err and err.startswith("error: ") and "Traceback" not in err
    assert not list(tmp_path.iterdir())
