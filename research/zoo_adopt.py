"""``python -m research.zoo --adopt NAME=RUN_DIR`` and ``--adopt_evaluation NAME=EVAL_DIR`` (research/zoo.py):
finished runs used in place of the zoo's own.

An adopted run is a run_pretraining.py output folder (the hour-long runs made outside the zoo):
the zoo builds the variant's Hub folder from it instead of pretraining, and its results JSON
records that folder and the run's own arguments, minutes and tokens (its ``eval_results.json``),
never the zoo's defaults. An adopted evaluation is an evaluate_pretraining.py output folder made
of that run (its ``evaluation.json`` names the checkpoint it evaluated). Both are checked before
anything is built; a folder that does not fit is a ValueError naming the problem.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from hf_variants.registry import VariantSpec

# What a finished run_pretraining.py folder holds (the tokenizer: either file).
RUN_FILES = ("eval_results.json", "model.safetensors", "config.json", "eval_curve.jsonl")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
# The arguments a run_pretraining.py eval_results.json records (copied into the results JSON).
RUN_ARGUMENTS = (
    "objective",
    "recipe",
    "masking",
    "input_format",
    "sequence_lengths",
    "max_steps",
    "learning_rate",
    "per_device_train_batch_size",
    "mlm_probability",
    "eval_mlm_probability",
    "second_task_weight",
    "corpus",
    "corpus_sources",
    "corpus_upsample",
    "bf16",
    "flop_budget",
    "world_size",
)


def parse_pairs(values: Sequence[str] | None, flag: str, specs: dict[str, VariantSpec]) -> dict[str, Path]:
    """``["bert=/runs/x", ...]`` -> {"bert": Path("/runs/x")}; ValueError for a malformed pair, an
    unknown or unselected variant, or a variant given twice."""
    pairs: dict[str, Path] = {}
    for value in values or []:
        name, separator, folder = value.partition("=")
        if not separator or not name or not folder:
            raise ValueError(f"{flag} takes NAME=FOLDER, got {value!r}")
        if name not in specs:
            raise ValueError(f"{flag} {value}: {name!r} is not among the variants built ({', '.join(specs)})")
        if name in pairs:
            raise ValueError(f"{flag} names {name} twice")
        pairs[name] = Path(folder)
    return pairs


def check_adopted_run(spec: VariantSpec, folder: Path, script: str | None, flag: str = "--adopt") -> dict:
    """The run's eval_results.json, once ``folder`` is known to be a finished run_pretraining.py
    output of ``spec``'s model type (``script``: the other script that trains ``spec``, if any;
    ``flag``: the argument named in the errors)."""
    if script is not None:
        raise ValueError(
            f"{flag} {spec.name}={folder}: adopting takes run_pretraining.py folders, and {spec.name} "
            f"pretrains with {script}"
        )
    if not folder.is_dir():
        raise ValueError(f"{flag} {spec.name}={folder}: no such folder")
    missing = [name for name in RUN_FILES if not (folder / name).is_file()]
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        missing.append(" or ".join(TOKENIZER_FILES))
    if missing:
        raise ValueError(
            f"{flag} {spec.name}={folder}: not a finished run_pretraining.py folder, it lacks {', '.join(missing)}"
        )
    model_type = read_json(folder / "config.json", f"{flag} {spec.name}").get("model_type")
    wanted = spec.config_class.model_type
    if model_type != wanted:
        raise ValueError(
            f"{flag} {spec.name}={folder}: its config.json has model_type {model_type!r}, {spec.name} is {wanted!r}"
        )
    results = read_json(folder / "eval_results.json", f"{flag} {spec.name}")
    lacking = [key for key in ("after_training", "global_step", "train_minutes", "tokens_seen") if key not in results]
    if lacking:
        raise ValueError(
            f"{flag} {spec.name}={folder}: its eval_results.json lacks {lacking} (not written by "
            "run_pretraining.py at the end of a run)"
        )
    return results


def check_adopted_evaluation(name: str, folder: Path, adopted: dict[str, Path], harness: bool) -> dict:
    """The evaluate_pretraining.py report in ``folder``, once it is known to evaluate the run
    adopted for ``name`` (``harness``: whether the zoo evaluates ``name`` with that script)."""
    if not harness:
        raise ValueError(
            f"--adopt_evaluation {name}={folder}: the zoo does not evaluate {name} with evaluate_pretraining.py"
        )
    if name not in adopted:
        raise ValueError(
            f"--adopt_evaluation {name}={folder} needs --adopt {name}=RUN_DIR: an evaluation is "
            "reused only with the run it evaluated"
        )
    path = folder / "evaluation.json"
    if not path.is_file():
        raise ValueError(
            f"--adopt_evaluation {name}={folder}: no evaluation.json (not an evaluate_pretraining.py output folder)"
        )
    report = read_json(path, f"--adopt_evaluation {name}")
    checkpoint = report.get("checkpoint")
    if checkpoint is None or Path(checkpoint).resolve() != adopted[name].resolve():
        raise ValueError(
            f"--adopt_evaluation {name}={folder} evaluated {checkpoint}, not the adopted run {adopted[name]}"
        )
    if not isinstance(report.get("tasks"), dict) or "seeds" not in report:
        raise ValueError(
            f"--adopt_evaluation {name}={folder}: its evaluation.json has no tasks / seeds (an unfinished evaluation?)"
        )
    return report


def check_reevaluation(spec: VariantSpec, results_path: Path, zoo_run_dir: Path) -> tuple[dict, Path]:
    """``--reevaluate NAME``: (the variant's results JSON, its pretraining folder), once the JSON
    says built and the folder (the adopted run it names, else the zoo's own) holds a finished run
    of its script, so the evaluation can be redone without pretraining again."""
    from research import zoo_scripts

    if not results_path.is_file():
        raise ValueError(f"--reevaluate {spec.name}: no results JSON {results_path} (build it first)")
    old = read_json(results_path, f"--reevaluate {spec.name}")
    if old.get("status") != "built" or "pretraining" not in old:
        raise ValueError(
            f"--reevaluate {spec.name}: {results_path} is not a built variant (status "
            f"{old.get('status')!r}): build it first"
        )
    folder = Path(old["pretraining"].get("adopted") or zoo_run_dir)
    script = zoo_scripts.SCRIPTS.get(spec.pretraining_objective)
    if script is None:
        check_adopted_run(spec, folder, None, flag="--reevaluate")
    elif (
        zoo_scripts.finished_results(spec.pretraining_objective, folder) is None
        or not (folder / "model.safetensors").is_file()
    ):
        raise ValueError(
            f"--reevaluate {spec.name}: {folder} holds no finished {script} run (its final results and "
            "model.safetensors)"
        )
    return old, folder


def adopted_pretraining(results: dict, folder: Path) -> dict:
    """The results JSON's ``pretraining`` part for an adopted run: its own numbers and arguments."""
    return {
        "script": "examples/run_pretraining.py",
        "adopted": str(folder.resolve()),
        "argv": None,
        "arguments": {key: results[key] for key in RUN_ARGUMENTS if key in results},
        "corpus": results.get("corpus"),
        "global_step": results["global_step"],
        "max_steps": results.get("max_steps"),
        "tokens_seen": results["tokens_seen"],
        "train_minutes": round(results["train_minutes"], 2),
        "stopped_by_max_time": results.get("stopped_by_max_time"),
        "bf16": results.get("bf16"),
        "seed": None,
        "hardware": "not recorded (a run adopted by the zoo)",
    }


def read_json(path: Path, flag: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{flag}: cannot read {path}: {error}") from None
