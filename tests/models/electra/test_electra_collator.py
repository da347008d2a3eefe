"""ELECTRA's masking on >= 10^5 real (Austen) tokens: 15% of the non-special tokens selected (25%
for Large), 85% of them [MASK], 15% unchanged, none replaced by a random token; special tokens and
padding never selected; and the collator's batches drive the joint model."""

from __future__ import annotations

import pytest
import torch

import hf_variants
from hf_variants.objectives import DataCollatorForReplacedTokenDetection
from tests.common.austen_data import austen_examples, austen_tokenizer
from tests.objectives.test_objectives_mlm import corruption_counts


@pytest.mark.parametrize("mlm_probability", [0.15, 0.25])
def test_electra_masking_proportions(mlm_probability):
    collator = DataCollatorForReplacedTokenDetection(austen_tokenizer(), mlm_probability=mlm_probability, seed=0)
    counts = corruption_counts(collator, austen_examples())
    assert counts["candidates"] >= 100_000
    assert abs(counts["selected"] / counts["candidates"] - mlm_probability) < 0.005
    assert counts["random"] == 0  # the generator's samples are the only replacements
    assert abs(counts["mask"] / counts["selected"] - 0.85) < 0.01
    assert abs(counts["unchanged"] / counts["selected"] - 0.15) < 0.01


def test_collated_batches_train_the_joint_model():
    tokenizer = austen_tokenizer()
    config = hf_variants.ElectraConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        embedding_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
    )
    model = hf_variants.ElectraForPreTraining(config).train()
    batch = DataCollatorForReplacedTokenDetection(tokenizer, seed=1)([dict(e) for e in austen_examples()[:4]])
    out = model(**batch)
    selected = batch["labels"] != -100
    assert out.prediction_logits.shape == (int(selected.sum()), len(tokenizer))
    assert torch.equal(out.corrupted_input_ids[~selected], batch["input_ids"][~selected])
    assert (batch["input_ids"][selected] == tokenizer.mask_token_id).any()
    out.loss.backward()
    assert torch.isfinite(out.loss) and out.mlm_loss > 0 and out.discriminator_loss > 0
