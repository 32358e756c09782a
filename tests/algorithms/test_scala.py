"""SCALA and CA-SFL: the server step, the gradients returned, the client step, aggregation
and FLOPs, against their definitions (SCALA-NOTES section 2)."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from scala_netsim.algorithms.common import SGDSettings
from scala_netsim.algorithms.scala import CASFL, SCALA
from scala_netsim.learn.losses import (
    PRIOR_EPS,
    label_prior,
    log_prior,
    logit_adjusted_cross_entropy,
)
from scala_netsim.learn.training import apportion_batch_sizes, weighted_average_

from conftest import make_client_data, split_parts

NUM_CLASSES = 10


def make_trainer(logit_adjust=True, momentum=0.9, sizes=(12, 24, 36), seed=0):
    """Three clients with skewed labels on random 32x32 images: client 0 holds labels {0, 1},
    client 1 {1, 2, 3}, client 2 all ten."""
    data = make_client_data([[0, 1], [1, 2, 3], list(range(10))], sizes, seed=seed)
    algorithm = SCALA if logit_adjust else CASFL
    return algorithm(*split_parts(seed), data, SGDSettings(12, 0.05, momentum), seed)


def forward(trainer, k, t=0):
    return trainer.client_forward(k, t).upload


def start(trainer, selected=(0, 1, 2)):
    trainer.begin_round(list(selected))
    for k in selected:
        trainer.client_receive_model(trainer.client_model_download(k))


def test_logit_adjusted_loss_is_cross_entropy_on_shifted_logits():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(6, 4, generator=g)
    labels = torch.tensor([0, 1, 3, 3, 2, 0])
    prior = torch.tensor([0.5, 0.25, 0.0, 0.25])
    shifted = logits + torch.log(prior.clamp_min(PRIOR_EPS))
    by_hand = -(shifted.softmax(1)[torch.arange(6), labels]).log().mean()
    torch.testing.assert_close(logit_adjusted_cross_entropy(logits, labels, log_prior(prior)),
                               by_hand)
    torch.testing.assert_close(logit_adjusted_cross_entropy(logits, labels, log_prior(prior)),
                               F.cross_entropy(shifted, labels))
    assert torch.isfinite(log_prior(prior)).all()
    assert log_prior(prior)[2] == pytest.approx(np.log(PRIOR_EPS))
    torch.testing.assert_close(label_prior(labels, 4), torch.tensor([2, 1, 1, 2]) / 6.0)


def test_batch_sizes_are_proportional_to_local_data_and_sum_to_b():
    assert apportion_batch_sizes([600] * 10, 320) == [32] * 10
    sizes = apportion_batch_sizes([100, 200, 700], 320)
    assert sizes == [32, 64, 224]
    sizes = apportion_batch_sizes([1, 1000, 3333, 17], 100)
    assert sum(sizes) == 100 and min(sizes) >= 1 and sizes[2] == max(sizes)
    with pytest.raises(ValueError, match="batch_size \\(3\\) must be at least .* \\(4\\)"):
        apportion_batch_sizes([5, 5, 5, 5], 3)


@pytest.mark.parametrize("logit_adjust", [True, False])
def test_server_step_matches_the_definition(logit_adjust):
    trainer = make_trainer(logit_adjust=logit_adjust, momentum=0.0)
    start(trainer)
    assert trainer.client_batch_sizes == {0: 2, 1: 4, 2: 6}
    messages = [forward(trainer, k) for k in (0, 1, 2)]
    server_before = copy.deepcopy(trainer.server_model)
    step = trainer.server_step(messages)
    grads = step.replies
    assert step.flops > 0

    # Server update: one SGD step on the loss of the concatenated batch, adjusted with the
    # prior of the concatenated labels (SCALA) or plain cross-entropy (CA-SFL).
    a = torch.cat([m.activations for m in messages])
    y = torch.cat([m.labels for m in messages])
    reference = copy.deepcopy(server_before)
    logits = reference(a)
    shift = log_prior(label_prior(y, NUM_CLASSES)) if logit_adjust else 0.0
    F.cross_entropy(logits + shift, y).backward()
    for p_ref, p_new in zip(reference.parameters(), trainer.server_model.parameters(),
                            strict=True):
        torch.testing.assert_close(p_new, p_ref - 0.05 * p_ref.grad, rtol=1e-5, atol=1e-7)

    # Gradient returned to client k: d l_k / d A_k of client k's OWN loss (mean over its
    # slice), adjusted with its LOCAL prior P_k (eq. 15), through the pre-step server model.
    for m, g in zip(messages, grads, strict=False):
        assert g.client_id == m.client_id and g.gradients.shape == m.activations.shape
        a_k = m.activations.clone().requires_grad_(True)
        local = trainer.client_log_priors[m.client_id] if logit_adjust else 0.0
        F.cross_entropy(server_before(a_k) + local, m.labels).backward()
        torch.testing.assert_close(g.gradients, a_k.grad, rtol=1e-5, atol=1e-8)


def test_local_prior_differs_from_batch_prior_in_gradients():
    """SCALA's client gradients use P_k, not the concatenated prior: check they differ."""
    trainer = make_trainer(momentum=0.0)
    start(trainer)
    messages = [forward(trainer, k) for k in (0, 1, 2)]
    server_before = copy.deepcopy(trainer.server_model)
    grads = trainer.server_step(messages).replies
    y = torch.cat([m.labels for m in messages])
    a_0 = messages[0].activations.clone().requires_grad_(True)
    F.cross_entropy(server_before(a_0) + log_prior(label_prior(y, NUM_CLASSES)),
                    messages[0].labels).backward()
    assert not torch.allclose(grads[0].gradients, a_0.grad)


def test_client_backward_is_an_sgd_step_on_the_returned_gradient():
    trainer = make_trainer(momentum=0.0)
    start(trainer)
    msg = forward(trainer, 1)
    model, _ = trainer.slots[1]
    before = copy.deepcopy(model)
    grads = trainer.server_step([msg, forward(trainer, 0), forward(trainer, 2)]).replies
    g1 = next(g for g in grads if g.client_id == 1)
    trainer.client_backward(g1)
    x = trainer.train_x[trainer.sampler._order[1][:4]]
    (before(x) * g1.gradients).sum().backward()
    for p_ref, p_new in zip(before.parameters(), model.parameters(), strict=False):
        torch.testing.assert_close(p_new, p_ref - 0.05 * p_ref.grad, rtol=1e-5, atol=1e-7)


def test_round_aggregates_client_models_weighted_by_local_data():
    trainer = make_trainer()
    start(trainer)
    for t in range(2):
        messages = [forward(trainer, k, t) for k in (0, 1, 2)]
        for g in trainer.server_step(messages).replies:
            trainer.client_backward(g)
    uploads = [trainer.client_model_upload(k) for k in (0, 1, 2)]
    for u in uploads:
        trainer.server_receive_model(u)
    trainer.end_round()
    for i, p in enumerate(trainer.client_model.state_dict().values()):
        expected = (12 * uploads[0].tensors[i] + 24 * uploads[1].tensors[i]
                    + 36 * uploads[2].tensors[i]) / 72
        torch.testing.assert_close(p, expected)


def test_weighted_average_helper():
    target = torch.nn.Linear(2, 1)
    sources = [(torch.ones(1, 2), torch.zeros(1)), (torch.full((1, 2), 4.0), torch.ones(1))]
    weighted_average_(target, sources, [3, 1])
    torch.testing.assert_close(target.weight.data, torch.full((1, 2), 1.75))
    torch.testing.assert_close(target.bias.data, torch.tensor([0.25]))


def conv_flops(batch, c_in, c_out, k, h_out, w_out):
    return 2 * batch * c_out * h_out * w_out * c_in * k * k


def test_flops_are_measured_from_the_real_model():
    trainer = make_trainer()
    start(trainer)
    first = trainer.client_forward(2, 0)   # B_2 = 6
    msg, forward_flops = first.upload, first.flops
    conv1 = conv_flops(6, 1, 64, 11, 8, 8)
    conv2 = conv_flops(6, 64, 192, 5, 4, 4)
    assert forward_flops == conv1 + conv2
    messages = [forward(trainer, 0), forward(trainer, 1), msg]
    step = trainer.server_step(messages)  # concatenated batch of 12
    grads, server_flops = step.replies, step.flops
    conv3 = conv_flops(12, 192, 384, 3, 2, 2)
    rest = conv_flops(12, 384, 256, 3, 2, 2) + conv_flops(12, 256, 256, 3, 2, 2) + 2 * 12 * 256 * 10
    server_forward = conv3 + rest
    # forward, weight backward (+ input grads below conv3), input-only backward
    assert server_flops == server_forward + (server_forward + rest) + server_forward
    backward_flops = trainer.client_backward(grads[2])
    assert backward_flops == conv1 + 2 * conv2  # conv1 needs no input gradient
    # measured once per (step, batch size), then reused
    assert trainer.meter.counts[("client_forward", 6)] == forward_flops
    # the demand told to the allocator before the step: counted on the meta device, the same
    demand = trainer.step_demand(2)
    assert demand.compute_flops == forward_flops
    assert demand.upload_bytes == msg.payload_bytes == 6 * 768 * 4 + 6 * 8
    assert demand.download_bytes == grads[2].payload_bytes == 6 * 768 * 4
