"""torch.compile (inductor) against eager, on the CPU, for the mini configs of a few variants.

Each workload times, interleaved (benchmarks/measure.py), the eager model on the padded path
(``padding_free=False``), the same model compiled with ``torch.compile(fullgraph=True)``, and the
eager padding-free path (the CPU default) for reference. Inputs: a batch of token ids with a
realistic spread of lengths (right padding), the same tensors for every side; compiled graphs are
warmed up (compiled) before timing, and the compile time is reported separately.

    HF_HUB_OFFLINE=1 python benchmarks/bench_compile.py --write benchmarks/RESULTS.md

``--write`` replaces the marker-delimited section of RESULTS.md (BEGIN/END compile); ``--quick`` is a
smoke run of the first workload on a tiny batch (checks the script, times nothing worth keeping).
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

if not __package__:  # run as `python benchmarks/bench_compile.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (and this checkout's hf_variants)
import hf_variants  # noqa: E402,F401  (registers every variant)
from benchmarks import measure  # noqa: E402
from hf_variants.models.named_configs import named_config  # noqa: E402
from hf_variants.registry import SPECS  # noqa: E402

BEGIN, END = "<!-- BEGIN compile (benchmarks/bench_compile.py) -->", "<!-- END compile -->"


# Variant name -> the heads timed for it, each (head, train): built from the variant's
# ``SPEC.mini_config``, timed as inference (False) or as a training step (True).
COMPILE_WORKLOADS: dict[str, tuple[tuple[str, bool], ...]] = {
    "bert": (("ForSequenceClassification", False), ("ForSequenceClassification", True)),
    "gpt": (("ForSequenceClassification", False),),
    "vit": (("ForImageClassification", False),),
}


def workloads(table: dict[str, tuple[tuple[str, bool], ...]] | None = None) -> list[tuple[str, str, str, bool]]:
    """(variant, named config, head, train) for every entry of ``table`` (default
    :data:`COMPILE_WORKLOADS`), variants in name order, each on its ``SPEC.mini_config``: training
    steps include backward and an SGD update. An unregistered variant or a head the variant does not
    have is a ValueError."""
    specs = {spec.name: spec for spec in SPECS.values()}
    rows = []
    for name, entries in sorted((COMPILE_WORKLOADS if table is None else table).items()):
        if name not in specs:
            raise ValueError(f"bench_compile: no registered variant {name!r}; registered: {sorted(specs)}")
        spec = specs[name]
        for head, train in entries:
            if head not in spec.classes:
                raise ValueError(
                    f"bench_compile: variant {name!r} has no head {head!r}; its heads: {sorted(spec.classes)}"
                )
            rows.append((name, spec.mini_config, head, train))
    return rows


WORKLOADS = workloads()


@dataclass
class Side:
    name: str
    model: torch.nn.Module
    inputs: dict
    train: bool

    def step(self, index: int) -> None:
        if self.train:
            self.model(**self.inputs).loss.backward()
            with torch.no_grad():
                for parameter in self.model.parameters():
                    if parameter.grad is not None:
                        parameter.add_(parameter.grad, alpha=-1e-4)
                        parameter.grad = None
        else:
            with torch.no_grad():
                self.model(**self.inputs)


def build_inputs(config, head: str, batch: int, length: int, generator: torch.Generator) -> dict:
    if head == "ForImageClassification":
        pixels = torch.randn(batch, config.num_channels, config.image_size, config.image_size, generator=generator)
        return {"pixel_values": pixels, "labels": torch.randint(0, config.num_labels, (batch,), generator=generator)}
    lengths = torch.randint(length // 4, length + 1, (batch,), generator=generator)
    lengths[0] = length
    mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
    ids = torch.randint(5, config.vocab_size, (batch, length), generator=generator).masked_fill(
        mask == 0, config.pad_token_id or 0
    )
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": torch.randint(0, config.num_labels, (batch,), generator=generator),
    }


def run_workload(variant: str, config_name: str, head: str, train: bool, args) -> dict:
    spec = SPECS[f"hfv_{variant}"]
    config = named_config(config_name)
    config.num_labels = 2
    if getattr(config, "pad_token_id", None) is None:
        config.pad_token_id = 0
    generator = torch.Generator().manual_seed(0)
    inputs = build_inputs(config, head, args.batch_size, args.seq_length, generator)
    if not train:
        inputs.pop("labels")
    # Each model its own config: a model keeps the config object it is given, so a shared one
    # would leave both on whichever layout was set last.
    torch.manual_seed(0)
    padded = spec.classes[head](copy.deepcopy(config)).train(train)
    padded.config.padding_free = False
    torch.manual_seed(0)
    packed = spec.classes[head](copy.deepcopy(config)).train(train)  # same weights, padding-free default
    packed.config.padding_free = True
    for module in (padded, packed):  # timing, not regularisation: identical work every step
        for sub in module.modules():
            if isinstance(sub, torch.nn.Dropout):
                sub.p = 0.0
    compiled = torch.compile(padded, fullgraph=True)
    start = time.perf_counter()
    Side("compiled", compiled, inputs, train).step(0)
    Side("compiled", compiled, inputs, train).step(1)
    compile_seconds = time.perf_counter() - start
    sides = [Side("eager", padded, inputs, train), Side("compiled", compiled, inputs, train)]
    if "input_ids" in inputs:
        sides.append(Side("eager padding-free", packed, inputs, train))
    times = measure.interleaved_times(sides, args.steps, args.reps, warmup_steps=2)
    summary = measure.ratio_summary(times, ours="compiled", theirs="eager")
    row = {
        "workload": f"{config_name} {head} {'train' if train else 'inference'}",
        "compile_s": compile_seconds,
        **summary,
    }
    if "eager padding-free" in times:
        row["padding_free_s"] = min(times["eager padding-free"])
    row["eager_best_s"], row["compiled_best_s"] = min(times["eager"]), min(times["compiled"])
    return row


def markdown(rows: list[dict], args, started: str) -> str:
    command = "python benchmarks/bench_compile.py " + " ".join(sys.argv[1:])
    lines = [
        BEGIN,
        f"### torch.compile vs eager ({started}; `{command}`)",
        "",
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.machine()}, {os.cpu_count()} cores; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; batch {args.batch_size} x {args.seq_length} tokens "
        f"(lengths spread {args.seq_length // 4}..{args.seq_length}, right padding), {args.reps} interleaved repetitions of "
        f"{args.steps} steps. Speed-up = eager time / compiled time (median of the per-repetition ratios; best-vs-best in brackets).",
        "",
        "| workload | eager padded (best ms) | compiled padded (best ms) | speed-up | eager padding-free (best ms) | compile time (s) |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        padding_free = f"{row['padding_free_s'] * 1e3:.1f}" if "padding_free_s" in row else "n/a (no padding)"
        lines.append(
            f"| {row['workload']} | {row['eager_best_s'] * 1e3:.1f} | {row['compiled_best_s'] * 1e3:.1f} | "
            f"{row['ratio_median']:.2f}x ({row['ratio_best']:.2f}x) | {padding_free} | {row['compile_s']:.0f} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="variant names to run (default: all workloads)")
    parser.add_argument("--write", type=Path, help="replace the compile section of this markdown file")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: the first workload, batch 2 x 16 tokens, 1 repetition of 1 step (not for --write)",
    )
    args = parser.parse_args()
    if args.quick:
        if args.write:
            raise ValueError("--quick is a smoke run; its timings are not written (drop --write)")
        args.batch_size, args.seq_length, args.steps, args.reps = 2, 16, 1, 1
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    for variant, config_name, head, train in WORKLOADS[:1] if args.quick else WORKLOADS:
        if args.only and variant not in args.only:
            continue
        row = run_workload(variant, config_name, head, train, args)
        print(row, flush=True)
        rows.append(row)
    section = markdown(rows, args, started)
    print(section)
    if args.write:
        write_section(args.write, section)


if __name__ == "__main__":
    main()
