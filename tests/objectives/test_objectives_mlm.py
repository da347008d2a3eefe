"""Statistical tests of BERT/RoBERTa masked-LM collators on >= 10^5 real (Austen) tokens."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hf_variants.objectives import DataCollatorForMaskedLM, DataCollatorForPrecomputedMasks, make_static_masked_dataset
from tests.common.austen_data import austen_examples, austen_tokenizer, collate_all


def corruption_counts(collator, examples):
    """Totals over the corpus: candidates, selected, [MASK], random (changed, not mask), unchanged."""
    tokenizer = collator.tokenizer
    special = np.array(sorted(tokenizer.all_special_ids))
    counts = dict(candidates=0, selected=0, mask=0, random=0, unchanged=0)
    for batch, original, lengths in collate_all(collator, examples):
        inside = np.arange(original.shape[1])[None, :] < lengths[:, None]
        candidate = inside & ~np.isin(original, special)
        labels = batch["labels"].numpy()
        corrupted = batch["input_ids"].numpy()
        selected = labels != -100
        # Special tokens and padding are never selected, and stay untouched.
        assert not (selected & ~candidate).any()
        assert (corrupted[~candidate & inside] == original[~candidate & inside]).all()
        assert (corrupted[~inside] == tokenizer.pad_token_id).all()
        assert (labels[selected] == original[selected]).all()
        # A random replacement is never a special token.
        assert not np.isin(corrupted[selected & (corrupted != tokenizer.mask_token_id)], special).any()
        assert (batch["attention_mask"].numpy() == inside).all()
        counts["candidates"] += candidate.sum()
        counts["selected"] += selected.sum()
        counts["mask"] += (selected & (corrupted == tokenizer.mask_token_id)).sum()
        counts["random"] += (selected & (corrupted != tokenizer.mask_token_id) & (corrupted != original)).sum()
        counts["unchanged"] += (selected & (corrupted == original)).sum()
    return counts


def assert_bert_proportions(counts):
    assert counts["candidates"] >= 100_000
    assert abs(counts["selected"] / counts["candidates"] - 0.15) < 0.005
    for kind, expected in (("mask", 0.8), ("random", 0.1), ("unchanged", 0.1)):
        assert abs(counts[kind] / counts["selected"] - expected) < 0.01, (kind, counts)


@pytest.mark.parametrize("whole_word_mask", [False, True])
def test_mlm_fractions_and_special_tokens(whole_word_mask):
    tokenizer = austen_tokenizer()
    examples = austen_examples()  # DOC-SENTENCES: rows of different lengths, so padding is exercised
    collator = DataCollatorForMaskedLM(tokenizer, whole_word_mask=whole_word_mask, seed=0)
    assert_bert_proportions(corruption_counts(collator, examples))


def test_whole_word_masking_selects_complete_words():
    tokenizer = austen_tokenizer()
    continuation = np.array(
        [token.startswith("##") for token in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))]
    )
    collator = DataCollatorForMaskedLM(tokenizer, whole_word_mask=True, seed=1)
    multi_piece_words_selected = 0
    for batch, original, lengths in collate_all(collator, austen_examples()):
        selected = batch["labels"].numpy() != -100
        is_continuation = continuation[original] & (np.arange(original.shape[1])[None, :] < lengths[:, None])
        # Packing may split an over-long sentence inside a word: a "##" piece right after [CLS]
        # then starts the row's first word, so only pieces after a maskable token are checked.
        after_special = np.zeros_like(selected)
        after_special[:, 1:] = np.isin(original[:, :-1], sorted(tokenizer.all_special_ids))
        is_continuation &= ~after_special
        # A continuation piece is selected exactly when the piece before it is.
        previous = np.zeros_like(selected)
        previous[:, 1:] = selected[:, :-1]
        assert (selected[is_continuation] == previous[is_continuation]).all()
        multi_piece_words_selected += (selected & is_continuation).sum()
    assert multi_piece_words_selected > 300  # the check above was not vacuous


def test_word_ids_feature_gives_the_same_words_as_the_vocabulary():
    tokenizer = austen_tokenizer()
    text = "Elizabeth's astonishment was beyond expression. She stared, coloured, doubted, and was silent."
    encoding = tokenizer(text)
    feature = {"input_ids": encoding["input_ids"]}
    with_word_ids = {**feature, "word_ids": encoding.word_ids()}
    first = DataCollatorForMaskedLM(tokenizer, whole_word_mask=True, seed=3)([feature] * 64)
    second = DataCollatorForMaskedLM(tokenizer, whole_word_mask=True, seed=3)([with_word_ids] * 64)
    assert torch.equal(first["labels"], second["labels"])


def test_dynamic_masks_change_every_epoch_static_masks_do_not():
    tokenizer = austen_tokenizer()
    examples = [dict(e) for e in austen_examples()[:64]]
    import datasets

    dataset = datasets.Dataset.from_list(examples)
    static = make_static_masked_dataset(dataset, tokenizer, copies=3, seed=0)
    assert len(static) == 3 * len(dataset)
    assert set(static.column_names) == {"input_ids", "token_type_ids", "labels"}
    pad_collator = DataCollatorForPrecomputedMasks(tokenizer)
    dynamic = DataCollatorForMaskedLM(tokenizer, seed=0)

    def epoch_labels(collate, rows, seed):
        """Labels per row index after one shuffled epoch through a DataLoader."""
        order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed)).tolist()
        labels = {}
        for start in range(0, len(order), 16):
            indices = order[start : start + 16]
            batch = collate([rows[i] for i in indices])
            for i, row_labels in zip(indices, batch["labels"]):
                labels[i] = (
                    tuple(row_labels[row_labels != -100].tolist()),
                    tuple((row_labels != -100).nonzero().flatten().tolist()),
                )
        return labels

    static_rows = [static[i] for i in range(len(static))]
    first, second = epoch_labels(pad_collator, static_rows, 1), epoch_labels(pad_collator, static_rows, 2)
    assert first == second  # same mask for the same copy in every epoch
    n = len(dataset)
    differing_copies = sum(first[i] != first[i + n] for i in range(n))
    assert differing_copies >= n - 1  # the copies carry different masks

    first, second = epoch_labels(dynamic, examples, 1), epoch_labels(dynamic, examples, 2)
    assert sum(first[i] != second[i] for i in range(n)) >= n - 1  # a new mask every epoch

    # Static masking keeps BERT's proportions and is reproducible from the seed.
    selected = sum(int((np.array(r["labels"]) != -100).sum()) for r in static_rows)
    tokens = sum(len(r["input_ids"]) - 2 for r in static_rows)
    assert abs(selected / tokens - 0.15) < 0.01
    again = make_static_masked_dataset(dataset, tokenizer, copies=3, seed=0)
    assert again["labels"] == static["labels"]


def test_seeded_collator_is_reproducible_and_seeds_differ():
    tokenizer = austen_tokenizer()
    features = [dict(e) for e in austen_examples()[:32]]
    a = DataCollatorForMaskedLM(tokenizer, seed=7)(features)
    b = DataCollatorForMaskedLM(tokenizer, seed=7)(features)
    c = DataCollatorForMaskedLM(tokenizer, seed=8)(features)
    assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["labels"], b["labels"])
    assert not torch.equal(a["labels"], c["labels"])


def test_pad_to_multiple_of_and_scalar_labels_pass_through():
    tokenizer = austen_tokenizer()
    features = [{**dict(e), "next_sentence_label": i % 2} for i, e in enumerate(austen_examples()[:5])]
    batch = DataCollatorForMaskedLM(tokenizer, pad_to_multiple_of=64, seed=0)(features)
    assert batch["input_ids"].shape[1] % 64 == 0
    assert batch["next_sentence_label"].tolist() == [0, 1, 0, 1, 0]
    assert batch["token_type_ids"].shape == batch["input_ids"].shape


def test_bad_input_raises_clear_errors():
    tokenizer = austen_tokenizer()
    collator = DataCollatorForMaskedLM(tokenizer, seed=0)
    with pytest.raises(ValueError, match="input_ids"):
        collator([{"token_type_ids": [0, 0]}])
    with pytest.raises(ValueError, match="'text'"):
        collator([{"input_ids": [2, 10, 3], "text": "x"}])
    with pytest.raises(ValueError, match="out of range"):
        collator([{"input_ids": [2, len(tokenizer) + 5, 3]}])
    with pytest.raises(ValueError, match="different columns"):
        collator([{"input_ids": [2, 10, 3]}, {"input_ids": [2, 11, 3], "token_type_ids": [0, 0, 0]}])
    with pytest.raises(ValueError, match="length"):
        collator([{"input_ids": [2, 10, 3], "token_type_ids": [0, 0]}])
    with pytest.raises(ValueError, match="mlm_probability"):
        DataCollatorForMaskedLM(tokenizer, mlm_probability=1.5)
    with pytest.raises(ValueError, match="sum to at most 1"):
        DataCollatorForMaskedLM(tokenizer, mask_probability=0.8, random_probability=0.3)
    with pytest.raises(ValueError, match="DataCollatorForPrecomputedMasks"):
        collator([{"input_ids": [2, 10, 3], "labels": [-100, 10, -100]}])
