"""Flower on the wireless clock (issue 65): Flower's strategies (flwr 1.42, the `[flower]`
extra) aggregating the package's clients in runs of this package, each client's model
download, local steps and upload timed on the run's cell or network as any algorithm's.

`algorithms: [flower]` with `flower: {strategy: FedAdam, options: {eta: 0.01}}` in a scenario
(scala_netsim.algorithms.config.FlowerConfig; trainer: scala_netsim.flower.trainer). Flower
is imported only by a scenario that names it: the package runs without the extra, and a
scenario naming `flower` without it is refused saying what to install. The test set-up
installs it (the golden scenario runs Flower's FedAdam)."""
