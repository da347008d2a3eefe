#!/usr/bin/env python
"""The zoo: every variant's ``-mini`` pretrained with its paper's objective, evaluated beside its
random-weight twin, and written as a Hub-ready folder (issue #33)::

    hf-variants zoo --variants bert roberta --budget_minutes 60 --max_steps 3200 --bf16 \\
        --output_dir /work/runs/zoo --results_dir docs/zoo

Per variant (``--variants``; default every registered ``hf_variants.registry.SPECS``):

1. ``examples/run_pretraining.py`` trains the spec's ``mini_config`` from scratch with the spec's
   ``pretraining_objective`` and its paper's ``--recipe`` on ``--corpus pretraining``, stopped by
   ``--max_time BUDGET_MINUTES`` (the learning-rate schedule follows ``--max_steps``);
2. the encoders are evaluated with ``examples/evaluate_pretraining.py`` (sentiment fine-tuning,
   POS fine-tuning, the frozen-feature probes) beside the random-weight twin; the variants the
   harness cannot fine-tune keep the held-out loss of run_pretraining's ``eval_results.json`` and
   their results JSON says which tasks were not run and why;
3. ``<output_dir>/<name>/hub`` gets the weights (safetensors), config, tokenizer, the ``hfv_*.py``
   remote code with its ``auto_map`` and a model card whose model-index holds the measured numbers
   (ready for ``hf-variants push``);
4. ``<results_dir>/<name>.json`` gets the measured numbers, and ``<results_dir>/README.md`` a table
   rebuilt from every results JSON there.

Resumable: a variant whose results JSON and Hub folder both exist is skipped (``--force`` rebuilds
it); a pretraining run interrupted part-way resumes from its last checkpoint. Variants whose paper
objective run_pretraining.py does not train (GPT and Transformer-XL's causal LM, the original
Transformer's translation, ViT's MAE) are recorded as not built, with the script that trains them.
``--quick``: tiny sizes, a few steps on a few Austen documents and evaluate_pretraining's
``--quick``: a smoke test of the whole path (what the tests run), never a measurement.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a source checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling example scripts

import torch  # noqa: E402
from huggingface_hub import EvalResult  # noqa: E402

import hf_variants  # noqa: E402,F401  (registers the model types with the Auto classes)
from hf_variants.atomic import staged_directory, write_text_atomically  # noqa: E402
from hf_variants.hub.card import DatasetInfo  # noqa: E402
from hf_variants.hub.remote_code import export_remote_code  # noqa: E402
from hf_variants.hub.run_record import CARD_FILE, write_model_card  # noqa: E402
from hf_variants.objectives.recipes import RECIPES  # noqa: E402
from hf_variants.objectives.registry import parse_objective  # noqa: E402
from hf_variants.registry import SPECS, VariantSpec  # noqa: E402

EVALUATION_TASKS = ("sentiment", "pos", "probe")
# Objectives run_pretraining.py does not train -> the example script that does (not wired in yet).
OTHER_SCRIPTS = {"clm": "examples/run_clm.py", "seq2seq": "examples/run_translation.py", "mae": "examples/run_mae.py"}
# Objectives whose models the harness (run_glue / run_ner on an encoder) does not fine-tune.
NOT_HARNESS = {"span-corruption": "an encoder-decoder: its text-to-text evaluation (T5) is not wired into the "
                                  "harness yet, which fine-tunes encoder heads"}
# The harness's tasks the zoo leaves out, and why.
HARNESS_NOT_RUN = {"ner": "not in the zoo's task set (sentiment, pos, probe), which keeps each "
                          "variant's evaluation short",
                   "qa": "opt-in in the harness (its most expensive task); the span heads' cloze QA comes later"}
# Files of the pretraining run that go into the Hub folder (the tokenizer's are matched by name).
HUB_FILES = ("model.safetensors", "config.json", "generation_config.json", "trainer_state.json", "eval_results.json")
TOKENIZER_PREFIXES = ("tokenizer", "special_tokens_map", "vocab", "merges", "spiece", "added_tokens")
QUICK_PRETRAINING = ["--corpus", "austen", "--max_documents", "12", "--vocab_size", "600", "--max_seq_length", "32",
                     "--per_device_train_batch_size", "4", "--per_device_eval_batch_size", "16", "--max_steps", "3",
                     "--logging_steps", "1", "--data_cache_dir", "none"]
# Card datasets of the tasks: (Hub task, dataset id, dataset name, metric).
TASK_CARD = {"sentiment": ("text-classification", "hf_variants/rt_polarity", "rt-polarity movie-review sentences",
                           "accuracy"),
             "pos": ("token-classification", "hf_variants/wsj_pos", "WSJ POS sample", "accuracy"),
             "probe: sentiment": ("text-classification", "hf_variants/rt_polarity",
                                  "rt-polarity movie-review sentences (linear probe, frozen features)", "accuracy"),
             "probe: pos": ("token-classification", "hf_variants/wsj_pos", "WSJ POS sample (linear probe, frozen features)",
                            "accuracy")}
KEEP_MINI = ("vocab_size", "max_position_embeddings")  # --quick: tiny_config fields not applied
HELD_OUT_KEYS = ("mlm_loss", "mlm_accuracy", "mlm_perplexity")


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The zoo's arguments, checked: unknown variants and non-positive budgets are ValueErrors."""
    parser = argparse.ArgumentParser(prog="hf-variants zoo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=None,
                        help=f"variant names (default: all of {', '.join(sorted(s.name for s in SPECS.values()))})")
    parser.add_argument("--budget_minutes", type=float, default=60.0, help="pretraining wall-clock minutes per variant")
    parser.add_argument("--max_steps", type=int, default=3200, help="the learning-rate schedule's length in steps")
    parser.add_argument("--seed", type=int, default=0, help="pretraining seed")
    parser.add_argument("--seeds", type=int, default=3, help="fine-tuning seeds (and twins) per evaluation task")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for pretraining and evaluation")
    parser.add_argument("--bf16", action="store_true", help="pretrain and fine-tune with bf16 autocast")
    parser.add_argument("--output_dir", default="runs/zoo", help="runs and Hub folders (weights: never commit)")
    parser.add_argument("--results_dir", default="docs/zoo", help="results JSON per variant + README.md table")
    parser.add_argument("--hub_namespace", default=None, help="the cards' loading snippets name <namespace>/<model>")
    parser.add_argument("--force", action="store_true", help="rebuild variants already built")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few steps: a smoke test, not a measurement")
    args = parser.parse_args(argv)
    if not args.budget_minutes > 0:
        raise ValueError(f"--budget_minutes must be a positive number of minutes, got {args.budget_minutes}")
    if args.max_steps < 1:
        raise ValueError(f"--max_steps must be at least 1, got {args.max_steps}")
    if args.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {args.threads}")
    if args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1, got {args.seeds}")
    known = {spec.name: spec for spec in SPECS.values()}
    names = args.variants or sorted(known)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; registered: {', '.join(sorted(known))}")
    args.specs = [known[name] for name in dict.fromkeys(names)]
    return args


def model_name(spec: VariantSpec, quick: bool) -> str:
    """The zoo entry's name: the mini config's ("bert-mini"), marked when --quick made it tiny."""
    return f"{spec.mini_config}-quick" if quick else spec.mini_config


def not_built_reason(spec: VariantSpec) -> str | None:
    """Why run_pretraining.py cannot pretrain ``spec`` (None when it can)."""
    if spec.mini_config is None:
        return f"variant {spec.name} declares no mini config"
    try:
        parse_objective(spec.pretraining_objective)
    except ValueError:
        script = OTHER_SCRIPTS.get(spec.pretraining_objective, "another script")
        return (f"run_pretraining.py has no objective {spec.pretraining_objective!r}; {spec.name} trains with "
                f"{script}, not yet wired into the zoo")
    return None


def pretraining_argv(spec: VariantSpec, args: argparse.Namespace, run_dir: Path) -> list[str]:
    """run_pretraining.py's arguments for ``spec``'s mini with its paper's objective and recipe."""
    argv = ["--model_name_or_path", spec.mini_config, "--objective", spec.pretraining_objective,
            "--max_time", str(args.budget_minutes), "--seed", str(args.seed), "--output_dir", str(run_dir),
            "--report_to", "none", "--disable_tqdm", "true"]
    if spec.name in RECIPES:  # the paper's scaled hyperparameters (gpt etc. have none: the script's defaults)
        argv += ["--recipe", spec.name]
    if args.bf16:
        argv.append("--bf16")
    if args.quick:
        # the tokenizer sets the vocabulary; the mini's positions stay (the probes read 128 tokens)
        tiny = {key: value for key, value in (spec.tiny_config or {}).items() if key not in KEEP_MINI}
        argv += ["--config_overrides", ",".join(f"{key}={value}" for key, value in tiny.items())] if tiny else []
        argv += QUICK_PRETRAINING + ["--save_steps", "1000"]
    else:
        argv += ["--corpus", "pretraining", "--max_steps", str(args.max_steps), "--eval_steps", "200",
                 "--save_steps", "200", "--logging_steps", "50"]
    return argv


def held_out(results: dict | None) -> dict[str, float]:
    """The held-out loss / accuracy / perplexity of one of run_pretraining's evaluations."""
    return {key: results[key] for key in HELD_OUT_KEYS if results and key in results}


def held_out_before(trained: dict, run_dir: Path) -> dict[str, float]:
    """The untrained model's held-out numbers: from the results, or (a run resumed from a checkpoint
    does not evaluate before training again) from the step-0 line of its eval_curve.jsonl."""
    if trained["before_training"]:
        return held_out(trained["before_training"])
    curve = run_dir / "eval_curve.jsonl"
    lines = [json.loads(line) for line in curve.read_text().splitlines() if line.strip()] if curve.is_file() else []
    return held_out(next((line for line in lines if line["step"] == 0), None))


def evaluation_summary(report: dict) -> dict[str, dict]:
    """Per task row (sentiment, pos, probe: sentiment, probe: pos): test mean ± std of both arms and
    the difference, read from evaluate_pretraining's report."""
    rows = {}
    for task, entry in report["tasks"].items():
        if task == "probe":
            arms = {arm: {probe: entry[arm][probe]["test"] for probe in ("sentiment", "pos")}
                    for arm in ("pretrained", "random") if entry.get(arm)}
            pieces = {f"probe: {probe}": {arm: arms[arm][probe] for arm in arms} for probe in ("sentiment", "pos")}
            metrics = {"probe: sentiment": "accuracy %, mean-pooled", "probe: pos": "word accuracy %"}
        else:
            pieces = {task: {arm: entry[arm]["test"] for arm in ("pretrained", "random") if entry.get(arm)}}
            metrics = {task: entry["metric"]}
        for row, arms in pieces.items():
            rows[row] = {"metric": metrics[row], "split": "test",
                         **{arm: {"mean": value["mean"], "std": value["std"], "n": len(value["scores"])}
                            for arm, value in arms.items()}}
            if "pretrained" in arms and "random" in arms:
                rows[row]["difference"] = round(arms["pretrained"]["mean"] - arms["random"]["mean"], 2)
    return rows


def build_hub_folder(run_dir: Path, hub_dir: Path) -> None:
    """Copy the weights, config, tokenizer and run records into the empty folder ``hub_dir`` and
    export the remote code."""
    for path in sorted(run_dir.iterdir()):
        if path.is_file() and (path.name in HUB_FILES or path.name.startswith(TOKENIZER_PREFIXES)):
            shutil.copy2(path, hub_dir / path.name)
    export_remote_code(hub_dir)


def write_card(hub_dir: Path, result: dict) -> None:
    """The model card: run_pretraining's held-out numbers through the shared card code, then the
    zoo's task results added to the model-index and as a table beside the random twin's."""
    pretraining = result["pretraining"]
    corpus = DatasetInfo(name=f"the hf-variants {pretraining['corpus']} corpus (held-out documents)",
                         id=f"local/hf-variants-{pretraining['corpus']}", split="validation")
    limitations = [f"Pretrained for {pretraining['train_minutes']:.1f} minutes ({pretraining['global_step']} steps, "
                   f"budget {result['budget_minutes']:g} minutes) on {pretraining['hardware']}: a small model trained "
                   "briefly, for studying the variant, not for production."]
    if result["quick"]:
        limitations.insert(0, "Built with --quick (tiny sizes, a few steps): a smoke test, not a measurement.")
    card = write_model_card(hub_dir, eval_results=pretraining["held_out_after"], dataset=corpus,
                            objective=result["objective"], model_name=result["model_name"],
                            hardware=pretraining["hardware"], limitations=limitations, repo_id=result.get("repo_id"))
    rows = result["evaluation"].get("tasks", {})
    extra = [EvalResult(task_type=TASK_CARD[row][0], dataset_type=TASK_CARD[row][1], dataset_name=TASK_CARD[row][2],
                        dataset_split=values["split"], metric_type=TASK_CARD[row][3], metric_name=f"{row} ({values['metric']})",
                        metric_value=values["pretrained"]["mean"])
             for row, values in rows.items() if row in TASK_CARD and "pretrained" in values]
    card.data.eval_results = list(card.data.eval_results or []) + extra
    lines = ["## Zoo evaluation: pretrained vs random-weight twin", "",
             f"Budget: {result['budget_minutes']:g} minutes of pretraining; evaluated with "
             "examples/evaluate_pretraining.py (test split, mean ± std over seeds, identical schedules).", ""]
    if rows:
        lines += ["| task | metric | pretrained | random twin | difference |", "|---|---|---|---|---|"]
        lines += [f"| {row} | {v['metric']} | {_cell(v.get('pretrained'))} | {_cell(v.get('random'))} | "
                  f"{v.get('difference', float('nan')):+.2f} |" for row, v in rows.items()]
    not_run = result["evaluation"].get("not_run", {})
    lines += [""] + [f"- not run: {task}: {reason}" for task, reason in not_run.items()] if not_run else []
    card.text = card.text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
    card.save(hub_dir / CARD_FILE)


def _cell(arm: dict | None) -> str:
    return "-" if not arm else f"{arm['mean']:.1f} ± {arm['std']:.1f} (n={arm['n']})"


def build_variant(spec: VariantSpec, args: argparse.Namespace) -> dict:
    """Pretrain, evaluate and package one variant; returns its results record."""
    import evaluate_pretraining
    import run_pretraining
    from hf_variants.hub.run_record import detect_hardware

    name = model_name(spec, args.quick)
    root = Path(args.output_dir) / name
    run_dir, eval_dir, hub_dir = root / "pretraining", root / "evaluation", root / "hub"
    argv = pretraining_argv(spec, args, run_dir)
    print(f"[zoo] {name}: pretraining ({args.budget_minutes:g} minutes at most)", flush=True)
    if args.force:  # start over: neither the old run's checkpoints nor its finished evaluations are reused
        argv.append("--overwrite_output_dir")
        shutil.rmtree(eval_dir, ignore_errors=True)
    torch.set_num_threads(args.threads)  # evaluate_pretraining sets its own count: every variant starts alike
    trained = run_pretraining.main(argv)
    result = {"variant": spec.name, "model_name": name, "config": spec.mini_config, "objective": trained["objective"],
              "recipe": trained["recipe"], "budget_minutes": args.budget_minutes, "quick": args.quick,
              "status": "built", "folder": str(hub_dir),
              "repo_id": f"{args.hub_namespace}/{name}" if args.hub_namespace else None,
              "pretraining": {"argv": argv, "corpus": trained["corpus"], "global_step": trained["global_step"],
                              "max_steps": trained["max_steps"], "tokens_seen": trained["tokens_seen"],
                              "train_minutes": round(trained["train_minutes"], 2),
                              "stopped_by_max_time": trained["stopped_by_max_time"], "bf16": trained["bf16"],
                              "seed": args.seed, "hardware": detect_hardware(),
                              "held_out_before": held_out_before(trained, run_dir),
                              "held_out_after": held_out(trained["after_training"])}}
    reason = NOT_HARNESS.get(spec.pretraining_objective)
    if reason is None:
        eval_argv = ["--model_name_or_path", str(run_dir), "--output_dir", str(eval_dir), "--tasks", *EVALUATION_TASKS,
                     "--seeds", str(args.seeds), "--threads", str(args.threads), "--resume"] + (["--quick"] if args.quick else []) + \
                    (["--bf16"] if args.bf16 else [])
        print(f"[zoo] {name}: evaluating beside the random-weight twin", flush=True)
        report = evaluate_pretraining.main(eval_argv)
        result["evaluation"] = {"harness": "examples/evaluate_pretraining.py", "argv": eval_argv,
                                "seeds": report["seeds"], "quick": report["quick"],
                                "tasks": evaluation_summary(report), "not_run": HARNESS_NOT_RUN}
    else:
        result["evaluation"] = {"harness": None, "tasks": {},
                                "not_run": {task: reason for task in EVALUATION_TASKS},
                                "measured": "held-out loss of run_pretraining's eval_results.json only"}
    # Built beside the old folder and swapped in whole: a failed rebuild leaves the previous one
    # intact, and a rebuild keeps none of its files (every old name is stale).
    with staged_directory(hub_dir, stale=lambda name: True) as staging:
        build_hub_folder(run_dir, staging)
        write_card(staging, result)
    return result


def summary_table(results: list[dict]) -> str:
    """docs/zoo/README.md: one row per results JSON."""
    lines = ["# The zoo", "", "Every variant's mini pretrained with its paper's objective and evaluated beside its "
             "random-weight twin; built by `hf-variants zoo` (docs/zoo.md). Rebuilt from the results JSON files "
             "in this folder: do not edit by hand.", "",
             "| model | objective | budget (min) | steps | held-out loss before → after | "
             "pretrained vs random twin (test, difference) | not run |", "|---|---|---|---|---|---|---|"]
    for result in sorted(results, key=lambda r: r["model_name"]):
        if result["status"] != "built":
            lines.append(f"| {result['model_name']} | {result['objective']} | - | - | - | {result['status']} | "
                         f"{result['reason']} |")
            continue
        pre = result["pretraining"]
        loss = (f"{pre['held_out_before']['mlm_loss']:.3f} → {pre['held_out_after']['mlm_loss']:.3f}"
                if "mlm_loss" in pre["held_out_before"] and "mlm_loss" in pre["held_out_after"] else "-")
        tasks = "; ".join(f"{row}: {v['pretrained']['mean']:.1f} vs {v['random']['mean']:.1f} ({v['difference']:+.1f})"
                          for row, v in result["evaluation"]["tasks"].items() if "difference" in v) or "-"
        not_run = ", ".join(result["evaluation"]["not_run"]) or "-"
        quick = " (--quick)" if result["quick"] else ""
        lines.append(f"| {result['model_name']}{quick} | {result['objective']} | {result['budget_minutes']:g} | "
                     f"{pre['global_step']} | {loss} | {tasks} | {not_run} |")
    return "\n".join(lines) + "\n"


def write_summary(results_dir: Path) -> Path:
    """Rebuild ``results_dir/README.md`` from every results JSON present."""
    results = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(results_dir.glob("*.json"))]
    path = results_dir / "README.md"
    write_text_atomically(path, summary_table(results))
    return path


def main(argv: Sequence[str] | None = None) -> dict[str, dict]:
    """Build every variant asked for (skipping the built ones) and return name -> results record."""
    args = parse_arguments(argv)
    results_dir = Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    records, failed = {}, []
    for spec in args.specs:
        name = model_name(spec, args.quick) if spec.mini_config else spec.name
        results_path = results_dir / f"{name}.json"
        reason = not_built_reason(spec)
        if reason is not None:
            records[name] = {"variant": spec.name, "model_name": name, "objective": spec.pretraining_objective,
                             "status": "not built", "reason": reason, "quick": args.quick}
            print(f"[zoo] {name}: not built ({reason})", flush=True)
        elif is_built(results_path, Path(args.output_dir) / name / "hub") and not args.force:
            records[name] = json.loads(results_path.read_text(encoding="utf-8"))
            records[name]["skipped"] = True
            print(f"[zoo] {name}: already built ({results_path}); --force rebuilds it", flush=True)
            continue
        else:
            try:
                records[name] = build_variant(spec, args)
            except Exception as error:  # noqa: BLE001  (one variant's failure must not stop an hours-long zoo)
                records[name] = {"variant": spec.name, "model_name": name, "objective": spec.pretraining_objective,
                                 "status": "failed", "reason": f"{type(error).__name__}: {error}", "quick": args.quick}
                failed.append(name)
                print(f"[zoo] {name}: FAILED ({records[name]['reason']})", flush=True)
        write_text_atomically(results_path, json.dumps(records[name], indent=2) + "\n")
        write_summary(results_dir)
    write_summary(results_dir)
    if failed:  # recorded (and rebuilt by the next call); the caller must still see the run fail
        raise RuntimeError(f"the zoo could not build {failed}: see their results JSON in {results_dir}")
    return records


def is_built(results_path: Path, hub_dir: Path) -> bool:
    """Whether a variant's results JSON says built and its Hub folder holds a config."""
    if not (results_path.is_file() and (hub_dir / "config.json").is_file()):
        return False
    return json.loads(results_path.read_text(encoding="utf-8")).get("status") == "built"


if __name__ == "__main__":
    main()
