"""Unpad / re-pad helpers for padding-free execution.

Per-token work (embeddings, projections, FFN, LayerNorm, heads) does not need the padding a
batch carries, so the padding-free path removes it once, runs those ops on a packed
(total_tokens, H) tensor, and re-pads only around the attention kernel, which needs a
rectangular (B, heads, T, T) layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class UnpaddedBatch:
    """Where the real tokens of a padded (B, T) batch live once flattened.

    Attributes:
        indices: (total_tokens,) positions of the real tokens in the flattened (B*T) batch.
        cu_seqlens: (B + 1,) int32 cumulative sequence lengths (FlashAttention-style offsets).
        max_seqlen: length T of the padded batch.
        batch_size: B.
    """

    indices: torch.Tensor
    cu_seqlens: torch.Tensor
    max_seqlen: int
    batch_size: int

    @classmethod
    def from_attention_mask(cls, attention_mask: torch.Tensor) -> "UnpaddedBatch":
        """attention_mask: (B, T), 1 for real tokens and 0 for padding."""
        batch_size, max_seqlen = attention_mask.shape
        flat = attention_mask.reshape(-1).bool()
        indices = torch.nonzero(flat, as_tuple=False).flatten()
        seqlens = attention_mask.sum(dim=1, dtype=torch.int32)
        cu_seqlens = torch.nn.functional.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
        return cls(indices=indices, cu_seqlens=cu_seqlens, max_seqlen=max_seqlen, batch_size=batch_size)

    @property
    def total_tokens(self) -> int:
        return self.indices.numel()

    def unpad(self, padded: torch.Tensor) -> torch.Tensor:
        """(B, T, ...) -> (total_tokens, ...)."""
        return padded.reshape(self.batch_size * self.max_seqlen, *padded.shape[2:])[self.indices]

    def pad(self, packed: torch.Tensor) -> torch.Tensor:
        """(total_tokens, ...) -> (B, T, ...) with zeros at padding positions (differentiable)."""
        out = packed.new_zeros(self.batch_size * self.max_seqlen, *packed.shape[1:])
        out = out.index_copy(0, self.indices, packed)
        return out.reshape(self.batch_size, self.max_seqlen, *packed.shape[1:])
