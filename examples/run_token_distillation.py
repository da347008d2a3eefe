#!/usr/bin/env python
"""Knowledge distillation for token classification (POS, NER): a fine-tuned token classifier of any
family teaches any variant's student, each with its own tokenizer, word by word. Arguments as
transformers' ``run_ner.py`` (``--task_name pos|ner``, ``--dataset_name``, ``--text_column_name``,
``--label_column_name``) plus the teacher's and the mix's (as ``run_distillation.py``)::

    python examples/run_token_distillation.py --task_name pos --dataset_name hf_variants/wsj_pos \\
        --teacher_model_name_or_path runs/minilm-pos --model_name_or_path albert-mini \\
        --tokenizer_name <folder> --do_train --do_eval --do_predict --output_dir runs/pos-albert-distilled --use_cpu

The two tokenizers split words differently, so the loss is per word (hf_variants/distillation.py):
the teacher reads each training sentence with its own tokenizer once, and its logits at each word's
first sub-token are cached (``--teacher_logits_cache_dir``, default ``<output_dir>/../teacher_logits``,
reused by every later student and seed); the student's logits at its own first sub-token of that
word are compared with them: ``alpha * T^2 * KL(teacher_T || student_T) + (1 - alpha) * CE`` (the CE
term for labelled words), averaged over the batch's words. Only a word's first sub-token is trained
and scored (as run_ner.py without ``--label_all_tokens``). ``--transfer_dataset_name`` trains on
another data set's train split (its sentences as word lists; without a label column they are
unlabeled) instead of ``--dataset_name``'s.

The teacher's labels are the student's (its ``id2label``, in its order); the data's tag set must be
the teacher's (a ValueError otherwise). ``--do_eval`` (validation) and ``--do_predict`` (test) score
student and teacher on the same words, each through its own tokenizer, and time both (same batch
size, same threads): POS word accuracy, NER entity precision / recall / F1 (seqeval) and word
accuracy, as run_ner.py reports them (words cut off by ``--max_seq_length`` count as predicted
``O``), e.g. ``eval_accuracy`` / ``teacher_eval_accuracy`` and ``eval_speedup`` (teacher seconds /
student seconds) in distillation_results.json.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer, PreTrainedTokenizerBase

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.conversion import load_pretrained
from hf_variants.distillation import (
    TEACHER_WORD_INDEX,
    DistillationTrainer,
    TokenDistillationCollator,
    cached_teacher_logits,
    check_same_labels,
    token_distillation_features,
    word_offsets,
)
from hf_variants.metrics import accuracy, seqeval_scores
from hf_variants.training.fine_tuning import max_length_for
from hf_variants.training.labels import encode_labels, label_feature, label_names

TASKS = ("ner", "pos")
SCORED_SPLITS = {"validation": "eval", "test": "test"}  # split -> metric prefix (--do_eval, --do_predict)
SPAN_PREFIXES = ("B-", "I-", "E-", "S-", "L-", "U-")
PLACEHOLDER_TAG = "O"  # the prediction for words that got no token (as run_ner.py)


@dataclass
class TokenDistillationModelArguments(support.ModelArguments):
    """The student is --model_name_or_path; the teacher and the mix of the two losses are these."""

    teacher_model_name_or_path: str = field(
        default=None, metadata={"help": "The fine-tuned teacher (a token-classification checkpoint of any family)."}
    )
    teacher_tokenizer_name: str | None = field(
        default=None,
        metadata={"help": "The teacher's fast tokenizer (default: the teacher's folder)."},
    )
    temperature: float = field(default=2.0, metadata={"help": "Softmax temperature T of the soft targets."})
    alpha: float = field(
        default=0.5, metadata={"help": "Weight of the soft (KL) term; 1 - alpha weighs the labels' cross-entropy."}
    )

    def __post_init__(self) -> None:
        if not self.teacher_model_name_or_path:
            raise ValueError("--teacher_model_name_or_path is required (the fine-tuned token classifier)")
        if self.temperature <= 0:
            raise ValueError(f"--temperature must be > 0, got {self.temperature}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"--alpha must lie in [0, 1], got {self.alpha}")


@dataclass
class TokenDistillationDataArguments(support.DataArguments):
    task_name: str = field(default="ner", metadata={"help": "ner (entity F1 with seqeval) or pos (word accuracy)."})
    text_column_name: str | None = field(default=None, metadata={"help": "The column of word lists (default: tokens)."})
    label_column_name: str | None = field(
        default=None, metadata={"help": "The column of tag lists (default: <task_name>_tags, e.g. pos_tags)."}
    )
    transfer_dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "Train on this data set's train split (no label column: unlabeled) instead of --dataset_name's."
        },
    )
    transfer_dataset_config_name: str | None = field(
        default=None, metadata={"help": "The transfer data set's configuration."}
    )
    teacher_logits_cache_dir: str | None = field(
        default=None,
        metadata={"help": "Where the teacher's per-word logits are cached (default: <output_dir>/../teacher_logits)."},
    )
    teacher_batch_size: int = field(default=64, metadata={"help": "Batch size of the teacher's pass over the texts."})

    def __post_init__(self) -> None:
        if self.task_name not in TASKS:
            raise ValueError(f"--task_name must be one of {TASKS}, got {self.task_name!r}")
        super().__post_init__()


def check_label_space(dataset: datasets.Dataset, column: str, teacher_tags: list[str], split: str) -> None:
    """The split's tag set is the teacher's: equal when the column is a ClassLabel (its names), else
    every tag seen must be one of the teacher's. A ValueError names the tags that differ."""
    tags = set(label_names(dataset, column))
    teacher = set(teacher_tags)
    unknown, absent = sorted(tags - teacher), sorted(teacher - tags)
    if unknown or (label_feature(dataset, column) is not None and absent):
        raise ValueError(
            f"{split} split: the data's tags differ from the teacher's (the label space must be shared): "
            f"not the teacher's {unknown}, the teacher's but not the data's {absent}"
        )


def check_tag_scheme(task_name: str, tags: list[str]) -> None:
    """NER scores entity spans: its tags need B-/I- style prefixes."""
    odd = [tag for tag in tags if tag != "O" and not tag.startswith(SPAN_PREFIXES)]
    if task_name == "ner" and odd:
        raise ValueError(f"--task_name ner scores entity spans, but tags {odd[:10]} have no B-/I- prefix: use pos")


@torch.inference_mode()
def timed_word_predictions(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    words: Sequence[Sequence[str]],
    max_length: int,
    batch_size: int,
) -> tuple[np.ndarray, float]:
    """((total words,) class id predicted at each word's first sub-token, -1 for a word without a
    token; seconds spent in the forwards). Word w of text i is row ``word_offsets(words)[i] + w``."""
    model.eval()
    features = token_distillation_features(words, None, tokenizer, max_length).remove_columns("labels")
    predictions = np.full(int(word_offsets(words)[-1]), -1, dtype=np.int64)
    seconds = 0.0
    for start in range(0, len(features), batch_size):
        rows = [dict(features[i]) for i in range(start, min(start + batch_size, len(features)))]
        indices = [row.pop(TEACHER_WORD_INDEX) for row in rows]
        batch = {key: value.to(model.device) for key, value in tokenizer.pad(rows, return_tensors="pt").items()}
        begin = time.perf_counter()
        logits = model(**batch).logits
        seconds += time.perf_counter() - begin
        best = logits.argmax(-1).cpu().numpy()
        length = best.shape[1]
        for row, row_indices in enumerate(indices):
            shift = length - len(row_indices) if tokenizer.padding_side == "left" else 0
            positions = np.flatnonzero(np.asarray(row_indices) >= 0)
            predictions[np.asarray(row_indices)[positions]] = best[row, positions + shift]
    return predictions, seconds


def word_tags(predictions: np.ndarray, words: Sequence[Sequence[str]], id2label: dict[int, str]) -> list[list[str]]:
    """Per-sentence tag lists from :func:`timed_word_predictions`' flat ids (-1: ``O``)."""
    offsets = word_offsets(words)
    return [
        [PLACEHOLDER_TAG if index < 0 else id2label[int(index)] for index in predictions[begin:end]]
        for begin, end in zip(offsets[:-1], offsets[1:])
    ]


def word_scores(task_name: str, true_tags: list[list[str]], predicted_tags: list[list[str]]) -> dict[str, float]:
    """POS: word accuracy; NER: seqeval's entity precision / recall / F1 and word accuracy (run_ner.py's)."""
    if task_name == "pos":
        flat_true = [tag for sentence in true_tags for tag in sentence]
        flat_predicted = [tag for sentence in predicted_tags for tag in sentence]
        return {"accuracy": accuracy(flat_predicted, flat_true)}
    scores = seqeval_scores(true_tags, predicted_tags)
    return {name: scores[f"overall_{name}"] for name in ("precision", "recall", "f1", "accuracy")}


def score_student_and_teacher(
    student, tokenizer, max_length: int, teacher, teacher_tokenizer, teacher_max_length: int,
    words: list[list[str]], true_tags: list[list[str]], task_name: str, batch_size: int, prefix: str,
) -> dict[str, float]:  # fmt: skip
    """Scores of student and teacher on the same words (each through its own tokenizer, same batch
    size, same threads) and the seconds each spends in its forwards."""
    id2label = {int(index): tag for index, tag in student.config.id2label.items()}
    student_ids, student_seconds = timed_word_predictions(student, tokenizer, words, max_length, batch_size)
    teacher_ids, teacher_seconds = timed_word_predictions(
        teacher, teacher_tokenizer, words, teacher_max_length, batch_size
    )
    results = {
        f"{prefix}_{name}": value
        for name, value in word_scores(task_name, true_tags, word_tags(student_ids, words, id2label)).items()
    }
    results |= {
        f"teacher_{prefix}_{name}": value
        for name, value in word_scores(task_name, true_tags, word_tags(teacher_ids, words, id2label)).items()
    }
    results |= {
        f"{prefix}_words_without_token_total": int((student_ids < 0).sum()),
        f"{prefix}_student_seconds": student_seconds,
        f"{prefix}_teacher_seconds": teacher_seconds,
        f"{prefix}_speedup": teacher_seconds / student_seconds,
    }
    return results


def run_settings(model_args: TokenDistillationModelArguments, data_args: TokenDistillationDataArguments) -> dict:
    """What the run was asked for, recorded in distillation_results.json."""
    return {
        "task_name": data_args.task_name,
        "teacher_model_name_or_path": model_args.teacher_model_name_or_path,
        "teacher_tokenizer_name": model_args.teacher_tokenizer_name or model_args.teacher_model_name_or_path,
        "student_model_name_or_path": model_args.model_name_or_path,
        "temperature": model_args.temperature,
        "alpha": model_args.alpha,
        "dataset_name": data_args.dataset_name,
        "dataset_config_name": data_args.dataset_config_name,
        "transfer_dataset_name": data_args.transfer_dataset_name,
        "transfer_dataset_config_name": data_args.transfer_dataset_config_name,
        "max_seq_length": data_args.max_seq_length,
    }


def load_training_split(data_args, model_args, training_args, raw) -> datasets.Dataset | None:
    """The sentences the student learns from: --transfer_dataset_name's train split if given, else --dataset_name's."""
    if not training_args.do_train:
        return None
    if data_args.transfer_dataset_name is None:
        return support.take_split(raw, "train", "--do_train", data_args.max_train_samples)
    transfer_args = support.DataArguments(
        dataset_name=data_args.transfer_dataset_name, dataset_config_name=data_args.transfer_dataset_config_name
    )
    transfer = support.load_raw_datasets(transfer_args, model_args)
    return support.take_split(transfer, "train", "--transfer_dataset_name", data_args.max_train_samples)


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(
        TokenDistillationDataArguments, argv, TokenDistillationModelArguments
    )
    text = data_args.text_column_name or "tokens"
    label = data_args.label_column_name or f"{data_args.task_name}_tags"
    raw = support.load_raw_datasets(data_args, model_args)
    splits = support.select_splits(raw, data_args, training_args)
    splits.pop("train", None)
    train_split = load_training_split(data_args, model_args, training_args, raw)
    if train_split is not None:
        support.require_columns(train_split, [text], "train distillation", text_columns=[text], split_into_words=True)
        splits["train"] = train_split
    for split in SCORED_SPLITS:
        if split in splits:
            support.require_columns(
                splits[split], [text, label], f"{split} distillation", text_columns=[text], split_into_words=True
            )

    teacher = load_pretrained(model_args.teacher_model_name_or_path, AutoModelForTokenClassification)
    teacher_tokenizer = AutoTokenizer.from_pretrained(
        model_args.teacher_tokenizer_name or model_args.teacher_model_name_or_path
    )
    teacher_max_length = min(
        max_length_for(teacher_tokenizer, data_args.max_seq_length), teacher.config.max_position_embeddings
    )
    tags = [teacher.config.id2label[i] for i in range(teacher.config.num_labels)]
    check_tag_scheme(data_args.task_name, tags)
    for split, dataset in splits.items():
        if label in dataset.column_names:
            check_label_space(dataset, label, tags, split)
    tokenizer = support.load_tokenizer(model_args)
    for name, which in ((tokenizer, "student"), (teacher_tokenizer, "teacher")):
        if not getattr(name, "is_fast", False):
            raise ValueError(f"the {which}'s tokenizer must be a fast one (word ids map its tokens to words)")
    max_length = max_length_for(tokenizer, data_args.max_seq_length)
    student = support.load_model(
        model_args, AutoModelForTokenClassification, tokenizer, label_names=tags, max_seq_length=max_length
    )
    check_same_labels(teacher.config, student.config)
    label2id = {tag: index for index, tag in enumerate(tags)}

    results: dict = {
        "settings": run_settings(model_args, data_args),
        "student_parameters": sum(p.numel() for p in student.parameters()),
        "teacher_parameters": sum(p.numel() for p in teacher.parameters()),
    }
    features: dict[str, datasets.Dataset] = {}
    teacher_logits = None
    if "train" in splits:
        words = [list(sentence) for sentence in splits["train"][text]]
        labels = (
            encode_labels(splits["train"], label, label2id, "train", hidden_label=-1)
            if label in splits["train"].column_names
            else None
        )
        cache_dir = (
            data_args.teacher_logits_cache_dir or Path(training_args.output_dir).resolve().parent / "teacher_logits"
        )
        with training_args.main_process_first(desc="the teacher's logits"):
            cached = cached_teacher_logits(
                teacher, teacher_tokenizer, words, cache_dir, teacher_max_length, data_args.teacher_batch_size,
                per_word=True,
            )  # fmt: skip
        teacher_logits = cached.logits
        features["train"] = token_distillation_features(words, labels, tokenizer, max_length)
        labelled = 0 if labels is None else sum(tag >= 0 for sentence in labels for tag in sentence)
        results.update(
            teacher_logits_file=str(cached.path),
            teacher_logits_computed=cached.computed,
            teacher_logits_seconds=cached.seconds,
            transfer_samples=len(words),
            transfer_words=int(word_offsets(words)[-1]),
            transfer_labelled_words=labelled,
        )

    trainer = support.build_trainer(
        student,
        training_args,
        features,
        tokenizer,
        TokenDistillationCollator(tokenizer, teacher_logits),
        None,
        trainer_class=DistillationTrainer,
        temperature=model_args.temperature,
        alpha=model_args.alpha,
    )
    if training_args.do_train:
        results.update(support.train_and_save(trainer, splits["train"], data_args, training_args))
    teacher.to(training_args.device)
    for split, prefix in SCORED_SPLITS.items():  # --do_eval: validation, --do_predict: test
        if split in splits:
            dataset = splits[split]
            true_tags = [[tags[i] for i in row] for row in encode_labels(dataset, label, label2id, split)]
            metrics = score_student_and_teacher(
                trainer.model, tokenizer, max_length, teacher, teacher_tokenizer, teacher_max_length,
                [list(sentence) for sentence in dataset[text]], true_tags, data_args.task_name,
                training_args.per_device_eval_batch_size, prefix,
            )  # fmt: skip
            results.update(support.save_eval_metrics(trainer, metrics, len(dataset), split=prefix))
    support.write_json(trainer, "distillation_results.json", results)
    return support.finish(trainer, model_args, data_args, "token-classification", results)


if __name__ == "__main__":
    main()
