"""The radio model is opt-in: the shipped default scenarios write, byte for byte, the files
they wrote before it existed. The digests below were recorded by the code of commit 761ab03
(the last one before the radio model), with the same command and the golden run's pinned
kernels."""

import hashlib
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from golden_run import PINNED_ENV

pytestmark = pytest.mark.slow

SMALL = ["--set", "data.train_samples=1000", "--set", "data.test_samples=100",
         "--set", "training.rounds=2", "--set", "training.local_iters=1",
         "--set", "training.eval_every=1", "--set", "algorithms=[scala, fedavg]",
         "--no-progress", "--no-report", "--no-figures"]
BEFORE_THE_RADIO_MODEL = dict(line.split() for line in """
cellular_10pct/fedavg/clients.csv f7923e455f1fb3ef51299518b07c16b28ed10fee0e4c1d79a7c0432a39e6993c
cellular_10pct/fedavg/demands.csv c6e7f307fe73cb8e0e628b5c4bc1b75f6f49d42e0ccd4ce9b5ba02a9728e522f
cellular_10pct/fedavg/events.csv c074588f9f9c28a217e67b196fef69d18ebd093ef0f265d56310b8c393d27792
cellular_10pct/fedavg/rounds.csv 0cbd6f913d32780ced522019c370291a37bd85d8434c5280c276ad15e291af30
cellular_10pct/scala/clients.csv f7923e455f1fb3ef51299518b07c16b28ed10fee0e4c1d79a7c0432a39e6993c
cellular_10pct/scala/demands.csv d83fb99dea4432f121a56faea79ee416eb00bd1405c895003c7081c2feb1cb11
cellular_10pct/scala/events.csv df5d37a09a88ec330f934957f0ca5d3e188816afed9731a898164b1cbae71b97
cellular_10pct/scala/rounds.csv df8e20c84957f2c23977758cb052115db24060ad5e6c2f4d0066619ec16c7c3e
quickstart/fedavg/clients.csv a51bc8935dcdecf1a2e2b24c426b6455c50c08abcdc6a2c2e806de8a17c28442
quickstart/fedavg/demands.csv 1c26921c2cc79cd5d3688e24b0816a73bcbb702b08cbf6bdd2e363646850e10d
quickstart/fedavg/events.csv 03aa0db6f09d656b761b126ca89cfe826124e3a8f78940a0f3d814d418062bd2
quickstart/fedavg/rounds.csv 34f872ca1c996e80f37f03b7aaf0df00954f9e8d2dd8e7d2126b416c5b8535fc
quickstart/scala/clients.csv a51bc8935dcdecf1a2e2b24c426b6455c50c08abcdc6a2c2e806de8a17c28442
quickstart/scala/demands.csv aed6775c65436ff2819cf13ae9a99e54b63cb851c31dc0d958ec2f5a91823d63
quickstart/scala/events.csv 5e8a6b9b674cb4be2186c95f9b4368b47f4ba16b0fe4e5bc38b901861de9bbf5
quickstart/scala/rounds.csv a1b11fc47b1d853bac9bdbec58464153dd3e2274b37293ccc3c90335c5cca9d1
""".strip().splitlines())


@pytest.mark.parametrize("scenario", ["quickstart", "cellular_10pct"])
def test_the_default_scenarios_write_the_files_they_wrote_before_the_radio_model(tmp_path,
                                                                                 scenario):
    proc = subprocess.run([sys.executable, "-m", "scala_netsim",
                           str(ROOT / "scenarios" / f"{scenario}.yaml"), "--out", str(tmp_path),
                           *SMALL], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **PINNED_ENV})
    assert proc.returncode == 0, proc.stderr
    for name, digest in BEFORE_THE_RADIO_MODEL.items():
        if name.startswith(f"{scenario}/"):
            _, algorithm, file = name.split("/")
            path = tmp_path / scenario / algorithm / "seed0" / file
            assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name
