"""Causal language modelling with several documents packed into each row (GPT; Radford et al.
2018/2019 trained on contiguous chunks; packing with per-document masks as in Krell et al. 2021,
"Efficient Sequence Packing without Cross-contamination").

A packed row holds documents back to back (each followed by EOS when the tokenizer has one, as
GPT-2's ``<|endoftext|>``), so no compute goes to padding. Three things keep the documents apart:

- `position_ids` restart at 0 at every document (a packed document sees the positions it would
  see alone);
- `document_ids` (B, T), 0, 1, 2, ... per row and -1 on padding, from which a model builds the
  block-diagonal causal mask (`document_causal_mask` / `document_causal_bias`: token i attends
  to j iff both are in the same document and j <= i);
- `labels` are the input ids with -100 on padding and on the first token of every document:
  transformers' causal LM losses shift labels left, so label t is predicted at position t - 1,
  and the first token of a document must not be predicted from the end of the previous one.

With `attention_mask_4d=True` the collator returns `document_causal_bias` as `attention_mask`
(B, 1, T, T), which transformers' decoders (GPT-2, Llama, ...) use as given, so packed batches
run on them too; a padding query attends to itself only, so no softmax row is empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import datasets
import numpy as np
import torch

# The block-diagonal causal masks are built with every other mask, in modules/masks.py; they stay
# importable from here (hf_variants.objectives.document_causal_bias), where packed rows are made.
from ..modules.masks import document_causal_bias, document_causal_mask  # noqa: F401 (re-exported)
from .masking import IGNORE_INDEX, pad_batch, word_start_positions
from .packing import iter_corpus_documents, tokenize_documents


def pack_causal_documents(
    documents: Iterable[Sequence[int]], max_length: int, eos_token_id: int | None = None, split_documents: bool = True
) -> Iterator[dict[str, list[int]]]:
    """Fill rows of `max_length` tokens with documents back to back (EOS appended to each when
    `eos_token_id` is given). A document that does not fit in what is left of a row is split
    and continues at the start of the next row, so every row but the last is full. With
    `split_documents=False` it starts the next row instead (each document is learned whole, in
    its own context; a row may end short), and a document longer than `max_length` raises.

    Yields:
        ``{"input_ids", "document_ids", "position_ids"}``, each at most `max_length` long.
    """
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2, got {max_length}")
    row: dict[str, list[int]] = {"input_ids": [], "document_ids": [], "position_ids": []}
    for index, document in enumerate(documents):
        tokens = list(document) + ([eos_token_id] if eos_token_id is not None else [])
        if not document:
            continue
        if not split_documents:
            if len(tokens) > max_length:
                raise ValueError(
                    f"document {index} has {len(tokens)} tokens (EOS included), more than max_length="
                    f"{max_length}; truncate it or pack with split_documents=True"
                )
            if len(row["input_ids"]) + len(tokens) > max_length:
                yield row
                row = {"input_ids": [], "document_ids": [], "position_ids": []}
        while tokens:
            room = max_length - len(row["input_ids"])
            piece, tokens = tokens[:room], tokens[room:]
            document_id = row["document_ids"][-1] + 1 if row["document_ids"] else 0
            row["input_ids"] += piece
            row["document_ids"] += [document_id] * len(piece)
            row["position_ids"] += list(range(len(piece)))
            if len(row["input_ids"]) == max_length:
                yield row
                row = {"input_ids": [], "document_ids": [], "position_ids": []}
    if row["input_ids"]:
        yield row


def corpus_document_token_ids(corpus: datasets.Dataset, tokenizer) -> Iterator[list[int]]:
    """The token ids of each document of a `load_corpus`-style corpus (one document = all its
    paragraphs, joined by newlines), without special tokens; documents with no tokens are skipped."""
    documents = tokenize_documents(
        (["\n".join(paragraphs)] for paragraphs in iter_corpus_documents(corpus)), tokenizer, sentences=False
    )
    return ([token for segment in document for token in segment] for document in documents)


def document_separator_id(tokenizer) -> int | None:
    """The token that ends a document in a CLM stream: EOS (GPT-2's ``<|endoftext|>``), else SEP
    (BERT-style vocabularies), else None (documents run into each other)."""
    return tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id


def causal_lm_dataset(corpus: datasets.Dataset, tokenizer, max_length: int = 1024) -> datasets.Dataset:
    """Packed CLM rows from a `load_corpus`-style corpus (one document = all its paragraphs,
    joined by newlines), with the tokenizer's EOS after each document when it has one."""

    def generate(corpus, tokenizer, max_length):
        yield from pack_causal_documents(
            corpus_document_token_ids(corpus, tokenizer), max_length, tokenizer.eos_token_id
        )

    return datasets.Dataset.from_generator(
        generate, gen_kwargs={"corpus": corpus, "tokenizer": tokenizer, "max_length": max_length}
    )


class DataCollatorForPackedCausalLM:
    """Pads packed CLM rows (`pack_causal_documents` / `causal_lm_dataset`) and makes the labels.

    Args:
        tokenizer: needs a pad token (or an EOS token, used for padding as GPT-2 does).
        attention_mask_4d: return `attention_mask` as the (B, 1, T, T) `document_causal_bias`
            (for transformers' decoders) instead of the (B, T) padding mask.
        return_document_ids: include `document_ids` (for models that build the mask themselves;
            turn off for models whose forward does not take it).
        return_attention_bias: also return `document_causal_bias` as `attention_bias` (B, 1, T, T)
            next to the (B, T) padding `attention_mask`: what hf-variants' decoders
            (`GPTLMHeadModel(..., attention_bias=...)`) take for packed rows.
        one_document_per_feature: accept features without `document_ids`, each one document.
            Off by default, so that packed rows whose `document_ids` were dropped on the way
            (`Trainer` drops dataset columns the model's forward does not name: pass
            `TrainingArguments(remove_unused_columns=False)`) raise instead of silently
            attending across documents.
        pad_to_multiple_of: pad T up to a multiple.

    Features: `input_ids`, `document_ids` and optionally `position_ids` (recomputed from
    `document_ids` when absent).

    Returns from `__call__`: input_ids (B, T), position_ids (B, T), labels (B, T), attention_mask
    (B, T) int64 or (B, 1, T, T) float32, document_ids (B, T) int64 (-1 on padding), and with
    `return_attention_bias` attention_bias (B, 1, T, T) float32.
    """

    def __init__(
        self,
        tokenizer,
        attention_mask_4d: bool = False,
        return_document_ids: bool = True,
        one_document_per_feature: bool = False,
        pad_to_multiple_of: int | None = None,
        return_attention_bias: bool = False,
    ):
        if attention_mask_4d and return_attention_bias:
            raise ValueError("attention_mask_4d and return_attention_bias both carry the document mask: choose one")
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if pad_id is None:
            raise ValueError("the tokenizer has neither a pad nor an EOS token to pad with")
        self.pad_id = pad_id
        self.attention_mask_4d = attention_mask_4d
        self.return_document_ids = return_document_ids
        self.one_document_per_feature = one_document_per_feature
        self.pad_to_multiple_of = pad_to_multiple_of
        self.return_attention_bias = return_attention_bias

    def __call__(self, features: Sequence[Mapping]) -> dict[str, torch.Tensor]:
        if any("labels" in feature for feature in features):
            raise ValueError("features already carry 'labels'; the packed CLM collator makes them from input_ids")
        if any("document_ids" not in f for f in features):
            if not self.one_document_per_feature:
                raise ValueError(
                    "features have no 'document_ids' (with Trainer, set remove_unused_columns=False so "
                    "the column reaches the collator; for unpacked documents pass "
                    "one_document_per_feature=True)"
                )
            features = [{**f, "document_ids": [0] * len(f["input_ids"])} for f in features]
        columns, lengths = pad_batch(features, self.pad_id, self.pad_to_multiple_of)
        document_ids = columns["document_ids"]
        inside = document_ids >= 0
        if (~inside & (np.arange(document_ids.shape[1])[None, :] < lengths[:, None])).any():
            raise ValueError("document_ids must be >= 0 inside a row (-1 marks padding)")
        document_start = inside.copy()
        document_start[:, 1:] &= document_ids[:, 1:] != document_ids[:, :-1]
        if "position_ids" not in columns:
            columns["position_ids"] = np.where(
                inside, np.arange(document_ids.shape[1])[None, :] - word_start_positions(document_start, inside), 0
            )
        elif (columns["position_ids"][document_start] != 0).any():
            raise ValueError("position_ids must restart at 0 where a document starts")
        labels = np.where(inside & ~document_start, columns["input_ids"], IGNORE_INDEX)
        batch = {
            "input_ids": torch.from_numpy(columns["input_ids"]),
            "position_ids": torch.from_numpy(columns["position_ids"]),
            "labels": torch.from_numpy(labels),
        }
        ids = torch.from_numpy(document_ids)
        batch["attention_mask"] = (
            document_causal_bias(ids) if self.attention_mask_4d else torch.from_numpy(inside.astype(np.int64))
        )
        if self.return_attention_bias:
            batch["attention_bias"] = document_causal_bias(ids)
        if self.return_document_ids:
            batch["document_ids"] = ids
        return batch
