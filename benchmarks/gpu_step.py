"""The step mode (``gpu_pretraining_check.sh MODE=step``): one pretraining step at base width, ours
with the speed path on and off beside transformers' (sdpa), tokens/s, MFU and peak memory.

    python benchmarks/gpu_step.py --variants bert,roberta,electra --dtypes bf16,fp32 \\
        --shapes 128x512,64x512,32x512 --json step.json              # on a GPU (--device cuda, the default)
    python benchmarks/gpu_step.py --device cpu --variants bert --dtypes fp32 --shapes 2x32 \\
        --overrides '{"num_hidden_layers": 1, "hidden_size": 32, ...}'  # the CPU test of the same code

One fresh process per (variant, precision) (``workers.spawn_worker``) builds the named base config
(``--named``, default ``<variant>-base``) three ways with identical weights (``bench_pretraining.build_models``
and a copy): transformers' class (sdpa), ours with ``config.padding_free = False`` (the plain path)
and ours with ``padding_free = True`` (the speed path). It tries the B x T shapes largest first and
measures the first that fits; one that runs out of memory is recorded as such (the batch's
activations do not fit beside the three models and their AdamW states). Before timing, the three
fp32 eval-mode losses on the first batch must agree (the same work). The timing is
``bench_pretraining``'s: ``measure.interleaved_times`` (repetitions alternate the sides' order;
``torch.cuda.synchronize`` around each), fused AdamW, bf16 = CUDA autocast around forward and loss.

The speed path on CUDA: ``hf_variants.modules.fast_path.fast_path_enabled`` selects it for CPU
inputs only (measured faster there; "on CUDA the plain path runs until a GPU run shows the fast one
faster"). To measure that, this program extends the switch to the device it runs on
(:func:`extend_speed_path_to`, for its own process) and records per row whether the speed path
engaged. The rows hold full 128..512-token rows without padding, as bench_pretraining's do: the
packed layout only engages on padding, so what the switch changes here is the last layer computing
only the masked positions (``HeadReads``).

MFU = FLOPs of the step / seconds / the GPU's peak (``PEAK_TFLOPS``, NVIDIA's dense data-sheet
figures; fp32 against the fp32 peak unless TF32 matmuls are on). The FLOPs are ours' plain step
counted by ``hf_variants.objectives.budget.training_step_flops`` (what ``pretraining_flops.py``
counts: matmuls and attention, forward and backward, sparse prediction) on the measured batch, the
same work for every side (transformers' dense vocabulary logits are extra work it chose, not
counted as useful). Peak memory: ``torch.cuda.max_memory_allocated`` during one more step of each
side, above what all three models and their optimizers hold. ``--compile``: each side's model
through ``torch.compile`` (both sides alike; compile time is spent in the warm-up).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if not __package__:  # run as `python benchmarks/gpu_step.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.workers import spawn_worker  # noqa: E402

VARIANTS = ("bert", "roberta", "electra")
SIDES = ("transformers", "ours_plain", "ours_speed")
DEFAULT_SHAPES = "128x512,64x512,32x512"
# Dense (no sparsity) peak TFLOP/s from NVIDIA's data sheets, by the name torch reports; the first
# key found in the device name wins (so "H100 PCIe" before "H100").
PEAK_TFLOPS = {
    "H200": {"bf16": 989.4, "tf32": 494.7, "fp32": 66.9},
    "H100 PCIe": {"bf16": 756.5, "tf32": 378.0, "fp32": 51.2},
    "H100 NVL": {"bf16": 835.5, "tf32": 417.5, "fp32": 60.0},
    "H100": {"bf16": 989.4, "tf32": 494.7, "fp32": 66.9},  # SXM ("NVIDIA H100 80GB HBM3")
}


@dataclass(frozen=True)
class StepSetting:
    """What one worker measures: a variant's base config in one precision, shapes tried in order."""

    variant: str
    dtype: str  # "fp32" or "bf16"
    shapes: tuple[tuple[int, int], ...]  # (B, T), largest first
    named: str | None = None  # default f"{variant}-base"
    steps: int = 3
    reps: int = 5
    warmup: int = 2
    compile: bool = False
    device: str = "cuda"
    overrides: dict = field(default_factory=dict)  # config fields changed (the CPU test's tiny models)


def parse_shapes(text: str) -> tuple[tuple[int, int], ...]:
    """ "128x512,64x512" -> ((128, 512), (64, 512)); ValueError naming a malformed entry."""
    shapes = []
    for item in text.split(","):
        batch, sep, length = item.strip().lower().partition("x")
        if not (sep and batch.isdigit() and length.isdigit() and int(batch) > 0 and int(length) > 0):
            raise ValueError(f"--shapes entry {item!r}: expected BxT with positive integers, e.g. 64x512")
        shapes.append((int(batch), int(length)))
    return tuple(shapes)


def peak_tflops(device_name: str | None, dtype: str, tf32: bool) -> tuple[float | None, str | None]:
    """(peak TFLOP/s, the key it came from) for a device name; (None, None) for a GPU not in the table."""
    if not device_name:
        return None, None
    kind = "bf16" if dtype == "bf16" else ("tf32" if tf32 else "fp32")
    for name, peaks in PEAK_TFLOPS.items():
        if name in device_name:
            return peaks[kind], f"{name} {kind}"
    return None, None


def extend_speed_path_to(device_type: str) -> int:
    """Let ``config.padding_free`` select the speed path for ``device_type`` inputs in this process:
    replaces ``fast_path_enabled`` in ``hf_variants.modules.fast_path`` and in every loaded
    hf_variants module that imported it by name. Returns how many modules were changed (0 for the
    CPU, where it is on already)."""
    import hf_variants  # noqa: F401  (loads every model module)
    from hf_variants.modules import fast_path

    if device_type == "cpu":
        return 0
    original = fast_path.fast_path_enabled

    def enabled(config, device) -> bool:
        return bool(config.padding_free) and device.type in ("cpu", device_type)

    changed = 0
    for module in list(sys.modules.values()):
        if (
            getattr(module, "__name__", "").startswith("hf_variants")
            and getattr(module, "fast_path_enabled", None) is original
        ):
            module.fast_path_enabled = enabled
            changed += 1
    return changed


def _release(device: str) -> None:
    import torch

    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def measure_shape(setting: StepSetting, batch_size: int, length: int) -> dict:
    """Build the three sides, check their losses agree, time them; one row's measurements."""
    import torch

    from benchmarks import bench_pretraining, measure
    from hf_variants.objectives.budget import training_step_flops

    named = setting.named or f"{setting.variant}-base"
    device = torch.device(setting.device)
    built = bench_pretraining.build_models(setting.variant, setting.overrides, named)
    models = {"transformers": built["transformers"], "ours_plain": built["ours"]}
    models["ours_speed"] = copy.deepcopy(built["ours"])
    models["ours_plain"].config.padding_free = False
    models["ours_speed"].config.padding_free = True
    models = {name: model.to(device) for name, model in models.items()}
    del built
    batches = bench_pretraining.pretraining_batches(
        setting.variant, models["ours_plain"].config, batch_size, min(setting.steps, 2), length=length, repeat=True
    )
    losses = bench_pretraining.eval_losses(models, batches[0])
    reference = losses["transformers"]
    for name in ("ours_plain", "ours_speed"):
        if abs(losses[name] - reference) > 1e-3 * max(1.0, abs(reference)):
            raise RuntimeError(f"{setting.variant}: {name} and transformers compute different losses {losses}")
    from hf_variants.modules import fast_path

    engaged = fast_path.fast_path_enabled(models["ours_speed"].config, device)
    flops_batch = {
        key: value.to(device) for key, value in bench_pretraining.accepted(models["ours_plain"], batches[0]).items()
    }
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if setting.dtype == "bf16" else nullcontext()
    with autocast:  # as the timed step runs (the count is the same; the memory is the step's)
        flops = training_step_flops(models["ours_plain"], flops_batch)
    models["ours_plain"].zero_grad(set_to_none=True)
    sides = [bench_pretraining.TrainingSide(name, models[name], batches, setting.dtype) for name in SIDES]
    if setting.compile:
        for side in sides:
            side.model = torch.compile(side.model)
    times = measure.interleaved_times(sides, setting.steps, setting.reps, setting.warmup)
    tokens = batch_size * length
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    tf32 = bool(torch.backends.cuda.matmul.allow_tf32) if device.type == "cuda" else False
    peak, peak_source = peak_tflops(gpu, setting.dtype, tf32)
    per_side = {}
    after = setting.warmup + setting.reps * setting.steps
    for side in sides:
        seconds = sorted(times[side.name])[len(times[side.name]) // 2]
        per_side[side.name] = {
            "ms_per_step": seconds * 1e3,
            "tokens_per_s": tokens / seconds,
            "tflops_per_s": flops / seconds / 1e12,
            "mfu": flops / seconds / (peak * 1e12) if peak else None,
            "memory": side.step_memory(after) if device.type == "cuda" else None,
        }
    return {
        "batch_size": batch_size,
        "length": length,
        "named": named,
        "losses": losses,
        "speed_path_engaged": engaged,
        "flops_per_step": flops,
        "gpu": gpu,
        "tf32": tf32,
        "peak_tflops": peak,
        "peak_source": peak_source,
        "sides": per_side,
        "plain_vs_transformers": measure.ratio_summary(times, "ours_plain", "transformers"),
        "speed_vs_transformers": measure.ratio_summary(times, "ours_speed", "transformers"),
        "times": times,
    }


def measure_setting(setting: StepSetting) -> dict:
    """The shapes in order until one fits: {"tried": [shape records], "row": measurements or None}."""
    from benchmarks.gpu_proof import is_out_of_memory

    if setting.device != "cpu":
        patched = extend_speed_path_to(setting.device)
        if patched == 0:
            raise RuntimeError("could not extend the speed path to CUDA: no module holds fast_path_enabled")
    tried = []
    for batch_size, length in setting.shapes:
        row = None
        try:
            row = measure_shape(setting, batch_size, length)
        except Exception as error:  # noqa: BLE001  (an OOM is reported and the next shape tried)
            if not is_out_of_memory(error):
                raise
        if row is None:
            # Released here, after the except clause: its traceback held the failed shape's tensors.
            tried.append({"batch_size": batch_size, "length": length, "error": "out of memory"})
            _release(setting.device)
            continue
        tried.append({"batch_size": batch_size, "length": length, "error": None})
        return {"tried": tried, "row": row}
    return {"tried": tried, "row": None}


def spawn(setting: StepSetting, threads: int | None) -> dict:
    command = [sys.executable, __file__, "--worker", json.dumps(asdict(setting)), "--device", setting.device]
    if threads:
        command += ["--threads", str(threads)]
    return spawn_worker(command, f"worker for {setting.variant} {setting.dtype}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, prog="benchmarks/gpu_step.py"
    )
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {', '.join(VARIANTS)}"
    )
    parser.add_argument("--dtypes", default="bf16,fp32", help="bf16, fp32 or both")
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help="B x T to try, largest first (default %(default)s)")
    parser.add_argument("--named", default=None, help="named config for every variant (default <variant>-base)")
    parser.add_argument("--steps", type=int, default=3, help="steps per timed repetition")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per side first")
    parser.add_argument("--compile", action="store_true", help="torch.compile every side's model")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu (the test of the same code)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (CPU)")
    parser.add_argument("--json", type=Path, help="write every row here (written after each worker)")
    parser.add_argument("--overrides", default="{}", help=argparse.SUPPRESS)  # JSON config overrides (tests)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device not in ("cpu", "cuda"):
        raise ValueError(f"--device must be cpu or cuda, got {args.device!r}")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device cuda: torch {torch.__version__} sees no CUDA GPU")
    if args.worker:
        payload = json.loads(args.worker)
        payload["shapes"] = tuple(tuple(shape) for shape in payload["shapes"])
        print(json.dumps(measure_setting(StepSetting(**payload))))
        return {"rows": []}
    variants, dtypes = args.variants.split(","), args.dtypes.split(",")
    unknown = [v for v in variants if v not in VARIANTS] + [d for d in dtypes if d not in ("fp32", "bf16")]
    if unknown:
        raise ValueError(f"unknown variants or precisions {unknown}: choose from {', '.join(VARIANTS)} and fp32, bf16")
    if min(args.steps, args.reps) < 1 or args.warmup < 0:
        raise ValueError("--steps and --reps must be >= 1, --warmup >= 0")
    shapes = parse_shapes(args.shapes)
    started = time.perf_counter()
    records = []
    report = {"command": ["benchmarks/gpu_step.py", *(argv if argv is not None else sys.argv[1:])], "rows": records}
    for variant in variants:
        for dtype in dtypes:
            setting = StepSetting(
                variant,
                dtype,
                shapes,
                named=args.named,
                steps=args.steps,
                reps=args.reps,
                warmup=args.warmup,
                compile=args.compile,
                device=args.device,
                overrides=json.loads(args.overrides),
            )
            try:
                result = spawn(setting, args.threads)
                record = {"setting": asdict(setting), **result, "error": None}
            except Exception as error:  # noqa: BLE001  (one failing worker loses only its own row)
                record = {"setting": asdict(setting), "tried": [], "row": None, "error": str(error)[-2000:]}
            records.append(record)
            print(
                json.dumps({k: v for k, v in record.items() if k != "row"} | {"measured": record["row"] is not None}),
                flush=True,
            )
            report["seconds"] = round(time.perf_counter() - started, 1)
            if args.json:
                args.json.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    # Exit 1 when a row is missing (a failed worker, or no shape fitted): the check names the stage failed.
    sys.exit(1 if any(record["row"] is None for record in main()["rows"]) else 0)
