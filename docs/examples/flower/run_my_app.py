"""Bring your Flower app: the ClientApp of my_app.py beside this file (an MLP on its clients'
shares of Fashion-MNIST), aggregated by Flower's FedAdam, on 3GPP's n78 macro network cut to
7 sites: 38.901 UMa at 3.5 GHz, one 100 MHz TDD carrier (DDDSU), NR's link abstraction (MCS,
BLER, HARQ), round robin, and other users' traffic at 30 % load (the mobility study's network,
scenarios/mobility.yaml, its clients standing still). 20 clients, 5 a round, 10 rounds.

    python docs/examples/flower/run_my_app.py [OUT]

prints accuracy against the simulated clock and where a round's time went; the run's files
(rounds.csv, events.csv, air.csv, ...) are in OUT (default: a temporary folder)."""

import sys
import tempfile
from pathlib import Path

import yaml

import scala_netsim as sn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))          # my_app: importable, as from its own folder

document = yaml.safe_load((HERE.parents[2] / "scenarios" / "mobility.yaml").read_text())
document.pop("sweep")                  # one run: the study's static case
scenario = sn.load_scenario(document, {
    "name": "my_flower_app",
    "algorithms": ["flower"],
    "flower": {"strategy": "FedAdam", "options": {"eta": 0.01},
               "client_app": "my_app:app", "initial_arrays": "my_app:initial_arrays",
               "evaluate_fn": "my_app:evaluate", "run_config": {"lr": 0.05}},
    # the run's own data section only numbers the clients (the app reads its images itself)
    "data.num_clients": 20, "data.train_samples": 2000, "data.test_samples": 100,
    "training.rounds": 10, "training.participation": 0.25, "training.local_iters": 5,
    "training.eval_every": 2, "training.checkpoint_every": 5})

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
results = sn.run(scenario, out=out, echo=False)
rounds = results.rounds
print(rounds[["round", "sim_time_s", "test_acc", "test_loss"]].dropna().to_string(index=False))
events = results.events
print("\nseconds a round, summed over its clients:")
print((events.assign(s=events.t_end_s - events.t_start_s).groupby("kind").s.sum()
       / scenario.training.rounds).round(3).to_string())
print(f"\nfiles: {out / scenario.name / 'flower' / 'seed0'}")
