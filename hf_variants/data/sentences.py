"""A small regex sentence splitter for English prose (no model download).

A sentence ends at ``.``, ``!`` or ``?`` (plus any closing quotes/brackets) followed by whitespace
and a character that can open a sentence (capital letter, digit, opening quote or bracket),
unless the word before the full stop is a known abbreviation ("Mr.", "Gen.", "U.S.") or a single
capital initial ("John F. Kennedy"). It errs on the side of not splitting: a missed boundary
gives a longer "sentence", never a fragment cut mid-name.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset(
    """mr mrs ms messrs dr prof rev st gen col lt capt sgt maj brig adm gov sen rep jr sr hon
    no nos vol vols pp p ch fig figs vs etc al approx ca cf ed eds inc ltd co corp dept est
    jan feb mar apr jun jul aug sep sept oct nov dec mt ft ave""".split()
)
# Candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace, then
# something that can start a sentence.
_BOUNDARY = re.compile(r"""[.!?]+['"’”)\]]*(?=\s+['"‘“(\[]?[A-Z0-9])""")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")


def _is_abbreviation(text_before_stop: str) -> bool:
    match = _WORD_BEFORE.search(text_before_stop)
    if not match:
        return False
    word = match.group(1)
    if len(word) == 1 and word.isupper():
        return True  # an initial: "John F. Kennedy"
    if "." in word:
        return True  # dotted abbreviation: "U.S.", "e.g."
    return word.lower() in _ABBREVIATIONS


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text`` (whitespace excluded).

    ``text[start:end]`` is each sentence exactly as it appears in ``text``.
    """
    spans: list[tuple[int, int]] = []
    start = len(text) - len(text.lstrip())
    for match in _BOUNDARY.finditer(text):
        end = match.end()
        if match.group().startswith(".") and _is_abbreviation(text[start : match.start() + 1]):
            continue
        if end > start:
            spans.append((start, end))
        following = text[end:]
        start = end + len(following) - len(following.lstrip())
    tail = text[start:].rstrip()
    if tail:
        spans.append((start, start + len(tail)))
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as strings (see ``sentence_spans``)."""
    return [text[start:end] for start, end in sentence_spans(text)]
