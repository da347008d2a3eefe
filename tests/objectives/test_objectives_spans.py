"""Statistical tests of SpanBERT span masking and ALBERT n-gram masking on >= 10^5 real tokens."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hf_variants.objectives import (
    DataCollatorForNgramMasking,
    DataCollatorForSpanMasking,
    clipped_geometric_probabilities,
    inverse_length_probabilities,
)
from hf_variants.tokenization import train_tokenizer
from tests.common.austen_data import austen_corpus, austen_examples, austen_tokenizer, collate_all


def word_start_flags(tokenizer, original, lengths):
    """(B, T) bool: non-special tokens that start a word (WordPiece: no ## prefix)."""
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    starts_word = np.array([not t.startswith("##") for t in tokens])
    special = np.isin(original, sorted(tokenizer.all_special_ids))
    inside = np.arange(original.shape[1])[None, :] < lengths[:, None]
    return starts_word[original] & ~special & inside, special | ~inside


def masked_runs(selected_row):
    """[start, end) of each run of consecutive selected positions."""
    padded = np.concatenate([[False], selected_row, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return list(zip(edges[::2], edges[1::2]))


def collect_runs(collator, examples, passes: int):
    """Run the collator `passes` times over the examples; return per-run records and totals."""
    tokenizer = collator.tokenizer
    runs, totals = [], dict(candidates=0, selected=0)
    for _ in range(passes):
        for batch, original, lengths in collate_all(collator, examples):
            starts, non_candidate = word_start_flags(tokenizer, original, lengths)
            labels = batch["labels"].numpy()
            corrupted = batch["input_ids"].numpy()
            selected = labels != -100
            assert not (selected & non_candidate).any()  # specials and padding never masked
            totals["candidates"] += (~non_candidate).sum()
            totals["selected"] += selected.sum()
            for row in range(len(lengths)):
                recorded = {(s.start, s.end): s.n_words for s in collator.last_spans[row]}
                for start, end in masked_runs(selected[row]):
                    # Spans start on a word start and end just before a word start or special token.
                    assert starts[row, start]
                    assert end == lengths[row] or starts[row, end] or non_candidate[row, end]
                    n_words = int(starts[row, start:end].sum())
                    assert recorded.pop((start, end)) == n_words  # each run is one recorded span
                    runs.append(
                        dict(
                            batch=batch,
                            row=row,
                            start=start,
                            end=end,
                            n_words=n_words,
                            mask=(corrupted[row, start:end] == tokenizer.mask_token_id),
                            same=(corrupted[row, start:end] == original[row, start:end]),
                        )
                    )
                assert not recorded  # no recorded span is missing from the output
    return runs, totals


def chi_square_p(observed_lengths, probabilities):
    counts = np.bincount(observed_lengths, minlength=len(probabilities) + 1)[1:]
    assert len(counts) == len(probabilities)  # nothing longer than the maximum
    return stats.chisquare(counts, probabilities * counts.sum()).pvalue


def test_span_masking_lengths_boundaries_and_per_span_corruption():
    tokenizer = austen_tokenizer()
    examples = austen_examples(max_length=512)
    collator = DataCollatorForSpanMasking(tokenizer, seed=0)
    runs, totals = collect_runs(collator, examples, passes=4)
    assert totals["candidates"] >= 4 * 100_000
    assert abs(totals["selected"] / totals["candidates"] - 0.15) < 0.005

    lengths = np.array([r["n_words"] for r in runs])
    target = clipped_geometric_probabilities(0.2, 1, 10)
    first_pass = lengths[: len(lengths) // 4]
    assert len(first_pass) > 3000
    assert chi_square_p(first_pass, target) > 0.01
    # The same test has the power to reject a neighbouring distribution.
    assert chi_square_p(lengths, clipped_geometric_probabilities(0.25, 1, 10)) < 1e-6

    # 80/10/10 is decided per span: a span is all [MASK], or all kept, or all random.
    all_mask = np.array([r["mask"].all() for r in runs])
    all_same = np.array([r["same"].all() for r in runs])
    none_mask = np.array([not r["mask"].any() for r in runs])
    assert (all_mask | none_mask).all()
    random_spans = none_mask & ~all_same
    for fraction, expected in ((all_mask.mean(), 0.8), (all_same.mean(), 0.1), (random_spans.mean(), 0.1)):
        assert abs(fraction - expected) < 0.01


def test_span_boundary_objective_targets():
    tokenizer = austen_tokenizer()
    collator = DataCollatorForSpanMasking(tokenizer, seed=3)
    special = set(tokenizer.all_special_ids)
    checked = skipped = 0
    for batch, original, lengths in collate_all(collator, austen_examples()[:200]):
        labels = batch["labels"].numpy()
        left, right = batch["sbo_left"].numpy(), batch["sbo_right"].numpy()
        relative, sbo_labels = batch["sbo_relative"].numpy(), batch["sbo_labels"].numpy()
        assert left.shape == right.shape == relative.shape == sbo_labels.shape == labels.shape
        for row in range(len(lengths)):
            selected = labels[row] != -100
            for start, end in masked_runs(selected):
                span = slice(start, end)
                assert (relative[row, span] == np.arange(end - start)).all()
                # The boundary tokens are visible (never masked) and inside the row.
                assert labels[row, start - 1] == -100 and labels[row, end] == -100 and end < lengths[row]
                if original[row, start - 1] in special or original[row, end] in special:
                    # A span touching [CLS]/[SEP] gets no SBO target, as in the original code.
                    assert (sbo_labels[row, span] == -100).all() and (left[row, span] == 0).all()
                    skipped += 1
                    continue
                assert (left[row, span] == start - 1).all() and (right[row, span] == end).all()
                assert (sbo_labels[row, span] == original[row, span]).all()
                checked += 1
            unselected = ~selected
            assert (left[row, unselected] == 0).all() and (right[row, unselected] == 0).all()
            assert (relative[row, unselected] == 0).all() and (sbo_labels[row, unselected] == -100).all()
    assert checked > 500 and skipped > 0


def test_ngram_masking_follows_inverse_n():
    tokenizer = austen_tokenizer()
    collator = DataCollatorForNgramMasking(tokenizer, seed=0)
    runs, totals = collect_runs(collator, austen_examples(max_length=512), passes=1)
    assert totals["candidates"] >= 100_000
    assert abs(totals["selected"] / totals["candidates"] - 0.15) < 0.005
    lengths = np.array([r["n_words"] for r in runs])
    assert chi_square_p(lengths, inverse_length_probabilities(3)) > 0.01
    assert chi_square_p(lengths, np.array([0.6, 0.25, 0.15])) < 1e-6
    # ALBERT decides 80/10/10 per token.
    mask = np.concatenate([r["mask"] for r in runs])
    same = np.concatenate([r["same"] for r in runs])
    assert abs(mask.mean() - 0.8) < 0.01 and abs(same.mean() - 0.1) < 0.01


def test_span_collators_on_other_tokenizers_respect_their_word_boundaries():
    """Byte-level BPE and Unigram mark word starts with a space marker (Ġ / ▁)."""
    paragraphs = austen_corpus()["text"][:1000]
    for kind, marker in (("bpe", "Ġ"), ("unigram", "▁")):
        tokenizer = train_tokenizer(kind, paragraphs, 1000)
        encodings = tokenizer(paragraphs[100:600], truncation=True, max_length=128)
        features = [{"input_ids": ids} for ids in encodings["input_ids"] if len(ids) > 20]
        batch = DataCollatorForSpanMasking(tokenizer, seed=0)(features)
        tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        special = set(tokenizer.all_special_ids)
        spans = 0
        for row, feature in enumerate(features):
            ids = feature["input_ids"]
            for start, end in masked_runs(batch["labels"][row].numpy() != -100):
                after_special = ids[start - 1] in special
                assert tokens[ids[start]].startswith(marker) or after_special
                assert end == len(ids) or ids[end] in special or tokens[ids[end]].startswith(marker)
                spans += 1
        assert spans > 50


def test_length_distributions_and_bad_arguments():
    probabilities = clipped_geometric_probabilities(0.2, 1, 10)
    assert probabilities.sum() == pytest.approx(1.0)
    assert probabilities[1] / probabilities[0] == pytest.approx(0.8)
    assert inverse_length_probabilities(3) == pytest.approx(np.array([6, 3, 2]) / 11)
    with pytest.raises(ValueError, match="geometric p"):
        clipped_geometric_probabilities(0.0, 1, 10)
    with pytest.raises(ValueError, match="min_length"):
        clipped_geometric_probabilities(0.2, 5, 2)
    with pytest.raises(ValueError, match="max_sbo_offset"):
        DataCollatorForSpanMasking(austen_tokenizer(), max_sbo_offset=0)
