"""The encoder backbone every BERT-family variant builds on: embeddings -> LayerStack -> pooler.

Variants declare ``class XModel(EncoderBackbone, XPreTrainedModel)``; the config uses BERT's field
names (hidden_size, num_hidden_layers, ...) plus ``embedding_size``, ``layer_sharing``,
``pre_layer_norm``, ``position_embedding_type`` and ``padding_free`` where the variant has them.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling

from ..hub.save_hook import RemoteCodeMixin
from .attention import make_attention_bias
from .embeddings import TransformerEmbeddings
from .encoder import LayerSpec, LayerStack
from .heads import MaskedLMHead, Pooler
from .padding import UnpaddedBatch, gather_positions, worth_unpadding


class EncoderPreTrainedModel(RemoteCodeMixin, PreTrainedModel):
    """Shared PreTrainedModel settings for the encoder variants. Every ``save_pretrained`` also
    writes the self-contained remote code + ``auto_map`` (see hf_variants.hub.save_hook), so any
    saved or pushed checkpoint loads with ``trust_remote_code=True`` without the package."""

    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = False
    _supports_flex_attn = False
    # Our losses are means over the local batch: Trainer must not rescale them by num_items_in_batch
    # (it would double-count under DDP and gradient accumulation).
    accepts_loss_kwargs = False
    main_input_name = "input_ids"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, MaskedLMHead):
            module.decoder.bias.zero_()
        elif isinstance(module, TransformerEmbeddings):
            module.reset_fixed_buffers()

    @property
    def attention_backend(self) -> str:
        """"eager" or "sdpa" (the default), from ``attn_implementation``."""
        return "eager" if self.config._attn_implementation == "eager" else "sdpa"


def layer_spec_from_config(config) -> LayerSpec:
    return LayerSpec(
        hidden_size=config.hidden_size,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        hidden_act=config.hidden_act,
        hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        layer_norm_eps=config.layer_norm_eps,
        pre_layer_norm=getattr(config, "pre_layer_norm", False),
    )


class EncoderBackbone:
    """Mixin for the bare encoder (``...Model``). Must precede the variant's PreTrainedModel in the bases."""

    def __init__(self, config, add_pooling_layer: bool = True) -> None:
        super().__init__(config)
        self.config = config
        embedding_size = getattr(config, "embedding_size", None) or config.hidden_size
        self.embeddings = TransformerEmbeddings(
            vocab_size=config.vocab_size,
            embedding_size=embedding_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            position_embedding_type=getattr(config, "position_embedding_type", "learned"),
            layer_norm_eps=config.layer_norm_eps,
            dropout=config.hidden_dropout_prob,
            pad_token_id=config.pad_token_id,
        )
        self.encoder = self.build_layers(config)
        self.pooler = Pooler(config.hidden_size) if add_pooling_layer else None
        self.post_init()

    def build_layers(self, config) -> LayerStack:
        return LayerStack(
            layer_spec_from_config(config), config.num_hidden_layers, sharing=getattr(config, "layer_sharing", "none")
        )

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def default_position_ids(self, input_ids: torch.Tensor | None, batch: int, length: int, device) -> torch.Tensor:
        """(B, T) positions 0..T-1. RoBERTa-style variants override this."""
        return torch.arange(length, device=device).expand(batch, length)

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
        first_token_only: bool = False,
        output_positions: torch.Tensor | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """Encode a batch.

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, E)).
            attention_mask: (B, T), 1 for real tokens, 0 for padding.
            token_type_ids: (B, T) segment ids.
            position_ids: (B, T) positions (default 0..T-1).
            padding_free: override ``config.padding_free`` for this call (None: use the config).
            first_token_only: the caller reads only position 0 ([CLS]: pooler, sequence
                classification, multiple choice), so the last layer computes that position alone
                and last_hidden_state is (B, 1, H). Ignored when hidden states or attentions are
                asked for.
            output_positions: (B, M) the positions the caller reads (e.g. the masked tokens of
                MLM); the last layer computes those alone and last_hidden_state is (B, M, H).
                Ignored like ``first_token_only``.
        Returns:
            BaseModelOutputWithPooling: last_hidden_state (B, T, H), pooler_output (B, H) or None,
            hidden_states (layers+1 of (B, T, H)) and attentions (layers of (B, heads, T, T)) if asked.
            On the padding-free path (taken when at least 5% of the batch is padding, see
            padding.MIN_PADDING_FRACTION), outputs at padding positions are exactly zero.
        """
        output_attentions = bool(output_attentions if output_attentions is not None else self.config.output_attentions)
        output_hidden_states = bool(
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        batch, length = input_ids.shape if input_ids is not None else inputs_embeds.shape[:2]
        device = input_ids.device if input_ids is not None else inputs_embeds.device
        for name, tensor in (("attention_mask", attention_mask), ("token_type_ids", token_type_ids), ("position_ids", position_ids)):
            if tensor is not None and tuple(tensor.shape) != (batch, length):
                raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {(batch, length)} like input_ids")
        self.embeddings.check_inputs(input_ids, token_type_ids, position_ids, length)
        if position_ids is None:
            position_ids = self.default_position_ids(input_ids, batch, length, device)

        dtype = self.embeddings.word_embeddings.weight.dtype
        attention_bias = make_attention_bias(attention_mask, dtype)
        unpadded = None
        if padding_free is None:
            padding_free = getattr(self.config, "padding_free", False)
        if padding_free and attention_bias is not None and worth_unpadding(attention_mask):
            # Drop padding once; per-token ops then run on (total_tokens, H).
            unpadded = UnpaddedBatch.from_attention_mask(attention_mask)
            input_ids = unpadded.unpad(input_ids) if input_ids is not None else None
            inputs_embeds = unpadded.unpad(inputs_embeds) if inputs_embeds is not None else None
            token_type_ids = unpadded.unpad(token_type_ids) if token_type_ids is not None else None
            position_ids = unpadded.unpad(position_ids)

        if first_token_only and output_positions is None:
            output_positions = torch.zeros(batch, 1, dtype=torch.long, device=device)
        if output_hidden_states or output_attentions:
            output_positions = None
        hidden_states = self.embeddings(input_ids, position_ids, token_type_ids, inputs_embeds)
        hidden_states, all_hidden, all_attentions = self.encoder(
            hidden_states,
            attention_bias,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            output_positions=output_positions if self.encoder.num_layers > 0 else None,
            unpadded=unpadded,
            attn_implementation=self.attention_backend,
        )
        if unpadded is not None:
            if hidden_states.dim() == 2:  # still packed (output_positions re-pads before the last layer)
                hidden_states = unpadded.pad(hidden_states)
            all_hidden = [unpadded.pad(h) for h in all_hidden]
        if output_positions is not None and self.encoder.num_layers == 0:
            hidden_states = gather_positions(hidden_states, output_positions)
        pooled = self.pooler(hidden_states) if self.pooler is not None else None
        output = BaseModelOutputWithPooling(
            last_hidden_state=hidden_states,
            pooler_output=pooled,
            hidden_states=tuple(all_hidden) if output_hidden_states else None,
            attentions=tuple(all_attentions) if output_attentions else None,
        )
        return output if return_dict else output.to_tuple()
