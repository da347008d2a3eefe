"""What the sequence-to-sequence scripts (``run_translation.py``, ``run_seq2seq.py``) share: their
extra arguments, the tokenizer (loaded, or trained on the training pairs for a model built from a
``modeling_configs/`` name), tokenisation of (source, target) text pairs, generation-based
metrics and the train / evaluate / predict run with transformers' ``Seq2SeqTrainer``.

Each script only turns its data into (source text, target text) pairs (``PairsFromSplit``); the
rest is here, on top of ``examples_support`` (data loading, splits, model loading, outputs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain

import datasets
import numpy as np
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, EvalPrediction, Seq2SeqTrainingArguments

import examples_support as support
from hf_variants.hub.atomic import save_atomically
from hf_variants.models.named_configs import is_named_config, named_config
from hf_variants.hub.trainer import CheckpointSafeSeq2SeqTrainer
from hf_variants.metrics import sequence_scores
from hf_variants.registry import spec_for
from hf_variants.tokenization import SEQ2SEQ_TOKENIZER_KINDS, TOKENIZER_KINDS, train_tokenizer

logger = logging.getLogger("hf_variants.examples.seq2seq")

IGNORE_INDEX = -100
PREDICTIONS_FILE = "generated_predictions.txt"  # transformers' name: one generated text per line
# (split name) -> (source texts, target texts), in row order.
PairsFromSplit = Callable[[datasets.Dataset, str], tuple[list[str], list[str]]]


@dataclass
class Seq2SeqModelArguments(support.ModelArguments):
    """transformers' model arguments, plus how to train a tokenizer for a model built from scratch."""

    tokenizer_kind: str | None = field(
        default=None,
        metadata={"help": f"With a modeling_configs/ name and no --tokenizer_name: the kind of tokenizer trained on the "
                          f"training pairs, one of {TOKENIZER_KINDS + SEQ2SEQ_TOKENIZER_KINDS} (default: the variant's)."},
    )
    vocab_size: int = field(default=1000, metadata={"help": "Vocabulary size of a tokenizer trained on the training pairs."})


@dataclass
class Seq2SeqDataArguments(support.DataArguments):
    """transformers' run_translation / run_summarization data arguments."""

    source_prefix: str | None = field(
        default=None, metadata={"help": "Text put before every source, e.g. 'translate English to German: ' for T5."}
    )
    max_source_length: int = field(default=128, metadata={"help": "Longest tokenised source; longer ones are truncated."})
    max_target_length: int = field(default=128, metadata={"help": "Longest tokenised training target; longer ones are truncated."})
    val_max_target_length: int | None = field(
        default=None,
        metadata={"help": "Longest generation in evaluation (default: max_target_length); scores compare with the whole target."},
    )
    num_beams: int | None = field(
        default=None, metadata={"help": "Beams for evaluation and prediction (default: --generation_num_beams, else 1)."}
    )
    ignore_pad_token_for_loss: bool = field(
        default=True, metadata={"help": "Leave label padding out of the loss (label -100)."}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.val_max_target_length is None:
            self.val_max_target_length = self.max_target_length
        for name in ("max_source_length", "max_target_length", "val_max_target_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.num_beams is not None and self.num_beams < 1:
            raise ValueError(f"--num_beams must be at least 1, got {self.num_beams}")


@dataclass
class Seq2SeqBudgetTrainingArguments(Seq2SeqTrainingArguments, support.TimeBudgetArguments):
    """transformers' Seq2SeqTrainingArguments plus ``--max_time`` (a wall-clock budget in minutes)."""


def start(data_arguments_class: type, argv) -> tuple[Seq2SeqModelArguments, Seq2SeqDataArguments, Seq2SeqTrainingArguments]:
    """Parse the arguments (transformers' Seq2SeqTrainingArguments: --predict_with_generate,
    --generation_max_length, --generation_num_beams; and --max_time) and set up logging and the seed."""
    model_args, data_args, training_args = support.start(
        data_arguments_class, argv, Seq2SeqModelArguments, Seq2SeqBudgetTrainingArguments
    )
    # As transformers' run_translation: the data arguments fill in the generation settings.
    if training_args.generation_max_length is None:
        training_args.generation_max_length = data_args.val_max_target_length
    if data_args.num_beams is not None:
        training_args.generation_num_beams = data_args.num_beams
    if (training_args.do_eval or training_args.do_predict) and not training_args.predict_with_generate:
        logger.warning("without --predict_with_generate, evaluation reports the loss only (no generated text, no scores)")
    return model_args, data_args, training_args


def check_pairs(sources: list, targets: list, split: str, dataset: datasets.Dataset) -> None:
    """ValueError naming the first rows of ``dataset`` (file and line for local files) whose source
    or target is not a non-empty string."""
    bad = [row for row, (source, target) in enumerate(zip(sources, targets))
           if not (isinstance(source, str) and source.strip() and isinstance(target, str) and target.strip())]
    if bad:
        examples = [(sources[row], targets[row]) for row in bad[:3]]
        raise ValueError(f"{split} split: {len(bad)} rows have an empty or non-text source or target, e.g. "
                         f"{support.example_ids(dataset, bad[:3])}: {examples}")


def load_or_train_tokenizer(model_args: Seq2SeqModelArguments, training_args: Seq2SeqTrainingArguments,
                            train_pairs: tuple[list[str], list[str]] | None, model_max_length: int):
    """``--tokenizer_name`` or the checkpoint's tokenizer; for a ``modeling_configs/`` name without
    one, a tokenizer of ``--tokenizer_kind`` (default: the variant's paper) trained on the
    training sources and targets. Under DDP the main process trains and saves it, the others
    load it (tokenizer training is not deterministic across processes)."""
    if model_args.tokenizer_name or not is_named_config(model_args.model_name_or_path):
        return support.load_tokenizer(model_args)
    if train_pairs is None:
        raise ValueError(f"--model_name_or_path {model_args.model_name_or_path} is a modeling_configs/ name (random "
                         "weights): give --tokenizer_name, or --do_train to train a tokenizer on the training pairs")
    kind = model_args.tokenizer_kind or spec_for(named_config(model_args.model_name_or_path).model_type).tokenizer_kind
    with training_args.main_process_first(desc="tokenizer"):
        if training_args.process_index == 0:
            logger.info("training a %s tokenizer (vocabulary %d) on the training pairs", kind, model_args.vocab_size)
            tokenizer = train_tokenizer(kind, chain(*train_pairs), model_args.vocab_size, model_max_length=model_max_length)
            save_atomically(tokenizer, training_args.output_dir)
        else:
            tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
    return tokenizer


def load_model(model_args: Seq2SeqModelArguments, tokenizer, max_source_length: int):
    """AutoModelForSeq2SeqLM of ``--model_name_or_path``; one built from a ``modeling_configs/``
    name takes the tokenizer's vocabulary size and pad / EOS ids, and starts decoding from the
    pad id (T5's and Marian's convention)."""
    overrides = {}
    if is_named_config(model_args.model_name_or_path):
        if tokenizer.pad_token_id is None or tokenizer.eos_token_id is None:
            raise ValueError(f"the tokenizer needs pad and EOS tokens to train a {model_args.model_name_or_path} from scratch")
        overrides = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                     "eos_token_id": tokenizer.eos_token_id, "decoder_start_token_id": tokenizer.pad_token_id}
    model = support.load_model(model_args, AutoModelForSeq2SeqLM, tokenizer, **overrides)
    positions = getattr(model.config, "max_position_embeddings", None)  # T5's relative positions have no limit
    if positions is not None and max_source_length > positions:
        raise ValueError(f"--max_source_length {max_source_length} exceeds the model's max_position_embeddings ({positions})")
    return model


def tokenize_pairs(tokenizer, sources: list[str], targets: list[str], prefix: str, max_source_length: int,
                   max_target_length: int, split: str) -> datasets.Dataset:
    """Rows of ``input_ids``, ``attention_mask`` (source, with the prefix) and ``labels`` (target
    ids, EOS included). Sources are truncated to ``max_source_length``; training targets to
    ``max_target_length``. Evaluation targets are kept whole, so the scores compare generations
    with the real targets: ``max_target_length`` (the generation limit) only makes longer ones
    misses. How many are affected is logged."""
    sources = [prefix + source for source in sources]
    training = split == "train"
    support.report_truncation(tokenizer, f"{split} sources", sources, None, max_source_length, argument="--max_source_length")
    support.report_truncation(
        tokenizer, f"{split} targets", targets, None, max_target_length,
        **(dict(argument="--max_target_length") if training else
           dict(argument="the generation limit (--val_max_target_length)", consequence="cannot be generated whole: they score as misses")),
    )
    features = dict(tokenizer(sources, max_length=max_source_length, truncation=True))
    features["labels"] = tokenizer(text_target=targets, max_length=max_target_length if training else None,
                                   truncation=training)["input_ids"]
    return datasets.Dataset.from_dict(features)


def decode(tokenizer, token_ids: np.ndarray) -> list[str]:
    """Generated or label ids (-100 where ignored) -> text without special tokens."""
    token_ids = np.where(token_ids != IGNORE_INDEX, token_ids, tokenizer.pad_token_id)
    return [text.strip() for text in tokenizer.batch_decode(token_ids, skip_special_tokens=True)]


def generation_metrics(tokenizer) -> Callable[[EvalPrediction], dict[str, float]]:
    """compute_metrics for ``--predict_with_generate``: exact match and token error rate of the
    generated text against the target, word by word (hf_variants.metrics.sequence_scores), and
    the mean generated length in tokens."""

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        generated = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        scores = sequence_scores(decode(tokenizer, generated), decode(tokenizer, prediction.label_ids))
        scores["gen_len"] = float(np.mean(np.count_nonzero((generated != tokenizer.pad_token_id) & (generated != IGNORE_INDEX), axis=1)))
        return scores

    return compute


def run(model_args: Seq2SeqModelArguments, data_args: Seq2SeqDataArguments, training_args: Seq2SeqTrainingArguments,
        pairs_from_split: PairsFromSplit, task: str) -> dict:
    """Load the data, turn each split into (source, target) text pairs, then train / evaluate /
    predict with Seq2SeqTrainer. Writes what transformers' run_translation writes
    (all_results.json, generated_predictions.txt, the model and tokenizer) plus the model card.
    Returns the metrics of all_results.json."""
    raw = support.load_raw_datasets(data_args, model_args)
    splits = support.select_splits(raw, data_args, training_args)
    pairs = {}
    for name, dataset in splits.items():
        pairs[name] = pairs_from_split(dataset, name)
        check_pairs(*pairs[name], name, dataset)
    longest = max(data_args.max_source_length, data_args.max_target_length, data_args.val_max_target_length)
    tokenizer = load_or_train_tokenizer(model_args, training_args, pairs.get("train"), longest)
    model = load_model(model_args, tokenizer, data_args.max_source_length)
    prefix = data_args.source_prefix or ""
    features = {
        name: tokenize_pairs(tokenizer, *pairs[name], prefix, data_args.max_source_length,
                             data_args.max_target_length if name == "train" else data_args.val_max_target_length, name)
        for name in splits
    }
    collator = DataCollatorForSeq2Seq(
        tokenizer, model=model, label_pad_token_id=IGNORE_INDEX if data_args.ignore_pad_token_for_loss else tokenizer.pad_token_id,
        pad_to_multiple_of=8 if training_args.fp16 or training_args.bf16 else None,
    )
    compute_metrics = generation_metrics(tokenizer) if training_args.predict_with_generate else None
    trainer = support.build_trainer(model, training_args, features, tokenizer, collator, compute_metrics,
                                    trainer_class=CheckpointSafeSeq2SeqTrainer)
    results = support.train_and_evaluate(trainer, splits, data_args, training_args)
    if training_args.do_predict:
        output = trainer.predict(features["test"], metric_key_prefix="predict")
        results.update(support.save_eval_metrics(trainer, output.metrics, len(splits["test"]), split="predict"))
        if training_args.predict_with_generate:
            generated = output.predictions[0] if isinstance(output.predictions, tuple) else output.predictions
            support.write_lines(trainer, PREDICTIONS_FILE, decode(tokenizer, generated))
    return support.finish(trainer, model_args, data_args, task, results)
