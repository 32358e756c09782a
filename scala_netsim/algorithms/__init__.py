"""The algorithms layer: every trainer (scala, splitfed, federated, async_trainers, gas, on the
shared pieces of common), their scenario sections (algorithms.config) and client selection
(algorithms.selection). The registry that names them is one floor up (config.registry)."""
