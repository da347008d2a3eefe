"""Unpad / re-pad helpers for padding-free execution.

Per-token work (embeddings, projections, FFN, LayerNorm, heads) does not need the padding a
batch carries, so the padding-free path removes it once, runs those ops on a packed
(total_tokens, H) tensor, and re-pads only around the attention kernel, which needs a
rectangular (rows, heads, L, L) layout.

Around attention the re-padding is as tight as the lengths allow: rows are grouped into a few
length buckets (:class:`AttentionBucket`), each padded only to its own longest row, so neither
the batch's padding nor the spread of lengths inside a dynamically padded batch costs attention
FLOPs. Attention over the real keys of a row does not depend on where they sat in the padded
batch (positions were already added by the embeddings), so this is exact; variants that add a
position bias in the padded coordinates use :meth:`UnpaddedBatch.pad` instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .masks import gather_positions, key_padding_bias, selected_positions  # noqa: F401  (re-exported: they live with the masks)

# A bucket split must save at least this fraction of the attention area (sum of rows * L^2) of
# the group it splits: every extra bucket costs one more (small) attention call per layer.
MIN_BUCKET_SAVING = 0.15
MAX_ATTENTION_BUCKETS = 4


@dataclass
class AttentionBucket:
    """Rows of similar length, attended together in a (rows, heads, length, length) layout.

    Attributes:
        num_rows: n, the rows in the bucket.
        length: L, the longest row of the bucket.
        gather_index: (n * L,) packed-token index for every slot of the (n, L) grid; slots past a
            row's end repeat the row's first token (finite values that the key mask hides).
        slot_index: (tokens in the bucket,) grid slots holding real tokens, row by row.
        key_padding_mask: (n, L) bool, True at real keys; None when every row has length L.
    """

    num_rows: int
    length: int
    gather_index: torch.Tensor
    slot_index: torch.Tensor
    key_padding_mask: torch.Tensor | None
    _biases: dict = field(default_factory=dict, repr=False)

    def attention_bias(self, dtype: torch.dtype) -> torch.Tensor | None:
        """Additive (n, 1, 1, L) key mask (the most negative finite value at padding slots), cached
        so every layer reuses it; None when the bucket has no padding."""
        if self.key_padding_mask is None:
            return None
        if dtype not in self._biases:
            self._biases[dtype] = key_padding_bias(self.key_padding_mask, dtype)
        return self._biases[dtype]


def _split_point(lengths: list[int]) -> tuple[int, int]:
    """Best place to cut lengths (sorted descending) into two buckets: (index, attention area saved)."""
    area = len(lengths) * lengths[0] ** 2
    best_index, best_area = 0, area
    for index in range(1, len(lengths)):
        if lengths[index] == lengths[index - 1]:
            continue
        split_area = index * lengths[0] ** 2 + (len(lengths) - index) * lengths[index] ** 2
        if split_area < best_area:
            best_index, best_area = index, split_area
    return best_index, area - best_area


def bucket_rows(lengths: list[int], max_buckets: int = MAX_ATTENTION_BUCKETS) -> list[list[int]]:
    """Group row indices into at most ``max_buckets`` buckets of similar length.

    Greedy: repeatedly split the bucket whose best two-way cut saves the most attention area,
    while that saving is at least MIN_BUCKET_SAVING of the bucket's area. Rows of length 0 are
    left out (they have no tokens to attend). Each bucket lists its rows in batch order.
    """
    order = sorted((row for row, length in enumerate(lengths) if length > 0), key=lambda row: -lengths[row])
    buckets = [order] if order else []
    while len(buckets) < max_buckets:
        candidates = []
        for position, rows in enumerate(buckets):
            index, saved = _split_point([lengths[row] for row in rows])
            if index > 0 and saved >= MIN_BUCKET_SAVING * len(rows) * lengths[rows[0]] ** 2:
                candidates.append((saved, position, index))
        if not candidates:
            break
        _, position, index = max(candidates)
        rows = buckets.pop(position)
        buckets[position:position] = [rows[:index], rows[index:]]
    return [sorted(rows) for rows in buckets]


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
    _buckets: list[AttentionBucket] | None = field(default=None, repr=False)
    _bucket_order: torch.Tensor | None = field(default=None, repr=False)
    _padding_biases: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_attention_mask(cls, attention_mask: torch.Tensor) -> "UnpaddedBatch":
        """attention_mask: (B, T), 1 for real tokens and 0 for padding."""
        batch_size, max_seqlen = attention_mask.shape
        flat = attention_mask.reshape(-1).bool()
        indices = torch.nonzero(flat, as_tuple=False).flatten()
        seqlens = attention_mask.bool().sum(dim=1, dtype=torch.int32)
        cu_seqlens = torch.nn.functional.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
        return cls(indices=indices, cu_seqlens=cu_seqlens, max_seqlen=max_seqlen, batch_size=batch_size)

    @classmethod
    def from_document_ids(cls, document_ids: torch.Tensor) -> "UnpaddedBatch":
        """document_ids: (B, T) packed rows, 0, 1, 2, ... per document within a row and -1 on padding
        (``hf_variants.objectives.DataCollatorForPackedCausalLM``). Every document becomes one
        sequence of the packed batch, so attention (bucketed, see :attr:`attention_buckets`) stays
        inside each document exactly, with no (B, 1, T, T) block-diagonal mask; ``pad``/``unpad``
        still map to the (B, T) rows."""
        if document_ids.dim() != 2:
            raise ValueError(f"document_ids must be (batch, length), got shape {tuple(document_ids.shape)}")
        batch_size, max_seqlen = document_ids.shape
        real = document_ids >= 0
        starts = real.clone()
        starts[:, 1:] &= (
            document_ids[:, 1:] != document_ids[:, :-1]
        )  # a real token whose document differs from its left neighbour's
        real, starts = real.reshape(-1), starts.reshape(-1)
        indices = torch.nonzero(real, as_tuple=False).flatten()
        start_offsets = torch.nonzero(starts[indices], as_tuple=False).flatten().to(torch.int32)
        total = torch.tensor([indices.numel()], dtype=torch.int32, device=document_ids.device)
        cu_seqlens = torch.cat([start_offsets, total])
        return cls(indices=indices, cu_seqlens=cu_seqlens, max_seqlen=max_seqlen, batch_size=batch_size)

    @property
    def total_tokens(self) -> int:
        return self.indices.numel()

    def attention_bias(self, dtype: torch.dtype) -> torch.Tensor:
        """Additive (B, 1, 1, T) key-padding bias of the padded batch, built once per dtype."""
        if dtype not in self._padding_biases:
            real = torch.zeros(self.batch_size * self.max_seqlen, dtype=torch.bool, device=self.indices.device)
            real[self.indices] = True
            self._padding_biases[dtype] = key_padding_bias(real.view(self.batch_size, self.max_seqlen), dtype)
        return self._padding_biases[dtype]

    def unpad(self, padded: torch.Tensor) -> torch.Tensor:
        """(B, T, ...) -> (total_tokens, ...)."""
        return padded.reshape(self.batch_size * self.max_seqlen, *padded.shape[2:])[self.indices]

    def pad(self, packed: torch.Tensor) -> torch.Tensor:
        """(total_tokens, ...) -> (B, T, ...) with zeros at padding positions (differentiable)."""
        out = packed.new_zeros(self.batch_size * self.max_seqlen, *packed.shape[1:])
        out = out.index_copy(0, self.indices, packed)
        return out.reshape(self.batch_size, self.max_seqlen, *packed.shape[1:])

    # ------------------------------------------------------------------ bucketed attention layout
    @property
    def attention_buckets(self) -> list[AttentionBucket]:
        """The length buckets of this batch (built once, shared by every layer)."""
        if self._buckets is None:
            self._build_buckets()
        return self._buckets

    def _build_buckets(self) -> None:
        offsets = self.cu_seqlens.tolist()
        lengths = [end - start for start, end in zip(offsets[:-1], offsets[1:])]
        device = self.indices.device
        self._buckets, packed_order = [], []
        for rows in bucket_rows(lengths):
            length = max(lengths[row] for row in rows)
            row_lengths = torch.tensor([lengths[row] for row in rows], device=device)
            row_starts = torch.tensor([offsets[row] for row in rows], device=device)
            position = torch.arange(length, device=device)
            real = position[None, :] < row_lengths[:, None]  # (n, L)
            # Padding slots read the row's first token: finite, and hidden by the key mask.
            gather = row_starts[:, None] + torch.where(real, position[None, :], 0)
            self._buckets.append(
                AttentionBucket(
                    num_rows=len(rows),
                    length=length,
                    gather_index=gather.reshape(-1),
                    slot_index=torch.nonzero(real.reshape(-1), as_tuple=False).flatten(),
                    key_padding_mask=None if bool(real.all()) else real,
                )
            )
            packed_order.append(gather[real])
        if len(self._buckets) > 1:
            # The buckets' outputs, concatenated, list tokens in bucket order; this restores packed order.
            order = torch.cat(packed_order)
            self._bucket_order = torch.empty_like(order).scatter_(0, order, torch.arange(order.numel(), device=device))

    def gather_buckets(self, packed: torch.Tensor) -> list[torch.Tensor]:
        """(total_tokens, C) -> one (n, L, C) tensor per bucket."""
        return [
            packed.index_select(0, b.gather_index).view(b.num_rows, b.length, *packed.shape[1:])
            for b in self.attention_buckets
        ]

    def scatter_buckets(self, per_bucket: list[torch.Tensor]) -> torch.Tensor:
        """One (n, L, C) tensor per bucket -> (total_tokens, C) in packed order (padding slots dropped)."""
        real = [
            out.reshape(b.num_rows * b.length, *out.shape[2:]).index_select(0, b.slot_index)
            for b, out in zip(self.attention_buckets, per_bucket)
        ]
        if self._bucket_order is None:  # one bucket, rows in batch order: already packed order
            return real[0]
        return torch.cat(real).index_select(0, self._bucket_order)
