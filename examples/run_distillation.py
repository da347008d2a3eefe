"""Knowledge distillation for sequence classification (Hinton et al. 2015, as DistilBERT uses it).

A fine-tuned teacher (e.g. all-MiniLM-L6-v2 fine-tuned on the movie reviews with run_glue.py)
trains a smaller student on a mix of its soft targets and the hard labels:

    loss = alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) * CE(student, labels)

(the T^2 keeps the soft term's gradients on the scale of the hard one when T changes). The student
is ``--model_name_or_path`` (a modeling_configs/ name such as bert-mini, or a checkpoint); with
``--student_num_layers K`` it keeps K evenly spaced layers of that checkpoint (DistilBERT's
initialisation: ``--model_name_or_path $TEACHER --student_num_layers 2`` is a 2-layer student
initialised from the teacher's first and last layers, its embeddings, pooler and classifier).

The student may be any variant with its own tokenizer (``--model_name_or_path spanbert-mini
--tokenizer_name <folder>``, or a pretrained mini's checkpoint): the teacher reads each training
text with its own tokenizer (``--teacher_tokenizer_name``, default the teacher's folder), once;
its logits are cached in ``--teacher_logits_cache_dir`` (default ``<output_dir>/../teacher_logits``)
under a fingerprint of the teacher and the texts, and every later student or seed on the same
texts reuses them (hf_variants/distillation.py). ``--transfer_dataset_name hf_variants/rt_transfer``
trains on the movie-review transfer set (rt-polarity train sentences + Pang & Lee review
sentences, mostly unlabeled: examples without a label have only the KL term) instead of
``--dataset_name``'s train split; ``--dataset_name`` still gives the validation split.

After training, ``--do_eval`` scores student and teacher on the same held-out sentences, each
through its own tokenizer, and times both (same batch size, same threads): ``eval_accuracy`` /
``teacher_eval_accuracy`` and ``eval_speedup`` (teacher seconds / student seconds) in
distillation_results.json; ``--do_predict`` the same on the test split (``test_accuracy`` ...).

    python examples/run_distillation.py --teacher_model_name_or_path runs/minilm-rt \\
        --model_name_or_path runs/minilm-rt --student_num_layers 2 --dataset_name hf_variants/rt_polarity \\
        --do_train --do_eval --output_dir runs/distilled --use_cpu
    python examples/run_distillation.py --teacher_model_name_or_path runs/minilm-rt \\
        --model_name_or_path bert-mini --tokenizer_name runs/minilm-rt --alpha 1 \\
        --transfer_dataset_name hf_variants/rt_transfer --dataset_name hf_variants/rt_polarity \\
        --do_train --do_eval --output_dir runs/distil/bert-mini-random-s1 --use_cpu
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, EvalPrediction

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.conversion import load_pretrained
from hf_variants.distillation import (
    TRANSFER_INDEX,
    DistillationCollator,
    DistillationTrainer,
    cached_teacher_logits,
    check_same_labels,
    distillation_features,
)
from hf_variants.metrics import accuracy
from hf_variants.training.fine_tuning import max_length_for
from hf_variants.training.labels import encode_labels

SCORED_SPLITS = {"validation": "eval", "test": "test"}  # split -> metric prefix (--do_eval, --do_predict)
LAYER_KEY = re.compile(r"(^|\.)layers\.(\d+)\.")  # the stacked layers' state-dict keys (encoder.layers.<i>.)


@dataclass
class DistillationModelArguments(support.ModelArguments):
    """The student is --model_name_or_path; the teacher and the mix of the two losses are these."""

    teacher_model_name_or_path: str = field(
        default=None, metadata={"help": "The fine-tuned teacher (a sequence-classification checkpoint)."}
    )
    teacher_tokenizer_name: str | None = field(
        default=None,
        metadata={
            "help": "The teacher's tokenizer (default: the teacher's folder). The student's is --tokenizer_name."
        },
    )
    student_num_layers: int | None = field(
        default=None,
        metadata={"help": "Keep this many evenly spaced layers of --model_name_or_path (first and last included)."},
    )
    temperature: float = field(default=2.0, metadata={"help": "Softmax temperature T of the soft targets."})
    alpha: float = field(
        default=0.5, metadata={"help": "Weight of the soft (KL) term; 1 - alpha weighs the labels' cross-entropy."}
    )

    def __post_init__(self) -> None:
        if not self.teacher_model_name_or_path:
            raise ValueError("--teacher_model_name_or_path is required (the fine-tuned teacher)")
        if self.temperature <= 0:
            raise ValueError(f"--temperature must be > 0, got {self.temperature}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"--alpha must lie in [0, 1], got {self.alpha}")
        if self.student_num_layers is not None and self.student_num_layers < 1:
            raise ValueError(f"--student_num_layers must be >= 1, got {self.student_num_layers}")


@dataclass
class DistillationDataArguments(support.DataArguments):
    text_column_name: str = field(default="sentence", metadata={"help": "The column holding the text."})
    label_column_name: str = field(default="label", metadata={"help": "The column holding the class label."})
    transfer_dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "Train on this data set's train split (e.g. hf_variants/rt_transfer; -1 or a missing label column: "
            "unlabeled) instead of --dataset_name's."
        },
    )
    transfer_dataset_config_name: str | None = field(
        default=None, metadata={"help": "The transfer data set's configuration."}
    )
    teacher_logits_cache_dir: str | None = field(
        default=None,
        metadata={"help": "Where the teacher's logits are cached (default: <output_dir>/../teacher_logits)."},
    )
    teacher_batch_size: int = field(
        default=64, metadata={"help": "Batch size of the teacher's pass over the training texts."}
    )


def evenly_spaced_layers(num_layers: int, keep: int) -> list[int]:
    """``keep`` layer indices of ``num_layers``, first and last included: (6, 2) -> [0, 5]; (12, 6) -> [0, 2, 4, 7, 9, 11]."""
    if not 1 <= keep <= num_layers:
        raise ValueError(f"cannot keep {keep} of {num_layers} layers")
    if keep == 1:
        return [num_layers - 1]
    return [round(i * (num_layers - 1) / (keep - 1)) for i in range(keep)]


def keep_layers(model: torch.nn.Module, keep: int) -> torch.nn.Module:
    """A copy of ``model`` with ``keep`` evenly spaced layers of its stack (every other weight as is)."""
    config = model.config
    if getattr(config, "layer_sharing", "none") not in (None, "none"):
        raise ValueError(
            f"--student_num_layers needs unshared layers; the model shares them ({config.layer_sharing!r})"
        )
    kept = evenly_spaced_layers(config.num_hidden_layers, keep)
    new_index = {old: new for new, old in enumerate(kept)}
    state = {}
    for key, value in model.state_dict().items():
        match = LAYER_KEY.search(key)
        if match is None:
            state[key] = value
        elif int(match.group(2)) in new_index:
            state[key[: match.start(2)] + str(new_index[int(match.group(2))]) + key[match.end(2) :]] = value
    student_config = config.__class__.from_dict({**config.to_dict(), "num_hidden_layers": keep})
    student = type(model)(student_config)
    missing, unexpected = student.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(
            f"the layer-dropped weights do not fit the student: missing {missing}, unexpected {unexpected}"
        )
    return student


@torch.inference_mode()
def timed_predictions(model: torch.nn.Module, loader) -> tuple[np.ndarray, float]:
    """(argmax predictions over ``loader``, seconds spent in the forwards)."""
    model.eval()
    predictions, seconds = [], 0.0
    for batch in loader:
        batch = {k: v.to(model.device) for k, v in batch.items() if k != "labels"}
        start = time.perf_counter()
        logits = model(**batch).logits
        seconds += time.perf_counter() - start
        predictions.append(logits.argmax(-1).cpu().numpy())
    return np.concatenate(predictions), seconds


def load_training_split(
    data_args: DistillationDataArguments, model_args, training_args, raw
) -> datasets.Dataset | None:
    """The texts the student learns from: --transfer_dataset_name's train split if given, else --dataset_name's."""
    if not training_args.do_train:
        return None
    if data_args.transfer_dataset_name is None:
        return support.take_split(raw, "train", "--do_train", data_args.max_train_samples)
    transfer_args = support.DataArguments(
        dataset_name=data_args.transfer_dataset_name, dataset_config_name=data_args.transfer_dataset_config_name
    )
    transfer = support.load_raw_datasets(transfer_args, model_args)
    return support.take_split(transfer, "train", "--transfer_dataset_name", data_args.max_train_samples)


def training_labels(dataset: datasets.Dataset, column: str, label2id: dict[str, int]) -> list[int] | None:
    """Class ids of a training split, -1 where a row has none; None when it has no label column
    (a fully unlabeled transfer set)."""
    if column not in dataset.column_names:
        return None
    return encode_labels(dataset, column, label2id, "train", hidden_label=-1)


def score_student_and_teacher(
    trainer,
    teacher,
    student_features: datasets.Dataset,
    teacher_features: datasets.Dataset,
    teacher_tokenizer,
    prefix: str,
) -> dict[str, float]:
    """Accuracy of student and teacher on the same sentences (each through its own tokenizer, same
    batch size, same threads) and the seconds each spends in its forwards."""
    loader = trainer.get_eval_dataloader(student_features)
    teacher_loader = torch.utils.data.DataLoader(
        teacher_features,
        batch_size=trainer.args.per_device_eval_batch_size,
        collate_fn=DataCollatorWithPadding(teacher_tokenizer),
    )
    references = np.array(student_features["labels"])
    student_predictions, student_seconds = timed_predictions(trainer.model, loader)
    teacher_predictions, teacher_seconds = timed_predictions(teacher, teacher_loader)
    return {
        f"{prefix}_accuracy": accuracy(student_predictions, references),
        f"teacher_{prefix}_accuracy": accuracy(teacher_predictions, references),
        f"{prefix}_student_seconds": student_seconds,
        f"{prefix}_teacher_seconds": teacher_seconds,
        f"{prefix}_speedup": teacher_seconds / student_seconds,
    }


def run_settings(model_args: DistillationModelArguments, data_args: DistillationDataArguments) -> dict:
    """What the run was asked for, recorded in distillation_results.json (research/zoo_students.py's
    model card reads the teacher, the transfer set and the mix from there)."""
    return {
        "teacher_model_name_or_path": model_args.teacher_model_name_or_path,
        "teacher_tokenizer_name": model_args.teacher_tokenizer_name or model_args.teacher_model_name_or_path,
        "student_model_name_or_path": model_args.model_name_or_path,
        "student_num_layers": model_args.student_num_layers,
        "temperature": model_args.temperature,
        "alpha": model_args.alpha,
        "dataset_name": data_args.dataset_name,
        "dataset_config_name": data_args.dataset_config_name,
        "transfer_dataset_name": data_args.transfer_dataset_name,
        "transfer_dataset_config_name": data_args.transfer_dataset_config_name,
        "max_seq_length": data_args.max_seq_length,
    }


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(DistillationDataArguments, argv, DistillationModelArguments)
    text, label = data_args.text_column_name, data_args.label_column_name
    raw = support.load_raw_datasets(data_args, model_args)
    splits = support.select_splits(raw, data_args, training_args, ("validation",), ("test",))
    splits.pop("train", None)
    train_split = load_training_split(data_args, model_args, training_args, raw)
    if train_split is not None:
        support.require_columns(train_split, [text], "train distillation", text_columns=[text])
        splits["train"] = train_split
    for split in SCORED_SPLITS:
        if split in splits:
            support.require_columns(splits[split], [text, label], f"{split} distillation", text_columns=[text])

    teacher = load_pretrained(model_args.teacher_model_name_or_path, AutoModelForSequenceClassification)
    teacher_tokenizer = AutoTokenizer.from_pretrained(
        model_args.teacher_tokenizer_name or model_args.teacher_model_name_or_path
    )
    teacher_max_length = min(
        max_length_for(teacher_tokenizer, data_args.max_seq_length), teacher.config.max_position_embeddings
    )
    names = [teacher.config.id2label[i] for i in range(teacher.config.num_labels)]
    tokenizer = support.load_tokenizer(model_args)
    max_length = max_length_for(tokenizer, data_args.max_seq_length)
    student = support.load_model(
        model_args, AutoModelForSequenceClassification, tokenizer, label_names=names, max_seq_length=max_length
    )
    if model_args.student_num_layers is not None:
        student = keep_layers(student, model_args.student_num_layers)
    check_same_labels(teacher.config, student.config)

    results: dict = {
        "settings": run_settings(model_args, data_args),
        "student_parameters": sum(p.numel() for p in student.parameters()),
        "teacher_parameters": sum(p.numel() for p in teacher.parameters()),
        "student_layers": student.config.num_hidden_layers,
        "teacher_layers": teacher.config.num_hidden_layers,
    }
    features: dict[str, datasets.Dataset] = {}
    teacher_logits = None
    if "train" in splits:
        texts = list(splits["train"][text])
        labels = training_labels(splits["train"], label, student.config.label2id)
        cache_dir = (
            data_args.teacher_logits_cache_dir or Path(training_args.output_dir).resolve().parent / "teacher_logits"
        )
        with training_args.main_process_first(desc="the teacher's logits"):
            cached = cached_teacher_logits(
                teacher, teacher_tokenizer, texts, cache_dir, teacher_max_length, data_args.teacher_batch_size
            )
        teacher_logits = cached.logits
        features["train"] = distillation_features(texts, labels, tokenizer, max_length)
        labelled = 0 if labels is None else sum(value >= 0 for value in labels)
        results.update(
            teacher_logits_file=str(cached.path),
            teacher_logits_computed=cached.computed,
            teacher_logits_seconds=cached.seconds,
            transfer_samples=len(texts),
            transfer_labelled_samples=labelled,
        )
    teacher_features: dict[str, datasets.Dataset] = {}  # the same sentences through the teacher's tokenizer
    for split in SCORED_SPLITS:
        if split in splits:
            dataset = splits[split]
            labels = encode_labels(dataset, label, student.config.label2id, split)
            features[split] = distillation_features(dataset[text], labels, tokenizer, max_length).remove_columns(
                TRANSFER_INDEX
            )
            teacher_features[split] = distillation_features(
                dataset[text], labels, teacher_tokenizer, teacher_max_length
            ).remove_columns(TRANSFER_INDEX)

    def compute_metrics(prediction: EvalPrediction) -> dict[str, float]:
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        return {"accuracy": accuracy(np.argmax(logits, axis=-1), prediction.label_ids)}

    trainer = support.build_trainer(
        student,
        training_args,
        features,
        tokenizer,
        DistillationCollator(tokenizer, teacher_logits),
        compute_metrics,
        trainer_class=DistillationTrainer,
        temperature=model_args.temperature,
        alpha=model_args.alpha,
    )
    if training_args.do_train:
        results.update(support.train_and_save(trainer, splits["train"], data_args, training_args))
    teacher.to(training_args.device)
    for split, prefix in SCORED_SPLITS.items():  # --do_eval: validation, --do_predict: test
        if split in features:
            metrics = score_student_and_teacher(
                trainer, teacher, features[split], teacher_features[split], teacher_tokenizer, prefix
            )
            results.update(support.save_eval_metrics(trainer, metrics, len(features[split]), split=prefix))
    support.write_json(trainer, "distillation_results.json", results)
    return support.finish(trainer, model_args, data_args, "text-classification", results)


if __name__ == "__main__":
    main()
