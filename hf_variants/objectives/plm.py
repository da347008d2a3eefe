"""XLNet's permutation language modelling (Yang et al. 2019, "XLNet: Generalized Autoregressive
Pretraining for Language Understanding", sections 2.2-2.4), as a data collator.

What the original code does (zihangdai/xlnet `data_utils.py`: `_sample_mask`, `_local_perm`,
`get_dataset`), and what this collator reproduces:

- **Partial prediction**: only about 1/K of the tokens are predicted (K = 6 in the paper, i.e.
  `num_predict=85` of 512). Targets are chosen as n-grams with P(n) ∝ 1/n, n <= 5, starting on a
  word start. Here they are whole-word spans placed by the shared span sampler
  (`spans.sample_word_spans`: whole words, non-adjacent spans, the budget met in expectation);
  the original counts the n-gram in tokens and tops up with random single tokens to hit exactly
  85, so its targets are a little less word-aligned.
- **Factorisation order**: a random order *within blocks* of `perm_size` positions, the blocks in
  sequence order (XLNet used `perm_size = reuse_len = seq_len / 2`, so the first half, later
  reused as memory, never sees the second). The original draws one within-block permutation
  and applies it to every block of a part (a side effect of `tf.random_shuffle` on the
  transposed index); here every block of every row gets its own permutation.
- **Content stream uncorrupted**: `input_ids` keep the real tokens (transformers'
  `DataCollatorForPermutationLanguageModeling` writes [MASK] into them; the model's query
  stream, not the input, hides what is predicted).
- **Visibility** (`perm_mask[b, i, j] = 1` means i may NOT attend to j), for i, j in the same
  block: a target sees the context and the targets/special tokens strictly before it in the
  factorisation order, never itself; a context token (not predicted, not special) sees all the
  context of its block and no target; a special token ([SEP], [CLS]) sees the context and what
  precedes it in the order, itself included. Across blocks: everything in an earlier block is
  visible, nothing in a later one. Padding is never visible and never a target. transformers'
  XLNet removes the diagonal from the content stream's mask, so every token's content stream
  still sees itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from .masking import IGNORE_INDEX, SeededRNG, VocabInfo, candidate_mask, pad_batch, to_torch_batch, word_starts
from .spans import WordSpan, inverse_length_probabilities, sample_batch_word_spans


def factorization_ranks(width: int, perm_size: int, batch: int, rng: np.random.Generator) -> np.ndarray:
    """(B, T) int64: each position's place in the factorisation order, a random permutation inside
    each block of `perm_size` positions, blocks in order (block k holds ranks
    ``k * perm_size .. k * perm_size + len(block) - 1``; the last block may be shorter)."""
    block = np.broadcast_to(np.arange(width) // perm_size, (batch, width))
    order = np.lexsort((rng.random((batch, width)), block), axis=-1)  # sort by block, then at random
    ranks = np.empty((batch, width), dtype=np.int64)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(width), (batch, width)), axis=1)
    return ranks


def permutation_visibility(
    ranks: np.ndarray, targets: np.ndarray, context: np.ndarray, inside: np.ndarray, perm_size: int
) -> np.ndarray:
    """(B, T, T) bool, True where query i may attend to key j (the complement of `perm_mask`).

    Args:
        ranks: (B, T) factorisation order (`factorization_ranks`).
        targets: (B, T) predicted positions; context: (B, T) real, non-special, non-predicted
            tokens; inside: (B, T) non-padding. Inside tokens that are neither are special
            ("functional") tokens, ordered like targets but never predicted.
    """
    width = ranks.shape[1]
    block = np.arange(width) // perm_size
    same_block = (block[:, None] == block[None, :])[None]
    earlier_block = (block[None, :] < block[:, None])[None]
    before = ranks[:, None, :] < ranks[:, :, None]  # [b, i, j]: j comes before i in the order
    functional = inside & ~targets & ~context
    itself = np.eye(width, dtype=bool)[None]
    in_block = context[:, None, :] | (targets[:, :, None] & before) | (functional[:, :, None] & (before | itself))
    visible = earlier_block | (same_block & in_block)
    return visible & inside[:, None, :] & inside[:, :, None]


class DataCollatorForPermutationLM:
    """XLNet permutation LM with partial prediction, for `XLNetLMHeadModel` (see the module
    docstring for the rules and where they come from).

    Args:
        tokenizer: pad token required (a mask token is not: the input is never corrupted).
        plm_probability: expected fraction of a row's non-special tokens that are predicted (1/K,
            K = 6 in the paper).
        max_span_length: longest target span in words; span lengths follow P(n) ∝ 1/n.
        perm_size: length of a permutation block; None makes the whole row one block.
        num_predict: fixed number of prediction slots (XLNet: 85 for 512); rows with more
            targets drop their last-placed spans (those tokens become context). None uses the
            batch's largest count.
        pad_to_multiple_of: pad T up to a multiple. seed: see `masking.SeededRNG`.

    Features: `input_ids` (+ optional `token_type_ids`, `special_tokens_mask`, `word_ids`).

    Returns from `__call__` (T = padded length, P = prediction slots):
        input_ids (B, T) int64, the real tokens; attention_mask (B, T) int64;
        perm_mask (B, T, T) float32, 1 where i may not attend to j;
        target_mapping (B, P, T) float32, one-hot rows for the targets in position order, zero
            rows for unused slots; labels (B, P) int64, the target tokens, -100 in unused slots;
        token_type_ids (B, T) when the features carry them.
    After a call, `last_ranks` (B, T) holds the factorisation order and `last_spans` the spans.
    """

    def __init__(
        self,
        tokenizer,
        plm_probability: float = 1 / 6,
        max_span_length: int = 5,
        perm_size: int | None = None,
        num_predict: int | None = None,
        pad_to_multiple_of: int | None = None,
        seed: int | None = None,
    ):
        if not 0.0 < plm_probability < 1.0:
            raise ValueError(f"plm_probability must be in (0, 1), got {plm_probability}")
        if perm_size is not None and perm_size < 1:
            raise ValueError(f"perm_size must be >= 1, got {perm_size}")
        if num_predict is not None and num_predict < 1:
            raise ValueError(f"num_predict must be >= 1, got {num_predict}")
        self.tokenizer = tokenizer
        self.vocab = VocabInfo.from_tokenizer(tokenizer, require_mask=False)
        self.plm_probability = plm_probability
        self.length_probabilities = inverse_length_probabilities(max_span_length)
        self.length_values = np.arange(1, max_span_length + 1)
        self.perm_size = perm_size
        self.num_predict = num_predict
        self.pad_to_multiple_of = pad_to_multiple_of
        self.rng = SeededRNG(seed)

    def _choose_targets(self, columns, candidates, rng) -> tuple[np.ndarray, list[list[WordSpan]]]:
        starts = word_starts(columns, candidates, self.vocab)
        spans = sample_batch_word_spans(
            starts,
            candidates,
            candidates.sum(axis=1) * self.plm_probability,
            self.length_values,
            self.length_probabilities,
            rng,
        )
        targets = np.zeros_like(candidates)
        for row, row_spans in enumerate(spans):
            if self.num_predict is not None:
                while sum(s.end - s.start for s in row_spans) > self.num_predict:
                    row_spans.pop()
            for span in row_spans:
                targets[row, span.start : span.end] = True
        return targets, spans

    def __call__(self, features: Sequence[Mapping]) -> dict[str, torch.Tensor]:
        columns, lengths = pad_batch(features, self.vocab.pad_id, self.pad_to_multiple_of)
        if "labels" in columns:
            raise ValueError("features already carry 'labels'; the PLM collator makes its own targets")
        candidates = candidate_mask(columns, lengths, self.vocab)
        too_short = np.flatnonzero(candidates.sum(axis=1) < 2)
        if len(too_short):
            raise ValueError(
                f"rows {too_short.tolist()} have fewer than 2 non-special tokens: permutation LM "
                "needs a context and a target"
            )
        rng = self.rng.get()
        targets, self.last_spans = self._choose_targets(columns, candidates, rng)
        batch, width = candidates.shape
        inside = np.arange(width)[None, :] < lengths[:, None]
        perm_size = self.perm_size or width
        self.last_ranks = factorization_ranks(width, perm_size, batch, rng)
        visible = permutation_visibility(self.last_ranks, targets, candidates & ~targets, inside, perm_size)

        counts = targets.sum(axis=1)
        slots = self.num_predict or max(int(counts.max()), 1)
        target_mapping = np.zeros((batch, slots, width), dtype=np.float32)
        labels = np.full((batch, slots), IGNORE_INDEX, dtype=np.int64)
        rows, positions = np.nonzero(targets)  # row-major, so positions ascend within a row
        slot = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
        target_mapping[rows, slot, positions] = 1.0
        labels[rows, slot] = columns["input_ids"][rows, positions]

        output = to_torch_batch(columns, lengths, with_token_types="token_type_ids" in columns)
        output["perm_mask"] = torch.from_numpy((~visible).astype(np.float32))
        output["target_mapping"] = torch.from_numpy(target_mapping)
        output["labels"] = torch.from_numpy(labels)
        return output
