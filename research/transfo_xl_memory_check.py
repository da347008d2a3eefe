"""Does Transformer-XL's memory work? Two checks (issue 33, the transfo-xl-memory row).

1. ``copy``: a synthetic task only the memory can solve. Each "document" is a random block of
   P tokens repeated R times, so every token after the first block equals the token P positions
   back. Segments of L < P tokens hold no repeat of any of their own tokens: a model reading each
   segment alone (memory 0) can do no better than chance on the repeats (log V), one whose
   memory reaches P positions back can copy them (near-zero loss). Both arms are trained with
   run_clm.py's own loop (``RecurrentTrainer`` over ``SegmentStreamDataset``), then each model
   is evaluated with memory 0 and with its training memory.

       python -m research.transfo_xl_memory_check copy --output docs/transfo_xl_memory/copy_seed0.json --seed 0

2. ``positions``: on a trained checkpoint and real held-out text, the loss at each position
   0..L-1 of a segment with memory 0 against memory M (early positions are the ones the memory can
   help), and the held-out documents' lengths in tokens (memory only helps where a document
   continues past a segment).

       python -m research.transfo_xl_memory_check positions --checkpoint /work/runs/zoo/transfo-xl-mini/pretraining \\
           --corpus pretraining --output docs/transfo_xl_memory/positions_zoo.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import TrainingArguments

from hf_variants.models.transfo_xl import TransfoXLConfig, TransfoXLLMHeadModel
from hf_variants.objectives import SegmentStreamDataset
from hf_variants.objectives.recurrence import split_into_streams
from hf_variants.training.pretraining_data import load_text
from research.example_scripts import example_script

# ------------------------------------------------------------------------------ synthetic copy


def copy_documents(
    num_documents: int, period: int, repeats: int, vocab_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``num_documents`` documents, each a uniformly random block of ``period`` token ids
    (0..vocab_size - 1) repeated ``repeats`` times, back to back. Returns the (N,) stream and an
    (N,) bool array, True where the token repeats the one ``period`` positions back (every block
    of a document but the first)."""
    if period < 1 or repeats < 2 or vocab_size < 2 or num_documents < 1:
        raise ValueError(
            f"need period >= 1, repeats >= 2, vocab_size >= 2 and num_documents >= 1, got "
            f"{period}, {repeats}, {vocab_size}, {num_documents}"
        )
    blocks = rng.integers(0, vocab_size, size=(num_documents, 1, period))
    stream = np.repeat(blocks, repeats, axis=1).reshape(-1)
    repeated = np.tile(np.arange(repeats * period) >= period, num_documents)
    return stream.astype(np.int64), repeated


def tiny_config(vocab_size: int, mem_len: int, hidden_size: int = 64, layers: int = 2) -> TransfoXLConfig:
    """A tiny transfo-xl: ``layers`` layers of width ``hidden_size``, 2 heads, no dropout."""
    return TransfoXLConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        head_dim=hidden_size // 2,
        intermediate_size=2 * hidden_size,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        mem_len=mem_len,
        pad_token_id=None,
    )


def train_recurrent(
    model: TransfoXLLMHeadModel,
    token_ids: np.ndarray,
    segment_length: int,
    batch_size: int,
    max_steps: int,
    learning_rate: float,
    seed: int,
) -> tuple[float, tuple[torch.Tensor, ...] | None]:
    """Train ``model`` in place with run_clm.py's RecurrentTrainer (memory carried from batch to
    batch, as in run_clm.py). Returns the mean training loss and the memory the trainer carried
    after its last step (one (M, B, H) tensor per layer, None at mem_len 0): a test checks it
    holds no gradient."""
    data = SegmentStreamDataset(token_ids, segment_length, batch_size)
    with tempfile.TemporaryDirectory() as output_dir:
        args = TrainingArguments(
            output_dir=output_dir,
            per_device_train_batch_size=batch_size,
            max_steps=max_steps,
            learning_rate=learning_rate,
            warmup_steps=0.05,
            lr_scheduler_type="cosine",
            weight_decay=0.0,
            save_strategy="no",
            report_to="none",
            logging_steps=max(max_steps, 1),
            use_cpu=True,
            seed=seed,
            remove_unused_columns=False,
            disable_tqdm=True,
            dataloader_num_workers=0,
        )
        trainer = example_script("run_clm").RecurrentTrainer(model=model, args=args, train_dataset=data)
        loss = float(trainer.train().training_loss)
        return loss, trainer._memory


@torch.no_grad()
def segment_losses(
    model: TransfoXLLMHeadModel, token_ids: np.ndarray, segment_length: int, batch_size: int, mem_len: int
) -> np.ndarray:
    """Next-token losses (B, S, L) of ``token_ids`` cut into B streams of S segments of L tokens,
    read segment by segment with each layer's last ``mem_len`` positions carried (0: every
    segment alone), as run_clm.memory_perplexity reads held-out text. Entry (b, s, i) is the
    loss of stream b's token s * L + i + 1 predicted at segment position i."""
    model.eval()
    data = SegmentStreamDataset(token_ids, segment_length, batch_size)
    memory, losses = None, []
    for inputs, targets in data.batches():
        outputs = model(input_ids=inputs.to(model.device), mems=memory, mem_len=mem_len)
        memory = outputs.mems
        nll = F.cross_entropy(outputs.logits.float().transpose(1, 2), targets.to(model.device), reduction="none")
        losses.append(nll.cpu().numpy())
    return np.stack(losses, axis=1)


def target_layout(values: np.ndarray, segment_length: int, batch_size: int) -> np.ndarray:
    """An (N,) per-token integer array laid out as ``segment_losses``' targets: (B, S, L)."""
    streams = split_into_streams(values.astype(np.int64), batch_size)
    segments = (streams.shape[1] - 1) // segment_length
    return streams[:, 1 : segments * segment_length + 1].reshape(batch_size, segments, segment_length)


def target_mask(mask: np.ndarray, segment_length: int, batch_size: int) -> np.ndarray:
    """An (N,) per-token bool array laid out as ``segment_losses``' targets: (B, S, L)."""
    return target_layout(mask, segment_length, batch_size).astype(bool)


def copy_check(
    seed: int = 0,
    period: int = 24,
    segment_length: int = 16,
    memory_length: int = 32,
    repeats: int = 16,
    vocab_size: int = 32,
    batch_size: int = 16,
    max_steps: int = 300,
    learning_rate: float = 3e-3,
    hidden_size: int = 64,
    layers: int = 2,
    train_documents: int = 500,
    eval_documents: int = 50,
) -> dict:
    """Train a memory arm (mem_len ``memory_length``) and a no-memory arm (mem_len 0) on copy
    documents, same seed, data and schedule, and evaluate both with memory 0 and
    ``memory_length`` on fresh documents. Losses in nats; chance is log(vocab_size)."""
    if segment_length >= period:
        raise ValueError(
            f"segment_length ({segment_length}) must be < period ({period}): otherwise a segment "
            "holds its own repeats and the task does not need the memory"
        )
    if memory_length < period:
        raise ValueError(f"memory_length ({memory_length}) must be >= period ({period}) to reach every repeat")
    rng = np.random.default_rng(seed)
    train_ids, _ = copy_documents(train_documents, period, repeats, vocab_size, rng)
    eval_ids, repeated = copy_documents(eval_documents, period, repeats, vocab_size, rng)
    mask = target_mask(repeated, segment_length, batch_size)
    result = {
        "task": "copy",
        "seed": seed,
        "period": period,
        "segment_length": segment_length,
        "repeats": repeats,
        "vocab_size": vocab_size,
        "chance_loss": math.log(vocab_size),
        "batch_size": batch_size,
        "max_steps": max_steps,
        "learning_rate": learning_rate,
        "hidden_size": hidden_size,
        "layers": layers,
        "train_tokens": int(len(train_ids)),
        "eval_tokens": int(mask.size),
        "eval_repeat_targets": int(mask.sum()),
        "arms": {},
    }
    for training_mem_len in (memory_length, 0):
        torch.manual_seed(seed)
        model = TransfoXLLMHeadModel(tiny_config(vocab_size, training_mem_len, hidden_size, layers))
        started = time.time()
        train_loss, _ = train_recurrent(model, train_ids, segment_length, batch_size, max_steps, learning_rate, seed)
        arm = {
            "training_mem_len": training_mem_len,
            "train_loss": train_loss,
            "train_seconds": round(time.time() - started, 1),
            "eval": {},
        }
        for eval_mem_len in sorted({0, memory_length}):
            losses = segment_losses(model, eval_ids, segment_length, batch_size, eval_mem_len)
            arm["eval"][str(eval_mem_len)] = {
                "repeat_loss": float(losses[mask].mean()),  # tokens equal to the one `period` back
                "first_block_loss": float(losses[~mask].mean()),  # fresh random tokens: chance at best
                # position i of a segment: its memory arm reaches back M + i positions, its no-memory arm i
                "repeat_loss_by_position": [float(losses[..., i][mask[..., i]].mean()) for i in range(segment_length)],
            }
        result["arms"][f"trained_mem{training_mem_len}"] = arm
    return result


# ------------------------------------------------------------------------ real text, per position


def document_offsets(token_ids: np.ndarray, separator_id: int | None) -> np.ndarray:
    """(N,) each token's position inside its document: 0 right after a separator (or at the
    start), counting up; the separator itself closes its document."""
    offsets = np.arange(len(token_ids))
    if separator_id is None:
        return offsets
    starts = np.zeros(len(token_ids), dtype=np.int64)
    boundaries = np.flatnonzero(token_ids == separator_id) + 1
    starts[boundaries[boundaries < len(token_ids)]] = boundaries[boundaries < len(token_ids)]
    return offsets - np.maximum.accumulate(starts)


def length_summary(lengths: list[int], thresholds: tuple[int, ...]) -> dict:
    """Document lengths in tokens: count, quantiles, and for each threshold how many documents
    are longer and what share of all tokens lies in them."""
    values = np.asarray(lengths)
    total = int(values.sum())
    return {
        "documents": int(len(values)),
        "tokens": total,
        "min": int(values.min()),
        "max": int(values.max()),
        "median": float(np.median(values)),
        "quartiles": [float(q) for q in np.percentile(values, [25, 75])],
        "longer_than": {
            str(t): {"documents": int((values > t).sum()), "share_of_tokens": float(values[values > t].sum() / total)}
            for t in thresholds
        },
    }


def position_profile(
    model, token_ids: np.ndarray, separator_id: int | None, segment_length: int, batch_size: int, mem_lens: list[int]
) -> dict:
    """For each memory length: held-out loss and perplexity, the mean loss at each segment
    position 0..L-1, and the loss split by whether the target's document began before its
    segment (the memory can hold its earlier text) or inside it (the memory holds only other
    documents)."""
    offsets = target_layout(document_offsets(token_ids, separator_id), segment_length, batch_size)
    # The target at segment position i is stream token s * L + i + 1; its document began at
    # s * L + i + 1 - offset, before the segment (so the memory can hold its text) when offset > i + 1.
    continues = offsets > np.arange(segment_length) + 1
    profile = {
        "segment_length": segment_length,
        "batch_size": batch_size,
        "targets": int(offsets.size),
        "targets_whose_document_began_before_the_segment": int(continues.sum()),
        "by_mem_len": {},
    }
    for mem_len in mem_lens:
        losses = segment_losses(model, token_ids, segment_length, batch_size, mem_len)
        profile["by_mem_len"][str(mem_len)] = {
            "loss": float(losses.mean()),
            "perplexity": math.exp(float(losses.mean())),
            "loss_by_position": [float(v) for v in losses.mean(axis=(0, 1))],
            "loss_document_began_before_segment": float(losses[continues].mean()),
            "loss_document_began_in_segment": float(losses[~continues].mean()) if (~continues).any() else None,
        }
    return profile


def positions_check(
    checkpoint: str,
    corpus: str,
    segment_length: int,
    batch_size: int,
    mem_lens: list[int] | None,
    max_eval_tokens: int | None,
    max_documents: int | None,
    validation_fraction: float,
) -> dict:
    """``position_profile`` of a run_clm.py checkpoint and of its random-weight twin (same config,
    fresh weights: memory gains of a model that learnt nothing are the floor) on the held-out
    documents run_clm.py evaluates (``load_text`` with the same corpus arguments), and those
    documents' lengths in tokens."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import hf_variants  # noqa: F401  (registers hfv_transfo_xl with the Auto classes)

    run_clm = example_script("run_clm")
    from hf_variants.objectives import corpus_document_token_ids, document_separator_id

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    # Not hf_variants.load_pretrained: its WEIGHTS table has no hfv_transfo_xl entry (it refuses
    # this model type); the Auto class reads the folder directly (import hf_variants registers it).
    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    model.float()  # losses in fp32 whatever dtype the checkpoint was saved in (the zoo saves fp32)
    torch.manual_seed(0)
    twin = AutoModelForCausalLM.from_config(model.config)
    mem_lens = mem_lens or [0, model.config.mem_len]
    args = run_clm.ClmArguments(corpus=corpus, max_documents=max_documents, validation_fraction=validation_fraction)
    _, held_out = load_text(args, minimum_documents=1)
    lengths = [len(ids) for ids in corpus_document_token_ids(held_out, tokenizer)]
    token_ids = run_clm.token_stream(held_out, tokenizer, max_eval_tokens)
    separator = document_separator_id(tokenizer)
    return {
        "task": "positions",
        "checkpoint": checkpoint,
        "corpus": corpus,
        "max_documents": max_documents,
        "validation_fraction": validation_fraction,
        "max_eval_tokens": max_eval_tokens,
        "training_mem_len": model.config.mem_len,
        "mem_lens": mem_lens,
        "held_out_document_lengths": length_summary(lengths, (segment_length, 64, 128, 256, 512)),
        "trained": position_profile(model, token_ids, separator, segment_length, batch_size, mem_lens),
        "random_twin": position_profile(twin, token_ids, separator, segment_length, batch_size, mem_lens),
    }


def held_out_lengths(
    tokenizer_path: str,
    corpus: str,
    max_documents: int | None,
    validation_fraction: float,
    thresholds: tuple[int, ...] = (64, 128, 256, 512),
) -> dict:
    """``length_summary`` of the documents run_clm.py holds out of ``corpus``, in tokens of the
    tokenizer at ``tokenizer_path``."""
    from transformers import AutoTokenizer

    run_clm = example_script("run_clm")
    from hf_variants.objectives import corpus_document_token_ids

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    args = run_clm.ClmArguments(corpus=corpus, max_documents=max_documents, validation_fraction=validation_fraction)
    _, held_out = load_text(args, minimum_documents=1)
    lengths = [len(ids) for ids in corpus_document_token_ids(held_out, tokenizer)]
    return {
        "task": "lengths",
        "tokenizer": tokenizer_path,
        "corpus": corpus,
        "max_documents": max_documents,
        "validation_fraction": validation_fraction,
        "held_out_document_lengths": length_summary(lengths, thresholds),
    }


# ------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    copy = commands.add_parser("copy", help="the synthetic copy task, memory vs no memory")
    copy.add_argument("--seed", type=int, default=0)
    copy.add_argument("--period", type=int, default=24)
    copy.add_argument("--segment_length", type=int, default=16)
    copy.add_argument("--memory_length", type=int, default=32)
    copy.add_argument("--repeats", type=int, default=16)
    copy.add_argument("--max_steps", type=int, default=300)
    copy.add_argument("--learning_rate", type=float, default=3e-3)
    copy.add_argument("--output", type=Path, required=True)
    held_out = argparse.ArgumentParser(add_help=False)  # the held-out text, as run_clm.py splits it
    held_out.add_argument("--corpus", default="pretraining", help="as run_clm.py's --corpus")
    held_out.add_argument("--max_documents", type=int, default=None)
    held_out.add_argument("--validation_fraction", type=float, default=0.05)
    positions = commands.add_parser(
        "positions", parents=[held_out], help="per-position held-out loss of a checkpoint, memory vs none"
    )
    positions.add_argument("--checkpoint", required=True, help="a run_clm.py output folder (weights + tokenizer)")
    positions.add_argument("--segment_length", type=int, required=True, help="the checkpoint's training segments")
    positions.add_argument("--batch_size", type=int, default=16, help="parallel held-out streams")
    positions.add_argument("--mem_lens", default=None, help="comma-separated; default: 0 and the training mem_len")
    positions.add_argument("--max_eval_tokens", type=int, default=None)
    positions.add_argument("--output", type=Path, required=True)
    lengths = commands.add_parser("lengths", parents=[held_out], help="the held-out documents' lengths in tokens")
    lengths.add_argument("--tokenizer", required=True, help="a tokenizer folder")
    lengths.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.command == "copy":
        result = copy_check(
            args.seed,
            args.period,
            args.segment_length,
            args.memory_length,
            args.repeats,
            max_steps=args.max_steps,
            learning_rate=args.learning_rate,
        )
    elif args.command == "lengths":
        result = held_out_lengths(args.tokenizer, args.corpus, args.max_documents, args.validation_fraction)
    else:
        mem_lens = [int(part) for part in args.mem_lens.split(",")] if args.mem_lens else None
        result = positions_check(
            args.checkpoint,
            args.corpus,
            args.segment_length,
            args.batch_size,
            mem_lens,
            args.max_eval_tokens,
            args.max_documents,
            args.validation_fraction,
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("arms", "trained", "random_twin")}, indent=1))
    for name, arm in result.get("arms", {}).items():
        print(name, {m: round(e["repeat_loss"], 3) for m, e in arm["eval"].items()}, arm["train_seconds"], "s")
    for name in ("trained", "random_twin"):
        for mem_len, row in result.get(name, {}).get("by_mem_len", {}).items():
            print(name, "memory", mem_len, "perplexity", round(row["perplexity"], 2))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
