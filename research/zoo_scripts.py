"""The zoo's wiring of the pretraining scripts other than run_pretraining.py (research/zoo.py).

GPT and Transformer-XL pretrain with causal LM (``run_clm.py``) on the corpus run_pretraining
reads (``--corpus pretraining``), the original Transformer with translation (``run_translation.py``)
on the offline parallel data it uses (``hf_variants/cmudict``: spelling -> pronunciation), and ViT
with MAE (``run_mae.py``) on Fashion-MNIST's images (``hf_variants/fashion_mnist``, labels unused).
The zoo calls each script's ``main(argv)`` with the same ``--max_time`` (the budget), ``--max_steps``
(the schedule) and ``--seed`` as the encoders, and reads back what the script itself measured:

- **the random-weight twin** is the same model before its first step (the same config at the same
  init seed), evaluated on the same held-out split: run_clm's ``before_training`` evaluation,
  and for the Trainer-based scripts transformers' ``--eval_on_start`` (the step-0 ``eval_*``
  entry of ``trainer_state.json``). Nothing is evaluated twice.
- **the pretrained model** is the script's final evaluation on that split.

Each comparison becomes an evaluation row ``{metric, split, higher_is_better, pretrained, random,
difference, ahead}`` (``held_out_rows``), the form of the harness's rows in the results JSON.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from hf_variants.hub.atomic import write_text_atomically
from hf_variants.hub.checkpoints import last_complete_checkpoint
from hf_variants.registry import VariantSpec
from research.example_scripts import example_script

# Objective -> the script that trains it (run_pretraining.py trains the others).
SCRIPTS = {"clm": "examples/run_clm.py", "seq2seq": "examples/run_translation.py", "mae": "examples/run_mae.py"}

# run_clm's scored generation task for the decoders: greedy continuations of 8 tokens after 200
# held-out prompts of 32 tokens (run_clm's --prompt_length default), before and after training.
GENERATION_TASK = ["--generation_prompts", "200", "--generation_length", "8"]
QUICK_GENERATION_TASK = ["--generation_prompts", "4", "--generation_length", "3"]
# Each script's zoo run: its data and the hyperparameters of its measured runs. GPT / Transformer-XL
# take run_clm's defaults (lr 5e-4, 5% warm-up, cosine) at the encoder recipes' 32 x 128 tokens per
# step; the Transformer and ViT take the settings of their runs in docs/results.md (G2P: 64 pairs,
# lr 1e-3, "Noam" inverse-sqrt schedule, beta2 0.98; MAE: 128 images, base lr 3e-3, 75% of the
# patches removed). Translation scores 2,000 held-out pairs (greedy generation) in both arms.
SCRIPT_SETTINGS = {
    "clm": [
        "--corpus",
        "pretraining",
        "--max_seq_length",
        "128",
        "--per_device_train_batch_size",
        "32",
        "--per_device_eval_batch_size",
        "32",
        *GENERATION_TASK,
    ],
    "seq2seq": [
        "--dataset_name",
        "hf_variants/cmudict",
        "--source_lang",
        "graphemes",
        "--target_lang",
        "phonemes",
        "--do_train",
        "--do_eval",
        "--predict_with_generate",
        "--num_beams",
        "1",
        "--max_eval_samples",
        "2000",
        "--val_max_target_length",
        "40",
        "--per_device_train_batch_size",
        "64",
        "--per_device_eval_batch_size",
        "100",
        "--learning_rate",
        "1e-3",
        "--lr_scheduler_type",
        "inverse_sqrt",
        "--warmup_steps",
        "200",
        "--adam_beta2",
        "0.98",
        "--adam_epsilon",
        "1e-9",
        "--weight_decay",
        "0",
    ],
    "mae": [
        "--dataset_name",
        "hf_variants/fashion_mnist",
        "--do_train",
        "--do_eval",
        "--per_device_train_batch_size",
        "128",
        "--per_device_eval_batch_size",
        "256",
        "--base_learning_rate",
        "3e-3",
        "--warmup_steps",
        "0.05",
        "--weight_decay",
        "0.05",
        "--mask_ratio",
        "0.75",
    ],
}
# --quick: a few rows of the same data, tiny batches, 3 steps (a smoke test).
QUICK_SETTINGS = {
    "clm": [
        "--corpus",
        "austen",
        "--max_documents",
        "12",
        "--vocab_size",
        "600",
        "--max_seq_length",
        "32",
        "--per_device_train_batch_size",
        "4",
        "--per_device_eval_batch_size",
        "4",
        "--max_eval_tokens",
        "2000",
        "--eval_mem_lens",
        "0,32",
        "--num_samples",
        "1",
        "--prompt_length",
        "8",
        "--sample_length",
        "4",
        *QUICK_GENERATION_TASK,
    ],
    "seq2seq": [
        "--dataset_name",
        "hf_variants/cmudict",
        "--source_lang",
        "graphemes",
        "--target_lang",
        "phonemes",
        "--do_train",
        "--do_eval",
        "--predict_with_generate",
        "--num_beams",
        "1",
        "--max_train_samples",
        "64",
        "--max_eval_samples",
        "12",
        "--val_max_target_length",
        "16",
        "--vocab_size",
        "300",
        "--per_device_train_batch_size",
        "16",
        "--per_device_eval_batch_size",
        "12",
    ],
    "mae": [
        "--dataset_name",
        "hf_variants/fashion_mnist",
        "--do_train",
        "--do_eval",
        "--max_train_samples",
        "64",
        "--max_eval_samples",
        "32",
        "--per_device_train_batch_size",
        "16",
        "--per_device_eval_batch_size",
        "32",
    ],
}
# Where each script's held-out evaluation comes from: (dataset id, name, split) for the card.
DATASETS = {
    "clm": None,  # the --corpus, as run_pretraining's
    "seq2seq": ("hf_variants/cmudict", "CMU Pronouncing Dictionary (spelling -> phonemes)", "validation"),
    "mae": ("hf_variants/fashion_mnist", "Fashion-MNIST images (labels unused)", "validation"),
}
# The harness's tasks (and the issue's) each script's variants leave out, and why.
NOT_RUN = {
    "clm": {
        "sentiment, pos, probe": "the zoo's harness (evaluate_pretraining.py) fine-tunes encoder heads; the "
        "decoders are compared on held-out perplexity and a generation task"
    },
    "seq2seq": {
        "test split": "not run: the twin comparison uses the validation pairs (--do_predict is left for "
        "the final model)"
    },
    "mae": {},  # its labels: research/zoo_finetune.py
}
# Held-out metrics -> (row name, description, higher is better).
HELD_OUT_METRICS = {
    "clm": {
        "loss": ("held-out loss", "cross-entropy, nats per token", False),
        "perplexity": ("held-out perplexity", "per token of the zoo's tokenizer", False),
    },
    "seq2seq": {
        "eval_loss": ("held-out loss", "cross-entropy per target token, with the config's label smoothing", False),
        "eval_exact_match": ("held-out exact match", "% of words whose pronunciation is generated exactly", True),
        "eval_token_error_rate": ("held-out phoneme error rate", "% (edit distance / reference phonemes)", False),
    },
    "mae": {"eval_loss": ("held-out reconstruction loss", "MSE of the removed patches' normalised pixels", False)},
    # run_clm's generation task (its generation_before / generation_after)
    "generation": {
        "token_accuracy": (
            "continuation accuracy",
            "% of greedily generated tokens equal to the real text's at the same position",
            True,
        ),
        "first_token_accuracy": (
            "first-token accuracy",
            "% of prompts whose first generated token is the real one",
            True,
        ),
    },
    # T5 through run_pretraining (its eval_results.json before / after training)
    "span-corruption": {
        "mlm_loss": ("held-out loss", "span-corruption cross-entropy, nats per target token", False),
        "mlm_perplexity": ("held-out perplexity", "per target token", False),
    },
}


def script_argv(spec: VariantSpec, args: argparse.Namespace, run_dir: Path, tiny_overrides: str | None) -> list[str]:
    """The arguments of ``spec``'s script: the zoo's budget, schedule and seed, the script's
    settings (``SCRIPT_SETTINGS``; ``QUICK_SETTINGS`` with --quick) and, for the Trainer-based
    scripts, ``--eval_on_start`` unless the run resumes from a checkpoint (its step-0 evaluation,
    the twin's, is then already in the checkpoint's log history)."""
    objective = spec.pretraining_objective
    argv = [
        "--model_name_or_path",
        spec.mini_config,
        "--output_dir",
        str(run_dir),
        "--seed",
        str(args.seed),
        "--max_time",
        str(args.budget_minutes),
        "--report_to",
        "none",
        "--disable_tqdm",
        "true",
    ]
    argv += QUICK_SETTINGS[objective] if args.quick else SCRIPT_SETTINGS[objective]
    if args.quick:
        argv += ["--max_steps", "3", "--logging_steps", "1", "--save_steps", "1000"]
        argv += ["--config_overrides", tiny_overrides] if tiny_overrides else []
    else:
        argv += ["--max_steps", str(args.max_steps), "--save_steps", "200", "--logging_steps", "50"]
    if objective != "clm":
        argv += ["--save_strategy", "steps"]
        if args.force or last_complete_checkpoint(str(run_dir)) is None:
            argv.append("--eval_on_start")
    if args.force:
        argv.append("--overwrite_output_dir")
    if args.bf16:
        argv.append("--bf16")  # CPU autocast where there is no accelerator (the scripts default to use_cpu there)
    return argv


def run_script(
    spec: VariantSpec, args: argparse.Namespace, run_dir: Path, tiny_overrides: str | None, recorded: dict | None = None
) -> tuple[dict, dict]:
    """Pretrain ``spec``'s mini with its script; returns (the results JSON's ``pretraining`` part
    without the hardware, its ``evaluation`` part). ``recorded``: the ``pretraining`` part of the
    results JSON of a finished run evaluated again (--reevaluate): its arguments, seed, bf16 and
    hardware are the run's, not today's call's."""
    run_clm = example_script("run_clm")
    run_mae = example_script("run_mae")
    run_translation = example_script("run_translation")

    objective = spec.pretraining_objective
    argv = script_argv(spec, args, run_dir, tiny_overrides)
    main = {"clm": run_clm.main, "seq2seq": run_translation.main, "mae": run_mae.main}[objective]
    # A finished run is read, not called again: Trainer resuming from a checkpoint at --max_steps
    # trains one more step before it stops (run_pretraining's stream ends at max_steps and does not).
    finished = None if args.force else finished_results(objective, run_dir)
    results = finished if finished is not None else main(argv)
    if objective == "clm":
        before, after = results["before_training"], results["after_training"]
        pretraining = {
            key: results[key]
            for key in ("global_step", "max_steps", "tokens_seen", "stopped_by_max_time", "bf16", "corpus")
        }
        pretraining["train_minutes"] = round(results["train_minutes"], 2)
        if "by_memory_length" in results:  # Transformer-XL: the held-out perplexity at each memory length
            pretraining["by_memory_length"] = results["by_memory_length"]
    else:
        state = json.loads((run_dir / "trainer_state.json").read_text(encoding="utf-8"))
        before = step_zero_evaluation(state)
        after = {key: value for key, value in results.items() if key.startswith("eval_")}
        pretraining = {
            "global_step": state["global_step"],
            "max_steps": state["max_steps"],
            "tokens_seen": None,
            "examples_seen": state["global_step"] * state["train_batch_size"],
            "train_minutes": round(results["train_minutes"], 2),
            "stopped_by_max_time": results["stopped_by_max_time"],
            "bf16": args.bf16,
        }
        dataset_id, dataset_name, split = DATASETS[objective]
        pretraining["dataset"] = {"id": dataset_id, "name": dataset_name, "split": split}
    metrics = HELD_OUT_METRICS[objective]
    if finished is not None:
        pretraining["reused"] = "the finished run in this folder was read, not run again"
    pretraining |= {
        "script": SCRIPTS[objective],
        "argv": argv,
        "seed": args.seed,
        "held_out_before": pick(before, metrics),
        "held_out_after": pick(after, metrics),
    }
    evaluation = {
        "harness": SCRIPTS[objective],
        "measured": "the script's held-out evaluation of the pretrained model and of the same model "
        "before its first step (the random-weight twin: same config, same init seed)",
        "tasks": held_out_rows(before, after, metrics, "validation"),
        "not_run": dict(NOT_RUN[objective]),
    }
    if recorded is not None:
        pretraining |= {key: recorded[key] for key in ("argv", "seed", "bf16", "hardware") if key in recorded}
    if objective == "clm":
        evaluation["tasks"] |= generation_rows(results, pretraining["argv"], run_dir, args.quick)
    if before is None:
        evaluation["not_run"]["random twin"] = (
            "the run resumed from a checkpoint that holds no evaluation before training"
        )
    return pretraining, evaluation


def generation_rows(results: dict, argv: list[str], run_dir: Path, quick: bool) -> dict[str, dict]:
    """run_clm's generation task as evaluation rows: from the run's results, or, for a run finished
    before the task existed, scored now (run_clm.generation_of_finished_run on the run's own
    arguments ``argv`` with the task's added: its rebuilt twin and its trained model) and kept in
    the run folder as generation_results.json (also when a run started before the task existed was
    resumed after: its twin's scores were never taken)."""
    run_clm = example_script("run_clm")

    if results.get("generation_before") is None or results.get("generation_after") is None:
        if "--generation_prompts" not in argv:
            argv = argv + (QUICK_GENERATION_TASK if quick else GENERATION_TASK)
        path = run_dir / "generation_results.json"
        kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if kept.get("argv") != argv:
            kept = {"argv": argv, **run_clm.generation_of_finished_run(argv)}
            write_text_atomically(path, json.dumps(kept, indent=2))  # the resume reads it back whole
        results = kept
    before, after = results.get("generation_before"), results["generation_after"]
    task = (
        f"; {after['prompts']} held-out prompts of {after['prompt_length']} tokens, {after['generation_length']} "
        "tokens generated each"
    )
    metrics = {
        key: (row, description + task, higher)
        for key, (row, description, higher) in HELD_OUT_METRICS["generation"].items()
    }
    return held_out_rows(before, after, metrics, "validation")


def finished_results(objective: str, run_dir: Path) -> dict | None:
    """What a finished run of the script in ``run_dir`` reported (None: not finished): run_clm's
    eval_results.json, or the Trainer scripts' all_results.json once it holds the final evaluation
    and the budget's minutes (both written only at the end of a run)."""
    path = run_dir / ("eval_results.json" if objective == "clm" else "all_results.json")
    results = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    wanted = ("after_training", "train_minutes") if objective == "clm" else ("eval_loss", "train_minutes")
    return results if all(key in results for key in wanted) else None


def step_zero_evaluation(state: dict) -> dict | None:
    """The ``eval_*`` metrics logged at step 0 (``--eval_on_start``): the untrained model's."""
    return next(
        (entry for entry in state.get("log_history", []) if entry.get("step") == 0 and "eval_loss" in entry), None
    )


def pick(results: dict | None, metrics: dict) -> dict[str, float]:
    """The entries of ``results`` named in ``metrics``."""
    return {key: results[key] for key in metrics if results and key in results}


def held_out_rows(
    before: dict | None, after: dict, metrics: dict[str, tuple[str, str, bool]], split: str
) -> dict[str, dict]:
    """One evaluation row per metric present in ``after`` (``comparison_row``): the pretrained
    model (``after``) beside its random-weight twin (``before``; None: no twin row), one
    measurement each."""
    rows = {}
    for key, (row, description, higher_is_better) in metrics.items():
        if key not in after or not math.isfinite(after[key]):
            continue
        twin = before is not None and key in before and math.isfinite(before[key])
        rows[row] = comparison_row(
            f"{description}, {'higher' if higher_is_better else 'lower'} is better",
            split,
            higher_is_better,
            single(after[key]),
            single(before[key]) if twin else None,
        )
    return rows


def comparison_row(
    metric: str, split: str, higher_is_better: bool, pretrained: dict | None, random: dict | None
) -> dict:
    """The zoo's evaluation row, one form for every task: each arm as ``{mean, std, n}``, the
    difference (pretrained - twin) and, with both arms, whether the pretrained model is ``ahead``
    or ``behind`` beyond the noise (the larger std of the two arms; 0 for single measurements,
    which are then judged by sign). A difference inside the noise is neither."""
    row: dict = {"metric": metric, "split": split, "higher_is_better": higher_is_better}
    row |= {arm: value for arm, value in (("pretrained", pretrained), ("random", random)) if value is not None}
    if pretrained is not None and random is not None:
        difference = round(pretrained["mean"] - random["mean"], 4)
        noise = max(pretrained["std"], random["std"])
        gain = difference if higher_is_better else -difference
        row |= {"difference": difference, "noise": round(noise, 2), "ahead": gain > noise, "behind": gain < -noise}
    return row


def single(value: float) -> dict:
    """One measurement in the harness's {mean, std, n} form."""
    return {"mean": value, "std": 0.0, "n": 1}
