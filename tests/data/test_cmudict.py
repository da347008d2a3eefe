"""The CMU Pronouncing Dictionary as grapheme-to-phoneme pairs, and the word-level scores of
generated text (exact match, token error rate) the sequence-to-sequence scripts report."""

from __future__ import annotations

import pytest

from hf_variants.data import load_cmudict, load_named_dataset
from hf_variants.data.pronunciation import CMUDICT_WORDS, parse_cmudict
from hf_variants.metrics import edit_distance, sequence_scores


@pytest.fixture(scope="module")
def cmudict():
    return load_cmudict()


def test_split_by_word_with_the_first_pronunciation(cmudict):
    sizes = {split: len(cmudict[split]) for split in cmudict}
    assert sizes == {"train": 100_842, "validation": 12_605, "test": 12_605}
    assert sum(sizes.values()) == CMUDICT_WORDS
    words = {split: set(cmudict[split]["word"]) for split in cmudict}
    assert len(words["train"]) == sizes["train"]  # one row per word
    assert not words["train"] & words["test"] and not words["train"] & words["validation"]
    rows = {row["word"]: row for split in ("train", "validation", "test") for row in cmudict[split]}
    # "tomato" has two pronunciations in the file; the first one is kept. "aalborg" carries a comment.
    assert rows["tomato"]["phonemes"] == "T AH0 M EY1 T OW2"
    assert rows["aalborg"]["phonemes"] == "AO1 L B AO0 R G"
    assert rows["phoneme"]["translation"] == {"graphemes": "phoneme", "phonemes": "F OW1 N IY0 M"}
    assert load_named_dataset("hf_variants/cmudict")["test"]["word"][:5] == cmudict["test"]["word"][:5]


def test_parse_keeps_alternatives_under_the_headword_and_drops_comments():
    entries = parse_cmudict(
        "tomato T AH0 M EY1 T OW2\ntomato(2) T AH0 M AA1 T OW2\naalen AE1 L AH0 N # place, german\n"
    )
    assert entries == [("tomato", "T AH0 M EY1 T OW2"), ("tomato", "T AH0 M AA1 T OW2"), ("aalen", "AE1 L AH0 N")]
    with pytest.raises(RuntimeError, match="line 1"):
        parse_cmudict("lonely\n")


def test_edit_distance_and_sequence_scores():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance([], ["a", "b"]) == 2
    assert edit_distance(["HH", "AH0", "L", "OW1"], ["HH", "AH0", "L", "OW1"]) == 0
    scores = sequence_scores(["HH AH0 L OW1", "W ER1 L", "positive"], ["HH AH0 L OW1", "W ER1 L D", "negative"])
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["token_error_rate"] == pytest.approx(100 * 2 / 9)  # one deletion + one substitution of 9 tokens
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        sequence_scores(["a", "b"], ["a"])
