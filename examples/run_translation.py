#!/usr/bin/env python
"""Train or fine-tune an hf-variants encoder-decoder (the original Transformer, T5) on translation
pairs with transformers' ``Seq2SeqTrainer``. Same arguments as transformers'
``examples/pytorch/translation/run_translation.py``: rows carry a ``translation`` dict keyed by
``--source_lang`` / ``--target_lang``, from ``--dataset_name`` (a Hub dataset such as ``wmt16``
``ro-en``, or ``hf_variants/<name>``) or json(l) ``--train_file`` / ``--validation_file`` /
``--test_file``.

Offline, the real task at hand is grapheme-to-phoneme conversion on the CMU Pronouncing
Dictionary (``hf_variants/cmudict``: source ``graphemes``, target ``phonemes``)::

    python examples/run_translation.py --model_name_or_path transformer-mini \\
        --dataset_name hf_variants/cmudict --source_lang graphemes --target_lang phonemes \\
        --do_train --do_eval --do_predict --predict_with_generate --num_beams 4 \\
        --output_dir out/g2p

A ``modeling_configs/`` name trains from scratch with a tokenizer trained on the training pairs
(``--tokenizer_kind``, ``--vocab_size``; default the variant's kind); ``--lr_scheduler_type
inverse_sqrt --adam_beta2 0.98`` gives the paper's "Noam" schedule. Evaluation and prediction
generate (``--predict_with_generate``, beam search with ``--num_beams``) and score the text word
by word: exact match and token error rate (for G2P the phoneme error rate). Predictions go to
``generated_predictions.txt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.data.data_files import describe_rows

TRANSLATION_COLUMN = "translation"


@dataclass
class TranslationDataArguments(support.Seq2SeqDataArguments):
    source_lang: str | None = field(
        default=None, metadata={"help": "Source key of the translation dicts (e.g. en, graphemes)."}
    )
    target_lang: str | None = field(
        default=None, metadata={"help": "Target key of the translation dicts (e.g. ro, phonemes)."}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("source_lang", "target_lang"):
            if not getattr(self, name):
                raise ValueError(
                    f"--{name} is required: a key of the rows' translation dicts "
                    "(hf_variants/cmudict: --source_lang graphemes --target_lang phonemes)"
                )
        if self.source_lang == self.target_lang:
            raise ValueError(f"--source_lang and --target_lang are both {self.source_lang!r}")


def translation_pairs(source_lang: str, target_lang: str) -> support.PairsFromSplit:
    """(sources, targets) read from the ``translation`` column's dicts."""

    def pairs(dataset: datasets.Dataset, split: str) -> tuple[list[str], list[str]]:
        support.require_columns(dataset, [TRANSLATION_COLUMN], f"{split} translation pairs")
        rows = dataset[TRANSLATION_COLUMN]
        for name, language in (("--source_lang", source_lang), ("--target_lang", target_lang)):
            missing = [row for row, pair in enumerate(rows) if not isinstance(pair, dict) or language not in pair]
            if missing:
                raise ValueError(
                    f"{name} {language!r} is not a key of the {split} split's translation dicts "
                    f"({describe_rows(dataset, missing[:1])[0]} has {rows[missing[0]]!r})"
                )
        return [pair[source_lang] for pair in rows], [pair[target_lang] for pair in rows]

    return pairs


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start_seq2seq(TranslationDataArguments, argv)
    pairs = translation_pairs(data_args.source_lang, data_args.target_lang)
    return support.run_seq2seq(model_args, data_args, training_args, pairs, task="translation")


if __name__ == "__main__":
    main()
