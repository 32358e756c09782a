"""The package's layers (scala_netsim/__init__.py's docstring draws them): every module
imports only its own layer and the layers below, function-level and TYPE_CHECKING imports
included, and no import cycle exists at all. Third-party imports are not looked at, except
that the bottom layer never imports torch, simpy or pydantic."""

import ast
import graphlib
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGES = ("scala_netsim", "channel", "analysis")
# (layer, rank, module prefixes), bottom first; layers of one rank may not import each other.
# A prefix names a module and everything below it; one ending in $ names that module only.
LAYERS = [
    ("core", 0, ["scala_netsim.core", "scala_netsim.events", "scala_netsim.results",
                 "scala_netsim.seeds"]),
    ("channel", 1, ["channel"]),
    ("analysis", 1, ["analysis"]),
    ("learn", 1, ["scala_netsim.messages", "scala_netsim.models", "scala_netsim.flops",
                  "scala_netsim.losses", "scala_netsim.partition", "scala_netsim.data",
                  "scala_netsim.compression", "scala_netsim.privacy", "scala_netsim.training"]),
    ("contract", 2, ["scala_netsim.algorithms.contract"]),
    ("algorithms", 3, ["scala_netsim.algorithms", "scala_netsim.selection"]),
    ("sim", 3, ["scala_netsim.engine", "scala_netsim.sim"]),
    ("registry", 4, ["scala_netsim.algorithms.registry"]),
    ("config", 5, ["scala_netsim.config", "scala_netsim.scenario"]),
    ("runner", 6, ["scala_netsim.runner", "scala_netsim.replay", "scala_netsim.timing",
                   "scala_netsim.radio_record", "scala_netsim.invariants",
                   "scala_netsim.metrics", "scala_netsim.estimate"]),
    ("tools", 7, ["scala_netsim.sweep", "scala_netsim.attack"]),
    ("entry", 8, ["scala_netsim.cli", "scala_netsim.retime", "scala_netsim.api",
                  "scala_netsim.__main__", "scala_netsim$"]),
]
BOTTOM_FORBIDS = ("torch", "torchvision", "simpy", "pydantic")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def layer_of(module: str) -> tuple[str, int]:
    """The layer of the longest prefix that names `module` or a package above it."""
    best = max(((len(p), name, rank) for name, rank, prefixes in LAYERS for p in prefixes
                if module == p.rstrip("$")
                or (not p.endswith("$") and module.startswith(p + "."))), default=None)
    if best is None:
        raise AssertionError(f"{module} has no layer: add it to LAYERS here and to the "
                             f"package docstring")
    return best[1], best[2]


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """(first-party modules, top-level third-party names) that `module` imports anywhere."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    first, third = set(), set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name:
                first.add(name)
            else:
                third.update(n.split(".")[0] for n in names)
    first.discard(module)
    return first, third


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_module_imports_only_its_layer_and_below():
    wrong = []
    for module, (first, _) in sorted(GRAPH.items()):
        layer, rank = layer_of(module)
        for target in sorted(first):
            target_layer, target_rank = layer_of(target)
            if target_rank > rank or (target_rank == rank and target_layer != layer):
                wrong.append(f"{module} ({layer}) imports {target} ({target_layer})")
    assert not wrong, "\n".join(wrong)


def test_there_is_no_import_cycle():
    sorter = graphlib.TopologicalSorter({m: first for m, (first, _) in GRAPH.items()})
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_the_bottom_layer_imports_no_torch_simpy_or_pydantic():
    bottom = [(m, sorted(set(third) & set(BOTTOM_FORBIDS))) for m, (_, third) in GRAPH.items()
              if layer_of(m)[0] == "core"]
    assert [entry for entry in bottom if entry[1]] == []
    assert len(bottom) >= 8


def test_the_simulator_imports_only_the_trainer_contract_of_the_algorithms():
    sim = [m for m in GRAPH if layer_of(m)[0] == "sim"]
    for module in sim:
        assert {t for t in GRAPH[module][0] if layer_of(t)[1] >= 2
                and layer_of(t)[0] != "sim"} <= {"scala_netsim.algorithms.contract"}, module


def test_the_checker_sees_function_level_and_type_checking_imports():
    first, third = imports_of("scala_netsim.sweep")
    assert "scala_netsim.runner.execute" in first   # sweep imports it inside its cell functions
    assert "torch" in third
    # the registry names the engine's classes by path; its one import of it is for types
    assert "scala_netsim.engine" in imports_of("scala_netsim.algorithms.registry")[0]
    assert layer_of("scala_netsim.config.scenario") == ("config", 5)
    assert layer_of("scala_netsim") == ("entry", 8)   # the package's top: the Python API
    with pytest.raises(AssertionError, match="scala_netsim.extra has no layer"):
        layer_of("scala_netsim.extra")


MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 60


def test_no_module_over_500_lines_and_no_function_over_60():
    too_long = []
    for module, path in sorted(MODULES.items()):
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{module}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{module}.{node.name}: {length} lines")
    assert not too_long, "\n".join(too_long)
