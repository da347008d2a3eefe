"""XLNet permutation LM collator: the visibility rule pair by pair, no leak through transformers'
own XLNetLMHeadModel, uncorrupted content, the 1/K prediction ratio on real text."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from hf_variants.objectives import DataCollatorForPermutationLM, inverse_length_probabilities
from tests.common.austen_data import austen_examples, austen_tokenizer, collate_all

SENTENCES = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune",
    "must be in want of a wife.",
    "However little known the feelings or views of such a man may be",
]


def small_features(tokenizer):
    """Three real sentences of odd and even lengths (with [CLS] ... [SEP])."""
    return [{"input_ids": tokenizer(text)["input_ids"]} for text in SENTENCES]


def expected_visible(i, j, rank, kind, perm_size):
    """The rule, stated pair by pair from the factorisation order (kind: 'target', 'context',
    'special' or 'pad')."""
    if kind[i] == "pad" or kind[j] == "pad":
        return False
    block_i, block_j = i // perm_size, j // perm_size
    if block_j != block_i:
        return block_j < block_i  # earlier blocks are wholly visible, later ones not at all
    if kind[j] == "context":
        return True  # context is visible to everyone in its block
    if kind[i] == "target":
        return rank[j] < rank[i]  # strictly earlier targets/specials: never itself
    if kind[i] == "special":
        return rank[j] <= rank[i]
    return False  # context never sees a target or a special token of its block


def original_perm_mask(rank, kind, perm_size):
    """XLNet's own construction (`_local_perm` per part, parts joined so that an earlier part is
    wholly visible to a later one and a later one not at all), restated in numpy: within a part
    non-targets get index -1, targets "cannot see themselves" through ``self_rev_index``.
    Padding is hidden afterwards (the original has none)."""
    width = len(rank)
    kind = np.array(kind)
    is_target, is_context = kind == "target", kind == "context"
    perm_mask = np.ones((width, width))
    for start in range(0, width, perm_size):
        part = slice(start, min(start + perm_size, width))
        rev_index = np.where(is_context[part], -1, rank[part])
        self_rev_index = np.where(is_target[part], rev_index, rev_index + 1)
        perm_mask[part, part] = (self_rev_index[:, None] <= rev_index[None, :]) & ~is_context[part][None, :]
        perm_mask[part, :start] = 0
    padding = kind == "pad"
    perm_mask[:, padding] = 1
    perm_mask[padding, :] = 1
    return perm_mask


@pytest.mark.parametrize("perm_size", [None, 4, 5])
def test_visibility_rule_for_every_pair(perm_size):
    tokenizer = austen_tokenizer()
    features = small_features(tokenizer)
    collator = DataCollatorForPermutationLM(tokenizer, plm_probability=0.3, perm_size=perm_size, seed=1)
    special_ids = set(tokenizer.all_special_ids)
    for _ in range(5):
        batch = collator(features)
        perm_mask = batch["perm_mask"].numpy()
        width = perm_mask.shape[1]
        block = perm_size or width
        targets = batch["target_mapping"].numpy().sum(axis=1) > 0
        assert targets.sum() > 0
        for row, feature in enumerate(features):
            ids, rank = feature["input_ids"], collator.last_ranks[row]
            # The order is a permutation inside each block, blocks in sequence order.
            for start in range(0, width, block):
                assert sorted(rank[start : start + block]) == list(range(start, min(start + block, width)))
            kind = [
                "pad"
                if p >= len(ids)
                else "special"
                if ids[p] in special_ids
                else "target"
                if targets[row, p]
                else "context"
                for p in range(width)
            ]
            for i in range(width):
                for j in range(width):
                    assert perm_mask[row, i, j] == (not expected_visible(i, j, rank, kind, block)), (row, i, j)
            assert (perm_mask[row] == original_perm_mask(rank, kind, block)).all()


def test_outputs_feed_transformers_xlnet_without_leaks():
    """Changing a token that perm_mask hides from a target (its own token included) leaves that
    target's prediction unchanged through every layer of transformers' XLNetLMHeadModel; a
    visible token does change it."""
    from transformers import XLNetConfig, XLNetLMHeadModel

    tokenizer = austen_tokenizer()
    collator = DataCollatorForPermutationLM(tokenizer, plm_probability=0.3, perm_size=6, seed=0)
    batch = collator(small_features(tokenizer))
    config = XLNetConfig(vocab_size=len(tokenizer), d_model=32, n_layer=2, n_head=2, d_inner=64)
    model = XLNetLMHeadModel(config).eval()
    with torch.no_grad():
        output = model(**batch)
        assert torch.isfinite(output.loss)
        row, slot = 0, 0
        target = int(batch["target_mapping"][row, slot].argmax())
        hidden = batch["perm_mask"][row, target] == 1
        hidden_positions = torch.nonzero(hidden & (batch["attention_mask"][row] == 1)).flatten().tolist()
        assert target in hidden_positions
        changed_hidden = changed_visible = 0
        for position in range(int(batch["attention_mask"][row].sum())):
            altered = {key: value.clone() for key, value in batch.items()}
            altered["input_ids"][row, position] = (int(batch["input_ids"][row, position]) + 1) % len(tokenizer)
            logits = model(**altered).logits[row, slot]
            moved = not torch.allclose(logits, output.logits[row, slot], atol=1e-6)
            if position in hidden_positions:
                changed_hidden += moved
            else:
                changed_visible += moved
        assert changed_hidden == 0
        assert changed_visible > 0


def test_content_uncorrupted_padding_never_target_nor_visible():
    tokenizer = austen_tokenizer()
    features = small_features(tokenizer)
    batch = DataCollatorForPermutationLM(tokenizer, seed=0)(features)
    lengths = torch.tensor([len(f["input_ids"]) for f in features])
    inside = torch.arange(batch["input_ids"].shape[1])[None, :] < lengths[:, None]
    for row, feature in enumerate(features):
        assert batch["input_ids"][row, : lengths[row]].tolist() == feature["input_ids"]
    assert (batch["input_ids"][~inside] == tokenizer.pad_token_id).all()
    assert (batch["attention_mask"].bool() == inside).all()
    assert (batch["perm_mask"].permute(0, 2, 1)[~inside] == 1).all()  # padding columns hidden
    assert (batch["target_mapping"].sum(dim=1)[~inside] == 0).all()
    # Labels are the real tokens at the one-hot target positions, in position order.
    positions = batch["target_mapping"].argmax(dim=-1)
    used = batch["labels"] != -100
    assert (batch["target_mapping"].sum(dim=-1) == used.float()).all()
    assert (torch.gather(batch["input_ids"], 1, positions)[used] == batch["labels"][used]).all()


def test_prediction_ratio_and_word_ngrams_on_real_text():
    tokenizer = austen_tokenizer()
    examples = austen_examples(max_length=128)[:400]
    collator = DataCollatorForPermutationLM(tokenizer, seed=0)
    tokens = {word for word, index in tokenizer.get_vocab().items() if not word.startswith("##")}
    starts_word = np.zeros(len(tokenizer), dtype=bool)
    starts_word[[tokenizer.convert_tokens_to_ids(t) for t in tokens]] = True
    special = np.array(sorted(tokenizer.all_special_ids))
    candidates = predicted = 0
    span_words = []
    for batch, original, lengths in collate_all(collator, examples):
        inside = np.arange(original.shape[1])[None, :] < lengths[:, None]
        candidate = inside & ~np.isin(original, special)
        targets = batch["target_mapping"].numpy().sum(axis=1) > 0
        assert not (targets & ~candidate).any()
        candidates += candidate.sum()
        predicted += targets.sum()
        for row, spans in enumerate(collator.last_spans):
            for span in spans:  # whole words: starts on a word start, ends before one
                assert starts_word[original[row, span.start]]
                assert span.end == lengths[row] or starts_word[original[row, span.end]]
                span_words.append(span.n_words)
    assert candidates > 30_000
    assert abs(predicted / candidates - 1 / 6) < 0.006
    counts = np.bincount(span_words, minlength=6)[1:]
    probabilities = inverse_length_probabilities(5)
    assert stats.chisquare(counts, probabilities * counts.sum()).pvalue > 0.01


def test_fixed_num_predict_and_determinism():
    tokenizer = austen_tokenizer()
    features = small_features(tokenizer)
    fixed = DataCollatorForPermutationLM(tokenizer, plm_probability=0.5, num_predict=3, seed=3)(features)
    assert fixed["target_mapping"].shape == (3, 3, fixed["input_ids"].shape[1])
    assert fixed["labels"].shape == (3, 3)
    first = DataCollatorForPermutationLM(tokenizer, seed=7)(features)
    again = DataCollatorForPermutationLM(tokenizer, seed=7)(features)
    other = DataCollatorForPermutationLM(tokenizer, seed=8)(features)
    assert all(torch.equal(first[key], again[key]) for key in first)
    assert not torch.equal(first["perm_mask"], other["perm_mask"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(plm_probability=0.0), "plm_probability"),
        (dict(plm_probability=1.0), "plm_probability"),
        (dict(max_span_length=0), "n-gram length"),
        (dict(perm_size=0), "perm_size"),
        (dict(num_predict=0), "num_predict"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataCollatorForPermutationLM(austen_tokenizer(), **kwargs)


def test_too_short_rows_and_existing_labels_rejected():
    tokenizer = austen_tokenizer()
    collator = DataCollatorForPermutationLM(tokenizer)
    with pytest.raises(ValueError, match="fewer than 2"):
        collator([{"input_ids": tokenizer("word")["input_ids"]}])
    with pytest.raises(ValueError, match="labels"):
        collator([{"input_ids": [5, 6, 7], "labels": [5, 6, 7]}])


def train_two_steps(model, rows, collator, output_dir, remove_unused_columns: bool = True) -> list[float]:
    """Two optimiser steps of transformers' own Trainer on `rows` (feature dicts) through
    `collator` (what `Trainer(data_collator=...)` does with a dataset's columns included);
    returns the logged training losses."""
    import datasets
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(
        str(output_dir),
        max_steps=2,
        per_device_train_batch_size=4,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        remove_unused_columns=remove_unused_columns,
    )
    trainer = Trainer(
        model=model, args=args, train_dataset=datasets.Dataset.from_list(list(rows)), data_collator=collator
    )
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def test_trainer_takes_the_collator(tmp_path):
    from transformers import XLNetConfig, XLNetLMHeadModel

    tokenizer = austen_tokenizer()
    config = XLNetConfig(vocab_size=len(tokenizer), d_model=32, n_layer=2, n_head=2, d_inner=64)
    losses = train_two_steps(
        XLNetLMHeadModel(config),
        austen_examples(max_length=64)[:8],
        DataCollatorForPermutationLM(tokenizer, seed=0),
        tmp_path,
    )
    assert len(losses) == 2 and all(np.isfinite(losses))
