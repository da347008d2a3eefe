"""Classification and regression metrics (numpy), with scikit-learn/scipy semantics, and GLUE's
metric choice per task. Every function returns plain Python floats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ArrayLike = Sequence | np.ndarray


def _paired_arrays(predictions: ArrayLike, references: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    predictions, references = np.asarray(predictions), np.asarray(references)
    if predictions.ndim != 1 or references.ndim != 1:
        raise ValueError(
            f"predictions and references must be 1-D, got shapes {predictions.shape} and {references.shape}"
        )
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if len(predictions) == 0:
        raise ValueError("cannot score an empty set of predictions")
    return predictions, references


def accuracy(predictions: ArrayLike, references: ArrayLike) -> float:
    """Fraction of exact matches."""
    predictions, references = _paired_arrays(predictions, references)
    return float(np.mean(predictions == references))


def _f1_of_label(predictions: np.ndarray, references: np.ndarray, label) -> float:
    true_positives = np.sum((predictions == label) & (references == label))
    predicted, actual = np.sum(predictions == label), np.sum(references == label)
    if true_positives == 0:
        return 0.0  # also when the label never occurs (scikit-learn's zero_division=0 result)
    precision, recall = true_positives / predicted, true_positives / actual
    return float(2 * precision * recall / (precision + recall))


def f1(predictions: ArrayLike, references: ArrayLike, average: str = "binary", pos_label=1) -> float:
    """F1 score. ``average="binary"``: F1 of ``pos_label``; ``"macro"``: unweighted mean over
    every label that occurs in references or predictions (as scikit-learn)."""
    predictions, references = _paired_arrays(predictions, references)
    if average == "binary":
        return _f1_of_label(predictions, references, pos_label)
    if average == "macro":
        labels = np.union1d(predictions, references)
        return float(np.mean([_f1_of_label(predictions, references, label) for label in labels]))
    raise ValueError(f"average must be 'binary' or 'macro', got {average!r}")


def matthews_corrcoef(predictions: ArrayLike, references: ArrayLike) -> float:
    """Matthews correlation coefficient (multi-class form of Gorodkin 2004, as scikit-learn);
    0.0 when it is undefined (a constant prediction or reference)."""
    predictions, references = _paired_arrays(predictions, references)
    labels, encoded = np.unique(np.concatenate([references, predictions]), return_inverse=True)
    true_index, predicted_index = encoded[: len(references)], encoded[len(references) :]
    confusion = np.zeros((len(labels), len(labels)), dtype=np.float64)
    np.add.at(confusion, (true_index, predicted_index), 1)
    true_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    correct, total = np.trace(confusion), confusion.sum()
    covariance = correct * total - true_counts @ predicted_counts
    denominator = np.sqrt((total**2 - predicted_counts @ predicted_counts) * (total**2 - true_counts @ true_counts))
    return 0.0 if denominator == 0 else float(covariance / denominator)


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of their ranks (scipy's ``rankdata`` default)."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Boundaries of runs of equal values in sorted order.
    run_starts = np.flatnonzero(np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]]))
    run_ends = np.concatenate([run_starts[1:], [len(values)]])
    mean_rank_of_run = (run_starts + run_ends + 1) / 2.0  # mean of ranks start+1 .. end
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(mean_rank_of_run, run_ends - run_starts)
    return ranks


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x_centred, y_centred = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(x_centred**2) * np.sum(y_centred**2))
    if denominator == 0:
        return float("nan")  # undefined for a constant input, as scipy
    return float(np.clip(np.sum(x_centred * y_centred) / denominator, -1.0, 1.0))


def pearson_and_spearman(predictions: ArrayLike, references: ArrayLike) -> dict[str, float]:
    """``{"pearson": r, "spearmanr": rho}``; Spearman is Pearson on average ranks (ties share
    their mean rank). NaN when an input is constant."""
    predictions, references = _paired_arrays(predictions, references)
    predictions, references = predictions.astype(np.float64), references.astype(np.float64)
    return {
        "pearson": _pearson(predictions, references),
        "spearmanr": _pearson(_average_ranks(predictions), _average_ranks(references)),
    }


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
