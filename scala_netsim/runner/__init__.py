"""The runner layer: the world a run lives in (runner.world), the trainer, link and driver
put together (runner.assembly), the run loop that records one global model version at a
time (runner.loop) from a driver that produces them (runner.drivers), its checkpoints, writer
and execution (runner.checkpoints, runner.writer, runner.execute), a run's books handed to
the checks of scala_netsim.books (runner.checks); the trainers that answer from records
instead of training (runner.recorded, and on it runner.replay, the re-timer, and
runner.timing, timing-only runs); the run-time estimate (runner.estimate)."""
