#!/usr/bin/env python
"""Text-to-text fine-tuning of an hf-variants encoder-decoder (T5, the original Transformer) with
transformers' ``Seq2SeqTrainer``: every task is "read this text, write that text", as in T5.
Arguments as transformers' ``run_summarization.py`` (``--text_column``, ``--summary_column``
(here ``--target_column``), ``--source_prefix``) plus the shared sequence-to-sequence ones.

A target column that is not text is written out as words: a ClassLabel as its class name
(sentiment becomes the words "positive" / "negative"), a list (of ClassLabel names, or values)
as its items joined by spaces (a POS-tagged sentence becomes "DT NN VBZ ..."); a list source
column (words) is joined by spaces too. The offline real tasks (columns filled in)::

    python examples/run_seq2seq.py --model_name_or_path <t5 checkpoint> \\
        --dataset_name hf_variants/rt_polarity --source_prefix "sentiment: " \\
        --do_train --do_eval --predict_with_generate --output_dir out/t5-sentiment
    python examples/run_seq2seq.py --model_name_or_path <t5 checkpoint> \\
        --dataset_name hf_variants/wsj_pos --source_prefix "pos: " --max_target_length 128 ...

Evaluation generates and compares word by word: ``exact_match`` (for sentiment, the accuracy)
and ``token_error_rate`` (for tagging, about 100 - tag accuracy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.training.labels import label_feature

# (text column, target column) of the offline data sets, as run_summarization's name mapping.
DEFAULT_COLUMNS = {
    "hf_variants/rt_polarity": ("sentence", "label"),
    "hf_variants/wsj_pos": ("tokens", "pos_tags"),
    "hf_variants/cmudict": ("word", "phonemes"),
}


@dataclass
class TextToTextDataArguments(support.Seq2SeqDataArguments):
    text_column: str | None = field(default=None, metadata={"help": "The source column (default: the data set's)."})
    target_column: str | None = field(default=None, metadata={"help": "The target column (default: the data set's)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        defaults = DEFAULT_COLUMNS.get(self.dataset_name or "", (None, None))
        self.text_column = self.text_column or defaults[0]
        self.target_column = self.target_column or defaults[1]
        for name in ("text_column", "target_column"):
            if getattr(self, name) is None:
                raise ValueError(
                    f"--{name} is required for {self.dataset_name or 'local files'} "
                    f"(defaults exist for {sorted(DEFAULT_COLUMNS)})"
                )


def column_as_text(dataset: datasets.Dataset, column: str) -> list[str]:
    """The column's values as text: ClassLabel ids as names, lists joined by spaces."""
    feature = label_feature(dataset, column)
    as_word = feature.int2str if feature is not None else str

    def render(value) -> str | None:
        if isinstance(value, list):
            return " ".join(as_word(item) for item in value)
        return None if value is None else as_word(value)  # None: refused by check_pairs, naming the row

    return [render(value) for value in dataset[column]]


def column_pairs(text_column: str, target_column: str) -> support.PairsFromSplit:
    def pairs(dataset: datasets.Dataset, split: str) -> tuple[list[str], list[str]]:
        support.require_columns(dataset, [text_column, target_column], f"{split} text-to-text pairs")
        return column_as_text(dataset, text_column), column_as_text(dataset, target_column)

    return pairs


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start_seq2seq(TextToTextDataArguments, argv)
    pairs = column_pairs(data_args.text_column, data_args.target_column)
    return support.run_seq2seq(model_args, data_args, training_args, pairs, task="text2text-generation")


if __name__ == "__main__":
    main()
