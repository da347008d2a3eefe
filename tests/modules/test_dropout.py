"""The uniform-mask dropout (hf_variants.modules.dropout): the distribution of torch's dropout, the
right gradient, and the same masks when gradient checkpointing recomputes a layer."""

import math

import pytest
import torch
from torch.nn import functional as F

from hf_variants.modules.dropout import Dropout, dropout
from tests.models.bert.test_bert import TESTER

P = 0.1
ELEMENTS = 1_000_000


def test_keeps_each_element_with_probability_one_minus_p_and_rescales():
    torch.manual_seed(0)
    x = torch.rand(ELEMENTS) + 0.5  # no zeros, so a zero in the output means "dropped"
    y = dropout(x, P, training=True)
    kept = y != 0
    # Binomial(n, 1 - p): the standard deviation of the kept fraction is sqrt(p (1 - p) / n) = 3e-4.
    tolerance = 5 * math.sqrt(P * (1 - P) / ELEMENTS)
    assert abs(kept.float().mean().item() - (1 - P)) < tolerance
    torch.testing.assert_close(y[kept], x[kept] / (1 - P), rtol=1e-6, atol=0)
    # Unbiased: E[y] = x.
    assert abs(y.mean().item() - x.mean().item()) < 5 * x.std().item() / math.sqrt(ELEMENTS) * 3


def test_masks_are_independent_across_calls_and_positions():
    torch.manual_seed(0)
    x = torch.ones(ELEMENTS)
    first, second = dropout(x, P, True) != 0, dropout(x, P, True) != 0
    assert not torch.equal(first, second)
    # Independent draws: P(both kept) = (1 - p)^2.
    both = (first & second).float().mean().item()
    assert abs(both - (1 - P) ** 2) < 5 * math.sqrt((1 - P) ** 2 * (1 - (1 - P) ** 2) / ELEMENTS)
    # Neighbouring positions are independent too.
    pairs = (first[:-1] & first[1:]).float().mean().item()
    assert abs(pairs - (1 - P) ** 2) < 5 * math.sqrt((1 - P) ** 2 * (1 - (1 - P) ** 2) / ELEMENTS)


def test_gradient_is_the_forward_mask_times_the_scale():
    torch.manual_seed(0)
    x = (torch.rand(64, 128) + 0.5).requires_grad_()
    y = dropout(x, P, True)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    mask_times_scale = (y / x).detach()  # 0 or 1/(1-p)
    torch.testing.assert_close(x.grad, upstream * mask_times_scale)

    def seeded_dropout(t: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(1)  # gradcheck calls this repeatedly: the same mask every time
        return dropout(t, P, True)

    assert torch.autograd.gradcheck(seeded_dropout, torch.rand(8, 8, dtype=torch.float64, requires_grad=True))


def test_eval_zero_and_one_and_bad_probability():
    x = torch.randn(100)
    assert dropout(x, P, training=False) is x
    assert dropout(x, 0.0, training=True) is x
    assert torch.equal(dropout(x, 1.0, training=True), torch.zeros(100))
    with pytest.raises(ValueError, match="dropout probability"):
        dropout(x, 1.5, training=True)
    module = Dropout(P).eval()
    assert module(x) is x


def test_same_statistics_as_torch_dropout():
    """Mean and variance of the output match F.dropout's (same distribution, other random stream)."""
    torch.manual_seed(0)
    x = torch.randn(ELEMENTS)
    ours, theirs = dropout(x, P, True), F.dropout(x, P, True)
    assert abs(ours.var().item() - theirs.var().item()) < 0.01 * theirs.var().item()
    assert abs((ours == 0).float().mean().item() - (theirs == 0).float().mean().item()) < 0.002


def test_gradient_checkpointing_recomputes_the_same_masks():
    """With dropout on, a checkpointed model must redraw the masks it used in the forward pass
    (torch restores the RNG state), so its gradients equal the plain model's."""
    tester = TESTER
    inputs = tester.inputs("ForSequenceClassification")
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = tester.model("ForSequenceClassification", hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2)
        model.train()
        if checkpointing:
            model.activation_checkpointing_enable()
        torch.manual_seed(1)
        model(**inputs).loss.backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=1e-5, atol=1e-6, msg=name)


def test_training_attention_uses_dropout_and_eval_does_not():
    tester = TESTER
    model = tester.model("Model", attention_probs_dropout_prob=0.5, hidden_dropout_prob=0.0)
    inputs = tester.inputs("Model")
    model.eval()
    reference = model(**inputs).last_hidden_state
    torch.testing.assert_close(model(**inputs).last_hidden_state, reference)
    model.train()
    torch.manual_seed(0)
    first = model(**inputs).last_hidden_state
    torch.manual_seed(0)
    again = model(**inputs).last_hidden_state
    torch.manual_seed(1)
    other = model(**inputs).last_hidden_state
    torch.testing.assert_close(again, first)  # seeded: reproducible
    assert not torch.allclose(other, first)  # attention dropout is active in training
    assert not torch.allclose(first, reference)
