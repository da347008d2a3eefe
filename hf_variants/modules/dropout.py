"""Dropout with a cheaper random mask on CPU.

PyTorch's CPU dropout draws its mask with ``bernoulli_``, which costs about 10 ns per element on
2 threads; ``torch.rand`` plus a comparison costs about 4. BERT-family training applies dropout to
every hidden state and to every attention-probability matrix (B x heads x T x T), so on CPU the
mask draws were 12% of a bert-mini fine-tuning step (see benchmarks/RESULTS.md).

The distribution is unchanged: each element is kept independently with probability 1 - p (to
float32's 2^-24 resolution) and kept elements are scaled by 1 / (1 - p). ``keep = uniform >= p``
is also how the original TensorFlow BERT drew its masks (``tf.nn.dropout``). Only the random
stream differs from ``torch.nn.functional.dropout``, which already makes no promise of matching
another implementation's masks. On other devices (CUDA has a fused dropout kernel) and in eval
mode this is ``torch.nn.functional.dropout`` itself.

It is one of the CPU kernels of the speed plug-in (``config.padding_free``, see ``fast_path.py``):
a model built with the switch off uses torch's ``nn.Dropout`` (:func:`make_dropout`), so its plain
path is plain PyTorch. The kernel is chosen when the model is built; turning the switch off later
changes the layout of the next forward, not its dropout's random stream.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class _UniformMaskDropout(torch.autograd.Function):
    """y = x * keep / (1 - p) with keep = (uniform[0, 1) >= p); saves only the bool mask."""

    @staticmethod
    def forward(ctx, inputs: torch.Tensor, p: float) -> torch.Tensor:
        keep = torch.rand(inputs.shape, dtype=torch.float32, device=inputs.device) >= p
        ctx.scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(keep)
        return (inputs * keep).mul_(ctx.scale)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (keep,) = ctx.saved_tensors
        return (grad_output * keep).mul_(ctx.scale), None


def dropout(inputs: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Drop-in for ``F.dropout(inputs, p, training)`` (not in place). Any shape."""
    if not training or p == 0.0:
        return inputs
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if p == 1.0 or inputs.device.type != "cpu":
        return F.dropout(inputs, p, training)
    return _UniformMaskDropout.apply(inputs, p)


class Dropout(nn.Dropout):
    """``nn.Dropout`` (same attribute ``p``, no state) using :func:`dropout`."""

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if self.inplace:
            return super().forward(inputs)
        return dropout(inputs, self.p, self.training)


def make_dropout(p: float, cpu_kernel: bool = True) -> nn.Dropout:
    """A model's dropout module: :class:`Dropout` (this file's CPU kernel) with ``cpu_kernel`` (the
    speed plug-in's switch, ``config.padding_free``), else torch's ``nn.Dropout``. Same distribution
    and the same attribute ``p``; only the random stream differs."""
    return Dropout(p) if cpu_kernel else nn.Dropout(p)
