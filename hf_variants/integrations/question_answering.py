"""Extractive question answering shared by ``examples/run_qa.py`` and the
``extractive-question-answering`` pipeline: windows over long contexts and the n-best span search.

A context longer than ``max_seq_length`` is split into overlapping windows ("features"): each
holds the question plus a slice of the context, consecutive slices sharing ``doc_stride``
tokens. At prediction time the best span of all windows of an example wins; for SQuAD v2 the
empty answer wins when the [CLS] score (position 0) beats the best span by more than
``null_score_diff_threshold``.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

import datasets
import numpy as np

NO_ANSWER_POSITION = 0  # the [CLS] token: "no answer" / "answer not in this window"


@dataclass(frozen=True)
class QaColumns:
    question: str = "question"
    context: str = "context"
    answers: str = "answers"  # {"text": [str], "answer_start": [int]}, SQuAD's schema
    id: str = "id"


@dataclass(frozen=True)
class Windowing:
    """How questions and contexts are tokenised into features."""

    max_seq_length: int = 384
    doc_stride: int = 128  # tokens shared by consecutive windows of one context
    pad_to_max_length: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.doc_stride < self.max_seq_length:
            raise ValueError(f"doc_stride ({self.doc_stride}) must be in [0, max_seq_length={self.max_seq_length})")


def tokenize_windows(examples: dict, tokenizer, columns: QaColumns, windowing: Windowing):
    """Question + context windows. Which segment is the context depends on the padding side."""
    questions = [question.lstrip() for question in examples[columns.question]]  # leading blanks waste tokens
    contexts = examples[columns.context]
    pad_on_right = tokenizer.padding_side == "right"
    return tokenizer(
        questions if pad_on_right else contexts,
        contexts if pad_on_right else questions,
        truncation="only_second" if pad_on_right else "only_first",
        max_length=windowing.max_seq_length,
        stride=windowing.doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length" if windowing.pad_to_max_length else False,
    )


def context_segment_of(tokenizer) -> int:
    return 1 if tokenizer.padding_side == "right" else 0


def prepare_validation_features(examples: dict, tokenizer, columns: QaColumns, windowing: Windowing) -> dict:
    """Batched ``datasets.map`` function: windows with ``example_id`` and ``offset_mapping``
    (None outside the context, so post-processing can only pick context spans)."""
    encoded = tokenize_windows(examples, tokenizer, columns, windowing)
    context_segment = context_segment_of(tokenizer)
    encoded["example_id"] = []
    for feature, example in enumerate(encoded.pop("overflow_to_sample_mapping")):
        encoded["example_id"].append(examples[columns.id][example])
        segments = encoded.sequence_ids(feature)
        encoded["offset_mapping"][feature] = [
            offset if segments[position] == context_segment else None
            for position, offset in enumerate(encoded["offset_mapping"][feature])
        ]
    return encoded


@dataclass(frozen=True)
class SpanSearch:
    """Post-processing settings (transformers' run_qa names)."""

    n_best_size: int = 20  # candidate starts and ends per window
    max_answer_length: int = 30  # tokens
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0  # predict "" when null score - best span score > this


@dataclass
class QaPredictions:
    answers: dict[str, str]  # example id -> predicted text ("" = no answer)
    n_best: dict[str, list[dict]]  # example id -> candidates with text, score, probability
    null_score_diff: dict[str, float]  # example id -> null score - best span score (v2 only)


def _window_candidates(
    start_logits: np.ndarray, end_logits: np.ndarray, offsets: list, context: str, search: SpanSearch
) -> list[dict]:
    """Valid spans of one window among its top ``n_best_size`` starts x ends."""
    top_starts = np.argsort(start_logits)[::-1][: search.n_best_size]
    top_ends = np.argsort(end_logits)[::-1][: search.n_best_size]
    candidates = []
    for start in top_starts:
        for end in top_ends:
            if start >= len(offsets) or end >= len(offsets) or offsets[start] is None or offsets[end] is None:
                continue  # padding, the question, or special tokens
            if end < start or end - start + 1 > search.max_answer_length:
                continue
            first_char, last_char = offsets[start][0], offsets[end][1]
            candidates.append(
                {
                    "text": context[first_char:last_char],
                    "start": int(first_char),
                    "end": int(last_char),
                    "score": float(start_logits[start] + end_logits[end]),
                    "start_logit": float(start_logits[start]),
                    "end_logit": float(end_logits[end]),
                }
            )
    return candidates


def postprocess_qa_predictions(
    examples: datasets.Dataset,
    features: datasets.Dataset,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    search: SpanSearch,
    columns: QaColumns = QaColumns(),
) -> QaPredictions:
    """Answer text per example from the window logits.

    start_logits, end_logits: (num_features, T) in the order of ``features`` (which has
    ``example_id`` and ``offset_mapping``); T may exceed a window's length (padding across batches).
    """
    if len(start_logits) != len(features):
        raise ValueError(f"{len(start_logits)} rows of logits for {len(features)} features")
    features_of_example = collections.defaultdict(list)
    for index, example_id in enumerate(list(features["example_id"])):
        features_of_example[example_id].append(index)
    offsets_of_feature = list(features["offset_mapping"])
    result = QaPredictions({}, {}, {})
    for example in examples.select_columns([columns.id, columns.context]):
        example_id, context = example[columns.id], example[columns.context]
        candidates, null_score = [], None
        for feature in features_of_example[example_id]:
            feature_null = float(start_logits[feature][NO_ANSWER_POSITION] + end_logits[feature][NO_ANSWER_POSITION])
            null_score = feature_null if null_score is None else min(null_score, feature_null)
            candidates += _window_candidates(
                start_logits[feature], end_logits[feature], offsets_of_feature[feature], context, search
            )
        if null_score is None:
            raise ValueError(f"example {example_id!r} has no features: was it tokenised?")
        candidates = sorted(candidates, key=lambda c: c["score"], reverse=True)[: search.n_best_size]
        best_span = candidates[0] if candidates else None
        if search.version_2_with_negative:
            candidates.append(
                {"text": "", "start": 0, "end": 0, "score": null_score, "start_logit": None, "end_logit": None}
            )
            candidates.sort(key=lambda c: c["score"], reverse=True)
        if not candidates:
            candidates = [{"text": "", "start": 0, "end": 0, "score": 0.0, "start_logit": None, "end_logit": None}]
        scores = np.array([c["score"] for c in candidates])
        probabilities = np.exp(scores - scores.max())
        for candidate, probability in zip(candidates, probabilities / probabilities.sum()):
            candidate["probability"] = float(probability)
        result.n_best[example_id] = candidates
        if best_span is None:
            result.answers[example_id] = ""
        elif search.version_2_with_negative:
            difference = null_score - best_span["score"]
            result.null_score_diff[example_id] = difference
            result.answers[example_id] = "" if difference > search.null_score_diff_threshold else best_span["text"]
        else:
            result.answers[example_id] = best_span["text"]
    return result
