"""Moving clients' records checked against each other (issue 64): every gain update and
every handover justified from mobility.csv and handovers.csv, and no bits moved during an
interruption (`handover_problems`).

- each move's position is where the client's path is at its instant (`position(k, t)`);
- each handover's RSRPs are those of the client's last measurement before it, drawn again
  from the position (`rsrp_at(k, point)`: its column gains plus each cell's reference
  power), and TS 38.331's event A3 held for the target against the serving cell at every
  measurement from the time to trigger before it until it (the timer ran unstopped), the
  serving cell the source throughout;
- no air record row of a handed-over client's transfers overlaps its interruption.

The first measurement of a timer's run is one at its start (a move at that instant); the
check does not say the condition had not held before it (a timer also starts when a client
connects, which the records do not mark)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from channel.handover import A3

#: relative tolerance on instants: a timer's expiry is its start plus the time to trigger,
#: reached by the clock's sums
REL_TOL = 1e-9


def handover_problems(moves: Sequence[tuple], handovers: Sequence[tuple], air: pd.DataFrame,
                      events: pd.DataFrame, event: A3,
                      rsrp_at: Callable[[int, np.ndarray], np.ndarray],
                      position: Callable[[int, float], np.ndarray]) -> list[str]:
    """Problems of the records (the module's docstring): `moves` mobility.csv's rows
    (core.columns.MOVE_COLUMNS), `handovers` handovers.csv's (core.columns.HANDOVER_COLUMNS),
    `air` air.csv, `events` events.csv."""
    problems = _position_problems(moves, position)
    by_client: dict[int, list[Move]] = {}
    for row in moves:          # (a later row at the same instant replaces the earlier one:
        move = Move(*row)      # a re-selection or a handover re-points the beam there)
        mine = by_client.setdefault(int(move.client_id), [])
        if mine and mine[-1].t_s == move.t_s:
            mine[-1] = move
        else:
            mine.append(move)
    for row in handovers:
        h = Handover(*row)
        moved = by_client.get(int(h.client_id))
        if moved is None:
            problems.append(f"handover of client {h.client_id} at {h.t_s:.9g} s: no move of it")
            continue
        problems.extend(_a3_problems(h, moved, event, rsrp_at))
    return problems + _interruption_problems([Handover(*h) for h in handovers], air, events)


class Move(NamedTuple):
    """A row of mobility.csv (core.columns.MOVE_COLUMNS: tests/core/test_columns.py)."""

    client_id: int
    t_s: float
    x_m: float
    y_m: float
    walked_m: float
    serving_cell: int


class Handover(NamedTuple):
    """A row of handovers.csv (core.columns.HANDOVER_COLUMNS)."""

    client_id: int
    t_s: float
    source_cell: int
    target_cell: int
    source_rsrp_dbm: float
    target_rsrp_dbm: float
    interruption_s: float


def _position_problems(moves: Sequence[tuple], position: Callable[[int, float], np.ndarray]
                       ) -> list[str]:
    """Each move where its client's path is at its instant; a move of no metres since the
    client's last (its serving cell changed: its gains coupled again from there) where that
    one was."""
    wrong: list[str] = []
    last: dict[int, Move] = {}
    for row in moves:
        r = Move(*row)
        k = int(r.client_id)
        before = last.get(k)
        if before is not None and before.walked_m == r.walked_m:
            where = np.array([before.x_m, before.y_m])
        else:
            where = position(k, float(r.t_s))
        if not np.allclose(where, [r.x_m, r.y_m], rtol=0, atol=1e-6):
            wrong.append(f"move of client {k} at {r.t_s:.9g} s: at ({r.x_m:.6g}, "
                         f"{r.y_m:.6g}), its path at {where.tolist()}")
        last[k] = r
    return wrong[:5]


def _a3_problems(h: Handover, mine: list[Move], event: A3,
                 rsrp_at: Callable[[int, np.ndarray], np.ndarray]) -> list[str]:
    """Handover `h` against its client's moves `mine`: A3 held at every measurement in the
    time to trigger before it, serving the source, and its RSRPs the last measurement's."""
    when = float(h.t_s)
    eps = REL_TOL * max(1.0, abs(when))
    start = when - event.time_to_trigger_s
    window = [m for m in mine if start - eps <= m.t_s and (
        m.t_s < when - eps or (event.time_to_trigger_s == 0 and abs(m.t_s - when) <= eps
                               and m.serving_cell == h.source_cell))]
    name = (f"handover of client {h.client_id} at {when:.9g} s ({h.source_cell} to "
            f"{h.target_cell})")
    if not window or abs(window[0].t_s - start) > eps:
        return [f"{name}: no measurement where its timer began, {start:.9g} s"]
    problems = []
    for m in window:
        rsrp = rsrp_at(int(h.client_id), np.array([m.x_m, m.y_m]))
        if m.serving_cell != h.source_cell:
            problems.append(f"{name}: served by {m.serving_cell} at {m.t_s:.9g} s")
        elif not event.entering(rsrp, int(h.source_cell))[int(h.target_cell)]:
            problems.append(f"{name}: A3 did not hold at {m.t_s:.9g} s")
    last = window[-1]
    rsrp = rsrp_at(int(h.client_id), np.array([last.x_m, last.y_m]))
    drawn = [rsrp[int(h.source_cell)], rsrp[int(h.target_cell)]]
    if not np.allclose(drawn, [h.source_rsrp_dbm, h.target_rsrp_dbm], rtol=0, atol=1e-9):
        problems.append(f"{name}: RSRPs {h.source_rsrp_dbm:.9g}, {h.target_rsrp_dbm:.9g} dBm "
                        f"recorded, {drawn[0]:.9g}, {drawn[1]:.9g} drawn again")
    return problems


def _interruption_problems(handovers: list[Handover], air: pd.DataFrame,
                           events: pd.DataFrame) -> list[str]:
    """No air row of a handed-over client's overlaps its interruption."""
    if not handovers or not len(air):
        return []
    air = air[air["event_index"].to_numpy() >= 0]      # (not other users' files)
    client = events["client_id"].to_numpy()[air["event_index"].to_numpy()]
    start, end = air["start_s"].to_numpy(float), air["end_s"].to_numpy(float)
    problems = []
    for h in handovers:
        t0, t1 = float(h.t_s), float(h.t_s + h.interruption_s)
        eps = REL_TOL * max(1.0, abs(t1))
        busy = (client == h.client_id) & (start < t1 - eps) & (end > t0 + eps)
        if busy.any():
            problems.append(f"client {h.client_id} on the air during its handover's "
                            f"interruption [{t0:.9g}, {t1:.9g}) s: air rows "
                            f"{np.flatnonzero(busy)[:3].tolist()}")
    return problems[:5]
