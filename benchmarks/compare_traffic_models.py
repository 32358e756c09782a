"""Other users' traffic, the fluid model against every file (docs/model/network.md, 'Other
users' traffic'): not a timing but the measurement that page quotes. SCALA, 20 clients of
the Fashion-MNIST slice, 6 a round, 4 rounds, timing only, in 7 sites x 3 sectors (38.901
UMa at 3.5 GHz, 20 MHz, 46 dBm a cell) under round robin, with no other users, with FTP
model 3's files at an offered load (every file), under the fluid model at that load, and
under the fluid model at the loads the files carried (load.csv's means over the cells):

    python benchmarks/compare_traffic_models.py [--load 0.5] [--deployment uma_n78]

(--deployment uma_n78: the operator study's network, its deployment under round robin, on 7
sites in place of 19.)

Prints each case's simulated time, the learning's uploads and downloads on the air (summed
over the transfers, s) and the loads carried by direction.
"""

from __future__ import annotations

import argparse

import pandas as pd
import torch

from scala_netsim.books.traffic import load_table
from scala_netsim.config.scenario import validate_scenario
from scala_netsim.learn.data import Dataset, load_dataset
from scala_netsim.runner.loop import Run
from scala_netsim.runner.world import build_world

NETWORK = {"layout": {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3},
           "pathloss": "3gpp_38901_uma", "carrier_frequency_hz": 3.5e9, "bs_tx_power_w": 40.0,
           "scheduler": "round_robin"}
#: --deployment uma_n78: the operator study's network (its deployment under round robin) on
#: 7 sites
DEPLOYED = {"deployment": "uma_n78", "scheduler": "round_robin"}
UPLOADS, DOWNLOADS = ("activation_upload", "model_upload"), ("gradient_download",
                                                               "model_download")


def timed(traffic: dict, dataset: Dataset, network: dict) -> dict:
    scenario = validate_scenario({
        "name": "traffic_models", "device": "cpu", "data": {"num_clients": 20},
        "model": {"arch": "alexnet14"}, "algorithms": ["scala"], "timing_only": True,
        "training": {"rounds": 4, "local_iters": 2, "batch_size": 24, "participation": 0.3},
        "network": {**network, "traffic": traffic}})
    run = Run(scenario, "scala", build_world(scenario, dataset), torch.device("cpu"))
    while not run.finished:
        run.step()
    names, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(names))
    air = events["t_end_s"] - events["t_start_s"]
    out = {"sim_s": run.env.now, "uploads_s": air[events["kind"].isin(UPLOADS)].sum(),
           "downloads_s": air[events["kind"].isin(DOWNLOADS)].sum(), "carried": {}}
    background = getattr(run.link, "background", None)
    if background is not None:
        record = run.link.air_record()
        table = load_table(background.load_rows(), record.frame(), record.settings,
                           background.offered_load, background.began, run.env.now)
        out["carried"] = table.groupby("direction")["load"].mean().to_dict()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=float, default=0.5)
    parser.add_argument("--deployment", choices=("uma_n78",),
                        help="the operator study's deployment (on 7 sites) in place of 20 MHz")
    args = parser.parse_args()
    network = NETWORK if args.deployment is None else {**DEPLOYED, "layout": {"sites": 7}}
    if not 0 <= args.load < 1:
        parser.error(f"--load: must be in [0, 1), got {args.load:g}")
    dataset = load_dataset("fashion_mnist", None, train_samples=1000, test_samples=200)
    files = timed({"kind": "ftp3", "offered_load": args.load}, dataset, network)
    carried = {d: round(v, 3) for d, v in files["carried"].items()}
    cases = (("no other users", {"kind": "none"}, None),
             (f"every file at offered {args.load:g}", None, files),
             (f"fluid at offered {args.load:g}",
              {"kind": "ftp3", "offered_load": args.load, "model": "fluid"}, None),
             (f"fluid at the carried loads {carried}",
              {"kind": "ftp3", "offered_load": carried, "model": "fluid"}, None))
    for label, traffic, done in cases:
        r = done if done is not None else timed(traffic, dataset, network)
        shown = ", ".join(f"{d} {v:.3f}" for d, v in r["carried"].items()) or "none"
        print(f"{label}: simulated {r['sim_s']:.1f} s, uploads on the air {r['uploads_s']:.1f} "
              f"s, downloads {r['downloads_s']:.1f} s; carried {shown}", flush=True)


if __name__ == "__main__":
    main()
