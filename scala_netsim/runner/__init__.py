"""The runner layer: the world a run lives in (runner.world), the run loop that records one
global model version at a time (runner.loop) from a driver that produces them
(runner.drivers: synchronous rounds today), its checkpoints, writer and execution
(runner.checkpoints, runner.writer, runner.execute), and the base of the trainers that answer
from records (runner.recorded). Replay, timing-only, the radio record, the invariants, the round
metrics and the run-time estimate are the same layer (still at their old paths,
scala_netsim.replay, ...)."""
