"""The round of `algorithms: [flower]`: FedAvg's communication pattern (model down, T local
steps, model up) played by a Flower strategy through the run's SimulatedGrid
(scala_netsim.flower.grid): the strategy's `send_and_receive` runs the round's processes on
the run's clock."""

from __future__ import annotations

from collections.abc import Sequence

from scala_netsim.flower.strategy import StrategyRounds
from scala_netsim.sim.protocols import FederatedProtocol


class GridProtocol(FederatedProtocol):
    """FederatedProtocol whose round a Flower strategy plays (StrategyRounds.play_round): the
    trainer's grid carries the strategy's messages with `carry`, its timeout the round's
    deadline (training.deadline_s). A trainer that is not Flower's (a timing-only run's
    meter, a replay) runs FedAvg's rounds: the clock is the same."""

    def run_round(self, round_: int, selected: Sequence[int]) -> None:
        trainer = self.trainer
        if not isinstance(trainer, StrategyRounds):
            super().run_round(round_, selected)
            return
        self.round = round_
        self._compute_s.clear()
        trainer.begin_round(selected)
        trainer.grid.carry = lambda timeout_s: self.carry(selected, timeout_s)
        try:
            trainer.play_round(self.local_iters, self.rules.deadline_s)
        finally:
            trainer.grid.carry = None
