"""research/diagnostics/unigram_baseline.py: the unigram level of a held-out MLM loss, by hand and on real text."""

import math

import numpy as np
import pytest

from research.diagnostics import unigram_baseline


def test_cross_entropy_by_hand():
    # Training counts (3, 1, 0) smoothed by one over 3 types: p = (4/7, 2/7, 1/7);
    # held-out tokens: two of type 0 and one of type 2.
    loss = unigram_baseline.unigram_cross_entropy(np.array([3, 1, 0]), np.array([2, 0, 1]))
    assert loss == pytest.approx(-(2 * math.log(4 / 7) + math.log(1 / 7)) / 3)
    with pytest.raises(ValueError, match="no tokens"):
        unigram_baseline.unigram_cross_entropy(np.array([3, 1, 0]), np.array([0, 0, 0]))


def test_real_text_split_and_tokenizer(tmp_path):
    from hf_variants.tokenization import train_tokenizer

    texts = ["It is a truth universally acknowledged.", "She was the youngest of the two daughters."] * 20
    tokenizer = train_tokenizer("wordpiece-uncased", iter(texts), 200)
    tokenizer.save_pretrained(tmp_path / "tok")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(texts) + "\n")  # one paragraph per document
    results = unigram_baseline.main(
        ["--train_file", str(corpus), "--tokenizer_name", str(tmp_path / "tok"), "--validation_fraction", "0.1"]
    )
    # 40 documents: the last 4 held out; special tokens are never counted.
    assert results["held_out_tokens"] > 0 and results["train_tokens"] > 8 * results["held_out_tokens"]
    assert math.log(1) < results["unigram_loss"] < math.log(len(tokenizer))
