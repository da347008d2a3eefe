"""Writing a run's model card from what the run saved, and rebuilding it later (`hf-variants card`).

Example scripts call `write_model_card(output_dir, ...)` at the end of training with what they have;
every piece they leave out is read from the files Trainer leaves in `output_dir`
(trainer_state.json, eval_results.json / all_results.json, config.json). The call also saves
`hfv_run.json` (card inputs that Trainer does not save: dataset, objective, hardware, ...) and
`training_args.json` (Trainer's own training_args.bin is a pickle, which we never read), so that
`rebuild_model_card(output_dir)` reproduces the card from the directory alone.
"""

from __future__ import annotations

import json
import logging
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard

from .atomic import staged_directory
from .card import DatasetInfo, RunSummary, build_model_card
from .plot import plot_training_curves

logger = logging.getLogger(__name__)

RUN_RECORD_FILE = "hfv_run.json"
TRAINING_ARGS_FILE = "training_args.json"
PLOT_FILE = "training_curves.png"
CARD_FILE = "README.md"


def _read_json(path: Path) -> Any | None:
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _write_json(path: Path, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")


def detect_hardware() -> str:
    """A one-line description of the machine training runs on (GPU name, else CPU model and cores)."""
    import torch

    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        return f"{count} x {torch.cuda.get_device_name(0)}"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"CPU: {cpu} ({os.cpu_count()} cores visible, {torch.get_num_threads()} torch threads)"


def count_parameters(output_dir: Path) -> int | None:
    """Parameters stored in the directory's safetensors files (headers only: nothing is loaded)."""
    from safetensors import safe_open

    files = sorted(output_dir.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for path in files:
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                numel = 1
                for dim in f.get_slice(name).get_shape():
                    numel *= dim
                total += numel
    return total


def training_args_dict(training_args: Any) -> dict:
    """TrainingArguments (or a mapping) as a JSON-safe dict; Trainer masks tokens in `to_json_string`."""
    if isinstance(training_args, Mapping):
        return json.loads(json.dumps(dict(training_args), default=str))
    if hasattr(training_args, "to_json_string"):
        return json.loads(training_args.to_json_string())
    raise ValueError(f"training_args must be TrainingArguments or a mapping, got {type(training_args).__name__}")


def _log_history_from(trainer_state: Any) -> tuple[list[dict], dict]:
    """(log_history, state dict) from a TrainerState, a trainer_state.json dict, or None."""
    if trainer_state is None:
        return [], {}
    state = trainer_state if isinstance(trainer_state, Mapping) else vars(trainer_state)
    history = state.get("log_history")
    if not isinstance(history, list):
        raise ValueError("trainer_state has no `log_history` list")
    return history, dict(state)


def _eval_results_from_files(output_dir: Path) -> dict | None:
    results = _read_json(output_dir / "eval_results.json")
    if results is None:
        all_results = _read_json(output_dir / "all_results.json") or {}
        results = {k: v for k, v in all_results.items() if k.startswith("eval_")} or None
    return results


def summarize_run(
    log_history: Sequence[Mapping], state: Mapping, training_args: Mapping, objective: str | None, hardware: str | None
) -> RunSummary:
    """Steps, epochs, wall time and last training loss from a Trainer log history."""
    steps = [entry["step"] for entry in log_history if "step" in entry]
    losses = [entry["loss"] for entry in log_history if "loss" in entry]
    runtimes = [entry["train_runtime"] for entry in log_history if "train_runtime" in entry]
    epochs = [entry["epoch"] for entry in log_history if "epoch" in entry]
    return RunSummary(
        objective=objective,
        hyperparameters=dict(training_args),
        global_step=state.get("global_step") or (max(steps) if steps else None),
        epochs=state.get("epoch") or (epochs[-1] if epochs else None),
        train_runtime_s=runtimes[-1] if runtimes else None,
        final_train_loss=losses[-1] if losses else None,
        hardware=hardware,
    )


def write_model_card(
    output_dir: str | os.PathLike,
    *,
    trainer_state: Any = None,
    log_history: Sequence[Mapping] | None = None,
    eval_results: Mapping[str, Any] | None = None,
    training_args: Any = None,
    dataset: DatasetInfo | Mapping | None = None,
    objective: str | None = None,
    task: str | None = None,
    base_model: str | None = None,
    model_name: str | None = None,
    repo_id: str | None = None,
    hardware: str | None = None,
    license: str = "apache-2.0",
    language: str | list[str] | None = "en",
    limitations: Sequence[str] = (),
    destination: str | os.PathLike | None = None,
) -> ModelCard:
    """Writes README.md (card), training_curves.png, hfv_run.json and training_args.json into `output_dir`.

    Args:
        output_dir: a saved model directory (must hold config.json), usually `training_args.output_dir`.
        trainer_state: `trainer.state` (or a trainer_state.json dict); default: output_dir/trainer_state.json.
        log_history: alternatively, the list of logged dicts itself (custom training loops).
        eval_results: final metrics (`trainer.evaluate()`); default: eval_results.json / all_results.json.
        training_args: `trainer.args` or a dict; default: output_dir/training_args.json.
        dataset: `DatasetInfo` (or its dict) of the train/eval data; needed to report metrics.
        objective: the training objective ("mlm", "span-masking+sbo", "text-classification", ...).
        task, base_model, model_name, repo_id, license, language, limitations: see `build_model_card`.
        hardware: what trained it; default: detected from this machine.
        destination: where the written files go (default `output_dir`); inputs are always read
            from `output_dir`. `push_model_dir` uses it to build a card without touching the run.
    Returns:
        The `ModelCard` written to <destination>/README.md.
    """
    output_dir = Path(output_dir)
    destination = Path(destination) if destination is not None else output_dir
    config = _read_json(output_dir / "config.json")
    if config is None:
        raise ValueError(f"{output_dir} has no config.json: save the model there before writing its card")
    if log_history is not None:
        history, state = list(log_history), {}
    else:
        history, state = _log_history_from(trainer_state or _read_json(output_dir / "trainer_state.json"))
    if eval_results is None:
        eval_results = _eval_results_from_files(output_dir)
    # The card's files are written into a staging folder and moved into place together: a
    # failure halfway leaves the previous card (or none) rather than a mix.
    with staged_directory(destination) as staging:
        if training_args is not None:
            args = training_args_dict(training_args)
            _write_json(staging / TRAINING_ARGS_FILE, args)
        else:
            args = _read_json(output_dir / TRAINING_ARGS_FILE) or {}
        if isinstance(dataset, Mapping):
            dataset = DatasetInfo.from_dict(dataset)
        hardware = detect_hardware() if hardware is None else hardware  # "" = unknown, not reported
        model_name = model_name or output_dir.resolve().name

        record = {
            "dataset": dataset.to_dict() if dataset else None,
            "objective": objective,
            "task": task,
            "base_model": base_model,
            "model_name": model_name,
            "repo_id": repo_id,
            "hardware": hardware,
            "license": license,
            "language": language,
            "limitations": list(limitations),
            "eval_results": dict(eval_results) if eval_results else None,
        }
        if not (output_dir / "trainer_state.json").is_file():
            record["log_history"] = history  # nothing else on disk keeps it
        _write_json(staging / RUN_RECORD_FILE, record)

        plot = plot_training_curves(history, staging / PLOT_FILE)
        card = build_model_card(
            config,
            model_name=model_name,
            eval_results=eval_results,
            dataset=dataset,
            run=summarize_run(history, state, args, objective, hardware or None),
            task=task,
            base_model=base_model,
            repo_id=repo_id,
            num_parameters=count_parameters(output_dir),
            plot_filename=PLOT_FILE if plot else None,
            license=license,
            language=language,
            limitations=limitations,
        )
        card.save(staging / CARD_FILE)
    logger.info("Wrote model card %s", destination / CARD_FILE)
    return card


def rebuild_model_card(
    output_dir: str | os.PathLike, destination: str | os.PathLike | None = None, **overrides: Any
) -> ModelCard:
    """Rebuilds README.md and the plot from what a run saved in `output_dir` (see module docstring);
    written into `destination` (default: `output_dir`). `overrides` replace saved card inputs
    (e.g. `repo_id` when pushing)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        raise ValueError(f"{output_dir} is not a directory")
    record = _read_json(output_dir / RUN_RECORD_FILE) or {}
    saved_history = record.pop("log_history", None)
    if record.get("limitations") is None:
        record["limitations"] = ()
    kwargs = {k: v for k, v in record.items() if v is not None}
    kwargs.setdefault("hardware", "")  # unknown: never report the rebuilding machine as the training one
    kwargs.update(overrides)
    return write_model_card(output_dir, log_history=saved_history, destination=destination, **kwargs)
