"""The bottom layer of scala_netsim: what the run folder holds and what everything above
reads and writes (no torch, simpy or pydantic here). `analysis/` imports only this layer
(issue 26's layering, being built up move by move)."""
