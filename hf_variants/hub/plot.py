"""Training-curve plot for model cards, drawn from a Trainer's `log_history`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

# Keys Trainer logs next to eval metrics that are bookkeeping, not model quality.
NON_METRIC_SUFFIXES = ("_runtime", "_samples_per_second", "_steps_per_second", "_flos")

logger = logging.getLogger(__name__)


def _series(log_history: Sequence[Mapping], key: str) -> tuple[list[float], list[float]]:
    points = [
        (entry["step"], entry[key])
        for entry in log_history
        if key in entry and "step" in entry and isinstance(entry[key], (int, float))
    ]
    return [p[0] for p in points], [float(p[1]) for p in points]


def eval_metric_keys(log_history: Sequence[Mapping]) -> list[str]:
    """Eval metric names logged during training (`eval_accuracy`, ...), excluding loss and timing keys."""
    keys: list[str] = []
    for entry in log_history:
        for key, value in entry.items():
            if (
                key.startswith("eval_")
                and key != "eval_loss"
                and isinstance(value, (int, float))
                and not key.endswith(NON_METRIC_SUFFIXES)
                and key not in keys
            ):
                keys.append(key)
    return keys


def plot_training_curves(log_history: Sequence[Mapping], path: str | Path) -> Path | None:
    """Saves a PNG with training/eval loss (left) and eval metrics (right) against the optimizer step.

    Returns the path, or None when `log_history` holds no per-step loss to plot (a run that logged
    nothing gets no plot rather than an empty figure) or matplotlib (the `plot` extra) is missing.
    """
    train_steps, train_loss = _series(log_history, "loss")
    eval_steps, eval_loss = _series(log_history, "eval_loss")
    metric_keys = eval_metric_keys(log_history)
    if not train_loss and not eval_loss and not metric_keys:
        return None

    try:
        import matplotlib
    except ImportError:  # an optional extra: `pip install hf-variants[plot]`
        logger.warning(
            "matplotlib is not installed (pip install 'hf-variants[plot]'): the model card gets no training-curve plot"
        )
        return None

    matplotlib.use("Agg")  # files only: works without a display, in CI and on servers
    import matplotlib.pyplot as plt

    n_panels = 2 if metric_keys else 1
    fig, axes = plt.subplots(1, n_panels, figsize=(5.5 * n_panels, 3.8), squeeze=False)
    loss_ax = axes[0][0]
    if train_loss:
        loss_ax.plot(train_steps, train_loss, label="training loss", linewidth=1.2)
    if eval_loss:
        loss_ax.plot(eval_steps, eval_loss, "o-", label="eval loss", linewidth=1.2, markersize=3)
    loss_ax.set(xlabel="step", ylabel="loss", title="Loss")
    loss_ax.grid(alpha=0.3)
    loss_ax.legend()
    if metric_keys:
        metric_ax = axes[0][1]
        for key in metric_keys:
            steps, values = _series(log_history, key)
            metric_ax.plot(steps, values, "o-", label=key.removeprefix("eval_"), linewidth=1.2, markersize=3)
        metric_ax.set(xlabel="step", ylabel="value", title="Evaluation metrics")
        metric_ax.grid(alpha=0.3)
        metric_ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
