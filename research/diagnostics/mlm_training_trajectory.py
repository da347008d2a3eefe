"""Ours vs transformers over a stretch of MLM training: same initial weights, same batches, no
dropout, same optimiser; the training losses step by step.

A one-batch gradient comparison (the parity tests) cannot see what only shows over many steps:
parameter groups, the tied decoder's update, optimiser state. Here both models train side by side
for `--steps` steps of BERT's MLM (15%, 80/10/10) on the held-out-free training split of the
pretraining corpus, and the script reports both loss curves and their largest difference.

    python -m research.diagnostics.mlm_training_trajectory --checkpoint runs/bert-mini --steps 100 --output trajectory.json

`--checkpoint` gives the config and tokenizer (a `run_pretraining.py` output folder); the weights
are a fresh seeded initialisation, converted to transformers' `BertForMaskedLM` for the other arm.
fp32, AdamW (lr `--learning_rate`, 10% warm-up then linear decay, weight decay 0.01 on every
parameter, clipping at 1.0) written out here identically for both.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

import hf_variants  # noqa: F401
from hf_variants.conversion import to_transformers
from hf_variants.models.bert.configuration_bert import BertConfig
from hf_variants.models.bert.modeling_bert import BertForMaskedLM
from hf_variants.objectives.mlm import DataCollatorForMaskedLM
from research.diagnostics.context_use import corpus_rows  # one row builder for both scripts


def optimiser(model: torch.nn.Module, learning_rate: float, steps: int):
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01, eps=1e-6)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (steps - step) / steps)
    )
    return optimizer, schedule


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="config + tokenizer folder (run_pretraining output)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output")
    args = parser.parse_args(argv)
    if args.steps <= 0 or args.batch_size <= 0:
        raise ValueError("--steps and --batch_size must be positive")
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    # Dropout off: the two implementations draw their dropout masks in different orders, so with it on
    # the same seed gives different masks and only averages over many steps could agree.
    config = BertConfig.from_pretrained(args.checkpoint, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    ours = BertForMaskedLM(config)
    theirs = to_transformers(ours)  # a copy with transformers' classes and key names
    arms = {"ours": ours, "transformers": theirs}
    optimisers = {name: optimiser(model, args.learning_rate, args.steps) for name, model in arms.items()}
    rows = corpus_rows(tokenizer, "train", args.steps * args.batch_size, args.length)
    collator = DataCollatorForMaskedLM(tokenizer, 0.15, seed=0)
    losses: dict[str, list[float]] = {name: [] for name in arms}
    seconds = dict.fromkeys(arms, 0.0)
    for step in range(args.steps):
        batch = collator(rows[step * args.batch_size : (step + 1) * args.batch_size])
        for name, model in arms.items():
            model.train()
            started = time.perf_counter()
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer, schedule = optimisers[name]
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            seconds[name] += time.perf_counter() - started
            losses[name].append(loss.item())
        if (step + 1) % 10 == 0:
            print(
                f"step {step + 1}: ours {losses['ours'][-1]:.5f}  transformers {losses['transformers'][-1]:.5f}",
                flush=True,
            )
    differences = [abs(a - b) for a, b in zip(losses["ours"], losses["transformers"])]
    result = {
        "checkpoint": args.checkpoint,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "length": args.length,
        "learning_rate": args.learning_rate,
        "threads": args.threads,
        "torch": torch.__version__,
        "max_abs_loss_difference": max(differences),
        "max_abs_loss_difference_step": differences.index(max(differences)) + 1,
        "final_loss": {name: values[-1] for name, values in losses.items()},
        "mean_loss_last_10": {name: sum(values[-10:]) / len(values[-10:]) for name, values in losses.items()},
        "seconds": seconds,
        "losses": losses,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "losses"}, indent=1))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
