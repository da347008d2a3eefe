"""Attention blocks shared by the variants, with plain signatures.

- :func:`attention_function`: scaled dot-product attention over (B, heads, T, D) queries and
  (B, heads, S, D) keys/values, with an additive bias and causal masking (bottom-right aligned
  when cached or prefix keys come first); backends ``eager`` (explicit softmax, can return the
  probabilities) and ``sdpa`` (``torch.nn.functional.scaled_dot_product_attention``).
- :func:`fast_attention_function`: the same with the speed plug-in's CPU dropout kernel.
- :func:`packed_self_attention`: the padding-free (bucketed) self-attention of the speed plug-in.
- :class:`FusedQKVProjection`: the fused query/key/value input projection.
- :class:`CrossAttention` and :func:`encoder_decoder_cache`: encoder-decoder attention whose keys
  and values are projected once per source and kept in the cache's cross half (T5, the Transformer).
- :func:`packed_biased_self_attention`: packed self-attention that re-pads around the kernel where a
  per-position bias is defined (T5's relative position bias).

Each variant's attention module (``BertSelfAttention``, ``GPTAttention``, ``T5Attention``, ...) is written in
its own modeling file from these; Transformer-XL's relative attention is in ``relative_attention.py``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache

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


class CrossAttention(nn.Module):
    """Encoder-decoder attention (T5, the original Transformer): queries from the decoder's states,
    keys and values from the encoder's. (B, T, H) decoder states, (B, S, H) encoder states -> (B, T, H).

    Its state is the encoder's projected keys and values, kept in the cross-attention half of the
    decoder's ``EncoderDecoderCache`` (see :func:`encoder_decoder_cache`) at ``layer_idx``: projected
    on the first call given the cache (the prompt step of ``generate()``), marked done in the cache's
    ``is_updated``, and read back on every later step without projecting the encoder states again.
    Without a cache (training) they are projected at each call.

    Built from a stack config: ``hidden_size``, ``num_attention_heads``, ``head_dim`` (None: H /
    heads), ``attention_scale`` (None: 1/sqrt(head_dim); T5's 1.0), ``attention_probs_dropout_prob``,
    ``use_bias``, ``padding_free`` (the CPU dropout kernel on the probabilities, modules/dropout.py);
    ``attn_implementation`` is read at each call (it may be switched at run time). Submodules
    ``query``, fused ``key_value`` (keys then values) and ``out``: the names of the key maps.
    """

    adapter_role = "attention"  # peft's default targets: its input projections (integrations/peft_targets.py)

    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim or config.hidden_size // config.num_attention_heads
        self.inner_size = self.num_heads * self.head_dim
        self.scale = config.attention_scale if config.attention_scale is not None else 1.0 / math.sqrt(self.head_dim)
        self.dropout_prob = config.attention_probs_dropout_prob
        self.attend = fast_attention_function if config.padding_free else attention_function
        self.query = nn.Linear(config.hidden_size, self.inner_size, bias=config.use_bias)
        self.key_value = nn.Linear(config.hidden_size, 2 * self.inner_size, bias=config.use_bias)
        self.out = nn.Linear(self.inner_size, config.hidden_size, bias=config.use_bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, heads * D) -> (B, heads, T, D)."""
        return x.view(*x.shape[:2], self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_bias: torch.Tensor | None,
        cache: Cache | None = None,
        layer_idx: int = 0,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``hidden_states`` (B, T, H) to ``encoder_hidden_states`` (B, S, H).
        ``encoder_attention_bias``: additive (B, 1, 1, S) source padding, or None. ``cache``: the
        decoder's ``EncoderDecoderCache`` (any other cache, or None, keeps no encoder keys).
        Returns (output (B, T, H), probabilities (B, heads, T, S) if asked, else None)."""
        query = self._split_heads(self.query(hidden_states))
        cross_cache = cache if isinstance(cache, EncoderDecoderCache) else None
        if cross_cache is not None and cross_cache.is_updated.get(layer_idx):
            stored = cross_cache.cross_attention_cache.layers[layer_idx]  # projected on the first step
            key, value = stored.keys, stored.values
        else:
            key, value = (self._split_heads(x) for x in self.key_value(encoder_hidden_states).chunk(2, dim=-1))
            if cross_cache is not None:
                key, value = cross_cache.cross_attention_cache.update(key, value, layer_idx)
                cross_cache.is_updated[layer_idx] = True
        dropout = self.dropout_prob if self.training else 0.0
        backend = "eager" if output_attentions or self.config._attn_implementation == "eager" else "sdpa"
        context, probs = self.attend(query, key, value, encoder_attention_bias, False, dropout, self.scale, backend)
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2)
        if torch.compiler.is_exporting():
            # The ONNX exporter decomposes SDPA into matmuls whose output is (B, heads, T, D)-contiguous:
            # the reshape below must not be recorded as a view of it.
            context = context.clone(memory_format=torch.contiguous_format)
        return self.out(context.reshape(batch, length, self.inner_size)), probs


def encoder_decoder_cache(
    cache: Cache | None, use_cache: bool, is_decoder: bool, checkpointing: bool, num_layers: int
) -> Cache | None:
    """The cache one call of an encoder-decoder's stack reads and extends.

    The decoder (``is_decoder``): the caller's cache, or a new one when ``use_cache``, as an
    ``EncoderDecoderCache`` (a plain cache is wrapped: its second half keeps the encoder's keys and
    values for :class:`CrossAttention`); none while training with gradient ``checkpointing`` (the
    checkpointed layers would write it twice, transformers' GradientCheckpointingLayer; a given
    cache is then refused). The encoder keeps none between calls (``use_cache`` is ignored, as
    transformers' encoders ignore it) but reads one holding a key/value prefix (peft's prefix
    tuning). ``num_layers``: the stack's depth, which a cache built for fewer layers cannot serve.
    A ValueError names what cannot be used (a tuple of tensors, a static cache, the wrong depth)."""
    if cache is not None and not isinstance(cache, Cache):
        raise ValueError(
            f"past_key_values must be a transformers Cache (DynamicCache / EncoderDecoderCache), got "
            f"{type(cache).__name__}; tuples of tensors are not supported"
        )
    if not is_decoder:
        return cache
    if checkpointing and (use_cache or cache is not None):
        if cache is not None:
            raise ValueError("past_key_values cannot be used while training with gradient checkpointing")
        use_cache = False
    if cache is None and not use_cache:
        return None
    if cache is None:
        cache = DynamicCache()
    if cache.is_compileable:
        # A static cache returns its whole preallocated length, unfilled slots included.
        raise ValueError(
            f"{type(cache).__name__} is not supported; use the default DynamicCache (generate() without "
            "cache_implementation)"
        )
    if not isinstance(cache, EncoderDecoderCache):
        cache = EncoderDecoderCache(cache, DynamicCache())
    filled = len(cache.self_attention_cache.layers)
    if cache.self_attention_cache.layer_class_to_replicate is None and filled < num_layers:
        raise ValueError(
            f"the cache was built for {filled} layers but this decoder has {num_layers}: build it "
            "with the decoder's config (an encoder-decoder config names the decoder depth `decoder_layers`)"
        )
    return cache


def packed_biased_self_attention(
    qkv: torch.Tensor,
    unpadded: UnpaddedBatch,
    attention_bias: torch.Tensor,
    num_heads: int,
    scale: float,
    dropout: float = 0.0,
    backend: str = "sdpa",
) -> torch.Tensor:
    """Padding-free self-attention whose additive bias is defined per (query, key) position of the
    padded batch (T5's relative position bias): the packed projections ``qkv`` (total_tokens,
    3 * inner) are re-padded to (B, T) around the kernel (``UnpaddedBatch.pad``), where
    ``attention_bias`` (B | 1, heads, T, T), which must hide the padding keys, is added; returns the
    context packed again, (total_tokens, inner), before the output projection. Exact for any
    padding (positions keep their padded coordinates); it saves the per-token work around attention,
    not attention's own (:func:`packed_self_attention` saves both where no such bias exists).
    ``dropout`` 0.0 in eval mode."""
    padded = unpadded.pad(qkv)
    batch, length = padded.shape[:2]
    query, key, value = (x.view(batch, length, num_heads, -1).transpose(1, 2) for x in padded.chunk(3, dim=-1))
    context, _ = fast_attention_function(query, key, value, attention_bias, False, dropout, scale, backend)
    return unpadded.unpad(context.transpose(1, 2).reshape(batch, length, -1))
