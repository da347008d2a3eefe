"""FLOPs of one pretraining step (forward + backward) of named configs, as run_pretraining.py builds them:
the budget unit of an equal-compute comparison (ELECTRA vs BERT: how many BERT steps one ELECTRA step is worth).

    python benchmarks/pretraining_flops.py electra-mini bert-mini --batch_size 32 --max_seq_length 64

Each model is built from its named config with the given vocabulary and sparse prediction (vocabulary
logits at the masked positions only), as run_pretraining does; the batch is full-length rows with 15%
of the positions masked (the collators' rate; ELECTRA: its config's). ELECTRA's joint model counts its
generator, the sampling and the discriminator; a model whose spec pretrains with a sentence task is
counted as a plain masked LM (`--objective mlm`). FLOPs come from `torch.utils.flop_counter.FlopCounterMode`
(matmuls and attention; element-wise work is not counted). Prints JSON: GFLOPs per step and the ratio
of each model to the last one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if not __package__:  # run as `python benchmarks/pretraining_flops.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (and this checkout's hf_variants)

from transformers import AutoModelForMaskedLM, AutoModelForPreTraining  # noqa: E402

import hf_variants  # noqa: E402
from hf_variants.objectives.budget import count_flops, masked_batch  # noqa: E402,F401  (the library's FLOP count)


def step_flops(name: str, batch_size: int, length: int, vocab_size: int) -> int:
    """FLOPs of one forward + backward of `name`'s pretraining model (see the module docstring)."""
    config = hf_variants.named_config(name)
    config.vocab_size = vocab_size
    if hasattr(config, "sparse_prediction"):
        config.sparse_prediction = True
    joint = hasattr(config, "generator_config")  # ELECTRA: generator + discriminator
    model = (AutoModelForPreTraining if joint else AutoModelForMaskedLM).from_config(config)
    batch = masked_batch(batch_size, length, vocab_size, getattr(config, "mlm_probability", 0.15), mask_id=4)

    def train_step() -> None:
        model(**batch).loss.backward()

    return count_flops(train_step)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+", help="named configs; ratios are to the last one")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--vocab_size", type=int, default=8000)
    args = parser.parse_args(argv)
    if min(args.batch_size, args.max_seq_length, args.vocab_size) < 1:
        raise ValueError("--batch_size, --max_seq_length and --vocab_size must be positive")
    flops = {name: step_flops(name, args.batch_size, args.max_seq_length, args.vocab_size) for name in args.names}
    reference = flops[args.names[-1]]
    results = {name: {"gflops_per_step": value / 1e9, "ratio": value / reference} for name, value in flops.items()}
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
