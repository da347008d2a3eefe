"""T5 span corruption: the length helper against real outputs, noise density and span length on
real text, sentinel order, no span across EOS or padding, the T5 tokenizer kind."""

from __future__ import annotations

import copy
import functools
import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from hf_variants.objectives import (
    DataCollatorForSpanCorruption,
    iter_corpus_documents,
    pack_for_span_corruption,
    random_spans_noise_mask,
    sentinel_ids,
    span_corruption_dataset,
    span_corruption_lengths,
    tokenize_documents,
)
from hf_variants.objectives.span_corruption import random_segmentation
from hf_variants.tokenization import train_tokenizer
from tests.common.austen_data import austen_corpus, austen_tokenizer


@functools.lru_cache(maxsize=None)
def t5_tokenizer():
    return train_tokenizer("unigram-t5", austen_corpus()["text"][:3000], vocab_size=2000)


@functools.lru_cache(maxsize=None)
def t5_documents(paragraphs: int = 2000):
    corpus = austen_corpus().select(range(paragraphs))
    return tuple(tokenize_documents(iter_corpus_documents(corpus), t5_tokenizer(), sentences=False))


@functools.lru_cache(maxsize=None)
def packed_rows(input_length: int):
    """Real Austen text in rows of exactly the raw length that `input_length` needs."""
    tokens_length, _ = span_corruption_lengths(input_length)
    rows = list(pack_for_span_corruption(t5_documents(), tokens_length))
    return tuple(rows[:-1])  # the last row is shorter


def restore(input_ids, labels, sentinels, eos_id):
    """Undo the corruption: put each sentinel's dropped tokens back in the input."""
    pieces, current = {}, None
    for token in labels:
        if token == eos_id:
            break
        if token in sentinels:
            current = token
            pieces[current] = []
        else:
            pieces[current].append(token)
    restored = []
    for token in input_ids:
        restored.extend(pieces.pop(token) if token in sentinels else [token])
    assert not pieces  # every target span has its sentinel in the input
    return restored


def test_lengths_match_the_original_helper_and_the_outputs():
    # T5's published numbers: inputs of 512 take 568 raw tokens and give 114 target tokens.
    assert span_corruption_lengths(512) == (568, 114)
    tokenizer = t5_tokenizer()
    for input_length in (64, 128, 512):
        tokens_length, targets_length = span_corruption_lengths(input_length)
        rows = packed_rows(input_length)[:16]
        assert all(len(row["input_ids"]) == tokens_length for row in rows)
        batch = DataCollatorForSpanCorruption(tokenizer, seed=0)(list(rows))  # dynamic padding
        assert batch["input_ids"].shape == (len(rows), input_length)  # no padding was needed
        assert bool(batch["attention_mask"].all())
        assert batch["labels"].shape == (len(rows), targets_length)
        assert bool((batch["labels"] != -100).all())


def test_noise_density_span_length_and_round_trip_on_real_text():
    tokenizer = t5_tokenizer()
    sentinels = sentinel_ids(tokenizer)
    sentinel_set, eos = set(sentinels.tolist()), tokenizer.eos_token_id
    rows = packed_rows(128)
    collator = DataCollatorForSpanCorruption(tokenizer, input_length=128, seed=0)
    noise_tokens = total_tokens = spans = 0
    for start in range(0, len(rows), 64):
        features = list(rows[start : start + 64])
        batch = collator(features)
        for row, feature in enumerate(features):
            inputs = batch["input_ids"][row][batch["attention_mask"][row] == 1].tolist()
            labels = batch["labels"][row][batch["labels"][row] != -100].tolist()
            assert inputs[-1] == eos and labels[-1] == eos
            assert restore(inputs[:-1], labels, sentinel_set, eos) == feature["input_ids"]
            # Sentinels in order <extra_id_0>, <extra_id_1>, ... in both input and target.
            used = [token for token in inputs if token in sentinel_set]
            assert used == sentinels[: len(used)].tolist()
            assert [token for token in labels if token in sentinel_set] == used
            noise_tokens += len(labels) - len(used) - 1
            total_tokens += len(feature["input_ids"])
            spans += len(used)
    assert total_tokens > 50_000
    # round(141 * 0.15) = 21 noise tokens in round(21 / 3) = 7 spans per 141-token row.
    assert noise_tokens / total_tokens == pytest.approx(21 / 141)
    assert abs(noise_tokens / total_tokens - 0.15) < 0.002
    assert noise_tokens / spans == pytest.approx(3.0)


def test_segmentations_are_uniform_and_masks_alternate():
    rng = np.random.default_rng(0)
    compositions = list(itertools.combinations(range(1, 6), 2))  # 6 items in 3 parts: 10 ways
    draws = [tuple(np.cumsum(random_segmentation(6, 3, rng))[:-1]) for _ in range(5000)]
    counts = [draws.count(c) for c in compositions]
    assert sum(counts) == 5000
    assert stats.chisquare(counts).pvalue > 0.01
    for length in (1, 2, 5, 37, 200):
        mask = random_spans_noise_mask(length, 0.15, 3.0, rng)
        assert len(mask) == length and not mask[0]  # starts with a kept span
        if length >= 2:
            assert mask[-1]  # ends with a noise span


def test_no_span_crosses_eos_or_padding():
    tokenizer = t5_tokenizer()
    eos = tokenizer.eos_token_id
    texts = austen_corpus()["text"][100:160]
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    # Rows of two or three paragraphs joined by EOS, of different lengths (so the batch pads).
    features = [
        {"input_ids": encoded[k] + [eos] + encoded[k + 1] + ([eos] + encoded[k + 2] if k % 2 else [])}
        for k in range(0, 57, 3)
    ]
    collator = DataCollatorForSpanCorruption(tokenizer, seed=1)
    sentinel_set = set(sentinel_ids(tokenizer).tolist())
    batch = collator(features)
    for row, feature in enumerate(features):
        ids = np.array(feature["input_ids"])
        noise = collator.last_noise_masks[row]
        assert len(noise) == len(ids)
        assert not noise[ids == eos].any()  # EOS is never noise, so no span contains or crosses it
        inputs = batch["input_ids"][row][batch["attention_mask"][row] == 1].tolist()
        assert inputs.count(eos) == (ids == eos).sum() + 1  # the separators stay, one EOS is appended
        labels = batch["labels"][row]
        real = labels != -100
        assert bool(real[: int(real.sum())].all())  # the target is a prefix, then -100 padding
        assert labels[real].tolist()[-1] == eos and labels[real].tolist().count(eos) == 1
        assert restore(inputs[:-1], labels[real].tolist(), sentinel_set, eos) == feature["input_ids"]
    padded = batch["attention_mask"] == 0
    assert padded.any() and bool((batch["input_ids"][padded] == tokenizer.pad_token_id).all())


def test_feeds_transformers_t5_and_decoder_inputs_match_its_shift():
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = t5_tokenizer()
    collator = DataCollatorForSpanCorruption(tokenizer, input_length=64, return_decoder_input_ids=True, seed=0)
    batch = collator(list(packed_rows(64)[:4]))
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_ff=64,
        d_kv=16,
        num_layers=2,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    model = T5ForConditionalGeneration(config)
    assert torch.equal(batch["decoder_input_ids"], model._shift_right(batch["labels"]))
    assert torch.isfinite(model(**batch).loss)


def test_corpus_dataset_rows_give_full_batches():
    tokenizer = t5_tokenizer()
    rows = span_corruption_dataset(austen_corpus().select(range(300)), tokenizer, input_length=64)
    tokens_length, targets_length = span_corruption_lengths(64)
    assert len(rows) > 20 and all(len(ids) == tokens_length for ids in rows["input_ids"][:-1])
    batch = DataCollatorForSpanCorruption(tokenizer, input_length=64, seed=0)([rows[k] for k in range(8)])
    assert bool(batch["attention_mask"].all()) and bool((batch["labels"] != -100).all())
    assert batch["labels"].shape == (8, targets_length)


def test_determinism_and_fixed_shapes():
    tokenizer = t5_tokenizer()
    rows = list(packed_rows(64)[:8])
    first = DataCollatorForSpanCorruption(tokenizer, seed=5)(rows)
    again = DataCollatorForSpanCorruption(tokenizer, seed=5)(rows)
    other = DataCollatorForSpanCorruption(tokenizer, seed=6)(rows)
    assert all(torch.equal(first[key], again[key]) for key in first)
    assert not torch.equal(first["input_ids"], other["input_ids"])
    collator = DataCollatorForSpanCorruption(tokenizer, input_length=64, seed=0)
    short = collator([{"input_ids": rows[0]["input_ids"][:20]}])
    assert short["input_ids"].shape == (1, 64) and short["labels"].shape == (1, span_corruption_lengths(64)[1])


def test_t5_tokenizer_kind_sentinels_descend_from_the_top(tmp_path):
    from transformers import AutoTokenizer

    tokenizer = t5_tokenizer()
    ids = sentinel_ids(tokenizer)
    assert len(ids) == 100 and len(tokenizer) <= 2000
    assert ids.tolist() == list(range(len(tokenizer) - 1, len(tokenizer) - 101, -1))  # <extra_id_0> on top
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    assert tokenizer("Emma")["input_ids"][-1] == tokenizer.eos_token_id
    assert "token_type_ids" not in tokenizer("Emma")
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert sentinel_ids(reloaded).tolist() == ids.tolist()
    assert reloaded("a <extra_id_0> b")["input_ids"] == tokenizer("a <extra_id_0> b")["input_ids"]
    assert tokenizer.convert_tokens_to_ids("<extra_id_0>") in tokenizer("a <extra_id_0> b")["input_ids"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(noise_density=0.0), "noise_density"),
        (dict(noise_density=1.0), "noise_density"),
        (dict(mean_noise_span_length=0.5), "mean_noise_span_length"),
        (dict(input_length=1), "input_length"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataCollatorForSpanCorruption(t5_tokenizer(), **kwargs)


def test_bad_inputs():
    tokenizer = t5_tokenizer()
    bert = copy.deepcopy(austen_tokenizer())
    with pytest.raises(ValueError, match="EOS"):
        DataCollatorForSpanCorruption(bert)
    bert.eos_token = "[SEP]"
    with pytest.raises(ValueError, match="sentinel"):
        DataCollatorForSpanCorruption(bert)  # BERT's vocabulary has no <extra_id_k>
    with pytest.raises(ValueError, match="longer than input_length"):
        DataCollatorForSpanCorruption(tokenizer, input_length=64)([packed_rows(128)[0]])
    with pytest.raises(ValueError, match="no ordinary tokens"):
        DataCollatorForSpanCorruption(tokenizer)([{"input_ids": [tokenizer.eos_token_id]}])
    with pytest.raises(ValueError, match="extra_ids"):
        train_tokenizer("unigram-t5", ["a b c"], vocab_size=150, extra_ids=100)


def test_trainer_takes_the_collator(tmp_path):
    from test_objectives_plm import train_two_steps
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = t5_tokenizer()
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_ff=64,
        d_kv=16,
        num_layers=2,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    losses = train_two_steps(
        T5ForConditionalGeneration(config),
        packed_rows(64)[:8],
        DataCollatorForSpanCorruption(tokenizer, input_length=64, seed=0),
        tmp_path,
    )
    assert len(losses) == 2 and all(np.isfinite(losses))
