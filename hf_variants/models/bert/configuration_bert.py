"""BERT configuration (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers
for Language Understanding"). Field names follow transformers' BertConfig so configs and habits carry over."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from ...conversion.hooks import CheckpointConfigMixin
from ...modules.embeddings import POSITION_EMBEDDING_TYPES
from ...modules.encoder import SHARING_MODES


@strict
class BertConfig(CheckpointConfigMixin, PreTrainedConfig):
    """Defaults are BERT-base (uncased). See ``modeling_configs/`` for the named sizes."""

    model_type = "hfv_bert"

    vocab_size: int = 30522  # WordPiece vocabulary (30k uncased English; 119,547 for multilingual cased)
    hidden_size: int = 768  # H
    num_hidden_layers: int = 12  # L
    num_attention_heads: int = 12  # A; head size = H / A
    intermediate_size: int = 3072  # FFN inner size, 4H in the paper
    hidden_act: str = "gelu"  # exact (erf) GELU, as the released code
    hidden_dropout_prob: float = 0.1  # dropout on every sub-layer output and the embeddings
    attention_probs_dropout_prob: float = 0.1  # dropout on attention probabilities
    max_position_embeddings: int = 512  # longest sequence (learned positions)
    type_vocab_size: int = 2  # segments A/B
    initializer_range: float = 0.02  # std of the truncated-normal init in the paper's code
    layer_norm_eps: float = 1e-12
    pad_token_id: int | None = 0
    position_embedding_type: str = "learned"  # "learned" (BERT) or "sinusoidal" (fixed, Vaswani et al.)
    pre_layer_norm: bool = False  # False: post-LN as BERT; True: pre-LN (Xiong et al. 2020) with a final LayerNorm
    layer_sharing: str = "none"  # cross-layer parameter sharing (ALBERT): none | all | attention | ffn
    classifier_dropout: float | None = None  # dropout before task heads; None -> hidden_dropout_prob
    tie_word_embeddings: bool = True  # MLM decoder shares the word embedding matrix
    padding_free: bool = True  # drop padding tokens inside the encoder: same results at real tokens, zeros at padding, faster (benchmarks/RESULTS.md)
    sparse_prediction: bool = False  # MLM logits only at masked positions when labels are given

    def __post_init__(self, **kwargs):
        if self.position_embedding_type == "absolute":  # transformers' name for learned positions
            self.position_embedding_type = "learned"
        super().__post_init__(**kwargs)
        self.check_architecture()

    def check_architecture(self) -> None:
        """Raise ValueError for combinations the model cannot be built with (a plain ValueError,
        not a strict-dataclass validator, whose errors are not ValueErrors)."""
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads ({self.num_attention_heads})"
            )
        if self.position_embedding_type not in POSITION_EMBEDDING_TYPES:
            raise ValueError(
                f"position_embedding_type must be one of {POSITION_EMBEDDING_TYPES}, got {self.position_embedding_type!r}"
            )
        if self.layer_sharing not in SHARING_MODES:
            raise ValueError(f"layer_sharing must be one of {SHARING_MODES}, got {self.layer_sharing!r}")
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size", "max_position_embeddings"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.pad_token_id is not None and not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id {self.pad_token_id} is outside the vocabulary (vocab_size={self.vocab_size})")
