"""examples/unigram_baseline.py: the unigram floor equals the hand-computed cross-entropy."""

from __future__ import annotations

import math

import pytest
from example_scripts import load_example_script
from test_examples_processing import MINILM
from transformers import AutoTokenizer


def test_unigram_cross_entropy_matches_the_add_one_formula():
    script = load_example_script("unigram_baseline")
    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    cat, dog = (tokenizer(word, add_special_tokens=False)["input_ids"] for word in ("cat", "dog"))
    assert len(cat) == len(dog) == 1  # whole words in MiniLM's vocabulary
    result = script.unigram_cross_entropy(tokenizer, ["cat cat cat dog"], ["cat dog"])
    total, vocabulary = 4, len(tokenizer)
    expected = -(math.log(4 / (total + vocabulary)) + math.log(2 / (total + vocabulary))) / 2
    assert result["unigram_cross_entropy"] == pytest.approx(expected, abs=1e-4)
    assert (result["train_tokens"], result["held_out_tokens"]) == (4, 2)
    with pytest.raises(ValueError, match="no tokens"):
        script.unigram_cross_entropy(tokenizer, ["cat"], [""])
