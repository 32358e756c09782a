#!/usr/bin/env bash
# Installs what scala_netsim needs on a Debian machine: the Fashion-MNIST package and the
# project itself with its test, Ray and documentation extras (the suite tests the Ray executor,
# builds the documentation site and executes its notebook). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q dataset-fashion-mnist
fi

python3 -m pip install -q -e ".[test,ray,docs]"
