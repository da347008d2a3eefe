"""Unit tests of the padding-free bookkeeping (hf_variants.modules.padding)."""

from __future__ import annotations

import pytest
import torch

from hf_variants.modules.padding import MAX_ATTENTION_BUCKETS, UnpaddedBatch, bucket_rows


def random_mask(lengths: list[int], length: int) -> torch.Tensor:
    return (torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]).long()


def test_cu_seqlens_and_round_trip() -> None:
    mask = random_mask([5, 0, 3, 1], 6)
    unpadded = UnpaddedBatch.from_attention_mask(mask)
    assert unpadded.cu_seqlens.tolist() == [0, 5, 5, 8, 9]
    assert unpadded.total_tokens == 9
    padded = torch.randn(4, 6, 3)
    restored = unpadded.pad(unpadded.unpad(padded))
    assert torch.equal(restored[mask.bool()], padded[mask.bool()])
    assert torch.all(restored[~mask.bool()] == 0)


def test_bucket_rows_equal_lengths_is_one_bucket() -> None:
    assert bucket_rows([7, 7, 7, 7]) == [[0, 1, 2, 3]]


def test_bucket_rows_cover_every_nonempty_row_once() -> None:
    lengths = [50, 3, 0, 48, 12, 11, 5, 49, 30, 2]
    buckets = bucket_rows(lengths)
    assert 1 < len(buckets) <= MAX_ATTENTION_BUCKETS
    rows = sorted(row for bucket in buckets for row in bucket)
    assert rows == [row for row, length in enumerate(lengths) if length > 0]
    assert all(bucket == sorted(bucket) for bucket in buckets)
    # Splitting pays: the bucketed attention area is well below one rectangle of the longest row.
    area = sum(len(b) * max(lengths[r] for r in b) ** 2 for b in buckets)
    assert area < 0.6 * (len(lengths) - 1) * 50**2


@pytest.mark.parametrize("lengths", [[9, 9, 9], [9, 1, 4, 7, 2, 8, 3], [0, 6, 0, 2], [1]])
def test_gather_scatter_buckets_round_trip(lengths: list[int]) -> None:
    """Every real token lands in exactly one bucket slot and comes back to its packed place."""
    mask = random_mask(lengths, 9)
    unpadded = UnpaddedBatch.from_attention_mask(mask)
    packed = torch.randn(unpadded.total_tokens, 5, requires_grad=True)
    per_bucket = unpadded.gather_buckets(packed)
    assert sum(b.num_rows for b in unpadded.attention_buckets) == sum(1 for n in lengths if n)
    for bucket, tensor in zip(unpadded.attention_buckets, per_bucket):
        assert tensor.shape == (bucket.num_rows, bucket.length, 5)
        if bucket.key_padding_mask is not None:
            bias = bucket.attention_bias(torch.float32)
            assert bias.shape == (bucket.num_rows, 1, 1, bucket.length)
            assert torch.equal(bias[:, 0, 0] == 0, bucket.key_padding_mask)
    restored = unpadded.scatter_buckets(per_bucket)
    assert torch.equal(restored, packed)
    restored.sum().backward()
    # Padding slots read real tokens but pass no gradient back: each token gets exactly 1.
    assert torch.equal(packed.grad, torch.ones_like(packed))


def test_bucket_order_matches_batch_rows() -> None:
    """Bucket b's rows, padded, hold the same tokens as the padded batch's rows."""
    lengths = [8, 2, 7, 1, 8, 3]
    mask = random_mask(lengths, 8)
    unpadded = UnpaddedBatch.from_attention_mask(mask)
    padded = torch.arange(6 * 8, dtype=torch.float32).view(6, 8, 1)
    per_bucket = unpadded.gather_buckets(unpadded.unpad(padded))
    rows = bucket_rows(lengths)
    for bucket_rows_, bucket, tensor in zip(rows, unpadded.attention_buckets, per_bucket):
        for i, row in enumerate(bucket_rows_):
            real = lengths[row]
            assert torch.equal(tensor[i, :real], padded[row, :real])
            assert bucket.length >= real
