"""benchmarks/pretraining_flops.py: the equal-compute budget unit of the ELECTRA vs BERT comparison."""

import pytest

from benchmarks import pretraining_flops


def test_masked_batch_masks_and_labels_the_same_positions():
    batch = pretraining_flops.masked_batch(4, 32, 100, 0.15, mask_id=4)
    selected = batch["labels"] != -100
    assert 0 < int(selected.sum()) < 4 * 32
    assert bool((batch["input_ids"][selected] == 4).all()) and bool((batch["input_ids"][~selected] != 4).all())


def test_electra_step_costs_more_than_bert_step_but_less_than_twice():
    # The joint model adds a generator of 1/4 width and the RTD head to a BERT-sized discriminator
    # (whose E=128 embeddings are cheaper than BERT's): more FLOPs than bert-mini's MLM step, far from 2x.
    results = pretraining_flops.main(
        ["electra-mini", "bert-mini", "--batch_size", "2", "--max_seq_length", "32", "--vocab_size", "500"]
    )
    assert results["bert-mini"]["ratio"] == 1.0
    assert 1.0 < results["electra-mini"]["ratio"] < 2.0
    with pytest.raises(ValueError, match="positive"):
        pretraining_flops.main(["bert-mini", "--batch_size", "0"])
