"""Transformer layers and the layer stack.

A :class:`TransformerLayer` is self-attention (+ optional cross-attention) + FFN with residual
connections, in the post-LN order of the original Transformer/BERT
(``x = LN(x + Dropout(Sublayer(x)))``) or the pre-LN order of Xiong et al. 2020
(``x = x + Dropout(Sublayer(LN(x)))``, with a final LayerNorm after the stack).

:class:`LayerStack` runs ``num_layers`` layers with ALBERT-style cross-layer sharing: "none"
(every layer its own weights), "all" (one layer applied num_layers times), "attention" or "ffn"
(that sub-block shared, the rest per layer). Shared weights are stored once (in layer 0), so
safetensors never sees two names for one tensor. A ``schedule`` generalises "all": the stored
layer each depth applies, so several groups of layers can each be reused over a span of depths
(ALBERT's ``num_hidden_groups`` / ``inner_group_num``).

Per-layer state rides along: a transformers ``Cache`` (``past_key_values``, read and written at
each layer's depth, which is the cache index even when one module serves every depth) and a
:class:`~.memory.SegmentMemory` (Transformer-XL/XLNet ``mems``: each layer's earlier input states,
prepended to its keys and values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedConfig
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer

from .attention import MultiHeadAttention
from .dropout import Dropout
from .feed_forward import FeedForward
from .layout import BatchLayout
from .memory import SegmentMemory
from .norms import build_norm
from .padding import UnpaddedBatch, gather_positions

SHARING_MODES = ("none", "all", "attention", "ffn")


@dataclass
class LayerSpec:
    """Everything needed to build one layer, derived from a config in one place (:meth:`from_config`)."""

    hidden_size: int
    num_attention_heads: int
    intermediate_size: int
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    ffn_dropout_prob: float = 0.0
    layer_norm_eps: float = 1e-12
    norm_type: str = "layer_norm"
    pre_layer_norm: bool = False
    cross_attention: bool = False
    bias: bool = True
    gated_ffn: bool = False
    attention_scale: float | None = None
    head_dim: int | None = None

    @classmethod
    def from_config(cls, config: PreTrainedConfig, cross_attention: bool = False) -> "LayerSpec":
        """The layer every shared backbone builds from a config with the fields of
        ``configuration.TransformerConfig`` (``cross_attention`` for the decoder of an encoder-decoder).
        Typed as transformers' config: the configuration module stands above this one (it validates
        ``layer_sharing`` against :data:`SHARING_MODES`)."""
        return cls(
            hidden_size=config.hidden_size,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            hidden_act=config.hidden_act,
            hidden_dropout_prob=config.hidden_dropout_prob,
            attention_probs_dropout_prob=config.attention_probs_dropout_prob,
            ffn_dropout_prob=config.ffn_dropout_prob,
            layer_norm_eps=config.layer_norm_eps,
            norm_type=config.norm_type,
            pre_layer_norm=config.pre_layer_norm,
            cross_attention=cross_attention,
            bias=config.use_bias,
            gated_ffn=config.gated_ffn,
            attention_scale=config.attention_scale,
            head_dim=config.head_dim,
        )

    def norm(self) -> nn.Module:
        return build_norm(self.norm_type, self.hidden_size, self.layer_norm_eps)

    def attention(self, cross_attention: bool = False) -> MultiHeadAttention:
        return MultiHeadAttention(
            self.hidden_size,
            self.num_attention_heads,
            dropout=self.attention_probs_dropout_prob,
            bias=self.bias,
            head_dim=self.head_dim,
            cross_attention=cross_attention,
            scale=self.attention_scale,
        )

    def feed_forward(self) -> FeedForward:
        return FeedForward(
            self.hidden_size,
            self.intermediate_size,
            self.hidden_act,
            gated=self.gated_ffn,
            inner_dropout=self.ffn_dropout_prob,
            bias=self.bias,
        )


# TransformerLayer.forward's arguments after (hidden_states, attention_bias), in order: passed
# positionally by LayerStack so that gradient checkpointing sees them as inputs.
_POSITIONAL_LAYER_INPUTS = ("encoder_hidden_states", "encoder_attention_bias", "encoder_unpadded", "position_bias")
# The arguments after those, also positional: they differ from one depth to the next (the last
# layer of a summary-only head computes a few positions, padded). Gradient checkpointing
# (GradientCheckpointingLayer) hands the checkpoint ``partial(forward, **keywords)``: with these as
# keywords a shared layer (ALBERT) would get a different function at each depth, and anything that
# replays one depth's call with another depth's function (transformers' checkpointing test does)
# would recompute the wrong layer. Positionally, every call of a layer passes the same function.
_PER_DEPTH_LAYER_INPUTS = ("output_positions", "unpadded", "is_causal", "layer_idx", "memory")


class TransformerLayer(GradientCheckpointingLayer):
    """One block. Input/output (B, T, H), or (total_tokens, H) on the padding-free path."""

    def __init__(self, spec: LayerSpec, own_attention: bool = True, own_ffn: bool = True) -> None:
        super().__init__()
        self.pre_layer_norm = spec.pre_layer_norm
        self.attention = spec.attention() if own_attention else None
        self.attention_norm = spec.norm()
        if spec.cross_attention:
            self.cross_attention = spec.attention(cross_attention=True)
            self.cross_attention_norm = spec.norm()
        else:
            self.cross_attention = None
        self.ffn = spec.feed_forward() if own_ffn else None
        self.ffn_norm = spec.norm()
        self.residual_dropout = Dropout(spec.hidden_dropout_prob)

    def _residual(
        self, x: torch.Tensor, norm: nn.Module, sublayer, positions: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Apply ``sublayer`` (returning (out, extra)) with the residual in pre- or post-LN order.
        ``positions`` (B, M): the sublayer reads all of x but returns those positions only (B, M, H)."""
        residual = x if positions is None else gather_positions(x, positions)
        if self.pre_layer_norm:
            out, extra = sublayer(norm(x))
            return residual + self.residual_dropout(out), extra
        out, extra = sublayer(x)
        return norm(residual + self.residual_dropout(out)), extra

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_bias: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_bias: torch.Tensor | None = None,
        encoder_unpadded: UnpaddedBatch | None = None,
        position_bias: torch.Tensor | None = None,
        output_positions: torch.Tensor | None = None,
        unpadded: UnpaddedBatch | None = None,
        is_causal: bool = False,
        layer_idx: int | None = None,
        memory: torch.Tensor | None = None,
        attn_implementation: str = "sdpa",
        output_attentions: bool = False,
        shared_attention: MultiHeadAttention | None = None,
        shared_ffn: FeedForward | None = None,
        past_key_values: Cache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Returns (hidden states, self-attention probabilities or None, cross-attention
        probabilities (B, h, T, S) or None: with ``output_attentions`` and encoder states).

        ``output_positions`` (B, M), padded (B, T, H) input, no cross-attention: compute the
        output at those positions only, (B, M, H); every position still serves as key and value.
        ``past_key_values`` / ``layer_idx``: the cache and this layer's index in it (self- and
        cross-attention). ``memory`` (B, M, H): this layer's earlier input states, prepended to
        the self-attention keys/values (normalised like the input in the pre-LN order).
        ``encoder_unpadded``: the real tokens of a padded ``encoder_hidden_states``; cross-attention
        projects its keys and values from those alone.
        """
        if output_positions is not None and (unpadded is not None or encoder_hidden_states is not None):
            raise ValueError("output_positions needs the padded layout and no cross-attention")
        attention = shared_attention or self.attention
        ffn = shared_ffn or self.ffn
        if memory is not None and self.pre_layer_norm:
            memory = self.attention_norm(memory)
        hidden_states, probs = self._residual(
            hidden_states,
            self.attention_norm,
            lambda x: attention(
                x,
                attention_bias,
                position_bias=position_bias,
                is_causal=is_causal,
                unpadded=unpadded,
                attn_implementation=attn_implementation,
                output_attentions=output_attentions,
                query_positions=output_positions,
                past_key_values=past_key_values,
                layer_idx=layer_idx,
                memory=memory,
            ),
            output_positions,
        )
        cross_probs = None
        if self.cross_attention is not None and encoder_hidden_states is not None:
            hidden_states, cross_probs = self._residual(
                hidden_states,
                self.cross_attention_norm,
                lambda x: self.cross_attention(
                    x,
                    encoder_attention_bias,
                    key_value_states=encoder_hidden_states,
                    key_value_unpadded=encoder_unpadded,
                    unpadded=unpadded,
                    attn_implementation=attn_implementation,
                    output_attentions=output_attentions,
                    past_key_values=past_key_values,
                    layer_idx=layer_idx,
                ),
            )
        hidden_states, _ = self._residual(hidden_states, self.ffn_norm, lambda x: (ffn(x), None))
        return hidden_states, probs, cross_probs


class LayerStack(nn.Module):
    """``num_layers`` applications of TransformerLayer with optional cross-layer sharing.

    Args:
        sharing: "none" | "all" | "attention" | "ffn" (see the module docstring).
        schedule: with sharing "all" only: the index of the stored layer applied at each depth
            (``num_layers`` entries using every index 0..n-1); default: layer 0 at every depth.
        final_norm_in_hidden_states: the last entry of ``output_hidden_states`` is after the
            pre-LN stack's final norm (BERT-style, GPT-2) or before it (transformers' ViT and CLIP).
        final_dropout: dropout after the pre-LN stack's final norm (T5's stacks end with one).
    """

    def __init__(
        self,
        spec: LayerSpec,
        num_layers: int,
        sharing: str = "none",
        final_norm_in_hidden_states: bool = True,
        schedule: Sequence[int] | None = None,
        final_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if sharing not in SHARING_MODES:
            raise ValueError(f"unknown layer sharing mode {sharing!r}; choose one of {SHARING_MODES}")
        if schedule is not None and sharing != "all":
            raise ValueError(f"a layer schedule reuses whole layers: it needs sharing 'all', got {sharing!r}")
        self.num_layers = num_layers
        self.sharing = sharing
        self.schedule = None if schedule is None else tuple(int(index) for index in schedule)
        if self.schedule is not None:
            if len(self.schedule) != num_layers or sorted(set(self.schedule)) != list(range(len(set(self.schedule)))):
                raise ValueError(
                    f"schedule {self.schedule} must list {num_layers} stored-layer indices using each of 0..n-1"
                )
            self.layers = nn.ModuleList(TransformerLayer(spec) for _ in range(len(set(self.schedule))))
        elif sharing == "all":
            self.layers = nn.ModuleList([TransformerLayer(spec)])
        else:
            self.layers = nn.ModuleList(
                TransformerLayer(
                    spec,
                    own_attention=(i == 0 or sharing != "attention"),
                    own_ffn=(i == 0 or sharing != "ffn"),
                )
                for i in range(num_layers)
            )
        for depth, layer in enumerate(self.layers):
            # The cache index of a module used at one depth only; shared modules get it per call.
            for attention in (layer.attention, layer.cross_attention):
                if attention is not None:
                    attention.layer_idx = depth
        # Pre-LN leaves the residual stream un-normalised: one LayerNorm closes the stack.
        self.final_layer_norm = spec.norm() if spec.pre_layer_norm else None
        self.final_dropout = Dropout(final_dropout) if final_dropout > 0.0 and spec.pre_layer_norm else None
        self.final_norm_in_hidden_states = final_norm_in_hidden_states

    def layer_at(self, depth: int) -> TransformerLayer:
        if self.schedule is not None:
            return self.layers[self.schedule[depth]]
        return self.layers[0] if self.sharing == "all" else self.layers[depth]

    def forward(
        self,
        hidden_states: torch.Tensor,
        layout: BatchLayout,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        past_key_values: Cache | None = None,
        memories: SegmentMemory | None = None,
        **layer_kwargs,
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
        """Returns (last hidden states, all hidden states [input + one per layer] if asked,
        self-attentions if asked, cross-attentions if asked and the layers have them).

        ``hidden_states`` are (B, T, H), or (total_tokens, H) when ``layout`` is packed; the result
        keeps that layout, except that with ``layout.output_positions`` (B, M) the last layer
        computes those positions only and the result is (B, M, H) (re-padded first if the earlier
        layers ran packed): heads that read only the summary token, or only the masked tokens,
        skip the last layer's queries, output projection and FFN everywhere else. Exact: nothing
        else feeds their output. Not with ``output_hidden_states`` (the last layer would be partial).

        ``past_key_values``: a transformers Cache, indexed by depth. ``memories``: a
        :class:`SegmentMemory` with one (B, M, H) tensor per layer (or none yet); each layer
        attends over its memory + the current states, and its input states are recorded in
        ``memories`` (read the next segment's memories from ``memories.updated()``). With a cache
        or a memory the layout is padded and its ``attention_bias`` covers every key: past or
        memory positions + T (``masks.extend_for_memory``).
        """
        if memories is not None and memories.num_layers != self.num_layers:
            raise ValueError(f"memories hold {memories.num_layers} layers, the stack has {self.num_layers}")
        if layout.output_positions is not None and output_hidden_states:
            raise ValueError("output_positions cannot return all hidden states")
        all_hidden: list[torch.Tensor] = []
        all_attentions: list[torch.Tensor] = []
        all_cross_attentions: list[torch.Tensor] = []
        shared_attention = self.layers[0].attention if self.sharing == "attention" else None
        shared_ffn = self.layers[0].ffn if self.sharing == "ffn" else None
        hidden_states = layout.zero_padding(hidden_states)
        for depth in range(self.num_layers):
            if output_hidden_states:
                all_hidden.append(hidden_states)
            layer_layout, positions = layout, None
            if depth == self.num_layers - 1 and layout.output_positions is not None:
                hidden_states, layer_layout, positions = (
                    layout.to_padded(hidden_states),
                    layout.padded(),
                    layout.output_positions,
                )
            layer_input = hidden_states
            # Tensors that may carry gradient (encoder states, a relative-position bias computed once
            # for every layer) go positionally: gradient checkpointing (GradientCheckpointingLayer)
            # makes only positional arguments inputs of the checkpoint. As keywords they are closed
            # over, and reentrant checkpointing would backpropagate through their shared graph once
            # per layer ("backward through the graph a second time").
            hidden_states, probs, cross_probs = self.layer_at(depth)(
                hidden_states,
                layer_layout.layer_attention_bias,
                *(layer_kwargs.get(name) for name in _POSITIONAL_LAYER_INPUTS),
                # _PER_DEPTH_LAYER_INPUTS, in order
                positions,
                layer_layout.unpadded,
                layer_layout.is_causal,
                depth,
                memories.layer(depth) if memories is not None else None,
                output_attentions=output_attentions,
                shared_attention=shared_attention,
                shared_ffn=shared_ffn,
                past_key_values=past_key_values,
                **{name: value for name, value in layer_kwargs.items() if name not in _POSITIONAL_LAYER_INPUTS},
            )
            hidden_states = layer_layout.zero_padding(hidden_states, positions)
            if memories is not None:
                memories.record(depth, layer_input)
            if output_attentions:
                all_attentions.append(probs)
                if cross_probs is not None:
                    all_cross_attentions.append(cross_probs)
        if output_hidden_states and not self.final_norm_in_hidden_states:
            all_hidden.append(hidden_states)
        if self.final_layer_norm is not None:
            hidden_states = self.final_layer_norm(hidden_states)
        if self.final_dropout is not None:
            hidden_states = self.final_dropout(hidden_states)
        if output_hidden_states and self.final_norm_in_hidden_states:
            all_hidden.append(hidden_states)
        return hidden_states, all_hidden, all_attentions, all_cross_attentions
