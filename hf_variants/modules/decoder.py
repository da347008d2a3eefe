"""Decoder-only and encoder-decoder backbones.

A decoder is the encoder backbone with causal self-attention, a transformers ``Cache`` of the
keys/values of earlier steps (``past_key_values``), positions that continue after the cached ones,
and, inside an encoder-decoder, cross-attention to the encoder's states. Variants declare::

    class XDecoderModel(DecoderBackbone, XPreTrainedModel): ...          # GPT-style ...Model
    class XModel(EncoderDecoderBackbone, XPreTrainedModel):              # T5 / Transformer ...Model
        encoder_class = XEncoder        # a TransformerBackbone class (+ XPreTrainedModel)
        decoder_class = XDecoder        # a DecoderBackbone class (+ XPreTrainedModel)

The cache plumbing itself lives in the shared TransformerBackbone (``prepare_cache``,
``default_position_ids``): a decoder runs the same forward. Decoders run padded whenever a cache
is kept (generation): each step appends one position per row, which the packed layout cannot express.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    ModelOutput,
    Seq2SeqModelOutput,
)

from .backbone import TransformerBackbone
from .cache import output_cache, with_cache
from .configuration import DecoderConfig, EncoderDecoderConfig
from .encoder import LayerSpec, LayerStack
from .inputs import pick_cache


def positions_after_cache(
    attention_mask: torch.Tensor | None, past_length: int, batch: int, length: int, device
) -> torch.Tensor:
    """(B, T) positions of T new tokens after ``past_length`` cached ones.

    With a (B, past + T) ``attention_mask`` a token's position is the number of real tokens before
    it in its row, so a left-padded row gets the positions it would have alone (padding slots get 0,
    and are masked anyway). Without a mask: past_length .. past_length + T - 1.
    """
    if attention_mask is None:
        return torch.arange(past_length, past_length + length, device=device).expand(batch, length)
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, -length:]


class DecoderBackbone(TransformerBackbone):
    """Mixin for a causal decoder: the ``...Model`` of a decoder-only variant, or the decoder half of an
    encoder-decoder (``config.add_cross_attention``). It is the shared backbone (same forward: a
    Cache, positions after the cached ones, padded while a cache is kept) with cross-attention
    layers when asked, no pooler, and transformers' decoder output type. Must precede the variant's
    PreTrainedModel in the bases.

    ``positions_from_attention_mask``: True (default) derives default positions from the attention
    mask, so a left-padded row gets the positions it would have alone; False gives past_length +
    0..T-1 whatever the padding (GPT-2's own convention when no ``position_ids`` are passed).
    """

    positions_from_attention_mask: bool = True

    def __init__(self, config: DecoderConfig, add_pooling_layer: bool = False) -> None:
        # By its fields, not isinstance: remote code loads the config class from another module copy.
        if not all(hasattr(config, name) for name in ("use_cache", "add_cross_attention", "eos_token_id")):
            raise ValueError(
                f"a DecoderBackbone needs a DecoderConfig (use_cache, token ids), got {type(config).__name__}"
            )
        if not config.is_decoder:
            raise ValueError("a DecoderBackbone needs config.is_decoder=True (causal self-attention)")
        super().__init__(config, add_pooling_layer=add_pooling_layer)

    def build_layers(self, config) -> LayerStack:
        spec = LayerSpec.from_config(config, cross_attention=config.add_cross_attention)
        return LayerStack(spec, config.num_hidden_layers, sharing=config.layer_sharing)

    def default_position_ids(
        self,
        input_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        past_length: int,
        batch: int,
        length: int,
        device,
    ) -> torch.Tensor:
        """The positions after the cached ones (see :func:`positions_after_cache`)."""
        mask = attention_mask if self.positions_from_attention_mask else None
        return positions_after_cache(mask, past_length, batch, length, device)

    def prepare_cache(self, past_key_values: Cache | None, use_cache: bool | None) -> Cache | None:
        """The cache this call reads and extends: the caller's, or a new ``DynamicCache`` when
        ``use_cache`` (default ``config.use_cache``). With cross-attention it is an
        ``EncoderDecoderCache``, whose second half keeps the encoder's keys/values after step one."""
        if use_cache is None:
            use_cache = self.config.use_cache
        if self.training and (use_cache or past_key_values is not None) and self.is_activation_checkpointing:
            # Checkpointed layers drop the cache (transformers' GradientCheckpointingLayer): keep none.
            if past_key_values is not None:
                raise ValueError("past_key_values cannot be used while training with gradient checkpointing")
            use_cache = False
        if past_key_values is None and not use_cache:
            return None
        if past_key_values is not None and not isinstance(past_key_values, Cache):
            raise ValueError(
                f"past_key_values must be a transformers Cache (DynamicCache / EncoderDecoderCache), got "
                f"{type(past_key_values).__name__}; tuples of tensors are not supported"
            )
        if past_key_values is None:
            past_key_values = DynamicCache()
        if past_key_values.is_compileable:
            # A static cache returns its whole preallocated length, unfilled slots included, and
            # needs the 4D masks transformers builds for it: not supported here.
            raise ValueError(
                f"{type(past_key_values).__name__} is not supported; use the default DynamicCache "
                "(generate() without cache_implementation)"
            )
        if self.has_cross_attention and not isinstance(past_key_values, EncoderDecoderCache):
            past_key_values = EncoderDecoderCache(past_key_values, DynamicCache())
        self_cache = past_key_values
        if isinstance(past_key_values, EncoderDecoderCache):
            self_cache = past_key_values.self_attention_cache
        preset = len(self_cache.layers)
        if self_cache.layer_class_to_replicate is None and preset < self.encoder.num_layers:
            raise ValueError(
                f"the cache was built for {preset} layers but this decoder has {self.encoder.num_layers}: build it "
                "with the decoder's config (an encoder-decoder config names the decoder depth `decoder_layers`)"
            )
        return past_key_values

    def build_output(
        self, last_hidden_state, pooler_output, hidden_states, attentions, past_key_values, cross_attentions=None
    ):
        """BaseModelOutputWithPastAndCrossAttentions: last_hidden_state (B, T, H), the cache, and
        hidden states / attentions (over past + T keys) / cross-attentions (B, h, T, S) if asked."""
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=last_hidden_state,
            **with_cache(past_key_values),
            hidden_states=hidden_states,
            attentions=attentions,
            cross_attentions=cross_attentions,
        )


class EncoderDecoderBackbone:
    """Mixin for an encoder-decoder ``...Model``: ``encoder_class`` (a non-causal backbone) reads the
    source, ``decoder_class`` (a :class:`DecoderBackbone` with cross-attention) the target. The
    decoder's word embeddings are the encoder's (one matrix for source and target, as in the
    original Transformer, T5 and Marian); variants with separate vocabularies set
    ``shares_embeddings = False``. Must precede the variant's PreTrainedModel in the bases.
    """

    encoder_class: type
    decoder_class: type
    shares_embeddings: bool = True
    _tied_weights_keys = {"decoder.embeddings.word_embeddings.weight": "encoder.embeddings.word_embeddings.weight"}

    def __init__(self, config: EncoderDecoderConfig) -> None:
        if not (getattr(config, "is_encoder_decoder", False) and hasattr(config, "decoder_layers")):  # fields, as above
            raise ValueError(f"an EncoderDecoderBackbone needs an EncoderDecoderConfig, got {type(config).__name__}")
        super().__init__(config)
        self.config = config
        self.encoder = self.encoder_class(self.encoder_config(config), add_pooling_layer=False)
        self.decoder = self.decoder_class(self.decoder_config(config))
        if self.shares_embeddings:
            self.decoder.set_input_embeddings(self.encoder.get_input_embeddings())
        self.post_init()

    @staticmethod
    def encoder_config(config: EncoderDecoderConfig) -> EncoderDecoderConfig:
        """The encoder's copy of the config: bidirectional, no cache."""
        encoder_config = copy.deepcopy(config)
        encoder_config.is_decoder = False
        encoder_config.use_cache = False
        encoder_config.is_encoder_decoder = False
        return encoder_config

    @staticmethod
    def decoder_config(config: EncoderDecoderConfig) -> EncoderDecoderConfig:
        """The decoder's copy: causal, with cross-attention, ``decoder_layers`` deep when the config
        names a separate decoder depth."""
        decoder_config = copy.deepcopy(config)
        decoder_config.is_decoder = True
        decoder_config.add_cross_attention = True
        decoder_config.is_encoder_decoder = False
        decoder_config.num_hidden_layers = config.decoder_layers
        return decoder_config

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.set_input_embeddings(value)
        if self.shares_embeddings:
            self.decoder.set_input_embeddings(value)

    def get_encoder(self, modality: str | None = None):
        return self.encoder

    def get_decoder(self):
        return self.decoder

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_position_ids: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        reads_padding: bool = False,
        cache: Cache | None = None,
        **kwargs,
    ) -> Seq2SeqModelOutput | tuple:
        """Encode the source (unless ``encoder_outputs`` are given) and decode the target.

        Args:
            input_ids / inputs_embeds: (B, S) source ids / (B, S, E) embeddings.
            attention_mask: (B, S) source keep-mask (also the cross-attention mask).
            decoder_input_ids: (B, T) target ids, shifted right (see ``shift_tokens_right``).
            decoder_attention_mask: (B, past + T) target keep-mask, or where the decoder accepts one
                (``accepts_4d_attention_mask``: T5) a 4-D (B, 1, T, past + T) mask used as given.
            encoder_outputs: the encoder's output from an earlier call (generation reuses it).
            cache / past_key_values: the decoder's cache (one of the two names, see cache.py).
            reads_padding: the caller reads decoder states at padding positions (the decoder then
                runs padded, see layout.py).
        Returns:
            Seq2SeqModelOutput: last_hidden_state (B, T, H) of the decoder, past_key_values,
            encoder_last_hidden_state (B, S, H) and the optional hidden states / attentions.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if attention_mask is not None and attention_mask.dim() == 4:
            # The source mask is also the cross-attention's key padding, which a 4-D self-attention
            # mask does not give (transformers adds it to the cross-attention scores as it stands).
            raise ValueError(
                f"attention_mask has shape {tuple(attention_mask.shape)}: an encoder-decoder's attention_mask is the "
                "(batch, source_length) keep-mask its cross-attention reads. For a 4-D encoder mask run the encoder "
                "alone (model.get_encoder()(input_ids, attention_mask=mask_4d)) and pass encoder_outputs= with a "
                "(batch, source_length) attention_mask; the decoder takes a 4-D decoder_attention_mask"
            )
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                inputs_embeds=inputs_embeds,
                # Source segments and positions reach the encoder (a config without a segment table
                # refuses token_type_ids there, naming them), not a silent **kwargs.
                token_type_ids=kwargs.pop("token_type_ids", None),
                position_ids=kwargs.pop("position_ids", None),
                output_attentions=output_attentions,
                output_hidden_states=output_hidden_states,
                return_dict=True,
            )
        elif not isinstance(encoder_outputs, ModelOutput):  # a tuple from return_dict=False
            encoder_outputs = BaseModelOutput(*encoder_outputs)
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            raise ValueError("pass decoder_input_ids (or labels to a ...ForConditionalGeneration model)")
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            position_ids=decoder_position_ids,
            inputs_embeds=decoder_inputs_embeds,
            cache=pick_cache(cache, past_key_values, kwargs),
            use_cache=use_cache,
            encoder_hidden_states=encoder_outputs.last_hidden_state,
            encoder_attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            reads_padding=reads_padding,
            cache_position=kwargs.pop("cache_position", None),
        )
        output = Seq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            **with_cache(output_cache(decoder_outputs)),
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
        )
        return output if return_dict else output.to_tuple()
