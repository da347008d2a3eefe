"""The objectives registry: every objective run_pretraining trains with is one declared entry, and
parsing, rates, input formats and collators come from it."""

from __future__ import annotations

import pytest
import torch

from hf_variants.objectives.registry import OBJECTIVES, Objective, parse_objective, register_objective
from tests.common.austen_data import austen_examples, austen_tokenizer


def test_the_papers_objectives_are_registered_with_their_rates_and_sentence_tasks():
    assert set(OBJECTIVES) == {"mlm", "span", "ngram", "rtd", "plm", "tlm", "span-corruption"}
    assert OBJECTIVES["plm"].rate(None) == pytest.approx(1 / 6)  # XLNet: K = 6
    assert OBJECTIVES["mlm"].rate(None) == 0.15 and OBJECTIVES["mlm"].rate(0.3) == 0.3

    class ElectraLargeLike:
        mlm_probability = 0.25

    assert OBJECTIVES["rtd"].rate(None, ElectraLargeLike()) == 0.25  # the config's rate beats the paper's default
    objective, task = parse_objective("ngram+sop")
    assert (objective.name, task) == ("ngram", "sop")
    assert parse_objective("span-corruption")[0].rows is not None
    assert [name for name, o in OBJECTIVES.items() if o.static_masking] == ["mlm", "span", "ngram"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("mlm+xyz", "unknown objective"),
        ("bogus", "unknown objective"),
        ("rtd+nsp", "has no sentence task"),
        ("tlm+sop", "has no sentence task"),
    ],
)
def test_bad_objectives_are_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        parse_objective(text)


def test_input_formats_follow_the_sentence_task():
    mlm = OBJECTIVES["mlm"]
    assert mlm.input_format(None, None) == "full-sentences" and mlm.input_format(None, "nsp") == "segment-pair"
    with pytest.raises(ValueError, match="does not fit objective"):
        mlm.input_format("segment-pair", None)
    with pytest.raises(ValueError, match="builds its own rows"):
        OBJECTIVES["tlm"].input_format("full-sentences", None)


def test_registering_twice_or_with_a_plus_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        register_objective(OBJECTIVES["mlm"])
    with pytest.raises(ValueError, match="separates the sentence task"):
        register_objective(Objective("a+b", OBJECTIVES["mlm"].collator, "bad"))


@pytest.mark.parametrize("name", ["mlm", "span", "ngram", "rtd"])
def test_each_packed_format_objective_collates_real_rows_at_its_rate(name):
    tokenizer = austen_tokenizer()
    rows = [dict(e) for e in austen_examples(max_length=128)[:64]]

    class SpanBertLike:
        max_span_length = 10

    collator = OBJECTIVES[name].make_collator(tokenizer, whole_word_mask=True, model_config=SpanBertLike(), seed=0)
    batch = collator(rows)
    predicted = (batch["labels"] != -100).sum().item()
    real = sum(len(r["input_ids"]) - sum(r["special_tokens_mask"]) for r in rows)
    assert 0.10 < predicted / real < 0.20  # 15% of the real tokens, whatever the unit (tokens, words, spans)
    assert batch["input_ids"].dtype == torch.long and batch["input_ids"].shape == batch["labels"].shape
    if name == "span":  # the config's SBO table size reached the collator
        assert collator.max_sbo_offset == 10
        assert batch["sbo_relative"][batch["sbo_labels"] != -100].max() < 10
