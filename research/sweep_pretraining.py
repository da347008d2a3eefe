"""A small hyperparameter sweep over run_pretraining.py: every combination of the values given,
for each seed, one run after the other in this process; each run's eval_results.json is collected
into sweep.jsonl (one line per run, rewritten as each finishes) and a summary table is printed.

    python -m research.sweep_pretraining --output_dir /work/runs/sweep-bert --seeds 0 1 2 \\
        --grid learning_rate=3e-4,1e-3 warmup_steps=0.02,0.06 -- \\
        --model_name_or_path bert-mini --recipe bert --corpus austen --max_time 10 --max_steps 3000

Arguments after `--` go to every run unchanged; a grid entry `name=v1,v2` adds `--name v` for each
value. A run whose output folder already holds eval_results.json is not run again (an interrupted
sweep resumes where it stopped). Selection uses the held-out split run_pretraining reports on:
never tune on a test split.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from research.example_scripts import example_script


def grid_runs(grid: list[str]) -> list[dict[str, str]]:
    """["learning_rate=1e-3,3e-4", "warmup_steps=0.06"] -> one {name: value} per combination."""
    axes = []
    for entry in grid:
        name, _, values = entry.partition("=")
        if not name or not values:
            raise ValueError(f"--grid entries look like name=v1,v2; got {entry!r}")
        axes.append([(name, value) for value in values.split(",")])
    return [dict(combination) for combination in itertools.product(*axes)]


def run_name(setting: dict[str, str], seed: int) -> str:
    return "_".join([f"{name}-{value}" for name, value in setting.items()] + [f"seed-{seed}"])


def main(argv: list[str] | None = None) -> list[dict]:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--grid", nargs="*", default=[])
    args = parser.parse_args(argv[:split])
    common = argv[split + 1 :]
    if any(flag in common for flag in ("--output_dir", "--seed")):
        raise ValueError("--output_dir and --seed are set per run by the sweep; leave them out after --")
    root = Path(args.output_dir)
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for setting in grid_runs(args.grid):
        for seed in args.seeds:
            folder = root / run_name(setting, seed)
            if not (folder / "eval_results.json").is_file():
                flags = [item for name, value in setting.items() for item in (f"--{name}", value)]
                example_script("run_pretraining").main(
                    common + flags + ["--seed", str(seed), "--output_dir", str(folder)]
                )
            results = json.loads((folder / "eval_results.json").read_text())
            line = {
                **setting,
                "seed": seed,
                "held_out_loss": results["after_training"]["mlm_loss"],
                "held_out_accuracy": results["after_training"]["mlm_accuracy"],
                "steps": results["global_step"],
                "tokens": results.get("tokens_seen"),
                "minutes": results.get("train_minutes"),
                "folder": str(folder),
            }
            lines.append(line)
            (root / "sweep.jsonl").write_text("".join(json.dumps(done) + "\n" for done in lines))
    for line in sorted(lines, key=lambda line: line["held_out_loss"]):
        print(json.dumps(line))
    return lines


if __name__ == "__main__":
    main()
