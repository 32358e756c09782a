"""Asynchronous split learning (async_sfl, GAS): GAS's label statistics against a direct
computation, its generated activations against the statistics they were drawn from, how
it tops labels up, and the books of real runs of both on Fashion-MNIST."""

import pandas as pd
import pytest
import torch

from scala_netsim.algorithms.gas import REGULARIZATION, LabelStatistics, statistics_flops
from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.config.scenario import validate_scenario
from scala_netsim.core.events import EventKind

from conftest import tiny_scenario


def weighted_moments(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The weighted mean and (population) covariance of the rows of x, directly."""
    mean = (w[:, None] * x).sum(0) / w.sum()
    centred = x - mean
    return mean, (w[:, None, None] * centred[:, :, None] * centred[:, None, :]).sum(0) / w.sum()


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_gas_label_statistics_equal_a_direct_computation(covariance):
    """Two batches merged one after the other hold, for each label, the weighted mean and
    covariance of all its samples at once (plus the merge's 1e-5 I when merged), and the
    total weight."""
    g = torch.Generator().manual_seed(0)
    x1, x2 = torch.randn(7, 4, generator=g), torch.randn(5, 4, generator=g) + 1.0
    y1, y2 = torch.tensor([0, 1, 0, 2, 0, 1, 1]), torch.tensor([1, 0, 0, 1, 1])
    w1, w2 = torch.full((7,), 1.0), torch.tensor([3.0, 3.0, 4.0, 4.0, 4.0])
    stats = LabelStatistics(3, 4, covariance, torch.device("cpu"))
    stats.update(x1, y1, w1)
    assert stats.complete                # all three labels are in the first batch
    stats.update(x2, y2, w2)
    x, y, w = torch.cat([x1, x2]), torch.cat([y1, y2]), torch.cat([w1, w2])
    for c in range(3):
        mean, cov = weighted_moments(x[y == c], w[y == c])
        merged = c in (0, 1)                  # label 2 is only in the first batch
        if merged:
            cov = cov + REGULARIZATION * torch.eye(4)
        expected = cov if covariance == "full" else cov.diagonal()
        torch.testing.assert_close(stats.means[c], mean, rtol=0, atol=1e-6)
        torch.testing.assert_close(stats.covariances[c], expected, rtol=0, atol=1e-6)
        assert stats.weights[c] == pytest.approx(float(w[y == c].sum()), abs=0)


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_gas_generated_activations_have_the_recorded_mean_and_covariance(covariance):
    """40,000 draws of a label: their mean is the recorded mean within 5 standard errors,
    their covariance the recorded one (to 5 %); the draws come from the run's generator
    (the same seed gives the same bits)."""
    g = torch.Generator().manual_seed(1)
    basis = torch.randn(3, 3, generator=g)
    cov = basis @ basis.T + 0.1 * torch.eye(3)
    stats = LabelStatistics(2, 3, covariance, torch.device("cpu"))
    stats.means[1] = torch.tensor([1.0, -2.0, 0.5])
    stats.covariances[1] = cov if covariance == "full" else cov.diagonal()
    stats.weights[1] = 1.0
    draws = stats.sample(1, 40_000, torch.Generator().manual_seed(7))
    again = stats.sample(1, 40_000, torch.Generator().manual_seed(7))
    assert torch.equal(draws, again)
    expected = cov if covariance == "full" else torch.diag(cov.diagonal())
    error = 5 * expected.diagonal().sqrt() / 200
    assert ((draws.mean(0) - stats.means[1]).abs() < error).all()
    torch.testing.assert_close(torch.cov(draws.T), expected, rtol=0.05, atol=0.05)


def test_a_covariance_that_is_not_positive_definite_gets_the_codes_jitter():
    """A label seen in one sample has a zero covariance: its draws are its mean plus the
    first jitter that makes it factorisable (1e-6, then x10), as the authors' code does."""
    stats = LabelStatistics(1, 3, "full", torch.device("cpu"))
    stats.update(torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([0]), torch.tensor([1.0]))
    draws = stats.sample(0, 1000, torch.Generator().manual_seed(0))
    assert ((draws - torch.tensor([1.0, 2.0, 3.0])).abs() < 0.01).all()


def test_statistics_flops_by_formula():
    """n = 2 real and g = 3 generated samples of one label, d = 4: mean 3nd = 24, diagonal
    covariance 4nd = 32, merge 8d = 32, draws 2gd = 24; full: 2nd^2 + 2nd = 80, merge 8d^2
    = 128, factorisation d^3 // 3 = 21 and draws 2gd^2 = 96."""
    assert statistics_flops([2], [3], 4, full=False) == 24 + 32 + 32 + 24
    assert statistics_flops([2], [3], 4, full=True) == 24 + 80 + 128 + 21 + 96
    assert statistics_flops([0, 0], [0, 0], 4, full=True) == 0


def run_to_the_end(make_run, algorithm, **sections):
    run = make_run(algorithm, training={"rounds": 4, "concurrency": 3, "eval_every": 2},
                   **sections)
    while not run.finished:
        run.step()
    columns, rows = run.event_table()
    return run, pd.DataFrame(rows, columns=list(columns))


def test_a_real_gas_run_keeps_its_books_and_tops_labels_up(make_run):
    """Fashion-MNIST, 10 clients, Q = 3, buffers of 2 models and 3 uploads, the radio
    recorded (its invariants hold though a version spans more than Q clients' transfers):
    4 versions of 2 models each; a server-side step per 3 activation uploads; the statistics
    hold the weighted mean of every activation the server took, directly recomputed; every
    step after all labels have statistics has each label topped up to B/Q = 8 samples."""
    run = make_run("gas", training={"rounds": 4, "concurrency": 3, "eval_every": 2},
                   gas={"model_buffer": 2, "activation_buffer": 3},
                   network={"record_radio": True})
    trainer = run.trainer
    taken, steps, update = [], [], trainer.statistics.update

    def spy(features, labels, weights):
        taken.append((features.clone(), labels.clone(), weights.clone()))
        update(features, labels, weights)
        steps.append(trainer.generated_counts(labels))

    trainer.statistics.update = spy
    while not run.finished:
        run.step()
    columns, rows = run.event_table()
    events = pd.DataFrame(rows, columns=list(columns))
    assert run.problems() == []
    updates = events[events["kind"] == EventKind.SERVER_UPDATE.value]
    assert len(updates) == 8 and list(updates["version"]) == [1, 1, 2, 2, 3, 3, 4, 4]
    uploads = int((events["kind"] == EventKind.ACTIVATION_UPLOAD.value).sum())
    served = int((events["kind"] == EventKind.SERVER_STEP.value).sum())
    assert trainer.server_steps == len(taken) == served // 3 and uploads >= served
    x = torch.cat([f for f, _, _ in taken]).flatten(1)
    y, w = torch.cat([lab for _, lab, _ in taken]), torch.cat([wt for _, _, wt in taken])
    for c in y.unique().tolist():
        mean = (w[y == c, None] * x[y == c]).sum(0) / w[y == c].sum()
        torch.testing.assert_close(trainer.statistics.means[c], mean, rtol=1e-4, atol=1e-5)
    assert trainer.samples_per_label == 8
    for (_, labels, _), generated in zip(taken, steps, strict=True):
        real = torch.bincount(labels, minlength=10).tolist()
        if any(generated):
            topped = [r + g for r, g in zip(real, generated, strict=True)]
            assert topped == [max(r, 8) for r in real]
    assert trainer.last_step_labels is not None


def test_a_real_async_sfl_run_mixes_each_arrival_fedasync_style(make_run):
    """Each arriving client-side model is mixed in with a s(tau), to the bit; the books
    balance; the shared server model is stepped once per activation upload."""
    run = make_run("async_sfl", training={"rounds": 4, "concurrency": 3, "eval_every": 2})
    trainer, seen, apply = run.trainer, [], run.trainer.server_apply

    def spy(message):
        before = [t.clone() for t in trainer.client_model.state_dict().values()]
        sent = [t.clone() for t in message.tensors]
        update = apply(message)
        seen.append((before, sent, update))
        return update

    trainer.server_apply = spy
    steps = []
    server_step = trainer.server_step
    trainer.server_step = lambda uploads: steps.append(len(uploads)) or server_step(uploads)
    while not run.finished:
        run.step()
    assert run.problems() == []
    assert len(seen) == 4 and steps == [1] * len(steps)
    for (before, sent, update), (after, _, _) in zip(seen[:-1], seen[1:], strict=True):
        weight = 0.6 * (update.staleness + 1.0) ** -0.5
        for b, s, a in zip(before, sent, after, strict=True):
            assert torch.equal(a, b.lerp(s, weight))


def test_asynchronous_split_algorithms_declare_themselves():
    for name in ("async_sfl", "gas"):
        traits = ALGORITHMS[name].traits
        assert traits.asynchronous and traits.activations and traits.gradients
        assert not traits.retimeable and not traits.timeable
        ALGORITHMS[name].classes()          # the classes agree with the traits


@pytest.mark.parametrize("section, message", [
    ({"gas": {"activation_buffer": 0}}, "gas.activation_buffer: must be >= 1, got 0"),
    ({"gas": {"samples_per_label": -2}}, "gas.samples_per_label: must be >= 1, got -2"),
    ({"gas": {"covariance": "low_rank"}}, "gas.covariance"),
    ({"async_sfl": {"alpha": 0.0}}, "async_sfl.alpha: must be > 0.0, got 0.0"),
])
def test_what_gas_and_async_sfl_may_not_be_given(section, message):
    name = next(iter(section))
    document = tiny_scenario(name).model_dump(mode="json")
    document.update(section)
    with pytest.raises(ScenarioError) as caught:
        validate_scenario(document)
    assert message in str(caught.value)


def test_gas_averages_the_models_as_they_arrived(make_run):
    """The model buffer keeps each upload as it arrived, though its client's slot is given to
    the next client (and overwritten by its download) before the buffer is full: each
    version is the |D_k|-weighted average of the arrived models, recomputed here."""
    run = make_run("gas", training={"rounds": 3, "concurrency": 3, "eval_every": 3},
                   gas={"model_buffer": 3})
    trainer, arrived, versions = run.trainer, {}, []
    apply, upload = trainer.server_apply, trainer.client_model_upload

    def spy_upload(k):
        message = upload(k)
        arrived[k] = tuple(t.clone() for t in message.tensors)
        return message

    def spy_apply(message):
        update = apply(message)
        if update.applied:   # the models as they arrived, kept before a later upload's
            versions.append((update.contributors, tuple(
                t.clone() for t in trainer.client_template.state_dict().values()),
                {k: arrived[k] for k in update.contributors}))
        return update

    trainer.client_model_upload, trainer.server_apply = spy_upload, spy_apply
    while not run.finished:
        run.step()
    assert len(versions) == 3
    for contributors, model, arrived in versions:
        assert len(set(contributors)) == len(contributors) == 3
        sizes = [trainer.sampler.num_samples(k) for k in contributors]
        fractions = [n / sum(sizes) for n in sizes]
        for i, w in enumerate(model):     # the average's own order of operations: to the bit
            mean = arrived[contributors[0]][i] * fractions[0]
            for k, fraction in zip(contributors[1:], fractions[1:], strict=True):
                mean.add_(arrived[k][i], alpha=fraction)
            assert torch.equal(w, mean)
