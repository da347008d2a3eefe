"""Position-wise feed-forward block: up-projection, activation (optionally gated), down-projection."""

from __future__ import annotations

import torch
from torch import nn
from transformers.activations import ACT2FN

from .dropout import Dropout


class FeedForward(nn.Module):
    """FFN(x) = W_down act(W_up x), or W_down (act(W_gate x) * W_up x) when ``gated`` (GLU variants).

    Works on any leading shape: (B, T, H) or the padding-free (total_tokens, H).

    Args:
        hidden_size: H.
        intermediate_size: inner width (4H in BERT).
        activation: a name in transformers' ACT2FN ("gelu" is BERT's exact erf GELU).
        gated: GLU-style gating (T5 v1.1 "gated-gelu").
        inner_dropout: dropout between activation and down-projection (T5 has one; BERT does not).
        bias: whether the projections have biases.
    """

    adapter_role = "feed_forward"  # what peft adapts by default (hf_variants.integrations.peft_targets)

    def __init__(
        self,
        hidden_size: int,
        intermediate_size: int,
        activation: str = "gelu",
        gated: bool = False,
        inner_dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if activation not in ACT2FN:
            raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACT2FN)}")
        self.up = nn.Linear(hidden_size, intermediate_size, bias=bias)
        self.gate = nn.Linear(hidden_size, intermediate_size, bias=bias) if gated else None
        self.activation = ACT2FN[activation]
        self.inner_dropout = Dropout(inner_dropout)
        self.down = nn.Linear(intermediate_size, hidden_size, bias=bias)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """(..., H) -> (..., H)."""
        if self.gate is None:
            inner = self.activation(self.up(hidden_states))
        else:
            inner = self.activation(self.gate(hidden_states)) * self.up(hidden_states)
        return self.down(self.inner_dropout(inner))
