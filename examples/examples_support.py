"""What the scripts in ``examples/`` share that is script glue: argument dataclasses, data and model
loading, checkpoint resumption, the seq2seq and image runs two scripts each share, and the
end-of-run outputs. The library logic they use (labels, peft adapters, truncation reports, image
and seq2seq inputs, callbacks) lives in ``hf_variants.training``.

The scripts mirror transformers' own examples (same argument names, same output files:
``all_results.json``, ``train_results.json``, ``eval_results.json``, ``trainer_state.json``, a
safetensors checkpoint, the tokenizer and a model card), so a user can switch without relearning.

``--model_name_or_path`` takes three kinds of value:

- a ``modeling_configs/`` name (``bert-mini``): random initialisation; the tokenizer comes from
  ``--tokenizer_name``;
- a local checkpoint or Hub id of an hf-variants model: loaded as is;
- a transformers checkpoint of an architecture we mirror (``model_type: bert``, e.g.
  all-MiniLM-L6-v2): loaded with transformers' class, then converted to the hf-variants class
  (logged), so the saved result is an hf-variants checkpoint.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import datasets
import transformers
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    HfArgumentParser,
    PreTrainedModel,
    Seq2SeqTrainingArguments,
    Trainer,
    TrainingArguments,
    set_seed,
)

from hf_variants.conversion import load_pretrained
from hf_variants.data import check_columns, load_named_dataset
from hf_variants.data.data_files import LOADERS as DATA_FILE_LOADERS
from hf_variants.data.data_files import check_image_column, check_text_columns, keep_row_origin, load_data_file
from hf_variants.hub import DatasetInfo, write_model_card
from hf_variants.hub.atomic import save_atomically, write_text_atomically
from hf_variants.hub.checkpoints import last_complete_checkpoint, resolve_checkpoint
from hf_variants.hub.trainer import (
    CheckpointSafeSeq2SeqTrainer,
    CheckpointSafeTrainer,
    check_optimizer_arguments,
    trainer_argument_defaults,
)
from hf_variants.models.named_configs import is_named_config, named_config, named_config_path
from hf_variants.registry import spec_for
from hf_variants.tokenization import SEQ2SEQ_TOKENIZER_KINDS, TOKENIZER_KINDS, train_tokenizer
from hf_variants.training.callbacks import TimeBudget
from hf_variants.training.fine_tuning import (
    DATA_CAVEATS,
    card_scores,
    check_model_fits,
    push_if_asked,
    with_peft_adapter,
)
from hf_variants.training.images import load_image_processor
from hf_variants.training.labels import label_ids_for
from hf_variants.training.seq2seq import IGNORE_INDEX, check_pairs, decode, generation_metrics, tokenize_pairs

logger = logging.getLogger("hf_variants.examples")

OUR_DATASET_PREFIX = "hf_variants/"
LOCAL_FILE_LOADERS = {suffix: loader for suffix, (loader, _) in DATA_FILE_LOADERS.items()}


@dataclass
class ModelArguments:
    """Which model, config and tokenizer to fine-tune (transformers' example argument names)."""

    model_name_or_path: str = field(
        metadata={"help": "A modeling_configs/ name (random init), a local checkpoint or a Hub model id."}
    )
    config_name: str | None = field(default=None, metadata={"help": "Config name or path, if not the model's own."})
    config_overrides: str | None = field(
        default=None,
        metadata={
            "help": "From scratch only: config settings to change, e.g. 'patch_size=7,encoder_stride=7' (transformers' syntax)."
        },
    )
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "Tokenizer name or path (required with a modeling_configs/ name)."}
    )
    cache_dir: str | None = field(default=None, metadata={"help": "Where to store downloads from the Hub."})
    model_revision: str = field(default="main", metadata={"help": "Branch, tag or commit of the Hub model."})
    token: str | None = field(default=None, metadata={"help": "Hub token for private models and datasets."})
    ignore_mismatched_sizes: bool = field(
        default=False, metadata={"help": "Re-initialise head weights whose shape differs (e.g. another label count)."}
    )
    peft_method: str | None = field(
        default=None,
        metadata={
            "help": "Train a peft adapter instead of every weight: lora, ia3 or prefix (default targets: hf_variants.integrations.peft_targets)."
        },
    )
    lora_r: int = field(default=8, metadata={"help": "LoRA rank (--peft_method lora)."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling numerator: updates are scaled by alpha / r."})
    lora_dropout: float = field(default=0.1, metadata={"help": "Dropout on the LoRA branch's input."})
    lora_target_modules: str | None = field(
        default=None,
        metadata={
            "help": "Comma-separated module-name suffixes LoRA adapts (e.g. qkv,out,pooler.dense); "
            "default: the variant's registered targets (hf_variants.integrations.peft_targets)."
        },
    )
    num_virtual_tokens: int = field(default=20, metadata={"help": "Prefix length (--peft_method prefix)."})


@dataclass
class TimeBudgetArguments:
    """``--max_time``, mixed into a script's TrainingArguments class (run_mae, the seq2seq scripts):
    the wall-clock budget of run_pretraining.py, applied by ``build_trainer``."""

    max_time: float | None = field(
        default=None,
        metadata={
            "help": "Wall-clock training budget in minutes (resumed runs included): stop, save and evaluate when "
            "it is spent; the learning-rate schedule still follows --max_steps."
        },
    )


@dataclass
class DataArguments:
    """Where the data comes from and how it is cut; each script subclasses it with its own fields."""

    dataset_name: str | None = field(
        default=None, metadata={"help": "hf_variants/<name> (offline real data) or a Hub dataset name."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "The dataset configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "A csv or json(l) training file."})
    validation_file: str | None = field(default=None, metadata={"help": "A csv or json(l) evaluation file."})
    test_file: str | None = field(default=None, metadata={"help": "A csv or json(l) prediction file."})
    max_seq_length: int = field(default=128, metadata={"help": "Longest tokenised input; longer ones are truncated."})
    pad_to_max_length: bool = field(
        default=False, metadata={"help": "Pad every input to max_seq_length (default: pad each batch to its longest)."}
    )
    overwrite_cache: bool = field(default=False, metadata={"help": "Recompute the tokenised datasets."})
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Train from scratch even if output_dir holds checkpoints (else resume)."}
    )
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenisation."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first N training examples."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep only the first N evaluation examples."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Keep only the first N test examples."})

    def __post_init__(self) -> None:
        if self.dataset_name is None and not any((self.train_file, self.validation_file, self.test_file)):
            if getattr(self, "task_name", None) is None:
                raise ValueError("give --dataset_name, --task_name, or --train_file/--validation_file/--test_file")
        for name in ("train_file", "validation_file", "test_file"):
            path = getattr(self, name)
            if path is not None and Path(path).suffix not in LOCAL_FILE_LOADERS:
                raise ValueError(f"--{name} {path}: expected one of {sorted(LOCAL_FILE_LOADERS)} files")


def parse_arguments(
    data_arguments_class: type,
    argv: Sequence[str] | None = None,
    model_arguments_class: type = ModelArguments,
    training_arguments_class: type = TrainingArguments,
) -> tuple[ModelArguments, Any, TrainingArguments]:
    """Parse the command line (or a single .json file of arguments) like transformers' examples.
    A script with fields of its own passes subclasses of ModelArguments / TrainingArguments."""
    parser = HfArgumentParser((model_arguments_class, data_arguments_class, training_arguments_class))
    defaults = trainer_argument_defaults()
    parser.set_defaults(**defaults)
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 1 and argv[0].endswith(".json"):
        arguments = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        parsed = parser.parse_dict({**defaults, **arguments})
    else:
        parsed = parser.parse_args_into_dataclasses(args=argv)
    check_optimizer_arguments(parsed[2])
    return parsed


def start(
    data_arguments_class: type,
    argv: Sequence[str] | None = None,
    model_arguments_class: type = ModelArguments,
    training_arguments_class: type = TrainingArguments,
) -> tuple[ModelArguments, Any, TrainingArguments]:
    """Parse the arguments, set up logging and the seed; error out when no --do_* is given."""
    model_args, data_args, training_args = parse_arguments(
        data_arguments_class, argv, model_arguments_class, training_arguments_class
    )
    setup_logging(training_args)
    set_seed(training_args.seed)
    if not (training_args.do_train or training_args.do_eval or training_args.do_predict):
        raise ValueError("nothing to do: pass --do_train, --do_eval and/or --do_predict")
    return model_args, data_args, training_args


def setup_logging(training_args: TrainingArguments) -> None:
    """Log to stdout at the process's level (main process: info; replicas: warning)."""
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    if training_args.should_log:
        transformers.utils.logging.set_verbosity_info()
    level = training_args.get_process_log_level()
    logger.setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)
    logger.warning(
        "process rank %s of %s, device %s, distributed %s",
        training_args.process_index,
        training_args.world_size,
        training_args.device,
        training_args.parallel_mode.value,
    )


def checkpoint_to_resume(training_args: TrainingArguments, data_args: DataArguments) -> str | None:
    """The checkpoint training continues from.

    ``--resume_from_checkpoint PATH`` resumes from PATH (refused with a ValueError if incomplete);
    ``--resume_from_checkpoint last`` (or ``true``) from the newest complete ``checkpoint-*`` in
    output_dir. Without it, a training run whose output_dir already holds checkpoints resumes from
    the newest complete one, as transformers' examples do, unless ``--overwrite_output_dir``.
    Incomplete checkpoints (a kill or a full disk while one was written) are skipped with a
    warning naming them.
    """
    requested = training_args.resume_from_checkpoint
    if requested is not None:
        return resolve_checkpoint(requested, training_args.output_dir)
    if training_args.do_train and not data_args.overwrite_output_dir:
        last = last_complete_checkpoint(training_args.output_dir)
        if last is not None:
            logger.info("Checkpoint found, resuming training at %s (pass --overwrite_output_dir to start over)", last)
            return last
    return None


# --------------------------------------------------------------------------------------- data


def load_raw_datasets(data_args: DataArguments, model_args: ModelArguments) -> datasets.DatasetDict:
    """``hf_variants/<name>`` (offline real data), a Hub dataset, or local csv/json files."""
    if data_args.dataset_name is not None and data_args.dataset_name.startswith(OUR_DATASET_PREFIX):
        return load_named_dataset(data_args.dataset_name, data_args.dataset_config_name)
    if data_args.dataset_name is not None:
        return datasets.load_dataset(
            data_args.dataset_name,
            data_args.dataset_config_name,
            cache_dir=model_args.cache_dir,
            token=model_args.token,
        )
    files = {
        split: path
        for split, path in (
            ("train", data_args.train_file),
            ("validation", data_args.validation_file),
            ("test", data_args.test_file),
        )
        if path is not None
    }
    loaders = {LOCAL_FILE_LOADERS[Path(path).suffix] for path in files.values()}
    if len(loaders) != 1:
        raise ValueError(f"all data files must be of one kind (csv or json), got {files}")
    # One file at a time, each checked first (UTF-8, not empty, every row well formed; errors name
    # the file and line): loaded together, files whose columns differ fail inside ``datasets``.
    return datasets.DatasetDict(
        {split: load_data_file(path, split, cache_dir=model_args.cache_dir) for split, path in files.items()}
    )


def take_split(raw: datasets.DatasetDict, split: str, purpose: str, max_samples: int | None = None) -> datasets.Dataset:
    """One split, checked to exist and be non-empty, cut to its first ``max_samples`` rows."""
    if split not in raw:
        raise ValueError(f"{purpose} needs a {split!r} split; the data has {sorted(raw)}")
    dataset = raw[split]
    if len(dataset) == 0:
        raise ValueError(f"the {split!r} split is empty: nothing to use for {purpose}")
    if max_samples is not None:
        if max_samples <= 0:
            raise ValueError(f"max samples for {purpose} must be positive, got {max_samples}")
        dataset = keep_row_origin(dataset, dataset.select(range(min(max_samples, len(dataset)))))
    return dataset


def select_splits(
    raw: datasets.DatasetDict,
    data_args: DataArguments,
    training_args: TrainingArguments,
    validation: Sequence[str] = ("validation",),
    test: Sequence[str] = ("test",),
) -> dict[str, datasets.Dataset]:
    """The splits the --do_* flags ask for, checked and cut by --max_*_samples (GLUE's MNLI passes
    its matched/mismatched split names)."""
    wanted = [("train", training_args.do_train, "--do_train", data_args.max_train_samples)]
    wanted += [(name, training_args.do_eval, "--do_eval", data_args.max_eval_samples) for name in validation]
    wanted += [(name, training_args.do_predict, "--do_predict", data_args.max_predict_samples) for name in test]
    return {name: take_split(raw, name, flag, limit) for name, asked, flag, limit in wanted if asked}


def require_columns(
    dataset: datasets.Dataset,
    columns: Iterable[str | None],
    purpose: str,
    *,
    text_columns: Iterable[str | None] = (),
    split_into_words: bool = False,
    image_columns: Iterable[str] = (),
) -> None:
    """ValueError listing the columns found and the ones expected when any is missing; then every
    value of ``text_columns`` must be a non-empty text (``split_into_words``: a list of words), and
    every image of ``image_columns`` must decode, else a ValueError naming the file and line (or
    image file) of the bad rows."""
    check_columns(dataset, [c for c in columns if c is not None], purpose)
    check_text_columns(dataset, text_columns, purpose, split_into_words=split_into_words)
    for column in image_columns:
        check_image_column(dataset, column, purpose)


# -------------------------------------------------------------------------------------- model


def hub_options_of(model_args: ModelArguments) -> dict:
    """The Hub download options of the model arguments (cache folder, revision, token)."""
    return {"cache_dir": model_args.cache_dir, "revision": model_args.model_revision, "token": model_args.token}


def load_tokenizer(model_args: ModelArguments) -> transformers.PreTrainedTokenizerBase:
    """The fast tokenizer of ``--tokenizer_name`` or of the checkpoint."""
    source = model_args.tokenizer_name or model_args.model_name_or_path
    if model_args.tokenizer_name is None and is_named_config(model_args.model_name_or_path):
        raise ValueError(
            f"--model_name_or_path {model_args.model_name_or_path} is a modeling_configs/ name (random weights, no "
            "vocabulary): pass --tokenizer_name (e.g. a checkpoint folder with tokenizer.json)"
        )
    tokenizer = AutoTokenizer.from_pretrained(
        source, cache_dir=model_args.cache_dir, revision=model_args.model_revision, token=model_args.token
    )
    if not tokenizer.is_fast:
        raise ValueError(
            f"{source}: these scripts need a fast tokenizer (offset mappings, word ids), got {type(tokenizer).__name__}"
        )
    return tokenizer


def load_model(
    model_args: ModelArguments,
    auto_class: type,
    tokenizer: transformers.PreTrainedTokenizerBase | None,
    *,
    label_names: list[str] | None = None,
    max_seq_length: int | None = None,
    **config_overrides,
) -> PreTrainedModel:
    """The model for ``auto_class`` (e.g. ``AutoModelForTokenClassification``), see the module docstring.

    ``label_names`` sets num_labels/id2label/label2id (a fine-tuned checkpoint's own order is kept
    when it has the same labels); ``config_overrides`` (problem_type, num_labels=1 for regression
    ...) are set on the config before the model is built. Raises ValueError when the tokenizer's
    vocabulary or ``max_seq_length`` does not fit the model (``tokenizer=None`` for image models).
    """
    name = model_args.model_name_or_path
    config_source = model_args.config_name or name
    hub_options = hub_options_of(model_args)
    if is_named_config(config_source):
        config = AutoConfig.from_pretrained(str(named_config_path(config_source)))
    else:
        config = AutoConfig.from_pretrained(config_source, **hub_options)
    from_scratch = is_named_config(name)
    if model_args.config_overrides:
        if not from_scratch:
            raise ValueError(
                f"--config_overrides changes a config trained from scratch; {name} is a checkpoint (its weights fix the shapes)"
            )
        config.update_from_string(model_args.config_overrides)  # raises ValueError naming an unknown key
    if label_names is not None:
        label2id = label_ids_for(None if from_scratch else config, label_names)
        config.label2id = label2id
        config.id2label = {index: label for label, index in label2id.items()}
    for key, value in config_overrides.items():
        setattr(config, key, value)
    if from_scratch:
        logger.info("Building %s from the named config %s with random weights", auto_class.__name__, name)
        model = auto_class.from_config(config)
    else:
        model = load_pretrained(
            name, auto_class, config=config, ignore_mismatched_sizes=model_args.ignore_mismatched_sizes, **hub_options
        )
        if not config.model_type.startswith("hfv_"):
            logger.info(
                "Converted the transformers %r checkpoint %s to hf_variants.%s",
                config.model_type,
                name,
                type(model).__name__,
            )
    check_model_fits(model, tokenizer, max_seq_length)
    return with_peft_adapter(
        model,
        auto_class,
        model_args.peft_method,
        lora_r=model_args.lora_r,
        lora_alpha=model_args.lora_alpha,
        lora_dropout=model_args.lora_dropout,
        lora_target_modules=model_args.lora_target_modules,
        num_virtual_tokens=model_args.num_virtual_tokens,
    )


# ------------------------------------------------------------------------------- run outputs


def build_trainer(
    model: PreTrainedModel,
    training_args: TrainingArguments,
    features: dict[str, datasets.Dataset],
    tokenizer,
    data_collator,
    compute_metrics=None,
    eval_split: str = "validation",
    trainer_class: type = CheckpointSafeTrainer,
    **extra,
) -> Trainer:
    """A Trainer over the tokenised ``features["train"]`` and ``features[eval_split]`` (either may be absent);
    with ``--max_time`` (``TimeBudgetArguments``) it stops when that many minutes are spent."""
    minutes = getattr(training_args, "max_time", None)
    if minutes is not None:
        extra["callbacks"] = [*extra.get("callbacks", []), TimeBudget(minutes)]
    return trainer_class(
        model=model,
        args=training_args,
        train_dataset=features.get("train"),
        eval_dataset=features.get(eval_split),
        processing_class=tokenizer,
        data_collator=data_collator,
        compute_metrics=compute_metrics,
        **extra,
    )


def train_and_save(
    trainer: Trainer, train_dataset: datasets.Dataset, data_args: DataArguments, training_args: TrainingArguments
) -> dict:
    """Train (resuming if asked), save model + tokenizer + trainer_state.json and the train metrics."""
    checkpoint = checkpoint_to_resume(training_args, data_args)
    train_result = trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model()  # safetensors weights, config and the tokenizer (processing_class)
    metrics = dict(train_result.metrics)
    metrics["train_samples"] = len(train_dataset)
    metrics["world_size"] = training_args.world_size
    budget = next((c for c in trainer.callback_handler.callbacks if isinstance(c, TimeBudget)), None)
    if budget is not None:  # train_runtime counts this call only; the budget counts resumed runs too
        metrics["train_minutes"] = budget.elapsed_seconds() / 60
        metrics["stopped_by_max_time"] = budget.stopped_early
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()
    return metrics


def save_eval_metrics(trainer: Trainer, metrics: dict, num_examples: int, split: str = "eval") -> dict:
    """Add the sample count and world size, log, and write ``<split>_results.json`` + all_results.json."""
    metrics = dict(metrics)
    metrics[f"{split}_samples"] = num_examples
    metrics["world_size"] = trainer.args.world_size
    trainer.log_metrics(split, metrics)
    trainer.save_metrics(split, metrics)
    return metrics


def train_and_evaluate(
    trainer: Trainer, splits: dict[str, datasets.Dataset], data_args: DataArguments, training_args: TrainingArguments
) -> dict:
    """--do_train then --do_eval on the trainer's eval set; returns the metrics written to all_results.json."""
    results: dict = {}
    if training_args.do_train:
        results.update(train_and_save(trainer, splits["train"], data_args, training_args))
    if training_args.do_eval:
        results.update(save_eval_metrics(trainer, trainer.evaluate(), len(splits["validation"])))
    return results


def write_lines(trainer: Trainer, filename: str, lines: Iterable[str]) -> Path | None:
    """Write a predictions file into output_dir from the main process only."""
    if not trainer.is_world_process_zero():
        return None
    path = Path(trainer.args.output_dir) / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, "".join(line + "\n" for line in lines))
    logger.info("Wrote %s", path)
    return path


def write_json(trainer: Trainer, filename: str, data: Any) -> Path | None:
    if not trainer.is_world_process_zero():
        return None
    path = Path(trainer.args.output_dir) / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


def dataset_description(data_args: DataArguments) -> str:
    """A short name of the data for logs and the model card."""
    if getattr(data_args, "task_name", None) and data_args.dataset_name is None and data_args.train_file is None:
        return f"glue/{data_args.task_name}"
    if data_args.dataset_name:
        config = f" ({data_args.dataset_config_name})" if data_args.dataset_config_name else ""
        return data_args.dataset_name + config
    local = (data_args.train_file, data_args.validation_file, data_args.test_file)
    local += tuple(getattr(data_args, name, None) for name in ("train_dir", "validation_dir"))  # image folders
    return ", ".join(Path(p).name for p in local if p)


def write_card(
    trainer: Trainer, model_args: ModelArguments, data_args: DataArguments, task: str, results: dict
) -> None:
    """The model card (README.md) with the evaluation results, written by hf_variants.hub.

    ``results``: the run's metrics (``train_samples``, ``eval_samples`` and the ``eval_*`` scores).
    """
    if not trainer.is_world_process_zero():
        return
    if model_args.peft_method is not None:  # the folder holds an adapter: peft's save_pretrained wrote its card
        logger.info(
            "--peft_method: %s holds the adapter and peft's card (no config.json for ours)", trainer.args.output_dir
        )
        return
    dataset_name = dataset_description(data_args)
    dataset = DatasetInfo(
        name=dataset_name,
        id=data_args.dataset_name or dataset_name,
        config=data_args.dataset_config_name,
        split="validation",
        num_train_examples=results.get("train_samples"),
        num_eval_examples=results.get("eval_samples"),
    )
    eval_results = card_scores(results)
    base_model = None if is_named_config(model_args.model_name_or_path) else model_args.model_name_or_path
    write_model_card(
        trainer.args.output_dir,
        trainer_state=trainer.state,
        eval_results=eval_results or None,
        training_args=trainer.args,
        dataset=dataset,
        objective=task,
        task=task,
        base_model=base_model,
        limitations=[DATA_CAVEATS[data_args.dataset_name]] if data_args.dataset_name in DATA_CAVEATS else (),
    )


def finish(trainer: Trainer, model_args: ModelArguments, data_args: DataArguments, task: str, results: dict) -> dict:
    """After training: the model card with the results, then the upload when --push_to_hub."""
    if trainer.args.do_train:
        write_card(trainer, model_args, data_args, task, results)
        push_if_asked(trainer)
    return results


# ----------------------------------------------------------- images (run_image_classification, run_mae)


@dataclass
class ImageModelArguments(ModelArguments):
    image_processor_name: str | None = field(
        default=None, metadata={"help": "Image processor name or path, if not the checkpoint's own."}
    )


@dataclass
class ImageDataArguments(DataArguments):
    train_dir: str | None = field(
        default=None, metadata={"help": "A folder of training images, one sub-folder per class."}
    )
    validation_dir: str | None = field(
        default=None, metadata={"help": "A folder of evaluation images, one sub-folder per class."}
    )
    train_val_split: float = field(
        default=0.15,
        metadata={"help": "Fraction of train held out for evaluation when the data has no validation split."},
    )
    image_column_name: str = field(
        default="image", metadata={"help": "The column holding the images (PIL or uint8 arrays)."}
    )
    label_column_name: str = field(default="label", metadata={"help": "The column holding the labels."})
    horizontal_flip: bool = field(
        default=False, metadata={"help": "Mirror each training image with probability 0.5 (not for digits or text)."}
    )

    def __post_init__(self) -> None:
        if not 0 <= self.train_val_split < 1:
            raise ValueError(f"--train_val_split must be in [0, 1), got {self.train_val_split}")
        folders = [path for path in (self.train_dir, self.validation_dir) if path is not None]
        for path in folders:
            if not Path(path).is_dir():
                raise ValueError(f"{path} is not a directory (--train_dir / --validation_dir take folders of images)")
        if folders and (self.dataset_name or self.train_file or self.validation_file or self.test_file):
            raise ValueError("give either --dataset_name / --*_file or --train_dir / --validation_dir, not both")
        if not folders:
            super().__post_init__()


def load_images(data_args: ImageDataArguments, model_args: ImageModelArguments, seed: int) -> datasets.DatasetDict:
    """The raw splits; a validation split is cut from train (``--train_val_split``) when there is none."""
    if data_args.train_dir or data_args.validation_dir:
        folders = {"train": data_args.train_dir, "validation": data_args.validation_dir}
        raw = datasets.load_dataset(
            "imagefolder",
            data_files={split: str(Path(path) / "**") for split, path in folders.items() if path},
            cache_dir=model_args.cache_dir,
        )
    else:
        raw = load_raw_datasets(data_args, model_args)
    if "validation" not in raw and "train" in raw and data_args.train_val_split > 0:
        parts = raw["train"].train_test_split(test_size=data_args.train_val_split, seed=seed)
        raw["train"], raw["validation"] = parts["train"], parts["test"]
    return raw


def load_image_processor_for(model_args: ImageModelArguments, config):
    """The image processor of ``--image_processor_name`` or of the model (built from the config for
    a ``modeling_configs/`` name or a folder without preprocessor_config.json)."""
    source = model_args.image_processor_name or model_args.model_name_or_path
    return load_image_processor(source, config, **hub_options_of(model_args))


# ------------------------------------------------------------- seq2seq (run_translation, run_seq2seq)
SEQ2SEQ_PREDICTIONS_FILE = "generated_predictions.txt"  # transformers' name: one generated text per line
# (split name) -> (source texts, target texts), in row order.
PairsFromSplit = Callable[[datasets.Dataset, str], tuple[list[str], list[str]]]


@dataclass
class Seq2SeqModelArguments(ModelArguments):
    """transformers' model arguments, plus how to train a tokenizer for a model built from scratch."""

    tokenizer_kind: str | None = field(
        default=None,
        metadata={
            "help": f"With a modeling_configs/ name and no --tokenizer_name: the kind of tokenizer trained on the "
            f"training pairs, one of {TOKENIZER_KINDS + SEQ2SEQ_TOKENIZER_KINDS} (default: the variant's)."
        },
    )
    vocab_size: int = field(
        default=1000, metadata={"help": "Vocabulary size of a tokenizer trained on the training pairs."}
    )


@dataclass
class Seq2SeqDataArguments(DataArguments):
    """transformers' run_translation / run_summarization data arguments."""

    source_prefix: str | None = field(
        default=None, metadata={"help": "Text put before every source, e.g. 'translate English to German: ' for T5."}
    )
    max_source_length: int = field(
        default=128, metadata={"help": "Longest tokenised source; longer ones are truncated."}
    )
    max_target_length: int = field(
        default=128, metadata={"help": "Longest tokenised training target; longer ones are truncated."}
    )
    val_max_target_length: int | None = field(
        default=None,
        metadata={
            "help": "Longest generation in evaluation (default: max_target_length); scores compare with the whole target."
        },
    )
    num_beams: int | None = field(
        default=None,
        metadata={"help": "Beams for evaluation and prediction (default: --generation_num_beams, else 1)."},
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
class Seq2SeqBudgetTrainingArguments(Seq2SeqTrainingArguments, TimeBudgetArguments):
    """transformers' Seq2SeqTrainingArguments plus ``--max_time`` (a wall-clock budget in minutes)."""


def start_seq2seq(data_arguments_class: type, argv) -> tuple[Seq2SeqModelArguments, Any, Seq2SeqTrainingArguments]:
    """Parse the arguments (transformers' Seq2SeqTrainingArguments: --predict_with_generate,
    --generation_max_length, --generation_num_beams; and --max_time) and set up logging and the seed."""
    model_args, data_args, training_args = start(
        data_arguments_class, argv, Seq2SeqModelArguments, Seq2SeqBudgetTrainingArguments
    )
    # As transformers' run_translation: the data arguments fill in the generation settings.
    if training_args.generation_max_length is None:
        training_args.generation_max_length = data_args.val_max_target_length
    if data_args.num_beams is not None:
        training_args.generation_num_beams = data_args.num_beams
    if (training_args.do_eval or training_args.do_predict) and not training_args.predict_with_generate:
        logger.warning(
            "without --predict_with_generate, evaluation reports the loss only (no generated text, no scores)"
        )
    return model_args, data_args, training_args


def load_or_train_seq2seq_tokenizer(
    model_args: Seq2SeqModelArguments,
    training_args: Seq2SeqTrainingArguments,
    train_pairs: tuple[list[str], list[str]] | None,
    model_max_length: int,
):
    """``--tokenizer_name`` or the checkpoint's tokenizer; for a ``modeling_configs/`` name without
    one, a tokenizer of ``--tokenizer_kind`` (default: the variant's paper) trained on the
    training sources and targets. Under DDP the main process trains and saves it, the others
    load it (tokenizer training is not deterministic across processes)."""
    if model_args.tokenizer_name or not is_named_config(model_args.model_name_or_path):
        return load_tokenizer(model_args)
    if train_pairs is None:
        raise ValueError(
            f"--model_name_or_path {model_args.model_name_or_path} is a modeling_configs/ name (random "
            "weights): give --tokenizer_name, or --do_train to train a tokenizer on the training pairs"
        )
    kind = model_args.tokenizer_kind or spec_for(named_config(model_args.model_name_or_path).model_type).tokenizer_kind
    with training_args.main_process_first(desc="tokenizer"):
        if training_args.process_index == 0:
            logger.info("training a %s tokenizer (vocabulary %d) on the training pairs", kind, model_args.vocab_size)
            tokenizer = train_tokenizer(
                kind, chain(*train_pairs), model_args.vocab_size, model_max_length=model_max_length
            )
            save_atomically(tokenizer, training_args.output_dir)
        else:
            tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
    return tokenizer


def load_seq2seq_model(model_args: Seq2SeqModelArguments, tokenizer, max_source_length: int):
    """AutoModelForSeq2SeqLM of ``--model_name_or_path``; one built from a ``modeling_configs/``
    name takes the tokenizer's vocabulary size and pad / EOS ids, and starts decoding from the
    pad id (T5's and Marian's convention)."""
    overrides = {}
    if is_named_config(model_args.model_name_or_path):
        if tokenizer.pad_token_id is None or tokenizer.eos_token_id is None:
            raise ValueError(
                f"the tokenizer needs pad and EOS tokens to train a {model_args.model_name_or_path} from scratch"
            )
        overrides = {
            "vocab_size": len(tokenizer),
            "pad_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "decoder_start_token_id": tokenizer.pad_token_id,
        }
    model = load_model(model_args, AutoModelForSeq2SeqLM, tokenizer, **overrides)
    positions = getattr(model.config, "max_position_embeddings", None)  # T5's relative positions have no limit
    if positions is not None and max_source_length > positions:
        raise ValueError(
            f"--max_source_length {max_source_length} exceeds the model's max_position_embeddings ({positions})"
        )
    return model


def run_seq2seq(
    model_args: Seq2SeqModelArguments,
    data_args: Seq2SeqDataArguments,
    training_args: Seq2SeqTrainingArguments,
    pairs_from_split: PairsFromSplit,
    task: str,
) -> dict:
    """Load the data, turn each split into (source, target) text pairs, then train / evaluate /
    predict with Seq2SeqTrainer. Writes what transformers' run_translation writes
    (all_results.json, generated_predictions.txt, the model and tokenizer) plus the model card.
    Returns the metrics of all_results.json."""
    raw = load_raw_datasets(data_args, model_args)
    splits = select_splits(raw, data_args, training_args)
    pairs = {}
    for name, dataset in splits.items():
        pairs[name] = pairs_from_split(dataset, name)
        check_pairs(*pairs[name], name, dataset)
    longest = max(data_args.max_source_length, data_args.max_target_length, data_args.val_max_target_length)
    tokenizer = load_or_train_seq2seq_tokenizer(model_args, training_args, pairs.get("train"), longest)
    model = load_seq2seq_model(model_args, tokenizer, data_args.max_source_length)
    prefix = data_args.source_prefix or ""
    features = {
        name: tokenize_pairs(
            tokenizer,
            *pairs[name],
            prefix,
            data_args.max_source_length,
            data_args.max_target_length if name == "train" else data_args.val_max_target_length,
            name,
        )
        for name in splits
    }
    collator = DataCollatorForSeq2Seq(
        tokenizer,
        model=model,
        label_pad_token_id=IGNORE_INDEX if data_args.ignore_pad_token_for_loss else tokenizer.pad_token_id,
        pad_to_multiple_of=8 if training_args.fp16 or training_args.bf16 else None,
    )
    compute_metrics = generation_metrics(tokenizer) if training_args.predict_with_generate else None
    trainer = build_trainer(
        model, training_args, features, tokenizer, collator, compute_metrics, trainer_class=CheckpointSafeSeq2SeqTrainer
    )
    results = train_and_evaluate(trainer, splits, data_args, training_args)
    if training_args.do_predict:
        output = trainer.predict(features["test"], metric_key_prefix="predict")
        results.update(save_eval_metrics(trainer, output.metrics, len(splits["test"]), split="predict"))
        if training_args.predict_with_generate:
            generated = output.predictions[0] if isinstance(output.predictions, tuple) else output.predictions
            write_lines(trainer, SEQ2SEQ_PREDICTIONS_FILE, decode(tokenizer, generated))
    return finish(trainer, model_args, data_args, task, results)
