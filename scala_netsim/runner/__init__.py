"""The runner layer: the world a run lives in (runner.world), the run loop that records one
global model version at a time (runner.loop) from a driver that produces them
(runner.drivers), its checkpoints, writer and execution (runner.checkpoints, runner.writer,
runner.execute); the books a run is checked and summarised by (runner.invariants,
runner.metrics, runner.radio_record, runner.version_books); the trainers that answer from
records instead of training (runner.recorded, and on it runner.replay, the re-timer, and
runner.timing, timing-only runs); the run-time estimate (runner.estimate)."""
