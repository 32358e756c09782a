"""The simulator layer: the cell (sim.cell), the wireless link (sim.link), the book of drops
(sim.drops), a client's life in stages (sim.stages), the round protocols (sim.protocols) and
the asynchronous ones (sim.async_protocols, with their checkpoint support in
sim.async_state). It imports the channel's math, the core and the learning layer's trainer
contract (learn.contract), never an algorithm."""
