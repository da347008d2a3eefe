"""XLM's translation language modelling (Lample & Conneau 2019, "Cross-lingual Language Model
Pretraining", section 3.3 and figure 1), built on the shared MLM masking core.

A parallel pair is concatenated into one row; positions restart at the second sentence and
every token carries the language id of its half, so a masked word can be recovered from the
context in its own language or from its translation. As the original (facebookresearch/XLM
`concat_batches(..., reset_positions=True)` in `src/utils.py`, used by `Trainer.mlm_step`):

    input_ids     [CLS] a1 a2 a3 [SEP] [CLS] b1 b2 [SEP]    (each half in the tokenizer's single-
    position_ids    0   1  2  3    4     0   1  2   3      sequence template: XLM's own tokenizer
    langs           en  en en en   en    fr  fr fr  fr     gives </s> a1 a2 a3 </s> ...)

Masking is `DataCollatorForMaskedLM`'s (15% of the row's non-special tokens, 80/10/10) over both
halves at once. One difference from XLM's `mask_out`: special tokens are never masked (XLM
only spares padding and the first position).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import datasets
import torch

from .mlm import DataCollatorForMaskedLM
from .templates import SpecialTokenTemplate


def build_tlm_example(
    first_ids: Sequence[int],
    second_ids: Sequence[int],
    first_lang: int,
    second_lang: int,
    template: SpecialTokenTemplate,
    max_length: int | None = None,
) -> dict[str, list[int]]:
    """One TLM row from a parallel pair of token-id lists (no special tokens).

    With `max_length`, the longer sentence loses tokens from its end until the row fits.

    Returns:
        `input_ids`, `position_ids` (restarting at 0 for the second half), `langs` and
        `special_tokens_mask`, each of length len(first) + len(second) + 2 * template specials.
    """
    first, second = list(first_ids), list(second_ids)
    if not first or not second:
        raise ValueError("both sentences of a translation pair need at least one token")
    specials = 2 * template.single_specials
    if max_length is not None:
        if max_length - specials < 2:
            raise ValueError(f"max_length={max_length} leaves no room for a token of each sentence")
        while len(first) + len(second) + specials > max_length:
            (first if len(first) >= len(second) else second).pop()
    halves = [(template.build(first), first_lang), (template.build(second), second_lang)]
    example: dict[str, list[int]] = {"input_ids": [], "position_ids": [], "langs": [], "special_tokens_mask": []}
    for half, lang in halves:
        example["input_ids"] += half.input_ids
        example["position_ids"] += list(range(len(half.input_ids)))
        example["langs"] += [lang] * len(half.input_ids)
        example["special_tokens_mask"] += half.special_tokens_mask
    return example


def tlm_dataset(
    pairs: datasets.Dataset,
    tokenizer,
    first_lang: str,
    second_lang: str,
    lang2id: Mapping[str, int],
    max_length: int = 256,
    column: str = "translation",
) -> datasets.Dataset:
    """TLM rows from a parallel corpus in the Hub's translation format (one `column` of dicts
    ``{"en": "...", "fr": "..."}``, as `opus_books` and `wmt16` have).

    Args:
        first_lang / second_lang: the keys of the two sentences in each dict; their ids come
            from `lang2id` (the model config's `lang2id`).
        max_length: cap on the concatenated row (see `build_tlm_example`).

    Returns:
        A Dataset with the columns of `build_tlm_example`; pairs where either side has no tokens
        are dropped.
    """
    if column not in pairs.column_names:
        raise ValueError(f"the dataset has no {column!r} column (columns: {pairs.column_names})")
    missing = [lang for lang in (first_lang, second_lang) if lang not in lang2id]
    if missing:
        raise ValueError(f"languages {missing} are not in lang2id {dict(lang2id)}")
    template = SpecialTokenTemplate(tokenizer)

    def encode(batch: dict[str, list]) -> dict[str, list]:
        texts = {lang: [pair[lang] for pair in batch[column]] for lang in (first_lang, second_lang)}
        encoded = {lang: tokenizer(values, add_special_tokens=False)["input_ids"] for lang, values in texts.items()}
        rows = [
            build_tlm_example(a, b, lang2id[first_lang], lang2id[second_lang], template, max_length)
            for a, b in zip(encoded[first_lang], encoded[second_lang])
            if a and b
        ]
        columns = ("input_ids", "position_ids", "langs", "special_tokens_mask")
        return {key: [row[key] for row in rows] for key in columns}

    return pairs.map(encode, batched=True, remove_columns=pairs.column_names, desc="TLM pairs")


class DataCollatorForTranslationLM(DataCollatorForMaskedLM):
    """TLM for `XLMWithLMHeadModel`: BERT's dynamic masking over both halves of `build_tlm_example`
    rows (same arguments as `DataCollatorForMaskedLM`).

    Returns from `__call__`: input_ids (B, T) masked, attention_mask (B, T), labels (B, T) with
    -100 where not predicted, langs (B, T) and position_ids (B, T), padded with 0.
    """

    def __call__(self, features: Sequence[Mapping]) -> dict[str, torch.Tensor]:
        for key in ("langs", "position_ids"):
            if any(key not in feature for feature in features):
                raise ValueError(f"TLM features need '{key}' (build them with build_tlm_example or tlm_dataset)")
        return super().__call__(features)
