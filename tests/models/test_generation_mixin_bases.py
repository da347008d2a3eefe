"""Issue 43 (transformers' ``test_inherits_generation_mixin``, failing on GPT-2, GPT-1 and T5): every
head that generates lists transformers' ``GenerationMixin`` itself among its direct bases, as
transformers' own heads do and as its remote-code convention expects (``can_generate()`` reads the
direct bases); our checks of the special ids (``CheckedGenerationMixin``) still run first."""

from __future__ import annotations

import pytest
import torch
from transformers import GenerationMixin

import hf_variants
from hf_variants.modules.token_ids import CheckedGenerationMixin


def generating_heads() -> list:
    heads = []
    for spec in hf_variants.registry.SPECS.values():
        for cls in dict.fromkeys(spec.classes.values()):
            if cls.can_generate():
                heads.append(pytest.param(cls, id=cls.__name__))
    return heads


def test_every_expected_head_is_covered():
    names = {param.values[0].__name__ for param in generating_heads()}
    assert {
        "GPTLMHeadModel",
        "GPTDoubleHeadsModel",
        "T5ForConditionalGeneration",
        "XLMWithLMHeadModel",
        "TransfoXLLMHeadModel",
        "TransformerForConditionalGeneration",
        "XLNetLMHeadModel",
    } <= names


@pytest.mark.parametrize("head", generating_heads())
def test_generation_mixin_is_a_direct_base(head):
    assert GenerationMixin in head.__bases__
    assert "GenerationMixin" in str(head.__bases__)  # what transformers' test and can_generate() read
    mro = head.__mro__
    # generate() is CheckedGenerationMixin's (the id checks), which then calls transformers' own.
    assert mro.index(CheckedGenerationMixin) < mro.index(GenerationMixin)
    assert head.generate is CheckedGenerationMixin.generate


def test_generate_still_checks_special_ids():
    """The id check of CheckedGenerationMixin still runs ahead of transformers' generate()."""
    config = hf_variants.GPTConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=1,
    )
    model = hf_variants.GPTLMHeadModel(config).eval()
    with pytest.raises(ValueError, match="bos_token_id 500 is outside the vocabulary"):
        model.generate(max_new_tokens=2, bos_token_id=500)  # no prompt: generation starts from bos
    assert model.generate(torch.tensor([[5, 6]]), max_new_tokens=2, do_sample=False).shape == (1, 4)
