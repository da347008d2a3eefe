"""research/transfo_xl_memory_check.py: Transformer-XL's memory, trained through run_clm.py's own
loop (RecurrentTrainer over SegmentStreamDataset), solves a task that only the memory can solve
(each token repeats the one P positions back, segments shorter than P), loses it when evaluated
without memory, and carries no gradient from one step into the next."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hf_variants import TransfoXLLMHeadModel
from research import transfo_xl_memory_check


def load_script():
    return transfo_xl_memory_check


def test_copy_documents_repeat_their_first_block():
    script = load_script()
    stream, repeated = script.copy_documents(3, period=5, repeats=4, vocab_size=7, rng=np.random.default_rng(0))
    assert stream.shape == repeated.shape == (3 * 4 * 5,)
    # every token marked as a repeat equals the one `period` back; the first block of each document is not a repeat
    positions = np.flatnonzero(repeated)
    assert np.array_equal(stream[positions], stream[positions - 5])
    assert repeated.reshape(3, 20)[:, :5].sum() == 0 and repeated.reshape(3, 20)[:, 5:].all()


def test_target_mask_follows_the_segment_layout():
    script = load_script()
    mask = np.arange(41) % 3 == 0
    laid_out = script.target_mask(mask, segment_length=4, batch_size=2)  # streams of 20, 4 segments of 4 + 1
    assert laid_out.shape == (2, 4, 4)
    # entry (b, s, i) is stream b's token s * 4 + i + 1 (the target), stream b starting at token 20 b
    assert laid_out[1, 2, 3] == mask[20 + 2 * 4 + 3 + 1]
    assert laid_out[0, 0, 0] == mask[1]


@pytest.mark.parametrize(
    ("segment_length", "memory_length", "message"), [(6, 8, "segment_length"), (4, 5, "memory_length")]
)
def test_a_check_the_memory_need_not_or_cannot_solve_is_a_value_error(segment_length, memory_length, message):
    with pytest.raises(ValueError, match=message):
        load_script().copy_check(period=6, segment_length=segment_length, memory_length=memory_length)


def test_memory_trained_with_run_clm_loop_solves_copy_and_loses_it_without_memory():
    """A 1-layer transfo-xl, segments of 4, memory 8, trained 150 steps on documents of 6 random
    tokens repeated: repeats it can only see through the memory drop far below chance; the same
    model evaluated with memory 0 is at chance or worse. Fails if the model ignores `mems`, if the
    trainer does not carry them from one batch to the next, or if the carried memory keeps a graph."""
    script = load_script()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    period, segment_length, memory_length, vocab_size, batch_size = 6, 4, 8, 8, 8
    train_ids, _ = script.copy_documents(200, period, 16, vocab_size, rng)
    eval_ids, repeated = script.copy_documents(20, period, 16, vocab_size, rng)
    model = TransfoXLLMHeadModel(script.tiny_config(vocab_size, memory_length, hidden_size=32, layers=1))
    _, carried = script.train_recurrent(
        model, train_ids, segment_length, batch_size, max_steps=150, learning_rate=1e-2, seed=0
    )
    assert carried is not None and len(carried) == 1 and carried[0].shape == (memory_length, batch_size, 32)
    assert not any(m.requires_grad for m in carried)  # no gradient crosses a segment boundary

    mask = script.target_mask(repeated, segment_length, batch_size)
    chance = math.log(vocab_size)
    with_memory = script.segment_losses(model, eval_ids, segment_length, batch_size, memory_length)[mask].mean()
    without = script.segment_losses(model, eval_ids, segment_length, batch_size, 0)[mask].mean()
    assert with_memory < 0.25 * chance, (with_memory, chance)  # measured 0.14 (chance 2.08)
    assert without > 0.9 * chance, (without, chance)  # measured 5.6: copies from a memory it no longer has


def test_document_offsets_restart_after_each_separator():
    offsets = load_script().document_offsets(np.array([5, 3, 7, 8, 3, 9, 9]), separator_id=3)
    assert offsets.tolist() == [0, 1, 0, 1, 2, 0, 1]  # the separator closes (and counts in) its document
    assert load_script().document_offsets(np.array([4, 4, 4]), separator_id=None).tolist() == [0, 1, 2]
