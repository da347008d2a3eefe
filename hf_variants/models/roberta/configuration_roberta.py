"""RoBERTa configuration (Liu et al. 2019, "RoBERTa: A Robustly Optimized BERT Pretraining
Approach"). Field names follow transformers' RobertaConfig; XLM-RoBERTa (Conneau et al. 2020) is
the same architecture with a 250,002-token SentencePiece vocabulary and uses this config too."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig

# transformers' model_types of the two families with this network (and their tokenizers).
TRANSFORMERS_FAMILIES = ("roberta", "xlm-roberta")


@strict
class RobertaConfig(VariantConfig):
    """Defaults are RoBERTa-base; every shared field (and its one-line meaning) is declared in
    :class:`TransformerConfig`. See ``modeling_configs/roberta-*`` and ``xlmr-*`` for the named sizes.

    What differs from BERT's defaults: positions are counted from ``pad_token_id + 1`` (fairseq's
    convention: padding sits at the padding index, so 512 tokens need 514 position rows), one
    segment type (no NSP, so no segment B), LayerNorm eps 1e-5 (fairseq's), and the byte-level
    BPE special ids ``<s>=0 <pad>=1 </s>=2``. The block itself (post-LN, GELU, dropout 0.1, init
    std 0.02, tied MLM decoder) is BERT's; the paper changes the training, not the network.
    """

    model_type = "hfv_roberta"

    vocab_size: int = 50265  # byte-level BPE (50,265 for RoBERTa; XLM-R's SentencePiece: 250,002)
    max_position_embeddings: int = 514  # position rows: 512 tokens + the padding index and the unused rows below it
    type_vocab_size: int = 1  # one segment type: RoBERTa drops NSP (transformers keeps a 1-row segment table)
    layer_norm_eps: float = 1e-5  # fairseq's LayerNorm epsilon
    pad_token_id: int | None = 1  # <pad>; also the position padding index (real tokens start at pad_token_id + 1)
    bos_token_id: int | None = 0  # <s>: the first token, read by the sequence-classification head
    eos_token_id: int | None = 2  # </s>: ends a segment (pairs: <s> A </s></s> B </s>)
    # The transformers family to_transformers builds by default: "roberta" or "xlm-roberta" (same
    # network; the model_type a saved transformers folder gets, which picks its tokenizer class).
    # Set from the source by from_transformers / from_pretrained, so a round trip keeps the class.
    transformers_family: str = "roberta"

    def check_architecture(self) -> None:
        super().check_architecture()
        if self.transformers_family not in TRANSFORMERS_FAMILIES:
            raise ValueError(
                f"transformers_family must be one of {TRANSFORMERS_FAMILIES}, got {self.transformers_family!r}"
            )
        if self.pad_token_id is None:
            raise ValueError("RoBERTa counts positions from the padding index: pad_token_id must be set")
        if self.position_embedding_type != "learned":
            raise ValueError(
                f"RoBERTa's positions are learned and offset by the padding index; position_embedding_type "
                f"{self.position_embedding_type!r} is not supported"
            )
        if self.max_position_embeddings <= self.pad_token_id + 1:
            raise ValueError(
                f"max_position_embeddings ({self.max_position_embeddings}) leaves no position for a token: real "
                f"tokens start at pad_token_id + 1 = {self.pad_token_id + 1}"
            )
