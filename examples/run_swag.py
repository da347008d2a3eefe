#!/usr/bin/env python
"""Fine-tune an hf-variants encoder for multiple choice in the SWAG schema: a context ``sent1``,
the start of the next sentence ``sent2``, candidate endings ``ending0``..``ending3`` and the index
of the right one, ``label``. Same arguments as transformers' ``run_swag.py``::

    accelerate launch examples/run_swag.py --model_name_or_path <MiniLM folder> \\
        --dataset_name swag --dataset_config_name regular --do_train --do_eval --output_dir out/swag

SWAG itself needs the Hub. Offline, ``--dataset_name hf_variants/next_sentence_choice`` is a
small multiple-choice set built here from real text (``hf_variants/sentence_pairs``: Wikipedia
and Jane Austen): which of four sentences follows the context? It is *not* SWAG (distractors
are random sentences, often from another topic, so it is much easier); see
``next_sentence_choices``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets
import numpy as np
from transformers import (
    AutoModelForMultipleChoice,
    DataCollatorForMultipleChoice,
    EvalPrediction,
    default_data_collator,
)

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.data import load_named_dataset
from hf_variants.data.data_files import describe_rows
from hf_variants.metrics import accuracy
from hf_variants.training.fine_tuning import max_length_for, report_truncation

NEXT_SENTENCE_CHOICE = "hf_variants/next_sentence_choice"
ENDING_COLUMN = re.compile(r"ending(\d+)")


@dataclass
class SwagDataArguments(support.DataArguments):
    context_column_name: str = field(default="sent1", metadata={"help": "The context column."})
    header_column_name: str = field(default="sent2", metadata={"help": "The column each ending continues."})
    label_column_name: str = field(default="label", metadata={"help": "Index of the right ending."})


def next_sentence_choices(pairs: datasets.DatasetDict, num_choices: int = 4, seed: int = 0) -> datasets.DatasetDict:
    """A SWAG-schema multiple-choice set from real consecutive sentences (NOT SWAG).

    From each split of ``hf_variants/sentence_pairs`` take the pairs labelled ``next`` (real
    consecutive sentences of one paragraph). ``sent1`` is the first sentence, ``sent2`` is empty,
    the right ending is the true next sentence and the ``num_choices - 1`` others are the next
    sentences of other pairs of the same split, drawn at random (seeded); the right one's
    position is random too. Columns: ``id``, ``sent1``, ``sent2``, ``ending0``.., ``label``.
    """
    generator = np.random.default_rng(seed)
    parts = {}
    for split, data in pairs.items():
        next_label = data.features["label"].str2int("next")
        consecutive = data.filter(lambda row: row["label"] == next_label)
        if len(consecutive) < num_choices:
            raise ValueError(
                f"split {split!r} has {len(consecutive)} consecutive pairs, fewer than {num_choices} choices"
            )
        contexts, followers = list(consecutive["sentence1"]), list(consecutive["sentence2"])
        rows = {"id": list(consecutive["id"]), "sent1": contexts, "sent2": [""] * len(contexts), "label": []}
        endings = [[] for _ in range(num_choices)]
        for index in range(len(contexts)):
            others = generator.choice(len(contexts) - 1, size=num_choices - 1, replace=False)
            choices = [followers[o + (o >= index)] for o in others]  # skip the row itself
            answer = int(generator.integers(num_choices))
            choices.insert(answer, followers[index])
            for slot, ending in enumerate(choices):
                endings[slot].append(ending)
            rows["label"].append(answer)
        rows.update({f"ending{slot}": column for slot, column in enumerate(endings)})
        parts[split] = datasets.Dataset.from_dict(rows)
    return datasets.DatasetDict(parts)


def ending_columns(dataset: datasets.Dataset) -> list[str]:
    """ending0, ending1, ... (at least two, numbered without gaps)."""
    numbers = sorted(int(m.group(1)) for m in map(ENDING_COLUMN.fullmatch, dataset.column_names) if m)
    if len(numbers) < 2 or numbers != list(range(len(numbers))):
        raise ValueError(f"multiple choice needs columns ending0, ending1, ...; the data has {dataset.column_names}")
    return [f"ending{n}" for n in numbers]


def check_choice_labels(dataset: datasets.Dataset, column: str, num_choices: int, split: str) -> list[int]:
    labels = list(dataset[column])
    bad = [row for row, label in enumerate(labels) if not isinstance(label, int) or not 0 <= label < num_choices]
    if bad:
        raise ValueError(
            f"{split} split: labels must be ending indices in [0, {num_choices}); "
            f"{len(bad)} are not, e.g. {[labels[row] for row in bad[:5]]} at {describe_rows(dataset, bad[:10])}"
        )
    return labels


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(SwagDataArguments, argv)
    if training_args.do_predict:
        raise ValueError("run_swag has no --do_predict (SWAG's test labels are hidden): use --do_eval")
    if data_args.dataset_name == NEXT_SENTENCE_CHOICE:
        raw = next_sentence_choices(load_named_dataset("hf_variants/sentence_pairs"), seed=training_args.seed)
    else:
        raw = support.load_raw_datasets(data_args, model_args)
    splits = support.select_splits(raw, data_args, training_args)
    endings = ending_columns(next(iter(splits.values())))
    context, header, label_column = (
        data_args.context_column_name,
        data_args.header_column_name,
        data_args.label_column_name,
    )
    for split, dataset in splits.items():
        support.require_columns(
            dataset,
            [context, header, label_column, *endings],
            f"{split} multiple choice",
            text_columns=[context, *endings],
        )
        check_choice_labels(dataset, label_column, len(endings), split)

    tokenizer = support.load_tokenizer(model_args)
    max_length = max_length_for(tokenizer, data_args.max_seq_length)
    model = support.load_model(model_args, AutoModelForMultipleChoice, tokenizer, max_seq_length=max_length)
    padding = "max_length" if data_args.pad_to_max_length else False

    def pairs_of(batch: dict) -> tuple[list[str], list[str]]:
        """Flattened (context, header + ending) pairs, choices of one example consecutive."""
        firsts = [text for text in batch[context] for _ in endings]
        seconds = [
            f"{head} {batch[ending][row]}".strip() for row, head in enumerate(batch[header]) for ending in endings
        ]
        return firsts, seconds

    def tokenize(batch: dict) -> dict:
        encoded = tokenizer(*pairs_of(batch), truncation=True, max_length=max_length, padding=padding)
        grouped = {
            key: [values[i : i + len(endings)] for i in range(0, len(values), len(endings))]
            for key, values in encoded.items()
        }
        grouped["labels"] = batch[label_column]
        return grouped

    features = {}
    for split, dataset in splits.items():
        report_truncation(tokenizer, split, *pairs_of(dataset.to_dict()), max_length)
        with training_args.main_process_first(desc=f"tokenizing {split}"):
            features[split] = dataset.map(
                tokenize,
                batched=True,
                remove_columns=dataset.column_names,
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"Tokenizing {split}",
            )

    def compute_metrics(prediction: EvalPrediction) -> dict:
        return {"accuracy": accuracy(np.argmax(prediction.predictions, axis=-1), prediction.label_ids)}

    collator = default_data_collator if data_args.pad_to_max_length else DataCollatorForMultipleChoice(tokenizer)
    trainer = support.build_trainer(model, training_args, features, tokenizer, collator, compute_metrics)
    results = support.train_and_evaluate(trainer, splits, data_args, training_args)
    return support.finish(trainer, model_args, data_args, "multiple-choice", results)


if __name__ == "__main__":
    main()
