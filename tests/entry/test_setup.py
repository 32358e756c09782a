"""Set-up on the systems the README names (issue 37): `scripts/setup.sh` installs into a virtual
environment in the checkout, so it works on a Python that is externally managed (PEP 668:
Debian 12, Ubuntu 23.04 and later), and a first run needs none of the extras."""

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

tomllib = pytest.importorskip("tomllib")   # Python 3.11 and later

README = (ROOT / "README.md").read_text()


def externally_managed_python(where: Path) -> Path:
    """A copy of the running interpreter that carries an EXTERNALLY-MANAGED marker, as Debian's
    python3 does: its standard library linked in, and the packages this suite runs on (torch
    and the rest) seen through a .pth file, so that nothing is downloaded again."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    stdlib = Path(sys.base_prefix) / "lib" / version
    if not (stdlib / "os.py").is_file():
        pytest.skip(f"the running interpreter's standard library is not at {stdlib}")
    (where / "bin").mkdir(parents=True)
    (where / "lib" / version).mkdir(parents=True)
    python = where / "bin" / "python3"
    shutil.copy2(Path(sys._base_executable).resolve(), python)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "dist-packages", "EXTERNALLY-MANAGED"):
            (where / "lib" / version / entry.name).symlink_to(entry)
    (where / "lib" / version / "EXTERNALLY-MANAGED").write_text(
        "[externally-managed]\nError=this Python is managed by the system (a test's copy)\n")
    site_dir = Path(subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    site_dir.mkdir(parents=True, exist_ok=True)
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    (site_dir / "suite_packages.pth").write_text("\n".join(ours + site.getsitepackages()) + "\n")
    return python


@pytest.mark.slow
def test_setup_installs_into_a_venv_on_an_externally_managed_python(tmp_path):
    python = externally_managed_python(tmp_path / "system")
    # the precondition: pip refuses this interpreter, as the set-up's old `python3 -m pip
    # install -e .` was refused on Debian 12
    refused = subprocess.run([python, "-m", "pip", "install", "--dry-run", "simpy"],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md", "scala_netsim", "channel", "analysis",
                 "scripts"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, checkout / name)
    done = subprocess.run([checkout / "scripts" / "setup.sh"], cwd=tmp_path,
                          env={**os.environ, "PYTHON": str(python)},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    venv_python = checkout / ".venv" / "bin" / "python"
    where = subprocess.run([venv_python, "-c", "import scala_netsim, sys; "
                            "print(scala_netsim.__file__); print(sys.prefix)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True)
    assert where.stdout.split() == [str(checkout / "scala_netsim" / "__init__.py"),
                                    str(checkout / ".venv")]
    # and the README's commands run the venv's interpreter
    assert "scripts/setup.sh && .venv/bin/python -m scala_netsim scenarios/" in README
    assert "scripts/setup.sh --test && .venv/bin/python -m pytest -q" in README


def test_ci_runs_the_readmes_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/setup.sh --test && .venv/bin/python -m pytest -q" in README
    assert "scripts/setup.sh --test &&" in ci and ".venv/bin/python -m pytest -q" in ci


def test_a_run_needs_none_of_the_extras():
    """Ray, MkDocs, the type checker and the test tools are extras; the first run installs
    none of them (scripts/setup.sh without --test)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"]).lower()
    for extra in ("ray", "mkdocs", "mypy", "pytest", "nbclient", "ipykernel"):
        assert extra not in core
    assert set(project["optional-dependencies"]) >= {"test", "ray", "docs", "typing"}


BLOCKER = """
import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"ray", "mkdocs", "mypy", "pytest", "nbclient", "ipykernel"}:
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Missing())
from scala_netsim.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_first_run_works_without_the_extras_installed(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, str(ROOT / "scenarios" / "quickstart.yaml"),
         "--out", str(tmp_path), "--set", "data.train_samples=1000",
         "--set", "data.test_samples=100", "--set", "training.rounds=1",
         "--set", "training.local_iters=1", "--no-progress"],
        capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "scala: completed" in done.stdout
    assert (tmp_path / "quickstart" / "report.md").is_file()
