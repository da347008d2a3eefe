"""The tokenize-once cache: rows built from cached token ids equal `pretraining_dataset`'s, each
cache entry is built once and reused, and a document-per-row corpus becomes paragraph rows."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from hf_variants.objectives import pretraining_dataset
from hf_variants.objectives.tokenized import (
    cached_tokenizer,
    corpus_fingerprint,
    packed_dataset,
    paragraph_rows,
    tokenize_corpus,
)
from tests.common.austen_data import austen_corpus, austen_tokenizer


def first_documents(count: int) -> datasets.Dataset:
    corpus = austen_corpus()
    ids = np.asarray(corpus["document"][:5000])
    return corpus.select(np.flatnonzero(ids < np.unique(ids)[count]))


@pytest.mark.parametrize(
    "input_format, task",
    [("full-sentences", None), ("doc-sentences", None), ("segment-pair", "nsp"), ("sentence-pair", "sop")],
)
def test_rows_from_cached_tokens_equal_the_direct_build(tmp_path, input_format, task):
    text, tokenizer = first_documents(4), austen_tokenizer()
    tokenized = tokenize_corpus(text, tokenizer, tmp_path)
    cached = packed_dataset(tokenized, tokenizer, input_format, 96, tmp_path, task=task, seed=5)
    direct = pretraining_dataset(text, tokenizer, input_format, 96, task=task, seed=5)
    assert len(cached) == len(direct) > 10
    assert cached.to_dict() == direct.to_dict()
    assert cached.features["input_ids"].feature.dtype == "int32"  # half the bytes of the default int64


def test_each_entry_is_built_once_and_memory_mapped(tmp_path):
    text, tokenizer = first_documents(2), austen_tokenizer()
    tokenized = tokenize_corpus(text, tokenizer, tmp_path)
    assert isinstance(tokenized.tokens, np.memmap) and tokenized.tokens.dtype == np.int32
    assert len(tokenized) == 2 and tokenized.segment_ends[-1] == tokenized.tokens.size
    first = packed_dataset(tokenized, tokenizer, "full-sentences", 64, tmp_path)
    entries = sorted(p.name for p in tmp_path.iterdir())
    (tmp_path / entries[0] / "marker").write_text("x")  # a rebuild would replace the folder
    again = packed_dataset(tokenize_corpus(text, tokenizer, tmp_path), tokenizer, "full-sentences", 64, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == entries and (tmp_path / entries[0] / "marker").exists()
    assert again["input_ids"] == first["input_ids"]
    assert first.cache_files  # read from the Arrow file, not held in memory
    # Another length is another entry; the tokens are shared.
    packed_dataset(tokenized, tokenizer, "full-sentences", 128, tmp_path)
    assert len(list(tmp_path.iterdir())) == len(entries) + 1


def test_the_tokenizer_is_trained_once_per_corpus_kind_and_size(tmp_path):
    text = first_documents(3)
    calls = []

    def train():
        from hf_variants.tokenization import train_tokenizer

        calls.append(1)
        return train_tokenizer("wordpiece-uncased", text["text"], 300)

    fingerprint = corpus_fingerprint(text)
    first = cached_tokenizer(train, fingerprint, "wordpiece-uncased", 300, tmp_path, model_max_length=64)
    second = cached_tokenizer(train, fingerprint, "wordpiece-uncased", 300, tmp_path, model_max_length=64)
    assert len(calls) == 1 and first.get_vocab() == second.get_vocab() and second.model_max_length == 64
    cached_tokenizer(train, fingerprint, "wordpiece-uncased", 400, tmp_path)
    assert len(calls) == 2
    assert corpus_fingerprint(first_documents(2)) != fingerprint


def test_document_per_row_corpora_become_paragraph_rows():
    documents = datasets.Dataset.from_dict({"text": ["First para\nwrapped.\n\nSecond one.", "Only\nlines", "  "]})
    rows = paragraph_rows(documents)
    assert rows["document"] == [0, 0, 1, 1] and rows["text"] == ["First para wrapped.", "Second one.", "Only", "lines"]
    with pytest.raises(ValueError, match="'text' column"):
        paragraph_rows(datasets.Dataset.from_dict({"body": ["x"]}))
