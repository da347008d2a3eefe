"""The zoo's fine-tuning evaluations of the variants the harness (evaluate_pretraining.py, encoder
heads) does not fine-tune (research/zoo.py):

- **T5 text-to-text**: ``run_seq2seq.py`` on rt-polarity sentiment (``hf_variants/rt_polarity``),
  the recipe of docs/results.md's "Sequence-to-sequence" section: the "sentiment: " prefix,
  targets the words "positive" / "negative", Adafactor with per-weight scaling, lr 3e-3, 6%
  warm-up, batch 32; test accuracy = exact match of the generated word.
- **ViT (MAE) on the labels**: ``run_image_classification.py`` on the first 10% of the
  Fashion-MNIST training labels (5,500 images), docs/results.md's recipe: batch 128, lr 1e-3,
  5% warm-up, weight decay 0.05, horizontal flips; test accuracy on the 10,000 test images.

Each runs the pretrained model and its random-weight twin (same config, processor files and
schedule; the class's own initialisation under ``torch.manual_seed(seed)``, one twin per seed, as
the harness makes them) over the zoo's ``--seeds`` fine-tuning seeds, and gives one evaluation
row (``zoo_scripts.comparison_row``: mean ± std per arm, the difference, ahead / behind beyond
the seeds' spread). Each finished run's scores are kept in ``<eval_dir>/<task>/<arm>/seed<N>/
all_results.json`` (the weights are deleted), so an interrupted evaluation resumes run by run.
The epochs are zoo settings (``--t5_sentiment_epochs``, ``--vit_label_epochs``); ``--quick``
cuts the data to a few rows (a smoke test).
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig

from hf_variants.hub.atomic import write_text_atomically
from research import evaluation_support as ev
from research import zoo_scripts
from research.example_scripts import example_script

FIRST_SEED = 42  # the harness's (evaluate_pretraining.DEFAULT_FIRST_SEED): the same seeds everywhere
KEPT_FILES = ("all_results.json", "trainer_state.json")  # a finished run's scores; the weights are dropped
# The files besides the weights that make a folder loadable by the fine-tuning scripts.
PROCESSOR_PREFIXES = (
    "tokenizer",
    "special_tokens_map",
    "vocab",
    "merges",
    "spiece",
    "added_tokens",
    "preprocessor_config",
    "generation_config",
)


@dataclass(frozen=True)
class FineTuningTask:
    """One fine-tuning evaluation: its script, data, schedule and the metric read back."""

    row: str  # the evaluation row's name
    script: str  # the example script's module name
    metric: str  # what the row measures
    test_key: str  # the script's all_results.json key of the test score
    validation_key: str | None  # None: no validation pass (T5's generates 1,057 answers: 2 minutes a run)
    scale: float  # to percent
    recipe: tuple[str, ...]  # data and optimiser, also with --quick (the epochs come from the zoo's setting)
    sizes: tuple[str, ...]  # the real run's batches and lengths
    quick_sizes: tuple[str, ...]  # --quick: a few rows, small batches
    epochs_setting: str  # the zoo argument holding the number of epochs
    card: tuple[str, str, str]  # (Hub task, dataset id, dataset name) for the model-index


QUICK_ROWS = (
    "--max_train_samples",
    "32",
    "--max_eval_samples",
    "16",
    "--max_predict_samples",
    "16",
    "--per_device_train_batch_size",
    "16",
    "--per_device_eval_batch_size",
    "16",
    "--logging_steps",
    "1",
)
TASKS = {
    "span-corruption": FineTuningTask(
        row="sentiment (text-to-text)",
        script="run_seq2seq",
        metric="accuracy % (exact match of the generated label word)",
        test_key="predict_exact_match",
        validation_key=None,
        scale=1.0,
        recipe=(
            "--dataset_name",
            "hf_variants/rt_polarity",
            "--source_prefix",
            "sentiment: ",
            "--predict_with_generate",
            "--max_target_length",
            "4",
            "--optim",
            "adafactor",
            "--optim_args",
            "scale_parameter=True",
            "--learning_rate",
            "3e-3",
            "--warmup_steps",
            "0.06",
        ),
        sizes=(
            "--max_source_length",
            "64",
            "--per_device_train_batch_size",
            "32",
            "--per_device_eval_batch_size",
            "100",
            "--logging_steps",
            "25",
        ),
        quick_sizes=("--max_source_length", "32", *QUICK_ROWS),
        epochs_setting="t5_sentiment_epochs",
        card=("text2text-generation", "hf_variants/rt_polarity", "rt-polarity movie-review sentences (text-to-text)"),
    ),
    "mae": FineTuningTask(
        row="Fashion-MNIST, 10% of the labels",
        script="run_image_classification",
        metric="accuracy % (the classifier fine-tuned on 5,500 labelled training images)",
        test_key="test_accuracy",
        validation_key="eval_accuracy",
        scale=100.0,
        recipe=(
            "--dataset_name",
            "hf_variants/fashion_mnist",
            "--horizontal_flip",
            "--learning_rate",
            "1e-3",
            "--warmup_steps",
            "0.05",
            "--weight_decay",
            "0.05",
        ),
        sizes=(
            "--max_train_samples",
            "5500",
            "--per_device_train_batch_size",
            "128",
            "--per_device_eval_batch_size",
            "256",
            "--logging_steps",
            "10",
        ),
        quick_sizes=QUICK_ROWS,
        epochs_setting="vit_label_epochs",
        card=("image-classification", "hf_variants/fashion_mnist", "Fashion-MNIST (10% of the training labels)"),
    ),
}
# The zoo's default epochs (fewer than docs/results.md's runs: 3 for T5, 20 for ViT) and why.
DEFAULT_EPOCHS = {"t5_sentiment_epochs": 1, "vit_label_epochs": 5}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The zoo's settings of these evaluations."""
    parser.add_argument(
        "--t5_sentiment_epochs",
        type=float,
        default=DEFAULT_EPOCHS["t5_sentiment_epochs"],
        help="T5's text-to-text sentiment fine-tuning: epochs over the 8,454 training sentences "
        "(about 3 minutes an epoch on one thread)",
    )
    parser.add_argument(
        "--vit_label_epochs",
        type=float,
        default=DEFAULT_EPOCHS["vit_label_epochs"],
        help="ViT's fine-tuning on 10%% of the Fashion-MNIST labels: epochs over the 5,500 images",
    )


def check_arguments(args: argparse.Namespace) -> None:
    for name in DEFAULT_EPOCHS:
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name} must be a positive number of epochs, got {getattr(args, name)}")


def task_for(objective: str) -> FineTuningTask | None:
    """The fine-tuning evaluation of a pretraining objective's variants (None: none here)."""
    return TASKS.get(objective)


def make_twin(checkpoint: Path, seed: int, folder: Path) -> Path:
    """The random-weight twin of ``checkpoint`` in ``folder``: same config and processor files
    (tokenizer or image processor), every weight from the class's own initialisation after
    ``torch.manual_seed(seed)`` (the harness's twins, for models with an image processor too)."""
    config = AutoConfig.from_pretrained(checkpoint)
    torch.manual_seed(seed)
    ev.checkpoint_class(config)(config).save_pretrained(folder)
    for path in checkpoint.iterdir():
        if path.is_file() and path.name.startswith(PROCESSOR_PREFIXES):
            shutil.copy2(path, folder / path.name)
    return folder


def task_argv(task: FineTuningTask, args: argparse.Namespace, model_dir: Path, seed: int, run_dir: Path) -> list[str]:
    """The script's arguments for one (arm, seed) run."""
    argv = [
        "--model_name_or_path",
        str(model_dir),
        "--do_train",
        *(["--do_eval"] if task.validation_key else []),
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
        *task.recipe,
        *(task.quick_sizes if args.quick else task.sizes),
        "--num_train_epochs",
        str(1 if args.quick else getattr(args, task.epochs_setting)),
    ]
    if args.bf16:
        argv.append("--bf16")  # CPU autocast where there is no accelerator (the scripts default to use_cpu there)
    return argv


def finished_run(task: FineTuningTask, run_dir: Path, argv: list[str]) -> dict | None:
    """The scores of a run finished earlier in ``run_dir`` with the same arguments (None: none)."""
    path = run_dir / "zoo_run.json"
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    return record if record and record.get("argv") == argv else None


def run_task(task: FineTuningTask, args: argparse.Namespace, checkpoint: Path, eval_dir: Path) -> dict:
    """Fine-tune the pretrained model and its random twin over the zoo's seeds; returns
    ``{"row": the evaluation row, "runs": {arm: {seed: scores}}, "schedule": argv of the first run}``."""
    script = example_script(task.script)
    seeds = list(range(FIRST_SEED, FIRST_SEED + args.seeds))
    runs: dict[str, dict[str, dict]] = {"pretrained": {}, "random": {}}
    root = eval_dir / task.script
    for seed in seeds:
        for arm in runs:
            run_dir = root / arm / f"seed{seed}"
            model_dir = checkpoint if arm == "pretrained" else root / "twins" / f"seed{seed}"
            argv = task_argv(task, args, model_dir, seed, run_dir)
            record = finished_run(task, run_dir, argv)
            if record is None:
                if arm == "random":
                    make_twin(checkpoint, seed, model_dir)
                print(f"[zoo] {task.row}: {arm} seed {seed} ...", flush=True)
                results = script.main(argv)
                record = {
                    "argv": argv,
                    "test": task.scale * results[task.test_key],
                    "validation": task.scale * results[task.validation_key] if task.validation_key else None,
                    "train_loss": results.get("train_loss"),
                }
                for path in run_dir.iterdir():  # scores only: every run's weights would fill the disk
                    if path.name not in KEPT_FILES:
                        shutil.rmtree(path) if path.is_dir() else path.unlink()
                # atomic: a run killed mid-write must not leave a record the resume would misread
                write_text_atomically(run_dir / "zoo_run.json", json.dumps(record, indent=2))
                shutil.rmtree(root / "twins", ignore_errors=True)
            print(f"[zoo] {task.row}: {arm} seed {seed}: test {record['test']:.1f}", flush=True)
            runs[arm][str(seed)] = {key: record[key] for key in ("test", "validation", "train_loss")}
    arms = {arm: [run["test"] for run in by_seed.values()] for arm, by_seed in runs.items()}
    row = zoo_scripts.comparison_row(
        task.metric, "test", True, *(summary(arms[arm]) for arm in ("pretrained", "random"))
    )
    return {"row": row, "runs": runs, "schedule": task_argv(task, args, Path("MODEL"), seeds[0], Path("OUTPUT"))}


def summary(scores: list[float]) -> dict:
    """{mean, std, n} of one arm's test scores (the harness's rounding)."""
    mean, std = ev.mean_std(scores)
    return {"mean": round(mean, 2), "std": round(std, 2), "n": len(scores)}


def add_to(evaluation: dict, objective: str, args: argparse.Namespace, checkpoint: Path, eval_dir: Path) -> None:
    """Run ``objective``'s fine-tuning evaluation (nothing for an objective without one) and put its
    row into the results JSON's ``evaluation["tasks"]``, its runs into ``evaluation["fine_tuning"]``."""
    task = task_for(objective)
    if task is None:
        return
    done = run_task(task, args, checkpoint, eval_dir)
    evaluation["tasks"][task.row] = done["row"]
    evaluation["fine_tuning"] = {
        "row": task.row,
        "script": f"examples/{task.script}.py",
        "seeds": list(range(FIRST_SEED, FIRST_SEED + args.seeds)),
        "schedule": done["schedule"],
        "runs": done["runs"],
    }
