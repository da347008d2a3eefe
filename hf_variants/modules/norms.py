"""Normalisation layers: LayerNorm (BERT, GPT, ViT, ...) and RMSNorm (T5's "T5LayerNorm").

Variants name theirs with ``norm_type`` in the config; :func:`build_norm` is the one place that
turns the name into a module, so a layer spec never hard-codes ``nn.LayerNorm``.
"""

from __future__ import annotations

import torch
from torch import nn

NORM_TYPES = ("layer_norm", "rms_norm")


class RMSNorm(nn.Module):
    """Root-mean-square norm without mean subtraction or bias (Zhang & Sennrich 2019; T5).

    y = x / sqrt(mean(x^2) + eps) * weight, with the statistic computed in float32 (as T5 does, so
    half-precision inputs do not overflow); (..., H) -> (..., H) in the input's dtype.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        normalised = hidden_states * torch.rsqrt(variance + self.eps)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            normalised = normalised.to(self.weight.dtype)
        return self.weight * normalised

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def build_norm(norm_type: str, hidden_size: int, eps: float) -> nn.Module:
    """``"layer_norm"`` -> ``nn.LayerNorm`` (weight and bias); ``"rms_norm"`` -> :class:`RMSNorm`."""
    if norm_type == "layer_norm":
        return nn.LayerNorm(hidden_size, eps=eps)
    if norm_type == "rms_norm":
        return RMSNorm(hidden_size, eps=eps)
    raise ValueError(f"norm_type must be one of {NORM_TYPES}, got {norm_type!r}")
