"""`CheckpointSafeTrainer`: transformers' Trainer with atomic checkpoints and saves, resuming only
from complete checkpoints (`hf_variants.hub.checkpoints`), whose ``push_to_hub`` publishes our
model card. Its own module because importing transformers' Trainer is slow: `import hf_variants`
does not pay for it."""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from transformers import Seq2SeqTrainer, Trainer, TrainingArguments
from transformers.training_args import OptimizerNames

from .card import DatasetInfo
from .checkpoints import AtomicCheckpointsMixin
from .run_record import write_model_card

logger = logging.getLogger(__name__)


class ModelCardTrainerMixin:
    """``Trainer.create_model_card`` (called by ``Trainer.push_to_hub``) writes hf-variants' card
    (hf_variants.hub.write_model_card: variant description, model-index with the last evaluation's
    metrics, the training curve plot and run summary) instead of transformers' default one.

    ``dataset`` (``push_to_hub(dataset=...)``) is a :class:`DatasetInfo`, or transformers' string
    form (a dataset name, with ``dataset_tags`` as its id and ``dataset_args`` as its config). The
    model-index needs it: without one the card reports no metrics. A folder without our
    config.json (e.g. a peft adapter) gets transformers' card.
    """

    def create_model_card(
        self,
        language: str | None = None,
        license: str | None = None,
        tags=None,
        model_name: str | None = None,
        finetuned_from: str | None = None,
        tasks=None,
        dataset_tags=None,
        dataset: DatasetInfo | str | list[str] | None = None,
        dataset_args=None,
        **kwargs,
    ) -> None:
        output_dir = Path(self.args.output_dir)
        if not self.is_world_process_zero():
            return
        if not (output_dir / "config.json").is_file():
            super().create_model_card(
                language=language,
                license=license,
                tags=tags,
                model_name=model_name,
                finetuned_from=finetuned_from,
                tasks=tasks,
                dataset_tags=dataset_tags,
                dataset=dataset,
                dataset_args=dataset_args,
                **kwargs,
            )
            return
        dataset_info = _dataset_info(dataset, dataset_tags, dataset_args)
        evaluations = [entry for entry in self.state.log_history if any(key.startswith("eval_") for key in entry)]
        eval_results = (
            {key: value for key, value in evaluations[-1].items() if key.startswith("eval_")} if evaluations else None
        )
        if eval_results and dataset_info is None:
            logger.warning(
                "push_to_hub: pass dataset=DatasetInfo(...) (or a dataset name) to put the metrics in the card"
            )
            eval_results = None
        task = tasks[0] if isinstance(tasks, list) and tasks else tasks
        write_model_card(
            output_dir,
            trainer_state=self.state,
            eval_results=eval_results,
            training_args=self.args,
            dataset=dataset_info,
            task=task,
            base_model=finetuned_from,
            model_name=model_name,
            repo_id=self.hub_model_id,
            license=license or "apache-2.0",
            language=language or "en",
        )


def _dataset_info(dataset, dataset_tags, dataset_args) -> DatasetInfo | None:
    """transformers' (name, tags, args) dataset description -> DatasetInfo (first entries of lists)."""
    if dataset is None or isinstance(dataset, DatasetInfo):
        return dataset

    def first(value):
        return value[0] if isinstance(value, (list, tuple)) and value else value

    name = first(dataset)
    return DatasetInfo(name=name, id=first(dataset_tags) or name, config=first(dataset_args))


# Adafactor options ``--optim_args`` may set, with their types. transformers' ``--optim adafactor``
# fixes scale_parameter=False and ignores --optim_args; its relative_step schedule is left out
# because Trainer always passes --learning_rate.
ADAFACTOR_OPTIM_ARGS = {"scale_parameter": bool, "clip_threshold": float, "decay_rate": float, "beta1": float}


def adafactor_optim_args(optim_args: str | None) -> dict:
    """``"scale_parameter=True,beta1=0.9"`` -> ``{"scale_parameter": True, "beta1": 0.9}`` (ValueError
    naming any key Adafactor does not take here, or a value of the wrong type)."""
    parsed = {}
    for item in (optim_args or "").replace(" ", "").split(","):
        if not item:
            continue
        key, separator, value = item.partition("=")
        if not separator or key not in ADAFACTOR_OPTIM_ARGS:
            raise ValueError(
                f"--optim_args {item!r}: with --optim adafactor, give key=value pairs of {sorted(ADAFACTOR_OPTIM_ARGS)}"
            )
        if ADAFACTOR_OPTIM_ARGS[key] is bool:
            if value.lower() not in ("true", "false"):
                raise ValueError(f"--optim_args {key}={value!r}: expected true or false")
            parsed[key] = value.lower() == "true"
        else:
            try:
                parsed[key] = float(value)
            except ValueError:
                raise ValueError(f"--optim_args {key}={value!r}: expected a number") from None
    return parsed


def trainer_argument_defaults() -> dict:
    """TrainingArguments defaults every example script parses with. ``use_cpu`` when the machine
    has no accelerator: training runs on the CPU there either way, and the flag is what lets
    ``--bf16`` mean CPU autocast (without it the Trainer refuses ``--bf16`` on a CPU-only machine),
    so a script called with ``--bf16`` needs no machine-dependent flag from its caller."""
    return {"use_cpu": not torch.accelerator.is_available()}


def check_optimizer_arguments(args: TrainingArguments) -> None:
    """Refuse bad ``--optim_args`` for ``--optim adafactor`` when the arguments are parsed, before
    any data is loaded (the Trainer would only meet them when it builds the optimizer)."""
    if args.optim == OptimizerNames.ADAFACTOR:
        adafactor_optim_args(args.optim_args)


class AdafactorOptimArgsMixin:
    """``--optim adafactor --optim_args scale_parameter=True`` gives the paper's Adafactor: each
    weight's update is scaled by that weight's root mean square, as T5 was trained. It matters for
    T5 from scratch: its embeddings start at unit variance and its projections at d^-0.5, so one
    unscaled step size is either negligible for the first or too large for the second (see the
    README's T5 sentiment runs)."""

    @staticmethod
    def get_optimizer_cls_and_kwargs(args: TrainingArguments, model=None):
        optimizer_cls, optimizer_kwargs = Trainer.get_optimizer_cls_and_kwargs(args, model)
        if args.optim == OptimizerNames.ADAFACTOR:
            optimizer_kwargs = {**optimizer_kwargs, **adafactor_optim_args(args.optim_args)}
        return optimizer_cls, optimizer_kwargs


class CheckpointSafeTrainer(ModelCardTrainerMixin, AdafactorOptimArgsMixin, AtomicCheckpointsMixin, Trainer):
    """transformers' Trainer whose checkpoints, final save, trainer state and results files are
    written atomically, whose ``train(resume_from_checkpoint=True | "last" | path)`` resumes only
    from a complete checkpoint, whose ``push_to_hub`` publishes our model card, and whose
    ``--optim adafactor`` honours ``--optim_args`` (`AdafactorOptimArgsMixin`)."""


class CheckpointSafeSeq2SeqTrainer(
    ModelCardTrainerMixin, AdafactorOptimArgsMixin, AtomicCheckpointsMixin, Seq2SeqTrainer
):
    """transformers' Seq2SeqTrainer (evaluation and prediction by `generate()` with
    ``--predict_with_generate``) with the atomic checkpoints and model card of `CheckpointSafeTrainer`."""
