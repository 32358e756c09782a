"""The documentation stays true: the site builds with no broken link or missing page, the
example notebook runs against the package as it is, and the README stays short."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs/examples/tutorial.ipynb"


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path):
    """`mkdocs build --strict`: every page in the nav exists, every page is in the nav, every
    link and anchor resolves, every API reference entry imports and renders."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    site = tmp_path / "site"
    assert (site / "index.html").is_file()
    assert "load_scenario" in (site / "reference/api/index.html").read_text()
    assert "allocate_hz" in (site / "reference/channel/index.html").read_text()
    assert (site / "examples/tutorial/index.html").is_file()       # the notebook, rendered


@pytest.mark.slow
def test_the_example_notebook_executes(tmp_path):
    """The notebook runs top to bottom (its QUICK slice) in a fresh kernel: both sweeps, the
    figures, the events table, a network run's three pictures; no cell raises."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.outputs for c in code[1:])   # every cell after the set-up shows something
    text = "\n".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                     for c in code for o in c.outputs)
    assert "training.lr: must be > 0.0, got -1" in text   # the ScenarioError, caught
    assert "retimed_from" in text and "activation_upload" in text
    images = sum("image/png" in o.get("data", {}) for c in code for o in c.outputs)
    assert images == 3 + 3      # its own three, and the network's (analysis.network_pictures)


def test_the_readme_fits_on_a_screen_or_two():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_the_ray_guide_says_where_plugins_and_the_environment_come_from():
    """Issue 37: a Ray worker runs in the environment `ray start` was run in on its node, not
    the submitting shell's; plugins and the package must be installed on every node."""
    guide = " ".join((ROOT / "docs" / "guides" / "gpu-and-ray.md").read_text().split())
    assert "Plugins (your own algorithms or channel models, registered through entry points) " \
           "must be installed on every node too" in guide
    assert "a Ray worker inherits the environment `ray start` was run in on its node" in guide
    assert "the package and the data must be installed on every node" in guide


def test_the_command_line_guides_synopsis_gives_every_flag():
    """Issue 47 (14): the re-timer's synopsis left out --device. Every option of the CLI and
    of the re-timer is in docs/guides/command-line.md's synopsis."""
    from scala_netsim import cli, retime

    guide = (ROOT / "docs" / "guides" / "command-line.md").read_text()
    synopsis = guide.split("\n\n")[1]
    for module in (cli, retime):
        parser_flags = re.findall(r'add_argument\("(--[a-z-]+)"', Path(module.__file__).read_text())
        missing = [f for f in parser_flags if f not in synopsis and f != "--help"]
        assert not missing, (module.__name__, missing)


def test_the_readmes_python_example_guards_its_worker_processes():
    """Issue 47 (14): with jobs=2 the example starts worker processes, which import the
    script again: without the guard it died."""
    readme = (ROOT / "README.md").read_text()
    example = readme.split("## From Python")[1].split("```python")[1].split("```")[0]
    assert "jobs=2" in example
    guarded = example.split('if __name__ == "__main__":')
    assert len(guarded) == 2 and "sn.run(" in guarded[1] and "sn.run(" not in guarded[0]


#: the folders a module named by its file alone may be in (the house and its neighbours)
HOUSE = ("scala_netsim", "channel", "analysis")


def test_every_file_the_architecture_page_names_exists():
    """Issue 62 (5): docs/architecture.md named four files that no longer existed. Every
    `something.py` it names exists: a path from the checkout's root or from scala_netsim/
    (`runner/world.py`), or a module named alone somewhere in the house (`stages.py`)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`([\w/.]+\.py)`", text))
    modules = {p.name for folder in HOUSE for p in (ROOT / folder).rglob("*.py")}
    missing = sorted(name for name in named
                     if not ((ROOT / name).is_file() or (ROOT / "scala_netsim" / name).is_file()
                             or ("/" not in name and name in modules)))
    assert len(named) >= 40
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_channel_imports_what_its_docstring_says():
    """Issue 62 (5): channel/__init__.py's docstring says what channel imports. At module level
    NumPy, SciPy and numba only (besides the standard library); torch and Sionna only inside
    functions of nr_link; nothing of scala_netsim, SimPy or pydantic anywhere."""
    import ast

    import channel

    said = " ".join(channel.__doc__.split())
    for name in ("NumPy", "SciPy", "numba", "Torch and Sionna only inside",
                 "Never SimPy, pydantic or scala_netsim"):
        assert name in said, name
    top, inside = set(), set()
    for path in sorted((ROOT / "channel").glob("*.py")):
        tree = ast.parse(path.read_text())
        nested = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                  for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            roots = {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {
                "channel"}
            (inside if id(node) in nested else top).update((r, path.name) for r in roots)
    assert {r for r, _ in top} == {"numpy", "scipy", "numba"}
    assert inside == {("torch", "nr_link.py"), ("sionna", "nr_link.py")}
