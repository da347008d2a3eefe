#!/usr/bin/env python
"""Evaluate a pretrained checkpoint beside its random-weight twin: fine-tuning on real tasks and
frozen-feature linear probes, N seeds each, mean ± std. Every later pretraining comparison uses it::

    python -m research.evaluate_pretraining --model_name_or_path runs/bert-mini-mlm \\
        --seeds 3 --tasks sentiment pos ner probe --output_dir runs/bert-mini-mlm/eval

``--model_name_or_path``: a checkpoint folder with its tokenizer (what run_pretraining.py saves;
a transformers BERT folder such as all-MiniLM-L6-v2 works too), or ``--tokenizer_name`` for one.

Tasks (fixed schedules in ``SCHEDULES``, changed with ``--set TASK.FIELD=VALUE``):

- ``sentiment``: run_glue.py on the rt-polarity movie-review snippets (``hf_variants/rt_polarity``,
  8,454 / 1,057 / 1,057 sentences), accuracy;
- ``pos``: run_ner.py --task_name pos on the WSJ sample (``hf_variants/wsj_pos``, 801 / 100 / 100
  sentences), word accuracy;
- ``ner``: run_ner.py on WNUT-16 tweets (``hf_variants/wnut16``, 1,916 / 239 / 239), entity F1;
- ``qa``: run_qa.py on the cloze questions over real paragraphs (``hf_variants/real_text_qa``,
  SQuAD v2 schema; not SQuAD), F1 (opt-in: the most expensive);
- ``probe``: logistic regression on frozen features: sentiment (mean-pooled; first token beside
  it) and POS (each word's first subword), C chosen on validation.

Each is run on the checkpoint and on its random twin (same config and tokenizer, the class's own
initialisation under ``torch.manual_seed(seed)``, one twin per seed) under the identical schedule
and seed. Nothing is chosen on test: the schedules are fixed in advance, the probes' C is picked
on validation, and test scores are reported. Baselines: majority class, per-word most frequent
tag (POS, NER), all-'O' (NER), empty answer (QA).

Writes ``evaluation.json`` (per task: schedule, per-seed validation/test scores, train loss and
wall time, mean and std, baselines) after every run, and ``evaluation.md`` with the table it
prints. ``--resume`` reuses finished runs of an earlier, interrupted call with the same schedules.
``--quick``: tiny subsets and one epoch (seconds; for tests and smoke checks, not for numbers).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import datasets
import torch
from transformers import AutoTokenizer

from hf_variants.data import load_named_dataset
from hf_variants.hub.atomic import write_text_atomically
from research import evaluation_support as ev
from research.example_scripts import example_script

FINE_TUNING_TASKS = ("sentiment", "pos", "ner", "qa")
TASKS = FINE_TUNING_TASKS + ("probe",)
DEFAULT_TASKS = ("sentiment", "pos", "ner", "probe")
ARMS = ("pretrained", "random")
DEFAULT_FIRST_SEED = 42

# Fine-tuning schedules, fixed in advance for the mini sizes (4 x 256) on CPU; warmup is a
# fraction of the steps, the learning rate decays linearly (Trainer's default), AdamW.
SCHEDULES: dict[str, dict] = {
    "sentiment": {
        "num_train_epochs": 1,
        "learning_rate": 5e-4,
        "per_device_train_batch_size": 32,
        "max_seq_length": 64,
        "warmup_steps": 0.1,
        "weight_decay": 0.01,
    },
    "pos": {
        "num_train_epochs": 3,
        "learning_rate": 5e-4,
        "per_device_train_batch_size": 16,
        "max_seq_length": 96,
        "warmup_steps": 0.1,
        "weight_decay": 0.01,
    },
    "ner": {
        "num_train_epochs": 3,
        "learning_rate": 5e-4,
        "per_device_train_batch_size": 32,
        "max_seq_length": 64,
        "warmup_steps": 0.1,
        "weight_decay": 0.01,
    },
    "qa": {
        "num_train_epochs": 1,
        "learning_rate": 5e-4,
        "per_device_train_batch_size": 16,
        "max_seq_length": 192,
        "doc_stride": 64,
        "warmup_steps": 0.1,
        "weight_decay": 0.01,
    },
    "probe": {"sentiment_max_length": 64, "pos_max_length": 128, "C_grid": list(ev.PROBE_C_GRID)},
}
QUICK = {
    "max_train_samples": 48,
    "max_eval_samples": 24,
    "max_predict_samples": 24,
    "num_train_epochs": 1,
    "per_device_train_batch_size": 16,
    "max_seq_length": 32,
}
QUICK_PROBE_ROWS = {"train": 64, "validation": 32, "test": 32}

# task -> (script, dataset, extra arguments, metric key without the split prefix)
TASK_DATA = {
    "sentiment": ("run_glue", "hf_variants/rt_polarity", [], "accuracy"),
    "pos": ("run_ner", "hf_variants/wsj_pos", ["--task_name", "pos", "--label_column_name", "pos_tags"], "accuracy"),
    "ner": ("run_ner", "hf_variants/wnut16", ["--task_name", "ner"], "f1"),
    "qa": ("run_qa", "hf_variants/real_text_qa", ["--version_2_with_negative"], "f1"),
}
PERCENT_ALREADY = {"qa"}  # SQuAD scores come in percent; the others as fractions
KEPT_RUN_FILES = ("all_results.json", "trainer_state.json")


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model_name_or_path", required=True, help="Checkpoint folder (with its tokenizer).")
    parser.add_argument("--tokenizer_name", default=None, help="Tokenizer folder, when the checkpoint has none.")
    parser.add_argument("--output_dir", required=True, help="Where evaluation.json, evaluation.md and the runs go.")
    parser.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS), help=f"Any of {', '.join(TASKS)}.")
    parser.add_argument("--seeds", type=int, default=3, help="Fine-tuning seeds (and twins) per task.")
    parser.add_argument(
        "--first_seed", type=int, default=DEFAULT_FIRST_SEED, help="Seeds are first_seed, first_seed + 1, ..."
    )
    parser.add_argument(
        "--no_random_twin", action="store_true", help="Skip the random-weight twin (not for comparisons)."
    )
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="TASK.FIELD=VALUE",
        help="Change a schedule, e.g. sentiment.learning_rate=1e-4.",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1).")
    parser.add_argument(
        "--quick", action="store_true", help="Tiny subsets, one epoch: a smoke test, not a measurement."
    )
    parser.add_argument("--resume", action="store_true", help="Reuse finished runs in output_dir's evaluation.json.")
    parser.add_argument("--keep_models", action="store_true", help="Keep each fine-tuned model (default: scores only).")
    parser.add_argument("--use_cpu", action="store_true", help="Train on the CPU even when a GPU is there.")
    parser.add_argument(
        "--bf16", action="store_true", help="Fine-tune with bf16 autocast (Trainer's --bf16; CPU or CUDA)."
    )
    args = parser.parse_args(argv)
    unknown = [task for task in args.tasks if task not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; choose from {', '.join(TASKS)}")
    if args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1, got {args.seeds}")
    if args.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {args.threads}")
    checkpoint = Path(args.model_name_or_path)
    if not (checkpoint / "config.json").is_file():
        raise ValueError(f"--model_name_or_path {checkpoint}: no config.json there (a checkpoint folder is needed)")
    tokenizer_dir = Path(args.tokenizer_name or checkpoint)
    if not any((tokenizer_dir / name).is_file() for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json")):
        raise ValueError(f"{tokenizer_dir} has no tokenizer files: pass --tokenizer_name")
    return args


def schedules_for(tasks: Sequence[str], overrides: Sequence[str], quick: bool) -> dict[str, dict]:
    """The schedule of every task asked for, with ``--set`` overrides and ``--quick`` applied."""
    chosen = {task: dict(SCHEDULES[task]) for task in tasks}
    if quick:
        for task in chosen:
            if task in FINE_TUNING_TASKS:
                chosen[task].update(QUICK)
                if "doc_stride" in chosen[task]:  # QA: a window must hold the question and the stride
                    chosen[task]["max_seq_length"] = SCHEDULES[task]["max_seq_length"]
            else:
                chosen[task]["rows"] = dict(QUICK_PROBE_ROWS)
    for item in overrides:
        key, sep, value = item.partition("=")
        task, dot, name = key.partition(".")
        if not (sep and dot and name):
            raise ValueError(f"--set {item!r}: expected TASK.FIELD=VALUE, e.g. sentiment.learning_rate=1e-4")
        if task not in chosen:
            raise ValueError(f"--set {item!r}: task {task!r} is not among --tasks {list(chosen)}")
        chosen[task][name] = json.loads(value) if value[:1] in "[{" else _number_or_text(value)
    return chosen


def _number_or_text(value: str):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


# ---------------------------------------------------------------------------------- fine-tuning


def fine_tune(
    task: str,
    model_dir: Path,
    tokenizer_dir: Path,
    seed: int,
    schedule: dict,
    run_dir: Path,
    trainer_flags: Sequence[str],
    keep_model: bool,
) -> dict:
    """One run of the task's example script (in-process); validation and test scores in percent,
    the final training loss and the wall time."""

    script_name, dataset, extra, metric = TASK_DATA[task]
    script = example_script(script_name)
    argv = [
        "--model_name_or_path",
        str(model_dir),
        "--tokenizer_name",
        str(tokenizer_dir),
        "--dataset_name",
        dataset,
        *extra,
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--seed",
        str(seed),
        "--output_dir",
        str(run_dir),
        "--overwrite_output_dir",
        "--save_strategy",
        "no",
        "--report_to",
        "none",
        "--disable_tqdm",
        "true",
        "--log_level",
        "warning",
        "--per_device_eval_batch_size",
        "64",
    ]
    argv += list(trainer_flags)
    for name, value in schedule.items():
        argv += [f"--{name}", str(value)]
    started, cpu_started = time.perf_counter(), time.process_time()
    results = script.main(argv)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    scale = 1.0 if task in PERCENT_ALREADY else 100.0
    record = {
        "validation": scale * results[f"eval_{metric}"],
        "test": scale * results[f"predict_{metric}"],
        "train_loss": results.get("train_loss"),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
    }
    if task == "qa" and "predict_HasAns_f1" in results:
        record["test_HasAns_f1"] = results["predict_HasAns_f1"]
    if not keep_model:  # scores only: the weights of every run would fill the disk
        for path in run_dir.iterdir():
            if path.name not in KEPT_RUN_FILES:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    return record


# ---------------------------------------------------------------------------------------- probes


def probe_splits(rows: dict | None) -> dict[str, dict]:
    """The sentiment and POS splits the probes read (cut to ``rows`` per split with --quick)."""
    data = {
        "sentiment": load_named_dataset("hf_variants/rt_polarity"),
        "pos": load_named_dataset("hf_variants/wsj_pos"),
    }
    if rows:
        data = {
            name: {split: part.select(range(min(rows[split], len(part)))) for split, part in splits.items()}
            for name, splits in data.items()
        }
    return data


def run_probes(model_dir: Path, tokenizer, splits: dict, schedule: dict, device: str) -> dict:
    started, cpu_started = time.perf_counter(), time.process_time()
    sentiment = ev.sentiment_probe(model_dir, tokenizer, splits["sentiment"], schedule["sentiment_max_length"], device)
    pos = ev.pos_probe(model_dir, tokenizer, splits["pos"], schedule["pos_max_length"], device)
    return {
        "sentiment": sentiment,
        "pos": pos,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(time.process_time() - cpu_started, 1),
    }


# ----------------------------------------------------------------------------------------- report


def summarise(runs: dict[str, list[dict]], key: str) -> dict:
    """``{"<key>": [per seed], "mean", "std"}`` over the runs of one arm."""
    values = [run[key] for run in runs]
    mean, std = ev.mean_std(values)
    return {"scores": values, "mean": round(mean, 2), "std": round(std, 2)}


def baselines_for(task: str) -> dict:
    """The cheap trivial baselines on the task's test split (full data, also with --quick)."""
    if task == "sentiment":
        data = load_named_dataset("hf_variants/rt_polarity")
        return {"majority_class": ev.majority_baseline(data["train"]["label"], data["test"]["label"])}
    if task == "pos":
        return ev.tagging_baselines("pos", load_named_dataset("hf_variants/wsj_pos"), "pos_tags")
    if task == "ner":
        return ev.tagging_baselines("ner", load_named_dataset("hf_variants/wnut16"), "ner_tags")
    if task == "qa":
        return ev.no_answer_baseline(load_named_dataset("hf_variants/real_text_qa")["test"])
    return {}


def table_rows(report: dict) -> list[str]:
    """The markdown table: test scores (validation in brackets), pretrained vs random twin."""
    lines = [
        "| task | metric | pretrained, test [validation] | random twin, test [validation] | difference | baselines (test) | s per run, wall (CPU): pretrained / twin |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(arm: dict | None, test_key: str = "test", validation_key: str = "validation") -> str:
        if not arm:
            return "(not run)"
        test, validation = arm[test_key], arm[validation_key]
        return f"{test['mean']:.1f} ± {test['std']:.1f} (n={len(test['scores'])}) [{validation['mean']:.1f}]"

    for task, entry in report["tasks"].items():
        if task == "probe":
            for probe, metric, suffix in (
                ("sentiment", "accuracy, mean-pooled", ""),
                ("sentiment", "accuracy, first token", "_first_token"),
                ("pos", "word accuracy", ""),
            ):
                arms = {arm: entry[arm][probe] for arm in ARMS if entry.get(arm)}
                pretrained, random = arms.get("pretrained"), arms.get("random")
                difference = (
                    f"{pretrained['test' + suffix]['mean'] - random['test' + suffix]['mean']:+.1f}"
                    if pretrained and random
                    else ""
                )
                walls = _costs(entry)
                lines.append(
                    f"| probe: {probe} | {metric} | {cell(pretrained, 'test' + suffix, 'validation' + suffix)} | "
                    f"{cell(random, 'test' + suffix, 'validation' + suffix)} | {difference} | | {walls} |"
                )
            continue
        pretrained, random = entry.get("pretrained"), entry.get("random")
        difference = f"{pretrained['test']['mean'] - random['test']['mean']:+.1f}" if pretrained and random else ""
        baselines = ", ".join(f"{name} {value:.1f}" for name, value in entry["baselines"].items())
        walls = _costs(entry)
        lines.append(
            f"| {task} | {entry['metric']} | {cell(pretrained)} | {cell(random)} | {difference} | {baselines} | {walls} |"
        )
    return lines


def _costs(entry: dict) -> str:
    """Mean seconds per run, wall (CPU time of this process), pretrained / twin."""

    def one(arm: str) -> str:
        if not entry.get(arm):
            return "-"
        cpu = f" ({entry[arm]['cpu_s']['mean']:.0f})" if "cpu_s" in entry[arm] else ""
        return f"{entry[arm]['wall_s']['mean']:.0f}{cpu}"

    return " / ".join(one(arm) for arm in ARMS)


def write_report(report: dict, output_dir: Path) -> None:
    write_text_atomically(output_dir / "evaluation.json", json.dumps(report, indent=2) + "\n")
    write_text_atomically(output_dir / "evaluation.md", "\n".join(table_rows(report)) + "\n")


# ------------------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> dict:
    """Run every (task, arm, seed) and return the report written to evaluation.json."""
    args = parse_arguments(argv)
    torch.set_num_threads(args.threads)
    datasets.disable_progress_bars()
    schedules = schedules_for(args.tasks, args.set, args.quick)
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    checkpoint = Path(args.model_name_or_path)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    arms = ("pretrained",) if args.no_random_twin else ARMS
    # Without an accelerator the scripts default to use_cpu (trainer_argument_defaults), so --bf16 is CPU autocast.
    trainer_flags = (["--use_cpu"] if args.use_cpu else []) + (["--bf16"] if args.bf16 else [])

    previous = {}
    report_path = output_dir / "evaluation.json"
    if args.resume and report_path.is_file():
        previous = json.loads(report_path.read_text(encoding="utf-8"))
        if previous.get("checkpoint") != str(checkpoint.resolve()):
            raise ValueError(
                f"--resume: {report_path} evaluates {previous.get('checkpoint')}, not {checkpoint.resolve()}"
            )
    report = {
        "checkpoint": str(checkpoint.resolve()),
        "seeds": seeds,
        "threads": args.threads,
        "quick": args.quick,
        "bf16": args.bf16,
        "device": "cuda" if torch.cuda.is_available() and not args.use_cpu else "cpu",
        "tasks": {},
    }
    started = time.perf_counter()

    tokenizer_source = Path(args.tokenizer_name) if args.tokenizer_name else checkpoint
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)  # the probes' (the scripts load their own)
    twins: dict[int, Path] = {}

    def model_dir(arm: str, seed: int) -> Path:
        if arm == "pretrained":
            return checkpoint
        if seed not in twins:
            twins[seed] = ev.make_random_twin(checkpoint, seed, output_dir / "twins" / f"seed{seed}", tokenizer_source)
        return twins[seed]

    def reuse(task: str, arm: str, seed: int) -> dict | None:
        old = previous.get("tasks", {}).get(task, {})
        if old.get("schedule") != schedules[task] or previous.get("bf16", False) != args.bf16:
            return None
        return old.get("runs", {}).get(arm, {}).get(str(seed))

    for task in args.tasks:
        entry = {"schedule": schedules[task], "runs": {arm: {} for arm in arms}}
        if task != "probe":
            entry["metric"] = {
                "sentiment": "accuracy %",
                "pos": "word accuracy %",
                "ner": "entity F1 %",
                "qa": "F1 % (v2)",
            }[task]
            entry["baselines"] = baselines_for(task)
        report["tasks"][task] = entry
        probe_data = probe_splits(schedules[task].get("rows")) if task == "probe" else None
        for seed in seeds:
            for arm in arms:
                if arm == "pretrained" and task == "probe" and seed != seeds[0]:
                    continue  # the frozen pretrained encoder is deterministic: one probe, seeds change nothing
                done = reuse(task, arm, seed)
                if done is None:
                    directory = model_dir(arm, seed)
                    print(f"[evaluate] {task} {arm} seed {seed} ...", flush=True)
                    if task == "probe":
                        done = run_probes(directory, tokenizer, probe_data, schedules[task], report["device"])
                    else:
                        done = fine_tune(
                            task,
                            directory,
                            tokenizer_source,
                            seed,
                            schedules[task],
                            output_dir / "runs" / task / arm / f"seed{seed}",
                            trainer_flags,
                            args.keep_models,
                        )
                    print(f"[evaluate] {task} {arm} seed {seed}: {_short(done)}", flush=True)
                entry["runs"][arm][str(seed)] = done
                _summarise_entry(task, entry)
                report["wall_s"] = round(time.perf_counter() - started, 1)
                write_report(report, output_dir)
    if not args.keep_models:
        shutil.rmtree(output_dir / "twins", ignore_errors=True)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    write_report(report, output_dir)
    print("\n".join(table_rows(report)))
    return report


def _short(record: dict) -> str:
    if "sentiment" in record:
        return (
            f"sentiment probe test {record['sentiment']['test']:.1f}, POS probe test {record['pos']['test']:.1f} "
            f"({record['wall_s']:.0f} s)"
        )
    return f"validation {record['validation']:.1f}, test {record['test']:.1f} ({record['wall_s']:.0f} s)"


def _summarise_entry(task: str, entry: dict) -> None:
    """mean/std per arm from the runs so far (the JSON is rewritten after every run)."""
    for arm, runs in entry["runs"].items():
        records = [runs[seed] for seed in sorted(runs, key=int)]
        if not records:
            continue
        if task == "probe":
            summary = {key: summarise(records, key) for key in ("wall_s", "cpu_s") if key in records[0]}
            for probe in ("sentiment", "pos"):
                keys = [key for key in records[0][probe] if key.startswith(("validation", "test"))]
                summary[probe] = {key: summarise([r[probe] for r in records], key) for key in keys}
        else:
            summary = {
                key: summarise(records, key) for key in ("validation", "test", "wall_s", "cpu_s") if key in records[0]
            }
        entry[arm] = summary


if __name__ == "__main__":
    main()
