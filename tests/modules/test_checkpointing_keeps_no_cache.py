"""Training with gradient checkpointing keeps no generation cache (transformers'
``GradientCheckpointingLayer`` drops it, and a recomputed layer would write it twice): the generating
heads return none even when ``use_cache=True`` is asked, gradients still flow, and a cache handed in
is a ValueError. Retargeted from the old shared decoder's test to the variants that generate with
a key/value cache (GPT, T5, the original Transformer)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from hf_variants.modules.cache import CACHE_FIELD, output_cache
from hf_variants.registry import SPECS
from tests.common.tiny_variants import tiny_config

HEADS = {
    "gpt": "LMHeadModel",
    "t5": "ForConditionalGeneration",
    "transformer": "ForConditionalGeneration",
}


@pytest.mark.parametrize("variant", sorted(HEADS))
def test_training_with_gradient_checkpointing_keeps_no_cache(variant):
    spec = SPECS[f"hfv_{variant}"]
    config = tiny_config(spec)
    torch.manual_seed(0)
    model = spec.classes[HEADS[variant]](config)
    model.activation_checkpointing_enable()
    model.train()
    ids = torch.randint(3, config.vocab_size, (2, 6), generator=torch.Generator().manual_seed(1))
    inputs = {"input_ids": ids} if variant == "gpt" else {"input_ids": ids, "decoder_input_ids": ids}
    out = model(**inputs, use_cache=True)
    assert output_cache(out) is None
    out.logits.sum().backward()
    assert model.get_input_embeddings().weight.grad is not None
    with pytest.raises(ValueError, match="gradient checkpointing"):
        model(**inputs, **{CACHE_FIELD: DynamicCache()})
