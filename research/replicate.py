#!/usr/bin/env python
"""The replication study (issue #33): the lectures' ablation claims re-run at CPU scale, arm by arm
and seed by seed, and docs/replication.md rebuilt from the results::

    python -m research.replicate --rows nsp masking-rate --seeds 0 1 2 --arm_minutes 5 --bf16
    python -m research.replicate --report
    python -m research.replicate --estimate --arm_minutes 10 --rows nsp positions   # the cost, nothing run

The rows (claim, paper table, arms, measurements, predicted direction) are data:
``research/replication_rows.py``. Per (row, arm, seed):

1. the arm's mini is trained from scratch by its script (``Arm.script``): ``examples/run_pretraining.py``
   on ``--corpus pretraining`` with its family's ``--recipe`` and the study's shared settings
   (``STUDY_FLAGS``, ``STUDY_SIZE`` in replication_rows.py); Transformer-XL ``examples/run_clm.py`` on
   the same corpus; the original Transformer ``examples/run_translation.py`` on the G2P pairs with the
   zoo's settings (``research/zoo_scripts.py``). Then the arm's flags (the last of a repeated flag
   wins, so the arm's own), under the row's budget: ``--arm_minutes`` of wall clock (``--max_time``;
   the schedule runs over ``arm_minutes x steps_per_minute`` steps), or equal FLOPs (``--flop_budget
   arm_minutes x flops_per_minute``), or equal steps;
2. the row's harness tasks (POS, sentiment, QA, the probes) run through
   ``research/evaluate_pretraining.py``, one fine-tuning seed (``42 + seed``) per pretraining seed,
   beside the random-weight twin: evaluated once per seed for the arms of a row that share model,
   config, recipe and tokenizer (the first such arm; the others pass ``--no_random_twin`` and record
   its scores and JSON);
3. ``<results_dir>/<row>/<arm>-seed<k>.json`` is written at once: budget, argv, steps, tokens,
   FLOPs, minutes, held-out metrics (the script's own results), task scores (and the twin's), versions.

A (row, arm, seed) whose JSON exists is skipped, so the study runs in pieces; weights stay under
``--output_dir`` (never committed). ``--report`` rebuilds the report (tables, plots, verdicts) from
the JSON files alone (``research/replication_report.py``). ``--quick``: tiny sizes and a few steps on
a few Austen documents or G2P pairs (a smoke test for the test suite, never a measurement), results in a
temporary folder unless ``--results_dir`` is given.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import transformers

from hf_variants.hub.atomic import write_text_atomically
from hf_variants.models.named_configs import named_config
from hf_variants.objectives.recipes import RECIPES
from hf_variants.registry import spec_for
from research.distillation_table import replication_entry
from research.example_scripts import example_script
from research.quick import QUICK_PRETRAINING, QUICK_TEXT, quick_config_fields
from research.replication_report import estimate_lines, load_records, write_report
from research.replication_rows import (
    HARNESS_MEASURES,
    ROWS,
    ROWS_BY_NAME,
    STUDY_FLAGS,
    STUDY_SIZE,
    TOKENIZER_FLAGS,
    Arm,
    Row,
    resolve_flags,
)
from research.zoo_scripts import HELD_OUT_METRICS, QUICK_SETTINGS, SCRIPT_SETTINGS, pick, step_zero_evaluation

REPOSITORY = Path(__file__).resolve().parent.parent
FIRST_FINE_TUNING_SEED = 42  # evaluate_pretraining's default first seed; pretraining seed k fine-tunes with 42 + k
# --quick: the shared tiny text and sizes (research/quick.py), less --max_steps, which the
# flop-budget rows may not give.
QUICK_CLM = QUICK_TEXT + ["--max_seq_length", "16", "--max_eval_tokens", "512"]
QUICK_STEPS = 3
QUICK_FLOP_BUDGET = 1e8  # a few steps of a tiny model
TIME_CAP = 1.5  # equal-FLOP / equal-step arms: --max_time = 1.5 x arm_minutes, a cap the budget should not reach
CLM_EVAL_TOKENS = "65536"  # Transformer-XL: held-out tokens scored (each memory length re-reads them)


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments, checked: an unknown row, a non-positive budget or a bad seed is a ValueError."""
    parser = argparse.ArgumentParser(
        prog="python -m research.replicate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rows", nargs="+", default=None, help=f"rows to run (default: all): {', '.join(ROWS_BY_NAME)}"
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="pretraining seeds (default 0 1 2)")
    parser.add_argument(
        "--arm_minutes",
        type=float,
        default=5.0,
        help="each arm's pretraining budget in minutes (the study's: 5, docs/replication.md)",
    )
    parser.add_argument(
        "--steps_per_minute",
        type=float,
        default=180.0,
        help="schedule length: arm_minutes x this many steps (the study's: 180, i.e. 900 steps of "
        "32 x 64 tokens, which the study-size encoders finish in about 3 minutes on one thread)",
    )
    parser.add_argument(
        "--flops_per_minute",
        type=float,
        default=1.5e12,
        help="equal-compute rows: --flop_budget = arm_minutes x this (the study's: 1.5e12, i.e. the "
        "MLM arm's 900 steps: the study-size bert-mini counts 8.4e9 FLOPs a step of 32 x 64 "
        "tokens, electra-mini with its generator 1.04e10, so it gets about 720 steps)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads for pretraining and evaluation")
    parser.add_argument("--bf16", action="store_true", help="pretrain and fine-tune with bf16 autocast")
    parser.add_argument("--output_dir", default="runs/replication", help="pretraining runs and evaluations (weights)")
    parser.add_argument(
        "--results_dir",
        default=None,
        help="one JSON per (row, arm, seed) (default docs/replication; --quick: a temporary folder)",
    )
    parser.add_argument(
        "--report_path",
        default=None,
        help="the report (default docs/replication.md; --quick: <results_dir>/replication.md)",
    )
    parser.add_argument(
        "--distillation_dir",
        default=None,
        help="issue 45's distillation run JSONs, reported as the 'distillation' row (default docs/distillation "
        "when the results go to docs/replication; --quick or another --results_dir: none)",
    )
    parser.add_argument("--report", action="store_true", help="only rebuild the report from the JSON files")
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="only print the study's estimated cost for --rows / --seeds / --arm_minutes (runs nothing)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few steps: a smoke test, not a measurement")
    args = parser.parse_args(argv)
    if not args.arm_minutes > 0:
        raise ValueError(f"--arm_minutes must be a positive number of minutes, got {args.arm_minutes}")
    for name in ("steps_per_minute", "flops_per_minute"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name} must be positive, got {getattr(args, name)}")
    if args.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {args.threads}")
    if not args.seeds or min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        raise ValueError(f"--seeds must be distinct integers >= 0, got {args.seeds}")
    unknown = [name for name in args.rows or () if name not in ROWS_BY_NAME]
    if unknown:
        raise ValueError(f"unknown row(s) {unknown}; rows: {', '.join(ROWS_BY_NAME)}")
    args.selected = [ROWS_BY_NAME[name] for name in dict.fromkeys(args.rows)] if args.rows else list(ROWS)
    if args.results_dir is None:
        args.results_dir = tempfile.mkdtemp(prefix="replication-quick-") if args.quick else "docs/replication"
    if args.report_path is None:
        args.report_path = str(Path(args.results_dir) / "replication.md") if args.quick else "docs/replication.md"
    if args.distillation_dir is None and args.results_dir == "docs/replication":
        args.distillation_dir = "docs/distillation"
    return args


# ------------------------------------------------------------------------------------ one arm's argv


def recipe_name(model: str) -> str | None:
    """The paper recipe of a mini's family ("bert-mini" -> "bert"), None where there is none."""
    name = spec_for(named_config(model).model_type).name
    return name if name in RECIPES else None


def config_overrides(arm: Arm, quick: bool) -> str | None:
    """--config_overrides: the study's size (`STUDY_SIZE`, run_pretraining arms) first, then with --quick
    the family's tiny sizes, the arm's ablation fields last (a later field wins)."""
    fields: dict[str, object] = dict(STUDY_SIZE.config) if arm.takes_study_settings else {}
    if quick:
        fields.update(quick_config_fields(spec_for(named_config(arm.model).model_type).name))
    fields.update(dict(arm.config_overrides))
    if not fields:
        return None
    return ",".join(
        f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in fields.items()
    )


def budget_of(row: Row, arm: Arm, args: argparse.Namespace) -> dict:
    """The arm's budget as recorded and as flags: kind, minutes, steps of the schedule, FLOPs."""
    rate = arm.step_rate or row.step_rate
    steps = QUICK_STEPS if args.quick else max(1, round(args.arm_minutes * args.steps_per_minute * rate))
    flops = (
        (QUICK_FLOP_BUDGET if args.quick else args.arm_minutes * args.flops_per_minute)
        if row.budget == "flops"
        else None
    )
    cap = args.arm_minutes * (1.0 if row.budget == "minutes" else TIME_CAP)
    return {
        "kind": row.budget,
        "arm_minutes": args.arm_minutes,
        "max_time_minutes": cap,
        "max_steps": None if flops else steps,
        "flop_budget": flops,
    }


def script_settings(arm: Arm, args: argparse.Namespace) -> list[str]:
    """The arm's script's own settings, given after the shared flags and before the budget and the
    arm's flags: run_pretraining the family's recipe then the study's flags (`STUDY_FLAGS`,
    `STUDY_SIZE`); run_clm segments of 16 x 64 as the README's runs; run_translation the zoo's G2P
    run (data, 64 pairs a step, the "Noam" schedule; --quick its few pairs) with the untrained model
    scored at step 0 (--eval_on_start: the held-out loss before training, in the JSON)."""
    if arm.takes_study_settings:  # run_pretraining
        recipe = recipe_name(arm.model)
        return (["--recipe", recipe] if recipe else []) + list(STUDY_FLAGS) + list(STUDY_SIZE.flags())
    if arm.script == "run_clm":
        return ["--per_device_train_batch_size", "16", "--max_eval_tokens", CLM_EVAL_TOKENS, "--num_samples", "0"]
    # --bf16 needs no --use_cpu on a CPU-only machine: every script defaults to it there (trainer_argument_defaults).
    return list((QUICK_SETTINGS if args.quick else SCRIPT_SETTINGS)["seq2seq"]) + ["--eval_on_start"]


# Each script's training text after the arm's flags: (--quick, the study's). run_translation's data
# is in its settings (the zoo's), before the arm's flags.
SCRIPT_DATA = {
    "run_pretraining": (QUICK_PRETRAINING, ["--corpus", "pretraining"]),
    "run_clm": (QUICK_CLM, ["--corpus", "pretraining"]),
    "run_translation": ([], []),
}


def training_argv(row: Row, arm: Arm, seed: int, args: argparse.Namespace, run_dir: Path) -> list[str]:
    """The training script's arguments for (row, arm, seed): shared flags, the script's settings
    (`script_settings`: for run_pretraining the family's recipe and the study's flags), the row's
    budget, the arm's flags, then the text (`SCRIPT_DATA`; with --quick the tiny text and sizes). A
    flag given twice keeps its last value (argparse), so the arm's own flags win over the study's
    and the recipe's."""
    budget = budget_of(row, arm, args)
    argv = [
        "--model_name_or_path",
        arm.model,
        "--seed",
        str(seed),
        "--output_dir",
        str(run_dir),
        "--report_to",
        "none",
        "--disable_tqdm",
        "true",
        "--save_steps",
        "200",
        "--logging_steps",
        "50",
    ]
    overrides = config_overrides(arm, args.quick)
    argv += ["--config_overrides", overrides] if overrides else []
    argv += ["--bf16"] if args.bf16 else []
    argv += script_settings(arm, args)
    argv += ["--max_time", f"{budget['max_time_minutes']:g}"]
    if budget["flop_budget"] is not None:
        argv += ["--flop_budget", f"{budget['flop_budget']:g}"]
    else:
        argv += ["--max_steps", str(budget["max_steps"])]
    quick_data, data = SCRIPT_DATA[arm.script]
    return argv + list(arm.argv) + list(quick_data if args.quick else data)


def harness_tasks(row: Row) -> list[str]:
    """evaluate_pretraining's tasks the row's measures need, in the harness' order."""
    return list(dict.fromkeys(HARNESS_MEASURES[m] for m in row.measures if m in HARNESS_MEASURES))


def evaluation_argv(
    row: Row, seed: int, args: argparse.Namespace, run_dir: Path, eval_dir: Path, twin: bool = True
) -> list[str]:
    """evaluate_pretraining's arguments; `twin=False` skips the random twin (another arm's is used)."""
    return (
        [
            "--model_name_or_path",
            str(run_dir),
            "--output_dir",
            str(eval_dir),
            "--tasks",
            *harness_tasks(row),
            "--seeds",
            "1",
            "--first_seed",
            str(FIRST_FINE_TUNING_SEED + seed),
            "--threads",
            str(args.threads),
            "--resume",
        ]
        + (["--quick"] if args.quick else [])
        + (["--bf16"] if args.bf16 else [])
        + ([] if twin else ["--no_random_twin"])
    )


# ------------------------------------------------------------------------------ the shared twin


def twin_key(row: Row, seed: int, argv: Sequence[str], args: argparse.Namespace) -> dict:
    """What the arm's random-weight twin and its harness scores depend on, read from the training argv
    as its script resolves it (the last of a repeated flag): the model, its config overrides, the
    recipe, the tokenizer / text flags, and the harness' tasks, fine-tuning seed and precision. The
    pretraining objective and its flags are not in it: the twin is the config's random init, and the
    harness fine-tunes its encoder, never a pretraining head."""
    flags = resolve_flags(list(argv))
    return {
        "model": flags["--model_name_or_path"],
        "config_overrides": flags.get("--config_overrides"),
        "recipe": flags.get("--recipe"),
        "tokenizer": {f: flags[f] for f in TOKENIZER_FLAGS if f in flags},
        "tasks": harness_tasks(row),
        "fine_tuning_seed": FIRST_FINE_TUNING_SEED + seed,
        "bf16": args.bf16,
        "quick": args.quick,
    }


def shared_twin(row: Row, arm: Arm, seed: int, key: dict, results_dir: Path) -> tuple[str, dict] | None:
    """(relative JSON path, record) of an earlier arm of `row` (same seed) that evaluated the twin
    this arm would get (equal `twin_key`, its own twin, every measure scored), or None: then this arm
    evaluates the twin itself. Arms run in the row's order within a seed, so the first arm of each
    twin group evaluates it and the later ones read it."""
    needed = [m for m in row.measures if m in HARNESS_MEASURES]
    for earlier in row.arms[: row.arms.index(arm)]:
        path = result_path(results_dir, row, earlier, seed)
        if not path.is_file():
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        if (
            record.get("twin_key") == key
            and record.get("random_twin_from") is None
            and all(m in record.get("random_twin", {}) for m in needed)
        ):
            return str(path.relative_to(results_dir)), record
    return None


def study_settings(arm: Arm) -> dict:
    """The study's shared settings this arm got (recorded in its JSON; run_clm and run_translation arms
    get none)."""
    applied = arm.takes_study_settings
    return {
        "applied": applied,
        "flags": list(STUDY_FLAGS) if applied else [],
        "config": dict(STUDY_SIZE.config) if applied else {},
        "max_seq_length": STUDY_SIZE.max_seq_length if applied else None,
    }


def harness_minutes(report: dict) -> dict[str, dict[str, float]]:
    """Measured minutes per harness task and model ("pretrained" / "random"), one fine-tuning seed."""
    return {
        task: {
            arm: round(entry[arm]["wall_s"]["mean"] / 60, 3)
            for arm in ("pretrained", "random")
            if entry.get(arm) and "wall_s" in entry[arm]
        }
        for task, entry in report["tasks"].items()
    }


# ------------------------------------------------------------------------------------- measurement


def last_flag(argv: Sequence[str], flag: str) -> str:
    """The value of the last `flag` in argv (argparse keeps the last one)."""
    return [argv[i + 1] for i, item in enumerate(argv[:-1]) if item == flag][-1]


def harness_scores(report: dict) -> tuple[dict[str, float], dict[str, float]]:
    """(pretrained, random twin) test scores per measure from evaluate_pretraining's report."""
    scores: dict[str, dict[str, float]] = {"pretrained": {}, "random": {}}
    for task, entry in report["tasks"].items():
        for arm in scores:
            if not entry.get(arm):
                continue
            if task == "probe":
                for probe in ("pos", "sentiment"):
                    scores[arm][f"probe_{probe}"] = entry[arm][probe]["test"]["mean"]
            else:
                scores[arm][task] = entry[arm]["test"]["mean"]
    return scores["pretrained"], scores["random"]


def versions() -> dict[str, str | None]:
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPOSITORY), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "hf_variants_commit": commit,
    }


def pretraining_outcome(trained: dict, argv: Sequence[str], run_dir: Path) -> dict:
    """run_pretraining's results as the record's "training", "held_out" and "metrics"."""
    step_flops = trained["flops_per_step"]
    return {
        "training": {
            "global_step": trained["global_step"],
            "max_steps": trained["max_steps"],
            "tokens_seen": trained["tokens_seen"],
            "train_minutes": round(trained["train_minutes"], 2),
            "stopped_by_max_time": trained["stopped_by_max_time"],
            "flops_per_step": step_flops,
            "flops": step_flops * trained["global_step"] if step_flops else None,
            "objective": trained["objective"],
            "input_format": trained["input_format"],
            "masking": trained["masking"],
            "learning_rate": trained["learning_rate"],
        },
        "held_out": {"before": trained["before_training"], "after": trained["after_training"]},
        "metrics": {"held_out_mlm_loss": trained["after_training"]["mlm_loss"]},
    }


def clm_outcome(trained: dict, argv: Sequence[str], run_dir: Path) -> dict:
    """run_clm's results (the held-out perplexity with the arm's memory, and with each --eval_mem_lens)."""
    batch = int(last_flag(argv, "--per_device_train_batch_size"))
    return {
        "training": {
            "global_step": trained["global_step"],
            "max_steps": trained.get("max_steps"),
            "tokens_seen": trained["global_step"] * batch * trained["sequence_length"],
            "train_minutes": round(trained["train_minutes"], 2),
            "stopped_by_max_time": trained["stopped_by_max_time"],
            "flops_per_step": None,
            "flops": None,
        },
        "held_out": {
            "before": trained["before_training"],
            "after": trained["after_training"],
            "by_memory_length": trained["by_memory_length"],
            "unigram_baseline_perplexity": trained["unigram_baseline_perplexity"],
        },
        "metrics": {"clm_perplexity": trained["after_training"]["perplexity"]},
    }


def translation_outcome(trained: dict, argv: Sequence[str], run_dir: Path) -> dict:
    """run_translation's results (all_results.json: the validation pairs scored after training) and
    its trainer_state.json (the steps; the step-0 evaluation of --eval_on_start, the untrained
    model's). Each held-out entry also holds its perplexity, exp(loss) (the paper's dev measure)."""
    state = json.loads((run_dir / "trainer_state.json").read_text(encoding="utf-8"))
    names = HELD_OUT_METRICS["seq2seq"]  # eval_loss, eval_exact_match, eval_token_error_rate
    before, after = pick(step_zero_evaluation(state), names), pick(trained, names)
    for scores in (before, after):
        if "eval_loss" in scores:
            scores["perplexity"] = math.exp(scores["eval_loss"])
    return {
        "training": {
            "global_step": state["global_step"],
            "max_steps": state["max_steps"],
            "tokens_seen": None,
            "examples_seen": state["global_step"] * state["train_batch_size"],
            "train_minutes": round(trained["train_minutes"], 2),
            "stopped_by_max_time": trained["stopped_by_max_time"],
            "flops_per_step": None,
            "flops": None,
        },
        "held_out": {"before": before or None, "after": after},
        "metrics": {
            "seq2seq_loss": after["eval_loss"],
            "seq2seq_exact_match": after["eval_exact_match"],
            "seq2seq_token_error_rate": after["eval_token_error_rate"],
        },
    }


# Arm.script -> its results as the record's "training", "held_out" and "metrics".
SCRIPT_OUTCOMES = {
    "run_pretraining": pretraining_outcome,
    "run_clm": clm_outcome,
    "run_translation": translation_outcome,
}


def run_arm(row: Row, arm: Arm, seed: int, args: argparse.Namespace) -> dict:
    """Train and measure one (row, arm, seed); returns its results record. The harness evaluates the
    random twin only when no earlier arm of the row (same seed) has evaluated the same twin
    (`shared_twin`); otherwise the record holds that arm's twin scores and names its JSON."""
    from hf_variants.hub.run_record import detect_hardware
    from research import evaluate_pretraining

    run_dir = Path(args.output_dir) / row.name / f"{arm.name}-seed{seed}"
    argv = training_argv(row, arm, seed, args, run_dir)
    torch.set_num_threads(args.threads)
    print(f"[replicate] {row.name} / {arm.name} / seed {seed}: {arm.script} {' '.join(argv)}", flush=True)
    started = time.perf_counter()
    record = {
        "row": row.name,
        "arm": arm.name,
        "seed": seed,
        "quick": args.quick,
        "model": arm.model,
        "script": f"examples/{arm.script}.py",
        "argv": argv,
        "budget": budget_of(row, arm, args),
        "threads": args.threads,
        "bf16": args.bf16,
        "hardware": detect_hardware(),
        "versions": versions(),
        "study": study_settings(arm),
    }
    trained = example_script(arm.script).main(argv)
    record.update(SCRIPT_OUTCOMES[arm.script](trained, argv, run_dir))
    record["random_twin"], record["random_twin_from"] = {}, None
    tasks = harness_tasks(row)
    if tasks:
        record["twin_key"] = twin_key(row, seed, argv, args)
        shared = shared_twin(row, arm, seed, record["twin_key"], Path(args.results_dir))
        eval_argv = evaluation_argv(
            row, seed, args, run_dir, run_dir.with_name(run_dir.name + "-evaluation"), twin=shared is None
        )
        print(
            f"[replicate] {row.name} / {arm.name} / seed {seed}: harness {tasks}"
            + (f", the random twin's scores from {shared[0]}" if shared else ", with the random twin"),
            flush=True,
        )
        report = evaluate_pretraining.main(eval_argv)
        pretrained, twin = harness_scores(report)
        record["metrics"].update(pretrained)
        if shared:
            record["random_twin_from"], twin = shared[0], shared[1]["random_twin"]
        record["random_twin"] = twin
        record["evaluation"] = {
            "argv": eval_argv,
            "wall_s": report.get("wall_s"),
            "quick": report["quick"],
            "task_minutes": harness_minutes(report),
        }
    record["wall_minutes"] = round((time.perf_counter() - started) / 60, 2)
    return record


def result_path(results_dir: Path, row: Row, arm: Arm, seed: int) -> Path:
    return results_dir / row.name / f"{arm.name}-seed{seed}.json"


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the (row, arm, seed) triples not yet done, then rebuild the report; returns
    {"results": {relative JSON path: record}, "report": path, "failed": [...]}."""
    args = parse_arguments(argv)
    results_dir = Path(args.results_dir)
    if args.estimate:  # nothing run, nothing written
        existing = load_records(results_dir) if results_dir.is_dir() else {}
        print("\n".join(estimate_lines(args.selected, args.arm_minutes, len(args.seeds), existing)), flush=True)
        return {"results": {}, "report": None, "failed": []}
    records, failed = {}, []
    if not args.report:
        for row in args.selected:
            if row.not_runnable:
                print(f"[replicate] {row.name}: not runnable yet ({row.not_runnable})", flush=True)
                continue
            for seed in args.seeds:
                for arm in row.arms:
                    path = result_path(results_dir, row, arm, seed)
                    key = str(path.relative_to(results_dir))
                    if path.is_file():
                        print(f"[replicate] {key}: already done, skipped", flush=True)
                        continue
                    try:
                        records[key] = run_arm(row, arm, seed, args)
                    except Exception as error:  # noqa: BLE001  (one arm's failure must not stop an hours-long study)
                        failed.append(f"{key}: {type(error).__name__}: {error}")
                        print(f"[replicate] {key}: FAILED ({failed[-1]})", flush=True)
                        continue
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_text_atomically(path, json.dumps(records[key], indent=2) + "\n")
    report = write_report(
        results_dir,
        Path(args.report_path),
        rows=ROWS,
        quick=args.quick,
        arm_minutes=args.arm_minutes,
        seeds=len(args.seeds),
        measured_elsewhere=[replication_entry(Path(args.distillation_dir))] if args.distillation_dir else [],
    )
    print(f"[replicate] wrote {report}", flush=True)
    if failed:  # recorded in the log; the next call retries them
        raise RuntimeError(f"{len(failed)} arm(s) failed: {failed}")
    return {"results": records, "report": report, "failed": failed}


if __name__ == "__main__":
    main()
