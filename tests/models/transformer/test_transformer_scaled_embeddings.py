"""Regression found by transformers' own common tests (issue 31, ``test_inputs_embeds_matches_input_ids``):
the Transformer's sqrt(d_model) embedding scale lives in the module ``get_input_embeddings()``
returns (as Marian's scaled word embedding), so embedding the ids with it and passing them as
``inputs_embeds`` gives the ids' outputs; ``resize_token_embeddings`` keeps that module and its scale."""

from __future__ import annotations

import math

import torch

from hf_variants import OriginalTransformerConfig, TransformerForConditionalGeneration, TransformerModel
from hf_variants.models.transformer.modeling_transformer import ScaledWordEmbedding

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


def assert_embeds_match_ids(model, ids: torch.Tensor, decoder_ids: torch.Tensor) -> None:
    table = model.get_input_embeddings()
    with torch.no_grad():
        from_ids = model(input_ids=ids, decoder_input_ids=decoder_ids)
        from_embeds = model(inputs_embeds=table(ids), decoder_inputs_embeds=table(decoder_ids))
    name = "logits" if hasattr(from_ids, "logits") else "last_hidden_state"
    torch.testing.assert_close(getattr(from_embeds, name), getattr(from_ids, name))


def test_input_embeddings_are_scaled_and_match_ids():
    torch.manual_seed(0)
    model = TransformerForConditionalGeneration(OriginalTransformerConfig(**TINY)).eval()
    table = model.get_input_embeddings()
    assert isinstance(table, ScaledWordEmbedding) and table.embed_scale == math.sqrt(TINY["hidden_size"])
    ids = torch.randint(3, 99, (2, 6))
    torch.testing.assert_close(table(ids), table.weight[ids] * math.sqrt(TINY["hidden_size"]))
    # one table for both sides, the LM head tied to its (unscaled) weight
    assert model.model.decoder.get_input_embeddings() is table
    assert model.get_output_embeddings().weight is table.weight
    assert_embeds_match_ids(model, ids, torch.randint(3, 99, (2, 4)))


def test_unscaled_config_keeps_the_table_unscaled():
    model = TransformerModel(OriginalTransformerConfig(**TINY, scale_embedding=False)).eval()
    assert model.get_input_embeddings().embed_scale == 1.0
    assert_embeds_match_ids(model, torch.randint(3, 99, (2, 6)), torch.randint(3, 99, (2, 4)))


def test_resize_keeps_the_scaled_module():
    torch.manual_seed(0)
    model = TransformerForConditionalGeneration(OriginalTransformerConfig(**TINY)).eval()
    ids, decoder_ids = torch.randint(3, 99, (2, 6)), torch.randint(3, 99, (2, 4))
    with torch.no_grad():
        before = model(input_ids=ids, decoder_input_ids=decoder_ids).logits
    model.resize_token_embeddings(110)
    table = model.get_input_embeddings()
    assert isinstance(table, ScaledWordEmbedding) and table.num_embeddings == 110
    assert table.embed_scale == math.sqrt(TINY["hidden_size"])
    assert model.model.decoder.get_input_embeddings() is table
    with torch.no_grad():
        after = model(input_ids=ids, decoder_input_ids=decoder_ids).logits
    torch.testing.assert_close(after[..., :99], before)  # the old rows, still scaled the same
    assert_embeds_match_ids(model, ids, torch.tensor([[105, 3, 7, 108], [4, 5, 6, 109]]))
