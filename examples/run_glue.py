#!/usr/bin/env python
"""Fine-tune an hf-variants encoder for sequence classification: GLUE tasks, our offline real data
(``--dataset_name hf_variants/rt_polarity``), any Hub dataset or local csv/json files.

Same arguments as transformers' ``run_glue.py``; for example::

    accelerate launch examples/run_glue.py --model_name_or_path <MiniLM folder> \\
        --dataset_name hf_variants/rt_polarity --do_train --do_eval --output_dir out/rt

GLUE by name (needs the Hub): ``--task_name mnli`` evaluates on matched and mismatched
validation sets (``eval_accuracy`` and ``eval_accuracy_mm``), ``--task_name stsb`` is regression.
Single sentences and pairs are read from the task's columns, or from ``--text_column_names``
(default: ``sentence1,sentence2`` when present, else ``sentence`` or ``text``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets
import numpy as np
from transformers import (
    AutoModelForSequenceClassification,
    DataCollatorWithPadding,
    EvalPrediction,
    Trainer,
    default_data_collator,
)

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.metrics import accuracy, f1, glue_metrics, pearson_and_spearman
from hf_variants.training.fine_tuning import max_length_for, report_truncation
from hf_variants.training.labels import encode_labels, label_names, regression_targets

GLUE_TASK_COLUMNS = {
    "cola": ("sentence", None),
    "mnli": ("premise", "hypothesis"),
    "mrpc": ("sentence1", "sentence2"),
    "qnli": ("question", "sentence"),
    "qqp": ("question1", "question2"),
    "rte": ("sentence1", "sentence2"),
    "sst2": ("sentence", None),
    "stsb": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
}
GLUE_HUB_DATASET = "nyu-mll/glue"
HIDDEN_LABEL = -1  # GLUE test sets carry label -1


@dataclass
class GlueDataArguments(support.DataArguments):
    task_name: str | None = field(
        default=None, metadata={"help": f"A GLUE task ({', '.join(GLUE_TASK_COLUMNS)}): picks columns and metric."}
    )
    text_column_names: str | None = field(
        default=None, metadata={"help": "One or two comma-separated text columns (default: from the task or the data)."}
    )
    label_column_name: str = field(default="label", metadata={"help": "The label column."})

    def __post_init__(self) -> None:
        if self.task_name is not None:
            self.task_name = self.task_name.lower()
            if self.task_name not in GLUE_TASK_COLUMNS:
                raise ValueError(f"unknown GLUE task {self.task_name!r}; choose from {', '.join(GLUE_TASK_COLUMNS)}")
            if self.dataset_name is None and not any((self.train_file, self.validation_file, self.test_file)):
                self.dataset_name, self.dataset_config_name = GLUE_HUB_DATASET, self.task_name
        super().__post_init__()


def text_columns(data_args: GlueDataArguments, dataset: datasets.Dataset) -> tuple[str, str | None]:
    """(first, second or None) text columns, checked to exist."""
    if data_args.text_column_names is not None:
        names = [name.strip() for name in data_args.text_column_names.split(",") if name.strip()]
        if not 1 <= len(names) <= 2:
            raise ValueError(f"--text_column_names takes one or two columns, got {data_args.text_column_names!r}")
        columns = (names[0], names[1] if len(names) == 2 else None)
    elif data_args.task_name is not None:
        columns = GLUE_TASK_COLUMNS[data_args.task_name]
    elif {"sentence1", "sentence2"} <= set(dataset.column_names):
        columns = ("sentence1", "sentence2")
    else:
        single = [name for name in ("sentence", "text") if name in dataset.column_names]
        if not single:
            raise ValueError(
                f"cannot tell the text columns: the data has {dataset.column_names}; expected 'sentence1'+'sentence2', "
                "'sentence' or 'text' (or pass --text_column_names)"
            )
        columns = (single[0], None)
    return columns


def is_regression_task(data_args: GlueDataArguments, dataset: datasets.Dataset) -> bool:
    if data_args.task_name is not None:
        return data_args.task_name == "stsb"
    feature = dataset.features[data_args.label_column_name]
    return isinstance(feature, datasets.Value) and feature.dtype.startswith("float")


def metric_function(task_name: str | None, is_regression: bool, num_labels: int):
    """compute_metrics for Trainer: GLUE's metric for a GLUE task, else accuracy (+ F1 for two
    classes) or, for regression, MSE with Pearson/Spearman."""

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        labels = prediction.label_ids
        predictions = np.squeeze(logits, axis=-1) if is_regression else np.argmax(logits, axis=-1)
        if task_name is not None:
            return glue_metrics(task_name, predictions, labels)
        if is_regression:
            return {"mse": float(np.mean((predictions - labels) ** 2)), **pearson_and_spearman(predictions, labels)}
        scores = {"accuracy": accuracy(predictions, labels)}
        if num_labels == 2:
            scores["f1"] = f1(predictions, labels)
        return scores

    return compute


def evaluation_splits(task_name: str | None, prefix: str) -> list[tuple[str, str]]:
    """(split, metric suffix) pairs: MNLI has matched and mismatched sets."""
    if task_name == "mnli":
        return [(f"{prefix}_matched", ""), (f"{prefix}_mismatched", "_mm")]
    return [(prefix, "")]


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(GlueDataArguments, argv)

    raw = support.load_raw_datasets(data_args, model_args)
    label_column = data_args.label_column_name
    validation_splits = dict(evaluation_splits(data_args.task_name, "validation"))  # split -> metric suffix
    test_splits = dict(evaluation_splits(data_args.task_name, "test"))
    splits = support.select_splits(raw, data_args, training_args, validation_splits, test_splits)
    reference = splits.get("train") or next(iter(splits.values()))
    first, second = text_columns(data_args, reference)
    for split, dataset in splits.items():
        needs_label = not split.startswith("test")
        support.require_columns(
            dataset,
            [first, second, label_column if needs_label else None],
            f"{split} sequence classification",
            text_columns=[first, second],
        )
    if label_column not in reference.column_names:
        raise ValueError(
            f"the data has no label column {label_column!r} (columns: {reference.column_names}): pass --label_column_name"
        )
    is_regression = is_regression_task(data_args, reference)
    names = None if is_regression else label_names(reference, label_column)
    if not is_regression and len(names) < 2:
        raise ValueError(f"classification needs at least two classes; {label_column!r} has only {names}")

    tokenizer = support.load_tokenizer(model_args)
    max_length = max_length_for(tokenizer, data_args.max_seq_length)
    overrides = (
        {"num_labels": 1, "problem_type": "regression"}
        if is_regression
        else {"problem_type": "single_label_classification"}
    )
    model = support.load_model(
        model_args,
        AutoModelForSequenceClassification,
        tokenizer,
        label_names=names,
        max_seq_length=max_length,
        **overrides,
    )
    label2id = None if is_regression else dict(model.config.label2id)
    padding = "max_length" if data_args.pad_to_max_length else False

    def tokenize(batch: dict) -> dict:
        texts = (batch[first],) if second is None else (batch[first], batch[second])
        return tokenizer(*texts, padding=padding, max_length=max_length, truncation=True)

    features: dict[str, datasets.Dataset] = {}
    for split, dataset in splits.items():
        if label_column in dataset.column_names:
            if is_regression:
                labels = regression_targets(dataset, label_column, split)
            else:
                hidden = HIDDEN_LABEL if split.startswith("test") else None
                labels = encode_labels(dataset, label_column, label2id, split, hidden_label=hidden)
            # A test split is scored too when every row has its label (GLUE's test sets hide theirs: -1).
            if not split.startswith("test") or HIDDEN_LABEL not in labels:
                dataset = dataset.add_column("labels", labels)
        report_truncation(tokenizer, split, dataset[first], dataset[second] if second else None, max_length)
        with training_args.main_process_first(desc=f"tokenizing {split}"):
            features[split] = dataset.map(
                tokenize,
                batched=True,
                remove_columns=[c for c in dataset.column_names if c != "labels"],
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"Tokenizing {split}",
            )

    collator = default_data_collator if data_args.pad_to_max_length else DataCollatorWithPadding(tokenizer)
    trainer = support.build_trainer(
        model,
        training_args,
        features,
        tokenizer,
        collator,
        metric_function(data_args.task_name, is_regression, model.config.num_labels),
        eval_split=next(iter(validation_splits)),
    )

    results: dict = {}
    if training_args.do_train:
        results.update(support.train_and_save(trainer, splits["train"], data_args, training_args))
    if training_args.do_eval:
        eval_metrics: dict = {}
        for split, suffix in validation_splits.items():
            metrics = trainer.evaluate(eval_dataset=features[split])
            eval_metrics.update({f"{key}{suffix}": value for key, value in metrics.items()})
        results.update(support.save_eval_metrics(trainer, eval_metrics, len(splits[next(iter(validation_splits))])))
    if training_args.do_predict:
        for split, suffix in test_splits.items():
            metrics = write_test_predictions(trainer, features[split], split, data_args.task_name, is_regression)
            if metrics:
                results.update(
                    support.save_eval_metrics(
                        trainer,
                        {f"{key}{suffix}": value for key, value in metrics.items()},
                        len(splits[split]),
                        split="predict",
                    )
                )
    return support.finish(trainer, model_args, data_args, "text-classification", results)


def write_test_predictions(
    trainer: Trainer, features: datasets.Dataset, split: str, task_name: str | None, is_regression: bool
) -> dict:
    """predict_results[_<task>].txt: "index<TAB>prediction" per line (class names, or the score).
    Returns the split's metrics (``predict_accuracy``, ...) when its rows carry labels, else {}."""
    output = trainer.predict(features, metric_key_prefix="predict")
    logits = output.predictions
    logits = logits[0] if isinstance(logits, tuple) else logits
    id2label = trainer.model.config.id2label
    if is_regression:
        values = [f"{value:3.3f}" for value in np.squeeze(logits, axis=-1)]
    else:
        values = [id2label[int(index)] for index in np.argmax(logits, axis=-1)]
    name = (
        f"predict_results_{task_name}{'_mm' if split.endswith('mismatched') else ''}.txt"
        if task_name
        else "predict_results.txt"
    )
    support.write_lines(
        trainer, name, ["index\tprediction"] + [f"{index}\t{value}" for index, value in enumerate(values)]
    )
    if "labels" not in features.column_names:
        return {}
    return {key: value for key, value in output.metrics.items() if not key.endswith(("_runtime", "_per_second"))}


if __name__ == "__main__":
    main()
