"""A timing-only run's meter (scala_netsim.runner.timing) on the Fashion-MNIST slice: what a
concatenated round runs for real to meter its steps, and what it lets go."""

from scala_netsim.algorithms.scala import SplitTrainer


def test_a_concatenated_round_keeps_one_graph_per_new_batch_size(make_run, monkeypatch):
    """SCALA, 10 of 20 clients a round: the first local iteration runs every participant's
    forward pass and the server step, but only one client of each batch size the run has
    not seen runs its backward pass; nothing is left pending after the round, and a round
    whose sizes were all seen runs nothing."""
    run = make_run("scala", timing_only=True, data={"num_clients": 20},
                   training={"participation": 0.5, "rounds": 3})
    inner = run.trainer.inner
    backward: list[int] = []
    forward_with_graph: list[bool] = []
    client_backward, client_forward = SplitTrainer.client_backward, SplitTrainer.client_forward

    def count_backward(self, reply):
        backward.append(self.client_batch_sizes[reply.client_id])
        return client_backward(self, reply)

    def count_forward(self, k, local_iter):
        forward = client_forward(self, k, local_iter)
        forward_with_graph.append(self._pending[k].requires_grad)
        return forward

    monkeypatch.setattr(SplitTrainer, "client_backward", count_backward)
    monkeypatch.setattr(SplitTrainer, "client_forward", count_forward)
    seen: set[int] = set()
    for _ in range(3):
        run.step()
        sizes = set(run.trainer._batch.values())      # the round's batch sizes
        new = sizes - seen
        if new:
            assert len(forward_with_graph) == 10       # every participant's forward pass
            assert sorted(backward) == sorted(new)     # one backward pass per new size
            assert sum(forward_with_graph) == len(new)
        else:
            assert backward == forward_with_graph == []
        seen |= sizes
        assert inner._pending == {}
        backward.clear()
        forward_with_graph.clear()
    assert run.trainer.live_rounds >= 1
    assert run.problems() == []
