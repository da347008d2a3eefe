"""RoBERTa input formats and NSP/SOP pairs on >= 10^5 real (Austen) tokens."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hf_variants.objectives import (
    DataCollatorForMaskedLM,
    build_nsp_pairs,
    build_sop_pairs,
    iter_corpus_documents,
    pack_doc_sentences,
    pack_full_sentences,
    pretraining_dataset,
)
from tests.common.austen_data import austen_corpus, austen_documents, austen_tokenizer


def content(example, separator=None):
    """The non-special tokens of an example (optionally keeping document separators)."""
    return [
        t for t, special in zip(example["input_ids"], example["special_tokens_mask"]) if not special or t == separator
    ]


def flat(document):
    return [token for segment in document for token in segment]


@pytest.mark.parametrize("max_length", [64, 512])
def test_doc_sentences_conserves_tokens_and_never_crosses_documents(max_length):
    tokenizer = austen_tokenizer()
    documents = austen_documents()
    examples = list(pack_doc_sentences(iter(documents), tokenizer, max_length))
    assert max(len(e["input_ids"]) for e in examples) <= max_length
    assert all(len(e["input_ids"]) == len(e["token_type_ids"]) == len(e["special_tokens_mask"]) for e in examples)
    # Walk the examples alongside the documents: each document is exactly a run of examples.
    position = 0
    for document in documents:
        tokens, expected = [], flat(document)
        while len(tokens) < len(expected):
            tokens += content(examples[position])
            position += 1
        assert tokens == expected  # in order, nothing dropped, nothing from the next document
    assert position == len(examples)
    assert sum(len(flat(d)) for d in documents) >= 100_000


def test_full_sentences_fills_examples_across_documents():
    tokenizer = austen_tokenizer()
    documents = austen_documents()
    examples = list(pack_full_sentences(iter(documents), tokenizer, 128))
    assert max(len(e["input_ids"]) for e in examples) <= 128
    separator = tokenizer.sep_token_id
    stream = [t for e in examples for t in content(e, separator)]
    # Dropping the separators gives back the corpus, token for token.
    assert [t for t in stream if t != separator] == [t for d in documents for t in flat(d)]
    separators = stream.count(separator)
    assert len(documents) - 1 - separators <= len(examples)  # a boundary at an example edge needs none
    crossing = sum(separator in content(e, separator) for e in examples)
    assert crossing > 0.5 * separators > 0  # examples really do span documents
    # FULL-SENTENCES packs tighter than DOC-SENTENCES.
    doc_examples = list(pack_doc_sentences(iter(documents), tokenizer, 128))
    assert len(examples) < len(doc_examples)
    assert np.mean([len(e["input_ids"]) for e in examples]) > 100  # whole sentences leave a ragged end


def contiguous_in(needle, haystack_bytes):
    return np.asarray(needle, dtype=np.int32).tobytes() in haystack_bytes


@pytest.mark.parametrize("input_format", ["segment-pair", "sentence-pair"])
def test_nsp_pairs_are_balanced_and_true_pairs_are_consecutive(input_format):
    tokenizer = austen_tokenizer()
    documents = austen_documents()
    streams = [np.asarray(flat(d), dtype=np.int32).tobytes() for d in documents]
    examples = list(build_nsp_pairs(documents, tokenizer, 128, input_format=input_format, seed=0))
    labels = np.array([e["next_sentence_label"] for e in examples])
    assert len(examples) > 800
    assert stats.binomtest(int(labels.sum()), len(labels), 0.5).pvalue > 0.01
    assert max(len(e["input_ids"]) for e in examples) <= 128
    consecutive = []
    for example in examples:
        types = np.array(example["token_type_ids"])
        tokens = np.array(example["input_ids"])
        specials = np.array(example["special_tokens_mask"], dtype=bool)
        first, second = tokens[(types == 0) & ~specials], tokens[(types == 1) & ~specials]
        assert len(first) and len(second)
        joined = np.concatenate([first, second]).astype(np.int32).tobytes()
        consecutive.append(any(joined in stream for stream in streams))
    consecutive = np.array(consecutive)
    assert consecutive[labels == 0].all()  # every "is next" pair is contiguous text
    assert consecutive[labels == 1].mean() < 0.01  # random pairs (almost) never are


def test_sop_pairs_are_balanced_and_swapped_pairs_are_reversed():
    tokenizer = austen_tokenizer()
    documents = austen_documents()
    streams = [np.asarray(flat(d), dtype=np.int32).tobytes() for d in documents]
    examples = list(build_sop_pairs(documents, tokenizer, 64, seed=1))
    labels = np.array([e["sentence_order_label"] for e in examples])
    assert len(examples) > 1200
    assert stats.binomtest(int(labels.sum()), len(labels), 0.5).pvalue > 0.01
    for example, label in zip(examples, labels):
        types, tokens = np.array(example["token_type_ids"]), np.array(example["input_ids"])
        specials = np.array(example["special_tokens_mask"], dtype=bool)
        first, second = tokens[(types == 0) & ~specials], tokens[(types == 1) & ~specials]
        in_order = np.concatenate([second, first] if label else [first, second]).astype(np.int32).tobytes()
        assert any(in_order in stream for stream in streams)
        assert len(tokens) <= 64


def test_pretraining_dataset_streams_the_corpus_and_feeds_the_collator():
    tokenizer = austen_tokenizer()
    corpus = austen_corpus().select(range(400))
    full = pretraining_dataset(corpus, tokenizer, "full-sentences", max_length=128)
    assert set(full.column_names) == {"input_ids", "token_type_ids", "special_tokens_mask"}
    total = sum(len(ids) for ids in tokenizer(list(corpus["text"]), add_special_tokens=False)["input_ids"])
    separators = sum(ids.count(tokenizer.sep_token_id) - 1 for ids in full["input_ids"])
    assert sum(len(ids) - 2 for ids in full["input_ids"]) - separators == total
    pairs = pretraining_dataset(corpus, tokenizer, "segment-pair", max_length=128, task="sop")
    assert "sentence_order_label" in pairs.column_names
    batch = DataCollatorForMaskedLM(tokenizer, seed=0)([pairs[i] for i in range(8)])
    assert batch["sentence_order_label"].shape == (8,)
    assert batch["token_type_ids"].max() == 1
    with pytest.raises(ValueError, match="input_format"):
        pretraining_dataset(corpus, tokenizer, "paragraphs")
    with pytest.raises(ValueError, match="does not go with"):
        pretraining_dataset(corpus, tokenizer, "full-sentences", task="nsp")


def test_bad_corpora_raise():
    tokenizer = austen_tokenizer()
    corpus = austen_corpus()
    with pytest.raises(ValueError, match="missing"):
        list(iter_corpus_documents(corpus.remove_columns("document")))
    shuffled = corpus.select([0, 1, 200, 2])  # document 0 rows are interrupted by another document
    with pytest.raises(ValueError, match="not contiguous"):
        list(iter_corpus_documents(shuffled))
    with pytest.raises(ValueError, match="at least two documents"):
        list(build_nsp_pairs(austen_documents()[:1], tokenizer, 128))
    with pytest.raises(ValueError, match="no room"):
        list(pack_full_sentences(iter(austen_documents()[:1]), tokenizer, 3))


def test_template_ignores_padding_and_truncation_stored_in_tokenizer_json():
    from hf_variants.objectives import SpecialTokenTemplate
    from hf_variants.tokenization import train_tokenizer

    tokenizer = train_tokenizer("wordpiece-uncased", austen_corpus()["text"][:300], 500)
    tokenizer.backend_tokenizer.enable_padding(length=128)  # as some shipped tokenizer.json files do
    tokenizer.backend_tokenizer.enable_truncation(max_length=128)
    template = SpecialTokenTemplate(tokenizer)
    assert (template.single_specials, template.pair_specials) == (2, 3)
    built = template.build([10, 11], [12])
    assert built.input_ids == [tokenizer.cls_token_id, 10, 11, tokenizer.sep_token_id, 12, tokenizer.sep_token_id]
    assert built.token_type_ids == [0, 0, 0, 0, 1, 1] and built.special_tokens_mask == [1, 0, 0, 1, 0, 1]
    assert tokenizer.backend_tokenizer.padding is not None  # the tokenizer itself was left alone


def test_roberta_pair_template_from_a_byte_level_bpe_tokenizer():
    from hf_variants.objectives import SpecialTokenTemplate
    from hf_variants.tokenization import train_tokenizer

    tokenizer = train_tokenizer("bpe", austen_corpus()["text"][:300], 500)
    template = SpecialTokenTemplate(tokenizer)
    assert (template.single_specials, template.pair_specials) == (2, 4)
    bos, eos = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert template.build([10], [12]).input_ids == [bos, 10, eos, eos, 12, eos]
    documents = [
        [tokenizer(s, add_special_tokens=False)["input_ids"] for s in austen_corpus()["text"][i : i + 30]]
        for i in (0, 30, 60)
    ]
    examples = list(build_nsp_pairs(documents, tokenizer, 64, seed=0))
    assert examples and all(len(e["input_ids"]) <= 64 and e["input_ids"][0] == bos for e in examples)
    assert all(set(e["token_type_ids"]) == {0} for e in examples)  # RoBERTa has no segment ids
