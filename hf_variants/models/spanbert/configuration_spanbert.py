"""SpanBERT configuration (Joshi et al. 2020, "SpanBERT: Improving Pre-training by Representing
and Predicting Spans").

SpanBERT's encoder is BERT's, so the config is the shared encoder config (BERT's fields) plus the
Span Boundary Objective fields.
Defaults are SpanBERT-base (cased); see ``modeling_configs/spanbert-*`` for the named sizes.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig


@strict
class SpanBertConfig(VariantConfig):
    """BERT's fields (hidden_size, num_hidden_layers, ..., declared in :class:`TransformerConfig`)
    plus the SBO head's.

    SpanBERT pretrains on single segments (no NSP); ``type_vocab_size`` stays 2 by default so the
    released BERT-format checkpoints and tokenizers' ``token_type_ids`` load unchanged
    (pretraining feeds segment 0 only). Set it to 0 to drop segment embeddings altogether.
    """

    model_type = "hfv_spanbert"

    vocab_size: int = 28996  # the released SpanBERT models use BERT's cased WordPiece vocabulary
    sbo_position_embedding_size: int = 200  # width of the SBO relative-position embedding p_i (paper code: 200)
    max_span_length: int = (
        20  # relative positions the SBO head embeds (paper code's max_pair_targets); deeper tokens get no SBO target
    )
    sbo_weight: float = 1.0  # loss = MLM + sbo_weight * SBO (the paper sums them: 1.0)

    def check_architecture(self) -> None:
        super().check_architecture()
        for name in ("sbo_position_embedding_size", "max_span_length"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.sbo_weight < 0:
            raise ValueError(f"sbo_weight must be >= 0, got {self.sbo_weight}")
        if self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size must be >= 0, got {self.type_vocab_size}")
