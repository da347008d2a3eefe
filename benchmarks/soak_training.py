"""Long-run soak: train a mini model for many steps and check that memory does not grow.

Two measures after a warm-up (allocator pools, autograd and optimizer state all exist by then):

- resident set size (RSS, /proc/self/statm) sampled every ``--sample-every`` steps; the bound is on
  the growth from the end of warm-up to the end (and on the largest sample), in MiB;
- live Python objects counted by type (``gc.get_objects()``) at the end of warm-up and at the end:
  a leak of Python objects (outputs kept in a list, hooks registered per step, caches keyed by
  tensors) shows as a type whose count grows with the steps.

Each step is a real MLM training step (forward with labels, backward, AdamW, zero_grad) on a batch
of random length with random padding, so the padding-free path, the padded path and their caches
all run. Command (the README's numbers):

    PYTHONPATH=. python benchmarks/soak_training.py --steps 1000 --warmup 200
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections import Counter

import torch

import hf_variants
from hf_variants import BertConfig

MIB = 2**20
TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    padding_free=True,
)


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux /proc)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MIB


def live_objects() -> Counter:
    """Live objects tracked by the garbage collector, by type name (after a full collection)."""
    gc.collect()
    return Counter(type(obj).__name__ for obj in gc.get_objects())


def random_batch(generator: torch.Generator, vocab_size: int, batch: int = 8, longest: int = 48) -> dict:
    length = int(torch.randint(8, longest + 1, (1,), generator=generator))
    lengths = torch.randint(1, length + 1, (batch,), generator=generator)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
    ids = torch.randint(1, vocab_size, (batch, length), generator=generator).masked_fill(mask == 0, 0)
    labels = ids.masked_fill((torch.rand(batch, length, generator=generator) > 0.15) | (mask == 0), -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def soak(steps: int, warmup: int, sample_every: int = 50, seed: int = 0, **config_overrides) -> dict:
    """Train ``steps`` MLM steps; returns the RSS samples and the object-count growth after warm-up."""
    torch.manual_seed(seed)
    config = BertConfig(**{**TINY, **config_overrides})
    model = hf_variants.BertForMaskedLM(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    samples, losses = [], []
    objects_at_warmup = None
    start = time.monotonic()
    for step in range(1, steps + 1):
        loss = model(**random_batch(generator, config.vocab_size)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step == warmup:
            objects_at_warmup = live_objects()
        if step == (warmup + steps) // 2:
            objects_at_middle = live_objects()
        if step >= warmup and (step - warmup) % sample_every == 0:
            samples.append((step, round(rss_mib(), 2)))
    del loss
    objects_at_end = live_objects()

    def growth(before: Counter, after: Counter) -> dict[str, int]:
        changed = {name: after[name] - before[name] for name in after | before if after[name] != before[name]}
        return dict(sorted(changed.items(), key=lambda item: -abs(item[1])))

    rss_after_warmup = samples[0][1]
    return {
        "steps": steps,
        "warmup": warmup,
        "seconds": round(time.monotonic() - start, 1),
        "rss_mib_samples": samples,
        "rss_growth_mib": round(samples[-1][1] - rss_after_warmup, 2),
        "rss_max_over_warmup_mib": round(max(s[1] for s in samples) - rss_after_warmup, 2),
        # A leak grows in both halves; a one-off (a lazily built cache) only in the first.
        "object_growth_first_half": growth(objects_at_warmup, objects_at_middle),
        "object_growth_second_half": growth(objects_at_middle, objects_at_end),
        "live_objects_at_warmup": sum(objects_at_warmup.values()),
        "live_objects_at_end": sum(objects_at_end.values()),
        "loss_first_last": (round(losses[0], 3), round(sum(losses[-50:]) / min(50, len(losses)), 3)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--sample-every", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(json.dumps(soak(args.steps, args.warmup, args.sample_every), indent=1))


if __name__ == "__main__":
    main()
