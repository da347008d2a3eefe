"""Our MLM training step across the project's history: has our step slowed down, or has
transformers' sped up?

Issue #30 reports that our bert-mini MLM step on full 128-token rows led transformers' by 4.25x at
the start of the shared-blocks redesign and by 3.0-3.5x now. This script times our step as each
given commit wrote it, with transformers' step (the installed release) as the common reference:

    python benchmarks/mlm_step_history.py 67b8388 6584687 HEAD      # B=32, 2 threads, 3 rounds
    python benchmarks/mlm_step_history.py HEAD --batch-size 16 --rounds 1 --threads 1

Each commit's source tree is exported (``git archive``) to a temporary folder. The batches (full
128-token rows of the real movie-review sentences, real bert-base-uncased WordPiece, 15% masked by
this checkout's ``DataCollatorForMaskedLM``) are made once, so every commit trains on the same
tensors and collation is not timed. Per round, one fresh process per commit (the order rotating
between rounds) builds transformers' ``BertForMaskedLM`` (bert-mini, seed 0, SDPA) and converts it
to ours with that commit's ``hf_variants.from_transformers`` (sparse prediction on, as
``run_pretraining.py`` trains), then times forward + backward + fused AdamW of both sides
interleaved (``measure.interleaved_times``). Reported per commit: the median over rounds of ours'
and transformers' ms/step and of the ratio. transformers' ms/step is the same code in every
process, so its spread across commits is the measurement noise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BERT_MINI = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)


def make_batches(path: Path, batch_size: int, count: int) -> None:
    """Save ``count`` MLM batches of ``batch_size`` full 128-token rows to ``path`` (torch.save)."""
    import torch

    sys.path.insert(0, str(HERE))
    sys.path.insert(1, str(REPO))
    import workloads

    corpus = workloads.Corpus.load()
    _, ours, _ = workloads.mlm_collators(corpus.tokenizer)
    batches = []
    for index, rows in enumerate(workloads.full_length_batches(corpus, batch_size, count)):
        torch.manual_seed(index)
        batches.append(
            {
                key: value
                for key, value in ours([{"input_ids": ids.tolist()} for ids in rows["input_ids"]]).items()
                if key in ("input_ids", "attention_mask", "labels")
            }
        )
    torch.save(batches, path)


def worker(tree: str, batches_path: str, reps: int) -> dict:
    """In a process whose ``hf_variants`` is ``tree``'s: time ours and transformers' step."""
    import torch
    import transformers

    import hf_variants

    if not hf_variants.__file__.startswith(tree):
        raise RuntimeError(f"imported {hf_variants.__file__}, not the tree {tree}")
    sys.path.insert(0, str(HERE))  # this checkout's measure.py (timing only)
    import measure

    batches = torch.load(batches_path)
    torch.manual_seed(0)
    config = transformers.BertConfig(**BERT_MINI)
    config._attn_implementation = "sdpa"
    theirs = transformers.BertForMaskedLM(config)
    ours = hf_variants.from_transformers(theirs)
    ours.config._attn_implementation = "sdpa"
    ours.config.sparse_prediction = True

    class Side:
        def __init__(self, name, model):
            self.name, self.model = name, model.train()
            self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

        def step(self, index):
            torch.manual_seed(index)  # the same dropout draws per step on both sides' RNG streams
            self.model(**batches[index % len(batches)]).loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)

    times = measure.interleaved_times([Side("transformers", theirs), Side("ours", ours)], len(batches), reps, 2)
    return measure.ratio_summary(times)


def export_tree(commit: str, folder: Path) -> Path:
    target = folder / commit
    target.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "hf_variants"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def main(argv: list[str] | None = None) -> dict[str, dict]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, prog="benchmarks/mlm_step_history.py"
    )
    parser.add_argument("commits", nargs="*", help="git revisions whose hf_variants to time (HEAD: the committed tree)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per commit (rotating order)")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions of 2 steps per process")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps(worker(args.worker[0], args.worker[1], args.reps)))
        return {}
    if not args.commits:
        parser.error("name at least one commit")
    results: dict[str, list[dict]] = {commit: [] for commit in args.commits}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        trees = {commit: export_tree(commit, folder) for commit in args.commits}
        batches = folder / "batches.pt"
        make_batches(batches, args.batch_size, 2)
        for round_index in range(args.rounds):
            shift = round_index % len(args.commits)
            for commit in args.commits[shift:] + args.commits[:shift]:
                environment = {**os.environ, "PYTHONPATH": str(trees[commit])}
                command = [
                    sys.executable,
                    __file__,
                    "--worker",
                    str(trees[commit]),
                    str(batches),
                    "--reps",
                    str(args.reps),
                    "--threads",
                    str(args.threads),
                ]
                done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=scratch)
                if done.returncode != 0:
                    raise RuntimeError(f"{commit}: worker failed\n{done.stderr[-3000:]}")
                results[commit].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"round {round_index + 1} {commit}: {results[commit][-1]}", file=sys.stderr, flush=True)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; B={args.batch_size} full 128-token rows, "
        f"{args.threads} threads, {args.rounds} rounds; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("| commit | ours ms/step | transformers ms/step | ratio (median of rounds) |\n|---|---|---|---|")
    summary = {}
    for commit, rows in results.items():
        summary[commit] = {
            key: statistics.median(row[key] for row in rows) for key in ("ours_s", "theirs_s", "ratio_median")
        }
        print(
            f"| {commit} | {summary[commit]['ours_s'] * 1e3:.0f} | {summary[commit]['theirs_s'] * 1e3:.0f} | "
            f"{summary[commit]['ratio_median']:.2f}× |"
        )
    return summary


if __name__ == "__main__":
    main()
