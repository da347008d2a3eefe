"""Regression found by transformers' own common tests (issue 31): gradient checkpointing with
``use_reentrant=True`` on models whose layers share a tensor that carries gradient (T5's
relative-position bias computed once for every layer, the decoder's encoder states)."""

from __future__ import annotations

import pytest
import torch

from hf_variants import (
    OriginalTransformerConfig,
    T5Config,
    T5EncoderModel,
    T5ForConditionalGeneration,
    TransformerForConditionalGeneration,
)

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    ffn_dropout_prob=0.0,  # no dropout at all: a packed and a padded step draw different masks
    pad_token_id=0,
    eos_token_id=1,
    decoder_start_token_id=0,
)


def build(cls):
    torch.manual_seed(0)
    if cls is TransformerForConditionalGeneration:
        return cls(OriginalTransformerConfig(**TINY, max_position_embeddings=64))
    return cls(T5Config(**TINY, head_dim=8))


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("cls", [T5ForConditionalGeneration, T5EncoderModel, TransformerForConditionalGeneration])
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpointed_gradients_equal_plain_ones(cls, use_reentrant, padded):
    """``padded``: a source with padding, which the speed plug-in (on by default) packs when the
    blocks are not checkpointed: the plain step runs packed, the checkpointed one as it can."""
    ids = torch.randint(3, 99, (2, 6))
    inputs = {"input_ids": ids} if cls is T5EncoderModel else {"input_ids": ids, "labels": ids}
    if padded:
        inputs["attention_mask"] = torch.tensor([[1] * 6, [1] * 3 + [0] * 3])

    def gradients(checkpointing: bool) -> dict[str, torch.Tensor]:
        model = build(cls).train()
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": use_reentrant})
        out = model(**inputs)
        if cls is T5EncoderModel:  # its states at padding are the plain path's alone: the real ones compared
            states = out.last_hidden_state if not padded else out.last_hidden_state[inputs["attention_mask"].bool()]
        loss = out.loss if cls is not T5EncoderModel else states.square().mean()
        loss.backward()
        return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    plain, checkpointed = gradients(False), gradients(True)
    assert plain.keys() == checkpointed.keys()
    # The shared position bias (T5) gets its gradient through every layer, checkpointed or not.
    assert (
        any("relative_attention_bias" in name or "position_bias" in name for name in plain)
        or cls is TransformerForConditionalGeneration
    )
    for name in plain:
        torch.testing.assert_close(checkpointed[name], plain[name], msg=name)
