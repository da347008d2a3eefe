"""Speed of hf-variants' decoder and encoder-decoder variants against transformers on CPU:
GPT-2 (CLM training, greedy generation), the original Transformer (vs MarianMTModel) and T5.

Each scenario builds our model from a named config (``modeling_configs/``), converts it to the
transformers class (the reference) and back with ``hf_variants.from_transformers``, so both sides
hold identical weights; both get the same real data (see ``decoder_workloads.py``).

    python benchmarks/bench_decoders.py                       # every scenario (~6 min on 2 cores)
    python benchmarks/bench_decoders.py --quick               # 1 batch per repetition, 3 repetitions
    python benchmarks/bench_decoders.py --scenarios clm-gpt2-mini,generate-gpt2-mini-b1
    python benchmarks/bench_decoders.py --write benchmarks/RESULTS.md   # replaces its own section
    python benchmarks/bench_decoders.py --profile generate-gpt2-mini-b1 # torch.profiler tables
    python benchmarks/bench_decoders.py --prepare-data /tmp/dec        # tokenise once (for a machine
    python benchmarks/bench_decoders.py --device cuda --dtypes fp32,bf16 --data /tmp/dec \
        --scenarios generate-gpt2-mini-b1,generate-t5-mini-b8          #  without the corpora: a GPU)

Method (as ``bench_bert.py``, timing helpers from ``measure.py``): one fresh process per scenario
holds both models; after warm-up each repetition times ``steps`` steps of one side, then of the
other, alternating which goes first; ratio = transformers' seconds / ours per repetition (median,
min, max) and best/best. Before timing, every scenario checks that both sides do the same work:
training scenarios compare the eval-mode loss of the first batch (same tokens predicted, same
value), generation scenarios assert identical output tokens.

``--device cuda`` (a GPU): both models and every batch on the GPU, each timed repetition closed by
``torch.cuda.synchronize()``. ``--dtypes bf16``: generation runs both models with bf16 weights (how
one serves a model in bf16); training runs fp32 weights under ``torch.autocast(dtype=bfloat16)`` (as
``Trainer --bf16``). The same-work check always runs in fp32 first (identical tokens / loss); in
bf16 two correct implementations may round differently, so the bf16 rows record the fraction of
generated tokens on which both sides agree instead of asserting it (the work per step, a fixed
number of new tokens with no EOS stop, is the same either way).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if not __package__:  # run as `python benchmarks/bench_decoders.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (and this checkout's hf_variants)

from benchmarks.workers import load_average, run_header, spawn_worker  # noqa: E402

SECTION_BEGIN = "<!-- bench_decoders: begin (written by benchmarks/bench_decoders.py --write) -->"
SECTION_END = "<!-- bench_decoders: end -->"


@dataclass(frozen=True)
class Scenario:
    description: str
    kind: str  # "clm" (causal-LM training), "seq2seq" (seq2seq training) or "generate" (greedy)
    model: str  # named config in modeling_configs/
    batch_size: int
    steps: int  # steps per timed repetition (cycling over `steps` distinct batches)
    new_tokens: int = 0  # generate: tokens generated per row
    max_length: int = 256  # clm: the packed row length and the truncation length of a document
    target: float = 0.0  # the speed ratio the issue asks for
    overrides: dict = field(default_factory=dict)  # config fields changed (the test's tiny scenario)
    device: str = "cpu"  # "cpu" or "cuda"
    dtype: str = "fp32"  # "fp32" or "bf16" (generation: bf16 weights; training: bf16 autocast)


DEVICES, DTYPES = ("cpu", "cuda"), ("fp32", "bf16")


# transformer-mini as Marian can express it: the paper's sin|cos halves.
PAPER_MARIAN = {"sinusoidal_layout": "concatenated"}

SCENARIOS = {
    "clm-gpt2-mini": Scenario(
        "CLM training step, gpt2-mini, 16 Austen paragraphs: ours packed, transformers padded",
        "clm",
        "gpt2-mini",
        16,
        2,
        target=1.5,
    ),
    "generate-gpt2-mini-b1": Scenario(
        "greedy generation, gpt2-mini, 1 Austen prompt, 64 new tokens",
        "generate",
        "gpt2-mini",
        1,
        2,
        new_tokens=64,
        target=1.2,
    ),
    "generate-gpt2-mini-b8": Scenario(
        "greedy generation, gpt2-mini, 8 left-padded Austen prompts, 64 new tokens",
        "generate",
        "gpt2-mini",
        8,
        1,
        new_tokens=64,
        target=1.2,
    ),
    "seq2seq-transformer-mini": Scenario(
        "training step, transformer-mini vs MarianMTModel, 32 movie-review sentences -> label word",
        "seq2seq",
        "transformer-mini",
        32,
        3,
        target=1.5,
        overrides=PAPER_MARIAN,
    ),
    "seq2seq-t5-mini": Scenario(
        "training step, t5-mini, 32 movie-review sentences -> label word", "seq2seq", "t5-mini", 32, 3, target=1.5
    ),
    "generate-t5-mini-b1": Scenario(
        "greedy generation, t5-mini, 1 movie-review sentence, 32 new tokens",
        "generate",
        "t5-mini",
        1,
        2,
        new_tokens=32,
        target=1.2,
    ),
    "generate-t5-mini-b8": Scenario(
        "greedy generation, t5-mini, 8 movie-review sentences, 32 new tokens",
        "generate",
        "t5-mini",
        8,
        1,
        new_tokens=32,
        target=1.2,
    ),
}


# ----------------------------------------------------------------------------- worker side
def build_sides(scenario: Scenario):
    """The two sides of a scenario and notes on its data (tokens per step, padding)."""
    from benchmarks import decoder_workloads as work

    data = work.Data.load()
    models = {
        name: model.to(scenario.device)
        for name, model in work.build_models(scenario.model, **scenario.overrides).items()
    }
    if scenario.kind == "clm":
        groups = work.clm_feature_groups(data, scenario.batch_size, scenario.steps, scenario.max_length)
        collators = work.clm_collators(data.documents_tokenizer)
        batches = {name: [collators[name](features) for features in groups[name]] for name in models}
        sides = [
            work.training_side(
                name,
                model,
                lambda i, name=name: work.to_device(collators[name](groups[name][i % scenario.steps]), scenario.device),
                scenario.dtype,
            )
            for name, model in models.items()
        ]
        notes = {
            f"{name}_tokens_per_step": sum(b["input_ids"].numel() for b in batches[name]) / scenario.steps
            for name in models
        }
        notes["real_tokens_per_step"] = (
            sum(int((b["labels"] != -100).sum()) for b in batches["transformers"]) / scenario.steps
        )
        return sides, notes
    if scenario.kind == "seq2seq":
        batches = work.seq2seq_batches(data, scenario.batch_size, scenario.steps, models["ours"])
        on_device = [work.to_device(batch, scenario.device) for batch in batches]
        sides = [
            work.training_side(name, model, lambda i: on_device[i % scenario.steps], scenario.dtype)
            for name, model in models.items()
        ]
        padded = sum(b["input_ids"].numel() for b in batches) / scenario.steps
        real = sum(int(b["attention_mask"].sum()) for b in batches) / scenario.steps
        return sides, {"source_tokens_per_step": padded, "real_source_tokens_per_step": real}
    if scenario.kind == "generate":
        if models["ours"].config.is_encoder_decoder:
            tokenizer, lists = data.pairs_tokenizer, data.sources
        else:
            # Prompts: the first 8..40 tokens of documents of at least 40 tokens (varied lengths).
            tokenizer = data.documents_tokenizer
            lists = [
                document[: 8 + (index * 11) % 33]
                for index, document in enumerate(d for d in data.documents if len(d) >= 40)
            ]
        pad = tokenizer.pad_token_id
        prompts = [
            work.to_device(
                work.left_padded_prompts(lists[i * scenario.batch_size : (i + 1) * scenario.batch_size], pad),
                scenario.device,
            )
            for i in range(scenario.steps)
        ]
        config = work.greedy_config(
            scenario.new_tokens, pad, getattr(models["ours"].config, "decoder_start_token_id", None)
        )
        sides = [work.GenerationSide(name, model.eval(), prompts, config) for name, model in models.items()]
        return sides, {"new_tokens_per_step": scenario.batch_size * scenario.new_tokens}
    raise ValueError(f"unknown scenario kind {scenario.kind!r}")


def check_same_work(scenario: Scenario, sides) -> dict:
    """Both sides must do the same work: the same eval-mode loss on the first batch (training) or
    the same generated tokens for every prompt batch (generation). Raises otherwise."""
    import torch

    if scenario.kind == "generate":
        for index in range(scenario.steps):  # fp32 weights here (bf16 sides are cast after this check)
            theirs, ours = (side.generate(index) for side in sides)
            if not torch.equal(theirs, ours):
                raise AssertionError(f"{scenario.description}: generated tokens differ for prompt batch {index}")
        return {"same_tokens": True}
    losses = {}
    for side in sides:
        side.model.eval()
        with torch.no_grad():
            losses[side.name] = side.loss(0, autocast=False).item()
        side.model.train()
    if abs(losses["ours"] - losses["transformers"]) > 1e-4 * abs(losses["transformers"]):
        raise AssertionError(f"{scenario.description}: eval losses differ {losses}")
    return {"eval_loss": losses}


def run_worker(kind: str, scenario: Scenario, reps: int) -> dict:
    from benchmarks import measure

    sides, notes = build_sides(scenario)
    if kind == "throughput":
        checks = check_same_work(scenario, sides)
        if scenario.kind == "generate" and scenario.dtype == "bf16":
            checks["bf16_token_agreement"] = bf16_generation(sides, scenario.steps, scenario.new_tokens)
        times = measure.interleaved_times(sides, scenario.steps, reps, warmup_steps=1)
        result = {**measure.ratio_summary(times), **notes, **checks}
        if scenario.device == "cuda":
            import torch

            result["gpu"] = torch.cuda.get_device_name()
        return result
    if kind == "profile":
        return {"tables": measure.profile_tables(sides, scenario.steps, row_limit=20)}
    raise ValueError(f"unknown worker kind {kind!r}")


def bf16_generation(sides, steps: int, new_tokens: int) -> float:
    """Cast both generation sides to bf16 weights and return the fraction of the generated positions
    (the last ``new_tokens`` of each row, over the ``steps`` prompt batches) where their tokens
    agree; 1.0 means identical output."""
    import torch

    for side in sides:
        side.model.to(torch.bfloat16)
    agree = total = 0
    for index in range(steps):
        theirs, ours = (side.generate(index) for side in sides)
        if theirs.shape != ours.shape:
            raise AssertionError(f"bf16 generation: output shapes differ {tuple(theirs.shape)} vs {tuple(ours.shape)}")
        same = theirs[:, -new_tokens:] == ours[:, -new_tokens:]
        agree, total = agree + int(same.sum()), total + same.numel()
    return agree / total


# ----------------------------------------------------------------------------- driver side
def spawn(kind: str, scenario: Scenario, reps: int, threads: int) -> dict:
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
    return spawn_worker(command, f"{kind} worker for {scenario.description}")


def format_row(name: str, scenario: Scenario, result: dict, load_before: str) -> str:
    if scenario.kind == "generate":
        unit = f"{result['new_tokens_per_step'] / result['ours_s']:.0f} / {result['new_tokens_per_step'] / result['theirs_s']:.0f} tokens/s"
    else:
        unit = f"{result['ours_s'] * 1e3:.0f} / {result['theirs_s'] * 1e3:.0f} ms/step"
    if scenario.kind == "clm":
        work = (
            f"{result['real_tokens_per_step']:.0f} predicted; rows hold {result['ours_tokens_per_step']:.0f} (ours) / "
            f"{result['transformers_tokens_per_step']:.0f} (transformers) positions"
        )
    elif scenario.kind == "seq2seq":
        work = f"{result['real_source_tokens_per_step']:.0f} real of {result['source_tokens_per_step']:.0f} padded source positions"
    elif "bf16_token_agreement" in result:
        work = (
            f"identical tokens asserted in fp32; bf16 tokens agree at {result['bf16_token_agreement']:.1%} of positions"
        )
    else:
        work = "identical tokens asserted"
    met = "yes" if result["ratio_median"] >= scenario.target else "**no**"
    if (scenario.device, scenario.dtype) != ("cpu", "fp32"):
        name = f"{name} ({scenario.device}, {scenario.dtype})"
    return (
        f"| {name} | {scenario.description} | {result['ratio_median']:.2f}× ({result['ratio_min']:.2f}–"
        f"{result['ratio_max']:.2f}) | {result['ratio_best']:.2f}× | {scenario.target:.1f}× {met} | {unit} | {work} | {load_before} |"
    )


TABLE_HEADER = (
    "| scenario | what | speed ours/transformers, median (min–max) | best/best | target met | ours / transformers "
    "| work per step | load avg before |\n|---|---|---|---|---|---|---|---|"
)


def replace_section(path: Path, body: str) -> None:
    """Write ``body`` between this harness's markers in ``path`` (replacing what was there; appended
    with the markers when the file has none), so re-running ``--write`` keeps one section."""
    text = path.read_text() if path.exists() else ""
    section = f"{SECTION_BEGIN}\n{body.strip()}\n{SECTION_END}"
    pattern = re.compile(re.escape(SECTION_BEGIN) + r".*?" + re.escape(SECTION_END), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def select(names: str | None) -> list[str]:
    chosen = names.split(",") if names else list(SCENARIOS)
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
    return chosen


def run(
    names: list[str],
    reps: int,
    threads: int,
    quick: bool,
    scenarios: dict = SCENARIOS,
    data_folder: Path | None = None,
    device: str = "cpu",
    dtypes: tuple[str, ...] = ("fp32",),
) -> list[str]:
    """Measure ``names`` of ``scenarios`` (each in its own process, once per dtype of ``dtypes``, on
    ``device``) and return the markdown rows. ``data_folder``: data already prepared by
    ``decoder_workloads.prepare_data`` (else prepared here)."""
    from benchmarks import decoder_workloads

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        if data_folder is None:
            decoder_workloads.prepare_data(Path(folder))  # tokenise once; every worker reads it
        os.environ["BENCH_DECODER_DATA"] = str(data_folder or folder)
        for name in names:
            for dtype in dtypes:
                # --quick: one batch per repetition (each repetition still interleaves both sides).
                scenario = dataclasses.replace(
                    scenarios[name], device=device, dtype=dtype, **({"steps": 1} if quick else {})
                )
                load_before, started = load_average(), time.perf_counter()
                row = format_row(name, scenario, spawn("throughput", scenario, reps, threads), load_before)
                print(row, flush=True)
                print(f"  ({name}, {dtype}: {time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
                rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one batch per repetition, 3 repetitions")
    parser.add_argument("--scenarios", help=f"comma-separated subset of: {', '.join(SCENARIOS)}")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per scenario (default 5, --quick 3)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the targets are for 2)")
    parser.add_argument("--write", help="write the results into this markdown file, replacing this harness's section")
    parser.add_argument(
        "--profile", metavar="SCENARIO", help="print torch.profiler tables (both sides) for one scenario"
    )
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda (a GPU)")
    parser.add_argument("--dtypes", default="fp32", help="fp32, bf16 or both, comma-separated (see the docstring)")
    parser.add_argument("--data", help="a folder --prepare-data wrote (default: tokenise the corpora here)")
    parser.add_argument("--prepare-data", metavar="FOLDER", help="tokenise the corpora into FOLDER and exit")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--scenario-json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    dtypes = tuple(args.dtypes.split(","))
    if args.device not in DEVICES or any(dtype not in DTYPES for dtype in dtypes):
        raise ValueError(
            f"--device {args.device!r} / --dtypes {args.dtypes!r}: choose the device from {DEVICES} "
            f"and dtypes from {DTYPES}"
        )

    import torch

    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not args.worker and not torch.cuda.is_available():
        raise ValueError(f"--device cuda: torch {torch.__version__} sees no CUDA GPU on this machine")
    if args.prepare_data:
        from benchmarks import decoder_workloads

        Path(args.prepare_data).mkdir(parents=True, exist_ok=True)
        decoder_workloads.prepare_data(Path(args.prepare_data))
        return
    if args.worker:
        scenario = Scenario(**json.loads(args.scenario_json))
        print(json.dumps(run_worker(args.worker, scenario, args.reps)))
        return
    if args.profile:
        from benchmarks import decoder_workloads

        scenario = SCENARIOS[select(args.profile)[0]]
        with tempfile.TemporaryDirectory() as folder:
            decoder_workloads.prepare_data(Path(folder))
            os.environ["BENCH_DECODER_DATA"] = folder
            tables = spawn("profile", scenario, 1, args.threads)["tables"]
        for name, table in tables.items():
            print(f"\n{name}: {scenario.description}, {args.threads} threads\n{table}")
        return

    reps = args.reps or (3 if args.quick else 5)
    gpu = f"; GPU {torch.cuda.get_device_name()}" if args.device == "cuda" else ""
    header = run_header(
        "benchmarks/bench_decoders.py", None, args.threads, f"{reps} timed repetitions after warm-up{gpu}"
    )
    print(header)
    print(TABLE_HEADER, flush=True)
    started = time.perf_counter()
    rows = run(
        select(args.scenarios),
        reps,
        args.threads,
        args.quick,
        device=args.device,
        dtypes=dtypes,
        data_folder=Path(args.data) if args.data else None,
    )
    footer = f"total {time.perf_counter() - started:.0f} s; load average after {load_average()}"
    print(footer)
    if args.write:
        replace_section(
            Path(args.write),
            "\n".join([f"### Decoders and encoder-decoders: run {header}", "", TABLE_HEADER, *rows, "", footer]),
        )


if __name__ == "__main__":
    main()
