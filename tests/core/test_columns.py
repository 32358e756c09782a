"""Every record's columns are declared once (core.columns): the typed views of a record have
its declared fields in its declared order, and the tables the books build use them."""

import dataclasses

from scala_netsim.books.blocks import air_columns, air_frame
from scala_netsim.books.rounds import round_row
from scala_netsim.books.tables import aggregations_frame, grants_frame, transfers_frame
from scala_netsim.core import columns
from scala_netsim.core.events import Event, EventKind, EventLog
from scala_netsim.sim.link import Grant, TransferRate


def test_the_typed_records_have_the_declared_fields_in_order():
    assert tuple(f.name for f in dataclasses.fields(Event)) == columns.EVENT_COLUMNS
    assert tuple(f.name for f in dataclasses.fields(Grant)) == columns.GRANT_COLUMNS
    assert TransferRate._fields == columns.TRANSFER_COLUMNS
    from scala_netsim.books.handovers import Handover, Move
    assert Move._fields == columns.MOVE_COLUMNS
    assert Handover._fields == columns.HANDOVER_COLUMNS


def test_the_tables_take_the_declared_columns():
    log = EventLog()
    log.record(0.0, 1.0, 1, 0, 3, EventKind.ACTIVATION_UPLOAD, 10)
    log.record_demand(1, 3, 10, 0, 0)
    assert tuple(log.frame().columns) == columns.EVENT_COLUMNS
    assert tuple(log.demands_frame().columns) == columns.DEMAND_COLUMNS
    assert tuple(grants_frame([(1, 3, "uplink", 1e6)]).columns) == columns.GRANT_COLUMNS
    assert tuple(transfers_frame([(0, 1e6, 2e6, 1, 1e-9, 0.2)]).columns) \
        == columns.TRANSFER_COLUMNS
    network = transfers_frame([(0, 1e6, 2e6, 1, 1e-9, 0.2, 3.0, -100.0, 0.0)], network=True)
    assert tuple(network.columns) == columns.TRANSFER_COLUMNS + columns.NETWORK_TRANSFER_COLUMNS
    assert tuple(air_frame([(0, 2, "uplink", 0, 4, 0.0, 1.0)], air_columns(False, False))
                 .columns) == columns.AIR_COLUMNS
    # the layouts are declared (the scheduler, a fixed-rate link), never read off a row's width
    assert air_columns(True, False) == columns.AIR_SHARED_COLUMNS
    assert air_columns(False, True) == columns.AIR_ATTEMPT_COLUMNS
    assert air_columns(True, True) == columns.AIR_SHARED_ATTEMPT_COLUMNS
    assert tuple(aggregations_frame([(1, "client", 3, 0.5)]).columns) \
        == columns.AGGREGATION_COLUMNS


def test_a_round_row_begins_with_the_declared_columns():
    row = round_row(1, list(map(tuple, log_rows())), 0.0, 2.0, num_clients=1)
    assert tuple(row)[:len(columns.ROUND_COLUMNS)] == columns.ROUND_COLUMNS
    assert "test_acc" in row and set(columns.CRITICAL_PATH_COLUMNS) <= set(row)
    assert sum(row[c] for c in columns.CRITICAL_PATH_COLUMNS) == row["round_time_s"]


def log_rows() -> list[tuple]:
    log = EventLog()
    log.record(0.0, 1.0, 1, 0, 3, EventKind.CLIENT_FORWARD, 0, 100)
    log.record(1.0, 2.0, 1, 0, 3, EventKind.ACTIVATION_UPLOAD, 10)
    return log.rows
