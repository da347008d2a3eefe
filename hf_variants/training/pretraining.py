"""The pieces both pretraining scripts (examples/run_pretraining.py, run_clm.py) use: the config
of a named flavour or a checkpoint, the tokenizer every process shares, the Trainer that reads the
training stream in order, checkpoint resumption and the argument parsing with the pretraining
defaults (BERT's schedule, ``--recipe``)."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import sys
from pathlib import Path

import datasets
import torch
from transformers import AutoConfig, AutoTokenizer, HfArgumentParser, PretrainedConfig, TrainingArguments, set_seed

from hf_variants.hub.atomic import save_atomically
from hf_variants.hub.checkpoints import last_complete_checkpoint, resolve_checkpoint
from hf_variants.hub.trainer import CheckpointSafeTrainer, check_optimizer_arguments, trainer_argument_defaults
from hf_variants.models.named_configs import is_named_config, named_config
from hf_variants.objectives.recipes import recipe_for
from hf_variants.objectives.tokenized import cached_tokenizer
from hf_variants.registry import spec_for
from hf_variants.tokenization import train_tokenizer
from hf_variants.training.pretraining_data import data_cache_root, text_fingerprint

logger = logging.getLogger("run_pretraining")


def load_config(name_or_path: str, overrides: str | None = None) -> tuple[PretrainedConfig, bool]:
    """(the config, whether the model trains from scratch): a ``modeling_configs/`` name with
    ``overrides`` (transformers' ``a=1,b=x`` syntax) applied, or a checkpoint's config. ValueError
    for overrides of a checkpoint, or a name that is neither."""
    if is_named_config(name_or_path):
        config = named_config(name_or_path)
        if overrides:
            config.update_from_string(overrides)  # raises ValueError naming an unknown key
        return config, True
    if overrides:
        raise ValueError(f"--config_overrides changes a config trained from scratch; {name_or_path} is a checkpoint")
    if not (Path(name_or_path) / "config.json").is_file():
        raise ValueError(f"--model_name_or_path {name_or_path!r} is neither a modeling_configs/ name nor a checkpoint")
    return AutoConfig.from_pretrained(name_or_path), False


def load_tokenizer(args, model_type: str, train_text: datasets.Dataset, from_scratch: bool, model_max_length: int):
    """``--tokenizer_name``, else a checkpoint's own tokenizer, else one of ``--tokenizer_kind``
    (default: the variant's paper) trained on ``train_text`` (cached under the data cache by
    content). ``args``: the script's arguments (tokenizer_name, model_name_or_path, tokenizer_kind,
    vocab_size, data_cache_dir)."""
    if args.tokenizer_name:
        return AutoTokenizer.from_pretrained(args.tokenizer_name)
    if not from_scratch and (Path(args.model_name_or_path) / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(args.model_name_or_path)
    # The paper's tokenizer, from the variant's spec.
    kind = args.tokenizer_kind or spec_for(model_type).tokenizer_kind

    def train():
        logger.info("training a %s tokenizer (vocabulary %d) on the training text", kind, args.vocab_size)
        return train_tokenizer(
            kind, (text for text in train_text["text"]), args.vocab_size, model_max_length=model_max_length
        )

    root = data_cache_root(args)
    if root is None:
        return train()
    return cached_tokenizer(train, text_fingerprint(train_text), kind, args.vocab_size, root, model_max_length)


def shared_tokenizer(
    args,
    training_args: TrainingArguments,
    checkpoint: str | None,
    model_type: str,
    train_text: datasets.Dataset,
    from_scratch: bool,
    model_max_length: int,
):
    """The one tokenizer every process uses, saved in output_dir.

    Under DDP every process must use the same vocabulary, and `tokenizers` training is not
    deterministic across processes: the main process trains (or loads) and saves it, the others
    load it. A resumed run reuses the tokenizer its checkpoints were trained with.
    """
    with training_args.main_process_first(desc="tokenizer"):
        if checkpoint is not None and not args.tokenizer_name:
            tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
        elif training_args.process_index == 0:
            tokenizer = load_tokenizer(args, model_type, train_text, from_scratch, model_max_length)
            save_atomically(tokenizer, training_args.output_dir)
        else:
            tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
    vocabulary_digest = hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()[:16]
    logger.info(
        "process %d of %d: tokenizer vocabulary digest %s",
        training_args.process_index,
        training_args.world_size,
        vocabulary_digest,
    )
    return tokenizer


class StreamTrainer(CheckpointSafeTrainer):
    """Reads `PhasedTrainingStream` in order (it is already shuffled, phase by phase); with a
    `progress` (ProgressReport), every log line gets the throughput since the previous one."""

    progress = None
    second_task_weight: float | None = None  # None: the model's own loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self.second_task_weight is None:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        outputs = model(**inputs)
        second = [key for key in outputs.keys() if key.endswith("_loss") and key != "mlm_loss"]
        if outputs.get("mlm_loss") is None or len(second) != 1:
            raise ValueError(
                f"--second_task_weight needs a model output with mlm_loss and one second task loss, "
                f"got the fields {list(outputs.keys())}"
            )
        loss = outputs["mlm_loss"] + self.second_task_weight * outputs[second[0]]
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self.progress is not None and "loss" in logs:  # training logs, not the final summary
            logs.update(self.progress.metrics())
        super().log(logs, start_time)

    def _get_train_sampler(self, train_dataset=None):
        return torch.utils.data.SequentialSampler(train_dataset or self.train_dataset)


def checkpoint_to_resume(args, training_args: TrainingArguments) -> str | None:
    """`--resume_from_checkpoint PATH|last`, else the newest complete checkpoint-* of output_dir
    (incomplete ones are skipped with a warning), unless `--overwrite_output_dir` (``args``: the
    script's arguments, which carry it)."""
    if training_args.resume_from_checkpoint is not None:
        return resolve_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    if args.overwrite_output_dir:
        return None
    checkpoint = last_complete_checkpoint(training_args.output_dir)
    if checkpoint is not None:
        logger.info("resuming from %s (pass --overwrite_output_dir to start over)", checkpoint)
    return checkpoint


def parse_arguments(arguments_class: type, argv: list[str] | None, **defaults) -> tuple:
    """(script arguments, TrainingArguments) from the command line, with the pretraining scripts'
    defaults (`defaults` override them); logging set up and the seed set."""
    parser = HfArgumentParser((arguments_class, TrainingArguments))
    parser.set_defaults(
        **{
            "weight_decay": 0.01,
            "save_strategy": "steps",
            "save_steps": 1000,
            "logging_steps": 50,
            "report_to": "none",
            "dataloader_pin_memory": torch.cuda.is_available(),
            **trainer_argument_defaults(),
            **defaults,
        }
    )
    if "recipe" in {f.name for f in dataclasses.fields(arguments_class)}:
        # --recipe NAME: the recipe's values become the defaults; flags on the command line still win.
        recipe_parser = argparse.ArgumentParser(add_help=False)
        recipe_parser.add_argument("--recipe")
        recipe = recipe_parser.parse_known_args(sys.argv[1:] if argv is None else argv)[0].recipe
        if recipe:
            parser.set_defaults(**recipe_for(recipe).arguments())
    args, training_args = parser.parse_args_into_dataclasses(args=argv)
    check_optimizer_arguments(training_args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    set_seed(training_args.seed)
    return args, training_args
