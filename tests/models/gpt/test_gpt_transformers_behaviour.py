"""Regressions found by transformers' own common tests (issue 31): GPT's double-heads model on
plain (batch, seq) inputs and in generate(), and the causal LM's loss on ``shift_labels``."""

from __future__ import annotations

import pytest
import torch
from transformers import GenerationMixin

from hf_variants import GPTConfig, GPTDoubleHeadsModel, GPTLMHeadModel

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=1,
)


def double_heads(pre_layer_norm: bool) -> GPTDoubleHeadsModel:
    torch.manual_seed(0)
    return GPTDoubleHeadsModel(GPTConfig(**TINY, pre_layer_norm=pre_layer_norm)).eval()


@pytest.mark.parametrize("pre_layer_norm", [True, False], ids=["gpt2", "gpt1"])
def test_double_heads_takes_batch_seq_inputs_like_one_choice(pre_layer_norm):
    model = double_heads(pre_layer_norm)
    ids = torch.randint(3, 99, (2, 6))
    flat = model(ids, labels=ids)
    as_choices = model(ids[:, None], labels=ids[:, None])
    assert flat.logits.shape == (2, 6, 99) and flat.mc_logits.shape == (2,)
    torch.testing.assert_close(flat.logits, as_choices.logits[:, 0])
    torch.testing.assert_close(flat.mc_logits, as_choices.mc_logits[:, 0])
    torch.testing.assert_close(flat.lm_loss, as_choices.lm_loss)
    with pytest.raises(ValueError, match="mc_labels need"):
        model(ids, mc_labels=torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"mc_token_ids has shape \(3,\), expected \(2,\)"):
        model(ids, mc_token_ids=torch.zeros(3, dtype=torch.long))


@pytest.mark.parametrize("pre_layer_norm", [True, False], ids=["gpt2", "gpt1"])
def test_double_heads_generates_the_lm_heads_tokens(pre_layer_norm):
    model = double_heads(pre_layer_norm)
    # a direct base whose name ends in GenerationMixin (transformers' can_generate reads the bases' names)
    assert (
        any(
            issubclass(base, GenerationMixin) and base.__name__.endswith("GenerationMixin")
            for base in GPTDoubleHeadsModel.__bases__
        )
        and model.can_generate()
    )
    lm = GPTLMHeadModel(model.config).eval()
    missing, unexpected = lm.load_state_dict(model.state_dict(), strict=False)
    assert not missing and all(key.startswith("multiple_choice_head.") for key in unexpected)
    ids = torch.randint(3, 99, (2, 5))
    for kwargs in (dict(do_sample=False), dict(do_sample=False, num_beams=2)):
        ours = model.generate(ids, max_new_tokens=4, **kwargs)
        theirs = lm.generate(ids, max_new_tokens=4, **kwargs)
        assert torch.equal(ours, theirs)
    # The cache is read: the same tokens without it.
    assert torch.equal(
        model.generate(ids, max_new_tokens=4, do_sample=False, use_cache=False),
        model.generate(ids, max_new_tokens=4, do_sample=False),
    )


def test_causal_lm_loss_uses_shift_labels_when_given():
    torch.manual_seed(0)
    model = GPTLMHeadModel(GPTConfig(**TINY)).eval()
    ids = torch.randint(3, 99, (2, 6))
    shifted = torch.cat([ids[:, 1:], torch.full((2, 1), -100)], dim=1)  # position t predicts token t + 1
    with torch.no_grad():
        plain = model(ids, labels=ids).loss
        from_shift = model(ids, shift_labels=shifted).loss
        other_labels = model(ids, labels=torch.randint(3, 99, (2, 6)), shift_labels=shifted).loss
        other_shift = model(ids, labels=ids, shift_labels=torch.randint(3, 99, (2, 6))).loss
    torch.testing.assert_close(from_shift, plain)  # the same targets, aligned outside
    torch.testing.assert_close(other_labels, plain)  # labels do not count once shift_labels are given
    assert not torch.allclose(other_shift, plain)
