"""A tiny decoder-only model and a tiny encoder-decoder model built from the shared blocks alone
(no variant code): what a variant declaring itself a decoder gets from ``hf_variants.modules``.

They are not registered with the Auto classes (test-only model types), so they have no remote code
to export: ``save_pretrained`` is transformers' own.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedModel

from hf_variants.modules.backbone import TransformerBackbone, TransformerPreTrainedModel
from hf_variants.modules.configuration import TransformerConfig
from hf_variants.modules.decoder import DecoderBackbone, EncoderDecoderBackbone
from hf_variants.modules.generation import DecoderForCausalLM, EncoderDecoderForSeq2SeqLM


@strict
class TinyDecoderConfig(TransformerConfig):
    model_type = "hfv_test_tiny_decoder"

    vocab_size: int = 99
    hidden_size: int = 32
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 37
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 64
    type_vocab_size: int = 0
    # Wide init: peaked next-token distributions, so greedy/beam choices are not near-ties.
    initializer_range: float = 0.3
    layer_norm_eps: float = 1e-5
    pre_layer_norm: bool = True
    padding_free: bool = False
    is_decoder: bool = True
    bos_token_id: int | None = 1
    eos_token_id: int | None = None
    decoder_start_token_id: int | None = None


@strict
class TinySeq2SeqConfig(TinyDecoderConfig):
    model_type = "hfv_test_tiny_seq2seq"

    is_decoder: bool = False
    is_encoder_decoder: bool = True
    padding_free: bool = True  # the encoder may run packed; the decoder with a cache never does
    decoder_start_token_id: int | None = 1
    # The decoder depth under transformers' flat encoder-decoder name: generate() sizes its cache from it
    # (never None there: get_text_config(decoder=True) reads it as num_hidden_layers).
    decoder_layers: int = 2


class _NoRemoteCode:
    # Test-only model types are not registered, so there is no remote code to write next to them.
    save_pretrained = PreTrainedModel.save_pretrained


class TinyPreTrainedModel(_NoRemoteCode, TransformerPreTrainedModel):
    config_class = TinyDecoderConfig
    base_model_prefix = "model"


class TinyDecoderModel(DecoderBackbone, TinyPreTrainedModel):
    pass


class TinyForCausalLM(DecoderForCausalLM, TinyPreTrainedModel):
    backbone_class = TinyDecoderModel


class TinySeq2SeqPreTrainedModel(_NoRemoteCode, TransformerPreTrainedModel):
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
