"""A network of cells, pure math: the cells of a hexagonal layout (sites times sectors), each
client's coupling gain to every cell (path loss to the site's nearest wraparound image, its
shadowing and O2I loss, the sector antenna's gain), the serving cell, and the SINR and Shannon
rate of transfers that share resource blocks across cells.

Conventions. Gains are linear power gains (received power / transmitted power), losses in dB.
A cell's band is `num_blocks` resource blocks of `block_hz` each; a transfer holds a set of
blocks of its cell (the static and round-robin schedulers' a contiguous range) and spreads its
power evenly over them. Within a cell the blocks of two transfers never overlap; across cells
they may, and then the transfers interfere on the blocks they share (frequency reuse 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from channel import layout, nr_link


@dataclass(frozen=True)
class Cells:
    """The cells of a layout, one entry per cell: the site it belongs to, the site's position
    (m) and the sector's boresight azimuth (degrees; NaN for an omnidirectional cell)."""

    site: np.ndarray
    x_m: np.ndarray
    y_m: np.ndarray
    azimuth_deg: np.ndarray

    def __len__(self) -> int:
        return len(self.site)


def hexagonal_cells(sites: int, isd_m: float, sectors: int) -> Cells:
    """The cells of `sites` hexagonal sites `isd_m` apart, each with 1 (omnidirectional) or 3
    sectors (boresights 30, 150 and 270 degrees); cell c = site * sectors + sector."""
    if sectors not in (1, 3):
        raise ValueError(f"layout.sectors: must be 1 or 3, got {sectors}")
    xy = layout.hexagonal_sites(sites, isd_m)
    site = np.repeat(np.arange(sites), sectors)
    azimuth = (np.tile(np.array(layout.SECTOR_AZIMUTHS_DEG), sites) if sectors == 3
               else np.full(sites, np.nan))
    return Cells(site, xy[site, 0], xy[site, 1], azimuth)


@dataclass(frozen=True)
class LinkGeometry:
    """Each client's view of each site (clients x sites): the 2D distance to the site's
    nearest image and the azimuth of the client seen from that image (degrees)."""

    d2d_m: np.ndarray
    azimuth_deg: np.ndarray


def link_geometry(points: np.ndarray, sites_xy: np.ndarray,
                  offsets: np.ndarray | None) -> LinkGeometry:
    """Distances and azimuths from every site (its nearest wraparound image where `offsets`
    are given) to every client position."""
    return geometry_of(layout.nearest_image(points, sites_xy, offsets))


def geometry_of(vectors: np.ndarray) -> LinkGeometry:
    """link_geometry of the (points, sites, 2) vectors from each site's image to each point."""
    return LinkGeometry(np.hypot(vectors[..., 0], vectors[..., 1]),
                        np.degrees(np.arctan2(vectors[..., 1], vectors[..., 0])))


def zenith_angle_deg(d2d_m: np.ndarray, bs_height_m: float,
                     ut_height_m: np.ndarray | float) -> np.ndarray:
    """The zenith angle of departure from a site to a client, theta = 90 + arctan((h_BS -
    h_UT) / d_2D) degrees (38.901 7.5: 90 is the horizon, more is below it)."""
    return 90.0 + np.degrees(np.arctan2(bs_height_m - np.asarray(ut_height_m, dtype=float),
                                        d2d_m))


def antenna_gain_db(cells: Cells, azimuth_deg: np.ndarray, zenith_deg: np.ndarray | None = None,
                    downtilt_deg: float | None = None,
                    panel_rows: int | None = None) -> np.ndarray:
    """(clients, cells) antenna gain towards each client: the 38.901 element (Table 7.3-1) of
    a sectored cell at the client's azimuth from its site, 0 dBi for an omnidirectional one.
    `azimuth_deg` (and `zenith_deg`) are (clients, sites). With a `downtilt_deg`, the
    element's vertical pattern at the client's zenith angle, theta_tilt = 90 + downtilt;
    without, none (as if every client were at the element's horizon). With `panel_rows` (and
    a downtilt), a column of that many elements, each at the horizon, whose beam is steered
    electrically to the downtilt (layout.column_gain_db: TR 38.901 Table 7.8-1's antenna)."""
    toward = azimuth_deg[:, cells.site]
    sectored = ~np.isnan(cells.azimuth_deg)
    gain = np.zeros(toward.shape)
    if sectored.any():
        zenith: np.ndarray | float = 90.0     # the element's horizon: no vertical loss
        tilt = 90.0
        if downtilt_deg is not None:
            zenith = np.asarray(zenith_deg)[:, cells.site][:, sectored]
            tilt = 90.0 + downtilt_deg
        element_tilt = tilt if panel_rows is None else 90.0   # (the column tilts its beam)
        gain[:, sectored] = layout.sector_gain_db(toward[:, sectored],
                                                  cells.azimuth_deg[sectored][None, :],
                                                  zenith, element_tilt)
        if panel_rows is not None:
            gain[:, sectored] += layout.column_gain_db(zenith, tilt, panel_rows)
    return gain


def beam_gain_db(cells: Cells, azimuth_deg: np.ndarray, zenith_deg: np.ndarray,
                 serving: np.ndarray, downtilt_deg: float, columns: int) -> np.ndarray:
    """(clients, cells) gain of each sector's row of `columns` elements half a wavelength
    apart (the panel's columns, TR 38.901 7.3), beyond what the column gives: one beam, toward
    the client each cell serves. On a client's link to its serving cell the beam points at it:
    N (10 log10 N dB). On its link to any other cell the beam points at that cell's own
    clients, over time anywhere in its sector: the row's gain toward the client averaged over
    the sector (layout.mean_row_gain, at the column's zenith angle), what the interference it
    causes or receives sees on average. `azimuth_deg` and `zenith_deg` are (clients, sites)."""
    if np.isnan(cells.azimuth_deg).any():
        raise ValueError("layout.panel_columns: a beam per client needs sectors (3), whose "
                         "panels it steers; an omnidirectional cell has none")
    off = (azimuth_deg[:, cells.site] - cells.azimuth_deg[None, :] + 180.0) % 360.0 - 180.0
    u = np.sin(np.radians(zenith_deg[:, cells.site])) * np.sin(np.radians(off))
    gain = 10.0 * np.log10(layout.mean_row_gain(u, columns, 90.0 + downtilt_deg))
    gain[np.arange(len(serving)), serving] = 10.0 * np.log10(columns)
    return gain


def coupling_gain_db(cells: Cells, site_loss_db: np.ndarray,
                     antenna_db: np.ndarray) -> np.ndarray:
    """(clients, cells) coupling gain: minus the loss to the cell's site (path loss, shadowing
    and O2I; (clients, sites)) plus the cell's antenna gain towards the client."""
    return -site_loss_db[:, cells.site] + antenna_db


def serving_cells(coupling_db: np.ndarray) -> np.ndarray:
    """Each client's serving cell: the strongest coupling gain (the strongest received power
    at equal transmit power; the lowest index on a tie)."""
    return np.argmax(coupling_db, axis=1)


def whole_blocks(shares_hz: np.ndarray, num_blocks: int, block_hz: float) -> np.ndarray:
    """Sub-bands in Hz made whole blocks: each share's floor in blocks, then the blocks left
    to the largest remainders (ties to the lower index), so the blocks sum to what the shares
    cover, at most `num_blocks`. ValueError when a client would get no block."""
    wanted = np.asarray(shares_hz, dtype=float) / block_hz
    total = min(num_blocks, int(np.floor(wanted.sum() + 1e-9)))
    blocks = np.floor(wanted + 1e-9).astype(np.int64)
    left = total - int(blocks.sum())
    if left > 0:
        order = np.argsort(-(wanted - blocks), kind="stable")
        blocks[order[:left]] += 1
    if len(blocks) and blocks.min() < 1:
        raise ValueError(f"{len(blocks)} transfers share {num_blocks} resource blocks: each "
                         f"needs at least one (fewer clients per cell and round, or a wider "
                         f"band)")
    return blocks


@dataclass(frozen=True)
class Transfers:
    """The transfers in flight in one direction, one entry per transfer: its cell, its blocks
    (first, count: a range; or, where `held` is given, the set it marks, first its lowest and
    count its size), the power it radiates in all (W; spread evenly over its blocks), its
    receiver's gain from its transmitter, and `client_gains[i]`: the coupling gain between
    transfer i's client and every cell (clients x cells rows: on the uplink what each cell
    hears of i's client, on the downlink what i's client hears of each cell)."""

    cell: np.ndarray
    first_block: np.ndarray
    num_blocks: np.ndarray
    power_w: np.ndarray
    gain: np.ndarray
    client_gains: np.ndarray
    #: (transfers, blocks) True where a transfer holds a block, for sets that are not ranges
    held: np.ndarray | None = None
    #: other users' load in its mean (a network's traffic, model fluid): the interference it
    #: adds on each block of each transfer (W) and the share of the blocks' time it leaves
    #: each; None: none
    floor_w: np.ndarray | None = None
    share: np.ndarray | None = None

    def occupancy(self, total_blocks: int) -> np.ndarray:
        """(transfers, blocks) True where a transfer holds a block."""
        if self.held is not None:
            return self.held
        blocks = np.arange(total_blocks)
        return ((blocks[None, :] >= self.first_block[:, None])
                & (blocks[None, :] < (self.first_block + self.num_blocks)[:, None]))


@dataclass(frozen=True)
class Rates:
    """Each transfer's Shannon rate (bit/s) summed over its blocks, its mean SINR over its
    blocks (linear) and the interference power summed over its blocks (W)."""

    rate_bps: np.ndarray
    sinr: np.ndarray
    interference_w: np.ndarray


def received_interference_w(transfers: Transfers, held: np.ndarray, per_block_w: np.ndarray,
                            uplink: bool) -> np.ndarray:
    """(transfers, blocks) power that transfer i's receiver gets on block b from the
    transfers of other cells holding b. Within a cell the blocks of two transfers never
    overlap, so on i's blocks the only transfer of i's cell is i itself: the power of the
    transfers on b of every cell but i's. Uplink: cell c hears R[c, b] = sum_j (P_j/n_j)
    g(j's client, c) held[j, b] over the transfers j of other cells. Downlink: cell c
    radiates T[c, b] = sum_{j of c} (P_j/n_j) held[j, b], which i's client hears through
    g(i's client, c) for every cell c but its own. Each a sum of the other cells' terms
    alone (each transfer's gain to its own cell taken as 0), not the whole less i's own: a
    client a few tens of metres from its site hears itself 80 dB above the rest, and that
    difference would keep only half the interference's digits. In (transfers x cells x
    blocks) operations, not (transfers^2 x blocks). Exactly 0 on a block no other transfer
    holds."""
    gains, cell = transfers.client_gains, transfers.cell
    others = gains.copy()
    others[np.arange(len(cell)), cell] = 0.0          # (a transfer's own cell: not heard)
    if uplink:
        heard = others.T @ (held * per_block_w[:, None])                   # (cells, blocks)
        out = heard[cell]
    else:
        # what each cell radiates on each block: at most one of its transfers holds a block
        by_cell = np.zeros((gains.shape[1], held.shape[1]))
        holder, block = np.nonzero(held)
        by_cell[cell[holder], block] = per_block_w[holder]
        out = others @ by_cell
    # where i holds b and nobody else does (or i does not hold b): none, exactly
    out[~(held & (np.count_nonzero(held, axis=0) > 1)[None, :])] = 0.0
    return out


def transfer_rates(transfers: Transfers, total_blocks: int, block_hz: float,
                   noise_psd_w_per_hz: float, interference: bool, uplink: bool = True,
                   link: nr_link.LinkTables | None = None) -> Rates:
    """The rates of transfers sharing the network's blocks now, all recomputed at once (the
    tests' reference for channel.network_grid, which keeps them block by block as transfers
    start and end). On each block b of transfer i: SINR = (P_i / n_i) g_i / (N0 B_rb + I_ib),
    with I_ib the power i's receiver gets from the transfers of other cells holding b
    (received_interference_w); the rate is sum_b B_rb log2(1 + SINR_ib). Without interference
    (or with nothing to interfere) I = 0 and the SINR is the SNR, P_i g_i / (n_i N0 B_rb) in
    the same expression, to the bit. Other users' load in its mean (`floor_w`, `share`) adds
    its interference to I on every block and takes its share of the rate. Under the NR link
    abstraction (`link`) the rate is the goodput of the MCS link adaptation picks at the
    transfer's block SINRs (channel.nr_link.LinkTables.goodput_bps)."""
    held = transfers.occupancy(total_blocks)
    per_block_w = transfers.power_w / transfers.num_blocks
    signal = per_block_w * transfers.gain
    noise = noise_psd_w_per_hz * block_hz
    if interference and len(np.unique(transfers.cell)) > 1:
        received = received_interference_w(transfers, held, per_block_w, uplink)
    else:
        received = np.zeros(held.shape)
    floor = np.zeros(len(signal)) if transfers.floor_w is None else transfers.floor_w
    sinr = signal[:, None] / (noise + received + floor[:, None])
    rate = block_hz * np.where(held, np.log2(1.0 + sinr), 0.0).sum(axis=1)
    mean_sinr = np.where(held, sinr, 0.0).sum(axis=1) / transfers.num_blocks
    interference_w = received.sum(axis=1)
    # a transfer no other transfer interferes with: its SINR (SNR where no load adds any)
    # and rate in closed form, not a sum of equal terms (which may differ in the last bit)
    snr = signal / (noise + floor)
    quiet = interference_w == 0.0
    rate = np.where(quiet, transfers.num_blocks * block_hz * np.log2(1.0 + snr), rate)
    if link is not None:
        rate = np.array([link.goodput_bps(np.full(n, snr[i]) if quiet[i] else sinr[i, held[i]])
                         for i, n in enumerate(transfers.num_blocks.tolist())])
    if transfers.share is not None:     # the share of the blocks' time other users leave
        rate = rate * transfers.share
    return Rates(rate, np.where(quiet, snr, mean_sinr),
                 interference_w + transfers.num_blocks * floor)


def round_robin_shares(total: int, caps: list[int]) -> list[int]:
    """A round-robin scheduler's whole blocks for the transfers in progress in a cell, in the
    order they joined: `total` split in equal shares (the first total mod k one block more),
    none above its transfer's cap (the most it can use), what a capped transfer leaves split
    again among the others; at most `total` transfers (each gets one block or more). Blocks
    are left only when every transfer holds its cap."""
    if len(caps) > total:
        raise ValueError(f"{len(caps)} transfers for {total} blocks: at most one each")
    if caps:              # no cap below its equal share: the loop's first pass, at once
        each, extra = divmod(total, len(caps))
        if min(caps) >= each + (extra > 0):
            return [each + (j < extra) for j in range(len(caps))]
    out = [0] * len(caps)
    left, open_ = total, list(range(len(caps)))
    while open_ and left > 0:
        each, extra = divmod(left, len(open_))
        still, given = [], 0
        for j, i in enumerate(open_):
            g = min(each + (j < extra), caps[i] - out[i])
            out[i] += g
            given += g
            if out[i] < caps[i]:
                still.append(i)
        left -= given
        open_ = still
    return out


def proportional_fair_shares(total: int, caps: list[int], metrics: list[float]) -> list[int]:
    """A proportional-fair scheduler's whole blocks for the transfers in progress in a cell:
    the `total` blocks go to the transfers in order of their metric (the highest first; ties
    in the order given), each taking as many as it can use (its cap) of those left; a
    transfer that comes after the blocks ran out gets none and waits. With a flat channel
    (every block of a transfer at one SINR) the per-block argmax of instantaneous over
    averaged rate (Sionna's PFSchedulerSUMIMO, 5G-LENA's PF) is this: the best transfer
    wins every block it can use."""
    if len(caps) != len(metrics):
        raise ValueError(f"{len(caps)} caps for {len(metrics)} metrics")
    out = [0] * len(caps)
    left = total
    for i in sorted(range(len(caps)), key=lambda i: -metrics[i]):   # (stable: ties in order)
        out[i] = min(caps[i], left)
        left -= out[i]
    return out


def kept_blocks(total: int, held: list[np.ndarray], counts: list[int]) -> list[np.ndarray]:
    """Where a scheduler that has decided how many of a cell's `total` blocks each transfer
    gets (`counts`) places them, moving as few as it can: each transfer keeps the lowest
    min(count, its own) of the blocks it holds (`held`, increasing; empty for one that
    waits), and those that need more take the lowest of the blocks left free, in the order
    given. -> each transfer's set (increasing; not always a range: a transfer that grows
    takes free blocks wherever they lie)."""
    if len(held) != len(counts) or sum(counts) > total:
        raise ValueError(f"{len(counts)} counts summing to {sum(counts)} for {len(held)} "
                         f"transfers and {total} blocks")
    kept = [h[:n] for h, n in zip(held, counts, strict=True)]
    free = np.ones(total, dtype=bool)
    for h in kept:
        free[h] = False
    spare = np.flatnonzero(free)
    out, taken = [], 0
    for h, n in zip(kept, counts, strict=True):
        more = n - len(h)
        if more > 0:
            h = np.sort(np.concatenate([h, spare[taken:taken + more]]))
            taken += more
        out.append(h.astype(np.int64))
    return out


def proportional_fair_average(average: float, rate: float, beta: float, slots: float) -> float:
    """A proportional-fair scheduler's averaged rate after `slots` slots (a real number: time
    over the slot) at the constant rate `rate`: T <- beta T + (1 - beta) r a slot, in closed
    form, T beta^n + r (1 - beta^n)."""
    keep = beta ** slots
    return average * keep + rate * (1.0 - keep)


@dataclass(frozen=True)
class LinkLosses:
    """What each client's links to the sites drew (clients x sites, or per client): the basic
    path loss, the shadowing, the LOS state (all False where the model has none), and per
    client the O2I loss and indoor state (0 and False where the model has none) and the UT
    height. Under 38.901 also what a client that moves needs of its drop (issue 64; None
    otherwise): each link's uniform LOS draw (LOS where it is below the probability) and
    standard normal shadowing draw, its effective environment height, and each client's
    indoor distance."""

    pathloss_db: np.ndarray
    shadowing_db: np.ndarray
    los: np.ndarray
    o2i_db: np.ndarray
    indoor: np.ndarray
    h_ut_m: np.ndarray
    los_uniform: np.ndarray | None = None
    shadowing_normal: np.ndarray | None = None
    environment_m: np.ndarray | None = None
    indoor_distance_m: np.ndarray | None = None

    @property
    def total_db(self) -> np.ndarray:
        """(clients, sites) loss: path loss, shadowing and the client's O2I loss."""
        return self.pathloss_db + self.shadowing_db + self.o2i_db[:, None]


@dataclass(frozen=True)
class NetworkDrop:
    """Clients dropped into a network: positions, each link's geometry and losses, the
    coupling gains to every cell (dB, clients x cells) and the serving cells."""

    cells: Cells
    x_m: np.ndarray
    y_m: np.ndarray
    geometry: LinkGeometry
    losses: LinkLosses
    antenna_db: np.ndarray
    coupling_db: np.ndarray
    serving: np.ndarray

    def serving_site(self) -> np.ndarray:
        return self.cells.site[self.serving]

    def on_serving_link(self, per_site: np.ndarray) -> np.ndarray:
        """A (clients, sites) quantity on each client's link to its serving cell's site."""
        return per_site[np.arange(len(self.serving)), self.serving_site()]


def couple(cells: Cells, geometry: LinkGeometry, losses: LinkLosses,
           downtilt_deg: float | None = None, bs_height_m: float = 0.0,
           panel_rows: int | None = None, panel_columns: int | None = None,
           serving: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(antenna gains, coupling gains, serving cells) of links with these `geometry` and
    `losses`, under drop_network's antennas. `serving` None: each client's strongest cell
    before the beams (a drop); given (a client that moved keeps its cell until a handover):
    the beams point from those cells."""
    antenna, coupling, serving, beam = couple_with_beam(
        cells, geometry, losses, downtilt_deg, bs_height_m, panel_rows, panel_columns, serving)
    if beam is None:
        return antenna, coupling, serving
    return antenna + beam, coupling + beam, serving


def couple_with_beam(cells: Cells, geometry: LinkGeometry, losses: LinkLosses,
                     downtilt_deg: float | None = None, bs_height_m: float = 0.0,
                     panel_rows: int | None = None, panel_columns: int | None = None,
                     serving: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """`couple`'s numbers before the beam: (the antenna gains and the coupling gains by each
    cell's column alone, the serving cells, the beam's gain to add: beam_gain_db; None
    without panel_columns)."""
    zenith = (None if downtilt_deg is None else
              zenith_angle_deg(geometry.d2d_m, bs_height_m, losses.h_ut_m[:, None]))
    antenna = antenna_gain_db(cells, geometry.azimuth_deg, zenith, downtilt_deg, panel_rows)
    coupling = coupling_gain_db(cells, losses.total_db, antenna)
    if serving is None:
        serving = serving_cells(coupling)
    if panel_columns is None:
        return antenna, coupling, serving, None
    if zenith is None or downtilt_deg is None:
        raise ValueError("layout.panel_columns: a beam toward each client needs the "
                         "panel's column, steered to a downtilt")
    beam = beam_gain_db(cells, geometry.azimuth_deg, zenith, serving, downtilt_deg,
                        panel_columns)
    return antenna, coupling, serving, beam


def drop_network(cells: Cells, points: np.ndarray, sites_xy: np.ndarray,
                 offsets: np.ndarray | None,
                 losses_of: Callable[[np.ndarray], LinkLosses],
                 downtilt_deg: float | None = None, bs_height_m: float = 0.0,
                 panel_rows: int | None = None,
                 panel_columns: int | None = None) -> NetworkDrop:
    """The network's view of clients at `points`: `losses_of(d2d_m)` draws the links' losses
    for the (clients, sites) distances (a path-loss model's `draw_links`); a `downtilt_deg`
    applies the antennas' vertical pattern, at each link's zenith angle from a site at
    `bs_height_m` to the client at its drawn height (with `panel_rows`, a column of elements
    steered to it: antenna_gain_db; with `panel_columns` too, a beam toward each served
    client: beam_gain_db). The serving cell is the strongest before the beams (the beam a
    cell would point at the client adds the same N to each cell's link)."""
    geometry = link_geometry(points, sites_xy, offsets)
    losses = losses_of(geometry.d2d_m)
    antenna, coupling, serving = couple(cells, geometry, losses, downtilt_deg, bs_height_m,
                                        panel_rows, panel_columns)
    return NetworkDrop(cells, points[:, 0], points[:, 1], geometry, losses, antenna, coupling,
                       serving)
