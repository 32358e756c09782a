import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scala_netsim.config.documents import ScenarioError, apply_overrides
from scala_netsim.config.scenario import load_scenario, scenario_yaml, validate_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(ROOT.joinpath("scenarios").glob("*.yaml"))


def problems_of(document):
    with pytest.raises(ScenarioError) as info:
        validate_scenario(document, source="s.yaml")
    return info.value.problems


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_shipped_scenario_is_valid(path):
    scenario = load_scenario(path)
    assert scenario.name == path.stem


def test_cellular_10pct_is_the_paper_setup():
    s = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "cellular_10pct.yaml")
    assert (s.data.num_clients, s.num_participants, s.data.partition.alpha) == (100, 10, 2)
    assert (s.training.batch_size, s.training.local_iters, s.training.rounds) == (320, 5, 500)
    assert (s.training.lr, s.training.momentum, s.model.split) == (0.01, 0.9, "S2")
    net = s.network
    assert (net.radius_m, net.uplink_bandwidth_hz, net.client_tx_power_w) == (500, 20e6, 0.2)
    assert s.compute.client_flops_per_s == (1e9, 1e10) and s.compute.server_flops_per_s == 1e13


def test_every_problem_is_reported_together_with_field_and_value():
    problems = problems_of({
        "name": "x",
        "network": {"uplink_bandwidth_hz": -5, "client_tx_power_w": 0},
        "training": {"participation": 1.5, "rounds": "many"},
        "algorithms": ["scala", "fedsgd"],
    })
    text = "\n".join(problems)
    assert ("network.uplink_bandwidth_hz: must be from 1000 to 1e10 (Hz; 20 MHz is 20e6), "
            "got -5") in text
    assert "network.client_tx_power_w: must be from 1e-6 to 10 (W; 23 dBm is 0.2 W), got 0" in text
    assert "training.participation: must be <= 1.0, got 1.5" in text
    assert "training.rounds:" in text and "'many'" in text
    assert "algorithms.1: must be one of 'scala', 'scala_pe', 'ca_sfl'," in text
    assert "got 'fedsgd'" in text
    assert len(problems) == 5


def test_cross_field_problems_are_one_per_line():
    problems = problems_of({"name": "x", "data": {"num_clients": 15,
                                                   "partition": {"kind": "quantity", "alpha": 3}},
                            "training": {"batch_size": 1, "participation": 0.2},
                            "algorithms": ["fedconcat", "scala", "scala"],
                            "fedconcat": {"clusters": 16}})
    assert problems == [
        "data.partition.alpha: num_clients*alpha must be divisible by the 10 classes, "
        "got 15*3 = 45",
        "training.batch_size: must be >= the number of participating clients (3), got 1",
        "algorithms: each algorithm at most once, got ['fedconcat', 'scala', 'scala']",
        "fedconcat.clusters: must be <= data.num_clients (15), got 16",
    ]


def test_names_come_from_the_registries():
    (problem,) = problems_of({"name": "x", "network": {"pathloss": "free_space"}})
    assert problem == ("network.pathloss: must be one of '3gpp_36814_macro', '3gpp_38901_uma', "
                       "'3gpp_38901_umi' or '3gpp_38901_rma', got 'free_space'")
    (problem,) = problems_of({"name": "x", "network": {"allocation": "greedy"}})
    assert problem == ("network.allocation: must be one of 'equal', 'proportional' or "
                       "'min_max_latency', got 'greedy'")
    (problem,) = problems_of({"name": "x", "network": {"link": {"mode": "ideal"}}})
    assert problem == "network.link.mode: must be one of 'adaptive' or 'fixed_rate', got 'ideal'"
    (problem,) = problems_of({"name": "x", "fedprox": {"mus": 0.1}})
    assert problem.startswith("fedprox.mus: unknown key; did you mean 'mu'?")


def test_unknown_key_suggests_the_close_match():
    (problem,) = problems_of({"name": "x", "trainig": {}})
    assert problem.startswith("trainig: unknown key; did you mean 'training'?")
    (problem,) = problems_of({"name": "x", "network": {"radius": 300}})
    assert "network.radius: unknown key; did you mean 'radius_m'?" in problem


@pytest.mark.parametrize("document, message", [
    ({"data": {"num_clients": 15, "partition": {"kind": "quantity", "alpha": 3}}},
     "data.partition.alpha: num_clients*alpha must be divisible by the 10 classes, got 15*3 = 45"),
    ({"data": {"partition": {"kind": "quantity", "alpha": 11}}},
     "data.partition.alpha: must be <= the 10 classes of fashion_mnist, got 11"),
    ({"data": {"partition": {"kind": "dirichlet", "beta": 0}}},
     "data.partition.beta: must be > 0.0, got 0"),
    ({"data": {"partition": {"kind": "zipf"}}},
     "data.partition: kind must be one of 'iid', 'quantity', 'dirichlet', 'sampled', got 'zipf'"),
    ({"network": {"radius_m": 30}}, "network.radius_m: must be > min_distance_m (35.0), got 30.0"),
    ({"compute": {"client_flops_per_s": [5e9, 1e9]}},
     "compute.client_flops_per_s: must be [min, max] with min <= max"),
    ({"compute": {"server_flops_per_s": -1}},
     "compute.server_flops_per_s: must be from 1000 to 1e19 (FLOP/s; a phone's 1 TFLOP/s is "
     "1e12), got -1"),
    ({"training": {"batch_size": 5}},
     "training.batch_size: must be >= the number of participating clients (10), got 5"),
    ({"model": {"split": "S7"}},
     "model.split: 'S7' is not a split point of alexnet; allowed: S1, S2, S3, S4, S5"),
    ({"data": {"dataset": "mnist"}},
     "data.dataset: must be one of 'fashion_mnist', 'cifar10', 'cifar100' or 'cinic10', "
     "got 'mnist'"),
    ({"device": "tpu"}, "device: must be one of 'auto', 'cpu' or 'cuda', got 'tpu'"),
    ({"algorithms": ["fedconcat"], "data": {"num_clients": 4}, "training": {"participation": 0.5}},
     "fedconcat.clusters: must be <= data.num_clients (4), got 5"),
    ({"algorithms": ["scala", "scala"]}, "algorithms: each algorithm at most once"),
])
def test_specific_validation_messages(document, message):
    problems = problems_of({"name": "x", **document})
    assert any(message in p for p in problems), problems


def test_missing_file_and_yaml_syntax_error_name_the_file(tmp_path):
    with pytest.raises(ScenarioError, match="scenario file not found"):
        load_scenario(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntraining:\n  rounds: [1, 2\n")
    with pytest.raises(ScenarioError,
                       match=r"(?s)bad.yaml.*YAML syntax error: line \d+, column \d+"):
        load_scenario(bad)


def test_overrides_apply_dotted_keys_parsed_as_yaml(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "training": {"rounds": 7}}))
    s = load_scenario(path, ["training.rounds=3", "network.uplink_bandwidth_hz=5e6",
                             "algorithms=[ca_sfl, scala]"])
    assert s.training.rounds == 3 and s.network.uplink_bandwidth_hz == 5e6
    assert s.algorithms == ["ca_sfl", "scala"]
    with pytest.raises(ScenarioError, match="expected dotted.key=value"):
        apply_overrides({}, ["training.rounds"])
    with pytest.raises(ScenarioError, match="'rounds' is not a section"):
        apply_overrides({"rounds": 3}, ["rounds.x=1"])
    with pytest.raises(ScenarioError, match="training.roundz: unknown key; did you mean 'rounds'"):
        load_scenario(path, ["training.roundz=3"])


@pytest.mark.parametrize("kind, fields, allowed", [
    ("sampled", {"samples_per_client": 3}, "kind, samples_per_client"),
    ("quantity", {"alpha": 2}, "kind, alpha"),
    ("dirichlet", {"beta": 0.1}, "kind, beta"),
    ("iid", {}, "kind"),
])
def test_an_unknown_partition_key_lists_the_keys_of_its_kind(kind, fields, allowed):
    """Every partition kind, `sampled` included, names what its section allows (the kinds
    were listed by hand once, and an unknown key under any of them got "allowed: " empty)."""
    problems = problems_of({"name": "x",
                            "data": {"partition": {"kind": kind, **fields, "bogus": 1}}})
    assert problems == [f"data.partition.bogus: unknown key (allowed: {allowed})"]


def test_validating_a_scenario_loads_no_torch():
    """The configuration layer reads names and traits, never an implementation (a fresh
    interpreter: torch, torchvision, simpy and the trainers stay out of sys.modules)."""
    code = ("import sys; from scala_netsim.config.scenario import load_scenario; "
            "s = load_scenario('scenarios/cellular_10pct.yaml', ['training.rounds=3']); "
            "assert s.training.rounds == 3 and s.model.arch == 'alexnet'; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', "
            "'torchvision', 'simpy') or m in ('scala_netsim.sim.protocols', "
            "'scala_netsim.learn.models', 'scala_netsim.learn.compression', "
            "'scala_netsim.algorithms.scala')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


def test_a_scenario_pickles_as_validated_and_is_not_validated_again(monkeypatch):
    # worker processes and Ray tasks receive the cell's Scenario itself (issue 36: one way to
    # run a cell, the scenario validated once)
    import pickle

    import scala_netsim.config.scenario as module

    scenario = module.load_scenario(ROOT / "scenarios" / "cellular_10pct.yaml")

    def refuse(*args, **kwargs):
        raise AssertionError("validated again")

    monkeypatch.setattr(module, "validate_scenario", refuse)
    monkeypatch.setattr(module.scenario_model(), "model_validate", refuse)
    again = pickle.loads(pickle.dumps(scenario))
    assert again == scenario and type(again) is module.scenario_model()
    assert again.num_participants == scenario.num_participants == 10


def test_a_field_validators_message_follows_the_field_after_a_colon():
    """Issue 47 (11): a field's own validator said "network.subcarrier_spacing_hz.must be";
    a section's validator, which names its field itself, still reads "section.field: ..."."""
    (problem,) = [p for p in problems_of({"name": "s", "network": {"subcarrier_spacing_hz": 20e3}})
                  if "subcarrier" in p]
    assert problem.startswith("network.subcarrier_spacing_hz: must be 15e3, 30e3 or 60e3")
    assert problem.endswith("got 20000")


@pytest.mark.parametrize("layout", [{"kind": "single"},
                                    {"kind": "hexagonal", "sites": 1, "sectors": 3}])
def test_a_written_scenario_reads_back_whatever_its_layout_ignores(layout):
    """Issue 47 (9): a layout key the kind ignores is refused as input, but a run's
    scenario.yaml writes every key, at its default where the kind ignores it, and must read
    back (87 kept runs of the single layout write sites: 7, isd_m: 500, ...)."""
    scenario = validate_scenario({"name": "x", "network": {"layout": layout}})
    written = yaml.safe_load(scenario_yaml(scenario))
    assert validate_scenario(written) == scenario
    if layout["kind"] == "single":
        written["network"]["layout"]["sites"] = 19        # not what a run writes
        with pytest.raises(ScenarioError, match="network.layout.sites: the single layout"):
            validate_scenario(written)


def test_cellular_10pct_writes_out_every_key_of_every_section():
    """Issue 47 (14): the README and docs/guides/scenarios.md send a reader to
    scenarios/cellular_10pct.yaml for every key with its default; the network's keys (and
    a few sections) were not there."""
    path = ROOT / "scenarios" / "cellular_10pct.yaml"
    written = yaml.safe_load(path.read_text())
    resolved = load_scenario(path).model_dump(mode="json")
    missing = [section for section in resolved if section not in written]
    missing += [f"{section}.{key}" for section, value in resolved.items()
                if isinstance(value, dict) and isinstance(written.get(section), dict)
                for key in value if key not in written[section]]
    assert not missing
