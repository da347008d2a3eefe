"""Pretraining tokens/s of hf-variants against transformers on CPU, every variant with its own
objective, fp32 and CPU bf16 autocast.

One row per (variant, precision): the variant's pretraining model (ours) against transformers'
class with the same pretraining head and identical weights (ours built from the named config,
converted to transformers' class with ``hf_variants.to_transformers``, and back with
``hf_variants.from_transformers``, as ``bench_decoders.py`` does), one full training step each
(forward + loss + backward + fused AdamW) on the same batch of full 128-token rows.

    python benchmarks/bench_pretraining.py                    # every row, B=32 (~10 min on 2 cores)
    python benchmarks/bench_pretraining.py --quick            # B=4, 1 step per repetition, 3 repetitions
    python benchmarks/bench_pretraining.py --variants bert,t5 --dtypes bf16
    python benchmarks/bench_pretraining.py --write benchmarks/RESULTS.md   # replaces its own section
    python benchmarks/bench_pretraining.py --profile bert --dtypes bf16    # torch.profiler op tables, both sides
    python benchmarks/bench_pretraining.py --device cuda --variants bert,electra --json out.json  # on a GPU

| variant | objective (our collator) | ours | transformers |
|---|---|---|---|
| bert | MLM + NSP | BertForPreTraining (sparse prediction) | BertForPreTraining |
| roberta | MLM | RobertaForMaskedLM (sparse prediction) | RobertaForMaskedLM |
| spanbert | span masking, MLM + SBO | SpanBertForPreTraining | BertForMaskedLM: transformers has no SBO head, so its side does less (not like for like) |
| albert | n-gram masking, MLM + SOP | AlbertForPreTraining | AlbertForPreTraining |
| electra | RTD: generator MLM + discriminator | ElectraForPreTraining (joint) | ElectraForMaskedLM + ElectraForPreTraining assembled (``encoder_variants.TransformersElectraPretraining``) |
| xlnet | permutation LM (1/6 predicted) | XLNetLMHeadModel | XLNetLMHeadModel (same perm_mask, target_mapping) |
| t5 | span corruption (15%, mean span 3) | T5ForConditionalGeneration | T5ForConditionalGeneration |
| gpt | causal LM | GPTLMHeadModel | GPT2LMHeadModel |

Data: the real rt-polarity movie-review sentences, tokenised with the real bert-base-uncased
WordPiece (``workloads.Corpus``) and concatenated into rows of exactly 128 tokens ([CLS] text
[SEP], no padding). Each objective's batch is made once, before timing, by our collator for it
(``hf_variants.objectives``, seeded); both sides read that same batch, so collation is not part of
the timed step (it is measured by ``bench_collators.py``). Variants with another vocabulary read the
same real id sequences, ids past their vocabulary folded into it (as ``workloads.TokenLayout`` folds them: speed
depends on shapes, not on which word an id is). The sentence tasks' pairs are the row's two halves
(segment ids 0 | 1) with random NSP / SOP labels: the computation is the one of real pairs. T5
reads rows whose corrupted input is 128 tokens (its targets are ~30); tokens/s counts the 128
input tokens of a row for every variant.

Method (``measure.interleaved_times``): one fresh process per (variant, precision) holds both
models; before timing it checks that both compute the same loss on the first batch (eval mode,
fp32); after 2 warm-up steps each, every repetition times ``steps`` steps of one side, then of the
other, alternating which goes first, so load from other processes hits both alike. tokens/s =
B x 128 / the median seconds per step; the ratio ours/transformers is per repetition (median,
min, max) and best/best. bf16: ``torch.autocast("cpu", dtype=torch.bfloat16)`` around the forward
and loss on both sides (weights, gradients and AdamW stay fp32), as ``run_pretraining.py --bf16``
trains on a CPU.

``--device cuda`` (a GPU; a ValueError where torch sees none): both models and the batches on the
GPU, ``torch.autocast("cuda", dtype=torch.bfloat16)`` for bf16 (as ``run_pretraining.py --bf16``
trains there), fused AdamW on the GPU, ``torch.cuda.synchronize()`` before and after each timed
repetition (kernels run asynchronously: the clock must stop when the GPU has finished), default
10 steps per repetition and 10 repetitions (a step takes milliseconds), and the peak memory a
training step allocates above what the two models and their optimizers hold
(``torch.cuda.max_memory_allocated``, one extra step per side). Its table has its own section
(``bench_pretraining_cuda``) and names the GPU; the CPU table and defaults are unchanged.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if not __package__:  # run as `python benchmarks/bench_pretraining.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (and this checkout's hf_variants)

from benchmarks.workers import load_average, run_header, spawn_worker  # noqa: E402

ROW_LENGTH = 128
SECTION = "bench_pretraining"
CUDA_SECTION = "bench_pretraining_cuda"
DTYPES = ("fp32", "bf16")
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class PretrainingVariant:
    """One variant's pretraining row: the comparison is the benchmark's, the rest the variant's.

    variant: the variant's folder name; its SPEC gives the mini (``named`` = ``SPEC.mini_config``)
        and the objective (``objective`` = ``SPEC.pretraining_objective``, run_pretraining's
        default: an ``hf_variants.objectives.registry`` name, "+nsp" / "+sop" for a sentence
        task, or "clm" (labels = the inputs)).
    ours / theirs: the hf-variants and transformers class names (ELECTRA: see ``build_models``).
    like_for_like: False where transformers has no class with the same head (SpanBERT's SBO):
        the ratio then compares unequal work and is reported as such.
    """

    variant: str
    ours: str
    theirs: str
    like_for_like: bool = True

    @property
    def spec(self):
        """The variant's registered SPEC (hf_variants is imported here, as elsewhere in this module,
        only when a model or a row needs it)."""
        import hf_variants  # noqa: F401  (registers every variant's SPEC)
        from hf_variants.registry import MODEL_TYPE_PREFIX, spec_for

        return spec_for(MODEL_TYPE_PREFIX + self.variant)

    @property
    def named(self) -> str:
        return self.spec.mini_config

    @property
    def objective(self) -> str:
        return self.spec.pretraining_objective


VARIANTS = {
    v.variant: v
    for v in (
        PretrainingVariant("bert", "BertForPreTraining", "BertForPreTraining"),
        PretrainingVariant("roberta", "RobertaForMaskedLM", "RobertaForMaskedLM"),
        PretrainingVariant("spanbert", "SpanBertForPreTraining", "BertForMaskedLM", like_for_like=False),
        PretrainingVariant("albert", "AlbertForPreTraining", "AlbertForPreTraining"),
        PretrainingVariant("electra", "ElectraForPreTraining", "ElectraForMaskedLM + ElectraForPreTraining"),
        PretrainingVariant("xlnet", "XLNetLMHeadModel", "XLNetLMHeadModel"),
        PretrainingVariant("t5", "T5ForConditionalGeneration", "T5ForConditionalGeneration"),
        PretrainingVariant("gpt", "GPTLMHeadModel", "GPT2LMHeadModel"),
    )
}


@dataclass(frozen=True)
class Setting:
    """What one worker measures: a variant in one precision."""

    variant: str
    dtype: str  # "fp32" or "bf16" (autocast on the device)
    batch_size: int = 32
    steps: int = 2  # steps per timed repetition (cycling over `steps` distinct batches)
    reps: int = 5
    warmup: int = 2
    overrides: dict = field(default_factory=dict)  # config fields changed (the tests' tiny models)
    device: str = "cpu"  # "cpu" or "cuda"


# ----------------------------------------------------------------------------- models
def _configure_ours(model) -> None:
    """Ours as ``run_pretraining.py`` trains it: sparse prediction where the head has it, SDPA."""
    model.config._attn_implementation = "sdpa"
    if hasattr(model.config, "sparse_prediction"):
        model.config.sparse_prediction = True


def build_models(name: str, overrides: dict | None = None, named: str | None = None) -> dict:
    """{"transformers": model, "ours": model} with identical weights, both in train mode.

    ``named``: the named config to build (default the variant's mini; ``gpu_step.py`` builds the
    base sizes)."""
    import torch
    import transformers

    import hf_variants
    from hf_variants.models.named_configs import named_config

    variant = VARIANTS[name]
    overrides = overrides or {}
    named = named or variant.named
    torch.manual_seed(0)
    if name == "electra":
        from benchmarks import encoder_variants

        # No joint class in transformers: the same step assembled from its generator and discriminator.
        ours = hf_variants.ElectraForPreTraining(named_config(named, **overrides))
        _configure_ours(ours)
        models = {"ours": ours, "transformers": encoder_variants._transformers_electra_halves(ours)}
    elif name == "spanbert":
        ours = hf_variants.SpanBertForPreTraining(named_config(named, **overrides))
        # transformers' BertForMaskedLM holding our encoder and MLM head (the SBO head has no place there).
        masked_lm = hf_variants.SpanBertForMaskedLM(ours.config)
        missing, _ = masked_lm.load_state_dict(ours.state_dict(), strict=False)
        if missing:
            raise RuntimeError(f"SpanBERT's MLM model lacks pretraining weights: {missing}")
        theirs = transformers.BertForMaskedLM(hf_variants.to_transformers(masked_lm).config)
        theirs.load_state_dict(hf_variants.to_transformers(masked_lm).state_dict())
        _configure_ours(ours)
        models = {"ours": ours, "transformers": theirs}
    else:
        seed_model = getattr(hf_variants, variant.ours)(named_config(named, **overrides))
        theirs = hf_variants.to_transformers(seed_model)
        ours = hf_variants.from_transformers(theirs)
        _configure_ours(ours)
        models = {"ours": ours, "transformers": theirs}
    theirs = models["transformers"]
    if getattr(type(theirs), "_supports_sdpa", False):  # XLNet has eager attention only
        theirs.config._attn_implementation = "sdpa"
    for model in models.values():
        model.train()
    return models


# ----------------------------------------------------------------------------- batches
def wordpiece_tokenizer(objective: str):
    """The real bert-base-uncased WordPiece; for span corruption with T5's sentinels
    ``<extra_id_k>`` (ids 30522+, inside t5-mini's 32,128) and [SEP] as EOS."""
    from benchmarks import workloads

    tokenizer = workloads.load_tokenizer()
    if objective == "span-corruption":
        tokenizer.add_special_tokens(
            {"eos_token": "[SEP]", "additional_special_tokens": [f"<extra_id_{i}>" for i in range(100)]}
        )
    return tokenizer


def make_collator(objective: str, tokenizer, config, seed: int, length: int = ROW_LENGTH):
    from hf_variants.objectives import OBJECTIVES

    name = objective.partition("+")[0]
    if name == "span-corruption":
        from hf_variants.objectives import DataCollatorForSpanCorruption

        return DataCollatorForSpanCorruption(tokenizer, input_length=length, seed=seed)
    return OBJECTIVES[name].make_collator(tokenizer, model_config=config, seed=seed)


def pretraining_batches(
    name: str, config, batch_size: int, count: int, corpus=None, length: int = ROW_LENGTH, repeat: bool = False
) -> list[dict]:
    """``count`` batches of ``batch_size`` full rows of ``length`` tokens for variant ``name``'s
    objective (see the module docstring), ids folded into ``config.vocab_size``. ``repeat``: read
    the corpus' token stream again from its start when the batches need more tokens than it has
    (the GPU's large B x T; speed depends on shapes, not on which sentence fills a row)."""
    import torch

    from benchmarks import workloads
    from hf_variants.objectives import span_corruption_lengths

    objective = VARIANTS[name].objective
    corpus = corpus or workloads.Corpus.load()
    tokenizer = wordpiece_tokenizer(objective)
    stream = [token for feature in corpus.features for token in feature["input_ids"][1:-1]]
    # Raw tokens per row: T5's corrupted input of 128 comes from more raw tokens; others add [CLS] [SEP].
    per_row = span_corruption_lengths(length)[0] if objective == "span-corruption" else length - 2
    if repeat and stream and len(stream) < batch_size * count * per_row:
        stream = stream * -(-batch_size * count * per_row // len(stream))
    if len(stream) < batch_size * count * per_row:
        raise ValueError(
            f"{count} batches of {batch_size} rows need {batch_size * count * per_row} tokens; "
            f"the corpus has {len(stream)}"
        )
    rows = [stream[i * per_row : (i + 1) * per_row] for i in range(batch_size * count)]
    if objective != "span-corruption":
        rows = [[tokenizer.cls_token_id, *row, tokenizer.sep_token_id] for row in rows]
    generator = torch.Generator().manual_seed(0)
    batches = []
    for step in range(count):
        chunk = rows[step * batch_size : (step + 1) * batch_size]
        if objective == "clm":
            ids = torch.tensor(chunk)
            batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
        else:
            features = [{"input_ids": ids} for ids in chunk]
            if objective.endswith(("+nsp", "+sop")):
                for feature in features:  # the row's halves as the two segments
                    feature["token_type_ids"] = [0] * (length // 2) + [1] * (length - length // 2)
            batch = dict(make_collator(objective, tokenizer, config, seed=step, length=length)(features))
            task = objective.partition("+")[2]
            if task:
                label = "next_sentence_label" if task == "nsp" else "sentence_order_label"
                batch[label] = torch.randint(0, 2, (batch_size,), generator=generator)
        for key in ("input_ids", "labels"):  # fold ids past the vocabulary into it (-100 stays)
            values = batch[key]
            wide = values >= config.vocab_size
            if wide.any():
                folded = workloads.FIRST_REGULAR_ID + (values - workloads.FIRST_REGULAR_ID) % (
                    config.vocab_size - workloads.FIRST_REGULAR_ID
                )
                batch[key] = torch.where(wide, folded, values)
        batches.append(batch)
    return batches


def accepted(model, batch: dict) -> dict:
    """The entries of ``batch`` that ``model.forward`` names (transformers' BertForMaskedLM takes no
    SBO targets)."""
    parameters = inspect.signature(model.forward).parameters
    return {key: value for key, value in batch.items() if key in parameters}


# ----------------------------------------------------------------------------- sides
class TrainingSide:
    """One implementation's step on precomputed batches: forward + loss (under bf16 autocast when
    asked), backward, fused AdamW, gradients released."""

    def __init__(self, name: str, model, batches: list[dict], dtype: str) -> None:
        import torch

        self.name, self.model, self.dtype = name, model, dtype
        self.device = next(model.parameters()).device
        self.batches = [
            {key: value.to(self.device) for key, value in accepted(model, batch).items()} for batch in batches
        ]
        # fused=True: the fastest AdamW on CPU (and on CUDA), the same optimizer for both sides.
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def autocast(self):
        import torch

        return torch.autocast(self.device.type, dtype=torch.bfloat16) if self.dtype == "bf16" else nullcontext()

    def synchronize(self) -> None:
        """Wait for the GPU's queued kernels (``measure.interleaved_times`` calls it around each
        repetition); nothing to wait for on the CPU."""
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def step_memory(self, index: int) -> dict[str, float]:
        """One more step on CUDA, measured: MiB allocated before it (both models, optimizer states)
        and the peak above that during it (activations, gradients, temporaries)."""
        import torch

        self.synchronize()
        torch.cuda.reset_peak_memory_stats(self.device)
        resident = torch.cuda.memory_allocated(self.device)
        self.step(index)
        self.synchronize()
        peak = torch.cuda.max_memory_allocated(self.device)
        return {"resident_mib": resident / 2**20, "step_peak_mib": (peak - resident) / 2**20}

    def step(self, index: int) -> None:
        import torch

        batch = self.batches[index % len(self.batches)]
        torch.manual_seed(index)  # ELECTRA samples its replacements: the same draws on both sides
        with self.autocast():
            loss = self.model(**batch).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


def eval_losses(models: dict, batch: dict) -> dict[str, float]:
    """Both sides' fp32 eval-mode loss on ``batch`` (same seed for ELECTRA's sampler), on the
    models' device."""
    import torch

    losses = {}
    for name, model in models.items():
        model.eval()
        torch.manual_seed(1)
        device = next(model.parameters()).device
        with torch.no_grad():
            losses[name] = float(model(**{k: v.to(device) for k, v in accepted(model, batch).items()}).loss)
        model.train()
    return losses


def measure_setting(setting: Setting) -> dict:
    """Build both sides, check their losses agree, time them interleaved; tokens/s and ratios."""
    from benchmarks import measure

    models = {
        name: model.to(setting.device) for name, model in build_models(setting.variant, setting.overrides).items()
    }
    batches = pretraining_batches(setting.variant, models["ours"].config, setting.batch_size, setting.steps)
    losses = eval_losses(models, batches[0])
    if VARIANTS[setting.variant].like_for_like and abs(losses["ours"] - losses["transformers"]) > 1e-3 * max(
        1.0, abs(losses["transformers"])
    ):
        raise RuntimeError(f"{setting.variant}: the two sides compute different losses {losses}: not the same work")
    sides = [TrainingSide(name, models[name], batches, setting.dtype) for name in ("transformers", "ours")]
    times = measure.interleaved_times(sides, setting.steps, setting.reps, setting.warmup)
    summary = measure.ratio_summary(times)
    tokens = setting.batch_size * ROW_LENGTH
    predicted = sum(int((batch["labels"] != -100).sum()) for batch in batches) / len(batches)
    result = {
        **summary,
        "losses": losses,
        "tokens_per_s_ours": tokens / summary["ours_s"],
        "tokens_per_s_theirs": tokens / summary["theirs_s"],
        "predicted_per_batch": predicted,
    }
    if setting.device == "cuda":
        import torch

        after = setting.warmup + setting.reps * setting.steps
        result["memory"] = {side.name: side.step_memory(after) for side in sides}
        result["gpu"] = torch.cuda.get_device_name()
    return result


# ----------------------------------------------------------------------------- driver
def profile_setting(setting: Setting) -> dict[str, str]:
    """torch.profiler op tables (self CPU time) of ``setting.steps`` steps of each side."""
    from benchmarks import measure

    models = build_models(setting.variant, setting.overrides)
    batches = pretraining_batches(setting.variant, models["ours"].config, setting.batch_size, setting.steps)
    sides = [TrainingSide(name, models[name], batches, setting.dtype) for name in ("transformers", "ours")]
    return measure.profile_tables(sides, setting.steps, row_limit=25)


def spawn(setting: Setting, threads: int) -> dict:
    command = [
        sys.executable,
        __file__,
        "--worker",
        json.dumps(asdict(setting)),
        "--threads",
        str(threads),
        "--device",
        setting.device,
    ]
    return spawn_worker(command, f"worker for {setting}")


TABLE_HEADER = (
    "| variant | objective | ours / transformers class | precision | tokens/s ours | tokens/s transformers "
    "| speed ours/transformers, median (min–max) | best/best | ms/step ours | ms/step transformers | targets per batch "
    "| eval loss ours / transformers | load avg before |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def format_row(setting: Setting, result: dict, load: str) -> str:
    variant = VARIANTS[setting.variant]
    ratio = f"{result['ratio_median']:.2f}× ({result['ratio_min']:.2f}–{result['ratio_max']:.2f})"
    if not variant.like_for_like:
        ratio += " (ours also trains the SBO head)"
    losses = result["losses"]
    return (
        f"| {setting.variant} | {variant.objective} | {variant.ours} / {variant.theirs} | {setting.dtype} | "
        f"{result['tokens_per_s_ours']:,.0f} | {result['tokens_per_s_theirs']:,.0f} | **{ratio}** | "
        f"{result['ratio_best']:.2f}× | {result['ours_s'] * 1e3:.0f} | {result['theirs_s'] * 1e3:.0f} | "
        f"{result['predicted_per_batch']:.0f} | {losses['ours']:.4f} / {losses['transformers']:.4f} | {load} |"
    )


CUDA_TABLE_HEADER = (
    "| variant | objective | precision | tokens/s ours | tokens/s transformers | speed ours/transformers, median "
    "(min–max) | best/best | ms/step ours | ms/step transformers | step peak MiB ours | step peak MiB transformers "
    "| eval loss ours / transformers |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def format_cuda_row(setting: Setting, result: dict) -> str:
    """A row of the CUDA table: the CPU row's timings and the step's peak memory of each side."""
    variant = VARIANTS[setting.variant]
    ratio = f"{result['ratio_median']:.2f}× ({result['ratio_min']:.2f}–{result['ratio_max']:.2f})"
    if not variant.like_for_like:
        ratio += " (ours also trains the SBO head)"
    losses, memory = result["losses"], result["memory"]
    return (
        f"| {setting.variant} | {variant.objective} | {setting.dtype} | {result['tokens_per_s_ours']:,.0f} | "
        f"{result['tokens_per_s_theirs']:,.0f} | **{ratio}** | {result['ratio_best']:.2f}× | "
        f"{result['ours_s'] * 1e3:.1f} | {result['theirs_s'] * 1e3:.1f} | {memory['ours']['step_peak_mib']:,.0f} | "
        f"{memory['transformers']['step_peak_mib']:,.0f} | {losses['ours']:.4f} / {losses['transformers']:.4f} |"
    )


def replace_section(path: Path, text: str, section: str = SECTION) -> None:
    """Put ``text`` between this program's markers in ``path`` (appended the first time)."""
    from benchmarks import bench_encoders

    bench_encoders.replace_section(path, section, text)


def check_device(device: str) -> None:
    """A ValueError unless ``device`` is one of DEVICES and, for cuda, torch sees a GPU."""
    import torch

    if device not in DEVICES:
        raise ValueError(f"unknown --device {device!r}: choose from {', '.join(DEVICES)}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"--device cuda: torch {torch.__version__} sees no CUDA GPU on this machine "
            f"(torch.cuda.is_available() is False); run without --device or on a GPU machine"
        )


def main(argv: list[str] | None = None) -> list[str]:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        prog="benchmarks/bench_pretraining.py",
    )
    parser.add_argument("--quick", action="store_true", help="B=4, 1 step per repetition, 3 repetitions (a smoke test)")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {', '.join(VARIANTS)}"
    )
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="fp32, bf16 (CPU autocast) or both")
    parser.add_argument("--batch-size", type=int, default=None, help="rows per batch (default 32; --quick 4)")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions (default 5, cuda 10; --quick 3)")
    parser.add_argument("--steps", type=int, default=None, help="steps per repetition (default 2, cuda 10; --quick 1)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda (a GPU: CUDA autocast for bf16)")
    parser.add_argument("--json", help="also write every row's setting and measurements to this JSON file")
    parser.add_argument("--write", help="write the table (markdown) into this file, replacing this program's section")
    parser.add_argument(
        "--profile",
        metavar="VARIANT",
        help="print torch.profiler tables (both sides) of one variant, in each of --dtypes, instead of timing",
    )
    parser.add_argument("--overrides", default="{}", help=argparse.SUPPRESS)  # JSON config overrides (tests)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    check_device(args.device)
    if args.worker:
        print(json.dumps(measure_setting(Setting(**json.loads(args.worker)))))
        return []
    variants, dtypes = args.variants.split(","), args.dtypes.split(",")
    unknown = [v for v in variants + [args.profile or "bert"] if v not in VARIANTS] + [
        d for d in dtypes if d not in DTYPES
    ]
    if unknown:
        raise ValueError(
            f"unknown variants or precisions {unknown}: choose from {', '.join(VARIANTS)} and {', '.join(DTYPES)}"
        )
    cuda = args.device == "cuda"
    base = dict(
        batch_size=args.batch_size or (4 if args.quick else 32),
        reps=args.reps or (3 if args.quick else 10 if cuda else 5),
        overrides=json.loads(args.overrides),
        device=args.device,
    )
    if args.quick:
        base.update(steps=1, warmup=1)
    elif cuda:
        base.update(steps=10, warmup=3)
    if args.steps is not None:
        if args.steps < 1:
            raise ValueError(f"--steps must be >= 1, got {args.steps}")
        base.update(steps=args.steps)
    if args.profile:
        if cuda:
            raise ValueError("--profile prints CPU op tables: run it without --device cuda")
        for dtype in dtypes:
            setting = Setting(args.profile, dtype, **base)
            for name, table in profile_setting(setting).items():
                print(
                    f"\n{name}: {args.profile} {dtype}, B={setting.batch_size}, {setting.steps} steps, {args.threads} threads\n{table}"
                )
        return []
    details = f"B={base['batch_size']} rows of {ROW_LENGTH} tokens, {base['reps']} timed repetitions after warm-up"
    if cuda:
        details = f"GPU {torch.cuda.get_device_name()}, {details} ({base.get('steps', 2)} steps each)"
    header = run_header("benchmarks/bench_pretraining.py", argv, args.threads, details)
    table_header = CUDA_TABLE_HEADER if cuda else TABLE_HEADER
    print(header)
    print(table_header, flush=True)
    started = time.perf_counter()
    lines, records = [], []
    for variant in variants:
        for dtype in dtypes:  # fp32 and bf16 of a variant back to back: the same machine state for both
            setting = Setting(variant, dtype, **base)
            load = load_average()
            result = spawn(setting, args.threads)
            lines.append(format_cuda_row(setting, result) if cuda else format_row(setting, result, load))
            records.append({"setting": asdict(setting), "result": result, "load_average_before": load})
            print(lines[-1], flush=True)
    footer = f"total {time.perf_counter() - started:.0f} s; load average after {load_average()}"
    print(footer)
    if args.json:
        Path(args.json).write_text(json.dumps({"header": header, "rows": records, "table": lines}, indent=2) + "\n")
    if args.write:
        replace_section(
            Path(args.write),
            "\n".join([f"### Run {header}\n", table_header, *lines, "", footer]),
            CUDA_SECTION if cuda else SECTION,
        )
    return lines


if __name__ == "__main__":
    main()
