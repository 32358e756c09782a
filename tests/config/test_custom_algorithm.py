"""An algorithm written outside the package (the README's example) runs through the CLI, and
the registry refuses a trainer that does not fit its protocol."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from scala_netsim.algorithms.scala import SCALA
from scala_netsim.config.registry import (
    ALGORITHMS,
    AlgorithmSpec,
    Traits,
    register,
    traits_of,
)
from scala_netsim.sim.protocols import ConcatSplitProtocol, FederatedProtocol

from conftest import ROOT
from golden_run import GOLDEN, run_golden

PLUGIN = '''
"""FedAvg with clipped client gradients, from outside scala_netsim."""
import torch
from pydantic import Field

from scala_netsim.algorithms.config import AlgorithmConfig
from scala_netsim.algorithms.federated import FedAvg
from scala_netsim.config.registry import AlgorithmSpec
from scala_netsim.sim.protocols import FederatedProtocol


class FedAvgClipConfig(AlgorithmConfig):
    max_norm: float = Field(default=1.0, gt=0)     # the scenario section `fedavg_clip:`


class FedAvgClip(FedAvg):
    def __init__(self, *args, max_norm: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_norm = max_norm

    @classmethod
    def hyper_parameters(cls, config):
        return {"max_norm": config.max_norm}

    def adjust_gradients(self, k, model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), self.max_norm)


SPEC = AlgorithmSpec("fedavg_clip", FedAvgClip, FederatedProtocol,
                     "FedAvg with clipped client gradients", config=FedAvgClipConfig)
'''


@pytest.fixture
def plugin_dir(tmp_path):
    """A package on PYTHONPATH that registers `fedavg_clip` through the entry-point group
    scala_netsim.algorithms, as an installed package would."""
    folder = tmp_path / "site"
    (folder / "fedavg_clip-0.1.dist-info").mkdir(parents=True)
    (folder / "fedavg_clip.py").write_text(PLUGIN)
    (folder / "fedavg_clip-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fedavg-clip\nVersion: 0.1\n")
    (folder / "fedavg_clip-0.1.dist-info" / "entry_points.txt").write_text(textwrap.dedent("""\
        [scala_netsim.algorithms]
        fedavg_clip = fedavg_clip:SPEC
        """))
    return folder


@pytest.mark.slow
def test_an_out_of_tree_algorithm_runs_through_the_cli(plugin_dir, tmp_path):
    # the plugin's folder before what PYTHONPATH held (where this environment's packages may be)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, (str(plugin_dir),
                                                       os.environ.get("PYTHONPATH"))))}
    proc = run_golden(tmp_path / "out", "--set", "algorithms=[fedavg_clip, fedavg]",
                      "--set", "fedavg_clip.max_norm=0.05", env=env)
    assert proc.returncode == 0, proc.stderr
    runs = tmp_path / "out" / "golden"
    summary = json.loads((runs / "fedavg_clip" / "seed3" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["algorithm"] == "fedavg_clip"
    events = pd.read_csv(runs / "fedavg_clip" / "seed3" / "events.csv")
    assert set(events.kind) == {"model_download", "client_forward", "client_backward",
                                "model_upload"}
    # the same timeline as FedAvg (same pattern, sizes and FLOPs), other learning
    assert (runs / "fedavg_clip/seed3/events.csv").read_bytes() == (
        GOLDEN / "fedavg" / "events.csv").read_bytes()
    clipped = pd.read_csv(runs / "fedavg_clip/seed3/rounds.csv")
    plain = pd.read_csv(GOLDEN / "fedavg" / "rounds.csv")
    assert not clipped["test_loss"].equals(plain["test_loss"])
    assert (runs / "fedavg/seed3/rounds.csv").read_bytes() == (
        GOLDEN / "fedavg" / "rounds.csv").read_bytes()
    assert "fedavg_clip: completed" in proc.stdout
    # its section is validated with the scenario: bad values exit 2 and name the field
    bad = run_golden(tmp_path / "bad", "--set", "algorithms=[fedavg_clip]",
                     "--set", "fedavg_clip.max_norm=-1", env=env)
    assert bad.returncode == 2
    assert "fedavg_clip.max_norm: must be > 0.0, got -1" in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_the_registry_refuses_a_trainer_that_does_not_fit_its_protocol():
    with pytest.raises(TypeError, match="'mismatch': SCALA must implement FederatedTrainer, "
                                        "the contract of FederatedProtocol"):
        register(AlgorithmSpec("mismatch", SCALA, FederatedProtocol, "SCALA timed as FedAvg"))
    with pytest.raises(ValueError, match="algorithm 'scala' is registered already"):
        register(AlgorithmSpec("scala", SCALA, ConcatSplitProtocol, "another scala"))
    assert "mismatch" not in ALGORITHMS


@pytest.mark.parametrize(("trainer", "protocol", "contract"), [
    ("async_trainers:AsyncSFL", "protocols:PerClientSplitProtocol", "PerClientSplitTrainer"),
    ("async_trainers:FedAsync", "protocols:FederatedProtocol", "FederatedTrainer"),
    ("splitfed:SplitFedV2", "async_protocols:AsyncSplitProtocol", "AsyncSplitTrainer"),
    ("federated:FedAvg", "async_protocols:AsyncFederatedProtocol", "AsyncFederatedTrainer"),
])
def test_a_trainer_of_one_clock_is_refused_by_a_protocol_of_the_other(trainer, protocol,
                                                                       contract):
    # issue 36: round and asynchronous trainers (and protocols) are siblings, so the type
    # check refuses the pairing (AsyncSFL was a PerClientSplitTrainer through SplitFedV2)
    import importlib

    def load(where, path):
        module, name = path.split(":")
        return getattr(importlib.import_module(f"scala_netsim.{where}.{module}"), name)

    trainer_class, protocol_class = load("algorithms", trainer), load("sim", protocol)
    with pytest.raises(TypeError, match=f"must implement {contract}"):
        register(AlgorithmSpec("crossed", trainer_class, protocol_class, "the wrong clock"))
    assert "crossed" not in ALGORITHMS


def test_every_builtin_algorithms_traits_agree_with_its_classes():
    for name, spec in ALGORITHMS.items():
        trainer, protocol = spec.classes()   # raises where a trait contradicts a class flag
        assert traits_of(protocol, trainer) == spec.traits, name
    assert ALGORITHMS.with_trait("barrier") == ["scala", "scala_pe", "ca_sfl"]
    assert ALGORITHMS.with_trait("gradients") == ["scala", "scala_pe", "ca_sfl", "splitfed_v1",
                                                  "splitfed_v2", "splitfed_v3", "lla_sfl",
                                                  "cs_sfl", "async_sfl", "gas"]
    assert ALGORITHMS.with_trait("activations") == [*ALGORITHMS.with_trait("gradients")[:-2],
                                                    "sfl_local_loss", "async_sfl", "gas"]
    assert "splitfed_v3" not in ALGORITHMS.with_trait("attackable")
    assert ALGORITHMS["splitfed_v3"].traits.why_not_attackable("splitfed_v3") == (
        "splitfed_v3 has no global client-side model (each client keeps its own)")
    assert [n for n in ALGORITHMS if not ALGORITHMS[n].traits.timeable] == [
        "fedconcat", "fedasync", "fedbuff", "async_sfl", "gas"]
    assert ALGORITHMS.with_trait("asynchronous") == ["fedasync", "fedbuff", "async_sfl", "gas"]
    assert ALGORITHMS.with_trait("retimeable") == [
        n for n in ALGORITHMS if n not in ("fedasync", "fedbuff", "async_sfl", "gas")]


def test_an_entry_named_by_path_needs_traits_and_they_must_match_its_classes():
    with pytest.raises(TypeError, match="'lazy': traits are required when the trainer or the "
                                        "protocol is named by path"):
        AlgorithmSpec("lazy", "scala_netsim.algorithms.scala:SCALA",
                      "scala_netsim.sim.protocols:ConcatSplitProtocol", "SCALA by path")
    spec = AlgorithmSpec("lying", "scala_netsim.algorithms.federated:FedAvg",
                         "scala_netsim.sim.protocols:FederatedProtocol",
                         "FedAvg claiming a barrier",
                         traits=Traits(barrier=True))
    with pytest.raises(TypeError, match=r"'lying': traits disagree with FedAvg and "
                                        r"FederatedProtocol: barrier=True \(the classes say "
                                        r"False\)"):
        spec.classes()   # named by path: checked when first resolved (spec.trainer, ...)


def test_validating_a_scenario_imports_no_algorithm_classes():
    """The registry names its built-in classes by path: reading it loads neither torch nor
    the trainers (checked in a fresh interpreter)."""
    code = ("import sys; from scala_netsim.config.registry import ALGORITHMS; "
            "assert ALGORITHMS['scala'].traits.barrier; "
            "print(sorted(m for m in ('torch', 'scala_netsim.sim.protocols', "
            "'scala_netsim.algorithms.scala') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_class_that_is_not_a_trainer_gets_the_contracts_refusal():
    # issue 37: registering it raised AttributeError ('fixed_step_costs'), reading traits
    class NotATrainer:
        pass

    with pytest.raises(TypeError, match="'not_one': NotATrainer must implement "
                                        "FederatedTrainer, the contract of FederatedProtocol"):
        register(AlgorithmSpec("not_one", NotATrainer, FederatedProtocol, "not a trainer"))
    with pytest.raises(TypeError, match="is not a protocol"):
        register(AlgorithmSpec("not_two", SCALA, dict, "not a protocol"))
    assert "not_one" not in ALGORITHMS and "not_two" not in ALGORITHMS


def test_a_plugin_module_imports_directly_and_a_broken_one_spares_the_others(plugin_dir,
                                                                             tmp_path):
    # issue 37: importing the plugin (as a test or notebook would) was a circular import,
    # since importing the registry loaded the half-imported plugin through its entry point;
    # and a plugin whose import failed broke every command
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (
        str(plugin_dir), str(ROOT), os.environ.get("PYTHONPATH"))))}
    direct = subprocess.run(
        [sys.executable, "-c", "import fedavg_clip; from scala_netsim.config.registry import "
         "ALGORITHMS; print(ALGORITHMS['fedavg_clip'].name)"],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert direct.returncode == 0, direct.stderr
    assert direct.stdout.strip() == "fedavg_clip"
    (plugin_dir / "fedavg_clip.py").write_text("raise ImportError('a missing dependency')\n")
    broken = subprocess.run(
        [sys.executable, "-m", "scala_netsim", str(ROOT / "scenarios/quickstart.yaml"),
         "--set", "algorithms=[fedavg_clip]", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert broken.returncode == 2
    assert ("algorithms.0: 'fedavg_clip' is not available: the algorithm plugin fedavg_clip "
            "= fedavg_clip:SPEC (entry-point group scala_netsim.algorithms) could not be "
            "loaded: ImportError: a missing dependency") in broken.stderr
    others = subprocess.run(
        [sys.executable, "-c", "from scala_netsim.config.scenario import load_scenario; "
         f"print(load_scenario({str(ROOT / 'scenarios/quickstart.yaml')!r}).algorithms)"],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert others.returncode == 0, others.stderr
    assert others.stdout.strip() == "['scala']"
    assert "fedavg_clip = fedavg_clip:SPEC" in others.stderr   # the warning names it


FEDAVGM = ROOT / "docs" / "examples" / "fedavgm.py"


def fedavgm_plugin(folder, source: str):
    """A package on PYTHONPATH registering `fedavgm` from `source` (an entry point)."""
    (folder / "fedavgm-0.1.dist-info").mkdir(parents=True)
    (folder / "fedavgm.py").write_text(source)
    (folder / "fedavgm-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fedavgm\nVersion: 0.1\n")
    (folder / "fedavgm-0.1.dist-info" / "entry_points.txt").write_text(
        "[scala_netsim.algorithms]\nfedavgm = fedavgm:SPEC\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, (str(folder),
                                                        os.environ.get("PYTHONPATH"))))}


def resumed_rounds(out, env, copy_to=None) -> tuple[bytes, bytes, str]:
    """(rounds.csv of an uninterrupted golden run of fedavgm, the same after resuming it from
    round 1's checkpoint, the second invocation's output). With `copy_to`, the finished run's
    folder is also copied there first (for another resume of the same checkpoint)."""
    proc = run_golden(out, "--set", "algorithms=[fedavgm]", "--set", "fedavgm.beta=0.5",
                      env=env)
    assert proc.returncode == 0, proc.stderr
    if copy_to is not None:
        shutil.copytree(out, copy_to)
    return resume(out, env)


def resume(out, env) -> tuple[bytes, bytes, str]:
    """resumed_rounds' second half: the finished run in `out` resumed from round 1's
    checkpoint under `env`."""
    run = out / "golden" / "fedavgm" / "seed3"
    whole = (run / "rounds.csv").read_bytes()
    (run / "summary.json").unlink()          # as if stopped after round 1's checkpoint
    again = run_golden(out, "--set", "algorithms=[fedavgm]", "--set", "fedavgm.beta=0.5",
                       env=env)
    assert again.returncode == 0, again.stderr
    return whole, (run / "rounds.csv").read_bytes(), again.stdout


@pytest.mark.slow
def test_the_guides_server_side_plugin_runs_and_its_state_survives_a_resume(tmp_path):
    """docs/examples/fedavgm.py (the extension guide quotes it): a server-side hook
    (`end_round` on the global model) with state that outlives a round (`extra_state`)."""
    guide = (ROOT / "docs" / "guides" / "extending.md").read_text()
    source = FEDAVGM.read_text()
    assert source.split('"""', 2)[2].strip() in guide          # the guide shows this code
    whole, resumed, stdout = resumed_rounds(tmp_path / "a", fedavgm_plugin(tmp_path / "p",
                                                                           source),
                                            copy_to=tmp_path / "b")
    assert "fedavgm: resuming from round 1 of 2" in stdout
    assert resumed == whole                     # the velocity came back from the checkpoint
    assert whole != (GOLDEN / "fedavg" / "rounds.csv").read_bytes()   # and it does something
    # without load_extra_state the same checkpoint resumes with the velocity at zero: other
    # results (the uninterrupted run is the same either way: copied, not run again)
    forgetful = source.replace("def extra_state(", "def _unused(").replace(
        "def load_extra_state(", "def _unused_too(")
    same, resumed, stdout = resume(tmp_path / "b", fedavgm_plugin(tmp_path / "q", forgetful))
    assert same == whole and "fedavgm: resuming from round 1 of 2" in stdout
    assert resumed != whole
