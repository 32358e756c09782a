"""Loss functions: softmax cross-entropy with logit adjustment (Menon et al., ICLR 2021)."""

import torch
import torch.nn.functional as F

# Floor for empirical label frequencies so an absent class gives log(1e-12) instead of -inf
# (as the public logit-adjustment code does).
PRIOR_EPS = 1e-12


def label_prior(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Empirical label distribution P(y) of `labels`."""
    counts = torch.bincount(labels, minlength=num_classes).to(torch.float32)
    return counts / counts.sum()


def log_prior(prior: torch.Tensor) -> torch.Tensor:
    """log P(y), floored at log(PRIOR_EPS) so absent classes stay finite."""
    return torch.log(prior.clamp_min(PRIOR_EPS))


def logit_adjusted_cross_entropy(logits: torch.Tensor, labels: torch.Tensor,
                                 log_prior_: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """g_bal(y, s) = -log softmax(s + log P)[y] (SCALA eq. 12/13).

    `log_prior_` is a length-N vector (one prior for the batch) or a B x N matrix (one prior
    per sample, e.g. each sample's client prior).
    """
    return F.cross_entropy(logits + log_prior_, labels, reduction=reduction)
