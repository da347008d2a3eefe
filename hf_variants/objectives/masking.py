"""The shared masking core: padding, candidate positions, budgets, word grouping, 80/10/10.

Every masking objective in this package is "choose positions under a budget, then corrupt them":

1. `pad_batch` pads features (lists of dicts) to numpy arrays and finds the *candidates*:
   non-special, non-pad tokens (B, T).
2. `word_starts` marks where each word begins (from `word_ids`, or from the vocabulary's
   word-start table, e.g. WordPiece ``##``) so selections can respect word boundaries.
3. `masking_budgets` draws the number of tokens to mask per row: ``p * n_candidates`` with
   probabilistic rounding, so the expected masked fraction is exactly ``p`` even for short rows.
4. A selector picks positions: `select_whole_units` (tokens or whole words, vectorised) here,
   contiguous word spans in `spans.py`.
5. `corrupt` applies BERT's 80% [MASK] / 10% random token / 10% unchanged, deciding per token or
   per group (SpanBERT decides per span) and writes `labels` (-100 where not predicted).

Later objectives reuse these pieces: ELECTRA's generator input is step 1-5 unchanged; T5 span
corruption reuses `word_starts` + the span sampler with sentinel replacement instead of step 5;
XLM's TLM is MLM over a concatenated pair; XLNet's PLM reuses the span sampler to choose its
prediction targets.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..tokenization import word_start_table

IGNORE_INDEX = -100

# Per-token sequence columns a collator understands; everything else must be a scalar label.
SEQUENCE_COLUMNS = (
    "input_ids",
    "token_type_ids",
    "special_tokens_mask",
    "word_ids",
    "attention_mask",
    "labels",
    "sbo_left",
    "sbo_right",
    "sbo_relative",
    "sbo_labels",
    "langs",
    "position_ids",
    "document_ids",
)
# Per-example labels passed through as (B,) tensors (NSP / SOP / classification).
SCALAR_LABEL_COLUMNS = ("next_sentence_label", "sentence_order_label", "label")
# Padding value per stored column (labels and SBO targets are ignored at pad positions).
PAD_VALUES = {
    "token_type_ids": 0,
    "special_tokens_mask": 1,
    "word_ids": -1,
    "labels": IGNORE_INDEX,
    "sbo_left": 0,
    "sbo_right": 0,
    "sbo_relative": 0,
    "sbo_labels": IGNORE_INDEX,
    "langs": 0,
    "position_ids": 0,  # XLM's TLM (`tlm.py`) and packed CLM (`clm.py`)
    "document_ids": -1,
}  # packed CLM: -1 marks padding


@dataclass
class VocabInfo:
    """What masking needs to know about a tokenizer, as plain arrays.

    Attributes:
        pad_id / mask_id: the padding and mask token ids.
        special: (V,) bool, True for special tokens (never selected for masking).
        replacement_ids: (R,) int64, the ids a "random token" replacement draws from: the
            non-special vocabulary, as BERT does (it never injects [CLS] or [PAD]).
        word_start: (V,) bool, whether a token begins a word (see `word_start_table`).
    """

    pad_id: int
    mask_id: int
    special: np.ndarray
    replacement_ids: np.ndarray
    word_start: np.ndarray = field(repr=False)

    @classmethod
    def from_tokenizer(cls, tokenizer, require_mask: bool = True) -> VocabInfo:
        """With `require_mask=False` (objectives that never write [MASK]: XLNet's PLM, T5's span
        corruption, causal LM) a tokenizer without a mask token gets ``mask_id = -1``."""
        if require_mask and tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no mask token; masked language modelling needs one")
        if tokenizer.pad_token_id is None:
            raise ValueError("the tokenizer has no pad token; dynamic padding needs one")
        vocab_size = len(tokenizer)
        special = np.zeros(vocab_size, dtype=bool)
        special[list(tokenizer.all_special_ids)] = True
        mask_id = tokenizer.mask_token_id if tokenizer.mask_token_id is not None else -1
        return cls(
            pad_id=tokenizer.pad_token_id,
            mask_id=mask_id,
            special=special,
            replacement_ids=np.flatnonzero(~special).astype(np.int64),
            word_start=np.asarray(word_start_table(tokenizer), dtype=bool),
        )


class SeededRNG:
    """A numpy Generator created lazily, so each DataLoader worker gets its own stream.

    With `seed` set, the main process uses `seed` and worker *k* uses ``seed + 1 + k`` (the same
    masks would otherwise repeat in every worker). With `seed=None` the stream is fresh entropy.
    """

    def __init__(self, seed: int | None):
        self.seed = seed
        self._generator: np.random.Generator | None = None

    def get(self) -> np.random.Generator:
        if self._generator is None:
            seed = self.seed
            worker = torch.utils.data.get_worker_info()
            if seed is not None and worker is not None:
                seed = seed + 1 + worker.id
            elif seed is not None and multiprocessing.current_process().name != "MainProcess":
                raise ValueError("a seeded collator used in a non-DataLoader subprocess would repeat masks")
            self._generator = np.random.default_rng(seed)
        return self._generator


def pad_batch(
    features: Sequence[Mapping], pad_id: int, pad_to_multiple_of: int | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Right-pad a list of feature dicts to numpy arrays.

    Returns:
        columns: each sequence column as (B, T) int64 (pad values from `PAD_VALUES`, input_ids
            padded with `pad_id`), each scalar column (e.g. `next_sentence_label`) as (B,).
            `attention_mask` from the features is dropped: it is recomputed from the lengths.
        lengths: (B,) int64, the unpadded length of every row.
    """
    if not features:
        raise ValueError("cannot collate an empty list of features")
    if any("input_ids" not in f for f in features):
        raise ValueError("every feature needs an 'input_ids' column")
    lengths = np.array([len(f["input_ids"]) for f in features], dtype=np.int64)
    if lengths.min() == 0:
        raise ValueError("a feature has empty 'input_ids'")
    width = int(lengths.max())
    if pad_to_multiple_of:
        width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
    keys = features[0].keys()
    if any(f.keys() != keys for f in features):
        raise ValueError(
            f"features have different columns: {sorted(keys)} vs "
            f"{sorted(next(f.keys() for f in features if f.keys() != keys))}"
        )
    columns: dict[str, np.ndarray] = {}
    for key in keys:
        if key == "attention_mask":
            continue
        values = [f[key] for f in features]
        if key in SEQUENCE_COLUMNS:
            pad_value = pad_id if key == "input_ids" else PAD_VALUES[key]
            array = np.full((len(features), width), pad_value, dtype=np.int64)
            for row, (value, length) in enumerate(zip(values, lengths)):
                if len(value) != length:
                    raise ValueError(f"column {key!r} has length {len(value)} but input_ids has {length}")
                if key == "word_ids":  # tokenizers give None for special tokens
                    value = [-1 if w is None else w for w in value]
                array[row, :length] = value
            columns[key] = array
        elif key in SCALAR_LABEL_COLUMNS:
            columns[key] = np.asarray(values, dtype=np.int64)
        else:
            raise ValueError(
                f"feature column {key!r} is neither a per-token column {SEQUENCE_COLUMNS} nor a "
                f"sequence label {SCALAR_LABEL_COLUMNS}; remove it before collating"
            )
    return columns, lengths


def candidate_mask(columns: Mapping[str, np.ndarray], lengths: np.ndarray, vocab: VocabInfo) -> np.ndarray:
    """(B, T) bool: tokens that may be masked (inside the row, not special)."""
    input_ids = columns["input_ids"]
    inside = np.arange(input_ids.shape[1])[None, :] < lengths[:, None]
    if input_ids.max() >= len(vocab.special) or input_ids.min() < 0:
        raise ValueError(f"input_ids out of range for a vocabulary of {len(vocab.special)} tokens")
    special = vocab.special[input_ids]
    if "special_tokens_mask" in columns:
        special = special | columns["special_tokens_mask"].astype(bool)
    return inside & ~special


def word_starts(columns: Mapping[str, np.ndarray], candidates: np.ndarray, vocab: VocabInfo) -> np.ndarray:
    """(B, T) bool: candidate tokens that begin a word.

    From `word_ids` when the features carry them (the fast tokenizer's own word segmentation),
    otherwise from the vocabulary's word-start table. A candidate right after a non-candidate
    (e.g. after [CLS]/[SEP]) always starts a word, so a word never spans a special token.
    """
    previous_is_candidate = np.zeros_like(candidates)
    previous_is_candidate[:, 1:] = candidates[:, :-1]
    if "word_ids" in columns:
        word_ids = columns["word_ids"]
        new_word = np.ones_like(candidates)
        new_word[:, 1:] = word_ids[:, 1:] != word_ids[:, :-1]
    else:
        new_word = vocab.word_start[columns["input_ids"]]
    return candidates & (new_word | ~previous_is_candidate)


def masking_budgets(candidates: np.ndarray, probability: float, rng: np.random.Generator) -> np.ndarray:
    """(B,) int64: tokens to mask per row, ``probability * n`` rounded up with probability equal to
    its fractional part (so the expectation is exact, unlike BERT's ``round``)."""
    target = candidates.sum(axis=1) * probability
    floor = np.floor(target)
    return (floor + (rng.random(len(target)) < target - floor)).astype(np.int64)


def word_start_positions(starts: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """(B, T) int64: for every candidate token, the position of the first token of its word."""
    positions = np.where(starts, np.arange(starts.shape[1])[None, :], 0)
    return np.where(candidates, np.maximum.accumulate(positions, axis=1), -1)


def select_whole_units(
    starts: np.ndarray, candidates: np.ndarray, budgets: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Select random whole units (words, or single tokens when every candidate is a start) until
    each row reaches its budget of tokens. Vectorised over the batch.

    Units are visited in random order and taken while the running token count stays within the
    budget; the first unit that would overflow is taken too if that lands closer to the budget
    (BERT's whole-word masking would skip it and leave the row short).

    Args:
        starts: (B, T) bool, unit starts (`word_starts`, or `candidates` for token-level masking).
        candidates: (B, T) bool, maskable tokens; a unit is a start plus following candidates.
        budgets: (B,) int64 tokens to select per row.

    Returns:
        (B, T) bool, the selected tokens.
    """
    batch, width = starts.shape
    unit_of_token = word_start_positions(starts, candidates)
    flat_unit = (np.arange(batch)[:, None] * width + unit_of_token)[candidates]
    unit_length = np.bincount(flat_unit, minlength=batch * width).reshape(batch, width)
    # Random order of units: starts get a uniform key, other positions sort last.
    keys = np.where(starts, rng.random((batch, width)), 2.0)
    order = np.argsort(keys, axis=1, kind="stable")
    sorted_length = np.take_along_axis(unit_length, order, axis=1)
    running = np.cumsum(sorted_length, axis=1)
    fits = running <= budgets[:, None]
    n_fit = fits.sum(axis=1)
    # The first overflowing unit: take it when overshooting is closer than stopping short.
    next_index = np.minimum(n_fit, width - 1)
    before = np.where(n_fit > 0, np.take_along_axis(running, np.maximum(n_fit - 1, 0)[:, None], 1)[:, 0], 0)
    after = np.take_along_axis(running, next_index[:, None], 1)[:, 0]
    is_unit = np.take_along_axis(starts, order, axis=1)
    next_is_unit = np.take_along_axis(is_unit, next_index[:, None], 1)[:, 0] & (n_fit < width)
    take_next = next_is_unit & (after - budgets < budgets - before)
    n_take = n_fit + take_next
    chosen_sorted = (np.arange(width)[None, :] < n_take[:, None]) & is_unit
    chosen_start = np.zeros((batch, width), dtype=bool)
    np.put_along_axis(chosen_start, order, chosen_sorted, axis=1)
    safe_unit = np.maximum(unit_of_token, 0)
    return candidates & np.take_along_axis(chosen_start, safe_unit, axis=1)


def corrupt(
    input_ids: np.ndarray,
    selected: np.ndarray,
    vocab: VocabInfo,
    rng: np.random.Generator,
    mask_probability: float = 0.8,
    random_probability: float = 0.1,
    decision_position: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """BERT's corruption of the selected tokens.

    Each selected token becomes [MASK] with `mask_probability`, a random non-special token with
    `random_probability`, and stays unchanged otherwise. With `decision_position` (B, T), the
    draw made at that position decides for the token, so a whole span shares one decision
    (SpanBERT); random replacement tokens are still drawn per token.

    Returns:
        corrupted input_ids (B, T) and labels (B, T): the original id where selected, -100 elsewhere.
    """
    draws = rng.random(input_ids.shape)
    if decision_position is not None:
        draws = np.take_along_axis(draws, np.maximum(decision_position, 0), axis=1)
    to_mask = selected & (draws < mask_probability)
    to_random = selected & (draws >= mask_probability) & (draws < mask_probability + random_probability)
    corrupted = input_ids.copy()
    corrupted[to_mask] = vocab.mask_id
    n_random = int(to_random.sum())
    if n_random:
        corrupted[to_random] = vocab.replacement_ids[rng.integers(0, len(vocab.replacement_ids), n_random)]
    labels = np.where(selected, input_ids, IGNORE_INDEX)
    return corrupted, labels


def check_probabilities(mlm_probability: float, mask_probability: float, random_probability: float) -> None:
    if not 0.0 < mlm_probability < 1.0:
        raise ValueError(f"mlm_probability must be in (0, 1), got {mlm_probability}")
    if mask_probability < 0 or random_probability < 0 or mask_probability + random_probability > 1:
        raise ValueError(
            "mask_probability and random_probability must be >= 0 and sum to at most 1, got "
            f"{mask_probability} and {random_probability}"
        )


def to_torch_batch(
    columns: Mapping[str, np.ndarray], lengths: np.ndarray, with_token_types: bool
) -> dict[str, torch.Tensor]:
    """numpy columns -> the tensors a model's forward takes (+ scalar labels); drops the inputs
    that only guided masking (`special_tokens_mask`, `word_ids`)."""
    batch = {}
    width = columns["input_ids"].shape[1]
    for key, value in columns.items():
        if key in ("special_tokens_mask", "word_ids"):
            continue
        if key == "token_type_ids" and not with_token_types:
            continue
        batch[key] = torch.from_numpy(np.ascontiguousarray(value))
    batch["attention_mask"] = torch.from_numpy((np.arange(width)[None, :] < lengths[:, None]).astype(np.int64))
    return batch
