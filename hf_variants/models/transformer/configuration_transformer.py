"""Configuration of the original Transformer (Vaswani et al. 2017, "Attention Is All You Need").

Named ``OriginalTransformerConfig`` because ``TransformerConfig`` is the shared base every variant's
config derives from (``hf_variants.modules.configuration``); the model_type is ``hfv_transformer``.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ...modules.embeddings import SINUSOIDAL_LAYOUTS
from ..configuration_base import VariantEncoderDecoderConfig


@strict
class OriginalTransformerConfig(VariantEncoderDecoderConfig):
    """Defaults are the paper's base model (Table 3): 6 + 6 post-LN layers, d_model 512, 8 heads,
    FFN 2048 with ReLU, dropout 0.1 on sub-layer outputs and embeddings, sinusoidal positions,
    one embedding matrix shared by source, target and output (a 37k joint BPE vocabulary, WMT14
    En-De), scaled by sqrt(d_model), label smoothing 0.1. ``modeling_configs/transformer-big``:
    d_model 1024, 16 heads, FFN 4096, dropout 0.3.
    """

    model_type = "hfv_transformer"

    vocab_size: int = 37000  # shared source/target BPE vocabulary (WMT14 En-De)
    hidden_size: int = 512  # d_model
    num_hidden_layers: int = 6  # N (encoder; decoder_layers defaults to it)
    num_attention_heads: int = 8  # h
    intermediate_size: int = 2048  # d_ff
    hidden_act: str = "relu"
    hidden_dropout_prob: float = 0.1  # P_drop on every sub-layer output and on the embedding sums
    attention_probs_dropout_prob: float = 0.0  # the paper drops no attention weights (Marian's default too)
    max_position_embeddings: int = 512  # rows of the sinusoidal table
    position_embedding_type: str = "sinusoidal"
    sinusoidal_layout: str = (
        "interleaved"  # the paper's sin/cos per dimension pair; "concatenated" as tensor2tensor/fairseq/Marian
    )
    type_vocab_size: int = 0
    layer_norm_eps: float = 1e-5
    pre_layer_norm: bool = False  # the paper: LayerNorm(x + Sublayer(x)); True: pre-LN with final norms
    scale_embedding: bool = True  # multiply the shared embeddings by sqrt(d_model) (sec. 3.4)
    label_smoothing: float = 0.1  # epsilon_ls of the training loss (sec. 5.4)
    initializer_range: float = 0.02
    pad_token_id: int | None = 0
    eos_token_id: int | None = 1
    decoder_start_token_id: int | None = 0  # decoding starts from the padding id (Marian's convention)

    def check_architecture(self) -> None:
        super().check_architecture()
        if self.sinusoidal_layout not in SINUSOIDAL_LAYOUTS:
            raise ValueError(f"sinusoidal_layout must be one of {SINUSOIDAL_LAYOUTS}, got {self.sinusoidal_layout!r}")
        if self.type_vocab_size != 0:
            raise ValueError("the Transformer has no segment embeddings: type_vocab_size must be 0")
        if self.embedding_size not in (None, self.hidden_size):
            raise ValueError(
                "the Transformer shares (vocab, d_model) embeddings with its output: embedding_size must be None"
            )
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
