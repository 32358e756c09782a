"""Flower on the wireless clock (issue 65; flwr 1.42, the `[flower]` extra): Flower's
strategies, over the package's clients or a user's own ClientApp, in runs of this package.

- grid: SimulatedGrid, a flwr Grid whose messages travel on the run's cell or network (the
  download of a message's arrays, the ClientApp called in-process, its compute, the upload of
  its reply), its `timeout` a deadline in simulated seconds;
- strategy: a strategy's round as Flower's `Strategy.start` plays it (configure, send and
  receive on the grid, aggregate), and its state across a resume;
- protocol: GridProtocol, the round of `algorithms: [flower]` on the run's clock;
- trainer: the package's clients as a Flower ClientApp (`flower: {strategy: FedAdam}`);
- apps: a user's ClientApp by import path (`flower.client_app: module:app`).

Flower is imported only by a scenario that names it: the package runs without the extra, and
a scenario naming `flower` without it is refused saying what to install. The test set-up
installs it (the golden scenario runs Flower's FedAdam). docs/guides/flower.md: how to bring
a Flower app."""
