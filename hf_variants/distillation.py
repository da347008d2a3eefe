"""Knowledge distillation through transformers' Trainer: any fine-tuned teacher teaches any student,
each with its own tokenizer, on a transfer set that may be unlabeled.

Hinton et al. (2015) as DistilBERT and Turc et al. (2019, "Well-Read Students Learn Better") use it.
Sequence classification:

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

Token classification (POS, NER: a label space the two models share) works word by word, since the
two tokenizers split words differently: the teacher's logits at each word's first sub-token are
cached per word (:func:`cached_teacher_logits` with ``per_word=True``), and the student's logits
at its own first sub-token of that word are compared with them
(:func:`token_distillation_features`, :class:`TokenDistillationCollator`,
:func:`token_distillation_loss`: the mean over the batch's words of the same per-word loss).
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
from transformers import (
    DataCollatorForTokenClassification,
    DataCollatorWithPadding,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from .hub.atomic import replace_atomically, write_text_atomically
from .hub.trainer import CheckpointSafeTrainer

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100  # label of an example without one (transformers' convention)
TRANSFER_INDEX = "transfer_index"  # feature column: the row of the cached teacher logits
TEACHER_LOGITS = "teacher_logits"  # batch key the collator fills from the cache
TEACHER_WORD_INDEX = "teacher_word_index"  # token feature column: row of the cached per-word logits, -1 elsewhere
TEACHER_MASK = "teacher_mask"  # batch key (token classification): positions that have the teacher's logits


def _check_mix(temperature: float, alpha: float) -> None:
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")


def _per_row_losses(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    has_teacher: torch.Tensor | None,
    labels: torch.Tensor | None,
    temperature: float,
    alpha: float,
) -> torch.Tensor:
    """(N,) losses ``alpha * T^2 * KL`` (rows with the teacher's logits) ``+ (1 - alpha) * CE`` (rows
    with a label). student_logits, teacher_logits: (N, C); has_teacher: (N,) bool or None (all);
    labels: (N,) with -100 for none, or None."""
    teacher_log_probs = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    student_log_probs = F.log_softmax(student_logits.float() / temperature, dim=-1)
    kl = (teacher_log_probs.exp() * (teacher_log_probs - student_log_probs)).sum(-1)  # (N,)
    if has_teacher is not None:
        kl = torch.where(has_teacher, kl, torch.zeros_like(kl))
    losses = alpha * temperature**2 * kl
    if labels is not None:
        # reduction="none" gives 0 where the label is -100: those rows keep only their KL
        losses = losses + (1.0 - alpha) * F.cross_entropy(
            student_logits.float(), labels, ignore_index=IGNORE_INDEX, reduction="none"
        )
    return losses


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
        raise ValueError(
            f"student logits {tuple(student_logits.shape)} and teacher logits {tuple(teacher_logits.shape)} differ"
        )
    if student_logits.dim() != 2:
        raise ValueError(f"expected (batch, classes) logits, got shape {tuple(student_logits.shape)}")
    _check_mix(temperature, alpha)
    if labels is not None and labels.shape != student_logits.shape[:1]:
        raise ValueError(f"labels {tuple(labels.shape)} do not match the batch of logits {tuple(student_logits.shape)}")
    return _per_row_losses(student_logits, teacher_logits, None, labels, temperature, alpha).mean()


def token_distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    teacher_mask: torch.Tensor,
    labels: torch.Tensor | None,
    temperature: float,
    alpha: float,
) -> torch.Tensor:
    """The per-word loss of :func:`distillation_loss`, averaged over the batch's words.

    student_logits, teacher_logits: (B, L, C); teacher_mask: (B, L) bool, True at each word's first
    sub-token where the teacher's logits for that word are known; labels: (B, L), -100 except at
    labelled words' first sub-tokens, or None. A word counts once in the mean, whether it has the
    teacher's logits, a label, or both; other positions (continuation sub-tokens, specials, padding)
    do not count. Returns a scalar (0 when the batch has no word)."""
    if student_logits.shape != teacher_logits.shape or student_logits.dim() != 3:
        raise ValueError(
            f"expected equal (batch, length, classes) logits, got {tuple(student_logits.shape)} "
            f"and {tuple(teacher_logits.shape)}"
        )
    if teacher_mask.shape != student_logits.shape[:2] or (
        labels is not None and labels.shape != student_logits.shape[:2]
    ):
        raise ValueError(
            f"teacher_mask {tuple(teacher_mask.shape)} / labels must be (batch, length) = {tuple(student_logits.shape[:2])}"
        )
    _check_mix(temperature, alpha)
    counted = teacher_mask if labels is None else teacher_mask | (labels != IGNORE_INDEX)  # (B, L): the words
    classes = student_logits.shape[-1]
    losses = _per_row_losses(
        student_logits[counted].view(-1, classes),
        teacher_logits[counted].view(-1, classes),
        teacher_mask[counted],
        None if labels is None else labels[counted],
        temperature,
        alpha,
    )
    return losses.mean() if losses.numel() else student_logits.sum() * 0.0


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
    _update_with_text(
        digest, json.dumps({"max_length": max_length, "specials": tokenizer.special_tokens_map}, sort_keys=True)
    )
    return digest.hexdigest()


def texts_fingerprint(texts: Sequence[str] | Sequence[Sequence[str]]) -> str:
    """sha256 of the texts in order (the transfer set's fingerprint); a text may be a list of words."""
    digest = hashlib.sha256()
    digest.update(len(texts).to_bytes(8, "little"))
    for text in texts:
        if isinstance(text, str):
            _update_with_text(digest, text)
        else:  # words: their count, then each word (a list of words never hashes like one string)
            _update_with_text(digest, f"<{len(text)} words>")
            for word in text:
                _update_with_text(digest, word)
    return digest.hexdigest()


def word_offsets(words: Sequence[Sequence[str]]) -> np.ndarray:
    """(N + 1,) start row of each text's words in the per-word logits: text i's word w is row offsets[i] + w."""
    return np.concatenate([[0], np.cumsum([len(text) for text in words])]).astype(np.int64)


@dataclass(frozen=True)
class TeacherLogits:
    """The teacher's logits over a transfer set, read from the cache.

    logits: (N, C) float32 (per word: (total words, C)), memory-mapped from ``path``. computed: False when an earlier run's
    file was reused (the teacher did not run). seconds: the teacher's time when it ran, else 0."""

    logits: np.ndarray
    path: Path
    computed: bool
    seconds: float


def _length_sorted_batches(encodings, batch_size: int) -> list[np.ndarray]:
    """Row indices in batches of similar length (little padding), shortest first."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = np.argsort([len(ids) for ids in encodings["input_ids"]], kind="stable")
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def _padded_batch(tokenizer, encodings, rows: np.ndarray, device) -> dict[str, torch.Tensor]:
    names = [name for name in encodings.keys() if name in ("input_ids", "attention_mask", "token_type_ids")]
    batch = tokenizer.pad([{name: encodings[name][row] for name in names} for row in rows], return_tensors="pt")
    return {name: value.to(device) for name, value in batch.items()}


@torch.inference_mode()
def compute_teacher_logits(
    teacher: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    max_length: int,
    batch_size: int = 64,
) -> np.ndarray:
    """(N, C) float32 logits of ``teacher`` on ``texts`` tokenized by ``tokenizer`` (truncated at
    ``max_length``). Texts are run in order of length, so each batch pads little; the rows come back
    in the texts' order."""
    teacher.eval()
    encodings = tokenizer(list(texts), max_length=max_length, truncation=True)
    logits = np.empty((len(texts), teacher.config.num_labels), dtype=np.float32)
    for rows in _length_sorted_batches(encodings, batch_size):
        logits[rows] = teacher(**_padded_batch(tokenizer, encodings, rows, teacher.device)).logits.float().cpu().numpy()
    return logits


@torch.inference_mode()
def compute_teacher_word_logits(
    teacher: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    words: Sequence[Sequence[str]],
    max_length: int,
    batch_size: int = 64,
) -> np.ndarray:
    """(total words, C) float32: a token classifier's logits at each word's first sub-token, text i's
    word w at row ``word_offsets(words)[i] + w``. A word the teacher's truncation at ``max_length``
    cuts off (or that its tokenizer turns into no token) has a row of NaN: it gets no soft target."""
    teacher.eval()
    encodings = tokenizer(
        [list(text) for text in words], is_split_into_words=True, max_length=max_length, truncation=True
    )
    offsets = word_offsets(words)
    logits = np.full((int(offsets[-1]), teacher.config.num_labels), np.nan, dtype=np.float32)
    for rows in _length_sorted_batches(encodings, batch_size):
        batch_logits = teacher(**_padded_batch(tokenizer, encodings, rows, teacher.device)).logits.float().cpu().numpy()
        for position_in_batch, row in enumerate(rows):
            seen: set[int] = set()
            for position, word in enumerate(encodings.word_ids(int(row))):
                if word is not None and word not in seen:  # the word's first sub-token
                    seen.add(word)
                    logits[offsets[row] + word] = batch_logits[position_in_batch, position]
    return logits


def cached_teacher_logits(
    teacher: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str] | Sequence[Sequence[str]],
    cache_dir: str | Path,
    max_length: int,
    batch_size: int = 64,
    per_word: bool = False,
) -> TeacherLogits:
    """The teacher's logits on ``texts``: (N, C) for a sequence classifier, or with ``per_word``
    (``texts`` are lists of words, the teacher a token classifier) (total words, C), see
    :func:`compute_teacher_word_logits`. Read from ``cache_dir`` when a file with this teacher's and
    these texts' fingerprints is there, else computed once and written there
    (``<teacher fingerprint>-<texts fingerprint>.npy`` beside a ``.json`` that says what it holds).
    The file is written atomically, so concurrent runs can at worst both compute it."""
    if len(texts) == 0:
        raise ValueError("the transfer set is empty: no texts for the teacher")
    if per_word and any(isinstance(text, str) for text in texts):
        raise ValueError("per_word=True needs each text as a list of words")
    cache_dir = Path(cache_dir)
    kind = "words-" if per_word else ""
    key = f"{kind}{teacher_fingerprint(teacher, tokenizer, max_length)[:24]}-{texts_fingerprint(texts)[:24]}"
    path = cache_dir / f"{key}.npy"
    rows = int(word_offsets(texts)[-1]) if per_word else len(texts)
    expected_shape = (rows, teacher.config.num_labels)
    if path.is_file():
        logits = np.load(path, mmap_mode="r", allow_pickle=False)
        if logits.shape == expected_shape and logits.dtype == np.float32:
            logger.info("Reusing the teacher's logits on %d texts from %s", len(texts), path)
            return TeacherLogits(logits, path, computed=False, seconds=0.0)
        logger.warning("%s holds logits of shape %s, not %s: recomputing", path, logits.shape, expected_shape)
    start = time.perf_counter()
    compute = compute_teacher_word_logits if per_word else compute_teacher_logits
    computed = compute(teacher, tokenizer, texts, max_length, batch_size)
    seconds = time.perf_counter() - start
    cache_dir.mkdir(parents=True, exist_ok=True)

    def write(temporary: str) -> None:
        with open(temporary, "wb") as handle:  # a handle: np.save would append ".npy" to a path
            np.save(handle, computed, allow_pickle=False)

    replace_atomically(path, write)
    description = {
        "teacher": getattr(teacher.config, "_name_or_path", ""),
        "teacher_model_type": teacher.config.model_type,
        "id2label": {str(i): name for i, name in teacher.config.id2label.items()},
        "num_texts": len(texts),
        "rows": rows,
        "per_word": per_word,
        "max_length": max_length,
        "teacher_seconds": seconds,
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
    columns["labels"] = (
        [IGNORE_INDEX] * len(texts)
        if labels is None
        else [IGNORE_INDEX if label in (IGNORE_INDEX, -1) else int(label) for label in labels]
    )
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
            batch[TEACHER_LOGITS] = torch.from_numpy(
                np.array(self.teacher_logits[np.asarray(indices)], dtype=np.float32)
            )
        return batch


def token_distillation_features(
    words: Sequence[Sequence[str]],
    word_labels: Sequence[Sequence[int] | None] | None,
    tokenizer: PreTrainedTokenizerBase,
    max_length: int,
) -> datasets.Dataset:
    """The student's features of a word-level transfer set: its own tokenization of each text's
    ``words``; per token ``labels`` (the word's label id at its first sub-token, ``-100`` elsewhere
    and for words labelled -1 or texts labelled None) and ``teacher_word_index`` (the row of the
    per-word cache, :func:`word_offsets`, at the word's first sub-token, -1 elsewhere)."""
    if word_labels is not None and len(word_labels) != len(words):
        raise ValueError(f"{len(word_labels)} label lists for {len(words)} texts")
    encodings = tokenizer(
        [list(text) for text in words], is_split_into_words=True, max_length=max_length, truncation=True
    )
    offsets = word_offsets(words)
    labels_column, index_column = [], []
    for row, text in enumerate(words):
        text_labels = None if word_labels is None else word_labels[row]
        if text_labels is not None and len(text_labels) != len(text):
            raise ValueError(f"text {row}: {len(text_labels)} labels for {len(text)} words")
        labels, indices, seen = [], [], set()
        for word in encodings.word_ids(row):
            first = word is not None and word not in seen
            if first:
                seen.add(word)
            label = (
                IGNORE_INDEX
                if not first or text_labels is None or text_labels[word] in (-1, IGNORE_INDEX)
                else int(text_labels[word])
            )
            labels.append(label)
            indices.append(int(offsets[row] + word) if first else -1)
        labels_column.append(labels)
        index_column.append(indices)
    columns = {name: encodings[name] for name in encodings.keys()}
    columns.update({"labels": labels_column, TEACHER_WORD_INDEX: index_column})
    return datasets.Dataset.from_dict(columns)


class TokenDistillationCollator:
    """Pads the student's token inputs and labels (``DataCollatorForTokenClassification``) and, for
    features with ``teacher_word_index``, adds ``teacher_logits`` (B, L, C) read from the per-word
    cache and ``teacher_mask`` (B, L): True where a word's first sub-token has the teacher's logits."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, teacher_word_logits: np.ndarray | None) -> None:
        self.pad = DataCollatorForTokenClassification(tokenizer)
        self.padding_side = tokenizer.padding_side
        self.teacher_word_logits = teacher_word_logits

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        indices = [feature.pop(TEACHER_WORD_INDEX) for feature in features if TEACHER_WORD_INDEX in feature]
        batch = self.pad(features)
        if not indices:
            return batch
        if len(indices) != len(features):
            raise ValueError("a batch mixes features with and without a teacher_word_index")
        if self.teacher_word_logits is None:
            raise ValueError("features carry a teacher_word_index but the collator has no teacher logits")
        length = batch["input_ids"].shape[1]
        padded = np.full((len(indices), length), -1, dtype=np.int64)
        for row, row_indices in enumerate(indices):  # padded on the tokenizer's side, as the inputs are
            if self.padding_side == "left":
                padded[row, length - len(row_indices) :] = row_indices
            else:
                padded[row, : len(row_indices)] = row_indices
        logits = np.zeros((*padded.shape, self.teacher_word_logits.shape[1]), dtype=np.float32)
        present = padded >= 0
        logits[present] = self.teacher_word_logits[padded[present]]
        known = present & ~np.isnan(logits).any(-1)  # NaN: the teacher's truncation cut that word off
        logits[~known] = 0.0
        batch[TEACHER_LOGITS] = torch.from_numpy(logits)
        batch[TEACHER_MASK] = torch.from_numpy(known)
        return batch


class DistillationTrainer(CheckpointSafeTrainer):
    """Trainer whose training loss is :func:`distillation_loss` (or, for a batch with a
    ``teacher_mask``, :func:`token_distillation_loss`) against the teacher's logits.

    A batch's ``teacher_logits`` come from the cache (:class:`DistillationCollator`,
    :class:`TokenDistillationCollator`). Without them, ``teacher``, if given, is run on the batch:
    the same-tokenizer path of sequence classification (the student reads the teacher's token
    ids). An evaluation batch with neither gets the student's cross-entropy, so ``eval_loss`` is
    the classifier's own loss."""

    def __init__(
        self, *args, temperature: float, alpha: float, teacher: torch.nn.Module | None = None, **kwargs
    ) -> None:
        _check_mix(temperature, alpha)
        super().__init__(*args, **kwargs)
        self.teacher = None if teacher is None else teacher.eval().requires_grad_(False).to(self.args.device)
        self.temperature, self.alpha = temperature, alpha
        # The loss is a mean over the micro-batch's examples, not a sum over labelled items: Trainer
        # must average micro-batches (divide by the accumulation steps), not rescale by label counts.
        self.model_accepts_loss_kwargs = False

    def _set_signature_columns_if_needed(self) -> None:
        # Trainer keeps only the columns model.forward names (and the labels); the collators need theirs too.
        super()._set_signature_columns_if_needed()
        for column in (TRANSFER_INDEX, TEACHER_WORD_INDEX):  # keep the columns the collators read
            if column not in self._signature_columns:
                self._signature_columns.append(column)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels", None)
        teacher_logits = inputs.pop(TEACHER_LOGITS, None)
        teacher_mask = inputs.pop(TEACHER_MASK, None)
        outputs = model(**inputs)
        if teacher_logits is None and self.teacher is not None:
            with torch.no_grad():
                teacher_logits = self.teacher(**inputs).logits
        if teacher_logits is None:
            if model.training:
                raise ValueError("a training batch has no teacher_logits and the trainer has no teacher")
            classes = outputs.logits.shape[-1]
            loss = F.cross_entropy(outputs.logits.float().view(-1, classes), labels.view(-1), ignore_index=IGNORE_INDEX)
        elif teacher_mask is not None:  # token classification, word by word
            loss = token_distillation_loss(
                outputs.logits,
                teacher_logits.to(outputs.logits.device),
                teacher_mask.to(outputs.logits.device),
                labels,
                self.temperature,
                self.alpha,
            )
        else:
            loss = distillation_loss(
                outputs.logits, teacher_logits.to(outputs.logits.device), labels, self.temperature, self.alpha
            )
        if labels is not None:
            inputs["labels"] = labels  # Trainer reads them again for evaluation
        return (loss, outputs) if return_outputs else loss
