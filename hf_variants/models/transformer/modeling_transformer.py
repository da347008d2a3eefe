"""The original Transformer (Vaswani et al. 2017): an encoder-decoder on the shared blocks.

What is the Transformer's own, on top of ``hf_variants.modules``:

- the embeddings: the one shared word matrix scaled by sqrt(d_model), plus fixed sinusoidal
  positions, no LayerNorm (post-LN layers normalise after each sub-layer), dropout
  (:class:`ScaledSinusoidalEmbeddings`);
- positions 0..T-1 on both sides whatever the padding (Marian's convention; the source is
  right-padded, the target starts at the decoder start token);
- the loss: label-smoothed cross-entropy (``config.label_smoothing``, 0.1 in the paper).

The encoder and decoder layers, the cache, cross-attention and ``generate()`` are the shared ones
(``EncoderDecoderBackbone``, ``EncoderDecoderForSeq2SeqLM``); the warm-up schedule is in
:mod:`hf_variants.models.transformer.schedule`.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import GenerationMixin

from ...modules.backbone import TransformerBackbone
from ...modules.decoder import DecoderBackbone, EncoderDecoderBackbone
from ...modules.embeddings import TransformerEmbeddings
from ...modules.generation import EncoderDecoderForSeq2SeqLM
from ..modeling_base import VariantPreTrainedModel
from .configuration_transformer import OriginalTransformerConfig


class ScaledWordEmbedding(nn.Embedding):
    """The word table whose lookup is scaled: ids (B, T) -> ``embed_scale`` * table[ids] (B, T, E).

    The scale lives in the module ``get_input_embeddings()`` returns (as Marian's
    ``MarianScaledWordEmbedding``), so ``model(inputs_embeds=model.get_input_embeddings()(ids))``
    equals ``model(input_ids=ids)``; ``resize_token_embeddings`` replaces the weight in place and
    keeps the module, scale included. The LM head ties to ``weight`` (unscaled), as in the paper.
    """

    def __init__(
        self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, embed_scale: float = 1.0
    ) -> None:
        super().__init__(num_embeddings, embedding_dim, padding_idx=padding_idx)
        self.embed_scale = embed_scale

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return super().forward(input_ids) * self.embed_scale


class ScaledSinusoidalEmbeddings(TransformerEmbeddings):
    """sqrt(d_model) * word embedding + sinusoidal position -> dropout. (B, T) ids -> (B, T, H).
    Embeddings passed as ``inputs_embeds`` are used as given (not scaled again): the scale is in the
    word table's own lookup (:class:`ScaledWordEmbedding`)."""

    def __init__(self, scale: float, **kwargs) -> None:
        super().__init__(**kwargs)
        table = self.word_embeddings
        self.word_embeddings = ScaledWordEmbedding(
            table.num_embeddings, table.embedding_dim, padding_idx=table.padding_idx, embed_scale=scale
        )

    @property
    def scale(self) -> float:
        return self.word_embeddings.embed_scale

    @classmethod
    def from_config(cls, config: OriginalTransformerConfig) -> "ScaledSinusoidalEmbeddings":
        return cls(
            scale=math.sqrt(config.hidden_size) if config.scale_embedding else 1.0,
            layer_norm=False,
            sinusoidal_layout=config.sinusoidal_layout,
            **TransformerEmbeddings.config_kwargs(config),
        )


class OriginalTransformerPreTrainedModel(VariantPreTrainedModel):
    config_class = OriginalTransformerConfig
    base_model_prefix = "model"
    # Marian checkpoints store their fixed sinusoidal tables; ours are computed from the config.
    _keys_to_ignore_on_load_unexpected = [r"(en|de)coder\.embed_positions\.weight"]


class TransformerEncoder(TransformerBackbone, OriginalTransformerPreTrainedModel):
    """The encoder stack: source ids (B, S) -> states (B, S, H)."""

    def build_embeddings(self, config: OriginalTransformerConfig) -> ScaledSinusoidalEmbeddings:
        return ScaledSinusoidalEmbeddings.from_config(config)


class TransformerDecoder(DecoderBackbone, OriginalTransformerPreTrainedModel):
    """The decoder stack: masked self-attention, attention over the encoder's states, FFN."""

    positions_from_attention_mask = False

    def build_embeddings(self, config: OriginalTransformerConfig) -> ScaledSinusoidalEmbeddings:
        return ScaledSinusoidalEmbeddings.from_config(config)


class TransformerModel(EncoderDecoderBackbone, OriginalTransformerPreTrainedModel):
    """Encoder + decoder sharing one word matrix; returns the decoder's last states (B, T, H)."""

    encoder_class = TransformerEncoder
    decoder_class = TransformerDecoder


class TransformerForConditionalGeneration(
    EncoderDecoderForSeq2SeqLM, OriginalTransformerPreTrainedModel, GenerationMixin
):
    """The translation model: logits (B, T, V) from the output layer tied to the shared embeddings,
    loss = label-smoothed cross-entropy; ``generate()`` decodes greedily or by beam search."""

    backbone_class = TransformerModel

    def __init__(self, config: OriginalTransformerConfig) -> None:
        super().__init__(config)
        self.label_smoothing = config.label_smoothing


__all__ = [
    "ScaledWordEmbedding",
    "ScaledSinusoidalEmbeddings",
    "OriginalTransformerPreTrainedModel",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerModel",
    "TransformerForConditionalGeneration",
]
