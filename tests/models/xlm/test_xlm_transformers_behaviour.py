"""Regressions found by transformers' own common tests (issue 31): XLMWithLMHeadModel generates as
transformers' does, and XLMForMultipleChoice takes the ``lengths`` transformers' XLM tester gives."""

from __future__ import annotations

import pytest
import torch

import hf_variants
from hf_variants import XLMConfig, XLMForMultipleChoice, XLMWithLMHeadModel

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_position_embeddings=64,
    pad_token_id=2,
    bos_token_id=0,
    eos_token_id=1,
    summary_first_dropout=0.0,
)


@pytest.mark.parametrize("n_langs", [1, 3])
def test_with_lm_head_generates_transformers_tokens(n_langs):
    torch.manual_seed(0)
    config = XLMConfig(**TINY, n_langs=n_langs, lang_id=n_langs - 1, mask_token_id=5)
    ours = XLMWithLMHeadModel(config).eval()
    theirs = hf_variants.to_transformers(ours).eval()
    assert (theirs.config.mask_token_id, theirs.config.lang_id) == (5, n_langs - 1)
    ids = torch.randint(6, 99, (2, 5))
    for kwargs in (dict(do_sample=False), dict(do_sample=False, num_beams=2)):
        generated = ours.generate(ids, max_new_tokens=4, eos_token_id=None, **kwargs)
        assert torch.equal(generated, theirs.generate(ids, max_new_tokens=4, eos_token_id=None, **kwargs))
    # Each greedy step predicts the token at the appended mask.
    step = ours(torch.cat([ids, torch.full((2, 1), 5)], dim=1)).logits[:, -1].argmax(-1)
    assert torch.equal(ours.generate(ids, max_new_tokens=1, eos_token_id=None, do_sample=False)[:, -1], step)


def test_bad_generation_config_raises_value_error():
    # Checked when a model is built (check_architecture), like every architecture field.
    with pytest.raises(ValueError, match="lang_id 3 is outside"):
        XLMWithLMHeadModel(XLMConfig(**TINY, n_langs=3, lang_id=3))
    with pytest.raises(ValueError, match="mask_token_id 99 is outside"):
        XLMWithLMHeadModel(XLMConfig(**TINY, mask_token_id=99))


def test_multiple_choice_takes_lengths():
    torch.manual_seed(0)
    model = XLMForMultipleChoice(XLMConfig(**TINY)).eval()
    ids = torch.randint(6, 99, (2, 3, 5))
    mask = torch.ones_like(ids)
    mask[:, 1, 3:] = 0
    with torch.no_grad():
        masked = model(ids, attention_mask=mask).logits
        per_choice = model(ids, lengths=mask.sum(-1)).logits  # (B, C): one length per choice
        with pytest.warns(UserWarning, match="cannot be used with multiple choice"):
            per_example = model(ids, attention_mask=mask, lengths=torch.tensor([5, 4])).logits  # (B,): ignored
    torch.testing.assert_close(per_choice, masked)
    torch.testing.assert_close(per_example, masked)
