"""T5 (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified Text-to-Text
Transformer"): an encoder-decoder Transformer with pre-norm RMS-norm blocks, no biases, unscaled
attention and a learned relative-position bias, pretrained with span corruption.

The architecture, top to bottom in the order data flows (the order of transformers'
``modeling_t5.py``): :class:`T5Embeddings` (word embeddings and dropout, no positions) ->
:class:`T5FFN` (v1.0's ReLU ``DenseActDense``, v1.1's gated-GELU
``DenseGatedActDense``) -> :func:`relative_position_bucket` and :class:`T5RelativePositionBias`
(one learned scalar per bucket and head, computed once per stack and forward, shared by every
layer's self-attention) -> :class:`T5Attention` (self-attention, no 1/sqrt(d) score scale; it appends
to the decoder's cache) -> :class:`T5Block` (pre-norm residuals: self-attention, in the decoder the
shared :class:`~hf_variants.modules.attention.CrossAttention`, which keeps the encoder's projected
keys/values in the cache once, FFN) ->
:class:`T5Layers` (the blocks, a final norm and dropout) -> :class:`T5Stack` (the embeddings, the
masks and position bias, the blocks: the encoder or the decoder) -> :class:`T5Model` -> the heads:
:class:`T5ForConditionalGeneration` (text-to-text and span-corruption pretraining, ``generate()``),
:class:`T5EncoderModel`, :class:`T5ForSequenceClassification`, :class:`T5ForTokenClassification`,
:class:`T5ForQuestionAnswering`.

Submodule names are those of the key map (``weights.py``): a stack's blocks sit under
``<stack>.encoder.layers`` in both stacks, the fused ``qkv`` / ``key_value`` projections are
transformers' ``q, k, v`` / ``k, v`` stacked, and each stack's ``position_bias`` is transformers'
``block.0.layer.0.SelfAttention.relative_attention_bias``.

Speed is a plug-in (``modules/fast_path.py``): with ``config.padding_free`` (default on) and CPU
inputs, the encoder stack runs on the real tokens alone (packed: embeddings, projections, FFN and
norms on (N, H)); its self-attention re-pads them around the kernel, where the relative position
bias is defined (``attention.packed_biased_self_attention``), and the encoder's output is re-padded
with zeros at padding, which the decoder's cross-attention masks. The decoder runs padded. The
switch also selects the CPU kernels when the model is built (``modules/dropout.py``'s uniform-mask
dropout, ``modules/heads.py``'s ``TiedDecoder`` for the LM head); results are identical. With ``config.padding_free = False`` the plain path is all that
runs; see docs/architecture.md, "Reading a variant".
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, EncoderDecoderCache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
    Seq2SeqQuestionAnsweringModelOutput,
    Seq2SeqSequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import ModelOutput

from ...modules.attention import (
    CrossAttention,
    FusedQKVProjection,
    attention_function,
    encoder_decoder_cache,
    fast_attention_function,
    packed_biased_self_attention,
)
from ...modules.cache import CACHE_FIELD, check_cache_batch, check_cache_positions
from ...modules.dropout import make_dropout
from ...modules.fast_path import PackedWithBias, fast_path_for
from ...modules.heads import (
    IGNORE_INDEX,
    HeadReads,
    SummaryClassifier,
    finish_seq2seq,
    lm_loss,
    make_vocabulary_decoder,
    sequence_classification_loss,
    shift_tokens_right,
    span_extraction_loss,
    token_classification_loss,
)
from ...modules.inputs import check_batch_shape, check_index_range, check_not_empty, pick_cache
from ...modules.layout import BatchLayout
from ...modules.masks import check_key_mask, custom_attention_bias, make_attention_bias, targets_at_padding
from ...modules.norms import build_norm
from ...modules.token_ids import CheckedGenerationMixin
from ...modules.tracing import is_tracing
from ..modeling_base import VariantPreTrainedModel
from .configuration_t5 import T5Config

__all__ = [
    "T5PreTrainedModel",
    "T5Model",
    "T5ForConditionalGeneration",
    "T5EncoderModel",
    "T5ForSequenceClassification",
    "T5ForTokenClassification",
    "T5ForQuestionAnswering",
]


# ----------------------------------------------------------------------------- embeddings
class T5Embeddings(nn.Module):
    """Word embeddings and dropout: no positions (the relative bias carries them), no segments, no
    norm, and no padding row (the pad id is also the decoder start token, whose embedding trains).
    (B, T) ids or (B, T, E) embeddings -> (B, T, H)."""

    def __init__(self, config: T5Config) -> None:
        super().__init__()
        embedding_size = config.embedding_size or config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, embedding_size)
        self.dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)
        # Factorized embeddings (ALBERT-style ablation, config.embedding_size): E -> H.
        self.projection = (
            nn.Linear(embedding_size, config.hidden_size) if embedding_size != config.hidden_size else None
        )

    def forward(self, input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        embeddings = self.dropout(embeddings)
        return embeddings if self.projection is None else self.projection(embeddings)


# ----------------------------------------------------------------------------- norm
class T5RMSNorm(nn.Module):
    """T5's norm ("T5LayerNorm" in transformers; Zhang & Sennrich 2019): no mean subtraction, no bias.
    y = x / sqrt(mean(x^2) + eps) * weight, the statistic in float32 (so half-precision inputs do not
    overflow); (..., H) -> (..., H) in the input's dtype. The same as ``modules/norms.py``'s
    ``RMSNorm`` (which the other variants' ``norm_type="rms_norm"`` ablation builds), written here
    so T5's file reads top to bottom, as transformers' modeling_t5 does."""

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


def t5_norm(config: T5Config) -> nn.Module:
    """The blocks' and stacks' norm: :class:`T5RMSNorm` (T5's ``norm_type="rms_norm"``), else the
    shared ``build_norm`` (``"layer_norm"``, an ablation; an unknown name is a ValueError there)."""
    if config.norm_type == "rms_norm":
        return T5RMSNorm(config.hidden_size, eps=config.layer_norm_eps)
    return build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)


# ----------------------------------------------------------------------------- feed-forward
class T5FFN(nn.Module):
    """v1.0: down(dropout(ReLU(up x))); v1.1 (``config.gated_ffn``): down(dropout(GELU(gate x) * up x)).
    (..., H) -> (..., H). transformers' ``wi`` / ``wi_0``, ``wi_1``, ``wo`` are ``up`` / ``gate``, ``up``, ``down``."""

    adapter_role = "feed_forward"  # (IA)^3's feed-forward module (integrations/peft_targets.py)

    def __init__(self, config: T5Config) -> None:
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.use_bias)
        self.gate = (
            nn.Linear(config.hidden_size, config.intermediate_size, bias=config.use_bias) if config.gated_ffn else None
        )
        self.activation = ACT2FN[config.hidden_act]
        self.inner_dropout = make_dropout(config.ffn_dropout_prob, config.padding_free)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.use_bias)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.gate is None:
            inner = self.activation(self.up(hidden_states))
        else:
            inner = self.activation(self.gate(hidden_states)) * self.up(hidden_states)
        return self.down(self.inner_dropout(inner))


# ----------------------------------------------------------------------------- relative position bias
def relative_position_bucket(
    relative_position: torch.Tensor, bidirectional: bool, num_buckets: int, max_distance: int
) -> torch.Tensor:
    """Map key - query offsets (any shape, int) to bucket ids in [0, num_buckets).

    Bidirectional: half the buckets for keys after the query, half for keys at or before it;
    causal: every bucket for keys at or before the query (later keys are masked anyway, bucket 0).
    Within a direction, the first half of the buckets are exact distances 0..n/2-1, the rest
    cover distances up to ``max_distance`` logarithmically; farther keys share the last bucket.
    """
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    exact = num_buckets // 2
    # Distances below `exact` would give log(0); they take the exact branch of the where below.
    logarithmic = (
        exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact) * (num_buckets - exact)).long()
    )
    logarithmic = logarithmic.clamp(max=num_buckets - 1)
    return buckets + torch.where(distance < exact, distance, logarithmic)


class T5RelativePositionBias(nn.Module):
    """One learned scalar per (bucket, head), added to the self-attention scores: (1, heads, T, S)."""

    def __init__(self, num_heads: int, num_buckets: int, max_distance: int, bidirectional: bool) -> None:
        super().__init__()
        self.embedding = nn.Embedding(num_buckets, num_heads)
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.bidirectional = bidirectional

    def forward(
        self, query_length: int, key_length: int, past_length: int = 0, device: torch.device | None = None
    ) -> torch.Tensor:
        """Queries are positions past_length .. past_length + T - 1, keys 0 .. S - 1 -> (1, heads, T, S).
        ``device``: where the computation runs (the hidden states'); the table's own device is "meta"
        while accelerate offloads it (device_map with CPU/disk offload loads it for the lookup only)."""
        device = self.embedding.weight.device if device is None else device
        queries = torch.arange(past_length, past_length + query_length, device=device)[:, None]
        keys = torch.arange(key_length, device=device)[None, :]
        buckets = relative_position_bucket(keys - queries, self.bidirectional, self.num_buckets, self.max_distance)
        return self.embedding(buckets).permute(2, 0, 1).unsqueeze(0)

    def extra_repr(self) -> str:
        return f"buckets={self.num_buckets}, max_distance={self.max_distance}, bidirectional={self.bidirectional}"


# ----------------------------------------------------------------------------- attention
class T5Attention(nn.Module):
    """Multi-head self-attention without the 1/sqrt(d) score scale (``config.attention_scale`` 1.0:
    T5 folds it into the query init); fused ``qkv`` projection. (B, T, H) -> (B, T, H). The decoder's
    attention over the encoder states is the shared :class:`~hf_variants.modules.attention.CrossAttention`.

    The cache state lives here, read and written at ``layer_idx`` of a transformers Cache: this
    call's keys/values are appended (the decoder's ``EncoderDecoderCache`` self-attention half, or an
    encoder's key/value prefix for prefix tuning) and attended over with all earlier ones."""

    adapter_role = "attention"  # peft's default targets: its input projections (integrations/peft_targets.py)

    def __init__(self, config: T5Config) -> None:
        super().__init__()
        self.config = config  # attn_implementation is read at each call: it may be switched at run time
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim or config.hidden_size // config.num_attention_heads
        self.inner_size = self.num_heads * self.head_dim
        self.scale = config.attention_scale if config.attention_scale is not None else 1.0 / math.sqrt(self.head_dim)
        self.dropout_prob = config.attention_probs_dropout_prob
        # The speed plug-in's CPU dropout kernel on the probabilities (modules/attention.py), chosen at build.
        self.attend = fast_attention_function if config.padding_free else attention_function
        self.qkv = FusedQKVProjection(config.hidden_size, 3 * self.inner_size, bias=config.use_bias)
        self.out = nn.Linear(self.inner_size, config.hidden_size, bias=config.use_bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, heads * D) -> (B, heads, T, D)."""
        return x.view(*x.shape[:2], self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_bias: torch.Tensor | PackedWithBias | None,
        cache: Cache | None = None,
        layer_idx: int = 0,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend. ``attention_bias``: additive, broadcastable to (B, heads, T, S): the position bias
        + padding + causal mask; or the fast path's packed batch with that bias in padded
        coordinates (``hidden_states`` are then (N, H), modules/fast_path.py). Returns (output
        (B, T, H) or (N, H), attention probabilities (B, heads, T, S) if asked, else None)."""
        dropout = self.dropout_prob if self.training else 0.0
        backend = "eager" if output_attentions or self.config._attn_implementation == "eager" else "sdpa"
        if isinstance(attention_bias, PackedWithBias):  # the padding-free fast path: re-padded around the kernel
            packed = attention_bias
            context = packed_biased_self_attention(
                self.qkv(hidden_states), packed.unpadded, packed.attention_bias, self.num_heads, self.scale, dropout
            )
            return self.out(context), None
        query, key, value = (self._split_heads(x) for x in self.qkv(hidden_states).chunk(3, dim=-1))
        if cache is not None:  # earlier steps' (or a prefix's) keys and values come first
            self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
            key, value = self_cache.update(key, value, layer_idx)
        context, probs = self.attend(query, key, value, attention_bias, False, dropout, self.scale, backend)
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2)
        if torch.compiler.is_exporting():
            # The ONNX exporter decomposes position-biased SDPA into matmuls whose output is
            # (B, heads, T, D)-contiguous: the reshape below must not be recorded as a view of it.
            context = context.clone(memory_format=torch.contiguous_format)
        return self.out(context.reshape(batch, length, self.inner_size)), probs


# ----------------------------------------------------------------------------- block and stack
class T5Block(GradientCheckpointingLayer):
    """One pre-norm block: x = x + Dropout(SelfAttention(Norm(x))); in the decoder
    x = x + Dropout(CrossAttention(Norm(x), encoder states)); x = x + Dropout(FFN(Norm(x))).

    A block whose attention or FFN is shared with block 0 (``config.layer_sharing``, ALBERT-style
    ablations) stores none and is handed block 0's at each call."""

    def __init__(self, config: T5Config, own_attention: bool = True, own_ffn: bool = True) -> None:
        super().__init__()
        self.attention = T5Attention(config) if own_attention else None
        self.attention_norm = t5_norm(config)
        if config.is_decoder:
            self.cross_attention = CrossAttention(config)  # the shared block (modules/attention.py)
            self.cross_attention_norm = t5_norm(config)
        else:
            self.cross_attention = None
        self.ffn = T5FFN(config) if own_ffn else None
        self.ffn_norm = t5_norm(config)
        self.residual_dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_bias: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None,
        encoder_attention_bias: torch.Tensor | None,
        cache: Cache | None,
        layer_idx: int,
        output_attentions: bool = False,
        shared_attention: T5Attention | None = None,
        shared_ffn: T5FFN | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """(B, T, H) -> ((B, T, H), self-attention probabilities or None, cross-attention
        probabilities (B, heads, T, S) or None). Every argument is positional where it is called:
        gradient checkpointing makes only positional tensors inputs of the checkpoint (the shared
        position bias and the encoder states carry gradient)."""
        attention = shared_attention or self.attention
        ffn = shared_ffn or self.ffn
        attention_output, probs = attention(
            self.attention_norm(hidden_states), attention_bias, cache, layer_idx, output_attentions
        )
        hidden_states = hidden_states + self.residual_dropout(attention_output)
        cross_probs = None
        if self.cross_attention is not None:
            cross_output, cross_probs = self.cross_attention(
                self.cross_attention_norm(hidden_states),
                encoder_hidden_states,
                encoder_attention_bias,
                cache,
                layer_idx,
                output_attentions,
            )
            hidden_states = hidden_states + self.residual_dropout(cross_output)
        hidden_states = hidden_states + self.residual_dropout(ffn(self.ffn_norm(hidden_states)))
        return hidden_states, probs, cross_probs


class T5Layers(nn.Module):
    """A stack's ``num_hidden_layers`` blocks, then the final norm and dropout (pre-norm leaves the
    residual stream un-normalised). ``config.layer_sharing``: "none", "all" (one block at every
    depth), "attention" or "ffn" (that sub-block of block 0 at every depth)."""

    def __init__(self, config: T5Config) -> None:
        super().__init__()
        self.num_layers = config.num_hidden_layers
        self.sharing = config.layer_sharing
        if self.sharing == "all":
            self.layers = nn.ModuleList([T5Block(config)])
        else:
            self.layers = nn.ModuleList(
                T5Block(
                    config, own_attention=i == 0 or self.sharing != "attention", own_ffn=i == 0 or self.sharing != "ffn"
                )
                for i in range(self.num_layers)
            )
        self.final_layer_norm = t5_norm(config)
        self.final_dropout = (
            make_dropout(config.hidden_dropout_prob, config.padding_free) if config.hidden_dropout_prob > 0.0 else None
        )

    def layer_at(self, depth: int) -> T5Block:
        return self.layers[0] if self.sharing == "all" else self.layers[depth]

    def shared_blocks(self, depth: int) -> tuple[T5Attention | None, T5FFN | None]:
        """(attention, FFN) of block 0 where the block at ``depth`` shares them, else None."""
        return (
            self.layers[0].attention if self.sharing == "attention" else None,
            self.layers[0].ffn if self.sharing == "ffn" else None,
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_bias: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_bias: torch.Tensor | None = None,
        cache: Cache | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> tuple[torch.Tensor, tuple | None, tuple | None, tuple | None]:
        """(B, T, H) embeddings -> (last hidden states (B, T, H), every block's input + the output
        if asked, self-attention and cross-attention probabilities if asked)."""
        all_hidden_states = () if output_hidden_states else None
        all_attentions = () if output_attentions else None
        all_cross_attentions = () if output_attentions and encoder_hidden_states is not None else None
        for depth in range(self.num_layers):
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            hidden_states, probs, cross_probs = self.layer_at(depth)(
                hidden_states,
                attention_bias,
                encoder_hidden_states,
                encoder_attention_bias,
                cache,
                depth,
                output_attentions,
                *self.shared_blocks(depth),
            )
            if output_attentions:
                all_attentions += (probs,)
                if all_cross_attentions is not None:
                    all_cross_attentions += (cross_probs,)
        hidden_states = self.final_layer_norm(hidden_states)
        if self.final_dropout is not None:
            hidden_states = self.final_dropout(hidden_states)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)
        return hidden_states, all_hidden_states, all_attentions, all_cross_attentions


# ----------------------------------------------------------------------------- model
class T5PreTrainedModel(VariantPreTrainedModel):
    config_class = T5Config
    base_model_prefix = "transformer"
    # The unit device_map="auto" never splits, FSDP wraps and gradient checkpointing recomputes.
    _no_split_modules = ["T5Block"]
    _keys_to_ignore_on_load_unexpected = [
        r"decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight"
    ]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Mesh TensorFlow's initialisation, as the original: unit-variance embeddings, fan-in scaled
        projections, with the missing 1/sqrt(d_kv) score scale folded into the query init."""
        super()._init_weights(module)
        config, factor = self.config, self.config.initializer_factor
        hidden = config.hidden_size
        head_dim = config.head_dim or hidden // config.num_attention_heads
        inner = config.num_attention_heads * head_dim
        query_std = factor * (hidden * head_dim) ** -0.5  # the 1/sqrt(d_kv) scale T5's scores omit
        key_value_std = factor * hidden**-0.5
        if isinstance(module, T5Embeddings):
            init.normal_(module.word_embeddings.weight, 0.0, factor)
        elif isinstance(module, T5RelativePositionBias):
            init.normal_(module.embedding.weight, 0.0, factor * hidden**-0.5)
        elif isinstance(module, T5Attention):
            if not getattr(module.qkv.weight, "_is_hf_initialized", False):  # (row blocks are views: no flag)
                for rows, std in zip(module.qkv.weight.split(inner), (query_std, key_value_std, key_value_std)):
                    rows.normal_(0.0, std)
            init.normal_(module.out.weight, 0.0, factor * inner**-0.5)
        elif isinstance(module, CrossAttention):
            init.normal_(module.query.weight, 0.0, query_std)
            init.normal_(module.key_value.weight, 0.0, key_value_std)
            init.normal_(module.out.weight, 0.0, factor * inner**-0.5)
        elif isinstance(module, T5FFN):
            for projection in (module.up, module.gate):
                if projection is not None:
                    init.normal_(projection.weight, 0.0, factor * hidden**-0.5)
            init.normal_(module.down.weight, 0.0, factor * config.intermediate_size**-0.5)
        elif isinstance(module, SummaryClassifier):
            for projection in (module.dense, module.out_proj):
                init.normal_(projection.weight, 0.0, factor * hidden**-0.5)
                init.zeros_(projection.bias)
        elif isinstance(module, T5ForConditionalGeneration) and not config.tie_word_embeddings:
            init.normal_(module.lm_head.weight, 0.0, factor)
        elif isinstance(module, T5ForQuestionAnswering):
            init.normal_(module.qa_outputs.weight, 0.0, factor * hidden**-0.5)
            init.zeros_(module.qa_outputs.bias)
        elif isinstance(module, T5ForTokenClassification):
            init.normal_(module.classifier.weight, 0.0, factor)
            init.zeros_(module.classifier.bias)


def stack_config(config: T5Config, is_decoder: bool) -> T5Config:
    """A stack's copy of the config: the encoder's bidirectional without a cache; the decoder's
    causal, with cross-attention, ``decoder_layers`` deep."""
    stack = copy.deepcopy(config)
    stack.is_encoder_decoder = False
    stack.is_decoder = is_decoder
    stack.add_cross_attention = is_decoder
    if is_decoder:
        stack.num_hidden_layers = config.decoder_layers
    else:
        stack.use_cache = False
    return stack


class T5Stack(T5PreTrainedModel):
    """The encoder (``config.is_decoder`` False: (B, S) ids -> (B, S, H)) or the decoder (causal
    self-attention with a cache, cross-attention to the encoder states): embeddings -> the blocks,
    with the masks and the relative position bias computed once for all of them."""

    def __init__(self, config: T5Config, model_config: T5Config | None = None) -> None:
        super().__init__(config)
        self.config = config
        # The config of the model this stack belongs to (``stack_config`` made ``config`` a copy of it):
        # the speed plug-in's switch is read there at each call, so ``model.config.padding_free = False``
        # selects the plain path (modules/fast_path.py).
        self.model_config = config if model_config is None else model_config
        self.embeddings = T5Embeddings(config)
        self.encoder = T5Layers(config)  # named `encoder` in both stacks: the key map's names
        self.position_bias = T5RelativePositionBias(
            config.num_attention_heads,
            config.relative_attention_num_buckets,
            config.relative_attention_max_distance,
            bidirectional=not config.is_decoder,
        )
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def _prepare_cache(self, cache: Cache | None, use_cache: bool | None) -> Cache | None:
        """The cache this call reads and extends (``modules/attention.py``'s ``encoder_decoder_cache``):
        the decoder's (a new ``EncoderDecoderCache`` when ``use_cache``, default ``config.use_cache``),
        or the key/value prefix an encoder reads (peft's prefix tuning)."""
        use_cache = self.config.use_cache if use_cache is None else use_cache
        if cache is None and not use_cache:  # nothing to read or to keep (a training forward)
            return None
        checkpointing = self.training and self.is_activation_checkpointing
        return encoder_decoder_cache(cache, use_cache, self.config.is_decoder, checkpointing, self.encoder.num_layers)

    def _packed_layout(
        self,
        attention_mask: torch.Tensor | None,
        batch: int,
        length: int,
        device: torch.device,
        needs_every_layer: bool,
        cache: Cache | None,
        reads: HeadReads | None,
    ) -> BatchLayout | None:
        """The speed plug-in's layout for the encoder (``modules/fast_path.py``, asked with the switch
        on): packed when the inputs are on CPU, the (B, T) mask pads enough of the batch, and nothing is
        asked that only the plain path gives (every layer's outputs, a key/value prefix, a 4-D mask,
        states at padding: ``reads.padding``); else None, the plain path. The decoder runs padded."""
        config = self.config
        if config.is_decoder or attention_mask is None or attention_mask.dim() != 2:
            return None
        fast_path = fast_path_for(self.model_config, device, needs_every_layer, cache is not None)
        if fast_path is None:
            return None
        dtype = self.embeddings.word_embeddings.weight.dtype
        layout = fast_path.plan_stack(attention_mask, batch, length, dtype, reads or HeadReads())
        return layout if layout.packed else None

    def _self_attention_bias(
        self,
        attention_mask: torch.Tensor | None,
        batch: int,
        length: int,
        past_length: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> torch.Tensor:
        """The self-attention's additive (B | 1, heads, T, past + T) bias, shared by every block: the
        relative position bias + the padding mask (+ the causal mask in the decoder). A 4-D
        (B, 1, T, past + T) ``attention_mask`` is used as given instead of padding and causal masks
        (transformers' convention: packed documents, a shared prefix); positions still count in the row.
        Built in the embeddings' ``dtype`` on their ``device`` (the bias table's own is "meta" while
        accelerate offloads it)."""
        key_length = past_length + length
        if attention_mask is not None and attention_mask.dim() == 4:
            mask_bias = custom_attention_bias(attention_mask, batch, length, key_length, dtype)
        else:
            mask_bias = make_attention_bias(attention_mask, dtype, self.config.is_decoder, length, key_length, device)
        position_bias = self.position_bias(length, key_length, past_length, device=device).to(dtype)
        return position_bias if mask_bias is None else position_bias + mask_bias

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        reads: HeadReads | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPastAndCrossAttentions | tuple:
        """Run one stack.

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, E)).
            attention_mask: (B, past + T) keep-mask (1 real, 0 padding), or a 4-D (B, 1, T, past + T)
                mask used as given (float: additive; bool/int: 1 where query i may read key j).
            encoder_hidden_states / encoder_attention_mask: (B, S, H) / (B, S) (the decoder).
            cache / past_key_values: the decoder's cache (one of the two names, see modules/cache.py),
                extended in place and returned; an encoder's key/value prefix (prefix tuning).
            use_cache: (the decoder) create and return a cache (default ``config.use_cache``).
            reads: what the caller reads of the encoder (:class:`~hf_variants.modules.heads.HeadReads`):
                here only whether it reads states at padding positions (the fast path then runs padded).
        Returns:
            BaseModelOutputWithPastAndCrossAttentions: last_hidden_state (B, T, H) (zeros at padding
            when the fast path packs the encoder), the cache, and hidden states / attentions (over
            past + T keys) / cross-attentions (B, heads, T, S) if asked.
        """
        config = self.config
        output_attentions = bool(output_attentions if output_attentions is not None else config.output_attentions)
        output_hidden_states = bool(
            output_hidden_states if output_hidden_states is not None else config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else config.return_dict
        # Input checks: a ValueError naming the first problem.
        if kwargs.get("token_type_ids") is not None:
            raise ValueError("token_type_ids were given but this model has no segment embeddings (type_vocab_size=0)")
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        main_name, main = ("input_ids", input_ids) if input_ids is not None else ("inputs_embeds", inputs_embeds)
        if main.dim() != (2 if input_ids is not None else 3):
            raise ValueError(
                f"{main_name} must be {'(batch, length)' if input_ids is not None else '(batch, length, hidden)'}, "
                f"got shape {tuple(main.shape)}"
            )
        batch, length = main.shape[:2]
        check_not_empty(main_name, tuple(main.shape), batch, length)
        if input_ids is not None:  # the live table size: resize_token_embeddings changes it
            check_index_range(input_ids, self.embeddings.word_embeddings.num_embeddings, "input_ids", "vocab_size")
        if config.is_decoder and encoder_hidden_states is None:
            raise ValueError("this decoder attends to an encoder: pass encoder_hidden_states")
        if not config.is_decoder and encoder_hidden_states is not None:
            raise ValueError("encoder_hidden_states were given but this model has no cross-attention layers")
        cache = pick_cache(cache, past_key_values, kwargs)  # one cache, under either name (or None)
        cache = self._prepare_cache(cache, use_cache)
        past_length = 0
        if cache is not None:
            self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
            past_length = self_cache.get_seq_length()
        if kwargs.get("cache_position") is not None:
            check_cache_positions(kwargs["cache_position"], past_length, length)
        if past_length:
            check_cache_batch(cache, batch)
        if attention_mask is None or attention_mask.dim() != 4:  # a 4-D mask is checked where it is read
            check_key_mask(attention_mask, batch, length, past_length, like=" like input_ids")

        # Embeddings, the masks and the position bias (once for every block), then the blocks. With
        # the speed plug-in the encoder runs on the real tokens alone (packed, modules/fast_path.py).
        # Checkpointed blocks make only positional tensors inputs of the checkpoint: the packed layout
        # hands its position bias (which carries gradient) inside PackedWithBias, so such a step runs padded.
        checkpointing = self.training and self.is_activation_checkpointing
        needs_every_layer = output_attentions or output_hidden_states or checkpointing
        layout = None
        if self.model_config.padding_free:  # the speed plug-in's rule (modules/fast_path.py)
            layout = self._packed_layout(attention_mask, batch, length, main.device, needs_every_layer, cache, reads)
        if layout is not None:
            hidden_states = self.embeddings(layout.to_packed(input_ids), layout.to_packed(inputs_embeds))
        else:
            hidden_states = self.embeddings(input_ids, inputs_embeds)
        dtype, device = hidden_states.dtype, hidden_states.device
        attention_bias = self._self_attention_bias(attention_mask, batch, length, past_length, dtype, device)
        if layout is not None:
            packed_output = self.encoder(hidden_states, PackedWithBias(layout.unpadded, attention_bias))[0]
            output = BaseModelOutputWithPastAndCrossAttentions(
                last_hidden_state=layout.to_padded(packed_output), **{CACHE_FIELD: None}
            )
            return output if return_dict else output.to_tuple()
        encoder_attention_bias = None
        if encoder_hidden_states is not None:
            check_key_mask(
                encoder_attention_mask, batch, encoder_hidden_states.shape[1], like=" like the encoder states"
            )
            encoder_attention_bias = make_attention_bias(encoder_attention_mask, hidden_states.dtype)
        hidden_states, all_hidden_states, all_attentions, all_cross_attentions = self.encoder(
            hidden_states,
            attention_bias,
            encoder_hidden_states,
            encoder_attention_bias,
            cache,
            output_attentions,
            output_hidden_states,
        )
        output = BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states,
            **{CACHE_FIELD: cache if config.is_decoder else None},  # the installed transformers' name (cache.py)
            hidden_states=all_hidden_states,
            attentions=all_attentions,
            cross_attentions=all_cross_attentions,
        )
        return output if return_dict else output.to_tuple()


class T5Model(T5PreTrainedModel):
    """The bare encoder-decoder: the encoder reads the source, the decoder the target (one word
    embedding matrix for both). Seq2SeqModelOutput with the decoder's last hidden state (B, T, H)."""

    _tied_weights_keys = {"decoder.embeddings.word_embeddings.weight": "encoder.embeddings.word_embeddings.weight"}

    def __init__(self, config: T5Config) -> None:
        super().__init__(config)
        self.config = config
        self.encoder = T5Stack(stack_config(config, is_decoder=False), config)
        self.decoder = T5Stack(stack_config(config, is_decoder=True))
        self.decoder.set_input_embeddings(self.encoder.get_input_embeddings())
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.set_input_embeddings(value)
        self.decoder.set_input_embeddings(value)

    def get_encoder(self, modality: str | None = None) -> T5Stack:
        return self.encoder

    def get_decoder(self) -> T5Stack:
        return self.decoder

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> Seq2SeqModelOutput | tuple:
        """Encode the source (unless ``encoder_outputs`` are given) and decode the target.

        Args:
            input_ids / inputs_embeds: (B, S) source ids / (B, S, E) embeddings.
            attention_mask: (B, S) source keep-mask (also the cross-attention mask).
            decoder_input_ids: (B, T) target ids, shifted right (see ``shift_tokens_right``).
            decoder_attention_mask: (B, past + T) target keep-mask, or a 4-D (B, 1, T, past + T)
                mask used as given (causality included).
            encoder_outputs: the encoder's output from an earlier call (generation reuses it).
            cache / past_key_values: the decoder's cache (one of the two names, see modules/cache.py).
        Returns:
            Seq2SeqModelOutput: last_hidden_state (B, T, H) of the decoder, the cache,
            encoder_last_hidden_state (B, S, H) and the optional hidden states / attentions.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if attention_mask is not None and attention_mask.dim() == 4:
            # The source mask is also the cross-attention's key padding, which a 4-D self-attention
            # mask does not give (transformers adds it to the cross-attention scores as it stands).
            raise ValueError(
                f"attention_mask has shape {tuple(attention_mask.shape)}: an encoder-decoder's attention_mask is the "
                "(batch, source_length) keep-mask its cross-attention reads. For a 4-D encoder mask run the encoder "
                "alone (model.get_encoder()(input_ids, attention_mask=mask_4d)) and pass encoder_outputs= with a "
                "(batch, source_length) attention_mask; the decoder takes a 4-D decoder_attention_mask"
            )
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                inputs_embeds=inputs_embeds,
                output_attentions=output_attentions,
                output_hidden_states=output_hidden_states,
                return_dict=True,
                token_type_ids=kwargs.get("token_type_ids"),  # refused there, by name
            )
        elif not isinstance(encoder_outputs, ModelOutput):  # a tuple from return_dict=False
            encoder_outputs = BaseModelOutput(*encoder_outputs)
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            raise ValueError("pass decoder_input_ids (or labels to a ...ForConditionalGeneration model)")
        cache = pick_cache(cache, past_key_values, kwargs)  # one cache, under either name (or None)
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            inputs_embeds=decoder_inputs_embeds,
            encoder_hidden_states=encoder_outputs.last_hidden_state,
            encoder_attention_mask=attention_mask,
            cache=cache,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            cache_position=kwargs.get("cache_position"),
        )
        output = Seq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            **{CACHE_FIELD: getattr(decoder_outputs, CACHE_FIELD)},
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
        )
        return output if return_dict else output.to_tuple()


# ----------------------------------------------------------------------------- heads
class T5ForConditionalGeneration(CheckedGenerationMixin, T5PreTrainedModel, GenerationMixin):
    """Text-to-text (and span-corruption pretraining): seq2seq LM loss from ``labels``, ``generate()``.

    The output layer is tied to the embeddings with the d_model^-0.5 rescale (v1.0, the
    embeddings have unit variance) or untied without it (v1.1); ``config.rescales_output`` says which.
    ``generate()`` is transformers' own, after refusing special ids outside the vocabulary
    (``modules/token_ids.py``)."""

    _tied_weights_keys = {
        "lm_head.weight": "transformer.encoder.embeddings.word_embeddings.weight",
        "transformer.decoder.embeddings.word_embeddings.weight": "transformer.encoder.embeddings.word_embeddings.weight",
    }
    label_smoothing: float = 0.0

    def __init__(self, config: T5Config) -> None:
        if config.embedding_size not in (None, config.hidden_size):
            raise ValueError(
                f"the LM head is tied to (vocab_size, hidden_size) word embeddings; embedding_size="
                f"{config.embedding_size} != hidden_size={config.hidden_size} needs a head that projects back to E"
            )
        super().__init__(config)
        self.transformer = T5Model(config)
        # Bias-free. With the speed switch, TiedDecoder builds the weight's gradient contiguous so the
        # tied embedding accumulates it in place, and decodes a few rows faster on CPU (modules/heads.py).
        self.lm_head = make_vocabulary_decoder(
            config.hidden_size, config.vocab_size, bias=False, cpu_kernel=config.padding_free
        )
        # v1.0 multiplies the decoder output by d_model^-0.5; fixed with the head's tying, so read once.
        self.rescales_output = config.rescales_output
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.transformer.set_input_embeddings(value)

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def get_encoder(self, modality: str | None = None) -> T5Stack:
        return self.transformer.encoder

    def get_decoder(self) -> T5Stack:
        return self.transformer.decoder

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """(B, T) labels -> decoder inputs, shifted right behind ``decoder_start_token_id``, -100
        replaced by the pad token (also used by transformers' DataCollatorForSeq2Seq)."""
        config = self.config
        return shift_tokens_right(labels, config.pad_token_id, config.decoder_start_token_id, config.vocab_size)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput | tuple:
        """Args as :meth:`T5Model.forward`, plus ``labels`` (B, T): target ids, -100 where nothing is
        predicted; without ``decoder_input_ids`` the decoder reads them shifted right. Returns
        Seq2SeqLMOutput: loss (mean token cross-entropy), logits (B, T, V), the cache and the
        encoder output (reused by ``generate``)."""
        past_key_values = pick_cache(cache, past_key_values, kwargs)  # one cache, under either name (or None)
        if labels is not None:
            if use_cache is None and past_key_values is None:
                use_cache = False  # training: no cache unless asked
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        out = self.transformer(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            cache=past_key_values,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            **{name: kwargs[name] for name in ("token_type_ids", "cache_position") if kwargs.get(name) is not None},
        )
        hidden_states = out.last_hidden_state
        if self.rescales_output:  # v1.0: unit-variance tied embeddings
            hidden_states = hidden_states * self.config.hidden_size**-0.5
        logits = self.lm_head(hidden_states)
        loss = lm_loss(logits, labels, self.label_smoothing) if labels is not None else None
        return finish_seq2seq(Seq2SeqLMOutput, return_dict, out, loss=loss, logits=logits)


class T5EncoderModel(T5PreTrainedModel):
    """The encoder alone (transformers' T5EncoderModel): BaseModelOutput (B, S, H)."""

    def __init__(self, config: T5Config, add_pooling_layer: bool = False) -> None:
        super().__init__(config)
        self.encoder = T5Stack(stack_config(config, is_decoder=False), config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.set_input_embeddings(value)

    def get_encoder(self, modality: str | None = None) -> T5Stack:
        return self.encoder

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPastAndCrossAttentions | tuple:
        """Args and output as :meth:`T5Stack.forward`; past_key_values: a key/value prefix for the encoder."""
        return self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values, **kwargs
        )


class T5ForTokenClassification(T5PreTrainedModel):
    """Per-token labels on the encoder states (dropout ``classifier_dropout``, linear).
    labels (B, T) class ids, -100 on ignored tokens; logits (B, T, num_labels)."""

    def __init__(self, config: T5Config) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = T5EncoderModel(config)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = make_dropout(dropout, config.padding_free)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.transformer.set_input_embeddings(value)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> TokenClassifierOutput | tuple:
        """Inputs (B, T); past_key_values: a key/value prefix (peft's prefix tuning) for the encoder."""
        # Labels at padding positions read states only the padded layout computes (modules/fast_path.py).
        reads = HeadReads(padding=targets_at_padding(labels, attention_mask, IGNORE_INDEX))
        out = self.transformer(
            input_ids=input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            past_key_values=past_key_values,
            reads=reads,
            **kwargs,
        )
        logits = self.classifier(self.dropout(out.last_hidden_state))
        loss = token_classification_loss(logits, labels) if labels is not None else None
        output = TokenClassifierOutput(
            loss=loss, logits=logits, hidden_states=out.hidden_states, attentions=out.attentions
        )
        return output if return_dict is not False else output.to_tuple()


class _T5EncoderDecoderHead(T5PreTrainedModel):
    """Heads reading the decoder over the source shifted right (transformers' T5 classification and QA)."""

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.get_input_embeddings()

    def _run(self, input_ids, attention_mask, decoder_input_ids, decoder_inputs_embeds, inputs_embeds, **kwargs):
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            if input_ids is None:
                raise ValueError("pass input_ids (the decoder reads them shifted right), or decoder_input_ids")
            check_batch_shape("input_ids", input_ids)  # before the shift indexes it
            decoder_input_ids = shift_tokens_right(
                input_ids, self.config.pad_token_id, self.config.decoder_start_token_id
            )
        return self.transformer(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_inputs_embeds=decoder_inputs_embeds,
            inputs_embeds=inputs_embeds,
            return_dict=True,
            **kwargs,
        )


class T5ForSequenceClassification(_T5EncoderDecoderHead):
    """Classification on the decoder state at each row's last EOS (every row needs the same number of EOS)."""

    def __init__(self, config: T5Config) -> None:
        super().__init__(config)
        self.transformer = T5Model(config)
        self.classification_head = SummaryClassifier(
            config.hidden_size, config.num_labels, config.classifier_dropout or 0.0
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs=None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> Seq2SeqSequenceClassifierOutput | tuple:
        """input_ids (B, S) with EOS tokens; labels (B,) (see sequence_classification_loss). Logits (B, num_labels)."""
        if input_ids is None:
            raise ValueError("T5ForSequenceClassification needs input_ids: it reads the state at the last EOS token")
        check_batch_shape("input_ids", input_ids)  # before the eos count reads it
        check_index_range(input_ids, self.config.vocab_size, "input_ids", "vocab_size")
        if decoder_input_ids is not None and decoder_input_ids.shape[-1] != input_ids.shape[-1]:
            raise ValueError(
                f"decoder_input_ids has length {decoder_input_ids.shape[-1]} but input_ids {input_ids.shape[-1]}: the classifier "
                "reads the decoder state at the input's last EOS, so leave decoder_input_ids out (they are input_ids shifted right)"
            )
        eos = input_ids.eq(self.config.eos_token_id)
        eos_counts = eos.sum(dim=1)
        if not is_tracing() and (int(eos_counts.min()) == 0 or int(eos_counts.max()) != int(eos_counts.min())):
            raise ValueError(
                f"every row must contain the same number (>= 1) of eos tokens (id {self.config.eos_token_id}); "
                f"counts per row: {eos_counts.tolist()}"
            )
        out = self._run(
            input_ids,
            attention_mask,
            decoder_input_ids,
            decoder_inputs_embeds,
            inputs_embeds,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            use_cache=False if labels is not None else use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
        )
        hidden = out.last_hidden_state
        last_eos = eos.shape[1] - 1 - eos.flip(1).int().argmax(dim=1)  # (B,)
        summary = hidden[torch.arange(hidden.shape[0], device=hidden.device), last_eos]
        logits = self.classification_head(summary, None)
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return finish_seq2seq(Seq2SeqSequenceClassifierOutput, return_dict, out, loss=loss, logits=logits)


class T5ForQuestionAnswering(_T5EncoderDecoderHead):
    """Extractive QA on the decoder states over the source shifted right: start/end logits (B, S)."""

    def __init__(self, config: T5Config) -> None:
        if config.num_labels != 2:
            raise ValueError(
                f"question answering predicts start and end logits: num_labels must be 2, got {config.num_labels}"
            )
        super().__init__(config)
        self.transformer = T5Model(config)
        self.qa_outputs = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs=None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> Seq2SeqQuestionAnsweringModelOutput | tuple:
        """start_positions / end_positions (B,) source token indices. Logits (B, T) each."""
        training = start_positions is not None and end_positions is not None
        out = self._run(
            input_ids,
            attention_mask,
            decoder_input_ids,
            decoder_inputs_embeds,
            inputs_embeds,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            use_cache=False if training else use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
        )
        start_logits, end_logits = (
            x.squeeze(-1).contiguous() for x in self.qa_outputs(out.last_hidden_state).split(1, dim=-1)
        )
        loss = span_extraction_loss(start_logits, end_logits, start_positions, end_positions) if training else None
        return finish_seq2seq(
            Seq2SeqQuestionAnsweringModelOutput,
            return_dict,
            out,
            loss=loss,
            start_logits=start_logits,
            end_logits=end_logits,
        )
