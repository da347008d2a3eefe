"""Text pairs for the sequence-to-sequence scripts (examples/run_translation.py, run_seq2seq.py):
pair checks naming the bad rows, tokenisation (sources with a prefix, targets as labels), decoding
and the generation metrics of ``--predict_with_generate``."""

from __future__ import annotations

from collections.abc import Callable

import datasets
import numpy as np
from transformers import EvalPrediction

from hf_variants.data.data_files import describe_rows
from hf_variants.metrics import sequence_scores
from hf_variants.training.fine_tuning import report_truncation

IGNORE_INDEX = -100  # label positions left out of the loss


def check_pairs(sources: list, targets: list, split: str, dataset: datasets.Dataset) -> None:
    """ValueError naming the first rows of ``dataset`` (file and line for local files) whose source
    or target is not a non-empty string."""
    bad = [
        row
        for row, (source, target) in enumerate(zip(sources, targets))
        if not (isinstance(source, str) and source.strip() and isinstance(target, str) and target.strip())
    ]
    if bad:
        examples = [(sources[row], targets[row]) for row in bad[:3]]
        raise ValueError(
            f"{split} split: {len(bad)} rows have an empty or non-text source or target, e.g. "
            f"{describe_rows(dataset, bad[:3])}: {examples}"
        )


def tokenize_pairs(
    tokenizer,
    sources: list[str],
    targets: list[str],
    prefix: str,
    max_source_length: int,
    max_target_length: int,
    split: str,
) -> datasets.Dataset:
    """Rows of ``input_ids``, ``attention_mask`` (source, with the prefix) and ``labels`` (target
    ids, EOS included). Sources are truncated to ``max_source_length``; training targets to
    ``max_target_length``. Evaluation targets are kept whole, so the scores compare generations
    with the real targets: ``max_target_length`` (the generation limit) only makes longer ones
    misses. How many are affected is logged."""
    sources = [prefix + source for source in sources]
    training = split == "train"
    report_truncation(tokenizer, f"{split} sources", sources, None, max_source_length, argument="--max_source_length")
    report_truncation(
        tokenizer,
        f"{split} targets",
        targets,
        None,
        max_target_length,
        **(
            dict(argument="--max_target_length")
            if training
            else dict(
                argument="the generation limit (--val_max_target_length)",
                consequence="cannot be generated whole: they score as misses",
            )
        ),
    )
    features = dict(tokenizer(sources, max_length=max_source_length, truncation=True))
    features["labels"] = tokenizer(
        text_target=targets, max_length=max_target_length if training else None, truncation=training
    )["input_ids"]
    return datasets.Dataset.from_dict(features)


def decode(tokenizer, token_ids: np.ndarray) -> list[str]:
    """Generated or label ids (B, T), -100 where ignored -> B texts without special tokens."""
    token_ids = np.where(token_ids != IGNORE_INDEX, token_ids, tokenizer.pad_token_id)
    return [text.strip() for text in tokenizer.batch_decode(token_ids, skip_special_tokens=True)]


def generation_metrics(tokenizer) -> Callable[[EvalPrediction], dict[str, float]]:
    """compute_metrics for ``--predict_with_generate``: exact match and token error rate of the
    generated text against the target, word by word (hf_variants.metrics.sequence_scores), and
    the mean generated length in tokens."""

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        generated = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        scores = sequence_scores(decode(tokenizer, generated), decode(tokenizer, prediction.label_ids))
        scores["gen_len"] = float(
            np.mean(np.count_nonzero((generated != tokenizer.pad_token_id) & (generated != IGNORE_INDEX), axis=1))
        )
        return scores

    return compute
