"""One owner of the batch layout for a forward pass.

:class:`BatchLayout` decides, once per forward, whether the batch runs packed (padding-free:
per-token work on (total_tokens, H), see padding.py) or padded, which positions the last layer
computes, and whether attention is causal; the speed plug-in (``fast_path.py``) plans it and every
layer reads it. The rules, in one place:

- Packed only when it is exact and worth it: ``padding_free`` asked for, enough padding
  (masks.worth_unpadding), and no reader of a padding position (the packed path leaves zeros
  there, where transformers reads the value computed at that slot: QA's softmax over all T,
  labels at padding, a pooler reading position 0 of a left-padded row). Calls that need every
  layer's states or a key/value prefix never reach the plug-in (``fast_path.fast_path_for``).
- ``output_positions`` (B, M): the caller reads only these; the last layer computes them alone
  (in the padded layout, re-padded once if the earlier layers ran packed).
- ``zero_padding``: states at padding positions are set to exactly zero after the embeddings and
  after every layer (transformers' XLM multiplies by the padding mask there); the packed layout
  holds no padding, so only the padded one multiplies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from .masks import (
    combine_biases,
    document_bias,
    make_attention_bias,
    reads_a_padding_position,
    worth_unpadding,
    zeroing_mask,
)
from .padding import UnpaddedBatch


@dataclass
class BatchLayout:
    """How one forward lays out its batch.

    Attributes:
        batch_size, length: B and T of the padded batch.
        attention_bias: additive (B, 1, 1|T, T) bias (padding, plus any extra bias, plus nothing
            for causality, which ``is_causal`` carries); None when nothing is masked.
        unpadded: where the real tokens live when the batch runs packed; None when padded.
        output_positions: (B, M) positions the caller reads; None for every position.
        is_causal: causal self-attention (decoders).
        keep_mask: (B, T) 1 at real tokens, when states at padding positions are zeroed; else None.
    """

    batch_size: int
    length: int
    attention_bias: torch.Tensor | None
    unpadded: UnpaddedBatch | None = None
    output_positions: torch.Tensor | None = None
    is_causal: bool = False
    keep_mask: torch.Tensor | None = None

    @classmethod
    def plan(
        cls,
        attention_mask: torch.Tensor | None,
        batch_size: int,
        length: int,
        dtype: torch.dtype,
        *,
        padding_free: bool,
        output_positions: torch.Tensor | None = None,
        output_positions_mask: torch.Tensor | None = None,
        reads_padding: bool = False,
        is_causal: bool = False,
        zero_padding: bool = False,
        document_ids: torch.Tensor | None = None,
    ) -> "BatchLayout":
        """Decide the layout.

        Args:
            attention_mask: (B, T) 1 for real tokens, 0 for padding, or None.
            padding_free: the packed layout is allowed (the config's ``padding_free`` or the caller's).
            output_positions: (B, M) positions read by the caller (the summary token, masked tokens).
            output_positions_mask: (B, M) bool, False for slots of ``output_positions`` that are
                only filler (nobody reads them); None: every slot is read.
            reads_padding: the caller reads hidden states at padding positions.
            is_causal: causal self-attention.
            zero_padding: states at padding positions are zeroed (see :meth:`zero_padding`).
            document_ids: (B, T) packed rows of several documents (-1 on padding): attention stays
                inside each document. Packed, every document is its own sequence (no mask at all);
                when the batch must run padded, a block-diagonal bias keeps the documents apart.
        """
        if document_ids is not None:
            if tuple(document_ids.shape) != (batch_size, length):
                raise ValueError(f"document_ids has shape {tuple(document_ids.shape)}, expected {(batch_size, length)}")
            if padding_free and not reads_padding:
                layout = cls.plan(
                    attention_mask,
                    batch_size,
                    length,
                    dtype,
                    padding_free=False,
                    is_causal=is_causal,
                    zero_padding=zero_padding,
                )
                layout.unpadded = UnpaddedBatch.from_document_ids(document_ids)
                return layout
            documents = document_bias(document_ids, dtype)
        else:
            documents = None
        attention_bias = make_attention_bias(attention_mask, dtype)
        if documents is not None:
            # Defined in padded coordinates: a batch with a document bias runs padded.
            attention_bias = combine_biases(attention_bias, documents.to(dtype), dtype)
        if is_causal:
            # The selected-query kernel has no causal mask: causal stacks compute every position.
            output_positions = output_positions_mask = None
        keep_mask = (
            zeroing_mask(attention_mask, length) if zero_padding else None
        )  # cached or memory positions come first
        layout = cls(batch_size, length, attention_bias, None, output_positions, is_causal, keep_mask)
        packable = (
            padding_free
            and attention_mask is not None
            and documents is None
            and not reads_padding
            and attention_bias is not None
            and worth_unpadding(attention_mask)
            and not reads_a_padding_position(attention_mask, output_positions, output_positions_mask)
        )
        if packable:
            layout.unpadded = UnpaddedBatch.from_attention_mask(attention_mask)
        return layout

    @property
    def packed(self) -> bool:
        return self.unpadded is not None

    def to_packed(self, tensor: torch.Tensor | None) -> torch.Tensor | None:
        """(B, T, ...) -> (total_tokens, ...) when packed; unchanged when padded (or None)."""
        return tensor if tensor is None or not self.packed else self.unpadded.unpad(tensor)

    def to_padded(self, tensor: torch.Tensor) -> torch.Tensor:
        """Packed (total_tokens, H) hidden states -> (B, T, H) with zeros at padding; padded (B, T, H)
        or (B, M, H) ones unchanged. Told apart by rank: their first sizes can agree (one row of
        one real token: B = total_tokens = 1), and treating (B, M, H) as packed mangled it."""
        is_packed = self.packed and tensor.dim() == 2 and tensor.shape[0] == self.unpadded.total_tokens
        return self.unpadded.pad(tensor) if is_packed else tensor

    def zero_padding(self, hidden_states: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Zero the states at padding positions when the layout was planned with ``zero_padding``.
        ``hidden_states``: padded (B, T, H), or (B, M, H) at the (B, M) ``positions``; packed
        (total_tokens, H) states hold no padding and are returned unchanged."""
        if self.keep_mask is None or hidden_states.dim() == 2:
            return hidden_states
        keep = self.keep_mask if positions is None else self.keep_mask.gather(1, positions)
        return hidden_states * keep[..., None].to(hidden_states.dtype)

    def padded(self) -> "BatchLayout":
        """The same batch in the padded layout (for the last layer when it computes ``output_positions``)."""
        return replace(self, unpadded=None)
