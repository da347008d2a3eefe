"""ELECTRA's masking (replaced token detection): the generator's input.

Masking is a collator, not part of the model: in the original code (google-research/electra,
``pretrain_helpers.mask``) it is a parameter-free function of the token ids applied before the
generator, exactly what a data collator is in transformers (and the tokenizer's special ids live
here, not in the model config). The sampling of replacements needs the generator's logits, so it
lives in the model (:class:`hf_variants.ElectraForPreTraining`).

Differences from BERT's masking: of the selected positions 85% become [MASK] and 15% stay
unchanged; none is replaced by a random token (the generator's samples are the replacements).
15% of positions are selected (25% for ELECTRA-Large). The selection is the shared core's
(``masking.py``): each row's non-special tokens, ``mlm_probability`` of them in expectation,
each position at most once. The original drew ``round(0.15 x all tokens, [CLS]/[SEP] included)``
positions with replacement among the non-special ones (duplicates merge, so it masks a little
fewer than its count); the difference is a fraction of a token per row.
"""

from __future__ import annotations

from .mlm import DataCollatorForMaskedLM

ELECTRA_MASK_PROBABILITY = 0.85  # of the selected positions -> [MASK]; the rest stay unchanged


class DataCollatorForReplacedTokenDetection(DataCollatorForMaskedLM):
    """Pads and masks a batch for :class:`hf_variants.ElectraForPreTraining`.

    Returns ``input_ids`` (B, T) with the selected positions 85% [MASK] / 15% unchanged,
    ``labels`` (B, T) the original ids there and -100 elsewhere, ``attention_mask`` and
    ``token_type_ids`` (when the features carry them).

    Args:
        mlm_probability: fraction of the non-special tokens selected (0.15; ELECTRA-Large 0.25).
        whole_word_mask / pad_to_multiple_of / seed: as :class:`DataCollatorForMaskedLM`.
    """

    def __init__(
        self,
        tokenizer,
        mlm_probability: float = 0.15,
        whole_word_mask: bool = False,
        pad_to_multiple_of: int | None = None,
        seed: int | None = None,
    ):
        super().__init__(
            tokenizer,
            mlm_probability,
            mask_probability=ELECTRA_MASK_PROBABILITY,
            random_probability=0.0,
            whole_word_mask=whole_word_mask,
            pad_to_multiple_of=pad_to_multiple_of,
            seed=seed,
        )
