"""The runner layer: the world a run lives in, the run loop, its writer and checkpoints
(runner.loop). Replay, timing-only, the radio record, the invariants, the round metrics and the
run-time estimate are the same layer (still at their old paths, scala_netsim.replay, ...)."""
