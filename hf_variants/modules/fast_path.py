"""The CPU speed path of an encoder, as one strategy object the model is given.

A model written as plain PyTorch (``hf_variants/models/bert/modeling_bert.py``: embeddings ->
layers -> pooler over padded (B, T) batches) hands its forward to :class:`PaddingFreePath` when
:func:`fast_path_for` returns one. The strategy runs the *same modules* in another layout, with
identical results at every position a head reads:

- **padding-free**: the real tokens are packed once into (total_tokens, H) (``padding.py``), every
  per-token op (embeddings, projections, FFN, norms) runs on them alone, and self-attention
  re-pads only per length bucket (``attention.packed_self_attention``); the output is re-padded
  with zeros at padding positions;
- **last layer only where read**: a head that reads the summary token (the pooler,
  classification, NSP) or the masked tokens (sparse MLM) makes the last layer compute those
  positions alone (:class:`~hf_variants.modules.heads.HeadReads`);
- the decision rules are :class:`~hf_variants.modules.layout.BatchLayout`'s (packed only when exact
  and worth it: enough padding, no reader of a padding position).

The switch is ``config.padding_free`` (documented in ``configuration.py``): on by default, it
selects this path for CPU inputs (where ``benchmarks/RESULTS.md`` measures it faster); on CUDA
the plain path runs until a GPU run shows the fast one faster. ``config.padding_free = False``
after ``AutoConfig.from_pretrained`` selects the plain path everywhere.

What a model must offer: ``embeddings(input_ids, token_type_ids, position_ids, inputs_embeds)``
accepting packed (N,) inputs; ``encoder.num_layers``, ``encoder.layer_at(depth)``,
``encoder.shared_blocks(depth)``, ``encoder.final_layer_norm`` (or None); layers called as
``layer(hidden_states, attention_mask, output_attentions, query_positions, None, depth,
*shared_blocks)`` where ``attention_mask`` may be an :class:`~hf_variants.modules.padding.UnpaddedBatch`
(packed input) or an additive bias; ``pooler`` (or None) and ``config.summary_type``. Optional:
further per-token embedding inputs (XLM's ``langs``), handed to :meth:`PaddingFreePath.encode` by
name and packed like the ids; ``zeroes_padding_states = True`` on the model (XLM) for states that
are exactly zero at padding positions after the embeddings and every layer when a batch runs padded.
Attention is causal where ``config.is_decoder`` (GPT: ``models/gpt/modeling_gpt.py``); a causal
stack computes every position (``HeadReads.positions`` / ``summary_only`` do not shorten it).

An encoder-decoder's encoder stack (T5, the original Transformer) runs its own layers and asks the
strategy only for the layout (:meth:`PaddingFreePath.plan_stack`): it packs its inputs with
``layout.to_packed``, hands self-attention ``layout.unpadded`` (the bucketed kernel) or, where
attention adds a bias defined per (query, key) position of the padded batch (T5's relative
position bias), a :class:`PackedWithBias` (re-padded around the kernel), and re-pads its output
with ``layout.to_padded`` (zeros at padding, which the decoder's cross-attention masks).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# HeadReads is the heads' declaration of what they read (heads.py, on both paths); re-exported here,
# the strategy's public API.
from .heads import HeadReads, summarize
from .layout import BatchLayout
from .masks import gather_positions, reads_a_padding_position, summary_positions
from .padding import UnpaddedBatch
from .tracing import is_tracing

__all__ = [
    "HeadReads",
    "PackedWithBias",
    "PaddingFreePath",
    "PADDING_FREE_PATH",
    "fast_path_enabled",
    "fast_path_for",
]


@dataclass(frozen=True)
class PackedWithBias:
    """The packed layout as a self-attention with a bias in padded coordinates sees it (T5's
    relative position bias): its inputs are the (total_tokens, H) real tokens of ``unpadded``, and
    ``attention_bias`` (B | 1, heads, T, T) is the padded batch's additive bias, padding included,
    added after re-padding around the kernel (``attention.packed_biased_self_attention``)."""

    unpadded: UnpaddedBatch
    attention_bias: torch.Tensor


class PaddingFreePath:
    """The strategy: :meth:`encode` runs a model's embeddings, layers and pooler packed and/or on
    the positions read only. Stateless; one instance serves every model."""

    def encode(
        self,
        model: torch.nn.Module,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor,
        inputs_embeds: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        reads: HeadReads,
        embedding_inputs: dict[str, torch.Tensor | None] | None = None,
        document_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Inputs (B, T) (``inputs_embeds`` (B, T, E)), checked by the model; ``attention_mask``
        (B, T) keep-mask or None; ``embedding_inputs``: further (B, T) inputs of the embeddings by
        name (XLM's ``langs``); ``document_ids`` (B, T) rows packed with several documents (-1 on
        padding, a causal LM's packed batches): each document then runs as its own sequence.
        Returns (sequence_output: (B, T, H) with zeros at padding when packed, or (B, M, H) /
        (B, 1, H) at the positions ``reads`` names; pooled (B, H) or None)."""
        reference = input_ids if input_ids is not None else inputs_embeds
        batch, length = reference.shape[:2]
        dtype = model.embeddings.word_embeddings.weight.dtype
        layout, summary = self._plan(model, attention_mask, batch, length, dtype, reference.device, reads, document_ids)
        hidden_states = model.embeddings(
            layout.to_packed(input_ids),
            layout.to_packed(token_type_ids),
            layout.to_packed(position_ids),
            layout.to_packed(inputs_embeds),
            **{name: layout.to_packed(value) for name, value in (embedding_inputs or {}).items()},
        )
        return self._layers_and_pooler(model, hidden_states, layout, summary, attention_mask)

    def encode_embedded(
        self,
        model: torch.nn.Module,
        embedding_output: torch.Tensor,
        attention_mask: torch.Tensor | None,
        reads: HeadReads,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """:meth:`encode` for a model whose embeddings take another input than token ids (ViT's
        pixels): ``embedding_output`` (B, T, H) is the sequence it embedded, packed here (the
        embeddings ran padded). Returns what :meth:`encode` returns."""
        batch, length = embedding_output.shape[:2]
        layout, summary = self._plan(
            model, attention_mask, batch, length, embedding_output.dtype, embedding_output.device, reads
        )
        return self._layers_and_pooler(model, layout.to_packed(embedding_output), layout, summary, attention_mask)

    @staticmethod
    def plan_stack(
        attention_mask: torch.Tensor | None, batch: int, length: int, dtype: torch.dtype, reads: HeadReads
    ) -> BatchLayout:
        """The layout of a stack that runs its own layers (an encoder-decoder's encoder): packed
        when exact and worth it (a (B, T) keep-mask with enough padding, no reader of a padding
        position: ``reads.padding``), else padded (``layout.packed`` False: the stack runs as on
        the plain path). ``layout.to_packed`` / ``layout.unpadded`` / ``layout.to_padded`` are what
        the stack uses (see the module docstring)."""
        return BatchLayout.plan(attention_mask, batch, length, dtype, padding_free=True, reads_padding=reads.padding)

    @staticmethod
    def _plan(
        model: torch.nn.Module,
        attention_mask: torch.Tensor | None,
        batch: int,
        length: int,
        dtype: torch.dtype,
        device: torch.device,
        reads: HeadReads,
        document_ids: torch.Tensor | None = None,
    ) -> tuple[BatchLayout, torch.Tensor | None]:
        """(the layout: packed or padded, the positions the last layer computes; the (B, 1)
        summary positions, or None when nothing reads them)."""
        config = model.config
        has_pooler = model.pooler is not None
        summary = None  # (B, 1) summary positions, when something reads them
        if has_pooler or reads.summary_only:
            summary = summary_positions(config.summary_type, attention_mask, batch, length, device)
        output_positions, output_positions_mask = reads.positions if reads.positions is not None else (None, None)
        if reads.summary_only and output_positions is None:
            output_positions = summary  # None for "mean": every position is read
        # The pooler reads the summary token: a packed layout leaves zeros there if it is padding.
        summary_read = summary if has_pooler and reads.positions is None else None
        layout = BatchLayout.plan(
            attention_mask,
            batch,
            length,
            dtype,
            padding_free=True,
            output_positions=output_positions,
            output_positions_mask=output_positions_mask,
            reads_padding=reads.padding or reads_a_padding_position(attention_mask, summary_read),
            is_causal=config.is_decoder,
            zero_padding=getattr(model, "zeroes_padding_states", False),
            document_ids=document_ids,
        )
        return layout, summary

    def _layers_and_pooler(
        self,
        model: torch.nn.Module,
        hidden_states: torch.Tensor,
        layout: BatchLayout,
        summary: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Embedded ``hidden_states`` in ``layout`` -> every layer (the last at the positions read),
        the final norm, the pooler: (sequence_output, pooled or None). A model with
        ``zeroes_padding_states`` (XLM) gets exact zeros at padding after the embeddings and every
        layer when the batch runs padded."""
        zero_padding = getattr(model, "zeroes_padding_states", False)
        if zero_padding:
            hidden_states = layout.zero_padding(hidden_states)
        computed_positions = layout.output_positions  # (B, M) or None: what the output will hold
        encoder = model.encoder
        for depth in range(encoder.num_layers):
            layer_layout, positions = layout, None
            if depth == encoder.num_layers - 1 and computed_positions is not None:
                # The last layer computes the positions read alone, in the padded layout.
                hidden_states, layer_layout, positions = (
                    layout.to_padded(hidden_states),
                    layout.padded(),
                    computed_positions,
                )
            mask = layer_layout.unpadded if layer_layout.packed else layer_layout.attention_bias
            hidden_states = encoder.layer_at(depth)(
                hidden_states, mask, False, positions, None, depth, *encoder.shared_blocks(depth)
            )[0]
            if zero_padding:
                hidden_states = layer_layout.zero_padding(hidden_states, positions)
        if encoder.final_layer_norm is not None:
            hidden_states = encoder.final_layer_norm(hidden_states)
        sequence_output = layout.to_padded(hidden_states)
        if encoder.num_layers == 0 and computed_positions is not None:
            sequence_output = gather_positions(sequence_output, computed_positions)
        pooled = None
        if model.pooler is not None:
            pooled = model.pooler(
                self._summary(sequence_output, attention_mask, summary, computed_positions, model.config)
            )
        return sequence_output, pooled

    @staticmethod
    def _summary(
        sequence_output: torch.Tensor,
        attention_mask: torch.Tensor | None,
        summary: torch.Tensor | None,
        computed_positions: torch.Tensor | None,
        config,
    ) -> torch.Tensor:
        """The (B, H) summary vector; ``sequence_output`` holds every position, or the (B, M)
        ``computed_positions`` only (one of which must be the summary position)."""
        if computed_positions is None:
            return summarize(sequence_output, config.summary_type, attention_mask)
        if summary is None:
            raise ValueError('summary_type "mean" reads every position: output_positions cannot be used with a pooler')
        found = computed_positions == summary
        if not is_tracing() and not bool(found.any(dim=1).all()):
            raise ValueError("output_positions must include each row's summary position when the model has a pooler")
        return gather_positions(sequence_output, found.int().argmax(dim=1, keepdim=True))[:, 0]


PADDING_FREE_PATH = PaddingFreePath()


def fast_path_enabled(config, device: torch.device) -> bool:
    """The switch: ``config.padding_free`` and CPU inputs. Heads ask it before reading their labels
    for the fast path (a device sync the plain path does without)."""
    return bool(config.padding_free) and device.type == "cpu"


def fast_path_for(config, device: torch.device, needs_every_layer: bool, stateful: bool) -> PaddingFreePath | None:
    """The speed strategy for one forward, or None for the plain path: ``config.padding_free`` on
    and CPU inputs (measured faster there), and nothing that only the plain path provides: every
    layer's hidden states or attention maps (``needs_every_layer``: the returned tensors must be
    the ones the computation used) or a key/value prefix (``stateful``: the packed layout has no
    slot for it)."""
    if not fast_path_enabled(config, device) or needs_every_layer or stateful:
        return None
    return PADDING_FREE_PATH
