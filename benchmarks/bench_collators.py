"""Throughput of our masking collators against transformers' on the same real tokenized text.

    python benchmarks/bench_collators.py            # 4096 examples, 7 repetitions
    python benchmarks/bench_collators.py --quick    # 1024 examples, 5 repetitions

Data: Jane Austen's novels (`hf_variants.data.load_corpus("austen")`) tokenized by a WordPiece
tokenizer trained on the corpus, cut into rows of 128 tokens.
Each collator gets the columns it works from: transformers' MLM collator `input_ids` +
`special_tokens_mask` (its fast path), its whole-word variant also `offset_mapping`; ours
`input_ids` only (special tokens and word starts come from the vocabulary). Batches of 32 on
one thread; each repetition runs every collator once over all examples, in an interleaved
order, after one warm-up pass; we report the median examples/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import DataCollatorForLanguageModeling  # noqa: E402

from hf_variants.data import load_corpus  # noqa: E402
from hf_variants.objectives import DataCollatorForMaskedLM, DataCollatorForNgramMasking, DataCollatorForSpanMasking  # noqa: E402
from hf_variants.tokenization import train_tokenizer  # noqa: E402


def build_examples(count: int, max_length: int):
    """`count` full rows of `max_length` tokens: the corpus's token stream cut into chunks (as
    FULL-SENTENCES packing does), each wrapped in [CLS] ... [SEP]. Rows have equal length
    because transformers' whole-word collator cannot pad `offset_mapping`."""
    corpus = load_corpus("austen")
    tokenizer = train_tokenizer("wordpiece-uncased", corpus["text"], 8000)
    encoded = tokenizer(
        list(corpus["text"]),
        add_special_tokens=False,
        return_offsets_mapping=True,
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    stream = [
        (token, offset)
        for ids, offsets in zip(encoded["input_ids"], encoded["offset_mapping"])
        for token, offset in zip(ids, offsets)
    ]
    width = max_length - 2
    if len(stream) < count * width:
        raise ValueError(f"the corpus has {len(stream)} tokens, fewer than {count} rows of {width}")
    rows = []
    for start in range(0, count * width, width):
        chunk = stream[start : start + width]
        rows.append(
            {
                "input_ids": [tokenizer.cls_token_id] + [t for t, _ in chunk] + [tokenizer.sep_token_id],
                "special_tokens_mask": [1] + [0] * len(chunk) + [1],
                "offset_mapping": [(0, 0)] + [o for _, o in chunk] + [(0, 0)],
            }
        )
    return tokenizer, rows


def throughput(collator, features, batch_size: int) -> float:
    start = time.perf_counter()
    for index in range(0, len(features), batch_size):
        collator(features[index : index + batch_size])
    return len(features) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1024 examples, 5 repetitions")
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--repetitions", type=int, default=None)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_length", type=int, default=128)
    args = parser.parse_args()
    count = args.examples or (1024 if args.quick else 4096)
    repetitions = args.repetitions or (5 if args.quick else 7)
    if repetitions < 5:
        raise ValueError("use at least 5 repetitions (the median of fewer is too noisy)")
    torch.set_num_threads(1)

    tokenizer, rows = build_examples(count, args.max_length)
    ids_only = [{"input_ids": r["input_ids"]} for r in rows]
    with_specials = [{"input_ids": r["input_ids"], "special_tokens_mask": r["special_tokens_mask"]} for r in rows]
    with_offsets = [dict(r) for r in rows]
    runs = {
        "ours MLM": (DataCollatorForMaskedLM(tokenizer, seed=0), ids_only),
        "transformers MLM": (DataCollatorForLanguageModeling(tokenizer, seed=0), with_specials),
        "ours whole-word": (DataCollatorForMaskedLM(tokenizer, whole_word_mask=True, seed=0), ids_only),
        "transformers whole-word": (
            DataCollatorForLanguageModeling(tokenizer, whole_word_mask=True, seed=0),
            with_offsets,
        ),
        "ours SpanBERT spans": (DataCollatorForSpanMasking(tokenizer, seed=0), ids_only),
        "ours ALBERT n-grams": (DataCollatorForNgramMasking(tokenizer, seed=0), ids_only),
    }
    for collator, features in runs.values():  # warm-up
        throughput(collator, features, args.batch_size)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for repetition in range(repetitions):
        # Rotate the order so no collator always runs first (caches, frequency scaling).
        for name in names[repetition % len(names) :] + names[: repetition % len(names)]:
            collator, features = runs[name]
            samples[name].append(throughput(collator, features, args.batch_size))
    median = {name: statistics.median(values) for name, values in samples.items()}

    print(
        f"{count} rows of {args.max_length} Austen tokens, batch {args.batch_size}, 1 thread, "
        f"median of {repetitions} interleaved repetitions"
    )
    print()
    print("| collator | ours (examples/s) | transformers (examples/s) | ratio ours / transformers |")
    print("|---|---:|---:|---:|")
    for label, ours, theirs in (
        ("MLM 80/10/10", "ours MLM", "transformers MLM"),
        ("whole-word MLM", "ours whole-word", "transformers whole-word"),
    ):
        print(f"| {label} | {median[ours]:,.0f} | {median[theirs]:,.0f} | {median[ours] / median[theirs]:.2f} |")
    for label, ours in (
        ("SpanBERT span masking + SBO targets", "ours SpanBERT spans"),
        ("ALBERT n-gram masking", "ours ALBERT n-grams"),
    ):
        print(f"| {label} | {median[ours]:,.0f} | (none) | |")


if __name__ == "__main__":
    main()
