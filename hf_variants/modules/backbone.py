"""The backbone every variant builds on: embeddings -> LayerStack -> (pooler).

A variant declares ``class XModel(TransformerBackbone, XPreTrainedModel)`` with a config that
subclasses :class:`~hf_variants.modules.configuration.TransformerConfig`, and overrides only the
hooks where it differs (``XPreTrainedModel`` subclasses :class:`TransformerPreTrainedModel`, for a
shipped variant through ``hf_variants.models.modeling_base.VariantPreTrainedModel``, which adds
checked loading, conversion on load and atomic saves with remote code):

- :meth:`TransformerBackbone.build_embeddings`: token / segment / language / position / patch
  embeddings (any module with TransformerEmbeddings' call signature; extra inputs by name through
  its ``extra_input_names``);
- :meth:`TransformerBackbone.build_layers`: the layer stack (from ``LayerSpec.from_config``:
  norm type, biases, gated FFN, attention scale, sharing);
- :meth:`TransformerBackbone.build_pooler`: BERT's pooler or none;
- :meth:`TransformerBackbone.build_position_bias`: a module computing an additive (1, heads, T, S)
  self-attention bias once per forward (called with (T, S, past_length, device=<the hidden states' device>)),
  handed to every layer (T5's relative position buckets), or none.

Embeddings whose main input is not token ids (ViT's ``pixel_values``) declare it as
``main_input_name`` and build the whole (B, T, H) sequence themselves; the variant's ``forward``
embeds and hands the sequence to :meth:`TransformerBackbone.forward_embedded` (same layer stack,
layout planning and pooler as the token path).

:meth:`TransformerBackbone.forward` runs five named steps: ``_check_inputs`` (every input against
the main one; the mask becomes a :class:`~hf_variants.modules.masks.KeyMask`, the one place it is
checked and sliced) -> ``_plan_layout`` (packed or padded, which positions the last layer computes)
-> ``_embed`` -> ``_run_layers`` (with ``_layer_state``: cache, memories, cross-attention, position
bias) -> ``_pool``.

The summary token (``config.summary_type``: first, last, last real token, mean) is what the pooler
and every sequence-level head read; causal attention comes from ``config.is_decoder``; the
packed-vs-padded layout is planned once per forward by :class:`~hf_variants.modules.layout.BatchLayout`.

Per-layer state: a DecoderBackbone (decoder.py: overrides :meth:`TransformerBackbone.prepare_cache`
and :meth:`TransformerBackbone.default_position_ids`) reads and extends a transformers ``Cache``
(``past_key_values``, ``use_cache``) and continues positions after the cached ones; layers with
cross-attention attend to ``encoder_hidden_states``; a
:class:`~hf_variants.modules.memory.SegmentMemory` (Transformer-XL/XLNet ``mems``) prepends each
layer's memory to its keys and values. Cache and memory run padded.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.cache_utils import Cache
from transformers.modeling_outputs import BaseModelOutputWithPooling

from .cache import check_cache_batch, check_cache_positions
from .embeddings import TransformerEmbeddings
from .encoder import LayerSpec, LayerStack
from .heads import MaskedLMHead, Pooler, summarize
from .inputs import check_not_empty, pick_cache
from .layout import BatchLayout
from .masks import (
    KeyMask,
    combine_biases,
    custom_attention_bias,
    make_attention_bias,
    reads_a_padding_position,
    summary_positions,
    worth_unpadding,
)
from .memory import SegmentMemory
from .norms import RMSNorm
from .padding import UnpaddedBatch, gather_positions
from .tracing import is_tracing


class TransformerPreTrainedModel(PreTrainedModel):
    """Shared PreTrainedModel settings for every model built from these blocks: attention backends,
    the init of the blocks' own parameters, the config's architecture check, the unit that is never
    split across devices. Saving and loading are transformers' own here; every shipped variant uses
    :class:`hf_variants.models.modeling_base.VariantPreTrainedModel`, which adds checked loads,
    conversion of transformers checkpoints on load, and atomic saves with remote code."""

    supports_gradient_checkpointing = True
    # The unit device_map="auto" never splits across devices (accelerate's big-model inference),
    # FSDP's auto-wrap wraps, and gradient checkpointing recomputes: the repeated block. A variant
    # with its own block class (XLNet, Transformer-XL) names it instead.
    _no_split_modules = ["TransformerLayer"]
    _supports_sdpa = True
    _supports_flash_attn = False
    _supports_flex_attn = False
    # Our losses are means over the local batch: Trainer must not rescale them by num_items_in_batch
    # (it would double-count under DDP and gradient accumulation).
    accepts_loss_kwargs = False
    main_input_name = "input_ids"
    # Every forward names what it takes in its own source (no signature is rewritten): Trainer keeps
    # only the dataset columns a forward's signature names, and peft passes ``past_key_values`` (a
    # decoder's cache, or an encoder's key/value prefix for prefix tuning) only to a forward that
    # names it. tests/test_model_shape.py checks both.

    def __init__(self, config, *args, **kwargs) -> None:
        config.check_architecture()  # a clear ValueError naming the fields, before any module is built
        super().__init__(config, *args, **kwargs)

    def _initialize_weights(self, module: nn.Module, is_custom_code: bool = False) -> None:
        # transformers' path for its own models, not the one for custom code: that one skips every
        # module without parameters of its own (attention, FFN, embedding containers) and with it
        # every container-level init (T5's unit-variance embeddings and fan-in projections were
        # silently 0.02). Safe because every _init_weights here writes through
        # transformers.initialization, which leaves weights loaded from a checkpoint alone.
        super()._initialize_weights(module, is_custom_code=False)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Runs children first, then their container: a container's init overrides its leaves'."""
        super()._init_weights(module)
        if isinstance(module, MaskedLMHead):
            init.zeros_(module.decoder.bias)
        elif isinstance(module, TransformerEmbeddings):
            module.reset_fixed_buffers()
        elif isinstance(module, RMSNorm):
            init.ones_(module.weight)

    @property
    def attention_backend(self) -> str:
        """ "eager" or "sdpa" (the default), from ``attn_implementation``."""
        return "eager" if self.config._attn_implementation == "eager" else "sdpa"


@dataclass
class ForwardCall:
    """One forward call's checked inputs (:meth:`TransformerBackbone._check_inputs`), read by the
    later steps: B, T, the device, the cache this call reads and its length, the mask, the
    embeddings' extra (B, T) inputs by name, and the segment memories."""

    batch: int
    length: int
    device: torch.device
    past_key_values: Cache | None
    past_length: int
    mask: KeyMask
    extra_inputs: dict[str, torch.Tensor]
    memories: SegmentMemory | None
    # (B, 1, T, S) additive bias from a caller's 4-D attention_mask (``accepts_4d_attention_mask``), or
    # None; it replaces the padding and causal masks (``mask`` then holds none).
    custom_bias: torch.Tensor | None = None


class TransformerBackbone:
    """Mixin for the bare model (``...Model``). Must precede the variant's PreTrainedModel in the bases."""

    # True: states at padding positions are exactly zero after the embeddings and every layer, as
    # transformers' XLM computes them (it multiplies by the padding mask); real positions are unaffected.
    zeroes_padding_states: bool = False
    # True: ``attention_mask`` may also be a 4-D (B, 1, T, past + T) mask, used as given
    # (masks.custom_attention_bias: transformers' convention for packed documents or a shared
    # prefix); the call then runs padded, with no padding or causal mask of its own. Set by the
    # variants whose transformers counterpart takes one (T5); others refuse any mask but (B, T).
    accepts_4d_attention_mask: bool = False

    def __init__(self, config, add_pooling_layer: bool = True) -> None:
        super().__init__(config)
        self.config = config
        self.embeddings = self.build_embeddings(config)
        self.encoder = self.build_layers(config)
        self.pooler = self.build_pooler(config) if add_pooling_layer else None
        position_bias = self.build_position_bias(config)
        if position_bias is not None:  # registered only when it exists: other variants' keys are unchanged
            self.position_bias = position_bias
        self.post_init()

    # ------------------------------------------------------------------ hooks
    def build_embeddings(self, config) -> nn.Module:
        """Token + position + segment embeddings (override for language, patch or position-free ones)."""
        return TransformerEmbeddings(**TransformerEmbeddings.config_kwargs(config))

    def build_layers(self, config) -> LayerStack:
        return LayerStack(LayerSpec.from_config(config), config.num_hidden_layers, sharing=config.layer_sharing)

    def build_pooler(self, config) -> nn.Module | None:
        """BERT's tanh pooler over the summary token; variants without one return None."""
        return Pooler(config.hidden_size)

    def build_position_bias(self, config) -> nn.Module | None:
        """None, or a module called as ``module(query_length, key_length, past_length)`` that returns
        an additive (1, heads, T, S) self-attention bias (query i is position past_length + i, keys
        0..S-1). It is computed once per forward and given to every layer (T5 computes its
        relative-position bias in the first layer and shares it)."""
        return None

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        padding_free: bool | None = None,
        summary_only: bool = False,
        output_positions: torch.Tensor | None = None,
        output_positions_mask: torch.Tensor | None = None,
        reads_padding: bool = False,
        attention_bias: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        memories: SegmentMemory | None = None,
        document_ids: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """Encode a batch.

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, E)).
            attention_mask: (B, T), 1 for real tokens, 0 for padding; where the variant sets
                ``accepts_4d_attention_mask``, also a 4-D (B, 1, T, past + T) mask used as given
                (float: additive; bool/int: 1 where query i may read key j), causality included.
            token_type_ids: (B, T) segment ids.
            position_ids: (B, T) positions (default: the embeddings' ``default_position_ids``).
            padding_free: override ``config.padding_free`` for this call (None: use the config).
            summary_only: the caller reads only the summary token (pooler, sequence classification,
                multiple choice), so the last layer computes that position alone and
                last_hidden_state is (B, 1, H). Ignored when hidden states or attentions are asked for.
            output_positions: (B, M) the positions the caller reads (e.g. the masked tokens of
                MLM); the last layer computes those alone and last_hidden_state is (B, M, H).
                Ignored like ``summary_only``. ``output_positions_mask`` (B, M): False at filler slots.
            reads_padding: the caller reads states at padding positions (runs padded).
            attention_bias: an extra additive bias broadcastable to (B, heads, T, T) (a permutation
                or document mask); runs padded.
            document_ids: (B, T) rows packed with several documents, 0, 1, ... per document and -1
                on padding (``objectives.DataCollatorForPackedCausalLM``): attention stays inside
                each document. Runs packed with one sequence per document when it can (no mask, no
                padding), else padded with a block-diagonal bias. Not with cached positions.
            cache / past_key_values: (decoders) a Cache from an earlier call, extended in place and
                returned; ``attention_mask`` then covers past + T positions, (B, past + T).
                ``cache`` is the name transformers >= 5.24 uses, ``past_key_values`` the earlier
                one (see cache.py); give one of them.
            use_cache: (decoders) create and return a cache (default ``config.use_cache``);
                encoders ignore it, as transformers' encoder models do.
            encoder_hidden_states: (B, S, H) encoder output for cross-attention layers, with
                ``encoder_attention_mask`` (B, S).
            memories: a SegmentMemory (one (B, M, H) tensor per layer, or none yet) prepended to
                each layer's keys/values; ``attention_mask`` covers the T new positions only.
                The next memories are read from ``memories.updated()``.
            kwargs: further embedding inputs named by the embeddings' ``extra_input_names``.
        Returns:
            BaseModelOutputWithPooling: last_hidden_state (B, T, H), pooler_output (B, H) or None,
            hidden_states (layers+1 of (B, T, H)) and attentions (layers of (B, heads, T, T)) if asked.
            When the batch runs packed (see layout.py), outputs at padding positions are exactly zero.
        """
        flags = self._output_flags(output_attentions, output_hidden_states, return_dict)
        call = self._check_inputs(
            input_ids,
            inputs_embeds,
            attention_mask,
            token_type_ids,
            position_ids,
            cache,
            past_key_values,
            use_cache,
            encoder_hidden_states,
            memories,
            document_ids,
            kwargs,
        )
        layout, summary = self._plan_layout(
            call.mask,
            call.batch,
            call.length,
            call.device,
            self.embeddings.word_embeddings.weight.dtype,
            output_attentions=flags[0],
            output_hidden_states=flags[1],
            stateful=call.past_key_values is not None or memories is not None,
            padding_free=padding_free,
            summary_only=summary_only,
            output_positions=output_positions,
            output_positions_mask=output_positions_mask,
            reads_padding=reads_padding,
            document_ids=document_ids,
            attention_bias=combine_biases(
                attention_bias, call.custom_bias, self.embeddings.word_embeddings.weight.dtype
            ),
            is_causal=self.config.is_decoder and call.custom_bias is None,  # a 4-D mask carries its own causality
        )
        hidden_states = self._embed(call, layout, input_ids, position_ids, token_type_ids, inputs_embeds)
        layer_state = self._layer_state(
            call, hidden_states, encoder_hidden_states, encoder_attention_mask, padding_free
        )
        return self._run_layers(hidden_states, layout, call.mask.new_tokens, summary, *flags, **layer_state)

    # The forward's steps, in order: check inputs -> plan layout -> embed -> run layers -> pool.
    def _check_inputs(
        self,
        input_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        cache: Cache | None,
        past_key_values: Cache | None,
        use_cache: bool | None,
        encoder_hidden_states: torch.Tensor | None,
        memories: SegmentMemory | None,
        document_ids: torch.Tensor | None,
        kwargs: dict,
    ) -> ForwardCall:
        """Step 1: every input against the main one (input_ids (B, T) or inputs_embeds (B, T, E)),
        a ValueError naming the first problem; the cache this call reads; the mask as a KeyMask."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        main_name, main = ("input_ids", input_ids) if input_ids is not None else ("inputs_embeds", inputs_embeds)
        if main.dim() != (2 if input_ids is not None else 3):
            raise ValueError(
                f"{main_name} must be {'(batch, length)' if input_ids is not None else '(batch, length, hidden)'}, "
                f"got shape {tuple(main.shape)}"
            )
        batch, length = main.shape[:2]
        check_not_empty(main_name, tuple(main.shape), batch, length)
        past_key_values = self.prepare_cache(pick_cache(cache, past_key_values, kwargs), use_cache)
        past_length = past_key_values.get_seq_length() if past_key_values is not None else 0
        check_cache_positions(kwargs.get("cache_position"), past_length, length)
        if past_length:
            check_cache_batch(past_key_values, batch)
        self._check_state_inputs(encoder_hidden_states, memories, past_key_values, batch)
        if document_ids is not None and (past_length or memories is not None):
            raise ValueError(
                "document_ids describe the new tokens only: they cannot be combined with cached positions or memories"
            )
        extra_inputs = {
            name: kwargs[name] for name in self.embeddings.extra_input_names if kwargs.get(name) is not None
        }
        per_token = {"token_type_ids": token_type_ids, "position_ids": position_ids}
        for name, tensor in {**per_token, **extra_inputs}.items():
            if tensor is not None and tuple(tensor.shape) != (batch, length):
                raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {(batch, length)} like input_ids")
        memory_length = memories.length if memories is not None else 0
        custom_bias = None
        if attention_mask is not None and attention_mask.dim() == 4 and self.accepts_4d_attention_mask:
            custom_bias = custom_attention_bias(
                attention_mask,
                batch,
                length,
                memory_length + past_length + length,
                self.embeddings.word_embeddings.weight.dtype,
            )
            attention_mask = None  # the 4-D mask replaces the padding mask (and the causal one)
        mask = KeyMask.prepare(attention_mask, batch, length, past_length, memory_length, like=" like input_ids")
        self.embeddings.check_inputs(input_ids, token_type_ids, position_ids, past_length + length)
        return ForwardCall(
            batch, length, main.device, past_key_values, past_length, mask, extra_inputs, memories, custom_bias
        )

    def _embed(
        self,
        call: ForwardCall,
        layout: BatchLayout,
        input_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
    ) -> torch.Tensor:
        """Step 3: the (B, T) inputs -> hidden states in ``layout``: packed (total_tokens, H) or
        padded (B, T, H). Positions default to :meth:`default_position_ids`."""
        if position_ids is None:
            position_ids = self.default_position_ids(
                input_ids, call.mask.given, call.past_length, call.batch, call.length, call.device
            )
        return self.embeddings(
            layout.to_packed(input_ids),
            layout.to_packed(position_ids),
            layout.to_packed(token_type_ids),
            layout.to_packed(inputs_embeds),
            **{name: layout.to_packed(value) for name, value in call.extra_inputs.items()},
        )

    def _layer_state(
        self,
        call: ForwardCall,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None,
        encoder_attention_mask: torch.Tensor | None,
        padding_free: bool | None,
    ) -> dict:
        """What every layer reads besides the hidden states: the cache or memories; the encoder's
        (B, S, H) states, their (B, 1, 1, S) bias and packed layout for cross-attention; the
        (1, heads, T, S) position bias when the variant has one (computed once, shared by all)."""
        state = dict(
            past_key_values=call.past_key_values,
            memories=call.memories,
            encoder_hidden_states=encoder_hidden_states,
            encoder_attention_bias=make_attention_bias(encoder_attention_mask, hidden_states.dtype),
            encoder_unpadded=self._encoder_unpadded(
                encoder_hidden_states, encoder_attention_mask, call.past_length, padding_free
            ),
        )
        if getattr(self, "position_bias", None) is not None:
            earlier = (
                call.memories.length if call.memories is not None else 0
            ) + call.past_length  # keys before the new tokens
            state["position_bias"] = self.position_bias(
                call.length, earlier + call.length, earlier, device=hidden_states.device
            ).to(hidden_states.dtype)
        return state

    def forward_embedded(
        self,
        embeddings: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        summary_only: bool = False,
        output_positions: torch.Tensor | None = None,
    ) -> BaseModelOutputWithPooling | tuple:
        """The layer stack and pooler over a sequence the embeddings module built from another main
        input than token ids (ViT's ``pixel_values``: patches, [CLS] and positions are all its own).

        A backbone whose embeddings declare ``main_input_name != "input_ids"`` defines its own
        ``forward(<main input>, ...)``, embeds, and calls this. Args as :meth:`forward`;
        ``embeddings`` (B, T, H) with its ``attention_mask`` (B, T) or None (nothing masked).
        Returns what :meth:`forward` returns.
        """
        config = self.config
        output_attentions, output_hidden_states, return_dict = self._output_flags(
            output_attentions, output_hidden_states, return_dict
        )
        if embeddings.dim() != 3 or embeddings.shape[-1] != config.hidden_size:
            raise ValueError(f"embeddings must be (batch, length, {config.hidden_size}), got {tuple(embeddings.shape)}")
        batch, length = embeddings.shape[:2]
        check_not_empty(self.main_input_name, tuple(embeddings.shape), batch, length)
        mask = KeyMask.prepare(attention_mask, batch, length)
        layout, summary = self._plan_layout(
            mask,
            batch,
            length,
            embeddings.device,
            embeddings.dtype,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            summary_only=summary_only,
            output_positions=output_positions,
        )
        return self._run_layers(
            layout.to_packed(embeddings),
            layout,
            mask.new_tokens,
            summary,
            output_attentions,
            output_hidden_states,
            return_dict,
        )

    def _encoder_unpadded(
        self,
        encoder_hidden_states: torch.Tensor | None,
        encoder_attention_mask: torch.Tensor | None,
        past_length: int,
        padding_free: bool | None,
    ) -> UnpaddedBatch | None:
        """Where the encoder's real tokens are, when cross-attention should project its keys and
        values from those alone: a padded source, padding_free allowed, and the first call (later
        decoding steps read the projections from the cache). Padded source slots then hold zero
        keys and values, which the encoder attention mask hides exactly as before."""
        allowed = self.config.padding_free if padding_free is None else padding_free
        if encoder_hidden_states is None or encoder_attention_mask is None or past_length or not allowed:
            return None
        if not worth_unpadding(encoder_attention_mask):
            return None
        return UnpaddedBatch.from_attention_mask(encoder_attention_mask)

    def _output_flags(
        self, output_attentions: bool | None, output_hidden_states: bool | None, return_dict: bool | None
    ) -> tuple[bool, bool, bool]:
        """The call's flags, the config's where the call leaves them None."""
        config = self.config
        return (
            bool(output_attentions if output_attentions is not None else config.output_attentions),
            bool(output_hidden_states if output_hidden_states is not None else config.output_hidden_states),
            return_dict if return_dict is not None else config.return_dict,
        )

    def _plan_layout(
        self,
        mask: KeyMask,
        batch: int,
        length: int,
        device: torch.device,
        dtype: torch.dtype,
        *,
        output_attentions: bool,
        output_hidden_states: bool,
        stateful: bool = False,
        padding_free: bool | None = None,
        summary_only: bool = False,
        output_positions: torch.Tensor | None = None,
        output_positions_mask: torch.Tensor | None = None,
        reads_padding: bool = False,
        attention_bias: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        is_causal: bool | None = None,
    ) -> tuple[BatchLayout, torch.Tensor | None]:
        """Step 2: (the batch's layout, the (B, 1) summary positions, or None when nothing reads them
        or for "mean"); see :meth:`forward`. ``mask``: the call's KeyMask (its ``new_tokens`` are
        where the summary token is looked for, its ``keys`` what attention may read);
        ``stateful``: a cache or memories add keys the packed layout has no slot for;
        ``is_causal``: None for the config's (``is_decoder``).
        """
        config = self.config
        wants_all_layers = output_hidden_states or output_attentions
        summary = None  # (B, 1) summary-token positions, when something reads them
        if self.pooler is not None or summary_only:
            summary = summary_positions(config.summary_type, mask.new_tokens, batch, length, device)
        if self.pooler is not None and summary is not None and output_positions is None and not wants_all_layers:
            summary_read = summary  # the pooler reads the summary token: a layout must compute it
        else:
            summary_read = None
        if summary_only and output_positions is None:
            output_positions = summary  # None for "mean": every position is read
        padding_free = config.padding_free if padding_free is None else padding_free
        # Whether a padding position is read matters to the packed layout only: the padded one
        # decides without reading the mask (no sync, no graph break under torch.compile).
        reads_padding = reads_padding or (padding_free and reads_a_padding_position(mask.new_tokens, summary_read))
        layout = BatchLayout.plan(
            mask.keys,
            batch,
            length,
            dtype,
            padding_free=padding_free,
            # The selected-query kernel takes no cache or memory: stateful calls compute every position.
            output_positions=None if wants_all_layers or stateful else output_positions,
            output_positions_mask=output_positions_mask,
            extra_bias=attention_bias,
            reads_padding=reads_padding,
            is_causal=config.is_decoder if is_causal is None else is_causal,
            # A cache or a memory adds keys the packed layout has no slot for.
            needs_padded=wants_all_layers or stateful,
            zero_padding=self.zeroes_padding_states,
            document_ids=document_ids,
        )
        return layout, summary

    def _run_layers(
        self,
        hidden_states: torch.Tensor,
        layout: BatchLayout,
        summary_mask: torch.Tensor | None,
        summary: torch.Tensor | None,
        output_attentions: bool,
        output_hidden_states: bool,
        return_dict: bool,
        past_key_values: Cache | None = None,
        **layer_state,
    ) -> BaseModelOutputWithPooling | tuple:
        """Steps 4 and 5: embedded inputs (in ``layout``) -> layer stack -> pooler -> the model output.
        ``summary_mask`` (B, T): the new tokens' mask; ``layer_state``: see :meth:`_layer_state`."""
        computed_positions = layout.output_positions  # (B, M) or None: what last_hidden_state will hold
        if self.encoder.num_layers == 0:
            layout.output_positions = None  # no layer to skip work in: gathered below
        hidden_states, all_hidden, all_attentions, all_cross_attentions = self.encoder(
            hidden_states,
            layout,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            attn_implementation=self.attention_backend,
            past_key_values=past_key_values,
            **layer_state,
        )
        hidden_states = layout.to_padded(hidden_states)
        if self.encoder.num_layers == 0 and computed_positions is not None:
            hidden_states = gather_positions(hidden_states, computed_positions)
        output = self.build_output(
            hidden_states,
            self._pool(hidden_states, summary_mask, summary, computed_positions),
            tuple(all_hidden) if output_hidden_states else None,
            tuple(all_attentions) if output_attentions else None,
            past_key_values,
            tuple(all_cross_attentions) if output_attentions and all_cross_attentions else None,
        )
        return output if return_dict else output.to_tuple()

    def build_output(
        self, last_hidden_state, pooler_output, hidden_states, attentions, past_key_values, cross_attentions=None
    ):
        """The forward's ModelOutput (decoders return transformers' decoder output type, with
        ``cross_attentions``)."""
        return BaseModelOutputWithPooling(
            last_hidden_state=last_hidden_state,
            pooler_output=pooler_output,
            hidden_states=hidden_states,
            attentions=attentions,
        )

    # ------------------------------------------------------------------ per-layer state
    @property
    def has_cross_attention(self) -> bool:
        return self.encoder.num_layers > 0 and self.encoder.layer_at(0).cross_attention is not None

    def default_position_ids(
        self,
        input_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        past_length: int,
        batch: int,
        length: int,
        device,
    ) -> torch.Tensor:
        """(B, T) positions when the caller passes none: the embeddings' default (decoders continue
        after the cached positions, see DecoderBackbone)."""
        return self.embeddings.default_position_ids(input_ids, attention_mask, batch, length, device)

    def prepare_cache(self, past_key_values: Cache | None, use_cache: bool | None) -> Cache | None:
        """The cache this call reads. Encoders keep none between calls (DecoderBackbone overrides
        this), but accept one holding a prefix of P keys/values per layer (prefix tuning: peft's
        ``PrefixTuningConfig`` hands one in): every query also attends to those P positions,
        ``attention_mask`` covers P + T, and the tokens' positions still start at 0.
        ``use_cache`` is ignored, as transformers' encoder models ignore it (``BertModel`` sets it
        to False unless the config is a decoder's): callers such as pipelines or transformers'
        common tests pass ``use_cache=True`` to every model; the output then holds no cache."""
        if past_key_values is not None and not isinstance(past_key_values, Cache):
            raise ValueError(
                f"past_key_values must be a transformers Cache holding a key/value prefix, got {type(past_key_values).__name__}"
            )
        return past_key_values

    def _check_state_inputs(
        self, encoder_hidden_states: torch.Tensor | None, memories: SegmentMemory | None, past_key_values, batch: int
    ) -> None:
        if encoder_hidden_states is not None and not self.has_cross_attention:
            raise ValueError("encoder_hidden_states were given but this model has no cross-attention layers")
        if self.has_cross_attention and encoder_hidden_states is None:
            raise ValueError("this decoder attends to an encoder: pass encoder_hidden_states")
        if memories is not None:
            if past_key_values is not None:
                raise ValueError("pass either memories or a cache (past_key_values / use_cache=True), not both")
            memories.check_batch(batch, self.config.hidden_size)

    def _pool(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        summary: torch.Tensor | None,
        computed_positions: torch.Tensor | None,
    ) -> torch.Tensor | None:
        """Step 5: the pooler's (B, H) output over the summary token, or None without a pooler."""
        if self.pooler is None:
            return None
        return self.pooler(self._summary(hidden_states, attention_mask, summary, computed_positions))

    def _summary(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        summary: torch.Tensor | None,
        computed_positions: torch.Tensor | None,
    ) -> torch.Tensor:
        """The (B, H) summary vector; ``hidden_states`` hold every position, or the (B, M)
        ``computed_positions`` only (one of which must be the summary position)."""
        if computed_positions is None:
            return summarize(hidden_states, self.config.summary_type, attention_mask)
        if summary is None:
            raise ValueError('summary_type "mean" reads every position: output_positions cannot be used with a pooler')
        found = computed_positions == summary
        if not is_tracing() and not bool(found.any(dim=1).all()):
            raise ValueError("output_positions must include each row's summary position when the model has a pooler")
        return gather_positions(hidden_states, found.int().argmax(dim=1, keepdim=True))[:, 0]
