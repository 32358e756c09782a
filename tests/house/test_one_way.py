"""One way to run a cell (issue 36): the command line, the Python API, the worker processes,
Ray tasks and the re-timer all call scala_netsim.tools.sweep.run_point, the one caller of
execute_run in the package."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def callers_of(name: str) -> set[str]:
    found = set()
    for path in ROOT.joinpath("scala_netsim").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                    node.func, "id", None)
                if called == name:
                    found.add(str(path.relative_to(ROOT)))
    return found


def test_only_run_cell_runs_a_cell():
    assert callers_of("execute_run") == {"scala_netsim/tools/sweep.py"}
    source = ROOT.joinpath("scala_netsim/tools/sweep.py").read_text()
    tree = ast.parse(source)
    calling = [f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
               and any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "execute_run"
                       for n in ast.walk(f))]
    assert calling == ["run_point"]


def test_every_entry_point_runs_cells_through_run_cell():
    # the API's in-process runs and re-timings, the executors, and the re-timing command
    assert {"scala_netsim/api.py", "scala_netsim/retime.py"} <= callers_of("run_point")
    sweep = ROOT.joinpath("scala_netsim/tools/sweep.py").read_text()
    assert "pool.submit(run_point," in sweep and "ray.remote(" in sweep and "(run_point)" in sweep
