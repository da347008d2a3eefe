"""Extractive question answering (SQuAD v1/v2) for examples/run_qa.py: answer checks, training
features over a sliding window of long contexts, and a Trainer that scores predictions (the
windowing of evaluation features and the n-best span post-processing are
``hf_variants.integrations.question_answering``'s, shared with the QA pipeline).

A context longer than ``max_seq_length`` is split into overlapping windows ("features"): each
holds the question plus a slice of the context, consecutive slices sharing ``doc_stride``
tokens. A training feature whose window holds the whole answer is labelled with the answer's
first/last token; one that does not (including an answer cut by the window edge) points at the
[CLS] token, position 0, which is also SQuAD v2's "no answer". At prediction time the best span
of all windows of an example wins; for v2 the empty answer wins when the [CLS] score beats the
best span by more than ``null_score_diff_threshold``.
"""

from __future__ import annotations

from collections.abc import Callable

import datasets

from hf_variants.hub.trainer import CheckpointSafeTrainer
from hf_variants.integrations.question_answering import (
    NO_ANSWER_POSITION,
    QaColumns,
    QaPredictions,
    Windowing,
    context_segment_of,
    tokenize_windows,
)


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
            + "; ".join(mismatched[:10])
            + (" ..." if len(mismatched) > 10 else "")
        )
    if unanswerable and not allow_unanswerable:
        raise ValueError(
            f"{split}: {len(unanswerable)} examples have no answer (ids {unanswerable[:10]}): this is SQuAD v2 data, "
            "pass --version_2_with_negative"
        )


def check_question_room(
    examples: datasets.Dataset, tokenizer, columns: QaColumns, windowing: Windowing, split: str
) -> None:
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


def answer_token_span(
    offsets: list[tuple[int, int]], sequence_ids: list[int | None], context_segment: int, start_char: int, end_char: int
) -> tuple[int, int]:
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
    encoded = tokenize_windows(examples, tokenizer, columns, windowing)
    context_segment = context_segment_of(tokenizer)
    encoded["start_positions"], encoded["end_positions"] = [], []
    for feature, example in enumerate(encoded["overflow_to_sample_mapping"]):
        answers = examples[columns.answers][example]
        if not answers["text"]:
            start, end = NO_ANSWER_POSITION, NO_ANSWER_POSITION
        else:
            start_char = answers["answer_start"][0]
            start, end = answer_token_span(
                encoded["offset_mapping"][feature],
                encoded.sequence_ids(feature),
                context_segment,
                start_char,
                start_char + len(answers["text"][0]),
            )
        encoded["start_positions"].append(start)
        encoded["end_positions"].append(end)
    encoded.pop("offset_mapping")
    encoded.pop("overflow_to_sample_mapping")
    return encoded


class QuestionAnsweringTrainer(CheckpointSafeTrainer):
    """Trainer whose ``evaluate``/``predict`` turn window logits into answers and score them.

    ``post_process(examples, features, start_logits, end_logits) -> QaPredictions`` and
    ``score(predictions, examples) -> dict`` are given by the script.
    """

    def __init__(
        self,
        *args,
        eval_examples: datasets.Dataset | None = None,
        post_process: Callable[..., QaPredictions],
        score: Callable[[QaPredictions, datasets.Dataset], dict],
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.eval_examples = eval_examples
        self.post_process = post_process
        self.score = score
        self.last_predictions: QaPredictions | None = None

    def _answers(self, features: datasets.Dataset, examples: datasets.Dataset, prefix: str):
        model_inputs = features.remove_columns(
            [c for c in ("example_id", "offset_mapping") if c in features.column_names]
        )
        output = super().predict(model_inputs, metric_key_prefix=prefix)  # no labels: logits only
        start_logits, end_logits = output.predictions[:2]
        predictions = self.post_process(examples, features, start_logits, end_logits)
        metrics = {f"{prefix}_{key}": value for key, value in self.score(predictions, examples).items()}
        metrics.update(output.metrics)
        return predictions, metrics

    def evaluate(
        self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval", eval_examples=None
    ) -> dict:
        features = eval_dataset if eval_dataset is not None else self.eval_dataset
        examples = eval_examples if eval_examples is not None else self.eval_examples
        predictions, metrics = self._answers(features, examples, metric_key_prefix)
        self.last_predictions = predictions
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics

    def predict_answers(
        self, features: datasets.Dataset, examples: datasets.Dataset, metric_key_prefix: str = "predict"
    ):
        """(QaPredictions, metrics) for a test set."""
        return self._answers(features, examples, metric_key_prefix)
