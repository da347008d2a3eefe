"""Packed causal LM: no label across documents, positions restart, the mask is block-diagonal
causal, and transformers' GPT-2 (4D mask) and our GPT (attention_bias) on a packed batch equal
each model on each document alone."""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest
import torch

from hf_variants.objectives import (
    DataCollatorForPackedCausalLM,
    causal_lm_dataset,
    document_causal_bias,
    document_causal_mask,
    pack_causal_documents,
)
from tests.common.austen_data import austen_corpus, austen_tokenizer


@functools.lru_cache(maxsize=None)
def paragraphs(count: int = 120) -> tuple:
    """Real Austen paragraphs as token-id documents (of very different lengths)."""
    texts = [t for t in austen_corpus()["text"][:400] if t.strip()][:count]
    return tuple(tuple(ids) for ids in austen_tokenizer()(texts, add_special_tokens=False)["input_ids"] if ids)


def test_packing_fills_rows_and_restarts_positions():
    eos = austen_tokenizer().sep_token_id  # BERT's vocabulary has no EOS: [SEP] stands in
    documents = paragraphs()
    rows = list(pack_causal_documents(documents, max_length=64, eos_token_id=eos))
    assert all(len(row["input_ids"]) == 64 for row in rows[:-1])
    # Nothing lost or reordered: the rows concatenate to the documents, each followed by EOS.
    assert [t for row in rows for t in row["input_ids"]] == [t for doc in documents for t in (*doc, eos)]
    for row in rows:
        ids, positions = np.array(row["document_ids"]), np.array(row["position_ids"])
        assert ids[0] == 0 and (np.diff(ids) >= 0).all() and (np.diff(ids) <= 1).all()
        starts = np.concatenate([[True], ids[1:] != ids[:-1]])
        assert (positions[starts] == 0).all()
        assert (positions[~starts] == positions[np.flatnonzero(~starts) - 1] + 1).all()
    assert max(max(row["document_ids"]) for row in rows) >= 2  # rows really hold several documents


def test_collator_labels_never_cross_documents():
    tokenizer = austen_tokenizer()
    rows = list(pack_causal_documents(paragraphs(), max_length=48, eos_token_id=tokenizer.sep_token_id))
    batch = DataCollatorForPackedCausalLM(tokenizer)(rows[-5:])  # the last row is shorter: padding
    document_ids, labels, input_ids = batch["document_ids"], batch["labels"], batch["input_ids"]
    padding = document_ids == -1
    assert padding.any() and bool((labels[padding] == -100).all())
    assert bool((input_ids[padding] == tokenizer.pad_token_id).all())
    predicted = labels != -100
    assert not bool(predicted[:, 0].any())
    # Label t is predicted at t - 1 (the models shift): both must lie in the same document.
    assert bool((document_ids[:, 1:][predicted[:, 1:]] == document_ids[:, :-1][predicted[:, 1:]]).all())
    starts = torch.ones_like(predicted)
    starts[:, 1:] = document_ids[:, 1:] != document_ids[:, :-1]
    assert bool((predicted == (~starts & ~padding)).all())  # every other real token is predicted
    assert bool((labels[predicted] == input_ids[predicted]).all())
    assert bool((batch["position_ids"][starts & ~padding] == 0).all())
    assert bool((batch["attention_mask"] == (~padding).long()).all())


def test_mask_is_block_diagonal_causal():
    document_ids = torch.tensor([[0, 0, 0, 1, 1, 2, -1, -1], [0, 1, 1, 1, 1, 1, 1, 2]])
    mask = document_causal_mask(document_ids)
    assert mask.shape == (2, 1, 8, 8)
    for b in range(2):
        for i in range(8):
            for j in range(8):
                same_document = document_ids[b, i] == document_ids[b, j] and document_ids[b, j] >= 0
                expected = (same_document and j <= i) or i == j  # a padding query sees itself only
                assert bool(mask[b, 0, i, j]) == expected, (b, i, j)
    bias = document_causal_bias(document_ids, torch.float16)
    assert bias.dtype == torch.float16
    assert bool((bias[mask] == 0).all()) and bool((bias[~mask] == torch.finfo(torch.float16).min).all())


def assert_packed_equals_documents_alone(model, batch: dict, rows: list[dict], tokenizer) -> None:
    """Every document's logits in the packed batch equal the model's logits on it alone, and the
    packed loss is exactly the documents' own next-token losses, nothing across them."""
    with torch.no_grad():
        packed = model(**batch)
        document_ids = DataCollatorForPackedCausalLM(tokenizer)(rows)["document_ids"]
        token_losses = []
        for b in range(len(rows)):
            for document in range(int(document_ids[b].max()) + 1):
                where = torch.nonzero(document_ids[b] == document).flatten()
                alone = model(input_ids=batch["input_ids"][b, where][None])
                torch.testing.assert_close(packed.logits[b, where], alone.logits[0], atol=1e-5, rtol=0)
                logits, targets = alone.logits[0, :-1], batch["input_ids"][b, where][1:]
                token_losses.append(torch.nn.functional.cross_entropy(logits, targets, reduction="none"))
    torch.testing.assert_close(packed.loss, torch.cat(token_losses).mean(), atol=1e-5, rtol=0)


def packed_rows_of_paragraphs(tokenizer) -> list[dict]:
    documents = [doc[:20] for doc in paragraphs()[:9]]
    return list(pack_causal_documents(documents, max_length=40, eos_token_id=tokenizer.sep_token_id))


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_transformers_gpt2_packed_equals_documents_alone(attn_implementation):
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = austen_tokenizer()
    rows = packed_rows_of_paragraphs(tokenizer)
    collator = DataCollatorForPackedCausalLM(tokenizer, attention_mask_4d=True, return_document_ids=False)
    batch = collator(rows)
    assert set(batch) == {"input_ids", "position_ids", "labels", "attention_mask"}
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=64,
        attn_implementation=attn_implementation,
    )
    assert_packed_equals_documents_alone(GPT2LMHeadModel(config).eval(), batch, rows, tokenizer)


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_our_gpt_packed_with_attention_bias_equals_documents_alone(attn_implementation):
    """What run_clm.py trains GPT on: the (B, T) padding mask plus the document mask as attention_bias."""
    from hf_variants import GPTConfig, GPTLMHeadModel

    tokenizer = austen_tokenizer()
    rows = packed_rows_of_paragraphs(tokenizer)
    collator = DataCollatorForPackedCausalLM(tokenizer, return_document_ids=False, return_attention_bias=True)
    batch = collator(rows)
    assert set(batch) == {"input_ids", "position_ids", "labels", "attention_mask", "attention_bias"}
    assert batch["attention_mask"].shape == batch["input_ids"].shape
    config = GPTConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation=attn_implementation,
    )
    assert_packed_equals_documents_alone(GPTLMHeadModel(config).eval(), batch, rows, tokenizer)
    with pytest.raises(ValueError, match="choose one"):
        DataCollatorForPackedCausalLM(tokenizer, attention_mask_4d=True, return_attention_bias=True)


def test_one_document_per_feature_and_dataset_builder():
    tokenizer = austen_tokenizer()
    features = [{"input_ids": list(doc[:15])} for doc in paragraphs()[:3]]
    with pytest.raises(ValueError, match="remove_unused_columns"):
        DataCollatorForPackedCausalLM(tokenizer)(features)
    batch = DataCollatorForPackedCausalLM(tokenizer, one_document_per_feature=True, pad_to_multiple_of=8)(features)
    assert batch["input_ids"].shape[1] % 8 == 0
    for row, feature in enumerate(features):
        n = len(feature["input_ids"])
        assert batch["position_ids"][row, :n].tolist() == list(range(n))
        assert batch["labels"][row, 1:n].tolist() == feature["input_ids"][1:]
    bert = copy.deepcopy(tokenizer)
    bert.eos_token = "[SEP]"
    rows = causal_lm_dataset(austen_corpus().select(range(60)), bert, max_length=32)
    assert len(rows) > 10 and all(len(ids) == 32 for ids in rows["input_ids"][:-1])
    assert rows["input_ids"][0][0] != bert.eos_token_id


def test_bad_inputs():
    tokenizer = austen_tokenizer()
    collator = DataCollatorForPackedCausalLM(tokenizer)
    with pytest.raises(ValueError, match="max_length"):
        list(pack_causal_documents([[5, 6]], max_length=1))
    with pytest.raises(ValueError, match="labels"):
        collator([{"input_ids": [5, 6], "labels": [5, 6]}])
    with pytest.raises(ValueError, match="restart"):
        collator([{"input_ids": [5, 6, 7], "document_ids": [0, 0, 1], "position_ids": [0, 1, 2]}])
    with pytest.raises(ValueError, match=">= 0"):
        collator([{"input_ids": [5, 6, 7], "document_ids": [0, -1, 1]}])
    with pytest.raises(ValueError, match="batch, length"):
        document_causal_mask(torch.zeros(4, dtype=torch.long))
    no_pad = copy.deepcopy(tokenizer)
    no_pad.pad_token = None
    with pytest.raises(ValueError, match="pad"):
        DataCollatorForPackedCausalLM(no_pad)


def test_trainer_takes_the_collator(tmp_path):
    from test_objectives_plm import train_two_steps
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = austen_tokenizer()
    rows = list(pack_causal_documents(paragraphs(), max_length=64, eos_token_id=tokenizer.sep_token_id))
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=64)
    collator = DataCollatorForPackedCausalLM(tokenizer, attention_mask_4d=True, return_document_ids=False)
    # document_ids is not an argument of GPT-2's forward: keep the column for the collator.
    losses = train_two_steps(GPT2LMHeadModel(config), rows[:8], collator, tmp_path, remove_unused_columns=False)
    assert len(losses) == 2 and all(np.isfinite(losses))
