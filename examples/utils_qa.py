"""Extractive question answering (SQuAD v1/v2): answer checks, feature creation with a sliding
window over long contexts, n-best span post-processing, and a Trainer that scores predictions.

A context longer than ``max_seq_length`` is split into overlapping windows ("features"): each
holds the question plus a slice of the context, consecutive slices sharing ``doc_stride``
tokens. A training feature whose window holds the whole answer is labelled with the answer's
first/last token; one that does not (including an answer cut by the window edge) points at the
[CLS] token, position 0, which is also SQuAD v2's "no answer". At prediction time the best span
of all windows of an example wins; for v2 the empty answer wins when the [CLS] score beats the
best span by more than ``null_score_diff_threshold``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass

import datasets
import numpy as np
from hf_variants.hub.trainer import CheckpointSafeTrainer


NO_ANSWER_POSITION = 0  # the [CLS] token: "no answer" / "answer not in this window"


@dataclass(frozen=True)
class QaColumns:
    question: str = "question"
    context: str = "context"
    answers: str = "answers"  # {"text": [str], "answer_start": [int]}, SQuAD's schema
    id: str = "id"


def check_answers(dataset: datasets.Dataset, columns: QaColumns, allow_unanswerable: bool, split: str) -> None:
    """ValueError for answers that are not the context text at ``answer_start`` (with their ids),
    and for unanswerable examples when the data is meant to be SQuAD v1."""
    mismatched, unanswerable = [], []
    for row in dataset.select_columns([columns.id, columns.context, columns.answers]):
        texts, starts = row[columns.answers]["text"], row[columns.answers]["answer_start"]
        if len(texts) != len(starts):
            mismatched.append(f"{row[columns.id]} ({len(texts)} texts but {len(starts)} starts)")
            continue
        if not texts:
            unanswerable.append(row[columns.id])
        for text, start in zip(texts, starts):
            found = row[columns.context][start : start + len(text)] if start >= 0 else None
            if not text or found != text:
                mismatched.append(f"{row[columns.id]} (answer {text!r} at {start}, context there {found!r})")
    if mismatched:
        raise ValueError(
            f"{split}: {len(mismatched)} answers do not match the context text at their answer_start: "
            + "; ".join(mismatched[:10]) + (" ..." if len(mismatched) > 10 else "")
        )
    if unanswerable and not allow_unanswerable:
        raise ValueError(
            f"{split}: {len(unanswerable)} examples have no answer (ids {unanswerable[:10]}): this is SQuAD v2 data, "
            "pass --version_2_with_negative"
        )


@dataclass(frozen=True)
class Windowing:
    """How questions and contexts are tokenised into features."""

    max_seq_length: int = 384
    doc_stride: int = 128  # tokens shared by consecutive windows of one context
    pad_to_max_length: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.doc_stride < self.max_seq_length:
            raise ValueError(f"doc_stride ({self.doc_stride}) must be in [0, max_seq_length={self.max_seq_length})")


def check_question_room(examples: datasets.Dataset, tokenizer, columns: QaColumns, windowing: Windowing, split: str) -> None:
    """ValueError naming the questions so long that a window has no more than ``doc_stride``
    context tokens left (the window could not advance through the context)."""
    questions = [question.lstrip() for question in examples[columns.question]]
    lengths = [len(ids) for ids in tokenizer(questions, add_special_tokens=False)["input_ids"]]
    room = windowing.max_seq_length - tokenizer.num_special_tokens_to_add(pair=True)
    too_long = [row for row, length in enumerate(lengths) if room - length <= windowing.doc_stride]
    if too_long:
        ids = examples.select(too_long[:10])[columns.id]
        longest = max(lengths[row] for row in too_long)
        raise ValueError(
            f"{split}: {len(too_long)} questions (ids {list(ids)}) leave at most doc_stride={windowing.doc_stride} context "
            f"tokens in a window of max_seq_length={windowing.max_seq_length} (longest question: {longest} tokens): "
            "raise --max_seq_length or lower --doc_stride"
        )


def _tokenize_windows(examples: dict, tokenizer, columns: QaColumns, windowing: Windowing):
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


def _context_segment(tokenizer) -> int:
    return 1 if tokenizer.padding_side == "right" else 0


def answer_token_span(offsets: list[tuple[int, int]], sequence_ids: list[int | None], context_segment: int,
                      start_char: int, end_char: int) -> tuple[int, int]:
    """(first, last) token of the answer characters [start_char, end_char) in one window, or
    (0, 0) when the window does not hold the whole answer."""
    context_tokens = [i for i, segment in enumerate(sequence_ids) if segment == context_segment]
    first, last = context_tokens[0], context_tokens[-1]
    if offsets[first][0] > start_char or offsets[last][1] < end_char:
        return NO_ANSWER_POSITION, NO_ANSWER_POSITION
    start = first
    while start <= last and offsets[start][1] <= start_char:  # skip tokens ending before the answer
        start += 1
    end = last
    while end >= first and offsets[end][0] >= end_char:  # skip tokens starting after it
        end -= 1
    return start, end


def prepare_train_features(examples: dict, tokenizer, columns: QaColumns, windowing: Windowing) -> dict:
    """Batched ``datasets.map`` function: windows with ``start_positions``/``end_positions`` (the
    first answer; the [CLS] position 0 when the window misses it or there is none)."""
    encoded = _tokenize_windows(examples, tokenizer, columns, windowing)
    context_segment = _context_segment(tokenizer)
    encoded["start_positions"], encoded["end_positions"] = [], []
    for feature, example in enumerate(encoded["overflow_to_sample_mapping"]):
        answers = examples[columns.answers][example]
        if not answers["text"]:
            start, end = NO_ANSWER_POSITION, NO_ANSWER_POSITION
        else:
            start_char = answers["answer_start"][0]
            start, end = answer_token_span(
                encoded["offset_mapping"][feature], encoded.sequence_ids(feature), context_segment,
                start_char, start_char + len(answers["text"][0]),
            )
        encoded["start_positions"].append(start)
        encoded["end_positions"].append(end)
    encoded.pop("offset_mapping")
    encoded.pop("overflow_to_sample_mapping")
    return encoded


def prepare_validation_features(examples: dict, tokenizer, columns: QaColumns, windowing: Windowing) -> dict:
    """Batched ``datasets.map`` function: windows with ``example_id`` and ``offset_mapping``
    (None outside the context, so post-processing can only pick context spans)."""
    encoded = _tokenize_windows(examples, tokenizer, columns, windowing)
    context_segment = _context_segment(tokenizer)
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


def _window_candidates(start_logits: np.ndarray, end_logits: np.ndarray, offsets: list, context: str,
                       search: SpanSearch) -> list[dict]:
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
                {"text": context[first_char:last_char], "score": float(start_logits[start] + end_logits[end]),
                 "start_logit": float(start_logits[start]), "end_logit": float(end_logits[end])}
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
            candidates += _window_candidates(start_logits[feature], end_logits[feature], offsets_of_feature[feature], context, search)
        if null_score is None:
            raise ValueError(f"example {example_id!r} has no features: was it tokenised?")
        candidates = sorted(candidates, key=lambda c: c["score"], reverse=True)[: search.n_best_size]
        best_span = candidates[0] if candidates else None
        if search.version_2_with_negative:
            candidates.append({"text": "", "score": null_score, "start_logit": None, "end_logit": None})
            candidates.sort(key=lambda c: c["score"], reverse=True)
        if not candidates:
            candidates = [{"text": "", "score": 0.0, "start_logit": None, "end_logit": None}]
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


class QuestionAnsweringTrainer(CheckpointSafeTrainer):
    """Trainer whose ``evaluate``/``predict`` turn window logits into answers and score them.

    ``post_process(examples, features, start_logits, end_logits) -> QaPredictions`` and
    ``score(predictions, examples) -> dict`` are given by the script.
    """

    def __init__(self, *args, eval_examples: datasets.Dataset | None = None,
                 post_process: Callable[..., QaPredictions], score: Callable[[QaPredictions, datasets.Dataset], dict], **kwargs):
        super().__init__(*args, **kwargs)
        self.eval_examples = eval_examples
        self.post_process = post_process
        self.score = score
        self.last_predictions: QaPredictions | None = None

    def _answers(self, features: datasets.Dataset, examples: datasets.Dataset, prefix: str):
        model_inputs = features.remove_columns([c for c in ("example_id", "offset_mapping") if c in features.column_names])
        output = super().predict(model_inputs, metric_key_prefix=prefix)  # no labels: logits only
        start_logits, end_logits = output.predictions[:2]
        predictions = self.post_process(examples, features, start_logits, end_logits)
        metrics = {f"{prefix}_{key}": value for key, value in self.score(predictions, examples).items()}
        metrics.update(output.metrics)
        return predictions, metrics

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval", eval_examples=None) -> dict:
        features = eval_dataset if eval_dataset is not None else self.eval_dataset
        examples = eval_examples if eval_examples is not None else self.eval_examples
        predictions, metrics = self._answers(features, examples, metric_key_prefix)
        self.last_predictions = predictions
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics

    def predict_answers(self, features: datasets.Dataset, examples: datasets.Dataset, metric_key_prefix: str = "predict"):
        """(QaPredictions, metrics) for a test set."""
        return self._answers(features, examples, metric_key_prefix)
