"""Relative multi-head attention of Transformer-XL (Dai et al. 2019, sec. 3.3) and XLNet.

The score of query i against key j (memory positions first, then the segment) is

    A_ij = (q_i + u)·k_j  +  (q_i + v)·W_r R_{i-j}  [+ (q_i + b)·s_ij]

with ``u = r_w_bias`` (content bias), ``v = r_r_bias`` (position bias), R the sinusoids of the
relative distance, and XLNet's optional relative segment term (``b = r_s_bias``, s_ij one of two
learned ``seg_embed`` vectors: same segment or not). The content term runs through the shared
kernel (:func:`~hf_variants.modules.attention.fast_attention_function`: eager or SDPA) with the
query shifted by ``u``; the position and segment terms ride along as its additive bias, computed
once per query against every relative distance and aligned to (i, j) by the relative shift.

Projections are per-head (H, heads, D) tensors without biases (``q k v o r``), the layout of
transformers' XLNet checkpoints (loadable by renaming alone). Layers call the module itself
(:meth:`RelativeAttention.forward`), never its helpers: every read of its parameters happens
inside its own forward, where accelerate's offload hooks load them (``device_map="auto"`` with
CPU/disk offload).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers.cache_utils import Cache

from .attention import fast_attention_function


def relative_shift(scores: torch.Tensor, key_length: int) -> torch.Tensor:
    """(B, h, T, R) scores against R relative encodings ordered from distance R - T down (the
    last T - 1 of them negative for bidirectional attention) -> (B, h, T, S = key_length), entry
    (i, j) the score against distance (S - T + i) - j. Row i moves left by T - i: view the matrix
    with its two last axes swapped, drop the first row, view it back (Transformer-XL's trick,
    no gather)."""
    batch, heads, length, relative = scores.shape
    shifted = scores.reshape(batch, heads, relative, length)[:, :, 1:]
    return shifted.reshape(batch, heads, length, relative - 1)[..., :key_length]


def sinusoids(distances: torch.Tensor, width: int) -> torch.Tensor:
    """(R,) relative distances -> (R, width) encodings [sin(d w_k) | cos(d w_k)], w_k = 10000^(-2k/width)."""
    inverse_frequency = 1.0 / torch.pow(10000, torch.arange(0, width, 2, device=distances.device).float() / width)
    angles = distances[:, None] * inverse_frequency
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def relative_encodings(
    length: int,
    key_length: int,
    width: int,
    *,
    bidirectional: bool,
    clamp_len: int = -1,
    batch: int = 1,
    both_directions: bool = False,
    device: torch.device | None = None,
) -> torch.Tensor:
    """The relative position encodings of Transformer-XL and XLNet (both call this one function).

    Sinusoids of the distances ``key_length`` down to -length + 1 (``bidirectional``: R =
    key_length + length) or 0 (causal, the future is masked: R = key_length + 1), clamped to
    [-clamp_len, clamp_len] when ``clamp_len`` > 0: (1, R, width); with ``both_directions``
    (XLNet's ``bi_data``), (batch, R, width) whose second half reads the distances negated (the
    sequence backwards). ``length`` is the number of queries T, ``key_length`` S = memory + T;
    :func:`relative_shift` aligns scores against these R encodings to (T, S). ValueError: an odd
    ``batch`` with ``both_directions``."""
    end = -length if bidirectional else -1
    forward = torch.arange(key_length, end, -1, device=device).float()
    directions = [forward, -forward] if both_directions else [forward]
    if clamp_len > 0:
        directions = [d.clamp(-clamp_len, clamp_len) for d in directions]
    encodings = [sinusoids(d, width)[None] for d in directions]
    if not both_directions:
        return encodings[0]
    if batch % 2:
        raise ValueError(f"bi_data splits the batch into a forward and a backward half: batch size {batch} is odd")
    return torch.cat([e.expand(batch // 2, -1, -1) for e in encodings], dim=0)


class KeyValuePrefix:
    """A learned memory in key/value form: P positions in front of every layer's memory (prefix
    tuning on the memory models; Li & Liang 2021 over Transformer-XL's recurrence).

    peft's ``PrefixTuningConfig`` hands the model ``past_key_values``, a transformers ``Cache``
    holding, per layer, P keys and P values (B, heads, P, D). A memory position contributes to
    relative attention only through its key and value (the position term reads the query and the
    distance, not the memory's content), so a key/value prefix is exactly a memory of P virtual
    positions the model never computed: they sit before the memory (the oldest positions, at the
    largest distances), are always visible unless ``attention_mask`` (covering P + T, as peft
    builds it) hides them, count as segment 0 (as memory does in XLNet), and never enter the
    ``mems`` returned for the next segment.
    """

    def __init__(self, past_key_values: Cache, num_layers: int, batch: int, num_heads: int, head_dim: int) -> None:
        if not isinstance(past_key_values, Cache):
            raise ValueError(
                f"past_key_values must be a transformers Cache holding a key/value prefix (prefix tuning), "
                f"got {type(past_key_values).__name__}; earlier segments go in `mems`"
            )
        if len(past_key_values.layers) != num_layers:
            raise ValueError(f"the key/value prefix has {len(past_key_values.layers)} layers, the model {num_layers}")
        self.per_layer = [(layer.keys, layer.values) for layer in past_key_values.layers]
        if any(keys is None for keys, _ in self.per_layer):
            raise ValueError("the key/value prefix has layers holding no keys (an empty Cache)")
        expected = (batch, num_heads, self.per_layer[0][0].shape[2], head_dim)
        for keys, values in self.per_layer:
            if tuple(keys.shape) != expected or tuple(values.shape) != expected:
                raise ValueError(
                    f"prefix keys/values must be (batch, heads, P, head_dim) = {expected}, got {tuple(keys.shape)} and "
                    f"{tuple(values.shape)} (with peft, set PrefixTuningConfig(token_dim=heads * head_dim) when "
                    "head_dim * heads != hidden_size)"
                )
        self.length = expected[2]

    def layer(self, depth: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.per_layer[depth]


class RelativeAttention(nn.Module):
    """Relative multi-head attention (see the module docstring).

    Parameters: ``q``, ``k``, ``v``, ``o``, ``r`` (H, heads, D); ``r_w_bias``, ``r_r_bias``
    (heads, D); with ``segment_terms`` also ``r_s_bias`` (heads, D) and ``seg_embed`` (2, heads, D).
    """

    adapter_role = "attention"  # what peft adapts by default (hf_variants.integrations.peft_targets)

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float = 0.0,
        head_dim: int | None = None,
        segment_terms: bool = True,
    ) -> None:
        super().__init__()
        if head_dim is None:
            if hidden_size % num_heads != 0:
                raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_attention_heads ({num_heads})")
            head_dim = hidden_size // num_heads
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.dropout = dropout
        self.scale = 1.0 / math.sqrt(head_dim)
        self.segment_terms = segment_terms
        shape = (hidden_size, num_heads, head_dim)
        for name in ("q", "k", "v", "o", "r"):
            setattr(self, name, nn.Parameter(torch.empty(shape)))
        for name in ("r_w_bias", "r_r_bias") + (("r_s_bias",) if segment_terms else ()):
            setattr(self, name, nn.Parameter(torch.empty(num_heads, head_dim)))
        if segment_terms:
            self.seg_embed = nn.Parameter(torch.empty(2, num_heads, head_dim))

    def parameters_to_initialise(self) -> list[nn.Parameter]:
        """Every tensor of this module (all drawn from N(0, initializer_range) in XLNet and Transformer-XL)."""
        return list(self.parameters(recurse=False))

    @staticmethod
    def _heads(states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """(B, T, H) @ (H, heads, D) -> (B, heads, T, D)."""
        return torch.einsum("bth,hnd->bntd", states, weight)

    def keys_values(self, content: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S, H) memory + segment states -> keys and values (B, heads, S, D)."""
        return self._heads(content, self.k), self._heads(content, self.v)

    def position_keys(self, encodings: torch.Tensor) -> torch.Tensor:
        """(1 or B, R, H) relative encodings -> (1 or B, heads, R, D)."""
        return self._heads(encodings, self.r)

    def project_queries(self, states: torch.Tensor) -> torch.Tensor:
        return self._heads(states, self.q)

    def output(self, context: torch.Tensor) -> torch.Tensor:
        """(B, heads, T, D) -> (B, T, H) through ``o``."""
        return torch.einsum("bntd,hnd->bth", context, self.o)

    def relative_bias(
        self, query: torch.Tensor, position_keys: torch.Tensor, different_segment: torch.Tensor | None, key_length: int
    ) -> torch.Tensor:
        """The position (and segment) terms, scaled: (B, heads, T, S), added to the content scores.
        ``different_segment`` (B, 1, T, S): 1.0 where query and key lie in different segments."""
        position = torch.matmul(query + self.r_r_bias[:, None], position_keys.transpose(-1, -2))
        bias = relative_shift(position, key_length)
        if different_segment is not None:
            if not self.segment_terms:
                raise ValueError("this attention has no relative segment terms: pass no segment ids")
            segment = torch.einsum("bntd,snd->bnts", query + self.r_s_bias[:, None], self.seg_embed)
            same, different = segment[..., :1], segment[..., 1:]
            bias = bias + same * (1.0 - different_segment) + different * different_segment
        return bias * self.scale

    def attend_relative(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        position_keys: torch.Tensor,
        different_segment: torch.Tensor | None,
        mask_bias: torch.Tensor | None,
        attn_implementation: str,
        output_attentions: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """query (B, heads, T, D) against key/value (B, heads, S, D) -> context (B, heads, T, D), probs."""
        bias = self.relative_bias(query, position_keys, different_segment, key.shape[2])
        if mask_bias is not None:
            bias = mask_bias + bias
        dropout = self.dropout if self.training else 0.0
        backend = "eager" if output_attentions else attn_implementation
        return fast_attention_function(
            query + self.r_w_bias[:, None], key, value, bias, False, dropout, self.scale, backend
        )

    def memory_keys_values(
        self,
        content: torch.Tensor,
        memory: torch.Tensor | None,
        key_value_prefix: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values (B, heads, P + M + T, D) of [prefix; ``memory`` (B, M, H); ``content``
        (B, T, H)]: the ``key_value_prefix`` (B, heads, P, D) each comes as it is, first."""
        keys_from = content if memory is None else torch.cat([memory.to(content.dtype), content], dim=1)
        key, value = self.keys_values(keys_from)
        if key_value_prefix is not None:
            prefix_key, prefix_value = key_value_prefix
            key = torch.cat([prefix_key.to(key.dtype), key], dim=2)
            value = torch.cat([prefix_value.to(value.dtype), value], dim=2)
        return key, value

    def forward(
        self,
        content: torch.Tensor,
        memory: torch.Tensor | None,
        encodings: torch.Tensor,
        different_segment: torch.Tensor | None,
        mask_bias: torch.Tensor | None,
        attn_implementation: str,
        output_attentions: bool,
        key_value_prefix: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``content`` (B, T, H) attends to [``memory`` (B, M, H); content] under ``mask_bias``
        (B or 1, 1, T, M + T); ``encodings`` (1 or B, R, H) are the relative sinusoids,
        ``different_segment`` (B, 1, T, M + T) XLNet's segment indicator or None. Returns the
        output (B, T, H) through ``o`` and the attention map (B, heads, T, M + T) or None.
        ``key_value_prefix``: keys and values (B, heads, P, D) of P positions before the memory
        (:class:`KeyValuePrefix`); the biases and encodings then cover P + M + T keys. XLNet's
        query stream attends to the same keys in its own module (``TwoStreamAttention``)."""
        key, value = self.memory_keys_values(content, memory, key_value_prefix)
        context, probs = self.attend_relative(
            self.project_queries(content),
            key,
            value,
            self.position_keys(encodings),
            different_segment,
            mask_bias,
            attn_implementation,
            output_attentions,
        )
        return self.output(context), probs
