"""Compute budgets for pretraining comparisons: the FLOPs of one training step, and how many steps
a FLOP budget buys (ELECTRA vs BERT at equal compute).

FLOPs come from `torch.utils.flop_counter.FlopCounterMode`: matmuls and attention, forward and
backward; element-wise work (norms, activations, softmax outside SDPA) is not counted, on either
side of a comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


def count_flops(run: Callable[[], None]) -> int:
    """FLOPs torch executes in `run` (matmuls, SDPA, forward and backward), by FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        run()
    return counter.get_total_flops()


def masked_batch(
    batch_size: int, length: int, vocab_size: int, mask_rate: float, mask_id: int, seed: int = 0
) -> dict[str, torch.Tensor]:
    """A full-length batch with `mask_rate` of its positions masked and labelled: input_ids,
    attention_mask and labels, each (batch_size, length); labels -100 where not masked."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, vocab_size, (batch_size, length), generator=generator)
    selected = torch.rand(batch_size, length, generator=generator) < mask_rate
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    return {
        "input_ids": input_ids.masked_fill(selected, mask_id),
        "attention_mask": torch.ones_like(input_ids),
        "labels": labels,
    }


def training_step_flops(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> int:
    """FLOPs of one forward + backward of `model` on `batch` (a dict of tensors its forward takes,
    with labels). The global RNG state and the gradients are left as they were (dropout and
    ELECTRA's sampling draw from the RNG: a count must not change the training run that follows)."""
    was_training = model.training
    saved = {name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()}
    model.train()
    try:
        with torch.random.fork_rng(devices=[]):
            flops = count_flops(lambda: model(**batch).loss.backward())
    finally:
        for name, parameter in model.named_parameters():
            parameter.grad = saved[name]
        model.train(was_training)
    return flops


def steps_for_flop_budget(budget: float, flops_per_step: int) -> int:
    """How many whole steps of `flops_per_step` fit in `budget` FLOPs (at least one step, or a
    ValueError when not even one fits)."""
    if flops_per_step <= 0:
        raise ValueError(f"flops_per_step must be positive, got {flops_per_step}")
    if not budget > 0 or budget < flops_per_step:
        raise ValueError(f"a FLOP budget of {budget:.3g} does not buy one step of {flops_per_step:.3g} FLOPs")
    return math.floor(budget / flops_per_step)
