"""Multi-head attention shared by every variant.

One module covers self-attention (fused QKV projection), cross-attention (query from the
decoder, keys/values from the encoder), causal masks, additive position biases (T5's bucketed
bias, ALiBi-style biases) and the padding-free layout. Backends: ``eager`` (explicit softmax,
can return the attention probabilities) and ``sdpa`` (``torch.nn.functional.scaled_dot_product_attention``).
Variants with a different score function (Transformer-XL/XLNet relative attention with
``r_w``/``r_r`` biases) subclass it and override :meth:`MultiHeadAttention.attend`.

Per-layer state: a transformers ``Cache`` (``past_key_values``) grows the self-attention keys and
values one generation step at a time and keeps the encoder's cross-attention keys/values after the
first step (``EncoderDecoderCache``); a ``memory`` (B, M, H) of earlier states (Transformer-XL/
XLNet ``mems``) is prepended to the keys and values but never queried. Whenever keys outnumber
queries (cache or memory), query i is the (S - T + i)-th key position and causal masking aligns
to the bottom right: it sees keys 0..S-T+i.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache

from .dropout import dropout as apply_dropout
from .masks import with_causal_bias
from .padding import UnpaddedBatch, gather_positions

ATTENTION_BACKENDS = ("eager", "sdpa")


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


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over ``num_heads`` heads.

    Args:
        hidden_size: model width H (input and output).
        num_heads: number of heads; ``head_dim`` defaults to H // num_heads.
        dropout: dropout on the attention probabilities.
        bias: whether projections have biases (False for T5).
        cross_attention: keys/values come from ``key_value_states`` instead of the input.
        key_value_size: width of ``key_value_states`` (defaults to H).
        scale: score scale; defaults to 1/sqrt(head_dim) (T5 uses 1.0).
        layer_idx: the depth of this module in its stack: where it reads and writes a Cache.
    """

    adapter_role = "attention"  # what peft adapts by default (hf_variants.integrations.peft_targets)

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        head_dim: int | None = None,
        cross_attention: bool = False,
        key_value_size: int | None = None,
        scale: float | None = None,
        layer_idx: int | None = None,
    ) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        if head_dim is None:
            if hidden_size % num_heads != 0:
                raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_attention_heads ({num_heads})")
            head_dim = hidden_size // num_heads
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.inner_size = num_heads * head_dim
        self.dropout = dropout
        self.scale = scale if scale is not None else 1.0 / math.sqrt(head_dim)
        self.cross_attention = cross_attention
        self.build_projections(hidden_size, key_value_size or hidden_size, bias)

    def build_projections(self, hidden_size: int, key_value_size: int, bias: bool) -> None:
        """Create the input and output projections (hook: a variant whose checkpoints store them
        in another form, e.g. XLNet's per-head (H, heads, D) tensors, overrides this together with
        :meth:`project` and the output projection)."""
        if self.cross_attention:
            self.query = nn.Linear(hidden_size, self.inner_size, bias=bias)
            self.key_value = nn.Linear(key_value_size, 2 * self.inner_size, bias=bias)
        else:
            # One GEMM instead of three: the fused projection is the performance path.
            self.qkv = FusedQKVProjection(hidden_size, 3 * self.inner_size, bias=bias)
        self.out = nn.Linear(self.inner_size, hidden_size, bias=bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, heads*D) -> (B, heads, T, D)."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def project(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None,
        unpadded: UnpaddedBatch | None,
        key_value_unpadded: UnpaddedBatch | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Project to per-head queries, keys and values, each (B, heads, T or S, D).
        ``key_value_unpadded``: cross-attention projects the real tokens of ``key_value_states``
        only (zero keys and values at its padding, hidden by the attention mask)."""
        if self.cross_attention:
            if key_value_states is None:
                raise ValueError("cross-attention needs key_value_states (the encoder output)")
            query = self.query(hidden_states)
            if unpadded is not None:
                query = unpadded.pad(query)
            if key_value_unpadded is not None:
                key_value = key_value_unpadded.pad(self.key_value(key_value_unpadded.unpad(key_value_states)))
            else:
                key_value = self.key_value(key_value_states)
            key, value = key_value.chunk(2, dim=-1)
        else:
            qkv = self.qkv(hidden_states)
            if unpadded is not None:
                # Projections ran on (total_tokens, 3H); attention needs the rectangular layout.
                qkv = unpadded.pad(qkv)
            query, key, value = qkv.chunk(3, dim=-1)
        return self._split_heads(query), self._split_heads(key), self._split_heads(value)

    def _project_split(
        self, query_input: torch.Tensor, key_value_input: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention projections from different inputs: queries from ``query_input`` (B, M, H),
        keys and values from ``key_value_input`` (B, S, H). The fused weight's query rows and
        key/value rows are used separately (views, no copy)."""
        inner = self.inner_size
        if not isinstance(self.qkv, FusedQKVProjection):
            # Wrapped by an adapter (peft's LoRA / (IA)^3 layers): its forward adds what the base
            # weight lacks, so run the whole projection on both inputs and keep the rows needed.
            query = self.qkv(query_input)[..., :inner]
            key, value = self.qkv(key_value_input)[..., inner:].chunk(2, dim=-1)
            return self._split_heads(query), self._split_heads(key), self._split_heads(value)
        query, key_value = self.qkv(query_input, key_value_input)
        key, value = key_value.chunk(2, dim=-1)
        return self._split_heads(query), self._split_heads(key), self._split_heads(value)

    def project_selected_queries(
        self, hidden_states: torch.Tensor, query_positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention keys/values at every position but queries only at ``query_positions``:
        hidden (B, T, H), positions (B, M) -> query (B, heads, M, D), key and value (B, heads, T, D).
        The queries nobody reads are never projected."""
        return self._project_split(gather_positions(hidden_states, query_positions), hidden_states)

    def project_with_memory(
        self, hidden_states: torch.Tensor, memory: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries from the current segment (B, T, H) only; keys and values from the memory
        (B, M, H) followed by the segment: (B, heads, T, D) and twice (B, heads, M + T, D)."""
        return self._project_split(hidden_states, torch.cat([memory.to(hidden_states.dtype), hidden_states], dim=1))

    def _cached_cross_key_value(
        self, past_key_values: Cache | None, layer_idx: int | None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The encoder keys/values this layer stored on an earlier generation step, or None."""
        if not (self.cross_attention and isinstance(past_key_values, EncoderDecoderCache)):
            return None
        if not past_key_values.is_updated.get(layer_idx):
            return None
        layer = past_key_values.cross_attention_cache.layers[layer_idx]
        return layer.keys, layer.values

    def _update_cache(
        self, past_key_values: Cache, layer_idx: int, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Self-attention: append this step's keys/values (B, h, T, D) and return all (B, h, past+T, D).
        Cross-attention: store the encoder's keys/values once (EncoderDecoderCache only)."""
        if not self.cross_attention:
            if isinstance(past_key_values, EncoderDecoderCache):
                past_key_values = past_key_values.self_attention_cache
            return past_key_values.update(key, value, layer_idx)
        if isinstance(past_key_values, EncoderDecoderCache):
            key, value = past_key_values.cross_attention_cache.update(key, value, layer_idx)
            past_key_values.is_updated[layer_idx] = True
        return key, value

    def _check_state_arguments(
        self,
        hidden_states: torch.Tensor,
        past_key_values: Cache | None,
        layer_idx: int | None,
        memory: torch.Tensor | None,
        unpadded: UnpaddedBatch | None,
    ) -> None:
        if past_key_values is None and memory is None:
            return
        if unpadded is not None:
            raise ValueError("past_key_values and memory need the padded layout; run this batch padded")
        if past_key_values is not None:
            if not isinstance(past_key_values, Cache):
                raise ValueError(
                    f"past_key_values must be a transformers Cache (e.g. DynamicCache), got {type(past_key_values).__name__}"
                )
            if layer_idx is None:
                raise ValueError("a cache needs the layer index: pass layer_idx (LayerStack passes the depth)")
        if memory is not None:
            if self.cross_attention:
                raise ValueError("memory is prepended to self-attention keys; cross-attention takes none")
            if past_key_values is not None:
                raise ValueError("pass either past_key_values or memory, not both")
            if (
                memory.dim() != 3
                or memory.shape[0] != hidden_states.shape[0]
                or memory.shape[2] != hidden_states.shape[2]
            ):
                raise ValueError(
                    f"memory has shape {tuple(memory.shape)}, expected (batch={hidden_states.shape[0]}, M, "
                    f"hidden={hidden_states.shape[2]})"
                )

    def attend(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_bias: torch.Tensor | None,
        position_bias: torch.Tensor | None,
        is_causal: bool,
        attn_implementation: str,
        output_attentions: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention proper. query (B, h, T, D), key/value (B, h, S, D) -> ((B, h, T, D), probs or None).

        With S > T (cached or memory keys first), ``is_causal`` lets query i see keys 0..S-T+i.
        """
        bias = attention_bias
        if position_bias is not None:
            bias = position_bias if bias is None else bias + position_bias
        dropout = self.dropout if self.training else 0.0
        backend = "eager" if output_attentions else attn_implementation
        # The variants still built on this module keep the CPU kernel on every path.
        return fast_attention_function(query, key, value, bias, is_causal, dropout, self.scale, backend)

    def _attend_bucketed(
        self, hidden_states: torch.Tensor, unpadded: UnpaddedBatch, is_causal: bool, attn_implementation: str
    ) -> torch.Tensor:
        """Padding-free self-attention: (total_tokens, H) -> (total_tokens, H).

        Each length bucket of the batch is re-padded only to its own longest row (see
        padding.py), so padding costs no attention FLOPs beyond the bucket's spread of lengths;
        rows of one length need no mask at all.
        """
        dropout = self.dropout if self.training else 0.0
        context = packed_self_attention(
            self.qkv(hidden_states), unpadded, self.num_heads, self.scale, dropout, is_causal, attn_implementation
        )
        return self.out(context)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_bias: torch.Tensor | None = None,
        *,
        key_value_states: torch.Tensor | None = None,
        key_value_unpadded: UnpaddedBatch | None = None,
        position_bias: torch.Tensor | None = None,
        is_causal: bool = False,
        unpadded: UnpaddedBatch | None = None,
        attn_implementation: str = "sdpa",
        output_attentions: bool = False,
        query_positions: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        layer_idx: int | None = None,
        memory: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend.

        Args:
            hidden_states: (B, T, H), or (total_tokens, H) when ``unpadded`` describes the batch.
            attention_bias: additive (B, 1, 1|T, S) bias from :func:`~hf_variants.modules.masks.make_attention_bias`; S counts
                every key: cached and memory positions included. Must be None for self-attention
                over a packed batch (``unpadded`` defines its padding).
            key_value_states: (B, S, H_kv) encoder states for cross-attention.
            key_value_unpadded: where the real tokens of ``key_value_states`` are (padding-free
                key/value projection; ``attention_bias`` must mask the padding).
            position_bias: additive (1|B, heads, T, S) relative-position bias.
            is_causal: mask future positions (bottom-right aligned when S > T).
            unpadded: set on the padding-free path; input and output are then packed.
            query_positions: (B, M) positions to attend from (e.g. [CLS] only, or the masked
                tokens), for heads that read nothing else; the output is then (B, M, H). Padded
                layout, self-attention only (a position bias is cut to those query rows).
            past_key_values: a transformers Cache. Self-attention appends this call's keys/values to
                layer ``layer_idx`` and attends over all of them; cross-attention (with an
                ``EncoderDecoderCache``) projects the encoder states on the first call only.
            layer_idx: the depth of this call in the stack (defaults to ``self.layer_idx``, which
                LayerStack sets; a module shared across depths gets the depth per call).
            memory: (B, M, H) earlier states (no gradient expected) prepended to the keys and
                values of self-attention, never queried (Transformer-XL/XLNet ``mems``).
        Returns:
            (output with the layout of ``hidden_states``, attention probabilities (B, h, T, S) or None).
        """
        if attn_implementation not in ATTENTION_BACKENDS:
            raise ValueError(f"attn_implementation must be one of {ATTENTION_BACKENDS}, got {attn_implementation!r}")
        if layer_idx is None:
            layer_idx = getattr(self, "layer_idx", None)
        stateful = past_key_values is not None or memory is not None
        if unpadded is not None and attention_bias is not None and not self.cross_attention:
            # The packed batch carries its padding in `unpadded`; any other bias is defined in padded
            # coordinates and would be ignored by the bucketed path: refuse it rather than drop it.
            raise ValueError(
                "attention_bias cannot be combined with a packed (padding-free) batch: a packed batch "
                "carries its own padding mask; run biases such as permutation or document masks in the "
                "padded layout (BatchLayout.plan does this)"
            )
        if query_positions is not None and (self.cross_attention or unpadded is not None or is_causal or stateful):
            raise ValueError("query_positions needs padded, non-causal, stateless self-attention")
        if query_positions is not None and position_bias is not None:
            # The bias rows of the selected queries: (1|B, h, T, S) -> (B, h, M, S).
            batch, heads, keys = hidden_states.shape[0], position_bias.shape[1], position_bias.shape[-1]
            rows = query_positions[:, None, :, None].expand(batch, heads, query_positions.shape[1], keys)
            position_bias = position_bias.expand(batch, heads, -1, keys).gather(2, rows)
        self._check_state_arguments(hidden_states, past_key_values, layer_idx, memory, unpadded)
        if (
            unpadded is not None
            and unpadded.total_tokens > 0
            and not (self.cross_attention or position_bias is not None or output_attentions)
        ):
            return self._attend_bucketed(hidden_states, unpadded, is_causal, attn_implementation), None
        cached_cross = self._cached_cross_key_value(past_key_values, layer_idx)
        if query_positions is not None:
            query, key, value = self.project_selected_queries(hidden_states, query_positions)
        elif memory is not None:
            query, key, value = self.project_with_memory(hidden_states, memory)
        elif cached_cross is not None:
            query, (key, value) = self._split_heads(self.query(hidden_states)), cached_cross
        else:
            query, key, value = self.project(hidden_states, key_value_states, unpadded, key_value_unpadded)
        if unpadded is not None and not self.cross_attention:
            attention_bias = unpadded.attention_bias(query.dtype)  # re-padded around the kernel: mask the padding
        if past_key_values is not None and cached_cross is None:
            key, value = self._update_cache(past_key_values, layer_idx, key, value)
        if attention_bias is not None and attention_bias.shape[-1] not in (1, key.shape[2]):
            raise ValueError(
                f"attention_bias covers {attention_bias.shape[-1]} keys but there are {key.shape[2]} "
                "(cached and memory positions count; build the mask over all of them)"
            )
        context, probs = self.attend(
            query, key, value, attention_bias, position_bias, is_causal, attn_implementation, output_attentions
        )
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2)
        if torch.compiler.is_exporting():
            # SDPA's traced output is laid out (B, T, heads, D), so export records the reshape below
            # as a view; the ONNX exporter then decomposes SDPA into matmuls (as for T5's
            # position-biased attention) whose output is (B, heads, T, D)-contiguous, and that view
            # is invalid. An explicit copy keeps it valid; eager calls (and torch.compile: inlined
            # here, not in a helper, it adds no graph) are unchanged.
            context = context.clone(memory_format=torch.contiguous_format)
        context = context.reshape(batch, length, self.inner_size)
        if unpadded is not None:
            context = unpadded.unpad(context)
        return self.out(context), probs


# ----------------------------------------------------------------------------- encoder-decoder attention
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
