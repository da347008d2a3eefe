"""Knowledge distillation for sequence classification (Hinton et al. 2015, as DistilBERT uses it).

A fine-tuned teacher (e.g. all-MiniLM-L6-v2 fine-tuned on the movie reviews with run_glue.py)
trains a smaller student on a mix of its soft targets and the hard labels:

    loss = alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) * CE(student, labels)

(the T^2 keeps the soft term's gradients on the scale of the hard one when T changes). The student
is ``--model_name_or_path`` (a modeling_configs/ name such as bert-mini, or a checkpoint); with
``--student_num_layers K`` it keeps K evenly spaced layers of that checkpoint (DistilBERT's
initialisation: ``--model_name_or_path $TEACHER --student_num_layers 2`` is a 2-layer student
initialised from the teacher's first and last layers, its embeddings, pooler and classifier).

After training, ``--do_eval`` scores student and teacher on the same held-out split and times both
on it (same batches, same threads): ``eval_accuracy`` / ``teacher_eval_accuracy`` and
``eval_speedup`` (teacher seconds / student seconds) in distillation_results.json.

    python examples/run_distillation.py --teacher_model_name_or_path runs/minilm-rt \\
        --model_name_or_path runs/minilm-rt --student_num_layers 2 --dataset_name hf_variants/rt_polarity \\
        --do_train --do_eval --output_dir runs/distilled --use_cpu
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.nn import functional as F


import datasets
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding, EvalPrediction

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.training.fine_tuning import max_length_for
from hf_variants.training.labels import encode_labels
from hf_variants.conversion import load_pretrained
from hf_variants.hub.trainer import CheckpointSafeTrainer
from hf_variants.metrics import accuracy

LAYER_KEY = re.compile(r"(^|\.)layers\.(\d+)\.")  # the stacked layers' state-dict keys (encoder.layers.<i>.)


@dataclass
class DistillationModelArguments(support.ModelArguments):
    """The student is --model_name_or_path; the teacher and the mix of the two losses are these."""

    teacher_model_name_or_path: str = field(
        default=None, metadata={"help": "The fine-tuned teacher (a sequence-classification checkpoint)."}
    )
    student_num_layers: int | None = field(
        default=None, metadata={"help": "Keep this many evenly spaced layers of --model_name_or_path (first and last included)."}
    )
    temperature: float = field(default=2.0, metadata={"help": "Softmax temperature T of the soft targets."})
    alpha: float = field(default=0.5, metadata={"help": "Weight of the soft (KL) term; 1 - alpha weighs the labels' cross-entropy."})

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


def distillation_loss(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, labels: torch.Tensor, temperature: float, alpha: float
) -> torch.Tensor:
    """alpha * T^2 * KL(teacher_T || student_T) + (1 - alpha) * CE(student, labels).

    student_logits, teacher_logits: (B, C); labels: (B,) class ids. Returns a scalar."""
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {tuple(student_logits.shape)} and teacher logits {tuple(teacher_logits.shape)} differ")
    soft = F.kl_div(
        F.log_softmax(student_logits / temperature, dim=-1),
        F.log_softmax(teacher_logits / temperature, dim=-1),
        reduction="batchmean",
        log_target=True,
    )
    hard = F.cross_entropy(student_logits, labels)
    return alpha * temperature**2 * soft + (1.0 - alpha) * hard


class DistillationTrainer(CheckpointSafeTrainer):
    """Trainer whose loss is :func:`distillation_loss` against a frozen teacher's logits."""

    def __init__(self, *args, teacher: torch.nn.Module, temperature: float, alpha: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.teacher = teacher.eval().requires_grad_(False).to(self.args.device)
        self.temperature, self.alpha = temperature, alpha

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        with torch.no_grad():
            teacher_logits = self.teacher(**inputs).logits
        loss = distillation_loss(outputs.logits, teacher_logits, labels, self.temperature, self.alpha)
        inputs["labels"] = labels  # Trainer reads them again for evaluation
        return (loss, outputs) if return_outputs else loss


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
        raise ValueError(f"--student_num_layers needs unshared layers; the model shares them ({config.layer_sharing!r})")
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
        raise ValueError(f"the layer-dropped weights do not fit the student: missing {missing}, unexpected {unexpected}")
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


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(DistillationDataArguments, argv, DistillationModelArguments)
    raw = support.load_raw_datasets(data_args, model_args)
    splits = support.select_splits(raw, data_args, training_args, ("validation",), ())
    text, label = data_args.text_column_name, data_args.label_column_name
    for split, dataset in splits.items():
        support.require_columns(dataset, [text, label], f"{split} distillation", text_columns=[text])

    teacher = load_pretrained(model_args.teacher_model_name_or_path, AutoModelForSequenceClassification)
    names = [teacher.config.id2label[i] for i in range(teacher.config.num_labels)]
    tokenizer = support.load_tokenizer(model_args)
    max_length = max_length_for(tokenizer, data_args.max_seq_length)
    student = support.load_model(
        model_args, AutoModelForSequenceClassification, tokenizer, label_names=names, max_seq_length=max_length
    )
    if model_args.student_num_layers is not None:
        student = keep_layers(student, model_args.student_num_layers)
    if student.config.label2id != teacher.config.label2id:
        raise ValueError(f"student labels {student.config.label2id} differ from the teacher's {teacher.config.label2id}")

    features: dict[str, datasets.Dataset] = {}
    for split, dataset in splits.items():
        labels = encode_labels(dataset, label, student.config.label2id, split)
        dataset = dataset.add_column("labels", labels)
        with training_args.main_process_first(desc=f"tokenizing {split}"):
            features[split] = dataset.map(
                lambda batch: tokenizer(batch[text], max_length=max_length, truncation=True),
                batched=True, remove_columns=[c for c in dataset.column_names if c != "labels"], desc=f"Tokenizing {split}",
            )

    def compute_metrics(prediction: EvalPrediction) -> dict[str, float]:
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        return {"accuracy": accuracy(np.argmax(logits, axis=-1), prediction.label_ids)}

    trainer = support.build_trainer(
        student, training_args, features, tokenizer, DataCollatorWithPadding(tokenizer), compute_metrics,
        trainer_class=DistillationTrainer, teacher=teacher, temperature=model_args.temperature, alpha=model_args.alpha,
    )
    results: dict = {
        "student_parameters": sum(p.numel() for p in student.parameters()),
        "teacher_parameters": sum(p.numel() for p in teacher.parameters()),
        "student_layers": student.config.num_hidden_layers,
        "teacher_layers": teacher.config.num_hidden_layers,
    }
    if training_args.do_train:
        results.update(support.train_and_save(trainer, splits["train"], data_args, training_args))
    if training_args.do_eval:
        loader = trainer.get_eval_dataloader(features["validation"])
        references = np.array(features["validation"]["labels"])
        student_predictions, student_seconds = timed_predictions(trainer.model, loader)
        teacher_predictions, teacher_seconds = timed_predictions(trainer.teacher, loader)
        metrics = {
            "eval_accuracy": accuracy(student_predictions, references),
            "teacher_eval_accuracy": accuracy(teacher_predictions, references),
            "eval_student_seconds": student_seconds,
            "eval_teacher_seconds": teacher_seconds,
            "eval_speedup": teacher_seconds / student_seconds,
        }
        results.update(support.save_eval_metrics(trainer, metrics, len(features["validation"])))
    support.write_json(trainer, "distillation_results.json", results)
    return support.finish(trainer, model_args, data_args, "text-classification", results)


if __name__ == "__main__":
    main()
