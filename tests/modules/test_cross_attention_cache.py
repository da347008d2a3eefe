"""The encoder-decoders' cross-attention keys and values are projected once, on the first decoding
call, and read from the ``EncoderDecoderCache`` on every later step (T5 and the original
Transformer, each written in its own file). Retargeted from the old shared decoder stack's test:
step by step with the cache equals one run over the whole target, and a later step ignores the
encoder states it is handed (the stored projections are what it reads)."""

from __future__ import annotations

import pytest
import torch
from transformers import EncoderDecoderCache

import hf_variants
from hf_variants.modules.cache import CACHE_FIELD, output_cache
from tests.common.tiny_variants import tiny_config

BACKENDS = ("eager", "sdpa")


def model_and_inputs(variant: str, backend: str):
    config = tiny_config(hf_variants.registry.SPECS[f"hfv_{variant}"])
    config._attn_implementation = backend
    head = {
        "t5": hf_variants.T5ForConditionalGeneration,
        "transformer": hf_variants.TransformerForConditionalGeneration,
    }
    torch.manual_seed(0)
    model = head[variant](config).eval()
    generator = torch.Generator().manual_seed(1)
    source = torch.randint(3, config.vocab_size, (2, 6), generator=generator)
    source_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    target = torch.randint(3, config.vocab_size, (2, 5), generator=generator)
    return model, source, source_mask, target


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", ["t5", "transformer"])
def test_cross_attention_keys_are_computed_once_and_reused(variant, backend):
    model, source, source_mask, target = model_and_inputs(variant, backend)
    layers = model.config.decoder_layers
    with torch.no_grad():
        encoder_outputs = model.get_encoder()(input_ids=source, attention_mask=source_mask)
        full = model(
            attention_mask=source_mask, encoder_outputs=encoder_outputs, decoder_input_ids=target, use_cache=False
        ).logits
        first = model(
            attention_mask=source_mask, encoder_outputs=encoder_outputs, decoder_input_ids=target[:, :3], use_cache=True
        )
        cache = output_cache(first)
        assert isinstance(cache, EncoderDecoderCache)
        assert cache.is_updated == {depth: True for depth in range(layers)}
        heads, head_dim = model.config.num_attention_heads, cache.cross_attention_cache.layers[0].keys.shape[-1]
        assert cache.cross_attention_cache.layers[0].keys.shape == (2, heads, 6, head_dim)
        # Later steps read the stored encoder keys/values: other encoder states change nothing.
        zeroed = type(encoder_outputs)(last_hidden_state=torch.zeros_like(encoder_outputs.last_hidden_state))
        steps = [first.logits]
        for t in range(3, 5):
            steps.append(
                model(
                    attention_mask=source_mask,
                    encoder_outputs=zeroed,
                    decoder_input_ids=target[:, t : t + 1],
                    **{CACHE_FIELD: cache},  # the name the installed transformers uses
                ).logits
            )
        ignored_without_cache = model(
            attention_mask=source_mask, encoder_outputs=zeroed, decoder_input_ids=target, use_cache=False
        ).logits
    assert cache.get_seq_length() == 5
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=0)
    # The zeroed states do matter when they are projected: the equality above is the cache's doing.
    assert not torch.allclose(ignored_without_cache[:, 3:], full[:, 3:], atol=1e-3)
