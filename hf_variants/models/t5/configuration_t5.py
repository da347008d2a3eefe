"""T5 configuration (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified
Text-to-Text Transformer"). Our field names are the shared ones (``hidden_size`` ...); transformers'
T5 names (``d_model``, ``d_kv``, ``d_ff``, ``num_heads``, ``num_layers``, ``num_decoder_layers``,
``dropout_rate``, ``layer_norm_epsilon``) are aliases, so T5 habits carry over."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantEncoderDecoderConfig


@strict
class T5Config(VariantEncoderDecoderConfig):
    """Defaults are T5-base v1.0 (the paper's baseline); ``modeling_configs/`` has the named sizes.

    The paper's settings: pre-LN blocks with RMS norm (no bias, no mean), no biases in any
    projection, unscaled dot-product attention with a learned relative-position bias (32 buckets,
    logarithmic beyond 8 positions up to 128, one scalar per head and bucket, computed by each
    stack's first layer and shared by all), no absolute positions, one vocabulary for source and
    target, dropout 0.1 everywhere (embeddings, attention probabilities, inside the FFN, each
    residual branch and after each stack's final norm). v1.0: ReLU FFN and an output layer tied
    to the embeddings with the d_model^-0.5 rescale; v1.1: gated-GELU FFN (``gated_ffn=True``,
    ``hidden_act="gelu_new"``) and an untied output layer without the rescale.
    """

    model_type = "hfv_t5"
    attribute_map = {
        "d_model": "hidden_size",
        "d_kv": "head_dim",
        "d_ff": "intermediate_size",
        "num_heads": "num_attention_heads",
        "num_layers": "num_hidden_layers",
        "num_decoder_layers": "decoder_layers",
        "dropout_rate": "hidden_dropout_prob",
        "layer_norm_epsilon": "layer_norm_eps",
    }

    vocab_size: int = 32128  # SentencePiece vocabulary (32k + 100 sentinels, padded to a multiple of 128)
    hidden_size: int = 768  # d_model
    num_hidden_layers: int = 12  # encoder blocks
    decoder_layers: int | None = None  # decoder blocks (None: as the encoder)
    num_attention_heads: int = 12
    head_dim: int | None = 64  # d_kv: per-head width, independent of d_model / heads
    intermediate_size: int = 3072  # d_ff
    hidden_act: str = "relu"  # v1.0 ReLU; v1.1 "gelu_new" with gated_ffn
    gated_ffn: bool = False  # v1.1's gated-GELU FFN (Shazeer 2020)
    hidden_dropout_prob: float = 0.1  # dropout_rate: embeddings, residual branches, final norm
    attention_probs_dropout_prob: float = 0.1  # T5 uses dropout_rate here too
    ffn_dropout_prob: float = 0.1  # between the FFN activation and its output projection
    relative_attention_num_buckets: int = 32  # position buckets (half per direction in the encoder)
    relative_attention_max_distance: int = 128  # distances beyond this share the last bucket
    position_embedding_type: str = "none"  # positions enter through the relative bias only
    type_vocab_size: int = 0  # no segment embeddings
    norm_type: str = "rms_norm"  # T5LayerNorm: scale only, no mean, no bias
    layer_norm_eps: float = 1e-6
    pre_layer_norm: bool = True  # x + Dropout(Sublayer(Norm(x))), a final norm per stack
    use_bias: bool = False  # no biases in attention or FFN projections
    attention_scale: float | None = 1.0  # no 1/sqrt(d) score scaling (folded into the init)
    initializer_factor: float = 1.0  # multiplies every init std (T5's Mesh TF initialisation)
    classifier_dropout: float | None = 0.0  # dropout in the classification / token-classification heads
    tie_word_embeddings: bool = True  # v1.0 ties the output layer to the embeddings; v1.1 does not
    # Multiply decoder outputs by d_model^-0.5 before the output layer; None: exactly when tied
    # (v1.0), as the original does.
    scale_decoder_outputs: bool | None = None
    pad_token_id: int | None = 0
    eos_token_id: int | None = 1
    decoder_start_token_id: int | None = 0  # T5 starts decoding from the pad token

    @property
    def rescales_output(self) -> bool:
        """Whether the decoder output is multiplied by d_model^-0.5 before the LM head."""
        return self.tie_word_embeddings if self.scale_decoder_outputs is None else self.scale_decoder_outputs

    def check_architecture(self) -> None:
        super().check_architecture()
        if self.relative_attention_num_buckets < 4:
            raise ValueError(
                f"relative_attention_num_buckets must be >= 4 (half per direction, half of those exact), "
                f"got {self.relative_attention_num_buckets}"
            )
        exact = self.relative_attention_num_buckets // 4
        if self.relative_attention_max_distance <= exact:
            raise ValueError(
                f"relative_attention_max_distance ({self.relative_attention_max_distance}) must exceed the exact "
                f"buckets per direction ({exact})"
            )
        if self.position_embedding_type != "none" or self.type_vocab_size != 0:
            raise ValueError(
                "T5 has no absolute position or segment embeddings: position_embedding_type must be "
                "'none' and type_vocab_size 0"
            )
        if not self.pre_layer_norm:
            raise ValueError("T5's blocks are pre-LN (pre_layer_norm=True)")
