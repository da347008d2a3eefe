"""The unigram floor of a held-out MLM loss: the cross-entropy, per held-out token of the
pretraining corpus, of a model that knows only how often each token occurs in the training split
(add-one smoothed), under a run's own tokenizer. An encoder whose masked-LM loss sits near this
number has learned token frequencies and little context (docs/replication.md, "What this scale
can show")::

    python examples/unigram_baseline.py --tokenizer_name runs/replication/albert-sharing/none-seed0 \
        --output docs/replication_diagnostics/unigram-albert-mini.json

The held-out MLM loss of run_pretraining is over masked positions (80% [MASK], 10% a random
token, 10% kept), where kept tokens are visible, so it can fall somewhat below this floor before
the model uses context.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
from pathlib import Path

from transformers import AutoTokenizer

from hf_variants.data import load_pretraining_corpus


def unigram_cross_entropy(tokenizer, train_texts: list[str], held_out_texts: list[str]) -> dict:
    """Cross-entropy (nats per token) of add-one smoothed train-split frequencies on held-out text."""
    counts: collections.Counter[int] = collections.Counter()
    for text in train_texts:
        counts.update(tokenizer(text, add_special_tokens=False)["input_ids"])
    total, vocabulary = sum(counts.values()), len(tokenizer)
    negative_log_likelihood, held_out_tokens = 0.0, 0
    for text in held_out_texts:
        for token in tokenizer(text, add_special_tokens=False)["input_ids"]:
            negative_log_likelihood -= math.log((counts[token] + 1) / (total + vocabulary))
            held_out_tokens += 1
    if not held_out_tokens:
        raise ValueError("the held-out texts have no tokens")
    return {"unigram_cross_entropy": round(negative_log_likelihood / held_out_tokens, 4), "train_tokens": total,
            "held_out_tokens": held_out_tokens, "vocabulary_size": vocabulary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer_name", required=True, help="a run folder (or tokenizer) whose tokenizer to use")
    parser.add_argument("--train_documents", type=int, default=3000,
                        help="training-split documents counted (the first N of the fixed shuffle; default 3000)")
    parser.add_argument("--output", default=None, help="write the result as JSON here")
    args = parser.parse_args()
    if args.train_documents < 1:
        raise ValueError(f"--train_documents must be >= 1, got {args.train_documents}")
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer_name)
    corpus = load_pretraining_corpus()
    train = corpus["train"].select(range(min(args.train_documents, corpus["train"].num_rows)))["text"]
    result = {"tokenizer": str(args.tokenizer_name), "train_documents": len(train),
              "held_out_documents": corpus["validation"].num_rows,
              **unigram_cross_entropy(tokenizer, train, corpus["validation"]["text"])}
    print(json.dumps(result, indent=1))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
