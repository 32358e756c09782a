"""The timed events of a run: one typed row per model download, client forward pass,
activation upload, server step, gradient download, client backward pass and model upload.

`events.csv` has one column per field of `Event`, in field order (core.columns.EVENT_COLUMNS);
every reader goes by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

import pandas as pd

from scala_netsim.core.columns import DEMAND_COLUMNS, EVENT_COLUMNS

SERVER_ID = -1       # client_id of events that happen on the server
MODEL_TRANSFER = -1  # local_iter of model downloads and uploads (outside the local iterations)


class EventKind(str, Enum):
    """What a timed event is. The value is what events.csv holds."""

    MODEL_DOWNLOAD = "model_download"
    CLIENT_FORWARD = "client_forward"
    ACTIVATION_UPLOAD = "activation_upload"
    SERVER_STEP = "server_step"
    GRADIENT_DOWNLOAD = "gradient_download"
    CLIENT_BACKWARD = "client_backward"
    MODEL_UPLOAD = "model_upload"
    CLIENT_DROPPED = "client_dropped"   # zero duration: the client left the round here
    SERVER_UPDATE = "server_update"     # zero duration: an asynchronous server took k's model

    @property
    def is_uplink(self) -> bool:
        return self in UPLINK_KINDS

    @property
    def is_downlink(self) -> bool:
        return self in DOWNLINK_KINDS

    @property
    def is_transfer(self) -> bool:
        return self in UPLINK_KINDS or self in DOWNLINK_KINDS

    @property
    def is_client_compute(self) -> bool:
        return self in CLIENT_COMPUTE_KINDS


UPLINK_KINDS = frozenset({EventKind.ACTIVATION_UPLOAD, EventKind.MODEL_UPLOAD})
DOWNLINK_KINDS = frozenset({EventKind.MODEL_DOWNLOAD, EventKind.GRADIENT_DOWNLOAD})
CLIENT_COMPUTE_KINDS = frozenset({EventKind.CLIENT_FORWARD, EventKind.CLIENT_BACKWARD})
_KINDS = {kind.value: kind for kind in EventKind}  # faster than EventKind(value)


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 4x, and a run's
class Event:             # rows are read back as Events round by round
    """One timed step: [t_start_s, t_end_s) of simulated time, who did it and what it cost."""

    t_start_s: float
    t_end_s: float
    round: int
    local_iter: int        # MODEL_TRANSFER for model downloads and uploads
    client_id: int         # SERVER_ID for server steps
    kind: EventKind
    payload_bytes: int = 0  # bytes on the air (transfers)
    flops: int = 0          # floating-point operations (computations)

    @property
    def duration_s(self) -> float:
        return self.t_end_s - self.t_start_s

    def as_row(self) -> tuple:
        """The event as plain values, in column order (the kind as its text)."""
        return (self.t_start_s, self.t_end_s, self.round, self.local_iter, self.client_id,
                self.kind.value, self.payload_bytes, self.flops)

    @classmethod
    def from_row(cls, row: Sequence) -> Event:
        """The inverse of `as_row` (checkpoints keep events as plain rows)."""
        t_start_s, t_end_s, round_, local_iter, client_id, kind, payload_bytes, flops = row
        return cls(t_start_s, t_end_s, round_, local_iter, client_id, _KINDS[kind],
                   payload_bytes, flops)


#: why a client left a round (rounds.csv counts each: num_dropped_<reason>)
DROP_REASONS = ("deadline", "step_deadline", "lost", "over_selection")


def events_frame(events: Iterable[Event]) -> pd.DataFrame:
    """The events as a table with one column per `Event` field (events.csv)."""
    return pd.DataFrame([e.as_row() for e in events], columns=list(EVENT_COLUMNS))


class EventLog:
    """Every event of a run, in the order they were recorded (that is, by end time), and
    every participant's step demand (rows of DEMAND_COLUMNS), round by round.

    Events are kept as plain rows (`Event.as_row`'s tuples): a timing-only run records
    millions, and a tuple of numbers and text is untracked by the garbage collector and a
    third of an object's size. `events` and `since` give them as `Event`s."""

    def __init__(self, rows: Iterable[Sequence] = (), demands: Iterable[Sequence] = ()) -> None:
        self.rows: list[tuple] = [tuple(r) for r in rows]
        self.demands: list[tuple] = [tuple(d) for d in demands]
        self.cut: list[int] = []   # positions of the steps that did not complete, ascending

    def record_cut(self, t_start_s: float, t_end_s: float, round_: int, local_iter: int,
                   client_id: int, kind: EventKind, payload_bytes: int = 0,
                   flops: int = 0) -> None:
        """A step that did not complete (cut short at t_end_s, or a transfer lost)."""
        self.cut.append(len(self.rows))
        self.record(t_start_s, t_end_s, round_, local_iter, client_id, kind, payload_bytes, flops)

    def completed(self) -> list[int]:
        """The COMPLETED_COLUMN of every row."""
        flags = [1] * len(self.rows)
        for i in self.cut:
            flags[i] = 0
        return flags

    def record(self, t_start_s: float, t_end_s: float, round_: int, local_iter: int,
               client_id: int, kind: EventKind, payload_bytes: int = 0, flops: int = 0) -> None:
        """One event, with `Event`'s fields in order (`kind._value_`: `.value` is a slow
        descriptor, and this runs for every event)."""
        self.rows.append((t_start_s, t_end_s, round_, local_iter, client_id, kind._value_,
                          payload_bytes, flops))

    def record_demand(self, round_: int, client_id: int, upload_bytes: int,
                      download_bytes: int, compute_flops: int) -> None:
        self.demands.append((round_, client_id, upload_bytes, download_bytes, compute_flops))

    @property
    def events(self) -> list[Event]:
        return self.since(0)

    def since(self, index: int) -> list[Event]:
        """The events recorded from position `index` on."""
        return [Event.from_row(r) for r in self.rows[index:]]

    def frame(self) -> pd.DataFrame:
        """All events as a table (events.csv), as `events_frame(self.events)` but faster."""
        return pd.DataFrame(self.rows, columns=list(EVENT_COLUMNS))

    def demands_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.demands, columns=list(DEMAND_COLUMNS))

    def __len__(self) -> int:
        return len(self.rows)
