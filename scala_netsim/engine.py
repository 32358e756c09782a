"""The SimPy co-simulation of one cell.

Clients and the server are SimPy processes that exchange typed messages over a wireless link;
the link asks `channel`'s link model for each transfer's rate and turns payload bits into
timeouts (as SimPy's `Cable` example turns latency into them), compute steps turn measured
FLOPs into timeouts at the node's FLOP/s, and the server's processor is a SimPy resource that
server steps queue on. The real torch computation of a step is invoked by the process at the
simulated moment the step starts. Time passes nowhere else.

A protocol is one communication pattern; it calls the trainer contract of its pattern
(scala_netsim.algorithms.contract) and knows nothing of gradients beyond that.

The engine is the package scala_netsim.sim: `sim.cell` (the cell), `sim.link` (the wireless
link: allocation, rates, fading, retransmissions), `sim.drops` (the book of drops and the round
rules) and `sim.protocols` (the five communication patterns). This module is their one import
path, as the README documents it (`from scala_netsim.engine import FederatedProtocol`).
"""

from scala_netsim.sim.cell import Cell
from scala_netsim.sim.drops import NO_RULES, Drops, RoundRules
from scala_netsim.sim.link import (
    TRANSFER_COLUMNS,
    Grant,
    Message,
    TransferLost,
    TransferRate,
    WirelessLink,
    child_rng,
    grants_frame,
    share_done,
    transfers_frame,
)
from scala_netsim.sim.protocols import (
    ConcatSplitProtocol,
    FederatedProtocol,
    KeptModelSplitProtocol,
    LocalLossProtocol,
    PerClientSplitProtocol,
    Protocol,
)

__all__ = ["NO_RULES", "TRANSFER_COLUMNS", "Cell", "ConcatSplitProtocol", "Drops",
           "FederatedProtocol", "Grant", "KeptModelSplitProtocol", "LocalLossProtocol", "Message",
           "PerClientSplitProtocol", "Protocol", "RoundRules", "TransferLost", "TransferRate",
           "WirelessLink", "child_rng", "grants_frame", "share_done", "transfers_frame"]
