"""Sentence-pair construction for next-sentence prediction (BERT) and sentence-order prediction
(ALBERT), following BERT's `create_pretraining_data.py` (`create_instances_from_document`).

Per document: segments (sentences) are accumulated until they reach a target length
(`max_length` minus the special tokens; with probability `short_seq_prob`, drawn per pair, a
random shorter target, so the model also sees short inputs), then split at a random segment boundary into A
and B.

- NSP (`build_nsp_pairs`, label `next_sentence_label`: 0 = B follows A, 1 = B is random): with
  probability 1/2, B is replaced by segments from a random start in another document, filled to
  the remaining target length; the unused segments go back to the stream (as in BERT).
- SOP (`build_sop_pairs`, label `sentence_order_label`: 0 = in order, 1 = swapped): A and B
  are always consecutive; with probability 1/2 they are swapped (ALBERT).
- `input_format="sentence-pair"` (RoBERTa's SENTENCE-PAIR) uses single natural sentences for A
  and B instead of multi-sentence segments ("segment-pair", BERT's default).

Two deliberate differences from BERT's script, both so labels carry no length or position cue:
- a chunk holding a single segment is split at a random token inside it (BERT always pairs it
  with a random B, which makes "random" more frequent than 1/2);
- over-long pairs are trimmed only at the outer ends (the start of A, the end of B), from the
  longer one, never at the A|B junction, for every label alike; so a true "next" pair is always
  contiguous text, whatever the truncation.
These builders need random access to other documents: `documents` is a Sequence (a list of
token-id lists holds a 10^6-token corpus in well under 100 MB).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .templates import SpecialTokenTemplate

PAIR_FORMATS = ("segment-pair", "sentence-pair")
Document = Sequence[Sequence[int]]


def _flatten(segments: Sequence[Sequence[int]]) -> list[int]:
    return [token for segment in segments for token in segment]


def _trim_outer_ends(first: list[int], second: list[int], max_tokens: int) -> None:
    """Shorten the longer side (B on ties) until the pair fits: A from its start, B from its end.
    Same result as BERT's token-by-token trimming of the longer side, minus the random end."""
    excess = len(first) + len(second) - max_tokens
    while excess > 0:
        cut = min(excess, max(1, abs(len(first) - len(second))))
        if len(first) > len(second):
            del first[:cut]
        else:
            del second[len(second) - cut :]
        excess -= cut


def _random_continuation(
    documents: Sequence[Document], exclude: int, target: int, rng: np.random.Generator
) -> list[int]:
    """Segments from a random start in a random other document, filled to `target` tokens."""
    for _ in range(10):  # BERT's retry loop: any document but the current one
        other = int(rng.integers(len(documents)))
        if other != exclude:
            break
    document = documents[other]
    start = int(rng.integers(len(document)))
    tokens: list[int] = []
    for segment in document[start:]:
        tokens.extend(segment)
        if len(tokens) >= target:
            break
    return tokens


def _take_chunk(document: Document, position: int, target: int, input_format: str) -> list[Sequence[int]]:
    """Segments from `position` on: two sentences (SENTENCE-PAIR), or until `target` tokens."""
    if input_format == "sentence-pair":
        return list(document[position : position + 2])
    chunk, length = [], 0
    while position + len(chunk) < len(document) and length < target:
        chunk.append(document[position + len(chunk)])
        length += len(chunk[-1])
    return chunk


def _pairs(
    documents: Sequence[Document],
    tokenizer,
    max_length: int,
    task: str,
    input_format: str,
    short_seq_prob: float,
    seed: int,
) -> Iterator[dict[str, list[int] | int]]:
    if input_format not in PAIR_FORMATS:
        raise ValueError(f"unknown pair format {input_format!r}; expected one of {PAIR_FORMATS}")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}")
    if task == "nsp" and len(documents) < 2:
        raise ValueError("NSP needs at least two documents (random 'next' segments come from another document)")
    template = SpecialTokenTemplate(tokenizer)
    max_tokens = max_length - template.pair_specials
    if max_tokens < 2:
        raise ValueError(f"max_length={max_length} leaves no room for a pair after the special tokens")
    label_name = "next_sentence_label" if task == "nsp" else "sentence_order_label"
    rng = np.random.default_rng(seed)
    for index in range(len(documents)):
        document = documents[index]
        position = 0
        while position < len(document):
            # Drawn per pair (BERT draws once per document and relies on dupe_factor=10 passes).
            target = max_tokens if rng.random() >= short_seq_prob else int(rng.integers(2, max_tokens + 1))
            chunk = _take_chunk(document, position, target, input_format)
            if len(chunk) >= 2:
                split = 1 if input_format == "sentence-pair" else int(rng.integers(1, len(chunk)))
                first, second = _flatten(chunk[:split]), _flatten(chunk[split:])
            elif len(chunk[0]) >= 2:
                split = 1
                cut = int(rng.integers(1, len(chunk[0])))
                first, second = list(chunk[0][:cut]), list(chunk[0][cut:])
            else:
                position += 1  # a lone one-token segment cannot form a pair
                continue
            label = int(rng.random() < 0.5)
            if label and task == "nsp":
                fill_to = max(target - len(first), 1) if input_format == "segment-pair" else 1
                second = _random_continuation(documents, index, fill_to, rng)
                position += split  # B's segments were not used: they go back to the stream
            else:
                position += len(chunk)
            _trim_outer_ends(first, second, max_tokens)  # before any swap: keeps the junction intact
            if label and task == "sop":  # swap the two consecutive halves
                first, second = second, first
            example = template.build(first, second).as_dict()
            example[label_name] = label
            yield example


def build_nsp_pairs(
    documents: Sequence[Document],
    tokenizer,
    max_length: int = 512,
    input_format: str = "segment-pair",
    short_seq_prob: float = 0.1,
    seed: int = 0,
) -> Iterator[dict[str, list[int] | int]]:
    """BERT's NSP examples: `input_ids`, `token_type_ids`, `special_tokens_mask` (each at most
    `max_length` long) and `next_sentence_label` (0: B is the real continuation, 1: random)."""
    return _pairs(documents, tokenizer, max_length, "nsp", input_format, short_seq_prob, seed)


def build_sop_pairs(
    documents: Sequence[Document],
    tokenizer,
    max_length: int = 512,
    input_format: str = "segment-pair",
    short_seq_prob: float = 0.1,
    seed: int = 0,
) -> Iterator[dict[str, list[int] | int]]:
    """ALBERT's SOP examples: like `build_nsp_pairs`, with `sentence_order_label` (0: A then B
    as in the text, 1: swapped)."""
    return _pairs(documents, tokenizer, max_length, "sop", input_format, short_seq_prob, seed)
