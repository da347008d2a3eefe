#!/usr/bin/env python
"""The zoo's students (issue 45): finished ``examples/run_distillation.py`` folders of one arm become
one Hub-ready folder with its model card::

    python -m research.zoo_students --run_dir runs/distil/bert-mini-pretrained-distilled-s42 \\
        runs/distil/bert-mini-pretrained-distilled-s43 runs/distil/bert-mini-pretrained-distilled-s44 \\
        --finetuned_run_dir runs/distil/bert-mini-pretrained-finetuned-s42 ... \\
        --output_dir runs/zoo-students/bert-mini-distilled

The folder gets the first ``--run_dir``'s student: its safetensors weights, config (the teacher's
``id2label``), tokenizer and run records, the ``configuration_<v>.py`` + ``modeling_<v>.py`` remote
code with its ``auto_map`` (``research.zoo.build_hub_folder``), the run's
``distillation_results.json`` and a model card (``hf_variants.hub``'s) whose text and model-index
give the teacher (its path and test accuracy), the transfer set (name, size, labelled and
unlabeled rows), the temperature, alpha, steps and seed, the student's test accuracy beside the
teacher's and beside its fine-tuned twin's (arm (b): ``--finetuned_run_dir``, run_glue.py folders
of the same student trained on the labels alone; "not measured" without it), and the speed-up.
Every number is read from the runs' JSON files. With several ``--run_dir`` (the seeds of one arm:
same teacher, transfer set and settings) the card adds a table over the seeds (mean ± std).

Runs made before run_distillation.py recorded its settings (``distillation_results.json``'s
``settings``) can be completed with ``--run_settings temperature=2 alpha=0.5
transfer_dataset_name=hf_variants/rt_transfer``: only keys the run did not record, and the card says
they were given when the card was built.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import EvalResult

from hf_variants.hub.atomic import staged_directory, write_text_atomically
from hf_variants.hub.card import DatasetInfo
from hf_variants.hub.run_record import CARD_FILE, TRAINING_ARGS_FILE, detect_hardware, write_model_card
from research.evaluation_support import mean_std
from research.zoo import build_hub_folder

RESULTS_FILE = "distillation_results.json"  # what run_distillation.py writes
RECORD_FILE = "zoo_student.json"  # what this command read, in the Hub folder beside the card
# distillation_results.json keys the card needs (written by run_distillation.py --do_train --do_predict).
REQUIRED_RESULTS = (
    "test_accuracy",
    "teacher_test_accuracy",
    "test_speedup",
    "test_student_seconds",
    "test_teacher_seconds",
    "test_samples",
    "transfer_samples",
    "transfer_labelled_samples",
)
# Settings the card states; an older run that did not record them takes them from --run_settings.
REQUIRED_SETTINGS = ("teacher_model_name_or_path", "temperature", "alpha", "dataset_name", "transfer_dataset_name")
FLOAT_SETTINGS = ("temperature", "alpha")
# Settings every seed of one arm must share (else the table over seeds mixes arms).
ARM_SETTINGS = ("teacher_model_name_or_path", "temperature", "alpha", "transfer_dataset_name", "dataset_name")
# A fine-tuned twin's test accuracy: run_glue.py writes predict_*, run_distillation.py test_*.
TWIN_ACCURACY_KEYS = ("predict_accuracy", "test_accuracy")


@dataclass(frozen=True)
class DistillationRun:
    """One finished run_distillation.py folder, as its JSON files give it.

    results: distillation_results.json; settings: the run's settings (recorded, else given);
    given: the setting keys that came from --run_settings; seed, steps: training_args.json's seed,
    trainer_state.json's global_step; learning_rate, batch_size: training_args.json's."""

    folder: Path
    results: dict
    settings: dict
    given: tuple[str, ...]
    seed: int
    steps: int
    learning_rate: float
    batch_size: int


def _read_json(path: Path, what: str) -> dict:
    if not path.is_file():
        raise ValueError(f"{path.parent} is not a finished {what} folder: {path.name} is missing")
    return json.loads(path.read_text(encoding="utf-8"))


def _seed_and_steps(folder: Path, what: str) -> tuple[dict, int, int]:
    """(training_args.json, its seed, trainer_state.json's global_step) of a finished training folder."""
    training_args = _read_json(folder / TRAINING_ARGS_FILE, what)
    state = _read_json(folder / "trainer_state.json", what)
    if "seed" not in training_args or "global_step" not in state:
        raise ValueError(f"{folder}: training_args.json needs 'seed' and trainer_state.json 'global_step'")
    return training_args, int(training_args["seed"]), int(state["global_step"])


def parse_run_settings(pairs: Sequence[str] | None) -> dict:
    """``["temperature=2", "alpha=0.5"]`` -> ``{"temperature": 2.0, "alpha": 0.5}`` (keys of REQUIRED_SETTINGS)."""
    settings = {}
    for pair in pairs or ():
        key, equals, value = pair.partition("=")
        if not equals or key not in REQUIRED_SETTINGS:
            raise ValueError(f"--run_settings takes KEY=VALUE with KEY one of {REQUIRED_SETTINGS}, got {pair!r}")
        settings[key] = float(value) if key in FLOAT_SETTINGS else value
    return settings


def read_distillation_run(folder: str | Path, given: dict | None = None) -> DistillationRun:
    """The run folder's numbers and settings; a ValueError names whatever is missing."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"--run_dir {folder} is not a folder")
    results = _read_json(folder / RESULTS_FILE, "run_distillation.py")
    missing = [key for key in REQUIRED_RESULTS if key not in results]
    if missing:
        raise ValueError(
            f"{folder / RESULTS_FILE} lacks {missing}: the card needs a run with --do_train --do_predict "
            "(the student's and the teacher's test accuracy and their speed)"
        )
    for name in ("model.safetensors", "config.json"):
        if not (folder / name).is_file():
            raise ValueError(f"{folder} holds no {name}: not a saved student")
    recorded = {key: value for key, value in results.get("settings", {}).items() if value is not None}
    if "transfer_dataset_name" not in recorded and "dataset_name" in recorded:
        recorded["transfer_dataset_name"] = f"{recorded['dataset_name']} (its train split)"  # no transfer set given
    if "teacher_model_name_or_path" not in recorded and results.get("teacher_logits_file"):
        cache = Path(results["teacher_logits_file"]).with_suffix(".json")  # the teacher's cache says whose
        if cache.is_file() and json.loads(cache.read_text(encoding="utf-8")).get("teacher"):
            recorded["teacher_model_name_or_path"] = json.loads(cache.read_text(encoding="utf-8"))["teacher"]
    if "dataset_name" not in recorded and (folder / "hfv_run.json").is_file():
        dataset = json.loads((folder / "hfv_run.json").read_text(encoding="utf-8")).get("dataset") or {}
        if dataset.get("id"):
            recorded["dataset_name"] = dataset["id"]
    given = dict(given or {})
    clashes = {
        key: (recorded[key], value) for key, value in given.items() if key in recorded and recorded[key] != value
    }
    if clashes:
        raise ValueError(f"--run_settings contradicts what {folder} recorded (recorded, given): {clashes}")
    extra = {key: value for key, value in given.items() if key not in recorded}
    settings = recorded | extra
    missing = [key for key in REQUIRED_SETTINGS if key not in settings]
    if missing:
        raise ValueError(
            f"{folder} did not record {missing} (a run of an older run_distillation.py): give them with "
            "--run_settings KEY=VALUE"
        )
    training_args, seed, steps = _seed_and_steps(folder, "run_distillation.py")
    return DistillationRun(
        folder=folder,
        results=results,
        settings=settings,
        given=tuple(sorted(extra)),
        seed=seed,
        steps=steps,
        learning_rate=float(training_args.get("learning_rate", float("nan"))),
        batch_size=int(training_args.get("per_device_train_batch_size", 0)),
    )


def read_finetuned_run(folder: str | Path) -> dict:
    """Arm (b), a run_glue.py folder: {"folder", "test_accuracy", "seed", "steps"} from its JSON files."""
    folder = Path(folder)
    results = _read_json(folder / "all_results.json", "fine-tuning (run_glue.py)")
    key = next((key for key in TWIN_ACCURACY_KEYS if key in results), None)
    if key is None:
        raise ValueError(
            f"{folder / 'all_results.json'} has none of {TWIN_ACCURACY_KEYS}: the twin needs a run with --do_predict"
        )
    _, seed, steps = _seed_and_steps(folder, "fine-tuning (run_glue.py)")
    model_type = _read_json(folder / "config.json", "fine-tuning (run_glue.py)").get("model_type")
    return {
        "folder": str(folder),
        "test_accuracy": float(results[key]),
        "seed": seed,
        "steps": steps,
        "model_type": model_type,
    }


def check_one_arm(runs: Sequence[DistillationRun]) -> None:
    """The runs are seeds of one arm: same teacher, settings, transfer set and steps, distinct seeds."""
    first = runs[0]
    for run in runs[1:]:
        differ = {
            key: (first.settings.get(key), run.settings.get(key))
            for key in ARM_SETTINGS
            if first.settings.get(key) != run.settings.get(key)
        }
        for key in ("transfer_samples", "transfer_labelled_samples", "test_samples"):
            if first.results[key] != run.results[key]:
                differ[key] = (first.results[key], run.results[key])
        if first.steps != run.steps:
            differ["steps"] = (first.steps, run.steps)
        if differ:
            raise ValueError(f"{run.folder} is not a seed of {first.folder}'s arm: {differ}")
    seeds = [run.seed for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"the --run_dir folders repeat a seed: {seeds}")


def _summary(values: Sequence[float]) -> dict:
    mean, std = mean_std(values)
    return {"mean": mean, "std": std, "n": len(values), "values": list(values)}


def student_record(runs: Sequence[DistillationRun], twins: Sequence[dict], model_name: str) -> dict:
    """What the card says, every number from the runs' JSON files (written as zoo_student.json)."""
    check_one_arm(runs)
    run = runs[0]
    results, settings = run.results, run.settings
    labelled = int(results["transfer_labelled_samples"])
    record = {
        "model_name": model_name,
        "student_run": str(run.folder),
        "seed": run.seed,
        "steps": run.steps,
        "learning_rate": run.learning_rate,
        "per_device_train_batch_size": run.batch_size,
        "settings": settings,
        "settings_given_on_the_command_line": list(run.given),
        "teacher": {
            "name_or_path": settings["teacher_model_name_or_path"],
            "test_accuracy": results["teacher_test_accuracy"],
        },
        "transfer_set": {
            "name": settings["transfer_dataset_name"],
            "config": settings.get("transfer_dataset_config_name"),
            "samples": int(results["transfer_samples"]),
            "labelled": labelled,
            "unlabeled": int(results["transfer_samples"]) - labelled,
        },
        "test_samples": int(results["test_samples"]),
        "test_accuracy": results["test_accuracy"],
        "test_speedup": results["test_speedup"],
        "test_student_seconds": results["test_student_seconds"],
        "test_teacher_seconds": results["test_teacher_seconds"],
        "finetuned_twin": None,
        "seeds": None,
    }
    if twins:
        record["finetuned_twin"] = {
            "runs": [twin["folder"] for twin in twins],
            "seeds": [twin["seed"] for twin in twins],
            "steps": sorted({twin["steps"] for twin in twins}),
            "test_accuracy": _summary([twin["test_accuracy"] for twin in twins]),
        }
    if len(runs) > 1:
        record["seeds"] = {
            "runs": [str(r.folder) for r in runs],
            "seeds": [r.seed for r in runs],
            "test_accuracy": _summary([r.results["test_accuracy"] for r in runs]),
            "teacher_test_accuracy": _summary([r.results["teacher_test_accuracy"] for r in runs]),
            "test_speedup": _summary([r.results["test_speedup"] for r in runs]),
        }
    return record


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def _percent_summary(summary: dict) -> str:
    if summary["n"] == 1:
        return _percent(summary["mean"])
    return f"{100 * summary['mean']:.2f} ± {100 * summary['std']:.2f}% (n={summary['n']})"


def card_lines(record: dict) -> list[str]:
    """The card's distillation section (markdown lines)."""
    settings, teacher, transfer = record["settings"], record["teacher"], record["transfer_set"]
    twin = record["finetuned_twin"]
    config = f" (config `{transfer['config']}`)" if transfer["config"] else ""
    given = record["settings_given_on_the_command_line"]
    lines = [
        "## Distillation",
        "",
        "This student was trained to match a fine-tuned teacher's soft predictions (Hinton et al. 2015; the "
        "setting of Turc et al. 2019, 'Well-Read Students Learn Better'), with hf-variants' "
        "`examples/run_distillation.py`: loss per example `alpha * T^2 * KL(teacher_T || student_T) + "
        "(1 - alpha) * CE`, the CE term only where the example has a label.",
        "",
        f"- **Teacher:** `{teacher['name_or_path']}`, test accuracy {_percent(teacher['test_accuracy'])}",
        f"- **Transfer set:** `{transfer['name']}`{config}: {transfer['samples']:,} texts, "
        f"{transfer['labelled']:,} labelled and {transfer['unlabeled']:,} unlabeled",
        f"- **Temperature** T = {settings['temperature']:g}, **alpha** = {settings['alpha']:g}; "
        f"{record['steps']:,} optimizer steps of {record['per_device_train_batch_size']} texts, learning rate "
        f"{record['learning_rate']:g}, seed {record['seed']}",
    ]
    if given:
        lines.append(f"- Settings not recorded by the run, given when this card was built: {', '.join(given)}")
    twin_cell = (
        f"{_percent_summary(twin['test_accuracy'])} (seeds {', '.join(map(str, twin['seeds']))}; "
        f"{'/'.join(map(str, twin['steps']))} steps)"
        if twin
        else "not measured"
    )
    lines += [
        "",
        f"Test accuracy on `{settings['dataset_name']}` (test split, {record['test_samples']:,} texts):",
        "",
        "| model | test accuracy |",
        "|---|---|",
        f"| this student (seed {record['seed']}) | {_percent(record['test_accuracy'])} |",
        f"| its teacher | {_percent(teacher['test_accuracy'])} |",
        f"| its fine-tuned twin (the same student trained on the labels alone) | {twin_cell} |",
        "",
        f"**Speed-up:** {record['test_speedup']:.2f}x (the teacher's {record['test_teacher_seconds']:.2f} s / the "
        f"student's {record['test_student_seconds']:.2f} s on the same {record['test_samples']:,} test texts, "
        "the same batch size and threads, each through its own tokenizer).",
    ]
    seeds = record["seeds"]
    if seeds:
        lines += [
            "",
            f"Over the {seeds['test_accuracy']['n']} seeds of this arm (mean ± sample std):",
            "",
            "| seed | student test accuracy | teacher test accuracy | speed-up |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {seed} | {_percent(student)} | {_percent(teacher_value)} | {speedup:.2f}x |"
            for seed, student, teacher_value, speedup in zip(
                seeds["seeds"],
                seeds["test_accuracy"]["values"],
                seeds["teacher_test_accuracy"]["values"],
                seeds["test_speedup"]["values"],
            )
        ]
        lines.append(
            f"| mean ± std | {_percent_summary(seeds['test_accuracy'])} | "
            f"{_percent_summary(seeds['teacher_test_accuracy'])} | "
            f"{seeds['test_speedup']['mean']:.2f} ± {seeds['test_speedup']['std']:.2f}x |"
        )
    return lines


def extra_eval_results(record: dict, dataset: DatasetInfo) -> list[EvalResult]:
    """Model-index entries beside the student's accuracy: the teacher's and the twin's accuracy, the
    speed-up and the mean over seeds, each its own metric type (they are not this model's accuracy)."""

    def result(metric_type: str, name: str, value: float) -> EvalResult:
        return EvalResult(
            task_type="text-classification",
            dataset_type=dataset.id,
            dataset_name=dataset.name,
            dataset_split=dataset.split,
            metric_type=metric_type,
            metric_name=name,
            metric_value=value,
        )

    entries = [
        result("teacher_accuracy", f"Teacher accuracy ({record['teacher']['name_or_path']})",
               record["teacher"]["test_accuracy"]),
        result("speedup", "Speed-up over the teacher (teacher seconds / student seconds)", record["test_speedup"]),
    ]  # fmt: skip
    if record["finetuned_twin"]:
        summary = record["finetuned_twin"]["test_accuracy"]
        entries.append(
            result("finetuned_twin_accuracy", f"Fine-tuned twin accuracy (mean of {summary['n']})", summary["mean"])
        )
    if record["seeds"]:
        summary = record["seeds"]["test_accuracy"]
        entries.append(result("accuracy_mean_over_seeds", f"Accuracy, mean of {summary['n']} seeds", summary["mean"]))
    return entries


def write_student_card(hub_dir: Path, record: dict, hub_namespace: str | None) -> None:
    """The project's model card (hf_variants.hub) with the student's test accuracy, then the
    distillation section and the model-index entries of :func:`extra_eval_results`."""
    transfer = record["transfer_set"]["name"]
    # No num_train_examples: the shared card would call a pretrained student "trained from randomly
    # initialised weights"; the transfer set's size is in the Distillation section.
    dataset = DatasetInfo(
        name=record["settings"]["dataset_name"],
        id=record["settings"]["dataset_name"],
        config=record["settings"].get("dataset_config_name"),
        split="test",
        train_split=f"none: the transfer set {transfer}, see Distillation",
        num_eval_examples=record["test_samples"],
    )
    training_args = json.loads((Path(record["student_run"]) / TRAINING_ARGS_FILE).read_text(encoding="utf-8"))
    card = write_model_card(
        hub_dir,
        eval_results={"test_accuracy": record["test_accuracy"]},
        training_args=training_args,
        dataset=dataset,
        objective="distillation",
        task="text-classification",
        model_name=record["model_name"],
        repo_id=f"{hub_namespace}/{record['model_name']}" if hub_namespace else None,
        hardware=_run_hardware(Path(record["student_run"])),
        limitations=[
            "A small student distilled on a CPU budget, for studying distillation across variants, not for production."
        ],
    )
    card.data.eval_results = list(card.data.eval_results or []) + extra_eval_results(record, dataset)
    # The shared summary says "trained ... on <dataset>": the student learnt from the transfer set.
    text = card.text.replace(
        f" on {dataset.name}, built with",
        f" on the transfer set `{transfer}` (scored on {dataset.name}), built with",
        1,
    )
    card.text = text.rstrip("\n") + "\n\n" + "\n".join(card_lines(record)) + "\n"
    card.save(hub_dir / CARD_FILE)


def _run_hardware(folder: Path) -> str:
    """The hardware the run recorded (its hfv_run.json), else "" (unknown: never this machine's)."""
    record = folder / "hfv_run.json"
    if record.is_file():
        return json.loads(record.read_text(encoding="utf-8")).get("hardware") or ""
    return ""


def build_student(
    run_dirs: Sequence[str | Path],
    output_dir: str | Path,
    finetuned_run_dirs: Sequence[str | Path] = (),
    model_name: str | None = None,
    hub_namespace: str | None = None,
    run_settings: dict | None = None,
) -> dict:
    """Build the Hub folder ``output_dir`` from the first of ``run_dirs`` (the others: more seeds of
    its arm) and return the record its card was written from. The folder is built beside
    ``output_dir`` and swapped in whole (a failure leaves the previous one as it was)."""
    if not run_dirs:
        raise ValueError("give at least one --run_dir (a finished run_distillation.py folder)")
    runs = [read_distillation_run(folder, run_settings) for folder in run_dirs]
    twins = [read_finetuned_run(folder) for folder in finetuned_run_dirs]
    output_dir = Path(output_dir)
    if output_dir.resolve() in {run.folder.resolve() for run in runs}:
        raise ValueError(f"--output_dir {output_dir} is a run folder: give a new folder for the Hub copy")
    config = json.loads((runs[0].folder / "config.json").read_text(encoding="utf-8"))
    id2label = config.get("id2label") or {}
    if len(id2label) != config.get("num_labels", len(id2label)) or not id2label:
        raise ValueError(f"{runs[0].folder / 'config.json'} has no id2label for its {config.get('num_labels')} labels")
    other_families = [twin["folder"] for twin in twins if twin["model_type"] != config.get("model_type")]
    if other_families:
        raise ValueError(
            f"--finetuned_run_dir {other_families}: not a twin of the {config.get('model_type')} student "
            "(another model type)"
        )
    record = student_record(runs, twins, model_name or output_dir.resolve().name)
    record["hardware_of_this_build"] = detect_hardware()
    with staged_directory(output_dir, stale=lambda name: True) as staging:
        build_hub_folder(runs[0].folder, staging)
        shutil.copy2(runs[0].folder / RESULTS_FILE, staging / RESULTS_FILE)
        write_student_card(staging, record, hub_namespace)
        write_text_atomically(staging / RECORD_FILE, json.dumps(record, indent=2) + "\n")
    return record


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m research.zoo_students", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--run_dir",
        nargs="+",
        required=True,
        help="finished run_distillation.py folders of one arm; the first one's student is packaged",
    )
    parser.add_argument(
        "--finetuned_run_dir",
        nargs="*",
        default=[],
        help="arm (b): run_glue.py folders of the same student fine-tuned on the labels (one per seed)",
    )
    parser.add_argument("--output_dir", required=True, help="the Hub-ready folder to build (replaced whole)")
    parser.add_argument("--model_name", default=None, help="the card's model name (default: the folder's name)")
    parser.add_argument("--hub_namespace", default=None, help="the card's loading snippets name <namespace>/<model>")
    parser.add_argument(
        "--run_settings",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help=f"settings an older run did not record ({', '.join(REQUIRED_SETTINGS)})",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_arguments(argv)
    record = build_student(
        args.run_dir,
        args.output_dir,
        args.finetuned_run_dir,
        args.model_name,
        args.hub_namespace,
        parse_run_settings(args.run_settings),
    )
    print(f"[zoo_students] {record['model_name']}: built {args.output_dir}", flush=True)
    return record


if __name__ == "__main__":
    main()
