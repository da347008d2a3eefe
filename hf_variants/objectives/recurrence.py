"""Batching for segment-level recurrence (Transformer-XL, Dai et al. 2019, sec. 3.2).

A model that carries a memory from one segment to the next must see, in consecutive batches, the
consecutive segments of the same text in the same row. The original code (its ordered LM
iterator) cuts the token stream into B contiguous streams, one per row, and makes batch t of
segment t of every stream: row b of batch t continues row b of batch t - 1, so the memory that
batch t - 1 left is the text just before it.

:class:`SegmentStreamDataset` lays that order out for a sequential sampler and several processes:
accelerate hands global batch k to process k % world_size, so each process owns its own B streams
and still sees their segments one after the other. Targets are the next tokens of the stream
(``next_token_ids``): the last position of segment t predicts the first token of segment t + 1,
so every token after the first of a stream is predicted exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch


def split_into_streams(token_ids: Sequence[int] | np.ndarray, num_streams: int) -> np.ndarray:
    """(N,) token ids -> (num_streams, N // num_streams): stream s is the contiguous slice
    [s * n, (s + 1) * n) of the text; the N % num_streams tokens left at the end are dropped."""
    tokens = np.asarray(token_ids, dtype=np.int64)
    if tokens.ndim != 1:
        raise ValueError(f"token_ids must be one flat stream, got shape {tokens.shape}")
    if num_streams < 1:
        raise ValueError(f"num_streams must be >= 1, got {num_streams}")
    length = len(tokens) // num_streams
    if length == 0:
        raise ValueError(f"{len(tokens)} tokens cannot be cut into {num_streams} streams")
    return tokens[: num_streams * length].reshape(num_streams, length)


class SegmentStreamDataset(torch.utils.data.Dataset):
    """Segments of B * world_size parallel streams, in the order recurrence needs them.

    Args:
        token_ids: (N,) the whole text as one stream of ids (documents separated by EOS/SEP).
        segment_length: L, the tokens of one segment (the paper's ``tgt_len``).
        batch_size: B, rows per batch on each process.
        world_size: processes that share the data (each owns B streams).

    Read with a sequential sampler and batches of B: global batch k holds segment k // world_size
    of the streams of process k % world_size. An item is ``{"input_ids": (L,), "next_token_ids":
    (L,), "segment_index": int}``; ``segment_index`` 0 marks the start of the streams, where a
    trainer must drop the memory it carries (a new pass over the data).
    """

    def __init__(
        self, token_ids: Sequence[int] | np.ndarray, segment_length: int, batch_size: int, world_size: int = 1
    ) -> None:
        if segment_length < 1 or batch_size < 1 or world_size < 1:
            raise ValueError(
                f"segment_length, batch_size and world_size must be >= 1, got {segment_length}, "
                f"{batch_size}, {world_size}"
            )
        self.streams = split_into_streams(token_ids, batch_size * world_size)
        self.segment_length, self.batch_size, self.world_size = segment_length, batch_size, world_size
        # One token more than the segments cover: the last segment's targets run one step ahead.
        self.num_segments = (self.streams.shape[1] - 1) // segment_length
        if self.num_segments < 1:
            raise ValueError(
                f"streams of {self.streams.shape[1]} tokens hold no segment of {segment_length} tokens "
                f"(+1 target): use more text, a smaller batch or shorter segments"
            )

    def __len__(self) -> int:
        return self.num_segments * self.batch_size * self.world_size

    def locate(self, index: int) -> tuple[int, int]:
        """(stream, segment) of item ``index``."""
        if not 0 <= index < len(self):
            raise IndexError(f"item {index} out of range for {len(self)} items")
        global_batch, row = divmod(index, self.batch_size)
        segment, process = divmod(global_batch, self.world_size)
        return process * self.batch_size + row, segment

    def __getitem__(self, index: int) -> dict:
        stream, segment = self.locate(index)
        start = segment * self.segment_length
        tokens = self.streams[stream]
        return {
            "input_ids": torch.from_numpy(tokens[start : start + self.segment_length].copy()),
            "next_token_ids": torch.from_numpy(tokens[start + 1 : start + self.segment_length + 1].copy()),
            "segment_index": segment,
        }

    def batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """For one process (world_size 1): (input_ids (B, L), next_token_ids (B, L)) for segment
        0, 1, ... in order: what evaluation with memory reads."""
        if self.world_size != 1:
            raise ValueError("batches() reads all streams in one process: build the dataset with world_size=1")
        length = self.segment_length
        for start in range(0, self.num_segments * length, length):
            yield (
                torch.from_numpy(self.streams[:, start : start + length].copy()),
                torch.from_numpy(self.streams[:, start + 1 : start + length + 1].copy()),
            )

    @property
    def tokens_per_pass(self) -> int:
        """Targets predicted in one pass over the streams: B * world_size * segments * L."""
        return len(self) * self.segment_length
