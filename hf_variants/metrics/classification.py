"""Classification and correlation shortcuts over the shipped ``evaluate`` modules (loading.py),
with GLUE's choice of metric per task. All return plain Python floats."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .loading import load_metric

ArrayLike = Sequence | np.ndarray


def _paired(predictions: ArrayLike, references: ArrayLike) -> tuple[list, list]:
    """Flat lists of equal, non-zero length (a ValueError names the mismatch)."""
    predictions, references = np.asarray(predictions).ravel().tolist(), np.asarray(references).ravel().tolist()
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if not references:
        raise ValueError("cannot score an empty set of predictions")
    return predictions, references


def _as_class_ids(predictions: list, references: list) -> tuple[list[int], list[int]]:
    """The labels as integer ids, one per distinct value over both lists (the evaluate modules
    declare integer features; tag strings such as POS tags would fail their cast). Integer labels
    pass through unchanged."""
    if all(isinstance(value, (int, np.integer)) and not isinstance(value, bool) for value in predictions + references):
        return predictions, references
    ids: dict = {}
    return [ids.setdefault(value, len(ids)) for value in predictions], [
        ids.setdefault(value, len(ids)) for value in references
    ]


def accuracy(predictions: ArrayLike, references: ArrayLike) -> float:
    """Share of exact matches; labels may be any hashable values (class ids, tag strings)."""
    predictions, references = _as_class_ids(*_paired(predictions, references))
    return load_metric("accuracy").compute(predictions=predictions, references=references)["accuracy"]


def f1(predictions: ArrayLike, references: ArrayLike, average: str = "binary", pos_label: int = 1) -> float:
    """Binary F1 of ``pos_label`` or the ``"macro"``/``"micro"`` average over classes (0 when undefined)."""
    if average not in ("binary", "macro", "micro"):
        raise ValueError(f"average must be 'binary', 'macro' or 'micro', got {average!r}")
    predictions, references = _paired(predictions, references)
    return load_metric("f1").compute(
        predictions=predictions, references=references, average=average, pos_label=pos_label
    )["f1"]


def matthews_corrcoef(predictions: ArrayLike, references: ArrayLike) -> float:
    predictions, references = _as_class_ids(*_paired(predictions, references))
    return load_metric("matthews_correlation").compute(predictions=predictions, references=references)[
        "matthews_correlation"
    ]


def pearson_and_spearman(predictions: ArrayLike, references: ArrayLike) -> dict[str, float]:
    """``{"pearson", "spearmanr"}`` (the GLUE metric's keys); NaN when a side is constant."""
    predictions, references = _paired(np.asarray(predictions, dtype=float), np.asarray(references, dtype=float))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input (the result is NaN)
        pearson = load_metric("pearsonr").compute(predictions=predictions, references=references)["pearsonr"]
        spearman = load_metric("spearmanr").compute(predictions=predictions, references=references)["spearmanr"]
    return {"pearson": pearson, "spearmanr": spearman}


GLUE_TASKS = (
    "cola",
    "sst2",
    "mrpc",
    "stsb",
    "qqp",
    "mnli",
    "mnli_matched",
    "mnli_mismatched",
    "qnli",
    "rte",
    "wnli",
    "ax",
    "hans",
)


def glue_metrics(task_name: str, predictions: ArrayLike, labels: ArrayLike) -> dict[str, float]:
    """The GLUE metric(s) of a task, keyed as in the ``evaluate`` library's ``glue`` metric:
    cola → ``matthews_correlation``; stsb → ``pearson``, ``spearmanr``; mrpc, qqp → ``accuracy``,
    ``f1``; every other task → ``accuracy``. For MNLI score matched and mismatched separately."""
    if task_name not in GLUE_TASKS:
        raise ValueError(f"unknown GLUE task {task_name!r}; known tasks: {', '.join(GLUE_TASKS)}")
    if task_name == "cola":
        return {"matthews_correlation": matthews_corrcoef(predictions, labels)}
    if task_name == "stsb":
        return pearson_and_spearman(predictions, labels)
    if task_name in ("mrpc", "qqp"):
        return {"accuracy": accuracy(predictions, labels), "f1": f1(predictions, labels)}
    return {"accuracy": accuracy(predictions, labels)}
