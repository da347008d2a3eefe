"""Train a causal language model (GPT or Transformer-XL) from scratch on real text, with Trainer.

    python examples/run_clm.py --model_name_or_path gpt2-mini --corpus austen \\
        --output_dir outputs/gpt2-mini-austen --max_steps 2000 --per_device_train_batch_size 16
    python examples/run_clm.py --model_name_or_path transfo-xl-mini --corpus austen --max_seq_length 64 \\
        --eval_mem_lens 0,64,256 --output_dir outputs/txl-mini-austen --max_steps 2000

`--model_name_or_path` is a named flavour in `modeling_configs/` (`gpt2-mini`, `openai-gpt`,
`transfo-xl-mini`, ...: random weights) or a checkpoint folder this script saved (training goes
on from its weights). Text, held-out split and tokenizer work as in `run_pretraining.py`
(`--corpus austen|wikipedia|lee` or `--train_file`; the last `--validation_fraction` of the
documents held out; the variant's spec tokenizer trained on the training text unless
`--tokenizer_name`).

- **GPT** trains on packed rows of `--max_seq_length` tokens: documents back to back, each
  followed by EOS, positions restarting and attention kept inside each document
  (`hf_variants.objectives.DataCollatorForPackedCausalLM`), so nothing is spent on padding.
- **Transformer-XL** trains with segment-level recurrence as the paper: the token stream is cut
  into one stream per row, batch t holds segment t of every stream
  (`hf_variants.objectives.SegmentStreamDataset`; under DDP each process owns its own streams),
  and each layer's memory (`--mem_len` positions, no gradient) is carried from one step to the
  next. The held-out text is evaluated the same way with every memory length of
  `--eval_mem_lens` (default: 0, one segment, four segments).

Perplexity on the held-out text (per token of the tokenizer: compare runs only with one
tokenizer) before and after training goes to `eval_results.json`; `samples.json` holds a few
continuations sampled (top-k) from held-out prompts next to the real text. With
`--generation_prompts N` a scored generation task runs before and after training too
(`generation_before` / `generation_after`): greedy continuations of `--generation_length` tokens
after N windows of `--prompt_length` tokens spread evenly over the held-out documents, scored
against the real text (`token_accuracy`: % of generated tokens equal to the real token at the same
position; `first_token_accuracy`: % of prompts whose first generated token is right). `--max_time MINUTES` is
run_pretraining's wall-clock budget (resumed runs included; the report gives the minutes, the
tokens fed and whether the budget stopped it). Every TrainingArguments option works; launch with
`accelerate launch` for several processes.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import datasets
import numpy as np
import torch
import torch.nn.functional as F
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
)

import hf_variants  # noqa: F401  (registers the hf-variants model types with the Auto classes)
from hf_variants.hub.atomic import write_text_atomically
from hf_variants.hub.trainer import CheckpointSafeTrainer
from hf_variants.objectives import (
    DataCollatorForPackedCausalLM,
    SegmentStreamDataset,
    causal_lm_dataset,
    corpus_document_token_ids,
    document_separator_id,
)
from hf_variants.registry import spec_for
from hf_variants.tokenization import TOKENIZER_KINDS
from hf_variants.training.callbacks import TimeBudget
from hf_variants.training.pretraining import (
    StreamTrainer,
    checkpoint_to_resume,
    load_config,
    parse_arguments,
    shared_tokenizer,
)
from hf_variants.training.pretraining_data import load_text

logger = logging.getLogger("run_clm")


@dataclass
class ClmArguments:
    model_name_or_path: str = field(
        default="gpt2-mini",
        metadata={
            "help": "a modeling_configs/ name (from scratch: gpt2-mini, openai-gpt, transfo-xl-mini, ...) or a checkpoint folder"
        },
    )
    config_overrides: str | None = field(
        default=None,
        metadata={
            "help": "from scratch: override config fields, e.g. 'num_hidden_layers=2,hidden_size=64' (transformers' run_clm)"
        },
    )
    tokenizer_name: str | None = field(default=None, metadata={"help": "a tokenizer folder; default: train one"})
    tokenizer_kind: str | None = field(
        default=None, metadata={"help": f"for training one: {TOKENIZER_KINDS}; default: the variant's (GPT: bpe)"}
    )
    vocab_size: int = field(default=8000, metadata={"help": "for training a tokenizer"})
    corpus: str | None = field(
        default=None, metadata={"help": "austen | wikipedia | lee | multilingual (hf_variants.data)"}
    )
    train_file: str | None = field(
        default=None, metadata={"help": "text: a paragraph per line, blank line between documents"}
    )
    max_documents: int | None = field(default=None, metadata={"help": "use only the first N documents"})
    validation_fraction: float = field(default=0.05, metadata={"help": "documents held out for evaluation"})
    max_seq_length: int = field(
        default=128,
        metadata={"help": "GPT: tokens per packed row; Transformer-XL: tokens per segment (the paper's tgt_len)"},
    )
    mem_len: int | None = field(
        default=None,
        metadata={"help": "Transformer-XL: memory positions carried during training (default: the config's)"},
    )
    eval_mem_lens: str | None = field(
        default=None,
        metadata={
            "help": "Transformer-XL: comma-separated memory lengths to evaluate with (default: 0, one segment, four)"
        },
    )
    max_eval_tokens: int | None = field(default=None, metadata={"help": "evaluate on the first N held-out tokens only"})
    num_samples: int = field(default=3, metadata={"help": "continuations to sample into samples.json"})
    prompt_length: int = field(default=32, metadata={"help": "tokens of held-out text given as each prompt"})
    sample_length: int = field(default=48, metadata={"help": "tokens sampled after each prompt"})
    top_k: int = field(default=40, metadata={"help": "sampling: keep the k most likely tokens"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature"})
    generation_prompts: int = field(
        default=0,
        metadata={
            "help": "the scored generation task: greedy continuations of this many held-out windows of "
            "--prompt_length tokens, before and after training (0: off)"
        },
    )
    generation_length: int = field(default=8, metadata={"help": "the generation task: tokens generated per prompt"})
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "start over even if output_dir holds checkpoints (default: resume from the newest complete one)"
        },
    )
    max_time: float | None = field(
        default=None,
        metadata={
            "help": "wall-clock budget in minutes (resumed runs included): stop, save, evaluate and report when it is "
            "spent; the learning-rate schedule still follows --max_steps"
        },
    )


# The held-out evaluation before training, kept beside the checkpoints: a resumed run does not
# evaluate its untrained model again, and still reports it.
BEFORE_TRAINING_FILE = "before_training.json"


# ------------------------------------------------------------------------------- model & data


def load_model(args: ClmArguments, config, from_scratch: bool, tokenizer):
    """A causal LM head model: a fresh one sized for the tokenizer, or the checkpoint's weights."""
    objective = spec_for(config.model_type).pretraining_objective
    if objective != "clm":
        raise ValueError(
            f"{args.model_name_or_path} ({config.model_type}) pretrains with {objective!r}, not causal LM: "
            "use run_pretraining.py"
        )
    if args.mem_len is not None:
        if not hasattr(config, "mem_len"):
            raise ValueError(f"--mem_len is for models with segment-level recurrence; {config.model_type} has none")
        config.mem_len = args.mem_len
    if from_scratch:
        config.vocab_size = len(tokenizer)
        for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
            setattr(config, name, getattr(tokenizer, name))
        model = AutoModelForCausalLM.from_config(config)
    else:
        model = hf_variants.load_pretrained(args.model_name_or_path, AutoModelForCausalLM, config=config)
        if model.config.vocab_size < len(tokenizer):
            raise ValueError(
                f"the tokenizer has {len(tokenizer)} tokens, the checkpoint's vocabulary {model.config.vocab_size}"
            )
    if not is_recurrent(model) and args.max_seq_length > model.config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length {args.max_seq_length} exceeds the model's "
            f"{model.config.max_position_embeddings} positions"
        )
    return model


def is_recurrent(model) -> bool:
    """Segment-level recurrence: the forward takes and returns `mems` (Transformer-XL)."""
    return "mems" in inspect.signature(model.forward).parameters


def token_stream(text: datasets.Dataset, tokenizer, max_tokens: int | None = None) -> np.ndarray:
    """The documents of `text` as one (N,) stream of ids, each document followed by EOS (or SEP)."""
    separator = document_separator_id(tokenizer)
    ids = [
        token
        for document in corpus_document_token_ids(text, tokenizer)
        for token in document + ([separator] if separator is not None else [])
    ]
    return np.asarray(ids[:max_tokens] if max_tokens else ids, dtype=np.int64)


def packed_rows(text: datasets.Dataset, tokenizer, args: ClmArguments, limit_tokens: bool = False) -> datasets.Dataset:
    rows = causal_lm_dataset(text, tokenizer, args.max_seq_length)
    if limit_tokens and args.max_eval_tokens:
        rows = rows.select(range(min(len(rows), math.ceil(args.max_eval_tokens / args.max_seq_length))))
    if len(rows) == 0:
        raise ValueError("the text gave no tokens to train or evaluate on")
    return rows


# ----------------------------------------------------------------------------------- training


class RecurrentTrainer(StreamTrainer):
    """Trainer for segment-level recurrence: reads `SegmentStreamDataset` in order (StreamTrainer's
    sequential sampler) and carries each layer's memory from one batch to the next; the model
    detaches it, so no gradient crosses a segment boundary. The memory is dropped where the
    streams restart (`segment_index` 0: a new pass over the data) and after a resume.

    The loss is the mean cross-entropy of every position against the next token of its stream,
    the last position included: it predicts the first token of the next segment, as in the paper.
    """

    _memory: tuple[torch.Tensor, ...] | None = None
    _next_segment: int | None = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        targets = inputs.pop("next_token_ids")
        segments = inputs.pop("segment_index")
        segment = int(segments[0])
        # The memory is only right if this batch continues the last one, row by row: a sampler
        # or a sharding that reorders batches must fail loudly, not train on the wrong context.
        # (The first batch of a run may be mid-stream: a resumed run starts with no memory.)
        in_order = self._next_segment is None or segment in (0, self._next_segment)
        if bool((segments != segment).any()) or not in_order:
            raise RuntimeError(
                f"batch of segments {segments.tolist()} where segment {self._next_segment} (or 0) was "
                "due: recurrence needs the segments of each stream in consecutive batches"
            )
        if segment == 0:
            self._memory = None
        outputs = model(input_ids=inputs["input_ids"], mems=self._memory)
        self._memory, self._next_segment = outputs.mems, segment + 1
        loss = F.cross_entropy(outputs.logits.flatten(0, 1).float(), targets.flatten())
        return (loss, outputs) if return_outputs else loss


# --------------------------------------------------------------------------------- evaluation


def perplexity_results(total_nll: float, tokens: int, **extra) -> dict:
    if tokens == 0:
        raise ValueError("no held-out tokens were predicted")
    return {"loss": total_nll / tokens, "perplexity": math.exp(total_nll / tokens), "tokens": tokens, **extra}


@torch.no_grad()
def packed_perplexity(model, rows: datasets.Dataset, collator, batch_size: int) -> dict:
    """Perplexity of a packed-document model on packed rows: every labelled token (not the first
    of a document, not padding) predicted from its own document's earlier tokens."""
    model.eval()
    total_nll, tokens = 0.0, 0
    for start in range(0, len(rows), batch_size):
        batch = collator([rows[i] for i in range(start, min(start + batch_size, len(rows)))])
        batch = {key: value.to(model.device) for key, value in batch.items()}
        labels = batch.pop("labels")
        logits = model(**batch).logits[:, :-1]
        targets = labels[:, 1:]
        predicted = targets != -100
        total_nll += F.cross_entropy(logits[predicted].float(), targets[predicted], reduction="sum").item()
        tokens += int(predicted.sum())
    return perplexity_results(total_nll, tokens)


@torch.no_grad()
def memory_perplexity(model, segments: SegmentStreamDataset, mem_len: int) -> dict:
    """Perplexity of a recurrent model on B parallel streams read segment by segment, each
    layer's memory of the last `mem_len` positions carried along (0: every segment alone)."""
    model.eval()
    total_nll, memory = 0.0, None
    for inputs, targets in segments.batches():
        outputs = model(input_ids=inputs.to(model.device), mems=memory, mem_len=mem_len)
        memory = outputs.mems
        total_nll += F.cross_entropy(
            outputs.logits.flatten(0, 1).float(), targets.to(model.device).flatten(), reduction="sum"
        ).item()
    return perplexity_results(total_nll, segments.tokens_per_pass, mem_len=mem_len)


def unigram_perplexity(train_ids: np.ndarray, targets: np.ndarray, vocab_size: int) -> float:
    """Perplexity of the held-out `targets` under the training tokens' frequencies (add-one
    smoothed): the bar a model clears only by using context."""
    counts = np.bincount(train_ids, minlength=vocab_size).astype(np.float64) + 1
    return float(np.exp(-np.log(counts / counts.sum())[targets].mean()))


def packed_targets(rows: datasets.Dataset, collator) -> np.ndarray:
    """The tokens `packed_perplexity` predicts: labels after the shift, without -100."""
    labels = collator([rows[i] for i in range(len(rows))])["labels"][:, 1:]
    return labels[labels != -100].numpy()


def memory_lengths(args: ClmArguments) -> list[int]:
    if args.eval_mem_lens is None:
        return [0, args.max_seq_length, 4 * args.max_seq_length]
    try:
        lengths = [int(part) for part in args.eval_mem_lens.split(",")]
    except ValueError:
        raise ValueError(f"--eval_mem_lens must be comma-separated integers, got {args.eval_mem_lens!r}") from None
    if not lengths or min(lengths) < 0:
        raise ValueError(f"--eval_mem_lens must be integers >= 0, got {args.eval_mem_lens!r}")
    return lengths


# ----------------------------------------------------------------------------------- sampling


@torch.no_grad()
def sample_continuation(model, prompt: list[int], args: ClmArguments, seed: int) -> list[int]:
    """`args.sample_length` tokens sampled after `prompt` (top-k, temperature). GPT goes through
    transformers' `generate`; Transformer-XL feeds one token at a time over its memory, which
    keeps the whole history (so each step equals a run over prompt + sample so far)."""
    model.eval()
    torch.manual_seed(seed)
    ids = torch.tensor([prompt], device=model.device)
    if not is_recurrent(model):
        generated = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=True,
            top_k=args.top_k,
            temperature=args.temperature,
            max_new_tokens=args.sample_length,
            min_new_tokens=args.sample_length,
            pad_token_id=model.config.pad_token_id,
        )
        return generated[0, len(prompt) :].tolist()
    warpers = LogitsProcessorList([TemperatureLogitsWarper(args.temperature), TopKLogitsWarper(args.top_k)])
    history = len(prompt) + args.sample_length
    outputs = model(input_ids=ids, mem_len=history)
    for _ in range(args.sample_length):
        scores = warpers(ids, outputs.logits[:, -1].float())
        next_id = torch.multinomial(scores.softmax(-1), 1)
        ids = torch.cat([ids, next_id], dim=1)
        outputs = model(input_ids=next_id, mems=outputs.mems, mem_len=history)
    return ids[0, len(prompt) :].tolist()


def sample_from_held_out(model, tokenizer, text: datasets.Dataset, args: ClmArguments, seed: int) -> list[dict]:
    """Continuations of the opening `prompt_length` tokens of held-out documents, with the real text."""
    needed = args.prompt_length + args.sample_length
    documents = [ids for ids in corpus_document_token_ids(text, tokenizer) if len(ids) >= needed]
    if not documents or args.num_samples <= 0:
        return []
    picks = np.linspace(0, len(documents) - 1, min(args.num_samples, len(documents))).round().astype(int)
    samples = []
    for number, index in enumerate(picks):
        prompt = documents[index][: args.prompt_length]
        continuation = sample_continuation(model, prompt, args, seed + number)
        samples.append(
            {
                "prompt": tokenizer.decode(prompt),
                "sampled": tokenizer.decode(continuation),
                "real": tokenizer.decode(documents[index][args.prompt_length : needed]),
            }
        )
    return samples


# ----------------------------------------------------------------------------- generation task


def generation_windows(text: datasets.Dataset, tokenizer, args: ClmArguments) -> tuple[np.ndarray, np.ndarray]:
    """(prompts (N, prompt_length), real continuations (N, generation_length)): N =
    `--generation_prompts` windows spread evenly over the non-overlapping windows of
    prompt_length + generation_length tokens inside the held-out documents (a window never spans
    two documents, so the real continuation holds no document separator)."""
    if args.prompt_length < 1 or args.generation_length < 1:
        raise ValueError(
            f"--prompt_length ({args.prompt_length}) and --generation_length ({args.generation_length}) "
            "must be at least 1 for the generation task"
        )
    width = args.prompt_length + args.generation_length
    windows = [
        document[start : start + width]
        for document in corpus_document_token_ids(text, tokenizer)
        for start in range(0, len(document) - width + 1, width)
    ]
    if len(windows) < args.generation_prompts:
        raise ValueError(
            f"--generation_prompts {args.generation_prompts}: the held-out documents hold only "
            f"{len(windows)} windows of {width} tokens"
        )
    picks = np.linspace(0, len(windows) - 1, args.generation_prompts).round().astype(int)  # distinct: N <= windows
    rows = np.asarray([windows[index] for index in picks], dtype=np.int64)
    return rows[:, : args.prompt_length], rows[:, args.prompt_length :]


@torch.no_grad()
def greedy_continuations(model, prompts: torch.Tensor, length: int) -> torch.Tensor:
    """(B, length) greedy continuations of the (B, P) equal-length `prompts` (no padding needed).
    GPT goes through transformers' `generate`, Transformer-XL feeds its prompt, then one token at
    a time over a memory that keeps the whole history. Either way a continuation ends at its
    first EOS (`generate` stops there): the positions after it are -1."""
    model.eval()
    if not is_recurrent(model):
        generated = model.generate(
            prompts,
            attention_mask=torch.ones_like(prompts),
            do_sample=False,
            max_new_tokens=length,
            pad_token_id=model.config.pad_token_id,
        )[:, prompts.shape[1] :]
        generated = F.pad(generated, (0, length - generated.shape[1]), value=-1)  # every row ended early
    else:
        history = prompts.shape[1] + length
        outputs, tokens = model(input_ids=prompts, mem_len=history), []
        for step in range(length):
            tokens.append(outputs.logits[:, -1].argmax(-1, keepdim=True))
            if step + 1 < length:
                outputs = model(input_ids=tokens[-1], mems=outputs.mems, mem_len=history)
        generated = torch.cat(tokens, dim=1)
    return end_at_first_eos(generated, getattr(model.config, "eos_token_id", None))  # a bare TXL config has none


def end_at_first_eos(generated: torch.Tensor, eos_token_id: int | None) -> torch.Tensor:
    """(B, L) tokens with the positions after each row's first EOS set to -1: a continuation ends
    there (as `generate` stops), so what a model would emit after it is never scored as right."""
    if eos_token_id is None:
        return generated
    is_eos = (generated == eos_token_id).long()
    return generated.masked_fill(is_eos.cumsum(1) - is_eos > 0, -1)


def continuation_scores(generated: np.ndarray, real: np.ndarray) -> dict:
    """The generation task's scores (percent) of (N, L) generated tokens against the real ones:
    every position, and the first. Positions after a continuation's EOS hold -1
    (:func:`end_at_first_eos`), which no real token matches."""
    right = generated == real
    return {
        "prompts": int(real.shape[0]),
        "generation_length": int(real.shape[1]),
        "token_accuracy": 100.0 * float(right.mean()),
        "first_token_accuracy": 100.0 * float(right[:, 0].mean()),
    }


def generation_task(model, windows: tuple[np.ndarray, np.ndarray], batch_size: int) -> dict:
    """The scored generation task on `windows` (generation_windows'), batch by batch."""
    prompts, real = windows
    generated = np.concatenate(
        [
            greedy_continuations(
                model, torch.from_numpy(prompts[start : start + batch_size]).to(model.device), real.shape[1]
            )
            .cpu()
            .numpy()
            for start in range(0, len(prompts), batch_size)
        ]
    )
    return {"prompt_length": int(prompts.shape[1]), **continuation_scores(generated, real)}


def rebuild_twin(argv: list[str]) -> tuple:
    """(args, training_args, twin, tokenizer, held-out text) of a finished run: `argv` is the run's
    own arguments; the twin is the model `main` trained, rebuilt as `main` built it (the same
    seed set by parse_arguments, then the same config initialised: the same weights), with the
    tokenizer the run saved."""
    args, training_args = parse_arguments(ClmArguments, argv)  # sets the seed, as main's did
    output_dir = Path(training_args.output_dir)
    if not (output_dir / "model.safetensors").is_file():
        raise ValueError(f"{output_dir} holds no model.safetensors: not a finished run_clm.py run")
    config, from_scratch = load_config(args.model_name_or_path)
    if not from_scratch:
        raise ValueError(f"{args.model_name_or_path}: the random twin is known only for runs from a named config")
    if args.config_overrides:
        config.update_from_string(args.config_overrides)
    _, validation_text = load_text(args, minimum_documents=1)
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    return args, training_args, load_model(args, config, from_scratch, tokenizer), tokenizer, validation_text


def generation_of_finished_run(argv: list[str]) -> dict:
    """`{"generation_before", "generation_after"}` for a finished run made before the generation
    task existed (`argv`: the run's own arguments plus `--generation_prompts N`): its twin
    (`rebuild_twin`) and its trained model (its output_dir) on the same held-out windows."""
    args, training_args, twin, tokenizer, validation_text = rebuild_twin(argv)
    if args.generation_prompts < 1:
        raise ValueError(
            f"--generation_prompts must be at least 1 to score a finished run, got {args.generation_prompts}"
        )
    trained = AutoModelForCausalLM.from_pretrained(training_args.output_dir)
    windows, batch_size = generation_windows(validation_text, tokenizer, args), training_args.per_device_eval_batch_size
    return {
        "generation_before": generation_task(twin, windows, batch_size),
        "generation_after": generation_task(trained, windows, batch_size),
    }


# --------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    args, training_args = parse_arguments(
        ClmArguments, argv, learning_rate=5e-4, warmup_steps=0.05, lr_scheduler_type="cosine"
    )
    if args.max_seq_length < 2:
        raise ValueError(f"--max_seq_length must be >= 2, got {args.max_seq_length}")
    if args.generation_prompts < 0:
        raise ValueError(f"--generation_prompts must be >= 0 (0: no generation task), got {args.generation_prompts}")

    config, from_scratch = load_config(args.model_name_or_path)
    if args.config_overrides:
        if not from_scratch:
            raise ValueError("--config_overrides applies to a model trained from scratch, not to a checkpoint")
        config.update_from_string(args.config_overrides)
    train_text, validation_text = load_text(args, minimum_documents=1)
    checkpoint = checkpoint_to_resume(args, training_args)
    tokenizer = shared_tokenizer(
        args,
        training_args,
        checkpoint,
        config.model_type,
        train_text,
        from_scratch,
        model_max_length=args.max_seq_length,
    )
    model = load_model(args, config, from_scratch, tokenizer)
    recurrent = is_recurrent(model)
    training_args.remove_unused_columns = False  # packed rows keep document_ids for the collator
    training_args.include_num_input_tokens_seen = "all"  # rows are packed (padding only ends the last one): tokens fed
    budget = TimeBudget(args.max_time)

    if recurrent:
        train_data = SegmentStreamDataset(
            token_stream(train_text, tokenizer),
            args.max_seq_length,
            training_args.per_device_train_batch_size,
            training_args.world_size,
        )
        held_out = SegmentStreamDataset(
            token_stream(validation_text, tokenizer, args.max_eval_tokens),
            args.max_seq_length,
            training_args.per_device_eval_batch_size,
        )
        trainer = RecurrentTrainer(
            model=model, args=training_args, train_dataset=train_data, processing_class=tokenizer, callbacks=[budget]
        )

        def evaluate(mem_len: int) -> dict:
            return memory_perplexity(trainer.model, held_out, mem_len)

        train_ids = train_data.streams.reshape(-1)
        held_out_targets = held_out.streams[:, 1 : held_out.num_segments * args.max_seq_length + 1].reshape(-1)
        logger.info(
            "Transformer-XL: %d streams of %d segments of %d tokens per pass (memory %d); held out: %d tokens",
            training_args.per_device_train_batch_size * training_args.world_size,
            train_data.num_segments,
            args.max_seq_length,
            model.config.mem_len,
            held_out.tokens_per_pass,
        )
    else:
        train_data = packed_rows(train_text, tokenizer, args)
        held_out = packed_rows(validation_text, tokenizer, args, limit_tokens=True)
        collator = DataCollatorForPackedCausalLM(tokenizer, return_document_ids=False, return_attention_bias=True)
        trainer = CheckpointSafeTrainer(
            model=model,
            args=training_args,
            train_dataset=train_data,
            data_collator=collator,
            processing_class=tokenizer,
            callbacks=[budget],
        )

        def evaluate(mem_len: int | None = None) -> dict:
            return packed_perplexity(trainer.model, held_out, collator, training_args.per_device_eval_batch_size)

        train_ids = np.concatenate(train_data.with_format("numpy")["input_ids"])
        held_out_targets = packed_targets(held_out, collator)
        logger.info(
            "packed rows of %d tokens: %d for training, %d held out",
            args.max_seq_length,
            len(train_data),
            len(held_out),
        )

    training_mem_len = model.config.mem_len if recurrent else None
    windows = generation_windows(validation_text, tokenizer, args) if args.generation_prompts > 0 else None

    def generation() -> dict | None:
        return generation_task(trainer.model, windows, training_args.per_device_eval_batch_size) if windows else None

    before_path = Path(training_args.output_dir) / BEFORE_TRAINING_FILE
    if checkpoint is None:
        before, generation_before = evaluate(training_mem_len), generation()
        if trainer.is_world_process_zero():  # with the generation task: a resumed run still has the twin's scores
            write_text_atomically(before_path, json.dumps({**before, "generation": generation_before}, indent=2))
    else:
        before = json.loads(before_path.read_text()) if before_path.is_file() else None
        generation_before = before.pop("generation", None) if before else None
    train_output = trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(training_args.output_dir)  # model.safetensors + config.json + tokenizer
    trainer.save_state()  # trainer_state.json: the logged losses
    after = evaluate(training_mem_len)
    results = {
        "model": args.model_name_or_path,
        "before_training": before,
        "after_training": after,
        "train_loss": train_output.training_loss,
        "global_step": train_output.global_step,
        "world_size": training_args.world_size,
        "sequence_length": args.max_seq_length,
        "max_steps": training_args.max_steps,
        "tokens_seen": trainer.state.num_input_tokens_seen,
        "train_minutes": budget.elapsed_seconds() / 60,
        "stopped_by_max_time": budget.stopped_early,
        "bf16": training_args.bf16,
        "corpus": args.corpus,
        "unigram_baseline_perplexity": unigram_perplexity(train_ids, held_out_targets, len(tokenizer)),
    }
    if recurrent:
        results["training_mem_len"] = training_mem_len
        results["by_memory_length"] = [evaluate(length) for length in memory_lengths(args)]
    if windows:
        results |= {"generation_before": generation_before, "generation_after": generation()}
    samples = sample_from_held_out(trainer.model, tokenizer, validation_text, args, training_args.seed)
    if trainer.is_world_process_zero():
        output_dir = Path(training_args.output_dir)
        write_text_atomically(output_dir / "eval_results.json", json.dumps(results, indent=2))
        write_text_atomically(output_dir / "samples.json", json.dumps(samples, indent=2, ensure_ascii=False))
        logger.info("held-out perplexity before: %s", before)
        logger.info("held-out perplexity after: %s", after)
        for row in results.get("by_memory_length", []):
            logger.info("memory %d: perplexity %.2f", row["mem_len"], row["perplexity"])
    return {**results, "samples": samples}


if __name__ == "__main__":
    main(sys.argv[1:])
