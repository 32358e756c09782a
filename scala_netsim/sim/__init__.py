"""The simulator layer: the cell, the wireless link, the book of drops and the protocols
(scala_netsim.engine re-exports them under its documented path). It imports the channel's
math, the core and, of the algorithms, only the trainer contract."""
