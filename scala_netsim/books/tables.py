"""The books a run keeps in memory as tables, their columns from core.columns: what the
checks read."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from scala_netsim.core.columns import (
    AGGREGATION_COLUMNS,
    GRANT_COLUMNS,
    MOBILITY_TRANSFER_COLUMNS,
    NETWORK_TRANSFER_COLUMNS,
    NR_TRANSFER_COLUMNS,
    TRANSFER_COLUMNS,
)


def grants_frame(grant_rows: Sequence[tuple]) -> pd.DataFrame:
    """The grants' rows (sim.link.Grant.as_row) as a table, one column per GRANT_COLUMNS."""
    return pd.DataFrame(grant_rows, columns=list(GRANT_COLUMNS))


def transfers_frame(transfers: Sequence[tuple], network: bool = False,
                    nr: bool = False, mobility: bool = False) -> pd.DataFrame:
    """The transfers (sim.link.TransferRate or its rows; a `network`'s with its
    NETWORK_TRANSFER_COLUMNS after them, and under the NR link abstraction (`nr`) its
    NR_TRANSFER_COLUMNS) as a table, one column per field."""
    columns = (list(TRANSFER_COLUMNS) + (list(NETWORK_TRANSFER_COLUMNS) if network else [])
               + (list(NR_TRANSFER_COLUMNS) if nr else [])
               + (list(MOBILITY_TRANSFER_COLUMNS) if mobility else []))
    return pd.DataFrame(transfers, columns=columns)


def aggregations_frame(rows: Sequence[tuple]) -> pd.DataFrame:
    """A trainer's aggregation book (round, what was averaged, client, weight) as a table."""
    return pd.DataFrame(rows, columns=list(AGGREGATION_COLUMNS))
