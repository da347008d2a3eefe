"""Attention blocks shared by the variants, with plain signatures.

- :func:`attention_function`: scaled dot-product attention over (B, heads, T, D) queries and
  (B, heads, S, D) keys/values, with an additive bias and causal masking (bottom-right aligned
  when cached or prefix keys come first); backends ``eager`` (explicit softmax, can return the
  probabilities) and ``sdpa`` (``torch.nn.functional.scaled_dot_product_attention``).
- :func:`fast_attention_function`: the same with the speed plug-in's CPU dropout kernel.
- :func:`packed_self_attention`: the padding-free (bucketed) self-attention of the speed plug-in.
- :class:`FusedQKVProjection`: the fused query/key/value input projection.

Each variant's attention module (``BertSelfAttention``, ``GPTAttention``, ``T5Attention``, ...) is written in
its own modeling file from these; Transformer-XL's relative attention is in ``relative_attention.py``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .dropout import dropout as apply_dropout
from .masks import with_causal_bias
from .padding import UnpaddedBatch


def attention_function(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_bias: torch.Tensor | None = None,
    is_causal: bool = False,
    dropout: float = 0.0,
    scale: float | None = None,
    backend: str = "sdpa",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Scaled dot-product attention: query (B, h, T, D), key/value (B, h, S, D), an additive
    ``attention_bias`` broadcastable to (B, h, T, S) -> (context (B, h, T, D), probabilities
    (B, h, T, S) with ``backend="eager"``, else None).

    ``dropout``: on the probabilities (pass 0.0 in eval mode); torch's own (SDPA's ``dropout_p``
    or ``F.dropout``). ``scale``: default 1/sqrt(D). ``is_causal``: query i sees keys 0..S-T+i
    (cached or prefix keys come first, bottom-right alignment). ``backend``: "eager" (explicit
    softmax) or "sdpa" (torch's fused kernel). :func:`fast_attention_function` is the same with the
    speed plug-in's CPU dropout kernel.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    # One query is the last position (bottom-right alignment): it sees every key, so a
    # generation step needs no causal mask.
    is_causal = is_causal and query.shape[2] > 1
    if backend != "sdpa":
        return _softmax_attention(query, key, value, attention_bias, is_causal, scale, dropout, F.dropout)
    query_length, key_length = query.shape[2], key.shape[2]
    # SDPA's own causal flag aligns the mask top-left: right only for square score matrices.
    use_causal_flag = is_causal and attention_bias is None and query_length == key_length
    bias = attention_bias
    if is_causal and not use_causal_flag:
        bias = with_causal_bias(bias, query_length, key_length, query.dtype, query.device)
    context = F.scaled_dot_product_attention(
        query, key, value, attn_mask=bias, dropout_p=dropout, is_causal=use_causal_flag, scale=scale
    )
    return context, None


def fast_attention_function(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_bias: torch.Tensor | None = None,
    is_causal: bool = False,
    dropout: float = 0.0,
    scale: float | None = None,
    backend: str = "sdpa",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`attention_function` with the speed plug-in's CPU kernel (``config.padding_free``):
    in training on a CPU, the explicit softmax with the uniform-mask dropout of ``dropout.py``.
    SDPA on CPU has no fused dropout: with dropout it runs the same explicit softmax but draws its
    mask with the slower ``bernoulli_``. Same arguments, same distribution; elsewhere identical."""
    if dropout == 0.0 or query.device.type != "cpu":
        return attention_function(query, key, value, attention_bias, is_causal, dropout, scale, backend)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    is_causal = is_causal and query.shape[2] > 1
    return _softmax_attention(query, key, value, attention_bias, is_causal, scale, dropout, apply_dropout)


def _softmax_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_bias: torch.Tensor | None,
    is_causal: bool,
    scale: float,
    dropout: float,
    dropout_function,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The eager backend: softmax(q k^T * scale + bias) v, with ``dropout_function(probs, p,
    training)`` on the probabilities. Shapes as :func:`attention_function`; returns (context, probs)."""
    scores = torch.matmul(query, key.transpose(-1, -2)) * scale
    bias = attention_bias
    if is_causal:
        bias = with_causal_bias(bias, query.shape[2], key.shape[2], scores.dtype, scores.device)
    if bias is not None:
        scores = scores + bias
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    context = torch.matmul(dropout_function(probs, dropout, dropout > 0.0), value)
    return context, probs


def packed_self_attention(
    qkv: torch.Tensor,
    unpadded: UnpaddedBatch,
    num_heads: int,
    scale: float,
    dropout: float = 0.0,
    is_causal: bool = False,
    backend: str = "sdpa",
) -> torch.Tensor:
    """Padding-free self-attention (the CPU fast path): fused projections ``qkv`` (total_tokens,
    3 * inner) of a packed batch -> context (total_tokens, inner), before the output projection.

    Each length bucket of the batch is re-padded only to its own longest row (see padding.py), so
    padding costs no attention FLOPs beyond the bucket's spread of lengths; rows of one length need
    no mask at all. ``dropout`` 0.0 in eval mode.
    """
    inner = qkv.shape[-1] // 3
    head_dim = inner // num_heads
    contexts = []
    for bucket, bucket_qkv in zip(unpadded.attention_buckets, unpadded.gather_buckets(qkv)):
        query, key, value = (
            x.view(bucket.num_rows, bucket.length, num_heads, head_dim).transpose(1, 2)
            for x in bucket_qkv.chunk(3, dim=-1)
        )
        context, _ = fast_attention_function(
            query, key, value, bucket.attention_bias(query.dtype), is_causal, dropout, scale, backend
        )
        contexts.append(context.transpose(1, 2).reshape(bucket.num_rows, bucket.length, inner))
    return unpadded.scatter_buckets(contexts)


class FusedQKVProjection(nn.Linear):
    """The fused query/key/value projection: an ``nn.Linear`` (H -> 3 * inner; its state-dict keys
    are ``weight`` and ``bias``) whose forward can also project queries and keys/values from
    different inputs with the matching rows of the weight (views, no copy).

    The split projection lives in ``forward`` (not in the attention module reading ``.weight``) so
    that accelerate's offload hooks, which load a module's weights around its forward, cover it
    (``device_map="auto"`` with CPU or disk offload).
    """

    def forward(
        self, hidden_states: torch.Tensor, key_value_input: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """(..., H) -> (..., 3 * inner); with ``key_value_input`` (B, S, H): (queries (B, M, inner)
        from ``hidden_states`` (B, M, H), keys and values (B, S, 2 * inner) from ``key_value_input``)."""
        if key_value_input is None:
            return super().forward(hidden_states)
        inner = self.out_features // 3
        bias = self.bias
        query = F.linear(hidden_states, self.weight[:inner], None if bias is None else bias[:inner])
        key_value = F.linear(key_value_input, self.weight[inner:], None if bias is None else bias[inner:])
        return query, key_value
