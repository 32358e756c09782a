"""The package's layers (scala_netsim/__init__.py's docstring draws them): every module
imports only its own layer and the layers below, function-level and TYPE_CHECKING imports
included, and no import cycle exists at all. Third-party imports are not looked at, except
that the bottom layer never imports torch, simpy or pydantic."""

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]   # (no conftest import: also run as a script)
PACKAGES = ("scala_netsim", "channel", "analysis")
# (layer, rank, module prefixes), bottom first; layers of one rank may not import each other.
# Every layer is a folder; the entry points are the package's root modules. A prefix names a
# module and everything below it; one ending in $ names that module only.
LAYERS = [
    ("core", 0, ["scala_netsim.core"]),
    ("channel", 1, ["channel"]),
    ("analysis", 1, ["analysis"]),
    ("learn", 1, ["scala_netsim.learn"]),
    ("books", 2, ["scala_netsim.books"]),
    ("algorithms", 3, ["scala_netsim.algorithms"]),
    ("sim", 3, ["scala_netsim.sim"]),
    ("network", 4, ["scala_netsim.sim.network"]),
    ("config", 4, ["scala_netsim.config"]),
    ("runner", 5, ["scala_netsim.runner"]),
    ("tools", 6, ["scala_netsim.tools"]),
    ("flower", 6, ["scala_netsim.flower"]),
    ("entry", 7, ["scala_netsim$", "scala_netsim.__main__", "scala_netsim.api",
                  "scala_netsim.cli", "scala_netsim.retime", "scala_netsim.attack"]),
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


def test_the_simulator_and_the_algorithms_meet_only_in_the_trainer_contract():
    """sim and algorithms stand side by side on the learning layer: neither imports the
    other; both import the trainer contract (learn.contract)."""
    for layer in ("sim", "algorithms"):
        modules = [m for m in GRAPH if layer_of(m)[0] == layer]
        assert any("scala_netsim.learn.contract" in GRAPH[m][0] for m in modules), layer


def test_the_package_root_holds_only_the_entry_points():
    """At the root: __init__, __main__ and the commands (api, cli, retime, attack); every
    other module lives in its layer's folder."""
    root = sorted(p.name for p in (ROOT / "scala_netsim").glob("*.py"))
    assert root == ["__init__.py", "__main__.py", "api.py", "attack.py", "cli.py", "retime.py"]


def test_no_module_only_re_exports_another():
    """No shim: a module whose body (after its docstring) is nothing but imports, or that
    replaces itself in sys.modules, or answers attributes it does not define (__getattr__
    forwarding), would be a second path to another module's names. The package's top
    (scala_netsim/__init__.py) loads the Python API lazily and is the one __getattr__."""
    shims = []
    for module, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text())
        body = [n for n in tree.body if not (isinstance(n, ast.Expr)
                                            and isinstance(n.value, ast.Constant))]
        text = path.read_text()
        if body and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in body):
            shims.append(f"{module}: only imports")
        if "sys.modules[__name__]" in text:
            shims.append(f"{module}: replaces itself in sys.modules")
        if module != "scala_netsim" and any(isinstance(n, ast.FunctionDef)
                                            and n.name == "__getattr__" for n in tree.body):
            shims.append(f"{module}: a module-level __getattr__")
    assert not shims, "\n".join(shims)


def test_the_checker_sees_function_level_and_type_checking_imports():
    first, third = imports_of("scala_netsim.tools.sweep")
    assert "scala_netsim.runner.execute" in first   # sweep imports it inside its cell functions
    assert "torch" in third
    # the registry names the protocols by path; its one import of them is for types
    assert "scala_netsim.sim.stages" in imports_of("scala_netsim.config.registry")[0]
    assert layer_of("scala_netsim.config.scenario") == ("config", 4)
    assert layer_of("scala_netsim") == ("entry", 7)   # the package's top: the Python API
    with pytest.raises(AssertionError, match="scala_netsim.extra has no layer"):
        layer_of("scala_netsim.extra")


ARCHITECTURE = ROOT / "docs" / "architecture.md"
FLOORS_BEGIN, FLOORS_END = "<!-- floors: begin -->", "<!-- floors: end -->"


def floors_picture(width: int = 96) -> str:
    """The floors of the house, top first, drawn from LAYERS and the modules found: each
    floor's folder(s) and the modules in them (layers of one rank side by side)."""
    ranks = sorted({rank for _, rank, _ in LAYERS}, reverse=True)
    lines = []
    for rank in ranks:
        cells = []
        for name, r, _ in LAYERS:
            if r != rank:
                continue
            members = sorted(m for m in MODULES if layer_of(m)[0] == name)
            paths = sorted({str(MODULES[m].relative_to(ROOT).parent) + "/" for m in members})
            stems = sorted({MODULES[m].stem for m in members} - {"__init__"} if name != "entry"
                           else {MODULES[m].stem for m in members})
            where = ", ".join(paths) if name != "entry" else "scala_netsim/ (root)"
            cells.append(f"{name} [{where}]: {', '.join(stems)}")
        text = f"{rank}  " + "  |  ".join(cells)
        while len(text) > width:   # wrap at a comma, indented under the floor's text
            cut = text.rfind(", ", 0, width) + 1
            lines.append(text[:cut])
            text = "   " + text[cut:]
        lines.append(text)
        lines.append("-" * width if rank else "=" * width)
    return "\n".join(lines)


def test_the_architecture_page_shows_the_floors_as_they_are():
    """docs/architecture.md's picture of the floors is generated from LAYERS (rewrite it with
    `python tests/house/test_layers.py`), so it cannot drift from the code."""
    text = ARCHITECTURE.read_text()
    block = text.split(FLOORS_BEGIN)[1].split(FLOORS_END)[0]
    assert block.strip("\n") == f"```\n{floors_picture()}\n```"


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


if __name__ == "__main__":   # rewrite docs/architecture.md's picture of the floors
    head, rest = ARCHITECTURE.read_text().split(FLOORS_BEGIN)
    ARCHITECTURE.write_text(f"{head}{FLOORS_BEGIN}\n```\n{floors_picture()}\n```\n"
                            f"{FLOORS_END}{rest.split(FLOORS_END)[1]}")
