"""Contiguous word-span masking: SpanBERT spans (+ span-boundary targets) and ALBERT n-grams.

Both choose runs of whole words with a length distribution until a token budget is met; they
differ in the distribution and in how 80/10/10 is applied. The sampler (`sample_word_spans`)
differs from SpanBERT's `PairWithSpanMaskingScheme` on purpose, in three ways (all to keep
what is measured equal to what is specified):

- SpanBERT picks the anchor token uniformly, moves to its word start and grows the span to the
  right, running into and merging with earlier spans. Here the anchor is drawn the same way (a word, with probability proportional
  to its number of tokens), but a span is only placed where all its words are free, contiguous
  (no special token inside) and separated from other spans by at least one unmasked token, so
  the two boundary tokens the span-boundary objective conditions on are never masked and spans
  never merge. If no anchor fits after `anchor_tries` draws a new length is drawn.
- SpanBERT cuts the last span (mid-word) to hit the budget exactly, which makes the realised
  lengths shorter than the drawn ones. Here spans are never cut, so they start and end on word
  boundaries and keep their drawn length; whether to start another span is decided before its
  length is drawn, with the stopping threshold lowered by the expected overshoot of the last
  span, so the *expected* masked fraction is `mlm_probability` (a row may be off by part of a
  span, never by a whole one) and the pooled span lengths follow the distribution exactly in
  expectation (Wald's identity).
- Lengths are in whole words, drawn from the clipped and renormalised geometric distribution
  (SpanBERT: p = 0.2, lengths 1..10) or from p(n) ∝ 1/n, n <= 3 (ALBERT).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from .masking import IGNORE_INDEX, candidate_mask, corrupt, word_start_positions, word_starts
from .mlm import MaskingCollator


def clipped_geometric_probabilities(p: float, min_length: int, max_length: int) -> np.ndarray:
    """SpanBERT's length distribution: P(L = l) ∝ p (1 - p)^(l - min_length), l in [min, max]."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"geometric p must be in (0, 1], got {p}")
    if not 1 <= min_length <= max_length:
        raise ValueError(f"need 1 <= min_length <= max_length, got {min_length}, {max_length}")
    lengths = np.arange(min_length, max_length + 1)
    weights = p * (1 - p) ** (lengths - min_length)
    return weights / weights.sum()


def inverse_length_probabilities(max_n: int) -> np.ndarray:
    """ALBERT's n-gram distribution: P(n) ∝ 1 / n for n in 1..max_n."""
    if max_n < 1:
        raise ValueError(f"max n-gram length must be >= 1, got {max_n}")
    weights = 1.0 / np.arange(1, max_n + 1)
    return weights / weights.sum()


@dataclass(frozen=True)
class WordSpan:
    """One masked span: tokens [start, end) covering `n_words` whole words."""

    start: int
    end: int
    n_words: int


def expected_overshoot(word_length: np.ndarray, lengths: np.ndarray, probabilities: np.ndarray) -> float:
    """Expected number of tokens by which the last span overshoots a stopping threshold.

    Spans are drawn until the covered count reaches a threshold; by renewal theory the overshoot
    of an integer-valued renewal process has mean E[T(T-1)] / (2 E[T]), T = tokens in a span.
    T is a sum of `L` word lengths; the first word is drawn with probability proportional to its
    length (size-biased), the others are the row's plain word lengths.
    """
    lengths_f = word_length.astype(np.float64)
    squares = lengths_f * lengths_f
    m1, m2, m3 = lengths_f.mean(), squares.mean(), float(np.dot(squares, lengths_f)) / len(lengths_f)
    first_mean, first_square = m2 / m1, m3 / m1
    rest = lengths - 1
    rest_mean = float(np.dot(probabilities, rest))
    rest_var = float(np.dot(probabilities, rest**2)) - rest_mean**2
    mean = first_mean + rest_mean * m1
    variance = (first_square - first_mean**2) + rest_mean * (m2 - m1**2) + rest_var * m1**2
    return (variance + mean**2 - mean) / (2 * mean)


def sample_word_spans(
    word_begin: np.ndarray,
    word_length: np.ndarray,
    target: float,
    lengths: np.ndarray,
    probabilities: np.ndarray,
    rng: np.random.Generator,
    anchor_tries: int = 20,
    max_failures: int = 10,
) -> list[WordSpan]:
    """Place non-overlapping, non-adjacent spans of whole words, about `target` tokens in all.

    Spans are never cut: whether to start another span is decided before its length is drawn
    (continue while the covered count is below a threshold), which is a stopping rule, so by
    Wald's identity the pooled span lengths follow `probabilities` exactly in expectation. The
    threshold is `target` minus the expected overshoot of the last span (`expected_overshoot`),
    randomly rounded, so the expected number of masked tokens is `target` for rows of more
    than a few spans; a row overshoots its threshold by less than one span.

    Args:
        word_begin: (K,) first token position of each maskable word of one row, increasing.
        word_length: (K,) number of tokens of each word.
        target: expected number of tokens to cover (e.g. 0.15 * maskable tokens).
        lengths / probabilities: span lengths in words and their probabilities.
        anchor_tries: anchors tried for one drawn length before drawing a new length.
        max_failures: lengths that found no place before giving up (a crowded row).

    Returns:
        The spans, in placement order.
    """
    n_words = len(word_begin)
    if n_words == 0 or target <= 0:
        return []
    threshold = target - expected_overshoot(word_length, lengths, probabilities)
    threshold = np.floor(threshold) + (rng.random() < threshold - np.floor(threshold))
    # Every placed span covers >= 1 token, so this many draws always suffice; drawn in bulk.
    draws = max(int(threshold), 0) + max_failures + 1
    span_lengths = rng.choice(lengths, size=draws, p=probabilities).tolist()
    cumulative_weight = (np.cumsum(word_length) / word_length.sum()).tolist()
    uniforms: list[float] = []
    begins, counts = word_begin.tolist(), word_length.tolist()
    # joined[k]: word k+1 directly follows word k (no special token between them);
    # run_end[k]: the last word of the run of joined words that contains word k.
    joined = [begins[k] + counts[k] == begins[k + 1] for k in range(n_words - 1)] + [False]
    run_end = list(range(n_words))
    for k in range(n_words - 2, -1, -1):
        if joined[k]:
            run_end[k] = run_end[k + 1]
    tokens_before = [0, *accumulate(counts)]
    taken = [False] * n_words
    spans: list[WordSpan] = []
    covered = failures = 0
    for span_words in span_lengths:
        if covered >= threshold or failures >= max_failures:
            break
        for _ in range(anchor_tries):
            if not uniforms:  # refill the pool of uniforms in bulk (numpy calls are costly one by one)
                uniforms = rng.random(4 * draws).tolist()
            # The anchor word is drawn with probability proportional to its number of tokens.
            first = min(bisect.bisect_right(cumulative_weight, uniforms.pop()), n_words - 1)
            last = first + span_words - 1
            if last > run_end[first]:
                continue  # runs past the row's end or a special token
            # Free words, plus one free joined neighbour on each side (spans never touch).
            low = first - 1 if first > 0 and joined[first - 1] else first
            high = last + 1 if joined[last] else last
            if any(taken[low : high + 1]):
                continue
            taken[first : last + 1] = [True] * span_words
            covered += tokens_before[last + 1] - tokens_before[first]
            spans.append(WordSpan(begins[first], begins[last] + counts[last], span_words))
            break
        else:
            failures += 1
    return spans


def sample_batch_word_spans(
    starts: np.ndarray,
    candidates: np.ndarray,
    targets: np.ndarray,
    lengths: np.ndarray,
    probabilities: np.ndarray,
    rng: np.random.Generator,
) -> list[list[WordSpan]]:
    """`sample_word_spans` for every row of a batch.

    Args:
        starts: (B, T) bool word starts (`word_starts`); candidates: (B, T) bool maskable tokens.
        targets: (B,) expected number of tokens to cover per row.
        lengths / probabilities: span lengths in words and their probabilities.

    Returns:
        Per row, the placed spans (placement order).
    """
    word_of_token = word_start_positions(starts, candidates)
    width = candidates.shape[1]
    spans = []
    for row in range(candidates.shape[0]):
        begins = np.flatnonzero(starts[row])
        word_length = np.bincount(word_of_token[row][candidates[row]], minlength=width)[begins]
        spans.append(sample_word_spans(begins, word_length, float(targets[row]), lengths, probabilities, rng))
    return spans


class _WordSpanCollator(MaskingCollator):
    """Shared driver: find words per row, sample spans, corrupt, fill per-token targets."""

    length_values: np.ndarray
    length_probabilities: np.ndarray
    decide_per_span: bool

    def mask_columns(self, columns: dict[str, np.ndarray], lengths: np.ndarray, rng: np.random.Generator) -> None:
        candidates = candidate_mask(columns, lengths, self.vocab)
        targets = candidates.sum(axis=1) * self.mlm_probability
        starts = word_starts(columns, candidates, self.vocab)
        batch, width = candidates.shape
        selected = np.zeros((batch, width), dtype=bool)
        span_start = np.full((batch, width), -1, dtype=np.int64)
        span_end = np.full((batch, width), -1, dtype=np.int64)
        self.last_spans: list[list[WordSpan]] = sample_batch_word_spans(
            starts, candidates, targets, self.length_values, self.length_probabilities, rng
        )
        for row, spans in enumerate(self.last_spans):
            for span in spans:
                selected[row, span.start : span.end] = True
                span_start[row, span.start : span.end] = span.start
                span_end[row, span.start : span.end] = span.end
        original = columns["input_ids"]
        columns["input_ids"], columns["labels"] = corrupt(
            original,
            selected,
            self.vocab,
            rng,
            self.mask_probability,
            self.random_probability,
            decision_position=span_start if self.decide_per_span else None,
        )
        self.add_span_targets(columns, original, selected, span_start, span_end, lengths)

    def add_span_targets(self, columns, original, selected, span_start, span_end, lengths) -> None:
        """Hook for objectives that need more than MLM labels (SpanBERT's SBO)."""


class DataCollatorForSpanMasking(_WordSpanCollator):
    """SpanBERT: mask contiguous spans of whole words, span lengths ~ Geometric(p) clipped to
    [min_span, max_span] and renormalised, until `mlm_probability` of the tokens are covered;
    80/10/10 is decided once per span (the whole span is [MASK], random tokens, or unchanged).

    Besides `input_ids`, `attention_mask`, `labels` (and `token_type_ids`) it returns, per token,
    (B, T) int64 tensors for the span boundary objective:
        sbo_left / sbo_right: position of the token just before / after the span that contains
            this masked token (0 elsewhere);
        sbo_relative: 0-based offset of the token inside its span (0 elsewhere);
        sbo_labels: the original id where both boundary tokens of the span are real text (inside
            the row and not special tokens such as [CLS]/[SEP]), -100 elsewhere (and where the offset is >= `max_sbo_offset`, if set: SpanBERT's
            `max_pair_targets`, the size of the SBO head's position table).
    """

    decide_per_span = True

    def __init__(
        self,
        tokenizer,
        mlm_probability: float = 0.15,
        geometric_p: float = 0.2,
        min_span: int = 1,
        max_span: int = 10,
        mask_probability: float = 0.8,
        random_probability: float = 0.1,
        max_sbo_offset: int | None = None,
        pad_to_multiple_of: int | None = None,
        seed: int | None = None,
    ):
        super().__init__(tokenizer, mlm_probability, mask_probability, random_probability, pad_to_multiple_of, seed)
        self.length_probabilities = clipped_geometric_probabilities(geometric_p, min_span, max_span)
        self.length_values = np.arange(min_span, max_span + 1)
        if max_sbo_offset is not None and max_sbo_offset < 1:
            raise ValueError(f"max_sbo_offset must be >= 1, got {max_sbo_offset}")
        self.max_sbo_offset = max_sbo_offset

    def add_span_targets(self, columns, original, selected, span_start, span_end, lengths) -> None:
        positions = np.arange(original.shape[1])[None, :]
        # As the original code, a span gets SBO targets only when both boundary tokens are real
        # text: spans touching the row's edge or a special token ([CLS], [SEP]) are skipped.
        left = np.take_along_axis(original, np.clip(span_start - 1, 0, original.shape[1] - 1), axis=1)
        right = np.take_along_axis(original, np.clip(span_end, 0, original.shape[1] - 1), axis=1)
        has_boundaries = (
            selected
            & (span_start >= 1)
            & (span_end < lengths[:, None])
            & ~self.vocab.special[left]
            & ~self.vocab.special[right]
        )
        relative = np.where(selected, positions - span_start, 0)
        predicted = has_boundaries
        if self.max_sbo_offset is not None:
            predicted = predicted & (relative < self.max_sbo_offset)
        columns["sbo_left"] = np.where(has_boundaries, span_start - 1, 0)
        columns["sbo_right"] = np.where(has_boundaries, span_end, 0)
        columns["sbo_relative"] = relative
        columns["sbo_labels"] = np.where(predicted, original, IGNORE_INDEX)


class DataCollatorForNgramMasking(_WordSpanCollator):
    """ALBERT's n-gram masking: n-grams of n <= `max_ngram` whole words, P(n) ∝ 1/n, until
    `mlm_probability` of the tokens are covered; 80/10/10 per token, as ALBERT's
    `create_masked_lm_predictions` does."""

    decide_per_span = False

    def __init__(
        self,
        tokenizer,
        mlm_probability: float = 0.15,
        max_ngram: int = 3,
        mask_probability: float = 0.8,
        random_probability: float = 0.1,
        pad_to_multiple_of: int | None = None,
        seed: int | None = None,
    ):
        super().__init__(tokenizer, mlm_probability, mask_probability, random_probability, pad_to_multiple_of, seed)
        self.length_probabilities = inverse_length_probabilities(max_ngram)
        self.length_values = np.arange(1, max_ngram + 1)
