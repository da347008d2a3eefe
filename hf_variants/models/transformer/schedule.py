"""The paper's learning-rate schedule ("Noam", sec. 5.3) and Adam settings, for transformers' Trainer.

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

rises linearly for ``warmup_steps`` (4,000) and then decays with the inverse square root of the
step. That is transformers' ``lr_scheduler_type="inverse_sqrt"`` (linear warm-up, then
sqrt(warmup / step)) with a peak learning rate of d_model^-0.5 * warmup_steps^-0.5, so Trainer
runs it as is; Adam uses beta1 0.9, beta2 0.98, epsilon 1e-9.
"""

from __future__ import annotations

from transformers import TrainingArguments

ADAM_BETAS = (0.9, 0.98)
ADAM_EPSILON = 1e-9


def noam_learning_rate(step: int, d_model: int, warmup_steps: int = 4000) -> float:
    """The paper's formula at ``step`` (>= 1)."""
    if step < 1 or d_model < 1 or warmup_steps < 1:
        raise ValueError(f"step, d_model and warmup_steps must be >= 1, got {step}, {d_model}, {warmup_steps}")
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def noam_peak_learning_rate(d_model: int, warmup_steps: int = 4000) -> float:
    """The schedule's maximum, reached at ``warmup_steps``: d_model^-0.5 * warmup_steps^-0.5."""
    return noam_learning_rate(warmup_steps, d_model, warmup_steps)


def noam_training_arguments(output_dir: str, d_model: int, warmup_steps: int = 4000, **kwargs) -> TrainingArguments:
    """TrainingArguments that make Trainer use the paper's optimiser and schedule: AdamW without
    weight decay (= Adam), betas (0.9, 0.98), eps 1e-9, the inverse square-root schedule with
    ``warmup_steps`` of linear warm-up peaking at :func:`noam_peak_learning_rate`.

    transformers counts scheduler steps from 0, the paper from 1: Trainer's learning rate during
    optimizer step k (k = 0, 1, ...) is the formula's at step k, 0 at the first step.
    """
    for name in ("learning_rate", "lr_scheduler_type", "warmup_steps", "adam_beta1", "adam_beta2", "adam_epsilon"):
        if name in kwargs:
            raise ValueError(f"{name} is set by the Noam schedule; pass the other TrainingArguments only")
    return TrainingArguments(
        output_dir=output_dir,
        learning_rate=noam_peak_learning_rate(d_model, warmup_steps),
        lr_scheduler_type="inverse_sqrt",
        warmup_steps=warmup_steps,
        adam_beta1=ADAM_BETAS[0],
        adam_beta2=ADAM_BETAS[1],
        adam_epsilon=ADAM_EPSILON,
        **kwargs,
    )


__all__ = ["noam_learning_rate", "noam_peak_learning_rate", "noam_training_arguments", "ADAM_BETAS", "ADAM_EPSILON"]
