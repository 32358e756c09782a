"""How a TDD frame times a transfer, the one description the links time by and the checks
check by: its frame (channel.tdd) and an upload's grant delay K2."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

import channel
from channel import Direction
from scala_netsim.core.events import UPLINK_KINDS

_UPLINK = [k.value for k in UPLINK_KINDS]


@dataclass(frozen=True)
class Duplexing:
    """A TDD frame and an upload's grant delay (seconds): a transfer's airtime passes in its
    direction's symbols only, an upload's from its grant."""

    frame: channel.tdd.TddFrame
    k2_s: float

    def grant(self, direction: Direction, ready: float) -> float:
        """When a transfer ready at `ready` may use the air: an upload K2 later."""
        return ready + self.k2_s if direction is Direction.UPLINK else ready

    def airtime_s(self, moved: pd.DataFrame, backhaul_s: np.ndarray | float = 0.0,
                  harq_s: np.ndarray | float = 0.0) -> np.ndarray:
        """The time of each transfer's direction's symbols on the air: an upload's from its
        grant to its end less its time on a network's backhaul and its HARQ wait (both after
        the air), a download's from its start plus that time (before the air) to its end
        less its HARQ wait."""
        up = moved["kind"].isin(_UPLINK).to_numpy()
        start = moved["t_start_s"].to_numpy()
        end = moved["t_end_s"].to_numpy() - np.asarray(harq_s, float)
        backhaul = np.broadcast_to(np.asarray(backhaul_s, float), start.shape)
        airtime = np.empty(len(moved))
        airtime[up] = self.frame.usable_many(Direction.UPLINK, start[up] + self.k2_s,
                                             end[up] - backhaul[up])
        airtime[~up] = self.frame.usable_many(Direction.DOWNLINK, start[~up] + backhaul[~up],
                                              end[~up])
        return airtime
