"""Every record's columns, declared once: what a run folder's tables (core.files) and the
books a run keeps in memory hold, in order. Records are kept as plain tuples in these orders
where a run makes millions of them (events, transfers: a tuple of numbers and text is
untracked by the garbage collector and a third of an object's size); the typed views
(core.events.Event, sim.link.Grant, sim.link.TransferRate) have these fields, in this order
(tests/core/test_columns.py).

"Record" names one thing in this package: a table of a run's books, a row of which is one
event, round, demand, grant, transfer, block, turn or air time. A run folder's files that hold
records are core.files.RECORD_FILES (and clients.csv, cells.csv, coupling.csv: the drop, the
cells and the gains between them)."""

# --- events.csv --------------------------------------------------------------------------
#: one row per timed step (core.events.Event)
EVENT_COLUMNS = ("t_start_s", "t_end_s", "round", "local_iter", "client_id", "kind",
                 "payload_bytes", "flops")
#: after EVENT_COLUMNS when clients can be dropped (deadlines, over-selection, lost
#: transfers): 0 for a step cut short by its client's drop (or a transfer lost after all its
#: attempts), 1 otherwise
COMPLETED_COLUMN = "completed"
#: after EVENT_COLUMNS in asynchronous runs: on each server_update row the global version the
#: update is part of and its staleness (the server's version at the upload's arrival minus the
#: version the client downloaded); -1 on every other row
ASYNC_COLUMNS = ("version", "staleness")
#: after them when the run records the radio model (books.radio): per event the sub-band,
#: gain, rate, attempts, power radiated and the client's energy
RADIO_COLUMNS = ("bandwidth_hz", "gain_db", "rate_bps", "attempts", "tx_power_w", "energy_j")
#: after RADIO_COLUMNS in a TDD frame (network.duplex: tdd): the time a transfer waited for
#: its grant (an upload's K2) and its direction's symbols, its duration less its airtime
DUPLEX_COLUMNS = ("tdd_wait_s",)
#: after RADIO_COLUMNS in a network of cells: the time-averaged SINR and interference of the
#: transfer's air time and its time on the backhaul (the network link's transfer rows end so)
NETWORK_TRANSFER_COLUMNS = ("sinr_db", "interference_dbm", "backhaul_s")
#: after NETWORK_TRANSFER_COLUMNS under the NR link abstraction (network.link_abstraction:
#: nr): the MCS and TBLER averaged over the time the transfer sent (an integer MCS when it
#: kept one), its transport block transmissions (the slots it sent in: new blocks and HARQ
#: retransmissions, as means), and the expected wait of its last block for its
#: retransmissions (HARQ round trips); NaN, NaN, 0, 0 for everything else
NR_TRANSFER_COLUMNS = ("mcs", "bler", "transmissions", "harq_wait_s")
#: mobility.csv, a network with moving clients (network.mobility): each move of a client's
#: gains (scala_netsim.sim.network.movement): client, time (s), x and y (m), metres walked
#: since the drop, and the serving cell its gains were coupled toward (its beam's)
MOVE_COLUMNS = ("client_id", "t_s", "x_m", "y_m", "walked_m", "serving_cell")
#: handovers.csv: each handover (scala_netsim.sim.network.mobile): client, instant (s),
#: source and target cell, both RSRPs (dBm) at the last measurement, the interruption (s)
HANDOVER_COLUMNS = ("client_id", "t_s", "source_cell", "target_cell", "source_rsrp_dbm",
                    "target_rsrp_dbm", "interruption_s")
#: after them with moving clients (network.mobility): the handovers of the transfer's client
#: while it was in flight, and one begun before it whose interruption held it back when it
#: would join the air (0 for everything else)
MOBILITY_TRANSFER_COLUMNS = ("handovers",)

# --- demands.csv -------------------------------------------------------------------------
#: what each participant told the allocator it needs in one local step of a round
#: (learn.contract.StepDemand), one row per (round, client)
DEMAND_COLUMNS = ("round", "client_id", "upload_bytes", "download_bytes", "compute_flops")

# --- air.csv (a network of cells) --------------------------------------------------------
#: which blocks each transfer held, and when: one row per transfer's air time (the event at
#: position event_index of events.csv), its serving cell, direction, blocks
#: [first_block, first_block + blocks) and [start_s, end_s); with the events' powers and the
#: network's gains, every rate can be derived again from it (books.air_rates.air_rate_problems)
AIR_COLUMNS = ("event_index", "cell", "direction", "first_block", "blocks", "start_s", "end_s")
#: under a per-instant scheduler (network.scheduler: round robin, proportional fair) a
#: transfer's blocks change while it is on the air: one row per stretch of constant blocks,
#: with the power it radiated over them and the most blocks it could use (its cap:
#: books.blocks.round_robin_problems); a stretch's blocks are a set, one row for each run of
#: consecutive blocks in it (the rows of one stretch share its event and times; round robin's
#: sets are ranges, proportional fair's need not be), a parked stretch one row, first -1, none
AIR_SHARED_COLUMNS = (*AIR_COLUMNS, "tx_power_w", "cap_blocks")
#: traffic.csv, a network with other users' traffic (network.traffic): each background file
#: (a full-buffer user's one file a direction, of infinite bits), its user (and the radio
#: map's row, coupling.csv's client_id: clients + user), cell, direction and bits, when it
#: arrived, asked for blocks and ended (NaN: not by the end of the run), the bits it delivered
TRAFFIC_COLUMNS = ("file", "user", "client_id", "cell", "direction", "bits", "arrival_s",
                   "start_s", "end_s", "delivered_bits")
#: traffic_air.csv: each background file's stretches on the air, as air.csv's rows under a
#: per-instant scheduler (AIR_SHARED_COLUMNS with the file in place of the event)
TRAFFIC_AIR_COLUMNS = ("file", *AIR_SHARED_COLUMNS[1:])
#: load.csv: per cell and direction, its background users (those in coverage: a rate above 0
#: alone on their blocks), its files' arrival rate (1/s, FTP model 3), the files arrived and
#: ended, the bits delivered (the files on the air: so far), the offered load, and the shares
#: of its blocks' time (of the direction's time, under TDD) the background's files took
#: (`load`), the learning's transfers took, and left idle
LOAD_COLUMNS = ("cell", "direction", "users", "covered_users", "arrival_rate_per_s", "files",
                "files_done", "delivered_bits", "offered_load", "load", "learning_share",
                "idle_share")
#: fading.csv, a network with block fading (network.fading): for each transfer (its event
#: index), its small-scale power gain |h|^2 on its link to every cell, cell by cell: its
#: gains while on the air are the coupling gains (coupling.csv) times these
FADING_COLUMNS = ("event_index", "cell", "power_gain")
#: a fixed-rate link's (network.link.mode: fixed_rate; scala_netsim.sim.network.arq): each
#: attempt of a transfer its own rows, with its number (1, 2, ...), in both records (under
#: per-transfer fading each attempt sees its own |h|^2)
AIR_ATTEMPT_COLUMNS = (*AIR_COLUMNS, "attempt")
AIR_SHARED_ATTEMPT_COLUMNS = (*AIR_SHARED_COLUMNS, "attempt")
FADING_ATTEMPT_COLUMNS = (*FADING_COLUMNS, "attempt")

# --- rounds.csv --------------------------------------------------------------------------
#: what each event kind adds up to in a round (its bytes or FLOPs)
TOTAL_COLUMNS = ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops")
#: the round's critical path, split into the steps it went through; they add up to its time
CRITICAL_PATH_COLUMNS = ("compute_time_s", "uplink_time_s", "downlink_time_s",
                         "server_time_s", "idle_time_s")
#: every round's row begins with these, in order
ROUND_COLUMNS = ("round", "sim_time_s", "round_time_s", *TOTAL_COLUMNS,
                 *CRITICAL_PATH_COLUMNS, "num_clients")
#: then, when the run records the radio model, the clients' energy in the round
ENERGY_COLUMNS = ("client_energy_j", "client_transmit_energy_j", "client_compute_energy_j")
#: then, when clients can be dropped: who was selected, contributed and dropped, then
#: num_dropped_<reason> (core.events.DROP_REASONS), contrib_label_<c> per class, label_bias_tv
DROP_COLUMNS = ("num_selected", "num_contributing", "num_dropped")
#: then the test metrics (NaN test_acc in rounds not evaluated), acc_class_<c> per class after
TEST_COLUMNS = ("test_acc", "test_loss")

# --- clients.csv, cells.csv, coupling.csv ----------------------------------------------------
#: the drop: each client's place and loss (then shadowing_db, o2i_db, antenna_gain_db and what
#: the cell drew, where it has them), then CLIENT_TAIL_COLUMNS, then label_<c> per class
CLIENT_COLUMNS = ("client_id", "distance_m", "pathloss_db")
CLIENT_TAIL_COLUMNS = ("flops_per_s", "num_samples")
#: a network's cells: site, position and boresight
CELL_COLUMNS = ("cell", "site", "x_m", "y_m", "azimuth_deg")
#: coupling.csv, a network's: each client's large-scale coupling gain to every cell at the
#: drop (linear: path loss, shadowing, O2I loss and antenna gain; the radio map's coupling),
#: client by client, cell by cell, each gain written to the bit (Python's shortest repr):
#: with the events' powers, air.csv and fading.csv every interfered rate derives again from
#: the files alone (scala_netsim.runner.air_files.air_settings_of)
COUPLING_COLUMNS = ("client_id", "cell", "coupling_linear")

# --- the books a run keeps in memory and checks (not written) -------------------------------
#: the sub-band a client holds in one direction for one round (sim.link.Grant)
GRANT_COLUMNS = ("round", "client_id", "direction", "bandwidth_hz")
#: how a transfer was sent (sim.link.TransferRate); a network's rows add
#: NETWORK_TRANSFER_COLUMNS
TRANSFER_COLUMNS = ("event_index", "bandwidth_hz", "rate_bps", "attempts", "gain_linear",
                    "tx_power_w")
#: a network's grant of blocks a client holds alone for the round
BLOCK_GRANT_COLUMNS = ("round", "client_id", "direction", "cell", "first_block", "blocks")
#: a network's grant of one block a cell's clients take in turns
SHARED_GRANT_COLUMNS = ("round", "client_id", "direction", "cell", "block")
#: one turn on such a block
TURN_COLUMNS = ("round", "direction", "cell", "block", "client_id", "start_s", "end_s")
#: who took part in each aggregation, with what weight (a trainer's aggregation book)
AGGREGATION_COLUMNS = ("round", "group", "client_id", "weight")
