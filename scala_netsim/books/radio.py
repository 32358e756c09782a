"""The radio and energy columns of a run's records, derived from its events and the link's
transfer rows (core.columns.TRANSFER_COLUMNS), so that an independent checker can recompute
every duration and every joule from events.csv alone.

events.csv gains, per event (RADIO_COLUMNS):
- `bandwidth_hz`: the sub-band a transfer used (0 for computations and server steps);
- `gain_db`: the channel's total power gain of the transfer, -(path loss + shadowing) plus the
  fading gain |h|^2 in dB (of the attempt that got through; 0 for computations);
- `rate_bps`: the rate it was sent at (0 for computations);
- `attempts`: how many times it was sent (ARQ; 1 for everything else);
- `tx_power_w`: the power radiated on the sub-band (the client's on the uplink, the base
  station's share P_bs b / W_dl on the downlink; 0 for computations);
- in a network of cells (NETWORK_TRANSFER_COLUMNS) `sinr_db`, `interference_dbm`
  (time-averaged over the transfer's air time; -inf dBm where nothing interfered; NaN for
  everything else) and `backhaul_s` (0 for everything else);
- under the NR link abstraction (NR_TRANSFER_COLUMNS) `mcs`, `bler`, `transmissions` and
  `harq_wait_s` (core.columns);
- in a TDD frame (DUPLEX_COLUMNS) `tdd_wait_s`: the time a transfer waited for its grant (an
  upload's K2) and its direction's symbols, its duration less its airtime and its HARQ wait
  (0 for everything else);
- `energy_j`: the energy the CLIENT spends on the event: p * attempts * bits / rate for its
  uploads (every attempt counted), kappa * FLOPs * f_k^2 for its computations
  (channel.energy), 0 for downloads (receiving is not modelled) and server steps.

rounds.csv gains ENERGY_COLUMNS: the clients' energy in the round, in total and split into
sending and computing. The columns are written when the cell uses any part of the radio model
(Scenario.records_radio): a default cell's files keep their columns, byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from channel.energy import compute_energy_j, transmit_energy_j
from scala_netsim.core.columns import (
    EVENT_COLUMNS,
    MOBILITY_TRANSFER_COLUMNS,
    NETWORK_TRANSFER_COLUMNS,
    NR_TRANSFER_COLUMNS,
    TRANSFER_COLUMNS,
)
from scala_netsim.core.events import CLIENT_COMPUTE_KINDS, UPLINK_KINDS

_UPLINK = frozenset(k.value for k in UPLINK_KINDS)
_COMPUTE = frozenset(k.value for k in CLIENT_COMPUTE_KINDS)
_KIND, _CLIENT, _PAYLOAD, _FLOPS, _START, _END = (EVENT_COLUMNS.index(c) for c in (
    "kind", "client_id", "payload_bytes", "flops", "t_start_s", "t_end_s"))


def radio_columns(rows: Sequence[Sequence], first_event: int,
                  transfer_rows: Sequence[Sequence], flops_per_s: np.ndarray,
                  energy_coefficient: float, network: bool = False,
                  tdd: bool = False, nr: bool = False,
                  mobility: bool = False) -> dict[str, np.ndarray]:
    """RADIO_COLUMNS of the event rows `rows` (EventLog.rows from position `first_event`),
    given the link's transfer rows of those events (TransferRate fields: event_index,
    bandwidth_hz, rate_bps, attempts, gain_linear, tx_power_w, and in a `network` its
    NETWORK_TRANSFER_COLUMNS), each client's FLOP/s and the effective switched capacitance kappa;
    under the NR link abstraction (`nr`) NR_TRANSFER_COLUMNS, in a TDD frame (`tdd`)
    DUPLEX_COLUMNS after them."""
    n = len(rows)
    out = {"bandwidth_hz": np.zeros(n), "gain_db": np.zeros(n), "rate_bps": np.zeros(n),
           "attempts": np.ones(n, dtype=np.int64), "tx_power_w": np.zeros(n),
           "energy_j": np.zeros(n)}
    if network:
        out.update(sinr_db=np.full(n, np.nan), interference_dbm=np.full(n, np.nan),
                   backhaul_s=np.zeros(n))
    if nr:
        out.update(mcs=np.full(n, np.nan), bler=np.full(n, np.nan), transmissions=np.zeros(n),
                   harq_wait_s=np.zeros(n))
    if mobility:
        out["handovers"] = np.zeros(n, dtype=np.int64)
    if tdd:
        out["tdd_wait_s"] = np.zeros(n)
    if not n:
        return out
    kind = np.array([r[_KIND] for r in rows], dtype=object)
    client = np.array([r[_CLIENT] for r in rows], dtype=np.int64)
    if len(transfer_rows):
        width = len(TRANSFER_COLUMNS)
        moved = np.array([t[:width] for t in transfer_rows], dtype=float)
        at = moved[:, 0].astype(np.int64) - first_event
        payload_bits = 8.0 * np.array([rows[i][_PAYLOAD] for i in at], dtype=float)
        out["bandwidth_hz"][at] = moved[:, 1]
        out["rate_bps"][at] = moved[:, 2]
        out["attempts"][at] = moved[:, 3].astype(np.int64)
        with np.errstate(divide="ignore"):
            out["gain_db"][at] = 10.0 * np.log10(moved[:, 4])
        out["tx_power_w"][at] = moved[:, 5]
        if network:
            extra = np.array([t[width:] for t in transfer_rows], dtype=float)
            for i, column in enumerate(NETWORK_TRANSFER_COLUMNS
                                       + (NR_TRANSFER_COLUMNS if nr else ())
                                       + (MOBILITY_TRANSFER_COLUMNS if mobility else ())):
                out[column][at] = extra[:, i]
        if tdd:   # its duration less its airtime (and HARQ wait): its grant and symbols
            duration_s = np.array([rows[i][_END] - rows[i][_START] for i in at.tolist()])
            out["tdd_wait_s"][at] = (duration_s - moved[:, 3] * payload_bits / moved[:, 2]
                                     - (out["harq_wait_s"][at] if nr else 0.0))
        up = np.isin(kind[at], list(_UPLINK))
        airtime_s = moved[up, 3] * payload_bits[up] / moved[up, 2]
        out["energy_j"][at[up]] = transmit_energy_j(moved[up, 5], airtime_s)
    computes = np.flatnonzero(np.isin(kind, list(_COMPUTE)))
    if len(computes):
        flops = np.array([rows[i][_FLOPS] for i in computes.tolist()], dtype=float)
        out["energy_j"][computes] = compute_energy_j(energy_coefficient, flops,
                                                     flops_per_s[client[computes]])
    return out


def round_energy(columns: dict[str, np.ndarray], rows: Sequence[Sequence]) -> dict[str, float]:
    """ENERGY_COLUMNS of a round from its events' `radio_columns`."""
    energy = columns["energy_j"]
    sending = np.array([r[_KIND] in _UPLINK for r in rows], dtype=bool)
    transmit, total = float(energy[sending].sum()), float(energy.sum())
    return {"client_energy_j": total, "client_transmit_energy_j": transmit,
            "client_compute_energy_j": float(energy[~sending].sum())}


def rows_with_columns(rows: Sequence[Sequence],
                      columns: dict[str, np.ndarray]) -> list[tuple]:
    """Each event row followed by its radio columns' values, in `columns`' order (plain
    Python numbers)."""
    extra = zip(*(c.tolist() for c in columns.values()), strict=True)
    return [(*r, *x) for r, x in zip(rows, extra, strict=True)]
