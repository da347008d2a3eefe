"""Side-by-side speed and memory of hf-variants' BERT against transformers' BERT on CPU.

For every scenario the same configuration is built in transformers and converted to hf-variants
with ``hf_variants.from_transformers`` (identical weights); both get the same batches of the real
rt-polarity movie-review sentences tokenised with the real bert-base-uncased WordPiece tokenizer.

    python benchmarks/bench_bert.py            # every scenario (< 10 min on 2 cores)
    python benchmarks/bench_bert.py --quick    # the mini scenarios + a small MFU run (< 3 min)
    python benchmarks/bench_bert.py --scenarios finetune-mini-dynamic,infer-mini-dynamic
    python benchmarks/bench_bert.py --write benchmarks/RESULTS.md
    python benchmarks/bench_bert.py --profile mfu   # torch.profiler op tables, both sides

Method
- Throughput: one fresh process per scenario holds both models. After warm-up, each repetition
  times ``steps`` steps of one implementation and then of the other, alternating which goes
  first, so load from other processes hits both alike. Ratio = transformers' seconds per step /
  ours, per repetition; we report its median, min and max.
- Memory: one fresh process per (scenario, implementation) builds only what it needs, resets the
  kernel's resident-set high-water mark and runs the same steps (see ``measure.py``).
- MFU: FLOPs of one bert-base training step counted by torch's FlopCounterMode (matmuls and
  attention, forward and backward), divided by the median step time, divided by the best fp32
  GFLOP/s of large square torch.matmul on the same threads.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # workloads.py, measure.py
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's hf_variants


@dataclass(frozen=True)
class Scenario:
    description: str
    task: str  # "mlm", "cls" (sequence classification) or "tokens" (token classification)
    shape: str  # "mini" or "base"
    training: bool
    data: str  # "dynamic" (pad to longest), "max_length" (pad to 128) or "full" (128 real tokens, no padding)
    batch_size: int
    steps: int  # steps per timed repetition (cycling over `steps` distinct batches)
    in_quick: bool = False


SCENARIOS = {
    "mlm-mini": Scenario("MLM pretraining step, bert-mini, sentences, dynamic padding", "mlm", "mini", True, "dynamic", 32, 3, True),
    "mlm-mini-full": Scenario("MLM pretraining step, bert-mini, full 128-token rows", "mlm", "mini", True, "full", 16, 2),
    "mlm-base": Scenario("MLM pretraining step, bert-base, sentences, dynamic padding", "mlm", "base", True, "dynamic", 8, 1),
    "finetune-mini-dynamic": Scenario("fine-tuning step (seq. cls.), bert-mini, dynamic padding", "cls", "mini", True, "dynamic", 32, 3, True),
    "finetune-mini-pad128": Scenario("fine-tuning step (seq. cls.), bert-mini, padded to 128", "cls", "mini", True, "max_length", 32, 2),
    "finetune-base-dynamic": Scenario("fine-tuning step (seq. cls.), bert-base, dynamic padding", "cls", "base", True, "dynamic", 8, 1),
    "infer-mini-dynamic": Scenario("inference (seq. cls.), bert-mini, dynamic padding", "cls", "mini", False, "dynamic", 64, 4, True),
    "infer-mini-pad128": Scenario("inference (seq. cls.), bert-mini, padded to 128", "cls", "mini", False, "max_length", 64, 3),
    "infer-base-dynamic": Scenario("inference (seq. cls.), bert-base, dynamic padding", "cls", "base", False, "dynamic", 32, 1),
    "full-finetune-mini": Scenario("full-length fine-tuning step, bert-mini, 128 tokens, no padding", "cls", "mini", True, "full", 16, 2, True),
    "full-infer-base": Scenario("full-length inference, bert-base, 128 tokens, no padding", "cls", "base", False, "full", 8, 1),
    # Token classification reads every position: neither padding nor the [CLS]-only last layer can
    # be skipped, so this row is the same computation on both sides.
    "full-finetune-mini-tokens": Scenario("full-length fine-tuning step (token cls.), bert-mini, 128 tokens, no padding", "tokens", "mini", True, "full", 16, 2),
}
MFU_SCENARIO = Scenario("MFU: bert-base MLM pretraining step, full 128-token rows", "mlm", "base", True, "full", 8, 1)
MFU_QUICK_SCENARIO = Scenario("MFU: bert-base MLM pretraining step, full 128-token rows", "mlm", "base", True, "full", 4, 1)


# ----------------------------------------------------------------------------- worker side
def build_sides(scenario: Scenario, which: tuple[str, ...]):
    import torch

    import workloads

    corpus = workloads.Corpus.load()
    models = workloads.build_models(scenario.task, scenario.shape, which)
    notes = {}
    if scenario.task == "mlm":
        # Collation (random masking) is part of an MLM step: each side collates the same sentences.
        theirs_collator, ours_collator, notes["collator"] = workloads.mlm_collators(corpus.tokenizer)
        collators = {"transformers": theirs_collator, "ours": ours_collator}
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
        if scenario.data == "full":
            batches = workloads.full_length_batches(
                corpus, scenario.batch_size, scenario.steps, token_labels=scenario.task == "tokens"
            )
        else:
            padding = "longest" if scenario.data == "dynamic" else "max_length"
            batches = workloads.classification_batches(corpus, scenario.batch_size, scenario.steps, padding)

        def batch_maker(name):
            return lambda index: batches[index % len(batches)]
    sides = [workloads.make_side(name, models[name], batch_maker(name), scenario.training) for name in which]
    return sides, notes


def run_worker(kind: str, scenario: Scenario, reps: int, side_name: str | None) -> dict:
    import torch

    import measure

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
        tensors = measure.resident_tensor_mib(resident) + measure.peak_step_tensor_mib(lambda: side.step(scenario.steps + 1))
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
        return {"tables": measure.profile_tables(sides, scenario.steps, row_limit=15)}
    raise ValueError(f"unknown worker kind {kind!r}")


# ----------------------------------------------------------------------------- driver side
def spawn(kind: str, scenario: Scenario, reps: int, threads: int, side: str | None = None) -> dict:
    command = [sys.executable, __file__, "--worker", kind, "--scenario-json", json.dumps(asdict(scenario)),
               "--reps", str(reps), "--threads", str(threads)]
    if side:
        command += ["--side", side]
    env = dict(os.environ)
    if kind == "memory":
        # A fixed mmap threshold (glibc raises it dynamically up to 32 MiB otherwise): every large
        # tensor is mmapped and unmapped when freed, so RSS follows live tensors, not heap slack.
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{kind} worker failed for {scenario.description}:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_all(names: list[str], reps: int, threads: int, quick: bool, with_memory: bool) -> tuple[list[dict], dict | None]:
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
                futures = {side: pool.submit(spawn, "memory", scenario, reps, threads, side) for side in ("transformers", "ours")}
                row["memory"] = {side: future.result() for side, future in futures.items()}
        row["seconds"] = time.perf_counter() - started
        print(format_row(row), flush=True)
        print(f"  ({name}: {row['seconds']:.0f} s)", file=sys.stderr, flush=True)
        rows.append(row)
    mfu_scenario = MFU_QUICK_SCENARIO if quick else MFU_SCENARIO
    mfu = spawn("mfu", mfu_scenario, 3, threads)
    mfu["scenario"] = mfu_scenario
    print(format_mfu(mfu), flush=True)
    return rows, mfu


def format_row(row: dict) -> str:
    t, s = row["throughput"], row["scenario"]
    memory = ""
    if "memory" in row:
        ours, theirs = row["memory"]["ours"], row["memory"]["transformers"]
        ours_step, theirs_step = ours["peak_mib"] - ours["base_mib"], theirs["peak_mib"] - theirs["base_mib"]
        memory = (f" {ours['tensor_peak_mib']:.0f} / {theirs['tensor_peak_mib']:.0f} = "
                  f"**{ours['tensor_peak_mib'] / theirs['tensor_peak_mib']:.3f}** |"
                  f" {ours['peak_mib']} (+{ours_step}) | {theirs['peak_mib']} (+{theirs_step}) | "
                  f"{ours['peak_mib'] / theirs['peak_mib']:.3f} ({ours_step / max(theirs_step, 1):.2f}) |")
    else:
        memory = " - | - | - | - |"
    return (f"| {row['name']} | {s.description}, B={s.batch_size} | {t['ratio_median']:.2f}× "
            f"({t['ratio_min']:.2f}–{t['ratio_max']:.2f}) | {t['ratio_best']:.2f}× | {t['ours_s'] * 1e3:.0f} | "
            f"{t['theirs_s'] * 1e3:.0f} |{memory} {row['load_before']} |")


TABLE_HEADER = (
    "| scenario | what | speed ours/transformers, median (min–max) | best/best | ms/step ours | ms/step transformers "
    "| peak live-tensor memory, MiB: ours / transformers = ratio "
    "| peak RSS ours, MiB (+ above pre-step RSS) | peak RSS transformers, MiB (+ above pre-step) "
    "| RSS ours/transformers (of the + part) | load avg before |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def format_mfu(mfu: dict) -> str:
    s = mfu["scenario"]
    lines = [f"MFU ({s.description}, B={s.batch_size}): fp32 GEMM peak (4096² torch.matmul, timed between "
             f"the steps) {mfu['gemm_peak_gflops']:.1f} GFLOP/s"]
    for name, key in (("ours", "ours_s"), ("transformers", "theirs_s")):
        lines.append(
            f"- {name}: {mfu['flops'][name] / 1e9:.1f} GFLOP per step in {mfu[key]:.2f} s = "
            f"{mfu[name + '_gflops']:.1f} GFLOP/s = **{100 * mfu[name + '_mfu']:.0f}%** of the GEMM peak"
        )
    lines.append(f"- speed ours/transformers: {mfu['ratio_median']:.2f}× ({mfu['ratio_min']:.2f}–{mfu['ratio_max']:.2f})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="mini scenarios only, fewer repetitions (< 3 min)")
    parser.add_argument("--scenarios", help=f"comma-separated subset of: {', '.join(SCENARIOS)}")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per scenario (default 5)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the targets are for 2)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--write", help="append the results (markdown) to this file")
    parser.add_argument("--profile", metavar="SCENARIO", help="print torch.profiler tables (both sides) for one scenario (or 'mfu')")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--scenario-json", help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()

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
            print(f"\n{name}: {scenario.description}, B={scenario.batch_size}, {scenario.steps} steps, {args.threads} threads\n{table}")
        return

    names = args.scenarios.split(",") if args.scenarios else [n for n, s in SCENARIOS.items() if s.in_quick or not args.quick]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
    reps = args.reps or 5
    command = " ".join(["python", "benchmarks/bench_bert.py", *sys.argv[1:]])
    header = (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; `{command}`; torch {torch.__version__}, "
              f"{args.threads} threads, {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
              f"load average {load_average()}; {reps} timed repetitions after warm-up")
    print(header)
    print(TABLE_HEADER, flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        # Tokenise the corpus once; every worker process reads the result.
        import workloads

        corpus_file = Path(folder) / "corpus.json"
        workloads.Corpus.load().save(corpus_file)
        os.environ["BENCH_CORPUS_JSON"] = str(corpus_file)
        rows, mfu = run_all(names, reps, args.threads, args.quick, not args.no_memory)
    footer = f"total {time.perf_counter() - started:.0f} s; load average after {load_average()}"
    print(footer)
    if args.write:
        text = "\n".join([f"\n### Run {header}\n", TABLE_HEADER, *map(format_row, rows), "", format_mfu(mfu), "", footer, ""])
        collators = {row["throughput"]["collator"] for row in rows if "collator" in row["throughput"]}
        text += "".join(f"\nMLM collator: {collator}\n" for collator in sorted(collators))
        with open(args.write, "a") as out:
            out.write(text)


if __name__ == "__main__":
    main()
