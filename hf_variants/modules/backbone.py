"""The backbone every variant builds on: embeddings -> LayerStack -> (pooler).

A variant declares ``class XModel(TransformerBackbone, XPreTrainedModel)`` with a config that
subclasses :class:`~hf_variants.modules.configuration.TransformerConfig`, and overrides only the
hooks where it differs:

- :meth:`TransformerBackbone.build_embeddings`: token / segment / language / position / patch
  embeddings (any module with TransformerEmbeddings' call signature; extra inputs by name through
  its ``extra_input_names``);
- :meth:`TransformerBackbone.build_layers`: the layer stack (from ``LayerSpec.from_config``:
  norm type, biases, gated FFN, attention scale, sharing);
- :meth:`TransformerBackbone.build_pooler`: BERT's pooler or none.

The summary token (``config.summary_type``: first, last, last real token, mean) is what the pooler
and every sequence-level head read; causal attention comes from ``config.is_decoder``; the
packed-vs-padded layout is planned once per forward by :class:`~hf_variants.modules.layout.BatchLayout`.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling

from ..conversion.hooks import CheckpointConversionMixin
from ..hub.save_hook import RemoteCodeMixin
from .embeddings import TransformerEmbeddings
from .encoder import LayerSpec, LayerStack
from .heads import MaskedLMHead, Pooler, summarize, summary_positions
from .layout import BatchLayout
from .norms import RMSNorm
from .padding import gather_positions


class TransformerPreTrainedModel(CheckpointConversionMixin, RemoteCodeMixin, PreTrainedModel):
    """Shared PreTrainedModel settings for every variant. Every ``save_pretrained`` also writes the
    self-contained remote code + ``auto_map`` (see hf_variants.hub.save_hook), so any saved or
    pushed checkpoint loads with ``trust_remote_code=True`` without the package."""

    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = False
    _supports_flex_attn = False
    # Our losses are means over the local batch: Trainer must not rescale them by num_items_in_batch
    # (it would double-count under DDP and gradient accumulation).
    accepts_loss_kwargs = False
    main_input_name = "input_ids"

    def __init__(self, config, *args, **kwargs) -> None:
        config.check_architecture()  # a clear ValueError naming the fields, before any module is built
        super().__init__(config, *args, **kwargs)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, MaskedLMHead):
            module.decoder.bias.zero_()
        elif isinstance(module, TransformerEmbeddings):
            module.reset_fixed_buffers()
        elif isinstance(module, RMSNorm):
            module.weight.fill_(1.0)

    @property
    def attention_backend(self) -> str:
        """"eager" or "sdpa" (the default), from ``attn_implementation``."""
        return "eager" if self.config._attn_implementation == "eager" else "sdpa"


class TransformerBackbone:
    """Mixin for the bare model (``...Model``). Must precede the variant's PreTrainedModel in the bases."""

    def __init__(self, config, add_pooling_layer: bool = True) -> None:
        super().__init__(config)
        self.config = config
        self.embeddings = self.build_embeddings(config)
        self.encoder = self.build_layers(config)
        self.pooler = self.build_pooler(config) if add_pooling_layer else None
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
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """Encode a batch.

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, E)).
            attention_mask: (B, T), 1 for real tokens, 0 for padding.
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
            kwargs: further embedding inputs named by the embeddings' ``extra_input_names``.
        Returns:
            BaseModelOutputWithPooling: last_hidden_state (B, T, H), pooler_output (B, H) or None,
            hidden_states (layers+1 of (B, T, H)) and attentions (layers of (B, heads, T, T)) if asked.
            When the batch runs packed (see layout.py), outputs at padding positions are exactly zero.
        """
        config = self.config
        output_attentions = bool(output_attentions if output_attentions is not None else config.output_attentions)
        output_hidden_states = bool(
            output_hidden_states if output_hidden_states is not None else config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else config.return_dict
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        batch, length = input_ids.shape if input_ids is not None else inputs_embeds.shape[:2]
        device = input_ids.device if input_ids is not None else inputs_embeds.device
        extra_inputs = {name: kwargs[name] for name in self.embeddings.extra_input_names if kwargs.get(name) is not None}
        per_token = {"attention_mask": attention_mask, "token_type_ids": token_type_ids, "position_ids": position_ids}
        for name, tensor in {**per_token, **extra_inputs}.items():
            if tensor is not None and tuple(tensor.shape) != (batch, length):
                raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {(batch, length)} like input_ids")
        self.embeddings.check_inputs(input_ids, token_type_ids, position_ids, length)
        if position_ids is None:
            position_ids = self.embeddings.default_position_ids(input_ids, attention_mask, batch, length, device)

        wants_all_layers = output_hidden_states or output_attentions
        summary = None  # (B, 1) summary-token positions, when something reads them
        if self.pooler is not None or summary_only:
            summary = summary_positions(config.summary_type, attention_mask, batch, length, device)
        if self.pooler is not None and summary is not None and output_positions is None and not wants_all_layers:
            summary_read = summary  # the pooler reads the summary token: a layout must compute it
        else:
            summary_read = None
        if summary_only and output_positions is None:
            output_positions = summary  # None for "mean": every position is read
        layout = BatchLayout.plan(
            attention_mask,
            batch,
            length,
            self.embeddings.word_embeddings.weight.dtype,
            padding_free=config.padding_free if padding_free is None else padding_free,
            output_positions=None if wants_all_layers else output_positions,
            output_positions_mask=output_positions_mask,
            extra_bias=attention_bias,
            reads_padding=reads_padding or _reads_padding(attention_mask, summary_read),
            is_causal=config.is_decoder,
            needs_padded=wants_all_layers,
        )
        hidden_states = self.embeddings(
            layout.to_packed(input_ids),
            layout.to_packed(position_ids),
            layout.to_packed(token_type_ids),
            layout.to_packed(inputs_embeds),
            **{name: layout.to_packed(value) for name, value in extra_inputs.items()},
        )
        computed_positions = layout.output_positions  # (B, M) or None: what last_hidden_state will hold
        if self.encoder.num_layers == 0:
            layout.output_positions = None  # no layer to skip work in: gathered below
        hidden_states, all_hidden, all_attentions = self.encoder(
            hidden_states,
            layout,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            attn_implementation=self.attention_backend,
        )
        hidden_states = layout.to_padded(hidden_states)
        if self.encoder.num_layers == 0 and computed_positions is not None:
            hidden_states = gather_positions(hidden_states, computed_positions)
        pooled = None
        if self.pooler is not None:
            pooled = self.pooler(self._summary(hidden_states, attention_mask, summary, computed_positions))
        output = BaseModelOutputWithPooling(
            last_hidden_state=hidden_states,
            pooler_output=pooled,
            hidden_states=tuple(all_hidden) if output_hidden_states else None,
            attentions=tuple(all_attentions) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()

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
        if not bool(found.any(dim=1).all()):
            raise ValueError("output_positions must include each row's summary position when the model has a pooler")
        return gather_positions(hidden_states, found.int().argmax(dim=1, keepdim=True))[:, 0]


def _reads_padding(attention_mask: torch.Tensor | None, positions: torch.Tensor | None) -> bool:
    """True when a (B, M) read position is a padding token (left padding puts it at position 0)."""
    if attention_mask is None or positions is None:
        return False
    return not bool(attention_mask.gather(1, positions).bool().all())
