"""The proof mode's batch choice (``gpu_pretraining_check.sh MODE=proof``, stage "batch_probe"):
tokens/s of the mini's pretraining step at a few batch sizes, measured in the first seconds on the
device, and the one to pretrain with.

    python benchmarks/gpu_proof.py --model roberta-mini --tokenizer SHARD/tokenizer_bpe --batch-sizes 128,256,512 \\
        --minutes 5 --json probe.json --env choice.env

Each batch size runs the model ``run_pretraining.py`` builds (the named config, the tokenizer's
vocabulary, sparse prediction) on a full-length masked batch (``hf_variants.objectives.budget.masked_batch``
at ``--mlm-probability``): forward and loss under bf16 autocast, backward, fused AdamW, for
``--seconds`` after two warm-up steps, the clock stopped only after the device has finished
(``torch.cuda.synchronize``). A size that runs out of memory is recorded as such and skipped. The
fastest in tokens/s is chosen; ``--env`` gets ``BATCH=<it>`` and ``STEPS=<the steps that fill
--minutes at --efficiency of the probed rate>`` (the learning-rate schedule's length, so its decay
ends about when ``--max_time`` stops the run; evaluations and the input pipeline take the rest).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if not __package__:  # run as `python benchmarks/gpu_proof.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

DEFAULT_EFFICIENCY = 0.8  # share of the probed rate run_pretraining keeps (evaluations, data loading, logging)


def is_out_of_memory(error: BaseException) -> bool:
    """A device allocation failure (torch's OutOfMemoryError, or the CPU allocator's message)."""
    return isinstance(error, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in str(error).lower()


def build_model(model_name: str, vocab_size: int, config_overrides: str | None, device: str):
    """The model run_pretraining.py trains from ``model_name`` (a named config), on ``device``."""
    from transformers import AutoModelForMaskedLM

    import hf_variants  # noqa: F401  (registers the variants with the Auto classes)
    from hf_variants.training.pretraining import load_config

    config, _ = load_config(model_name, config_overrides)
    config.vocab_size = vocab_size
    if hasattr(config, "sparse_prediction"):
        config.sparse_prediction = True
    torch.manual_seed(0)
    return AutoModelForMaskedLM.from_config(config).to(device).train()


def tokens_per_second(
    model, batch_size: int, length: int, mlm_probability: float, mask_id: int, seconds: float, bf16: bool
) -> dict:
    """Train ``model`` on one (batch_size, length) batch for ``seconds`` after 2 warm-up steps:
    {"batch_size", "length", "steps", "seconds", "tokens_per_s"}."""
    from hf_variants.objectives.budget import masked_batch

    device = next(model.parameters()).device
    batch = {
        key: value.to(device)
        for key, value in masked_batch(batch_size, length, model.config.vocab_size, mlm_probability, mask_id).items()
    }
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else nullcontext()

    def synchronize() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def step() -> None:
        with autocast:
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    synchronize()
    steps, started = 0, time.perf_counter()
    while True:
        step()
        steps += 1
        synchronize()
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            break
    return {
        "batch_size": batch_size,
        "length": length,
        "steps": steps,
        "seconds": round(elapsed, 3),
        "tokens_per_s": batch_size * length * steps / elapsed,
    }


def choose(rows: list[dict], minutes: float, efficiency: float) -> dict:
    """The fastest row's batch and the steps that fill ``minutes`` at ``efficiency`` of its rate.
    ValueError when no batch size ran."""
    measured = [row for row in rows if "tokens_per_s" in row]
    if not measured:
        raise ValueError(f"no batch size could be measured: {rows}")
    best = max(measured, key=lambda row: row["tokens_per_s"])
    steps = max(1, math.floor(best["tokens_per_s"] * efficiency * minutes * 60 / (best["batch_size"] * best["length"])))
    return {"batch_size": best["batch_size"], "steps": steps, "tokens_per_s": best["tokens_per_s"]}


def probe(
    model_name: str,
    tokenizer_dir: Path,
    batch_sizes: list[int],
    length: int,
    seconds: float,
    minutes: float,
    device: str,
    bf16: bool = True,
    mlm_probability: float = 0.4,
    config_overrides: str | None = None,
    efficiency: float = DEFAULT_EFFICIENCY,
) -> dict:
    """Measure every batch size (see the module docstring); {"rows": [...], "choice": {...}, ...}."""
    from transformers import AutoTokenizer

    if not batch_sizes or min(batch_sizes) < 1:
        raise ValueError(f"--batch-sizes must be positive integers, got {batch_sizes}")
    if not 0 < efficiency <= 1:
        raise ValueError(f"--efficiency must be in (0, 1], got {efficiency}")
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    if tokenizer.mask_token_id is None:
        raise ValueError(f"{tokenizer_dir}: the tokenizer has no mask token (an MLM needs one)")
    rows = []
    for batch_size in batch_sizes:
        model = None
        try:
            model = build_model(model_name, len(tokenizer), config_overrides, device)
            rows.append(
                tokens_per_second(model, batch_size, length, mlm_probability, tokenizer.mask_token_id, seconds, bf16)
            )
        except Exception as error:  # noqa: BLE001  (an OOM is reported and the next size tried)
            if not is_out_of_memory(error):
                raise
            rows.append({"batch_size": batch_size, "length": length, "error": "out of memory"})
        finally:
            del model
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
        print(json.dumps(rows[-1]), flush=True)
    return {
        "model": model_name,
        "device": device,
        "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
        "bf16": bf16,
        "mlm_probability": mlm_probability,
        "seconds_per_size": seconds,
        "efficiency": efficiency,
        "rows": rows,
        "choice": choose(rows, minutes, efficiency),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, prog="benchmarks/gpu_proof.py"
    )
    parser.add_argument("--model", default="roberta-mini", help="the named config pretrained")
    parser.add_argument("--config-overrides", default=None, help="run_pretraining.py's --config_overrides")
    parser.add_argument("--tokenizer", type=Path, required=True, help="the tokenizer folder the run uses")
    parser.add_argument("--batch-sizes", default="128,256,512", help="comma-separated rows per batch to try")
    parser.add_argument("--length", type=int, default=128, help="tokens per row (the recipe's)")
    parser.add_argument("--seconds", type=float, default=4.0, help="timed seconds per batch size")
    parser.add_argument(
        "--minutes", type=float, required=True, help="the pretraining budget (run_pretraining's --max_time)"
    )
    parser.add_argument("--mlm-probability", type=float, default=0.4)
    parser.add_argument("--efficiency", type=float, default=DEFAULT_EFFICIENCY, help="share of the rate the run keeps")
    parser.add_argument("--device", default="cuda", help="cuda or cpu")
    parser.add_argument("--fp32", action="store_true", help="no bf16 autocast")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--env", type=Path, help="write BATCH=... and STEPS=... here (for the shell script)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device cuda: torch {torch.__version__} sees no CUDA GPU")
    result = probe(
        args.model,
        args.tokenizer,
        [int(size) for size in args.batch_sizes.split(",") if size.strip()],
        args.length,
        args.seconds,
        args.minutes,
        args.device,
        bf16=not args.fp32,
        mlm_probability=args.mlm_probability,
        config_overrides=args.config_overrides,
        efficiency=args.efficiency,
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.env:
        args.env.write_text(f"BATCH={result['choice']['batch_size']}\nSTEPS={result['choice']['steps']}\n")
    print(json.dumps(result["choice"]))
    return result


if __name__ == "__main__":
    main()
