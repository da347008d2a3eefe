#!/usr/bin/env python
"""Fine-tune an hf-variants encoder for token classification: named entities (seqeval entity
F1), part-of-speech tags or chunks. Same arguments as transformers' ``run_ner.py``::

    accelerate launch examples/run_ner.py --model_name_or_path <MiniLM folder> \\
        --dataset_name hf_variants/wnut16 --do_train --do_eval --output_dir out/wnut
    accelerate launch examples/run_ner.py --model_name_or_path <MiniLM folder> --task_name pos \\
        --dataset_name hf_variants/wsj_pos --label_column_name pos_tags --do_train --do_eval --output_dir out/pos

Words are split into subwords by the fast tokenizer; the first subword of a word carries its
label and the others ``-100`` (ignored), or, with ``--label_all_tokens``, the word's label too
(``B-x`` becomes ``I-x`` after the first subword). Evaluation is per word (the prediction at its
first subword) over every word of every sentence: words cut off by ``--max_seq_length`` count as
predicted ``O``, so truncation can only lower the score (and is reported in the log).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets
import numpy as np
from transformers import (
    AutoModelForTokenClassification,
    DataCollatorForTokenClassification,
    EvalPrediction,
)

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.data.data_files import describe_rows
from hf_variants.metrics import accuracy, seqeval_scores
from hf_variants.training.fine_tuning import max_length_for, report_truncation
from hf_variants.training.labels import encode_labels, label_names

logger = logging.getLogger("hf_variants.examples.run_ner")  # level set by support.setup_logging

IGNORE_INDEX = -100
TASKS = ("ner", "pos", "chunk")
SPAN_PREFIXES = ("B-", "I-", "E-", "S-", "L-", "U-")
PLACEHOLDER_TAG = "O"  # the prediction for words cut off by truncation


@dataclass
class NerDataArguments(support.DataArguments):
    task_name: str = field(
        default="ner", metadata={"help": "ner or chunk (span F1 with seqeval), or pos (token accuracy)."}
    )
    text_column_name: str | None = field(default=None, metadata={"help": "The column of word lists (default: tokens)."})
    label_column_name: str | None = field(
        default=None, metadata={"help": "The column of tag lists (default: <task_name>_tags, e.g. ner_tags)."}
    )
    label_all_tokens: bool = field(
        default=False,
        metadata={"help": "Label every subword with its word's tag (default: only the first, others -100)."},
    )
    return_entity_level_metrics: bool = field(default=False, metadata={"help": "Also report per-entity-type scores."})

    def __post_init__(self) -> None:
        if self.task_name not in TASKS:
            raise ValueError(f"--task_name must be one of {TASKS}, got {self.task_name!r}")
        super().__post_init__()


def check_one_tag_per_word(dataset: datasets.Dataset, text_column: str, label_column: str, split: str) -> None:
    """Each row has as many tags as words (else training would label the wrong words silently)."""
    words, tags = dataset[text_column], dataset[label_column]
    bad = [
        row
        for row, (row_words, row_tags) in enumerate(zip(words, tags))
        if not isinstance(row_tags, list) or len(row_tags) != len(row_words)
    ]
    if bad:
        counts = [(len(words[row]), len(tags[row]) if isinstance(tags[row], list) else tags[row]) for row in bad[:3]]
        raise ValueError(
            f"{split} split: {label_column!r} needs one tag per word of {text_column!r}; (words, tags) "
            f"{counts} at {describe_rows(dataset, bad[:3])}"
            + (f" and {len(bad) - 3} more rows" if len(bad) > 3 else "")
        )


def check_tag_scheme(task_name: str, tag_names: list[str]) -> None:
    """Span tasks need BIO-style tags; say so instead of reporting meaningless entity scores."""
    if task_name == "pos":
        return
    odd = [tag for tag in tag_names if tag != "O" and not tag.startswith(SPAN_PREFIXES)]
    if odd:
        raise ValueError(
            f"--task_name {task_name} scores entity spans, but tags {odd[:10]} have no B-/I- prefix: "
            "use --task_name pos for plain per-token tags"
        )


def begin_to_inside(tag_names: list[str], label2id: dict[str, int]) -> dict[int, int]:
    """Label id of a word's first subword -> id for its later subwords (B-x -> I-x when I-x exists)."""
    mapping = {}
    for tag, index in label2id.items():
        inside = "I-" + tag[2:] if tag.startswith("B-") else None
        mapping[index] = label2id.get(inside, index) if inside else index
    return mapping


def align_labels(
    word_ids: list[int | None], word_labels: list[int], later_subword_label: dict[int, int] | None
) -> list[int]:
    """Per-token labels for one tokenised sentence.

    word_ids: the tokenizer's word index per token (None for special tokens and padding).
    word_labels: one label id per word. later_subword_label: None -> -100 on a word's later
    subwords; else the label they get (``begin_to_inside``). Special tokens always get -100.
    """
    labels = []
    previous = None
    for word in word_ids:
        if word is None:
            labels.append(IGNORE_INDEX)
        elif word != previous:
            labels.append(word_labels[word])
        else:
            labels.append(IGNORE_INDEX if later_subword_label is None else later_subword_label[word_labels[word]])
        previous = word
    return labels


def first_subword_words(word_ids: list[int | None]) -> list[int]:
    """The word index of each word-initial token, in order (what evaluation labels)."""
    return [
        word
        for position, word in enumerate(word_ids)
        if word is not None and (position == 0 or word_ids[position - 1] != word)
    ]


def word_predictions(
    token_predictions: np.ndarray,
    labels: np.ndarray,
    words_of_labelled: list[int],
    num_words: int,
    id2label: dict[int, str],
) -> list[str]:
    """Tags of one sentence's words from its row of token predictions (T,).

    The prediction at each labelled token (the first subword of word ``words_of_labelled[k]``)
    becomes that word's tag; words without a token (cut off by truncation, or characters the
    tokenizer drops) are predicted ``O``.
    """
    tags = [PLACEHOLDER_TAG] * num_words
    positions = np.flatnonzero(labels != IGNORE_INDEX)
    if len(positions) != len(words_of_labelled):
        raise ValueError(f"{len(positions)} labelled tokens but {len(words_of_labelled)} word-initial tokens")
    for position, word in zip(positions, words_of_labelled):
        tags[word] = id2label[int(token_predictions[position])]
    return tags


def word_level_scores(
    task_name: str, true_tags: list[list[str]], predicted_tags: list[list[str]], per_type: bool
) -> dict:
    """POS: token accuracy. NER/chunks: entity precision/recall/F1 (seqeval, IOB2) and token
    accuracy, named as in transformers' run_ner; with ``per_type`` also ``<type>_<score>``."""
    if task_name == "pos":
        flat_true = [tag for sentence in true_tags for tag in sentence]
        flat_predicted = [tag for sentence in predicted_tags for tag in sentence]
        return {"accuracy": accuracy(flat_predicted, flat_true)}
    scores = seqeval_scores(true_tags, predicted_tags)
    results = {name: scores[f"overall_{name}"] for name in ("precision", "recall", "f1", "accuracy")}
    if per_type:
        for entity_type, values in scores.items():
            if isinstance(values, dict):
                results.update({f"{entity_type}_{name}": value for name, value in values.items()})
    return results


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(NerDataArguments, argv)

    raw = support.load_raw_datasets(data_args, model_args)
    splits = support.select_splits(raw, data_args, training_args)
    reference = splits.get("train") or next(iter(splits.values()))
    text_column = data_args.text_column_name or "tokens"
    label_column = data_args.label_column_name or f"{data_args.task_name}_tags"
    for name, dataset in splits.items():
        support.require_columns(
            dataset,
            [text_column, label_column],
            f"{name} token classification",
            text_columns=[text_column],
            split_into_words=True,
        )
        check_one_tag_per_word(dataset, text_column, label_column, name)
    tag_names = label_names(reference, label_column)
    check_tag_scheme(data_args.task_name, tag_names)

    tokenizer = support.load_tokenizer(model_args)
    max_length = max_length_for(tokenizer, data_args.max_seq_length)
    model = support.load_model(
        model_args, AutoModelForTokenClassification, tokenizer, label_names=tag_names, max_seq_length=max_length
    )
    label2id = dict(model.config.label2id)
    id2label = {int(index): tag for index, tag in model.config.id2label.items()}
    later_subword = begin_to_inside(tag_names, label2id) if data_args.label_all_tokens else None
    padding = "max_length" if data_args.pad_to_max_length else False

    def tokenize(batch: dict, label_later_subwords: bool) -> dict:
        encoded = tokenizer(
            batch[text_column], is_split_into_words=True, truncation=True, max_length=max_length, padding=padding
        )
        mapping = later_subword if label_later_subwords else None
        word_ids = [encoded.word_ids(i) for i in range(len(batch[text_column]))]
        encoded["labels"] = [
            align_labels(ids, word_labels, mapping) for ids, word_labels in zip(word_ids, batch["label_ids"])
        ]
        encoded["labelled_words"] = [first_subword_words(ids) for ids in word_ids]
        return encoded

    features: dict[str, datasets.Dataset] = {}
    true_tags: dict[str, list[list[str]]] = {}
    labelled_words: dict[str, list[list[int]]] = {}  # per split and sentence: the word of each labelled token
    for name, dataset in splits.items():
        label_ids = encode_labels(dataset, label_column, label2id, name)
        true_tags[name] = [[id2label[i] for i in row] for row in label_ids]
        dataset = dataset.add_column("label_ids", label_ids)
        report_truncation(tokenizer, name, dataset[text_column], None, max_length, split_into_words=True)
        with training_args.main_process_first(desc=f"tokenizing {name}"):
            # Evaluation always labels first subwords only: it scores words, not subwords.
            mapped = dataset.map(
                tokenize,
                batched=True,
                fn_kwargs={"label_later_subwords": name == "train"},
                remove_columns=dataset.column_names,
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"Tokenizing {name}",
            )
        labelled_words[name] = list(mapped["labelled_words"])
        features[name] = mapped.remove_columns("labelled_words")
        if name != "train":
            report_unlabelled_words(name, labelled_words[name], true_tags[name])

    def predicted_tags(split: str, predictions: np.ndarray | tuple, labels: np.ndarray) -> list[list[str]]:
        # a model returning more than logits (XLNet: its mems) gives a tuple, the logits first (as in run_glue)
        predictions = predictions[0] if isinstance(predictions, tuple) else predictions
        token_predictions = np.argmax(predictions, axis=-1)
        return [
            word_predictions(row, row_labels, words, len(tags), id2label)
            for row, row_labels, words, tags in zip(token_predictions, labels, labelled_words[split], true_tags[split])
        ]

    def metrics_for(split: str):
        def compute(prediction: EvalPrediction) -> dict:
            predicted = predicted_tags(split, prediction.predictions, prediction.label_ids)
            return word_level_scores(
                data_args.task_name, true_tags[split], predicted, data_args.return_entity_level_metrics
            )

        return compute

    trainer = support.build_trainer(
        model,
        training_args,
        features,
        tokenizer,
        DataCollatorForTokenClassification(tokenizer),
        metrics_for("validation") if "validation" in splits else None,
    )
    results = support.train_and_evaluate(trainer, splits, data_args, training_args)
    if training_args.do_predict:
        trainer.compute_metrics = metrics_for("test")
        output = trainer.predict(features["test"], metric_key_prefix="predict")
        results.update(support.save_eval_metrics(trainer, output.metrics, len(splits["test"]), split="predict"))
        predicted = predicted_tags("test", output.predictions, output.label_ids)
        support.write_lines(trainer, "predictions.txt", [" ".join(tags) for tags in predicted])
    return support.finish(trainer, model_args, data_args, "token-classification", results)


def report_unlabelled_words(split: str, labelled_words: list[list[int]], true_tags: list[list[str]]) -> None:
    """Warn about sentences with words that got no token (cut by --max_seq_length, or made only of
    characters the tokenizer drops): those words are scored as predicted 'O'."""
    short = [row for row, (words, tags) in enumerate(zip(labelled_words, true_tags)) if len(words) < len(tags)]
    if short:
        missing = sum(len(true_tags[row]) - len(labelled_words[row]) for row in short)
        logger.warning(
            "%s: %d words in %d of %d sentences have no token (longer than --max_seq_length, or dropped by the "
            "tokenizer); they are scored as predicted 'O' (rows %s ...)",
            split,
            missing,
            len(short),
            len(true_tags),
            short[:5],
        )


if __name__ == "__main__":
    main()
