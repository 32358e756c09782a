"""The learning layer: messages, models and their FLOPs, losses, partitions, data, compression,
privacy (the inversion decoder), the shared training helpers, and the trainer contract
(learn.contract: what a protocol calls on its trainer, the seam where the algorithms and the
simulator meet). No SimPy here."""
