"""Side-by-side speed and memory of hf-variants' encoders against transformers on CPU.

One harness for every encoder variant (BERT, RoBERTa, XLM, ALBERT, ELECTRA, XLNet, ViT). For every
scenario the same configuration is built in transformers and converted to hf-variants with
``hf_variants.from_transformers`` (identical weights; see ``encoder_variants.py``); both get the
same batches of real data: the rt-polarity movie-review sentences tokenised with the real
bert-base-uncased WordPiece (other vocabularies reuse those real id sequences, see
``workloads.TokenLayout``), or the real Fashion-MNIST images for ViT.

    python benchmarks/bench_encoders.py                     # every variant but BERT (bench_bert.py has BERT's rows)
    python benchmarks/bench_encoders.py --quick             # the rows with a target, 1 step per repetition
    python benchmarks/bench_encoders.py --variant roberta,albert
    python benchmarks/bench_encoders.py --write benchmarks/RESULTS.md   # replaces its own section there
    python benchmarks/bench_encoders.py --profile vit-train # torch.profiler op tables, both sides

Method (``benchmarks/RESULTS.md``): one fresh process per scenario holds both models and times
them in interleaved repetitions (``measure.interleaved_times``); one fresh process per (scenario,
side) measures peak memory (live tensors and RSS); ratios are ours/transformers speed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if not __package__:  # run as `python benchmarks/bench_encoders.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (and this checkout's hf_variants)

from benchmarks.workers import load_average, run_header, spawn_worker  # noqa: E402


@dataclass(frozen=True)
class Scenario:
    description: str
    task: str  # "mlm", "cls", "tokens", "rtd" (ELECTRA's joint pretraining) or "image" (see encoder_variants)
    shape: str  # BERT: "mini" or "base"; other variants: a named config ("roberta-mini")
    training: bool
    data: str  # "dynamic" (pad to longest), "max_length" (pad to 128), "full" (128 real tokens, no padding), "images"
    batch_size: int
    steps: int  # steps per timed repetition (cycling over `steps` distinct batches)
    in_quick: bool = False
    variant: str = "bert"
    target: float | None = None  # the speed ratio ours/transformers this row must reach


def text_scenarios(variant: str, shape: str, target_full: float | None = 1.0) -> dict[str, Scenario]:
    """A text variant's sequence-classification rows: fine-tuning and inference on the real
    sentences with dynamic padding, and (unless ``target_full`` is None) full-length fine-tuning."""
    rows = {
        f"{variant}-finetune-dynamic": Scenario(
            f"fine-tuning step (seq. cls.), {shape}, dynamic padding",
            "cls",
            shape,
            True,
            "dynamic",
            32,
            3,
            True,
            variant,
            1.5,
        ),
        f"{variant}-infer-dynamic": Scenario(
            f"inference (seq. cls.), {shape}, dynamic padding",
            "cls",
            shape,
            False,
            "dynamic",
            64,
            4,
            True,
            variant,
            1.5,
        ),
    }
    if target_full is not None:
        rows[f"{variant}-full-finetune"] = Scenario(
            f"full-length fine-tuning step (seq. cls.), {shape}, 128 tokens, no padding",
            "cls",
            shape,
            True,
            "full",
            16,
            2,
            True,
            variant,
            target_full,
        )
    return rows


SCENARIOS = {
    "mlm-mini": Scenario(
        "MLM pretraining step, bert-mini, sentences, dynamic padding",
        "mlm",
        "mini",
        True,
        "dynamic",
        32,
        3,
        True,
        target=2.0,
    ),
    "mlm-mini-full": Scenario(
        "MLM pretraining step, bert-mini, full 128-token rows", "mlm", "mini", True, "full", 16, 2
    ),
    "mlm-base": Scenario(
        "MLM pretraining step, bert-base, sentences, dynamic padding", "mlm", "base", True, "dynamic", 8, 1
    ),
    "finetune-mini-dynamic": Scenario(
        "fine-tuning step (seq. cls.), bert-mini, dynamic padding",
        "cls",
        "mini",
        True,
        "dynamic",
        32,
        3,
        True,
        target=1.5,
    ),
    "finetune-mini-pad128": Scenario(
        "fine-tuning step (seq. cls.), bert-mini, padded to 128", "cls", "mini", True, "max_length", 32, 2
    ),
    "finetune-base-dynamic": Scenario(
        "fine-tuning step (seq. cls.), bert-base, dynamic padding", "cls", "base", True, "dynamic", 8, 1, target=1.5
    ),
    "infer-mini-dynamic": Scenario(
        "inference (seq. cls.), bert-mini, dynamic padding", "cls", "mini", False, "dynamic", 64, 4, True, target=1.5
    ),
    "infer-mini-pad128": Scenario(
        "inference (seq. cls.), bert-mini, padded to 128", "cls", "mini", False, "max_length", 64, 3
    ),
    "infer-base-dynamic": Scenario(
        "inference (seq. cls.), bert-base, dynamic padding", "cls", "base", False, "dynamic", 32, 1, target=1.5
    ),
    "full-finetune-mini": Scenario(
        "full-length fine-tuning step, bert-mini, 128 tokens, no padding",
        "cls",
        "mini",
        True,
        "full",
        16,
        2,
        True,
        target=1.0,
    ),
    "full-infer-base": Scenario(
        "full-length inference, bert-base, 128 tokens, no padding", "cls", "base", False, "full", 8, 1, target=1.0
    ),
    # Token classification reads every position: neither padding nor the [CLS]-only last layer can
    # be skipped, so this row is the same computation on both sides.
    "full-finetune-mini-tokens": Scenario(
        "full-length fine-tuning step (token cls.), bert-mini, 128 tokens, no padding",
        "tokens",
        "mini",
        True,
        "full",
        16,
        2,
        target=1.0,
    ),
    **text_scenarios("roberta", "roberta-mini"),
    **text_scenarios("xlm", "xlm-mini"),
    **text_scenarios("albert", "albert-mini"),
    "electra-pretrain": Scenario(
        "joint generator + discriminator pretraining step (RTD), electra-mini, sentences, dynamic padding",
        "rtd",
        "electra-mini",
        True,
        "dynamic",
        32,
        3,
        True,
        "electra",
        2.0,
    ),
    **text_scenarios("electra", "electra-mini"),
    **text_scenarios("xlnet", "xlnet-mini", target_full=None),
    "vit-train": Scenario(
        "training step (image cls.), vit-mini, Fashion-MNIST 28x28",
        "image",
        "vit-mini",
        True,
        "images",
        64,
        3,
        True,
        "vit",
        1.0,
    ),
    "vit-infer": Scenario(
        "inference (image cls.), vit-mini, Fashion-MNIST 28x28",
        "image",
        "vit-mini",
        False,
        "images",
        256,
        3,
        True,
        "vit",
        1.0,
    ),
}
MFU_SCENARIO = Scenario("MFU: bert-base MLM pretraining step, full 128-token rows", "mlm", "base", True, "full", 8, 1)
MFU_QUICK_SCENARIO = Scenario(
    "MFU: bert-base MLM pretraining step, full 128-token rows", "mlm", "base", True, "full", 4, 1
)


# ----------------------------------------------------------------------------- worker side
def image_batches(batch_size: int, count: int) -> list[dict]:
    """(B, 1, 28, 28) Fashion-MNIST training images, scaled to [-1, 1] as ViTImageProcessor(mean 0.5, std 0.5) does, and labels."""
    import numpy as np
    import torch

    from hf_variants.data.images import load_fashion_mnist

    train = load_fashion_mnist()["train"].select(range(batch_size * count))
    pixels = torch.from_numpy(np.stack([np.asarray(image, dtype=np.float32) for image in train["image"]]))
    pixels = (pixels / 255.0 - 0.5) / 0.5
    labels = torch.tensor(train["label"])
    return [
        {"pixel_values": pixels[i : i + batch_size, None], "labels": labels[i : i + batch_size]}
        for i in range(0, batch_size * count, batch_size)
    ]


def masking_collators(task: str, tokenizer):
    """{"transformers": collator, "ours": collator} and a note, for the tasks whose step masks its
    batch (collation is part of the step): BERT's MLM, ELECTRA's RTD (15% selected, 85% [MASK],
    15% kept, none random: transformers' DataCollatorForLanguageModeling configured so, and ours)."""
    import transformers

    from benchmarks import workloads

    if task == "mlm":
        theirs, ours, note = workloads.mlm_collators(tokenizer)
        return {"transformers": theirs, "ours": ours}, note
    from hf_variants.objectives import DataCollatorForReplacedTokenDetection

    theirs = transformers.DataCollatorForLanguageModeling(
        tokenizer, mlm_probability=0.15, mask_replace_prob=0.85, random_replace_prob=0.0
    )
    note = "transformers: DataCollatorForLanguageModeling(mask_replace_prob=0.85, random_replace_prob=0); ours: DataCollatorForReplacedTokenDetection"
    return {"transformers": theirs, "ours": DataCollatorForReplacedTokenDetection(tokenizer)}, note


def build_sides(scenario: Scenario, which: tuple[str, ...]):
    import torch

    from benchmarks import encoder_variants, workloads

    models = encoder_variants.build_models(scenario.variant, scenario.task, scenario.shape, which)
    notes = {}
    if scenario.task == "image":
        batches = image_batches(scenario.batch_size, scenario.steps)

        def batch_maker(name):
            return lambda index: batches[index % len(batches)]
    elif scenario.task in ("mlm", "rtd"):
        corpus = workloads.Corpus.load()
        collators, notes["collator"] = masking_collators(scenario.task, corpus.tokenizer)
        if scenario.data == "full":
            rows = workloads.full_length_batches(corpus, scenario.batch_size, scenario.steps)
            chunks = [[{"input_ids": ids.tolist()} for ids in batch["input_ids"]] for batch in rows]
        else:
            chunks = [[corpus.features[i] for i in rows] for rows in corpus.chunks(scenario.batch_size, scenario.steps)]

        def batch_maker(name):
            def make(index):
                torch.manual_seed(index)
                return dict(collators[name](chunks[index % len(chunks)]))

            return make
    else:
        corpus = workloads.Corpus.load()
        layout = encoder_variants.VARIANTS[scenario.variant].layout
        if scenario.data == "full":
            batches = workloads.full_length_batches(
                corpus, scenario.batch_size, scenario.steps, token_labels=scenario.task == "tokens", layout=layout
            )
        else:
            padding = "longest" if scenario.data == "dynamic" else "max_length"
            batches = workloads.classification_batches(corpus, scenario.batch_size, scenario.steps, padding, layout)
        batches = [{**batch, **encoder_variants.VARIANTS[scenario.variant].extra_inputs} for batch in batches]

        def batch_maker(name):
            return lambda index: batches[index % len(batches)]

    sides = [workloads.make_side(name, models[name], batch_maker(name), scenario.training) for name in which]
    return sides, notes


def run_worker(kind: str, scenario: Scenario, reps: int, side_name: str | None) -> dict:
    from benchmarks import measure

    if kind == "throughput":
        sides, notes = build_sides(scenario, ("transformers", "ours"))
        times = measure.interleaved_times(sides, scenario.steps, reps, warmup_steps=2)
        return {**measure.ratio_summary(times), **notes}
    if kind == "memory":
        (side,), _ = build_sides(scenario, (side_name,))
        side.step(0)  # first call: lazy allocations (optimizer state) are part of the workload
        base = measure.reset_peak_rss()
        for index in range(1, scenario.steps + 1):
            side.step(index)
        peak = measure.peak_rss_mib()
        # Live tensors: what stays between steps (parameters, buffers, optimizer state) plus the
        # peak of what one more step allocates on top of it.
        resident = [*side.model.parameters(), *side.model.buffers()]
        if side.optimizer is not None:
            resident += [value for state in side.optimizer.state.values() for value in state.values()]
        tensors = measure.resident_tensor_mib(resident) + measure.peak_step_tensor_mib(
            lambda: side.step(scenario.steps + 1)
        )
        return {"peak_mib": peak, "base_mib": base, "tensor_peak_mib": tensors}
    if kind == "mfu":
        sides, notes = build_sides(scenario, ("transformers", "ours"))
        flops = {side.name: measure.count_flops(lambda side=side: side.step(0)) for side in sides}
        probe = measure.GemmProbe()
        times = measure.interleaved_times([probe, *sides], scenario.steps, reps, warmup_steps=1)
        result = {**measure.ratio_summary(times), **notes, "flops": flops}
        peaks = [probe.flops / t / 1e9 for t in times[probe.name]]
        result["gemm_peak_gflops"] = statistics.median(peaks)
        for name in flops:
            achieved = [flops[name] / t / 1e9 for t in times[name]]
            result[f"{name}_gflops"] = statistics.median(achieved)
            # MFU per repetition against the peak measured in the same repetition.
            result[f"{name}_mfu"] = statistics.median(a / p for a, p in zip(achieved, peaks))
        return result
    if kind == "profile":
        sides, _ = build_sides(scenario, ("transformers", "ours"))
        return {"tables": measure.profile_tables(sides, scenario.steps, row_limit=20)}
    raise ValueError(f"unknown worker kind {kind!r}")


# ----------------------------------------------------------------------------- driver side
def spawn(kind: str, scenario: Scenario, reps: int, threads: int, side: str | None = None) -> dict:
    command = [
        sys.executable,
        __file__,
        "--worker",
        kind,
        "--scenario-json",
        json.dumps(asdict(scenario)),
        "--reps",
        str(reps),
        "--threads",
        str(threads),
    ]
    if side:
        command += ["--side", side]
    env = dict(os.environ)
    if kind == "memory":
        # A fixed mmap threshold (glibc raises it dynamically up to 32 MiB otherwise): every large
        # tensor is mmapped and unmapped when freed, so RSS follows live tensors, not heap slack.
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    return spawn_worker(command, f"{kind} worker for {scenario.description}", env)


def run_scenarios(names: list[str], reps: int, threads: int, quick: bool, with_memory: bool) -> list[dict]:
    rows = []
    for name in names:
        # --quick: one step per repetition (each repetition still interleaves both sides).
        scenario = dataclasses.replace(SCENARIOS[name], steps=1) if quick else SCENARIOS[name]
        started = time.perf_counter()
        row = {"name": name, "scenario": scenario, "load_before": load_average()}
        row["throughput"] = spawn("throughput", scenario, reps, threads)
        if with_memory:
            # Peak RSS is per process, so the two memory processes may run side by side (the
            # throughput process above runs alone: its timings need the machine to itself).
            with ThreadPoolExecutor(max_workers=2) as pool:
                futures = {
                    side: pool.submit(spawn, "memory", scenario, reps, threads, side)
                    for side in ("transformers", "ours")
                }
                row["memory"] = {side: future.result() for side, future in futures.items()}
        row["seconds"] = time.perf_counter() - started
        print(format_row(row), flush=True)
        print(f"  ({name}: {row['seconds']:.0f} s)", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def run_mfu(quick: bool, threads: int) -> dict:
    mfu_scenario = MFU_QUICK_SCENARIO if quick else MFU_SCENARIO
    mfu = spawn("mfu", mfu_scenario, 3, threads)
    mfu["scenario"] = mfu_scenario
    print(format_mfu(mfu), flush=True)
    return mfu


def target_status(row: dict) -> str:
    target = row["scenario"].target
    if target is None:
        return "-"
    t = row["throughput"]
    return f"≥ {target:.1f}×: {'met' if t['ratio_median'] >= target else 'below'}"


def format_row(row: dict) -> str:
    t, s = row["throughput"], row["scenario"]
    if "memory" in row:
        ours, theirs = row["memory"]["ours"], row["memory"]["transformers"]
        ours_step, theirs_step = ours["peak_mib"] - ours["base_mib"], theirs["peak_mib"] - theirs["base_mib"]
        memory = (
            f" {ours['tensor_peak_mib']:.0f} / {theirs['tensor_peak_mib']:.0f} = "
            f"**{ours['tensor_peak_mib'] / theirs['tensor_peak_mib']:.3f}** |"
            f" {ours['peak_mib']} (+{ours_step}) | {theirs['peak_mib']} (+{theirs_step}) | "
            f"{ours['peak_mib'] / theirs['peak_mib']:.3f} ({ours_step / max(theirs_step, 1):.2f}) |"
        )
    else:
        memory = " - | - | - | - |"
    return (
        f"| {row['name']} | {s.description}, B={s.batch_size} | {t['ratio_median']:.2f}× "
        f"({t['ratio_min']:.2f}–{t['ratio_max']:.2f}) | {target_status(row)} | {t['ratio_best']:.2f}× | {t['ours_s'] * 1e3:.0f} | "
        f"{t['theirs_s'] * 1e3:.0f} |{memory} {row['load_before']} |"
    )


TABLE_HEADER = (
    "| scenario | what | speed ours/transformers, median (min–max) | target | best/best | ms/step ours | ms/step transformers "
    "| peak live-tensor memory, MiB: ours / transformers = ratio "
    "| peak RSS ours, MiB (+ above pre-step RSS) | peak RSS transformers, MiB (+ above pre-step) "
    "| RSS ours/transformers (of the + part) | load avg before |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def format_mfu(mfu: dict) -> str:
    s = mfu["scenario"]
    lines = [
        f"MFU ({s.description}, B={s.batch_size}): fp32 GEMM peak (4096² torch.matmul, timed between "
        f"the steps) {mfu['gemm_peak_gflops']:.1f} GFLOP/s"
    ]
    for name, key in (("ours", "ours_s"), ("transformers", "theirs_s")):
        lines.append(
            f"- {name}: {mfu['flops'][name] / 1e9:.1f} GFLOP per step in {mfu[key]:.2f} s = "
            f"{mfu[name + '_gflops']:.1f} GFLOP/s = **{100 * mfu[name + '_mfu']:.0f}%** of the GEMM peak"
        )
    lines.append(
        f"- speed ours/transformers: {mfu['ratio_median']:.2f}× ({mfu['ratio_min']:.2f}–{mfu['ratio_max']:.2f})"
    )
    return "\n".join(lines)


def replace_section(path: Path, key: str, text: str) -> None:
    """Put ``text`` between ``<!-- key:begin -->`` and ``<!-- key:end -->`` in ``path``, replacing
    what was there (appending the markers at the end the first time): rerunning replaces, never piles up."""
    begin, end = f"<!-- {key}:begin -->", f"<!-- {key}:end -->"
    content = path.read_text() if path.exists() else ""
    block = f"{begin}\n{text.strip()}\n{end}"
    if begin in content and end in content:
        head, rest = content.split(begin, 1)
        content = head + block + rest.split(end, 1)[1]
    else:
        content = content.rstrip("\n") + ("\n\n" if content else "") + block + "\n"
    path.write_text(content)


def select_scenarios(variants: list[str] | None, scenarios: list[str] | None, quick: bool) -> list[str]:
    """Scenario names from ``--scenarios`` or ``--variant`` (default: every variant but BERT); ``quick``
    keeps the rows marked for it."""
    if scenarios:
        unknown = [n for n in scenarios if n not in SCENARIOS]
        if unknown:
            raise SystemExit(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
        return scenarios
    known = sorted({s.variant for s in SCENARIOS.values()})
    chosen = variants or [v for v in known if v != "bert"]
    unknown = [v for v in chosen if v not in known]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; choose from {', '.join(known)}")
    return [n for n, s in SCENARIOS.items() if s.variant in chosen and (s.in_quick or not quick)]


def main(
    argv: list[str] | None = None,
    program: str = "benchmarks/bench_encoders.py",
    default_variants: list[str] | None = None,
    with_mfu: bool = False,
) -> None:
    """Command line of this file, and of ``bench_bert.py`` (``default_variants=["bert"]``, with the MFU row)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, prog=program
    )
    parser.add_argument("--quick", action="store_true", help="the rows marked quick, one step per repetition")
    parser.add_argument("--variant", help="comma-separated variants (default: every one but bert; bench_bert.py: bert)")
    parser.add_argument("--scenarios", help=f"comma-separated subset of: {', '.join(SCENARIOS)}")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per scenario (default 5)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the targets are for 2)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument(
        "--write", help="write the results (markdown) into this file, replacing this program's own section"
    )
    parser.add_argument(
        "--profile", metavar="SCENARIO", help="print torch.profiler tables (both sides) for one scenario (or 'mfu')"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--scenario-json", help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    if args.worker:
        scenario = Scenario(**json.loads(args.scenario_json))
        print(json.dumps(run_worker(args.worker, scenario, args.reps, args.side)))
        return

    if args.profile:
        scenario = MFU_SCENARIO if args.profile == "mfu" else SCENARIOS[args.profile]
        tables = spawn("profile", scenario, 1, args.threads)["tables"]
        for name, table in tables.items():
            print(
                f"\n{name}: {scenario.description}, B={scenario.batch_size}, {scenario.steps} steps, {args.threads} threads\n{table}"
            )
        return

    variants = args.variant.split(",") if args.variant else default_variants
    names = select_scenarios(variants, args.scenarios.split(",") if args.scenarios else None, args.quick)
    reps = args.reps or 5
    header = run_header(program, argv, args.threads, f"{reps} timed repetitions after warm-up")
    print(header)
    print(TABLE_HEADER, flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        # Tokenise the corpus once; every worker process reads the result.
        from benchmarks import workloads

        corpus_file = Path(folder) / "corpus.json"
        workloads.Corpus.load().save(corpus_file)
        os.environ["BENCH_CORPUS_JSON"] = str(corpus_file)
        try:
            rows = run_scenarios(names, reps, args.threads, args.quick, not args.no_memory)
            mfu = run_mfu(args.quick, args.threads) if with_mfu else None
        finally:
            del os.environ["BENCH_CORPUS_JSON"]  # the file goes with the folder
    footer = f"total {time.perf_counter() - started:.0f} s; load average after {load_average()}"
    print(footer)
    if args.write:
        parts = [f"### Run {header}\n", TABLE_HEADER, *map(format_row, rows), ""]
        if mfu is not None:
            parts += [format_mfu(mfu), ""]
        parts.append(footer)
        collators = {row["throughput"]["collator"] for row in rows if "collator" in row["throughput"]}
        parts += [f"\nCollators: {collator}" for collator in sorted(collators)]
        replace_section(Path(args.write), Path(program).stem, "\n".join(parts))


if __name__ == "__main__":
    main()
