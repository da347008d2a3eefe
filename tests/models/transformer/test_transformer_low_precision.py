"""Regression found by transformers' own common tests (issue 31): a Transformer loaded in half
precision runs in it (the sinusoidal table, a buffer, no longer promotes the embeddings to float32)."""

from __future__ import annotations

import pytest
import torch

from hf_variants import OriginalTransformerConfig, TransformerForConditionalGeneration

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
    eos_token_id=1,
    decoder_start_token_id=0,
)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_loaded_in_half_precision_runs_in_it(dtype, tmp_path):
    torch.manual_seed(0)
    TransformerForConditionalGeneration(OriginalTransformerConfig(**TINY)).save_pretrained(tmp_path)
    model = TransformerForConditionalGeneration.from_pretrained(tmp_path, dtype=dtype).eval()
    ids = torch.randint(3, 99, (2, 5))
    with torch.no_grad():
        out = model(input_ids=ids, decoder_input_ids=ids, output_hidden_states=True)
    assert out.logits.dtype == dtype
    assert all(h.dtype == dtype for h in out.decoder_hidden_states + out.encoder_hidden_states)
