"""A tiny decoder-only model and a tiny encoder-decoder model built from the shared blocks alone
(no variant code): what a variant declaring itself a decoder gets from ``hf_variants.modules``.

They are not registered with the Auto classes (test-only model types), so they build on the blocks'
own ``TransformerPreTrainedModel``: ``save_pretrained`` and ``from_pretrained`` are transformers' own
(no remote code to export, no conversion; a shipped variant uses ``VariantPreTrainedModel``).
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from hf_variants.modules.backbone import TransformerBackbone, TransformerPreTrainedModel
from hf_variants.modules.configuration import DecoderConfig, EncoderDecoderConfig
from hf_variants.modules.decoder import DecoderBackbone, EncoderDecoderBackbone
from hf_variants.modules.generation import DecoderForCausalLM, EncoderDecoderForSeq2SeqLM

# Tiny sizes shared by both models. The wide init gives peaked next-token distributions, so
# greedy/beam choices are not near-ties.
TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_position_embeddings=64,
    type_vocab_size=0,
    initializer_range=0.3,
    layer_norm_eps=1e-5,
    pre_layer_norm=True,
    bos_token_id=1,
)


@strict
class TinyDecoderConfig(DecoderConfig):
    model_type = "hfv_test_tiny_decoder"

    padding_free: bool = False


@strict
class TinySeq2SeqConfig(EncoderDecoderConfig):
    model_type = "hfv_test_tiny_seq2seq"

    padding_free: bool = True  # the encoder may run packed; the decoder with a cache never does
    decoder_start_token_id: int | None = 1


def tiny_decoder_config(**overrides) -> TinyDecoderConfig:
    return TinyDecoderConfig(**{**TINY, **overrides})


def tiny_seq2seq_config(**overrides) -> TinySeq2SeqConfig:
    return TinySeq2SeqConfig(**{**TINY, **overrides})


class TinyPreTrainedModel(TransformerPreTrainedModel):
    config_class = TinyDecoderConfig
    base_model_prefix = "model"


class TinyDecoderModel(DecoderBackbone, TinyPreTrainedModel):
    pass


class TinyForCausalLM(DecoderForCausalLM, TinyPreTrainedModel):
    backbone_class = TinyDecoderModel


class TinySeq2SeqPreTrainedModel(TransformerPreTrainedModel):
    config_class = TinySeq2SeqConfig
    base_model_prefix = "model"


class TinyEncoder(TransformerBackbone, TinySeq2SeqPreTrainedModel):
    pass


class TinyDecoder(DecoderBackbone, TinySeq2SeqPreTrainedModel):
    pass


class TinySeq2SeqModel(EncoderDecoderBackbone, TinySeq2SeqPreTrainedModel):
    encoder_class = TinyEncoder
    decoder_class = TinyDecoder


class TinyForConditionalGeneration(EncoderDecoderForSeq2SeqLM, TinySeq2SeqPreTrainedModel):
    backbone_class = TinySeq2SeqModel
