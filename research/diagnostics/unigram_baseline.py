"""The unigram level of a pretraining run's held-out MLM loss: what a model that ignores the context
scores.

A masked-LM that has learnt only token frequencies predicts every masked token with the training
text's unigram distribution; its loss is the cross-entropy of that distribution on the held-out
tokens. `run_pretraining.py` reports the held-out MLM loss on a uniform 15% sample of the
non-special tokens, so this number (over all of them) is the level its loss must fall below before
the model uses context at all.

    python -m research.diagnostics.unigram_baseline --train_file corpus.txt --tokenizer_name <run_pretraining output>

The split is run_pretraining's (`--validation_fraction` of the documents, the last ones, held out);
counts are add-one smoothed over the tokenizer's vocabulary. Prints JSON: the unigram cross-entropy
(nats), its perplexity, and the token counts.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from transformers import AutoTokenizer

import hf_variants  # noqa: F401  (registers the model types, so the tokenizer folder loads without remote code)
from hf_variants.training.pretraining_data import load_text


def token_counts(texts: list[str], tokenizer, vocabulary_size: int) -> np.ndarray:
    """(vocabulary_size,) counts of the non-special tokens of `texts`."""
    ids = np.concatenate(
        [np.asarray(row, dtype=np.int64) for row in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]
    )
    counts = np.bincount(ids, minlength=vocabulary_size)
    counts[tokenizer.all_special_ids] = 0
    return counts


def unigram_cross_entropy(train_counts: np.ndarray, held_out_counts: np.ndarray) -> float:
    """Cross-entropy (nats) of the add-one smoothed training unigram distribution on the held-out tokens.

    Both arguments are (vocabulary_size,) count vectors; raises ValueError when the held-out text is empty.
    """
    if held_out_counts.sum() == 0:
        raise ValueError("the held-out text has no tokens")
    probabilities = (train_counts + 1) / (train_counts.sum() + len(train_counts))
    return float(-(held_out_counts * np.log(probabilities)).sum() / held_out_counts.sum())


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer_name", required=True, help="a tokenizer folder (a run_pretraining output)")
    parser.add_argument("--train_file", help="the run's --train_file")
    parser.add_argument("--corpus", help="or the run's --corpus")
    parser.add_argument("--dataset_name", help="or the run's --dataset_name (a Hub dataset with a text column)")
    parser.add_argument("--dataset_config_name", default=None)
    parser.add_argument("--max_documents", type=int, default=None)
    parser.add_argument("--validation_fraction", type=float, default=0.05)
    args = parser.parse_args(argv)
    train_text, held_out_text = load_text(args, minimum_documents=1)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer_name)
    train_counts = token_counts(train_text["text"], tokenizer, len(tokenizer))
    held_out_counts = token_counts(held_out_text["text"], tokenizer, len(tokenizer))
    loss = unigram_cross_entropy(train_counts, held_out_counts)
    results = {
        "unigram_loss": loss,
        "unigram_perplexity": math.exp(loss),
        "train_tokens": int(train_counts.sum()),
        "held_out_tokens": int(held_out_counts.sum()),
    }
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
