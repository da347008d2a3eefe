"""Packed documents through ``document_ids``: one padding-free sequence per document, exactly the
block-diagonal attention of ``attention_bias=document_causal_bias(...)`` and of each document alone."""

import pytest
import torch

import hf_variants
from hf_variants.modules.padding import UnpaddedBatch
from hf_variants.objectives import DataCollatorForPackedCausalLM
from hf_variants.objectives.clm import document_causal_bias, pack_causal_documents


class _PadTokenizer:
    pad_token_id, eos_token_id = 0, 1


def tiny_gpt(seed: int = 0) -> hf_variants.GPTLMHeadModel:
    torch.manual_seed(seed)
    config = hf_variants.GPTConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        bos_token_id=1,
        eos_token_id=1,
    )
    return hf_variants.GPTLMHeadModel(config).eval()


def packed_batch(lengths=(5, 9, 2, 12, 4, 7, 2), max_length: int = 16, seed: int = 3):
    generator = torch.Generator().manual_seed(seed)
    documents = [torch.randint(2, 99, (n,), generator=generator).tolist() for n in lengths]
    rows = list(pack_causal_documents(documents, max_length))  # no document is split across rows
    return documents, DataCollatorForPackedCausalLM(_PadTokenizer())(rows)


def test_unpadded_batch_from_document_ids_has_one_sequence_per_document():
    ids = torch.tensor([[0, 0, 1, 1, 1, -1], [0, 1, 1, 2, -1, -1]])
    unpadded = UnpaddedBatch.from_document_ids(ids)
    assert unpadded.cu_seqlens.tolist() == [0, 2, 5, 6, 8, 9]
    assert unpadded.indices.tolist() == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="document_ids must be"):
        UnpaddedBatch.from_document_ids(ids[0])


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
def test_document_ids_match_the_document_bias_and_each_document_alone(backend):
    model = tiny_gpt()
    model.config._attn_implementation = backend
    documents, batch = packed_batch()
    document_ids = batch.pop("document_ids")
    with torch.no_grad():
        packed = model(**batch, document_ids=document_ids)
        biased = model(**{**batch, "attention_bias": document_causal_bias(document_ids)})
    real = document_ids >= 0
    torch.testing.assert_close(packed.logits[real], biased.logits[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(packed.loss, biased.loss, atol=1e-6, rtol=0)
    # Each document alone (its own positions from 0) gives the packed document's logits.
    alone = torch.cat([model(torch.tensor([doc]), use_cache=False).logits[0] for doc in documents])
    torch.testing.assert_close(packed.logits[real], alone, atol=1e-5, rtol=0)


def test_document_ids_gradients_match_the_document_bias():
    documents, batch = packed_batch()
    document_ids = batch.pop("document_ids")
    grads = []
    for extra in ({"document_ids": document_ids}, {"attention_bias": document_causal_bias(document_ids)}):
        model = tiny_gpt()
        model(**batch, **extra).loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=0)


def test_document_ids_with_a_cache_raise():
    model = tiny_gpt()
    _, batch = packed_batch()
    cache = model(batch["input_ids"][:, :4], use_cache=True).past_key_values
    with pytest.raises(ValueError, match="document_ids describe the new tokens only"):
        model(batch["input_ids"][:, 4:6], past_key_values=cache, document_ids=batch["document_ids"][:, 4:6])


def test_packing_whole_documents_starts_a_new_row_instead_of_splitting():
    rows = list(pack_causal_documents([[5] * 6, [6] * 5, [7] * 4, [8] * 8], max_length=10, split_documents=False))
    assert [row["input_ids"] for row in rows] == [[5] * 6, [6] * 5 + [7] * 4, [8] * 8]
    assert rows[1]["document_ids"] == [0] * 5 + [1] * 4 and rows[1]["position_ids"] == [0, 1, 2, 3, 4, 0, 1, 2, 3]
    with pytest.raises(ValueError, match="document 1 has 11 tokens"):
        list(pack_causal_documents([[5], [6] * 10], max_length=10, eos_token_id=1, split_documents=False))
