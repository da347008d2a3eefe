"""T5's span corruption (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
Unified Text-to-Text Transformer", section 3.1.4 and 3.3), as a data collator.

As the original (google-research/text-to-text-transfer-transformer `t5/data/preprocessors.py`:
`random_spans_noise_mask`, `noise_span_to_unique_sentinel`, `random_spans_helper`):

- A row of L tokens gets exactly ``round(L * noise_density)`` noise tokens (at least 1, at most
  L - 1) in ``round(noise / mean_noise_span_length)`` spans (at least 1). The noise and the
  non-noise tokens are each cut into that many non-empty spans uniformly at random, and the
  spans alternate, starting with non-noise (`random_spans_noise_mask`).
- The input keeps the non-noise tokens and replaces noise span k by one sentinel, the target is
  each sentinel followed by the tokens its span dropped; both end with EOS. Sentinel k is the
  tokenizer's ``<extra_id_k>``; in T5's vocabulary these take descending ids from the top
  (``<extra_id_0>`` = vocab_size - 1), which is what `noise_span_to_unique_sentinel` writes.
- `span_corruption_lengths(input_length)` is `random_spans_helper`: the raw token count per row
  that makes the corrupted input exactly `input_length` long (EOS included), and the resulting
  target length (512 -> 568 raw tokens, 114 target tokens), so `pack_for_span_corruption` rows
  give batches of fixed shapes with no padding.

One addition: special tokens inside a row (an EOS between documents) are never noise and split
the row into runs that each get their own noise mask, so no span crosses them (the original's
rows never contain any, so its masks need no such rule). Padding is outside every row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import datasets
import numpy as np
import torch

from .masking import IGNORE_INDEX, SeededRNG, VocabInfo, candidate_mask, pad_batch
from .packing import iter_corpus_documents, tokenize_documents


def check_noise_parameters(noise_density: float, mean_noise_span_length: float) -> None:
    if not 0.0 < noise_density < 1.0:
        raise ValueError(f"noise_density must be in (0, 1), got {noise_density}")
    if not mean_noise_span_length >= 1.0:
        raise ValueError(f"mean_noise_span_length must be >= 1, got {mean_noise_span_length}")


def noise_counts(length: int, noise_density: float, mean_noise_span_length: float) -> tuple[int, int]:
    """(noise tokens, noise spans) for a run of `length` tokens, as `random_spans_noise_mask`
    (Python's round and TensorFlow's both round halves to even)."""
    length = max(length, 2)
    noise_tokens = min(max(int(round(length * noise_density)), 1), length - 1)
    return noise_tokens, max(int(round(noise_tokens / mean_noise_span_length)), 1)


def random_segmentation(num_items: int, num_segments: int, rng: np.random.Generator) -> np.ndarray:
    """(num_segments,) positive lengths summing to `num_items`, every such split equally likely."""
    cuts = np.sort(rng.choice(np.arange(1, num_items), size=num_segments - 1, replace=False))
    return np.diff(np.concatenate([[0], cuts, [num_items]]))


def random_spans_noise_mask(
    length: int, noise_density: float, mean_noise_span_length: float, rng: np.random.Generator
) -> np.ndarray:
    """(length,) bool noise mask: alternating non-noise / noise spans, starting with non-noise."""
    padded_length = max(length, 2)  # as the original: a 1-token run is never noise
    noise_tokens, spans = noise_counts(length, noise_density, mean_noise_span_length)
    noise_lengths = random_segmentation(noise_tokens, spans, rng)
    kept_lengths = random_segmentation(padded_length - noise_tokens, spans, rng)
    is_noise = np.repeat(np.tile([False, True], spans), np.stack([kept_lengths, noise_lengths], 1).ravel())
    return is_noise[:length]


def span_corruption_lengths(
    input_length: int,
    noise_density: float = 0.15,
    mean_noise_span_length: float = 3.0,
    extra_tokens_per_span_inputs: int = 1,
    extra_tokens_per_span_targets: int = 1,
) -> tuple[int, int]:
    """T5's `random_spans_helper`: for a wanted corrupted-input length (EOS included), the number
    of raw tokens a row should hold and the target length (EOS included) it then has.

    Returns:
        (tokens_length, targets_length); e.g. 512 -> (568, 114) at the defaults.
    """
    check_noise_parameters(noise_density, mean_noise_span_length)
    if input_length < 2:
        raise ValueError(f"input_length must be >= 2 (a token and EOS), got {input_length}")

    def corrupted_lengths(tokens_length: int) -> tuple[int, int]:
        noise_tokens = int(round(tokens_length * noise_density))
        spans = int(round(noise_tokens / mean_noise_span_length))
        return (
            tokens_length - noise_tokens + spans * extra_tokens_per_span_inputs + 1,
            noise_tokens + spans * extra_tokens_per_span_targets + 1,
        )

    tokens_length = input_length - 1
    while corrupted_lengths(tokens_length + 1)[0] <= input_length:
        tokens_length += 1
    targets_length = corrupted_lengths(tokens_length)[1]
    if noise_density == 0.5 and targets_length > input_length:  # the original's rounding tweak
        tokens_length -= 1
        targets_length -= 1
    return tokens_length, targets_length


def pack_for_span_corruption(
    documents: Iterable[Iterable[Sequence[int]]], tokens_length: int
) -> Iterator[dict[str, list[int]]]:
    """T5's `reduce_concat_tokens` + `split_tokens`: the documents' tokens (each document a list
    of segments of ids, as `tokenize_documents` yields) concatenated and cut into rows of exactly
    `tokens_length` raw tokens (the last row may be shorter). Yields ``{"input_ids": [...]}``."""
    if tokens_length < 1:
        raise ValueError(f"tokens_length must be >= 1, got {tokens_length}")
    row: list[int] = []
    for document in documents:
        for segment in document:
            row.extend(segment)
            while len(row) >= tokens_length:
                yield {"input_ids": row[:tokens_length]}
                row = row[tokens_length:]
    if row:
        yield {"input_ids": row}


def span_corruption_dataset(
    corpus: datasets.Dataset,
    tokenizer,
    input_length: int = 512,
    noise_density: float = 0.15,
    mean_noise_span_length: float = 3.0,
) -> datasets.Dataset:
    """Rows of raw tokens from a `load_corpus`-style corpus (paragraphs tokenized without special
    tokens, concatenated, cut by `pack_for_span_corruption`) sized so that
    `DataCollatorForSpanCorruption(input_length=input_length)` gives full, unpadded batches."""
    tokens_length, _ = span_corruption_lengths(input_length, noise_density, mean_noise_span_length)

    def generate(corpus, tokenizer, tokens_length):
        documents = tokenize_documents(iter_corpus_documents(corpus), tokenizer, sentences=False)
        yield from pack_for_span_corruption(documents, tokens_length)

    return datasets.Dataset.from_generator(
        generate, gen_kwargs={"corpus": corpus, "tokenizer": tokenizer, "tokens_length": tokens_length}
    )


def sentinel_ids(tokenizer, count: int | None = None) -> np.ndarray:
    """The ids of ``<extra_id_0>``, ``<extra_id_1>``, ... in the tokenizer (all it has, or `count`)."""
    vocab = tokenizer.get_vocab()
    ids = []
    while f"<extra_id_{len(ids)}>" in vocab and (count is None or len(ids) < count):
        ids.append(vocab[f"<extra_id_{len(ids)}>"])
    if not ids:
        raise ValueError(
            "the tokenizer has no sentinel tokens <extra_id_0>, <extra_id_1>, ...; train one with "
            "hf_variants.tokenization.train_tokenizer('unigram-t5', ...)"
        )
    return np.array(ids, dtype=np.int64)


def corrupt_row(
    tokens: np.ndarray,
    maskable: np.ndarray,
    noise_density: float,
    mean_noise_span_length: float,
    sentinels: np.ndarray,
    eos_id: int,
    rng: np.random.Generator,
) -> tuple[list[int], list[int], np.ndarray]:
    """Span-corrupt one row. Each run of maskable tokens gets its own noise mask (so no span
    crosses a special token); sentinels are numbered across the row.

    Returns:
        input ids (ending with EOS), target ids (sentinel + dropped tokens per span, then EOS) and
        the (len(tokens),) bool noise mask.
    """
    noise = np.zeros(len(tokens), dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], maskable.astype(np.int8), [0]])))
    for start, end in zip(edges[::2], edges[1::2]):
        noise[start:end] = random_spans_noise_mask(end - start, noise_density, mean_noise_span_length, rng)
    span_start = noise & ~np.concatenate([[False], noise[:-1]])
    span_number = np.cumsum(span_start) - 1
    if span_start.sum() > len(sentinels):
        raise ValueError(
            f"a row needs {span_start.sum()} sentinels but the tokenizer has {len(sentinels)}; "
            "use shorter rows or more <extra_id_k> tokens"
        )
    with_sentinels = np.where(span_start, sentinels[np.maximum(span_number, 0)], tokens)
    inputs = with_sentinels[~noise | span_start].tolist()
    if not inputs or inputs[-1] != eos_id:
        inputs.append(eos_id)
    targets = with_sentinels[np.flatnonzero(span_start)].tolist()
    pieces = np.split(tokens[noise], np.cumsum(np.bincount(span_number[noise]))[:-1]) if noise.any() else []
    target_ids = [token for sentinel, piece in zip(targets, pieces) for token in (sentinel, *piece.tolist())]
    return inputs, target_ids + [eos_id], noise


class DataCollatorForSpanCorruption:
    """T5 span corruption for `T5ForConditionalGeneration` (see the module docstring).

    Args:
        tokenizer: needs pad and EOS tokens and sentinels ``<extra_id_k>``.
        noise_density: fraction of tokens dropped from the input (0.15).
        mean_noise_span_length: mean length of a dropped span in tokens (3).
        input_length: pad every input to this length (and labels to the matching target length
            from `span_corruption_lengths`); rows that would be longer raise a `ValueError`.
            None pads to the batch's longest.
        return_decoder_input_ids: also return the labels shifted right behind the pad token
            (T5's decoder start); T5 models otherwise make them from `labels` themselves.
        seed: see `masking.SeededRNG`.

    Features: `input_ids` of raw tokens (no EOS needed; a trailing EOS is kept, not doubled).

    Returns from `__call__`: input_ids (B, Ti) int64, attention_mask (B, Ti) int64, labels (B, Tt)
    int64 with -100 on padding, and decoder_input_ids (B, Tt) if asked. After a call,
    `last_noise_masks` holds each row's (L,) bool noise mask.
    """

    def __init__(
        self,
        tokenizer,
        noise_density: float = 0.15,
        mean_noise_span_length: float = 3.0,
        input_length: int | None = None,
        return_decoder_input_ids: bool = False,
        seed: int | None = None,
    ):
        check_noise_parameters(noise_density, mean_noise_span_length)
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no EOS token; span corruption ends inputs and targets with one")
        self.tokenizer = tokenizer
        self.vocab = VocabInfo.from_tokenizer(tokenizer, require_mask=False)
        self.sentinels = sentinel_ids(tokenizer)
        self.noise_density = noise_density
        self.mean_noise_span_length = mean_noise_span_length
        self.input_length = input_length
        self.target_length = None
        if input_length is not None:
            self.target_length = span_corruption_lengths(input_length, noise_density, mean_noise_span_length)[1]
        self.return_decoder_input_ids = return_decoder_input_ids
        self.rng = SeededRNG(seed)

    def __call__(self, features: Sequence[Mapping]) -> dict[str, torch.Tensor]:
        columns, lengths = pad_batch([{"input_ids": f["input_ids"]} for f in features], self.vocab.pad_id)
        maskable = candidate_mask(columns, lengths, self.vocab)
        rng = self.rng.get()
        inputs, targets, self.last_noise_masks = [], [], []
        for row, length in enumerate(lengths):
            if not maskable[row].any():
                raise ValueError(f"row {row} has no ordinary tokens to corrupt")
            source, target, noise = corrupt_row(
                columns["input_ids"][row, :length],
                maskable[row, :length],
                self.noise_density,
                self.mean_noise_span_length,
                self.sentinels,
                self.tokenizer.eos_token_id,
                rng,
            )
            inputs.append(source)
            targets.append(target)
            self.last_noise_masks.append(noise)
        input_width = self.input_length or max(map(len, inputs))
        target_width = self.target_length or max(map(len, targets))
        if max(map(len, inputs)) > input_width or max(map(len, targets)) > target_width:
            raise ValueError(
                f"a corrupted row is longer than input_length={self.input_length} (or its target than "
                f"{self.target_length}): give rows of at most span_corruption_lengths(input_length)[0] "
                "raw tokens"
            )
        input_ids = torch.full((len(inputs), input_width), self.vocab.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(inputs), input_width), dtype=torch.long)
        labels = torch.full((len(targets), target_width), IGNORE_INDEX, dtype=torch.long)
        for row, (source, target) in enumerate(zip(inputs, targets)):
            input_ids[row, : len(source)] = torch.tensor(source)
            attention_mask[row, : len(source)] = 1
            labels[row, : len(target)] = torch.tensor(target)
        batch = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
        if self.return_decoder_input_ids:
            shifted = torch.full_like(labels, self.vocab.pad_id)
            shifted[:, 1:] = labels[:, :-1].masked_fill(labels[:, :-1] == IGNORE_INDEX, self.vocab.pad_id)
            batch["decoder_input_ids"] = shifted
        return batch
