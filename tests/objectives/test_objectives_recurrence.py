"""Segment-level recurrence batching (Transformer-XL's ordered iterator): read through accelerate's
own batch sharding, every process sees the consecutive segments of its own streams in
consecutive batches, the targets run one token ahead across segment boundaries, and the streams
cover the text in order."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from accelerate.data_loader import BatchSamplerShard

from hf_variants.objectives import SegmentStreamDataset, split_into_streams


def test_streams_are_contiguous_slices_of_the_text():
    streams = split_into_streams(np.arange(23), 4)
    assert streams.shape == (4, 5)
    assert streams.reshape(-1).tolist() == list(range(20))  # the 3 tokens that do not divide are dropped


@pytest.mark.parametrize(("world_size", "batch_size"), [(1, 3), (2, 3), (3, 2)])
def test_each_process_reads_consecutive_segments_of_its_own_streams(world_size, batch_size):
    text = np.arange(1000) * 7 % 997  # distinct ids, so positions can be recovered from values
    segment = 5
    dataset = SegmentStreamDataset(text, segment, batch_size, world_size)
    sampler = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(dataset), batch_size, drop_last=False)
    rows_per_process = []
    for process in range(world_size):
        # The sharding accelerate applies to Trainer's dataloader: batch k goes to process k % world_size.
        batches = [[dataset[i] for i in indices] for indices in BatchSamplerShard(sampler, world_size, process)]
        assert len(batches) == dataset.num_segments
        for step, batch in enumerate(batches):
            assert [item["segment_index"] for item in batch] == [step] * batch_size
        rows = []
        for row in range(batch_size):
            inputs = torch.cat([batch[row]["input_ids"] for batch in batches])
            targets = torch.cat([batch[row]["next_token_ids"] for batch in batches])
            # Row r of batch t + 1 continues row r of batch t, and each target is the next token.
            assert inputs[1:].tolist() == targets[:-1].tolist()
            rows.append(inputs.tolist() + targets[-1:].tolist())
        rows_per_process.append(rows)
    # Process p owns streams p*B .. p*B + B - 1; together, in order, they are the text's slices.
    streams = [row for rows in rows_per_process for row in rows]
    stream_length = len(text) // (batch_size * world_size)
    for index, stream in enumerate(streams):
        start = index * stream_length
        assert stream == text[start : start + len(stream)].tolist()


def test_evaluation_batches_match_the_items():
    dataset = SegmentStreamDataset(np.arange(100), 4, batch_size=3)
    for step, (inputs, targets) in enumerate(dataset.batches()):
        items = [dataset[step * 3 + row] for row in range(3)]
        assert inputs.tolist() == [item["input_ids"].tolist() for item in items]
        assert targets.tolist() == [item["next_token_ids"].tolist() for item in items]
        assert (targets[:, :-1] == inputs[:, 1:]).all()
    assert step + 1 == dataset.num_segments == (100 // 3 - 1) // 4
    assert dataset.tokens_per_pass == 3 * dataset.num_segments * 4


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="cannot be cut"):
        split_into_streams([1, 2], 3)
    with pytest.raises(ValueError, match="flat stream"):
        split_into_streams(np.zeros((2, 3)), 1)
    with pytest.raises(ValueError, match="hold no segment"):
        SegmentStreamDataset(np.arange(20), 10, batch_size=2)
    with pytest.raises(ValueError, match=">= 1"):
        SegmentStreamDataset(np.arange(20), 0, batch_size=2)
    with pytest.raises(ValueError, match="world_size=1"):
        next(SegmentStreamDataset(np.arange(200), 4, batch_size=2, world_size=2).batches())
