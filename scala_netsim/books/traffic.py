"""Other users' traffic in a network's books (network.traffic; scala_netsim.sim.network.
traffic): its files' stretches on the air taken with the learning's (`with_background`: the
checks of books.blocks and books.air_rates see every holder of every block), and each cell's
load (`load_table`, load.csv)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from scala_netsim.books.blocks import AirSettings
from scala_netsim.core.columns import LOAD_COLUMNS, TRAFFIC_AIR_COLUMNS, TRAFFIC_COLUMNS


def traffic_frame(rows: Sequence[tuple]) -> pd.DataFrame:
    """traffic.csv's rows as a table (TRAFFIC_COLUMNS)."""
    return pd.DataFrame(list(rows), columns=list(TRAFFIC_COLUMNS))


def background_air(rows: Sequence[tuple]) -> pd.DataFrame:
    """traffic_air.csv's rows as air.csv's (AIR_SHARED_COLUMNS), file f as event -1 - f:
    what the air's checks take beside the learning's rows (a negative event is a file)."""
    frame = pd.DataFrame(list(rows), columns=list(TRAFFIC_AIR_COLUMNS))
    frame.insert(0, "event_index", -1 - frame.pop("file").to_numpy(np.int64))
    return frame


def with_background(air: pd.DataFrame, traffic_air: Sequence[tuple]) -> pd.DataFrame:
    """The learning's air rows and then the background's (background_air)."""
    if not len(traffic_air):
        return air
    return pd.concat([air, background_air(traffic_air)], ignore_index=True)


def load_table(cells: Sequence[tuple], air: pd.DataFrame, settings: AirSettings,
               offered_load: Mapping[str, float] | None, start_s: float,
               end_s: float) -> pd.DataFrame:
    """load.csv (LOAD_COLUMNS): per cell and direction, `cells` (the link's
    Background.load_rows: cell, direction, users, covered users, arrival rate, files arrived
    and ended, bits delivered, the block-seconds its files held), the offered load, and over
    [start_s, end_s) the shares of its blocks' time (under TDD, of the direction's symbols)
    the background's files held, the learning's transfers held (`air`'s rows of events 0 and
    up: each stretch's blocks times its time) and stayed idle."""
    learning: dict[tuple[int, str], float] = {}
    air = air[air["event_index"].to_numpy() >= 0]
    start = np.maximum(air["start_s"].to_numpy(float), start_s)
    end = np.minimum(air["end_s"].to_numpy(float), end_s)
    for direction in np.unique(air["direction"].to_numpy()).tolist():
        rows = np.flatnonzero((air["direction"].to_numpy() == direction) & (end > start))
        block_s = air["blocks"].to_numpy()[rows] * settings.held_s(direction, start[rows],
                                                                 end[rows])
        sums = pd.Series(block_s).groupby(air["cell"].to_numpy()[rows]).sum()
        learning.update({(int(c), direction): float(v) for c, v in sums.items()})
    out = []
    for c, direction, users, covered, rate, files, done, delivered, block_s in cells:
        total = settings.blocks[direction] * float(settings.held_s(
            direction, np.array([start_s]), np.array([end_s]))[0])
        load = block_s / total if total > 0 else 0.0
        share = learning.get((c, direction), 0.0) / total if total > 0 else 0.0
        out.append((c, direction, users, covered, rate, files, done, delivered,
                    np.nan if offered_load is None else offered_load[direction], load, share,
                    1.0 - load - share))
    return pd.DataFrame(out, columns=list(LOAD_COLUMNS))
