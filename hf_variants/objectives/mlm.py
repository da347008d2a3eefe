"""Masked language modelling collators: BERT/RoBERTa MLM (token or whole-word), static masking.

- `DataCollatorForMaskedLM` masks anew at every call: RoBERTa's *dynamic* masking.
- `make_static_masked_dataset` fixes the masks once, BERT-style: the dataset is duplicated
  `copies` times (BERT used 10) with a different mask per copy, stored as `input_ids` + `labels`;
  `DataCollatorForPrecomputedMasks` then only pads, so every epoch sees the same masks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import datasets
import numpy as np
import torch

from .masking import (
    SEQUENCE_COLUMNS,
    SeededRNG,
    VocabInfo,
    candidate_mask,
    check_probabilities,
    corrupt,
    masking_budgets,
    pad_batch,
    select_whole_units,
    to_torch_batch,
    word_starts,
)


class MaskingCollator(ABC):
    """Base class: pad, let the subclass mask the numpy columns in place, return torch tensors.

    Subclasses implement `mask_columns(columns, lengths, rng)`, which replaces
    `columns["input_ids"]` by the corrupted ids and adds `columns["labels"]` (+ any extra
    per-token targets). `make_static_masked_dataset` calls the same method, so every masking
    scheme can be made static.

    Args (shared):
        tokenizer: a tokenizer with pad and mask tokens (`VocabInfo.from_tokenizer`).
        mlm_probability: fraction of candidate tokens to predict (0.15 in BERT and successors).
        mask_probability / random_probability: the 80% / 10% of BERT's corruption.
        pad_to_multiple_of: pad T up to a multiple (e.g. 8 for tensor cores).
        seed: seeds a numpy Generator (see `SeededRNG`); None draws fresh entropy.

    Returns from `__call__`: `input_ids` (B, T), `attention_mask` (B, T), `labels` (B, T) with
    -100 where nothing is predicted, `token_type_ids` (B, T) when the features carry them, and
    scalar labels such as `next_sentence_label` (B,).
    """

    def __init__(
        self,
        tokenizer,
        mlm_probability: float = 0.15,
        mask_probability: float = 0.8,
        random_probability: float = 0.1,
        pad_to_multiple_of: int | None = None,
        seed: int | None = None,
    ):
        check_probabilities(mlm_probability, mask_probability, random_probability)
        self.tokenizer = tokenizer
        self.vocab = VocabInfo.from_tokenizer(tokenizer)
        self.mlm_probability = mlm_probability
        self.mask_probability = mask_probability
        self.random_probability = random_probability
        self.pad_to_multiple_of = pad_to_multiple_of
        self.rng = SeededRNG(seed)

    @abstractmethod
    def mask_columns(self, columns: dict[str, np.ndarray], lengths: np.ndarray, rng: np.random.Generator) -> None:
        """Corrupt `columns["input_ids"]` (B, T) in place and add `columns["labels"]` (B, T)."""

    def __call__(self, features: Sequence[Mapping]) -> dict[str, torch.Tensor]:
        columns, lengths = pad_batch(features, self.vocab.pad_id, self.pad_to_multiple_of)
        if "labels" in columns:
            raise ValueError(
                "features already carry 'labels' (a static masked dataset?): collate them with "
                "DataCollatorForPrecomputedMasks instead of masking again"
            )
        self.mask_columns(columns, lengths, self.rng.get())
        return to_torch_batch(columns, lengths, with_token_types="token_type_ids" in columns)

    def _candidates_and_budgets(self, columns, lengths, rng):
        candidates = candidate_mask(columns, lengths, self.vocab)
        return candidates, masking_budgets(candidates, self.mlm_probability, rng)


class DataCollatorForMaskedLM(MaskingCollator):
    """BERT/RoBERTa masked LM with dynamic masking.

    Exactly ``mlm_probability`` of each row's non-special tokens are selected in expectation
    (probabilistic rounding per row; HF's collator draws a Bernoulli per token instead), then
    corrupted 80/10/10 per token. With `whole_word_mask=True` whole words are selected until the
    budget is met and all their sub-tokens are predicted (BERT's whole-word masking; each
    sub-token still gets its own 80/10/10 draw, as in BERT's `create_pretraining_data.py`). Word
    boundaries come from a `word_ids` feature when present (keep it with
    `TrainingArguments(remove_unused_columns=False)`), else from the vocabulary (`##` for
    WordPiece, the ``Ġ``/``▁`` space markers for byte-level BPE and Unigram).
    """

    def __init__(
        self,
        tokenizer,
        mlm_probability: float = 0.15,
        mask_probability: float = 0.8,
        random_probability: float = 0.1,
        whole_word_mask: bool = False,
        pad_to_multiple_of: int | None = None,
        seed: int | None = None,
    ):
        super().__init__(tokenizer, mlm_probability, mask_probability, random_probability, pad_to_multiple_of, seed)
        self.whole_word_mask = whole_word_mask

    def mask_columns(self, columns: dict[str, np.ndarray], lengths: np.ndarray, rng: np.random.Generator) -> None:
        candidates, budgets = self._candidates_and_budgets(columns, lengths, rng)
        units = word_starts(columns, candidates, self.vocab) if self.whole_word_mask else candidates
        selected = select_whole_units(units, candidates, budgets, rng)
        columns["input_ids"], columns["labels"] = corrupt(
            columns["input_ids"], selected, self.vocab, rng, self.mask_probability, self.random_probability
        )


class DataCollatorForPrecomputedMasks:
    """Pads examples that already carry their masks (`make_static_masked_dataset`): `input_ids`
    with the pad id, `labels` and `sbo_labels` with -100, the other SBO indices with 0."""

    def __init__(self, tokenizer, pad_to_multiple_of: int | None = None):
        if tokenizer.pad_token_id is None:
            raise ValueError("the tokenizer has no pad token; dynamic padding needs one")
        self.pad_id = tokenizer.pad_token_id
        self.pad_to_multiple_of = pad_to_multiple_of

    def __call__(self, features: Sequence[Mapping]) -> dict[str, torch.Tensor]:
        columns, lengths = pad_batch(features, self.pad_id, self.pad_to_multiple_of)
        if "labels" not in columns:
            raise ValueError("features have no 'labels': mask them with make_static_masked_dataset first")
        return to_torch_batch(columns, lengths, with_token_types="token_type_ids" in columns)


def make_static_masked_dataset(
    dataset: datasets.Dataset,
    tokenizer,
    copies: int = 10,
    seed: int = 0,
    masker: MaskingCollator | None = None,
    batch_size: int = 1000,
) -> datasets.Dataset:
    """BERT's static masking: `copies` copies of `dataset`, each masked once with its own mask.

    Copy *c* occupies rows ``c * len(dataset)`` to ``(c + 1) * len(dataset) - 1``. The masks are a
    pure function of ``(seed, c, row)`` (each chunk of `batch_size` rows draws from a Generator
    seeded with ``[seed, c, first_row]``), so re-running gives the same dataset.

    Args:
        dataset: rows with `input_ids` (and optionally `token_type_ids`, `special_tokens_mask`,
            `word_ids`, scalar labels such as `next_sentence_label`).
        masker: the masking scheme (any `MaskingCollator`: MLM, whole-word, span, n-gram);
            default `DataCollatorForMaskedLM(tokenizer)`.

    Returns:
        A Dataset with the masked `input_ids`, `labels` (-100 where not predicted), any extra
        targets the masker makes (SpanBERT's `sbo_*`), `token_type_ids` and scalar labels.
        Collate it with `DataCollatorForPrecomputedMasks`.
    """
    if copies < 1:
        raise ValueError(f"copies must be >= 1, got {copies}")
    if "input_ids" not in dataset.column_names:
        raise ValueError(f"the dataset has no 'input_ids' column (columns: {dataset.column_names})")
    if "labels" in dataset.column_names:
        raise ValueError("the dataset already has 'labels'; static masking would overwrite them")
    masker = masker or DataCollatorForMaskedLM(tokenizer)
    dropped = [c for c in ("special_tokens_mask", "word_ids", "attention_mask") if c in dataset.column_names]

    def mask_chunk(batch: dict[str, list], indices: list[int], copy: int) -> dict[str, list]:
        features = [dict(zip(batch.keys(), values)) for values in zip(*batch.values())]
        columns, lengths = pad_batch(features, masker.vocab.pad_id)
        masker.mask_columns(columns, lengths, np.random.default_rng([seed, copy, indices[0]]))
        output = {}
        for key, value in columns.items():
            if key in dropped:
                continue
            if key in SEQUENCE_COLUMNS:
                output[key] = [row[:length].tolist() for row, length in zip(value, lengths)]
            else:
                output[key] = value.tolist()
        return output

    masked_copies = [
        dataset.map(
            mask_chunk,
            batched=True,
            batch_size=batch_size,
            with_indices=True,
            fn_kwargs={"copy": copy},
            remove_columns=dataset.column_names,
            desc=f"static masking, copy {copy + 1}/{copies}",
        )
        for copy in range(copies)
    ]
    return datasets.concatenate_datasets(masked_copies)
