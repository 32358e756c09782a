#!/usr/bin/env bash
# Sets scala_netsim up on Debian or Ubuntu: the Fashion-MNIST package from apt, and the project
# in a virtual environment, `.venv` in the checkout. A venv because the system Python of Debian
# 12, Ubuntu 23.04 and later is externally managed (PEP 668) and pip refuses to install into it;
# the venv sees that interpreter's own packages (--system-site-packages), so a torch already
# installed there is used, not downloaded again.
#   scripts/setup.sh          what a run needs
#   scripts/setup.sh --test   and what the suite tests: pytest, the type checker, Ray, MkDocs
# Then run with .venv/bin/python (or `. .venv/bin/activate` first). PYTHON picks the interpreter
# the venv is made from (default python3). Runs as root or as a user with sudo; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
case "${1:-}" in
    "") ;;
    --test) extras="[test]" ;;
    *) echo "scripts/setup.sh: unknown option '$1' (allowed: --test, or nothing)" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3}

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
apt_install() {
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q "$@"
}

if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    apt_install dataset-fashion-mnist
fi

# a venv that has no pip was left by a `venv` that failed (Debian's python without
# python3-venv): make it again
if ! .venv/bin/python -m pip --version > /dev/null 2>&1; then
    rm -rf .venv
    if ! "$PYTHON" -m venv --system-site-packages .venv > /dev/null 2>&1; then
        rm -rf .venv
        version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        apt_install "python${version}-venv"
        "$PYTHON" -m venv --system-site-packages .venv
    fi
fi

.venv/bin/python -m pip install -q -e ".${extras}"

# A package the venv takes from the interpreter (--system-site-packages) keeps its data files
# under that interpreter's prefix, where Jupyter tools running in the venv do not look (only
# under the venv's own share/jupyter): nbconvert, which the docs build uses for the notebook,
# then finds no templates. Link its templates into the venv when they are the interpreter's.
# (Not its kernel specs: they run a bare `python`, which need not be the venv's.)
base_templates=$(.venv/bin/python -c \
    'import os, sys; print(os.path.join(sys.base_prefix, "share", "jupyter", "nbconvert"))')
if [ -d "$base_templates" ] && [ ! -e .venv/share/jupyter/nbconvert ]; then
    mkdir -p .venv/share/jupyter
    ln -s "$base_templates" .venv/share/jupyter/nbconvert
fi
