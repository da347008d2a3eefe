"""BERT configuration (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers
for Language Understanding"). Field names follow transformers' BertConfig so configs and habits carry over."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig


@strict
class BertConfig(VariantConfig):
    """Defaults are BERT-base (uncased); every shared field (and its one-line meaning) is declared in
    :class:`TransformerConfig`. See ``modeling_configs/`` for the named sizes.

    The paper's settings: post-LN blocks, exact (erf) GELU, learned positions (512), two segments,
    dropout 0.1 everywhere, LayerNorm eps 1e-12, truncated-normal init with std 0.02, and the MLM
    decoder tied to the word embeddings. ``pre_layer_norm``, ``position_embedding_type``,
    ``layer_sharing`` and ``norm_type`` are there for ablations (Xiong et al.'s pre-LN,
    Vaswani et al.'s sinusoids, ALBERT's sharing).
    """

    model_type = "hfv_bert"

    vocab_size: int = 30522  # WordPiece vocabulary (30k uncased English; 119,547 for multilingual cased)
