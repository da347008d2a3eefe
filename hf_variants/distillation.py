"""Knowledge distillation through transformers' Trainer: any fine-tuned teacher teaches any student,
each with its own tokenizer, on a transfer set that may be unlabeled.

Hinton et al. (2015) as DistilBERT and Turc et al. (2019, "Well-Read Students Learn Better") use it,
for sequence classification. The pieces:

- :func:`distillation_loss`: per example ``alpha * T^2 * KL(teacher_T || student_T) + (1 - alpha) * CE``,
  where an example without a label (``labels == -100``) has only the first term; the batch loss is
  the **mean over all examples of the batch** (labelled or not) of these per-example losses. So
  each example weighs the same whatever the batch's mix, a fully labelled batch gives Hinton's
  formula exactly, and a fully unlabeled one is ``alpha * T^2 * KL`` (the ``T^2`` keeps the soft
  term's gradients on the scale of the hard one when ``T`` changes).
- :func:`cached_teacher_logits`: the teacher reads each transfer text with *its* tokenizer once;
  its logits go to a float32 ``.npy`` file (memory-mapped when read) named by a fingerprint of the
  teacher's weights, config and tokenizer, the maximum length and the texts. Every student and
  seed trained on the same transfer set reuses that file instead of running the teacher again.
- :func:`distillation_features`: the student's own tokenization of the same texts, with labels
  (``-100`` where there is none) and each row's index into the cached logits.
- :class:`DistillationCollator` pads the student's inputs and looks the teacher's logits up by
  that index; :class:`DistillationTrainer` computes :func:`distillation_loss` from them.

Token classification (per-token soft targets) is not covered: it needs the teacher's and the
student's tokens aligned word by word when their tokenizers differ.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
import torch
from torch.nn import functional as F
from transformers import DataCollatorWithPadding, PreTrainedModel, PreTrainedTokenizerBase

from .hub.atomic import replace_atomically, write_text_atomically
from .hub.trainer import CheckpointSafeTrainer

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100  # label of an example without one (transformers' convention)
TRANSFER_INDEX = "transfer_index"  # feature column: the row of the cached teacher logits
TEACHER_LOGITS = "teacher_logits"  # batch key the collator fills from the cache


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor | None,
    temperature: float,
    alpha: float,
) -> torch.Tensor:
    """Mean over the batch of ``alpha * T^2 * KL(teacher_T || student_T) + (1 - alpha) * CE(student, label)``,
    the CE term only for examples with a label.

    student_logits, teacher_logits: (B, C). labels: (B,) class ids, ``-100`` for an example without
    a label; ``None`` when no example has one. Returns a scalar (module docstring: how the mean is taken).
    """
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {tuple(student_logits.shape)} and teacher logits {tuple(teacher_logits.shape)} differ")
    if student_logits.dim() != 2:
        raise ValueError(f"expected (batch, classes) logits, got shape {tuple(student_logits.shape)}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    teacher_log_probs = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    student_log_probs = F.log_softmax(student_logits.float() / temperature, dim=-1)
    kl_per_example = (teacher_log_probs.exp() * (teacher_log_probs - student_log_probs)).sum(-1)  # (B,)
    per_example = alpha * temperature**2 * kl_per_example
    if labels is not None:
        if labels.shape != student_logits.shape[:1]:
            raise ValueError(f"labels {tuple(labels.shape)} do not match the batch of logits {tuple(student_logits.shape)}")
        # reduction="none" gives 0 where the label is ignore_index: those examples keep only their KL
        cross_entropy = F.cross_entropy(student_logits.float(), labels, ignore_index=IGNORE_INDEX, reduction="none")
        per_example = per_example + (1.0 - alpha) * cross_entropy
    return per_example.mean()


# ------------------------------------------------------------------------------ the teacher's cache


def _update_with_text(digest, text: str) -> None:
    encoded = text.encode("utf-8")
    digest.update(len(encoded).to_bytes(8, "little"))  # length-prefixed: ["ab", "c"] != ["a", "bc"]
    digest.update(encoded)


def teacher_fingerprint(teacher: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, max_length: int) -> str:
    """sha256 of what decides the teacher's logits: its weights (every tensor of the state dict, in
    key order), its config (without its path and library version), its tokenizer and ``max_length``.
    The same teacher saved to another folder has the same fingerprint."""
    digest = hashlib.sha256()
    config = teacher.config.to_dict()
    for volatile in ("_name_or_path", "transformers_version", "_commit_hash"):
        config.pop(volatile, None)
    _update_with_text(digest, json.dumps(config, sort_keys=True, default=str))
    for key, tensor in sorted(teacher.state_dict().items()):
        _update_with_text(digest, f"{key}:{tensor.dtype}:{tuple(tensor.shape)}")
        digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    if getattr(tokenizer, "is_fast", False):
        backend = json.loads(tokenizer.backend_tokenizer.to_str())
        # The backend records the last call's truncation and padding settings: not the tokenizer's identity.
        backend.pop("truncation", None)
        backend.pop("padding", None)
        _update_with_text(digest, json.dumps(backend, sort_keys=True))
    else:
        _update_with_text(digest, json.dumps(sorted(tokenizer.get_vocab().items())))
    _update_with_text(digest, json.dumps({"max_length": max_length, "specials": tokenizer.special_tokens_map}, sort_keys=True))
    return digest.hexdigest()


def texts_fingerprint(texts: Sequence[str]) -> str:
    """sha256 of the texts in order (the transfer set's fingerprint)."""
    digest = hashlib.sha256()
    digest.update(len(texts).to_bytes(8, "little"))
    for text in texts:
        _update_with_text(digest, text)
    return digest.hexdigest()


@dataclass(frozen=True)
class TeacherLogits:
    """The teacher's logits over a transfer set, read from the cache.

    logits: (N, C) float32, memory-mapped from ``path``. computed: False when an earlier run's
    file was reused (the teacher did not run). seconds: the teacher's time when it ran, else 0."""

    logits: np.ndarray
    path: Path
    computed: bool
    seconds: float


@torch.inference_mode()
def compute_teacher_logits(
    teacher: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int, batch_size: int = 64
) -> np.ndarray:
    """(N, C) float32 logits of ``teacher`` on ``texts`` tokenized by ``tokenizer`` (truncated at
    ``max_length``). Texts are run in order of length, so each batch pads little; the rows come back
    in the texts' order."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    teacher.eval()
    encodings = tokenizer(list(texts), max_length=max_length, truncation=True)
    lengths = np.array([len(ids) for ids in encodings["input_ids"]])
    order = np.argsort(lengths, kind="stable")
    logits = np.empty((len(texts), teacher.config.num_labels), dtype=np.float32)
    names = [name for name in encodings.keys() if name in ("input_ids", "attention_mask", "token_type_ids")]
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        batch = tokenizer.pad([{name: encodings[name][row] for name in names} for row in rows], return_tensors="pt")
        batch = {name: value.to(teacher.device) for name, value in batch.items()}
        logits[rows] = teacher(**batch).logits.float().cpu().numpy()
    return logits


def cached_teacher_logits(
    teacher: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    cache_dir: str | Path,
    max_length: int,
    batch_size: int = 64,
) -> TeacherLogits:
    """The teacher's (N, C) logits on ``texts``: read from ``cache_dir`` when a file with this
    teacher's and these texts' fingerprints is there, else computed once and written there
    (``<teacher fingerprint>-<texts fingerprint>.npy`` beside a ``.json`` that says what it holds).
    The file is written atomically, so concurrent runs can at worst both compute it."""
    if len(texts) == 0:
        raise ValueError("the transfer set is empty: no texts for the teacher")
    cache_dir = Path(cache_dir)
    key = f"{teacher_fingerprint(teacher, tokenizer, max_length)[:24]}-{texts_fingerprint(texts)[:24]}"
    path = cache_dir / f"{key}.npy"
    if path.is_file():
        logits = np.load(path, mmap_mode="r", allow_pickle=False)
        if logits.shape == (len(texts), teacher.config.num_labels) and logits.dtype == np.float32:
            logger.info("Reusing the teacher's logits on %d texts from %s", len(texts), path)
            return TeacherLogits(logits, path, computed=False, seconds=0.0)
        logger.warning("%s holds logits of shape %s, not (%d, %d): recomputing", path, logits.shape, len(texts), teacher.config.num_labels)
    start = time.perf_counter()
    computed = compute_teacher_logits(teacher, tokenizer, texts, max_length, batch_size)
    seconds = time.perf_counter() - start
    cache_dir.mkdir(parents=True, exist_ok=True)

    def write(temporary: str) -> None:
        with open(temporary, "wb") as handle:  # a handle: np.save would append ".npy" to a path
            np.save(handle, computed, allow_pickle=False)

    replace_atomically(path, write)
    description = {
        "teacher": getattr(teacher.config, "_name_or_path", ""), "teacher_model_type": teacher.config.model_type,
        "id2label": {str(i): name for i, name in teacher.config.id2label.items()}, "num_texts": len(texts),
        "max_length": max_length, "teacher_seconds": seconds,
    }
    write_text_atomically(path.with_suffix(".json"), json.dumps(description, indent=2) + "\n")
    logger.info("Computed the teacher's logits on %d texts in %.1f s; cached in %s", len(texts), seconds, path)
    return TeacherLogits(np.load(path, mmap_mode="r", allow_pickle=False), path, computed=True, seconds=seconds)


# ----------------------------------------------------------------------------- the student's side


def check_same_labels(teacher_config, student_config) -> None:
    """ValueError unless teacher and student predict the same classes in the same order."""
    teacher_labels = [teacher_config.id2label[i] for i in range(teacher_config.num_labels)]
    student_labels = [student_config.id2label[i] for i in range(student_config.num_labels)]
    if teacher_labels != student_labels:
        raise ValueError(f"the student's labels {student_labels} differ from the teacher's {teacher_labels}")


def distillation_features(
    texts: Sequence[str], labels: Sequence[int] | None, tokenizer: PreTrainedTokenizerBase, max_length: int
) -> datasets.Dataset:
    """The student's features of the transfer set: its own tokenization of ``texts``, ``labels``
    (class ids; ``-100`` or ``-1`` for a text without a label, stored as ``-100``) and
    ``transfer_index`` (row i of the cached teacher logits belongs to text i)."""
    if labels is not None and len(labels) != len(texts):
        raise ValueError(f"{len(labels)} labels for {len(texts)} texts")
    columns = dict(tokenizer(list(texts), max_length=max_length, truncation=True))
    columns[TRANSFER_INDEX] = list(range(len(texts)))
    columns["labels"] = [IGNORE_INDEX] * len(texts) if labels is None else [
        IGNORE_INDEX if label in (IGNORE_INDEX, -1) else int(label) for label in labels
    ]
    return datasets.Dataset.from_dict(columns)


class DistillationCollator:
    """Pads the student's inputs (``DataCollatorWithPadding``) and, for features with a
    ``transfer_index``, adds ``teacher_logits`` (B, C) read from the memory-mapped cache."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, teacher_logits: np.ndarray | None) -> None:
        self.pad = DataCollatorWithPadding(tokenizer)
        self.teacher_logits = teacher_logits

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        indices = [feature.pop(TRANSFER_INDEX) for feature in features if TRANSFER_INDEX in feature]
        batch = self.pad(features)
        if indices:
            if len(indices) != len(features):
                raise ValueError("a batch mixes features with and without a transfer_index")
            if self.teacher_logits is None:
                raise ValueError("features carry a transfer_index but the collator has no teacher logits")
            batch[TEACHER_LOGITS] = torch.from_numpy(np.array(self.teacher_logits[np.asarray(indices)], dtype=np.float32))
        return batch


class DistillationTrainer(CheckpointSafeTrainer):
    """Trainer whose training loss is :func:`distillation_loss` against the teacher's logits.

    A batch's ``teacher_logits`` come from the cache (:class:`DistillationCollator`). Without them
    (the student reads the teacher's tokenization: the same-tokenizer path) ``teacher``, if given,
    is run on the batch. An evaluation batch with neither gets the student's cross-entropy, so
    ``eval_loss`` is the classifier's own loss."""

    def __init__(self, *args, temperature: float, alpha: float, teacher: torch.nn.Module | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.teacher = None if teacher is None else teacher.eval().requires_grad_(False).to(self.args.device)
        self.temperature, self.alpha = temperature, alpha
        # The loss is a mean over the micro-batch's examples, not a sum over labelled items: Trainer
        # must average micro-batches (divide by the accumulation steps), not rescale by label counts.
        self.model_accepts_loss_kwargs = False

    def _set_signature_columns_if_needed(self) -> None:
        super()._set_signature_columns_if_needed()
        if TRANSFER_INDEX not in self._signature_columns:  # keep the column the collator reads
            self._signature_columns.append(TRANSFER_INDEX)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels", None)
        teacher_logits = inputs.pop(TEACHER_LOGITS, None)
        outputs = model(**inputs)
        if teacher_logits is None and self.teacher is not None:
            with torch.no_grad():
                teacher_logits = self.teacher(**inputs).logits
        if teacher_logits is None:
            if model.training:
                raise ValueError("a training batch has no teacher_logits and the trainer has no teacher")
            loss = F.cross_entropy(outputs.logits.float(), labels, ignore_index=IGNORE_INDEX)
        else:
            loss = distillation_loss(outputs.logits, teacher_logits.to(outputs.logits.device), labels, self.temperature, self.alpha)
        if labels is not None:
            inputs["labels"] = labels  # Trainer reads them again for evaluation
        return (loss, outputs) if return_outputs else loss
