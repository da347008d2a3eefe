"""XLNet (Yang et al. 2019), top to bottom: a post-LN Transformer-XL encoder trained by permutation
language modelling with two-stream attention.

The order data flows, and where each step is written:

1. the word embedding of the tokens (the content stream h) and the learned ``mask_emb`` at the
   ``target_mapping`` positions (the query stream g): :meth:`XLNetModel.forward`;
2. relative positional encodings, sinusoids of the distance i - j (bidirectional or causal,
   clamped to ``clamp_len``, both directions with ``bi_data``): :func:`relative_positional_encodings`;
3. :class:`XLNetRelativeAttention`, the two-stream attention the paper introduces (sec. 2.3):
   both streams read the same keys and values (memory + content stream), scored by
   ``(q + r_w_bias)·k + (q + r_r_bias)·W_r R_{i-j} + (q + r_s_bias)·s_ij`` (content, position and
   relative segment terms); the content stream may see its own token, the query stream never;
4. :class:`XLNetFeedForward`, then :class:`XLNetLayer` (post-LN residuals, each stream);
5. the stack with segment memories (``mems``, :class:`~hf_variants.modules.memory.SegmentMemory`)
   in :meth:`XLNetModel.forward`;
6. the heads: :class:`XLNetLMHeadModel` (``perm_mask`` / ``target_mapping``, the permutation LM
   loss, generation) and the summary, token, QA and multiple-choice heads.

Shared blocks used: the mask builders and checks (``modules/masks.py``: ``two_stream_biases``),
the input and label checks and losses (``embeddings.py``, ``heads.py``), the segment memory
(``memory.py``). Everything runs in the padded layout, where relative positions and permutation
masks are defined.

The CPU speed path (``config.padding_free``, on by default, CPU inputs only; off: the plain path
above) changes two things, both written at the end of the model section: left-padded plain
encodings run in length buckets (:class:`LengthBucketPath`: exact at real tokens, zeros at
padding), and dropout draws its masks with ``modules/dropout.py``'s cheaper CPU kernel
(:class:`XLNetDropout`: the same distribution, another random stream, so a seeded training step
drops other elements on the two paths; in eval mode the paths agree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.models.xlnet.modeling_xlnet import (
    XLNetForMultipleChoiceOutput,
    XLNetForQuestionAnsweringSimpleOutput,
    XLNetForSequenceClassificationOutput,
    XLNetForTokenClassificationOutput,
    XLNetLMHeadModelOutput,
    XLNetModelOutput,
)

from ...modules.dropout import dropout as cpu_dropout
from ...modules.embeddings import embed_token_ids
from ...modules.fast_path import HeadReads, fast_path_enabled
from ...modules.heads import (
    IGNORE_INDEX,
    check_class_labels,
    choice_count,
    cross_entropy_or_zero,
    flatten_choices,
    multiple_choice_loss,
    sequence_classification_loss,
    span_extraction_loss,
    token_classification_loss,
)
from ...modules.masks import (
    check_mask_values,
    is_left_padded,
    summary_positions,
    targets_at_padding,
    two_stream_biases,
    worth_unpadding,
)
from ...modules.memory import MemoryGenerationMixin, SegmentMemory
from ...modules.norms import build_norm
from ...modules.padding import bucket_rows
from ...modules.relative_attention import KeyValuePrefix
from ...modules.tracing import is_tracing
from ..modeling_base import VariantPreTrainedModel
from .configuration_xlnet import XLNetConfig


def uses_speed_path(config: XLNetConfig, device: torch.device) -> bool:
    """The switch of the CPU speed plug-in (``config.padding_free`` and a CPU input, as
    ``modules/fast_path.py`` decides it), read there only when the config turns it on: the plain
    path does not enter the plug-in."""
    return bool(config.padding_free) and fast_path_enabled(config, device)


class XLNetDropout(nn.Dropout):
    """``nn.Dropout`` (one rate, ``p``; no state). On the CPU speed path (:func:`uses_speed_path`)
    in training, the mask comes from ``modules/dropout.py``'s kernel (``uniform >= p`` instead of
    ``bernoulli_``: the same distribution, about 2.5x cheaper on CPU, another random stream)."""

    def __init__(self, p: float, config: XLNetConfig) -> None:
        super().__init__(p)
        self.config = config

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Any shape -> the same shape."""
        if self.training and self.p > 0.0 and uses_speed_path(self.config, inputs.device):
            return cpu_dropout(inputs, self.p, True)
        return F.dropout(inputs, self.p, self.training)


# ---------------------------------------------------------------------------- relative positions
# Transformer-XL's copy of these two functions lives in modules/relative_attention.py; XLNet's are
# written out here so that its file shows its position scheme (same maths, same results).
def sinusoids(distances: torch.Tensor, width: int) -> torch.Tensor:
    """(R,) relative distances -> (R, width) encodings [sin(d w_k) | cos(d w_k)], w_k = 10000^(-2k/width)."""
    inverse_frequency = 1.0 / torch.pow(10000, torch.arange(0, width, 2, device=distances.device).float() / width)
    angles = distances[:, None] * inverse_frequency
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def relative_positional_encodings(
    config: XLNetConfig, length: int, key_length: int, batch: int, device: torch.device
) -> torch.Tensor:
    """Sinusoids of the distances from ``key_length`` (the oldest memory key) down to -length + 1
    (``attn_type="bi"``: later tokens too) or 0 (``"uni"``: the future is masked anyway), clamped
    to [-clamp_len, clamp_len] when ``clamp_len`` > 0: (1, R, H). With ``bi_data`` (pretraining),
    (B, R, H): the second half of the batch reads the distances negated (the sequence backwards)."""
    end = -length if config.attn_type == "bi" else -1
    forward_distances = torch.arange(key_length, end, -1, device=device).float()
    directions = [forward_distances, -forward_distances] if config.bi_data else [forward_distances]
    if config.clamp_len > 0:
        directions = [d.clamp(-config.clamp_len, config.clamp_len) for d in directions]
    encodings = [sinusoids(d, config.hidden_size)[None] for d in directions]
    if not config.bi_data:
        return encodings[0]
    if batch % 2:
        raise ValueError(f"bi_data splits the batch into a forward and a backward half: batch size {batch} is odd")
    return torch.cat([e.expand(batch // 2, -1, -1) for e in encodings], dim=0)


def relative_shift(scores: torch.Tensor, key_length: int) -> torch.Tensor:
    """(B, h, T, R) scores against R relative encodings (distances from R - T down) -> (B, h, T, S
    = key_length), entry (i, j) the score against distance (S - T + i) - j: row i moves left by
    T - i (Transformer-XL's trick: view the matrix with its last two axes swapped, drop the first
    row, view it back; no gather)."""
    batch, heads, length, relative = scores.shape
    shifted = scores.reshape(batch, heads, relative, length)[:, :, 1:]
    return shifted.reshape(batch, heads, length, relative - 1)[..., :key_length]


# ---------------------------------------------------------------------------- attention
class XLNetRelativeAttention(nn.Module):
    """XLNet's two-stream relative self-attention (Yang et al. 2019, sec. 2.3; Transformer-XL's
    relative attention, Dai et al. 2019, sec. 3.3, plus the relative segment term).

    The content stream h (B, T, H) is what Transformer-XL computes: it sees its own token. The
    query stream g (B, P, H) knows a position but not its token: it reads the same keys and values
    (memory + content stream, projected once) with the same projections; only its queries and
    its mask differ (it never sees its own token). The score of query i against key j is

        A_ij = [(q_i + u)·k_j + (q_i + v)·W_r R_{i-j} + (q_i + b)·s_ij] / sqrt(D)

    with ``u = r_w_bias``, ``v = r_r_bias``, ``b = r_s_bias``, R the relative sinusoids and s_ij one
    of the two ``seg_embed`` vectors (same segment or not).

    Parameters (transformers' layout, loadable by renaming alone): ``q k v o r`` (H, heads, D),
    ``r_w_bias r_r_bias r_s_bias`` (heads, D), ``seg_embed`` (2, heads, D).
    """

    adapter_role = "attention"  # no nn.Linear to adapt: peft's defaults fall back to the FFN (peft_targets.py)

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__()
        self.config = config  # its _attn_implementation: "eager" or "sdpa"
        self.num_heads = config.num_attention_heads
        if config.head_dim is None and config.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size ({config.hidden_size}) must be divisible by num_attention_heads ({self.num_heads})"
            )
        self.head_dim = config.head_dim or config.hidden_size // self.num_heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        shape = (config.hidden_size, self.num_heads, self.head_dim)
        self.q, self.k, self.v, self.o, self.r = (nn.Parameter(torch.empty(shape)) for _ in range(5))
        self.r_w_bias, self.r_r_bias, self.r_s_bias = (
            nn.Parameter(torch.empty(self.num_heads, self.head_dim)) for _ in range(3)
        )
        self.seg_embed = nn.Parameter(torch.empty(2, self.num_heads, self.head_dim))
        self.dropout = XLNetDropout(config.hidden_dropout_prob, config)  # on the attention probabilities

    @staticmethod
    def _heads(states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """(B, T, H) @ (H, heads, D) -> (B, heads, T, D)."""
        return torch.einsum("bth,hnd->bntd", states, weight)

    def keys_values(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S, H) memory + content states -> keys and values (B, heads, S, D)."""
        return self._heads(states, self.k), self._heads(states, self.v)

    def _output(self, context: torch.Tensor) -> torch.Tensor:
        """(B, heads, T, D) -> (B, T, H) through ``o``."""
        return torch.einsum("bntd,hnd->bth", context, self.o)

    def _attend(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        position_keys: torch.Tensor,
        different_segment: torch.Tensor | None,
        mask_bias: torch.Tensor | None,
        output_attentions: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One stream: query (B, heads, T, D) against key/value (B, heads, S, D), ``position_keys``
        (1 or B, heads, R, D), ``different_segment`` (B, 1, T, S) 1.0 where query and key lie in
        different segments, ``mask_bias`` (B or 1, 1, T, S) additive -> context (B, heads, T, D) and
        the attention probabilities (eager only, else None)."""
        # The position term, computed once per query against every distance, aligned to (i, j).
        position = relative_shift(
            torch.matmul(query + self.r_r_bias[:, None], position_keys.transpose(-1, -2)), key.shape[2]
        )
        if different_segment is not None:  # the relative segment term: same segment or not
            segment = torch.einsum("bntd,snd->bnts", query + self.r_s_bias[:, None], self.seg_embed)
            same, different = segment[..., :1], segment[..., 1:]
            position = position + same * (1.0 - different_segment) + different * different_segment
        bias = position * self.scale
        if mask_bias is not None:
            bias = mask_bias + bias
        # The content term: the attention kernel's own q·k, with the query shifted by r_w_bias.
        content_query = query + self.r_w_bias[:, None]
        dropout_p = self.dropout.p if self.training else 0.0
        cpu_kernel = dropout_p > 0.0 and uses_speed_path(self.config, query.device)  # SDPA has none on CPU
        if self.config._attn_implementation == "eager" or output_attentions or cpu_kernel:
            scores = torch.matmul(content_query, key.transpose(-1, -2)) * self.scale + bias
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
            return torch.matmul(self.dropout(probs), value), probs
        context = F.scaled_dot_product_attention(
            content_query, key, value, attn_mask=bias, dropout_p=dropout_p, scale=self.scale
        )
        return context, None

    def forward(
        self,
        content: torch.Tensor,
        query_stream: torch.Tensor | None,
        memory: torch.Tensor | None,
        encodings: torch.Tensor,
        different_segment: torch.Tensor | None,
        content_bias: torch.Tensor | None,
        query_bias: torch.Tensor | None,
        target_mapping: torch.Tensor | None,
        key_value_prefix: tuple[torch.Tensor, torch.Tensor] | None,
        output_attentions: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor | None, ...]]:
        """content (B, T, H) and query_stream (B, P, H) or None; memory (B, M, H) or None;
        encodings (1 or B, M + 2T or M + T + 1, H); content_bias / query_bias (B or 1, 1, T, K + T)
        over the K = prefix + memory keys and the tokens; target_mapping (B, P, T): each of the P
        queries sits at the position it predicts; key_value_prefix: keys and values (B, heads, P',
        D) of a learned prefix in front of the memory (:class:`KeyValuePrefix`). Returns the
        content output (B, T, H), the query output (B, P, H) or None, and the attention maps
        (content,) or (content, query)."""
        # Keys and values: [prefix; memory; content stream], shared by both streams.
        keys_from = content if memory is None else torch.cat([memory.to(content.dtype), content], dim=1)
        key, value = self.keys_values(keys_from)
        if key_value_prefix is not None:
            prefix_key, prefix_value = key_value_prefix
            key = torch.cat([prefix_key.to(key.dtype), key], dim=2)
            value = torch.cat([prefix_value.to(value.dtype), value], dim=2)
        position_keys = self._heads(encodings, self.r)

        # The content stream: h_i attends to every visible key, itself included.
        context, probs = self._attend(
            self._heads(content, self.q), key, value, position_keys, different_segment, content_bias, output_attentions
        )
        if query_stream is None:
            return self._output(context), None, (probs,)

        # The query stream: g at the positions it predicts, attending to the same keys, never its own.
        query = self._heads(query_stream, self.q)
        if target_mapping is not None:  # (B, heads, P, D) -> (B, heads, T, D)
            query = torch.einsum("bnpd,bpt->bntd", query, target_mapping)
        query_context, query_probs = self._attend(
            query, key, value, position_keys, different_segment, query_bias, output_attentions
        )
        if target_mapping is not None:
            query_context = torch.einsum("bntd,bpt->bnpd", query_context, target_mapping)
        return self._output(context), self._output(query_context), (probs, query_probs)


class XLNetFeedForward(nn.Module):
    """up -> activation -> dropout -> down: (..., H) -> (..., H)."""

    adapter_role = "feed_forward"  # what peft adapts by default (hf_variants.integrations.peft_targets)

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__()
        if config.hidden_act not in ACT2FN:
            raise ValueError(f"unknown activation {config.hidden_act!r}; choose one of {sorted(ACT2FN)}")
        self.up = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = ACT2FN[config.hidden_act]
        self.inner_dropout = XLNetDropout(config.hidden_dropout_prob, config)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.down(self.inner_dropout(self.activation(self.up(hidden_states))))


class XLNetLayer(GradientCheckpointingLayer):
    """Two-stream attention, then for each stream: dropout -> residual -> LayerNorm, the FFN ->
    dropout -> residual -> LayerNorm (post-LN; both streams share every weight)."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__()
        self.attention = XLNetRelativeAttention(config)
        self.attention_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.ffn = XLNetFeedForward(config)
        self.ffn_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.dropout = XLNetDropout(config.hidden_dropout_prob, config)

    def _post_attention(self, stream: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """Attention output (B, T, H) + the residual ``stream`` (B, T, H) -> the layer's output."""
        hidden = self.attention_norm(stream + self.dropout(attended))
        return self.ffn_norm(hidden + self.dropout(self.ffn(hidden)))

    def forward(
        self,
        content: torch.Tensor,
        query_stream: torch.Tensor | None,
        memory: torch.Tensor | None,
        encodings: torch.Tensor,
        different_segment: torch.Tensor | None,
        content_bias: torch.Tensor | None,
        query_bias: torch.Tensor | None,
        target_mapping: torch.Tensor | None,
        key_value_prefix: tuple[torch.Tensor, torch.Tensor] | None,
        output_attentions: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple]:
        """The arguments of :meth:`XLNetRelativeAttention.forward` -> the new content stream
        (B, T, H), the new query stream (B, P, H) or None, and the attention maps."""
        content_attended, query_attended, probs = self.attention(
            content,
            query_stream,
            memory,
            encodings,
            different_segment,
            content_bias,
            query_bias,
            target_mapping,
            key_value_prefix,
            output_attentions,
        )
        new_content = self._post_attention(content, content_attended)
        if query_stream is None:
            return new_content, None, probs
        return new_content, self._post_attention(query_stream, query_attended), probs


# ---------------------------------------------------------------------------- the model
class XLNetPreTrainedModel(VariantPreTrainedModel):
    config_class = XLNetConfig
    _no_split_modules = ["XLNetLayer"]
    base_model_prefix = "transformer"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        std = self.config.initializer_range
        if isinstance(module, XLNetRelativeAttention):
            for parameter in module.parameters(recurse=False):  # every tensor: N(0, initializer_range)
                init.normal_(parameter, mean=0.0, std=std)
        elif isinstance(module, XLNetModel):
            init.normal_(module.mask_emb, mean=0.0, std=std)


@dataclass
class XLNetBackboneOutput(XLNetModelOutput):
    """transformers' XLNetModelOutput, plus an always-None ``pooler_output`` (XLNet has no pooler;
    kept for callers that read the field of every encoder)."""

    pooler_output: torch.Tensor | None = None


def _return(output, return_dict: bool | None):
    """A ModelOutput, or its tuple with ``return_dict=False`` (None means the default, a ModelOutput)."""
    return output if return_dict is not False else output.to_tuple()


def check_shape(tensor: torch.Tensor, expected: tuple[int, ...], name: str) -> None:
    if tuple(tensor.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {tuple(expected)}")


class XLNetModel(XLNetPreTrainedModel):
    """The bare two-stream encoder. ``last_hidden_state`` is the query stream at the
    ``target_mapping`` predictions (B, P, H) when one is given, else the content stream (B, T, H)."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__(config)
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.mask_emb = nn.Parameter(torch.empty(1, 1, config.hidden_size))  # the query stream's start
        self.layers = nn.ModuleList(XLNetLayer(config) for _ in range(config.num_hidden_layers))
        self.dropout = XLNetDropout(config.hidden_dropout_prob, config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.word_embeddings = value

    @staticmethod
    def split_memory_mask(
        attention_mask: torch.Tensor | None, prefix: KeyValuePrefix | None, mems, length: int
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """``attention_mask`` (B, T), or (B, P + M + T) covering the keys in front of the tokens too
        (a key/value prefix's P, then the M positions of ``mems``: what ``generate()`` passes for a
        left-padded batch, whose padding sits in the memory after the first step) -> the (B, P + M)
        visibility of those keys (None: all visible) and the tokens' (B, T) mask. Raises ValueError
        for any other width."""
        if attention_mask is None or attention_mask.shape[-1] == length:
            return None, attention_mask
        memory_length = mems[0].shape[0] if mems is not None and len(mems) and mems[0] is not None else 0
        in_front = (prefix.length if prefix is not None else 0) + memory_length
        if attention_mask.shape[-1] != in_front + length:
            raise ValueError(
                f"attention_mask has {attention_mask.shape[-1]} columns: expected the {length} tokens, or the "
                f"{in_front} key/value prefix and memory (mems) positions followed by them ({in_front + length})"
            )
        return attention_mask[:, :in_front], attention_mask[:, in_front:]

    @staticmethod
    def segment_differences(
        token_type_ids: torch.Tensor | None, memory_length: int, dtype: torch.dtype
    ) -> torch.Tensor | None:
        """(B, T) segment ids -> (B, 1, T, M + T) 1.0 where query and key lie in different segments
        (memory positions count as segment 0)."""
        if token_type_ids is None:
            return None
        keys = F.pad(token_type_ids, (memory_length, 0))
        return (token_type_ids[:, :, None] != keys[:, None, :]).to(dtype)[:, None]

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        reads: HeadReads | None = None,
        **kwargs,
    ) -> XLNetBackboneOutput | tuple:
        """transformers' XLNetModel arguments and outputs.

        Args:
            input_ids: (B, T) (or ``inputs_embeds`` (B, T, H)).
            attention_mask: (B, T) 1 for real tokens (or ``input_mask``: 1 for padding).
            mems: one (M, B, H) tensor per layer from an earlier call (time first, as transformers).
            perm_mask: (B, T, T) 1 where token i may not see token j (the factorization order).
            target_mapping: (B, P, T) one-hot: the P positions the query stream predicts.
            token_type_ids: (B, T) segment ids (only equality between two tokens matters).
            use_mems: return the next segment's ``mems`` (default: config.use_mems_eval /
                use_mems_train by training mode).
            past_key_values: a transformers Cache holding P keys/values per layer, a
                learned memory in front of ``mems`` (peft's prefix tuning; see KeyValuePrefix);
                ``attention_mask`` may then cover P + T.
            reads: what the caller reads of the output (:class:`~hf_variants.modules.fast_path.HeadReads`).
                XLNet computes every position; only ``reads.padding`` (the caller reads states at
                padding positions) matters, to the speed path (:class:`LengthBucketPath`), which
                leaves zeros there.
            kwargs: ignored, as transformers' XLNetModel does, except ``position_ids`` (XLNet has
                none: a ValueError).
        """
        config = self.config
        if kwargs.get("position_ids") is not None:
            raise ValueError("XLNet has no position_ids: positions are relative")
        reads = reads or HeadReads()
        if reads.positions is not None or reads.summary_only:
            raise ValueError("XLNet computes every position: reads may only say whether padding positions are read")
        output_attentions = config.output_attentions if output_attentions is None else output_attentions
        output_hidden_states = config.output_hidden_states if output_hidden_states is None else output_hidden_states
        return_dict = config.return_dict if return_dict is None else return_dict
        if use_mems is None:
            use_mems = config.use_mems_train if self.training else config.use_mems_eval

        # 1. The content stream's input: the word embedding (or inputs_embeds), checked.
        inputs_embeds = embed_token_ids(self.word_embeddings, input_ids, inputs_embeds, config.hidden_size)
        batch, length = inputs_embeds.shape[:2]
        device, dtype = inputs_embeds.device, inputs_embeds.dtype
        if token_type_ids is not None:
            check_shape(token_type_ids, (batch, length), "token_type_ids")
        if target_mapping is not None and (
            target_mapping.dim() != 3 or tuple(target_mapping.shape[::2]) != (batch, length)
        ):
            raise ValueError(
                f"target_mapping must be (batch={batch}, num_predict, length={length}), got {tuple(target_mapping.shape)}"
            )
        check_mask_values(attention_mask)  # 0/1 only, before the length buckets count real tokens
        prefix = past_key_values
        if prefix is not None:
            prefix = KeyValuePrefix(
                prefix, config.num_hidden_layers, batch, config.num_attention_heads, self.layers[0].attention.head_dim
            )
        memory_mask, attention_mask = self.split_memory_mask(attention_mask, prefix, mems, length)
        if uses_speed_path(config, device) and LENGTH_BUCKETS.applies(
            self,
            attention_mask,
            prefix,
            mems,
            perm_mask,
            target_mapping,
            use_mems or output_attentions or output_hidden_states,
            reads,
        ):
            return _return(LENGTH_BUCKETS.encode(self, inputs_embeds, attention_mask, token_type_ids), return_dict)

        # 2. The memory of earlier segments: transformers' (M, B, H) per layer <-> SegmentMemory's (B, M, H).
        if mems is not None and (len(mems) == 0 or mems[0] is None):
            mems = None
        memory = SegmentMemory(
            None if mems is None else [m.transpose(0, 1) for m in mems],
            config.num_hidden_layers,
            mem_len=config.mem_len or None,  # transformers keeps everything for mem_len None or 0
            reuse_length=config.reuse_len or None,
        )
        memory.check_batch(batch, config.hidden_size)
        memory_length = memory.length + (prefix.length if prefix is not None else 0)  # the prefix comes first

        # 3. What each stream may see (padding, perm_mask, causality) and the relative inputs.
        content_bias, query_bias = two_stream_biases(
            attention_mask,
            input_mask,
            perm_mask,
            batch,
            length,
            memory_length,
            device,
            dtype,
            causal=config.attn_type == "uni",
            same_length=config.same_length,
            memory_mask=memory_mask,
        )
        different_segment = self.segment_differences(token_type_ids, memory_length, dtype)
        encodings = relative_positional_encodings(config, length, memory_length + length, batch, device)
        encodings = self.dropout(encodings.to(dtype))

        # 4. The two streams: h from the tokens, g from mask_emb at the positions predicted.
        content = self.dropout(inputs_embeds)
        query_stream = None
        if target_mapping is not None:
            target_mapping = target_mapping.to(dtype)
            query_stream = self.dropout(self.mask_emb.expand(batch, target_mapping.shape[1], -1))

        # 5. The stack: each layer reads its memory (the states that entered it on earlier segments).
        all_hidden, all_attentions = [], []
        for depth, layer in enumerate(self.layers):
            memory.record(depth, content)
            if output_hidden_states:
                all_hidden.extend([content] if query_stream is None else [content, query_stream])
            content, query_stream, probs = layer(
                content,
                query_stream,
                memory.layer(depth),
                encodings,
                different_segment,
                content_bias,
                query_bias,
                target_mapping,
                None if prefix is None else prefix.layer(depth),
                output_attentions,
            )
            if output_attentions:
                all_attentions.append(probs[0] if query_stream is None else probs)
        if output_hidden_states:
            all_hidden.extend([content] if query_stream is None else [content, query_stream])
        output = self.dropout(content if query_stream is None else query_stream)
        new_mems = tuple(m.transpose(0, 1) for m in memory.updated()) if use_mems else None
        result = XLNetBackboneOutput(
            last_hidden_state=output,
            mems=new_mems,
            hidden_states=tuple(all_hidden) if output_hidden_states else None,
            attentions=tuple(all_attentions) if output_attentions else None,
        )
        return result if return_dict else result.to_tuple()


# ---------------------------------------------------------------------------- the speed path
class LengthBucketPath:
    """The CPU speed path of XLNet's encoder (``config.padding_free``): the rows of a left-padded
    batch grouped by length (:func:`~hf_variants.modules.padding.bucket_rows`), each group encoded
    by the plain forward cut to its own longest row, so the padding a group does not need costs
    nothing. Stateless; one instance serves every model.

    Exact at real tokens: every term of XLNet's attention depends on positions only through
    i - j, so dropping padding keys (masked anyway) from the left changes nothing; the outputs at
    padding positions are zeros, as on the encoders' padding-free path."""

    @staticmethod
    def applies(
        model: XLNetModel,
        attention_mask: torch.Tensor | None,
        prefix: KeyValuePrefix | None,
        mems,
        perm_mask: torch.Tensor | None,
        target_mapping: torch.Tensor | None,
        outputs_per_layer_or_memory: bool,
        reads: HeadReads,
    ) -> bool:
        """A plain bidirectional encoding (no prefix or memory in, no memory, per-layer states or
        attention maps out, no permutation or targets, no ``bi_data``) of a left-padded batch (every
        row ends at the last position, as XLNet's tokenizer pads) with enough padding to be worth it,
        whose caller does not read padding positions."""
        config = model.config
        if attention_mask is None or is_tracing():  # the buckets read mask values: traced graphs run padded
            return False
        if prefix is not None or mems is not None or perm_mask is not None or target_mapping is not None:
            return False
        if outputs_per_layer_or_memory or reads.padding or config.attn_type != "bi" or config.bi_data:
            return False
        return is_left_padded(attention_mask) and worth_unpadding(attention_mask)

    @staticmethod
    def encode(
        model: XLNetModel,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None,
    ) -> XLNetBackboneOutput:
        """inputs_embeds (B, T, H), attention_mask (B, T) -> last_hidden_state (B, T, H), zeros at padding."""
        batch, length, hidden = inputs_embeds.shape
        lengths = attention_mask.sum(dim=1).tolist()
        output = inputs_embeds.new_zeros(batch, length, hidden)
        for rows in bucket_rows(lengths):
            index = torch.tensor(rows, device=inputs_embeds.device)
            window = slice(length - max(lengths[row] for row in rows), length)
            mask = attention_mask[index, window]
            part = model(
                inputs_embeds=inputs_embeds[index, window],
                attention_mask=mask,
                use_mems=False,
                return_dict=True,
                token_type_ids=None if token_type_ids is None else token_type_ids[index, window],
                reads=HeadReads(padding=True),  # each bucket runs the plain padded forward
            ).last_hidden_state
            output[index, window] = part * mask[..., None].to(part.dtype)
        return XLNetBackboneOutput(last_hidden_state=output)


LENGTH_BUCKETS = LengthBucketPath()


# ---------------------------------------------------------------------------- heads
class XLNetLMHeadModel(XLNetPreTrainedModel, MemoryGenerationMixin, GenerationMixin):
    """Permutation LM head: logits = h W_emb^T + b at the ``target_mapping`` predictions (B, P, V)
    (or every position (B, T, V) without one); loss = cross-entropy against ``labels`` (B, P)
    (or (B, T)), -100 ignored. Batches come from ``hf_variants.objectives.DataCollatorForPermutationLM``."""

    _tied_weights_keys = {"lm_loss.weight": "transformer.word_embeddings.weight"}

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__(config)
        self.transformer = XLNetModel(config)
        self.lm_loss = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    # generate(): each step appends a dummy token that no other token sees and predicts it through
    # the query stream; with mems only the last ``GENERATION_OVERLAP`` tokens are recomputed
    # (transformers' XLNet does the same, so greedy generation matches it token for token).
    GENERATION_OVERLAP = 2

    def prepare_inputs_for_generation(
        self, input_ids, mems=None, use_mems=None, attention_mask=None, token_type_ids=None, **kwargs
    ) -> dict:
        """One step's inputs: the text (B, L) so far, or with ``mems`` (the previous step's memories,
        see MemoryGenerationMixin) its last ``GENERATION_OVERLAP`` tokens, then the dummy token.

        ``token_type_ids`` (B, L) (the tokenizer's, which generate() extends by repeating the last
        column for every new token) get the dummy's column likewise: the predicted token continues
        the segment it follows. ``attention_mask`` (B, L) (generate() appends ones) is honoured at
        every step: after the first, a left-padded row's padding lies in the memory, so the mask
        then covers the memory's positions too (see XLNetModel.split_memory_mask). Right-padded
        prompts raise ValueError (each prediction follows the last position)."""
        self.check_no_key_value_cache(kwargs)
        batch, seen = input_ids.shape
        window = slice(seen - self.GENERATION_OVERLAP if mems else 0, seen)
        input_ids = torch.cat([input_ids[:, window], input_ids.new_zeros(batch, 1)], dim=1)
        length = input_ids.shape[1]
        perm_mask = torch.zeros(batch, length, length, device=input_ids.device)
        perm_mask[:, :, -1] = 1.0  # nobody reads the dummy token
        target_mapping = torch.zeros(batch, 1, length, device=input_ids.device)
        target_mapping[:, 0, -1] = 1.0  # predict it
        inputs = {
            "input_ids": input_ids,
            "perm_mask": perm_mask,
            "target_mapping": target_mapping,
            "use_mems": use_mems,
        }
        if mems:
            # The overlap is recomputed: drop it from the memory.
            inputs["mems"] = tuple(layer[: -self.GENERATION_OVERLAP] for layer in mems)
        if token_type_ids is not None:
            inputs["token_type_ids"] = torch.cat([token_type_ids[:, window], token_type_ids[:, -1:]], dim=1)
        if attention_mask is not None and not bool(attention_mask.all()):
            if not is_left_padded(attention_mask):  # the dummy token would follow a short row's padding
                raise ValueError(
                    "XLNet generates after each prompt's last position: pad the prompts on the left "
                    "(tokenizer.padding_side = 'left', as XLNet's tokenizer does), not on the right"
                )
            mask = torch.cat([attention_mask[:, window], attention_mask.new_ones(batch, 1)], dim=1)
            if mems:
                # The memory holds the states of the tokens right before the window (the last
                # mem_len of them); positions older than the mask (mems passed in) were real text.
                memory_length = inputs["mems"][0].shape[0]
                before = attention_mask[:, : window.start]
                before = before[:, before.shape[1] - min(memory_length, before.shape[1]) :]
                mask = torch.cat([F.pad(before, (memory_length - before.shape[1], 0), value=1), mask], dim=1)
            inputs["attention_mask"] = mask
        # generate()'s bookkeeping (cache, positions, step flags) is not an XLNet input
        skipped = {
            "use_cache",
            "cache",
            "past_key_values",
            "cache_position",
            "position_ids",
            "next_sequence_length",
            "is_first_iteration",
        }
        inputs.update({key: value for key, value in kwargs.items() if key not in skipped and key not in inputs})
        return inputs

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_loss

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_loss = new_embeddings

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> XLNetLMHeadModelOutput | tuple:
        """transformers' XLNetLMHeadModel arguments (see :meth:`XLNetModel.forward`); labels (B, T)
        or, with ``target_mapping``, (B, P): the ids at the positions predicted (not shifted).
        ``past_key_values``: a key/value prefix (peft's prefix tuning)."""
        # Labels at padding positions are read from states only the padded layout computes.
        reads_padding = (
            labels is not None
            and uses_speed_path(self.config, labels.device)
            and targets_at_padding(labels, attention_mask, IGNORE_INDEX)
        )
        out = self.transformer(
            input_ids,
            attention_mask=attention_mask,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            token_type_ids=token_type_ids,
            input_mask=input_mask,
            inputs_embeds=inputs_embeds,
            use_mems=use_mems,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            past_key_values=past_key_values,
            reads=HeadReads(padding=reads_padding),
        )
        logits = self.lm_loss(out.last_hidden_state)
        loss = None
        if labels is not None:
            check_shape(labels, logits.shape[:2], "labels")
            check_class_labels(labels, self.config.vocab_size)
            loss = cross_entropy_or_zero(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        result = XLNetLMHeadModelOutput(
            loss=loss, logits=logits, mems=out.mems, hidden_states=out.hidden_states, attentions=out.attentions
        )
        return _return(result, return_dict)


def summary_state(states: torch.Tensor, attention_mask: torch.Tensor | None, summary_type: str) -> torch.Tensor:
    """(B, T, H) states -> the (B, H) summary the sequence-level heads read (``config.summary_type``).

    "last" is XLNet's <cls>, the last token its tokenizer writes: each row's last real token
    (``attention_mask`` (B, T), or (B, P + T) with a key/value prefix: the tokens' columns), which
    is position T-1 for the left-padded or unpadded batches XLNet's tokenizer gives (transformers'
    XLNet reads T-1 always, so a right-padded batch from another tokenizer would score a padding
    token there). "first" and "mean" read position 0 / average all T, padding included, as
    transformers' does."""
    if summary_type == "first":
        return states[:, 0]
    if summary_type == "mean":
        return states.mean(dim=1)
    batch, length = states.shape[:2]
    if attention_mask is not None:
        attention_mask = attention_mask[:, attention_mask.shape[1] - length :]
    positions = summary_positions("last_real", attention_mask, batch, length, states.device)  # (B, 1)
    return states[torch.arange(batch, device=states.device), positions[:, 0]]


class XLNetSequenceSummary(nn.Module):
    """transformers' XLNet ``sequence_summary`` on the summary vector (B, H): projection to H
    (``summary_use_proj``; none without), ``summary_activation`` (tanh), dropout
    (``summary_last_dropout``) -> (B, H)."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__()
        use_proj = config.summary_use_proj
        self.summary = nn.Linear(config.hidden_size, config.hidden_size) if use_proj else nn.Identity()
        activation = config.summary_activation
        self.activation = ACT2FN[activation] if activation else nn.Identity()
        self.last_dropout = XLNetDropout(config.summary_last_dropout, config)

    def forward(self, summary: torch.Tensor) -> torch.Tensor:
        return self.last_dropout(self.activation(self.summary(summary)))


class XLNetSummaryScorer(nn.Module):
    """The sequence-level head: the summary vector (B, H) -> :class:`XLNetSequenceSummary` ->
    ``logits_proj`` (B, num_outputs)."""

    def __init__(self, config: XLNetConfig, num_outputs: int) -> None:
        super().__init__()
        self.summary = XLNetSequenceSummary(config)
        self.logits_proj = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, summary: torch.Tensor) -> torch.Tensor:
        return self.logits_proj(self.summary(summary))


class XLNetForSequenceClassification(XLNetPreTrainedModel):
    """The summary token (``summary_type``: last, XLNet's <cls>) -> XLNetSummaryScorer (B, num_labels);
    regression when num_labels == 1, multi-label through ``problem_type`` (transformers' rule)."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = XLNetModel(config)
        self.classifier = XLNetSummaryScorer(config, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> XLNetForSequenceClassificationOutput | tuple:
        """transformers' arguments (see :meth:`XLNetModel.forward`; inputs (B, T)); labels (B,)
        class ids, (B,) floats for regression or (B, num_labels) multi-hot. ``past_key_values``: a
        key/value prefix (peft's prefix tuning)."""
        out = self.transformer(
            input_ids,
            attention_mask=attention_mask,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            token_type_ids=token_type_ids,
            input_mask=input_mask,
            inputs_embeds=inputs_embeds,
            use_mems=use_mems,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            past_key_values=past_key_values,
            reads=HeadReads(padding=self.config.summary_type != "last"),  # "first" / "mean" read padding
            **kwargs,
        )
        logits = self.classifier(summary_state(out.last_hidden_state, attention_mask, self.config.summary_type))
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        result = XLNetForSequenceClassificationOutput(
            loss=loss, logits=logits, mems=out.mems, hidden_states=out.hidden_states, attentions=out.attentions
        )
        return _return(result, return_dict)


class XLNetForTokenClassification(XLNetPreTrainedModel):
    """Per-token Linear(H, num_labels) (transformers' XLNet has no dropout before it:
    ``classifier_dropout`` 0.0 by default). labels (B, T), -100 where nothing is scored."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = XLNetModel(config)
        rate = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = XLNetDropout(rate, config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> XLNetForTokenClassificationOutput | tuple:
        """transformers' arguments (see :meth:`XLNetModel.forward`; inputs (B, T)); logits (B, T,
        num_labels). ``past_key_values``: a key/value prefix (peft's prefix tuning)."""
        reference = input_ids if input_ids is not None else inputs_embeds
        # A label on a padding position is read from a state only the padded layout computes.
        reads_padding = (
            labels is not None
            and reference is not None
            and uses_speed_path(self.config, reference.device)
            and targets_at_padding(labels, attention_mask, IGNORE_INDEX)
        )
        out = self.transformer(
            input_ids,
            attention_mask=attention_mask,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            token_type_ids=token_type_ids,
            input_mask=input_mask,
            inputs_embeds=inputs_embeds,
            use_mems=use_mems,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            past_key_values=past_key_values,
            reads=HeadReads(padding=reads_padding),
            **kwargs,
        )
        logits = self.classifier(self.dropout(out.last_hidden_state))
        loss = token_classification_loss(logits, labels) if labels is not None else None
        result = XLNetForTokenClassificationOutput(
            loss=loss, logits=logits, mems=out.mems, hidden_states=out.hidden_states, attentions=out.attentions
        )
        return _return(result, return_dict)


class XLNetForQuestionAnsweringSimple(XLNetPreTrainedModel):
    """Start/end logits per token (transformers' XLNetForQuestionAnsweringSimple, the class its
    AutoModelForQuestionAnswering picks). The span softmax runs over all T positions, padding
    included, as transformers': the padded layout always. The beam-search SQuAD 2.0 head is not
    provided."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = XLNetModel(config)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> XLNetForQuestionAnsweringSimpleOutput | tuple:
        """transformers' arguments (see :meth:`XLNetModel.forward`; inputs (B, T));
        start_positions / end_positions (B,) token indices; logits (B, T) each."""
        out = self.transformer(
            input_ids,
            attention_mask=attention_mask,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            token_type_ids=token_type_ids,
            input_mask=input_mask,
            inputs_embeds=inputs_embeds,
            use_mems=use_mems,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            past_key_values=past_key_values,
            reads=HeadReads(padding=True),
            **kwargs,
        )
        start_logits, end_logits = self.qa_outputs(out.last_hidden_state).unbind(dim=-1)
        start_logits, end_logits = start_logits.contiguous(), end_logits.contiguous()
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_extraction_loss(start_logits, end_logits, start_positions, end_positions)
        result = XLNetForQuestionAnsweringSimpleOutput(
            loss=loss,
            start_logits=start_logits,
            end_logits=end_logits,
            mems=out.mems,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )
        return _return(result, return_dict)


class XLNetForMultipleChoice(XLNetPreTrainedModel):
    """Inputs (B, C, T), flattened to (B * C, T); one score per choice from the summary token
    (XLNetSummaryScorer with one output); logits (B, C)."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__(config)
        self.transformer = XLNetModel(config)
        self.classifier = XLNetSummaryScorer(config, 1)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> XLNetForMultipleChoiceOutput | tuple:
        """transformers' arguments (see :meth:`XLNetModel.forward`) with inputs (B, C, T)
        (``inputs_embeds`` (B, C, T, H); ``perm_mask`` / ``target_mapping`` (B, C, ...) flattened
        alike); labels (B,) the index of the right choice."""
        num_choices = choice_count(input_ids, inputs_embeds)
        attention_mask = flatten_choices(attention_mask)
        out = self.transformer(
            flatten_choices(input_ids),
            attention_mask=attention_mask,
            mems=mems,
            perm_mask=flatten_choices(perm_mask),
            target_mapping=flatten_choices(target_mapping),
            token_type_ids=flatten_choices(token_type_ids),
            input_mask=flatten_choices(input_mask),
            inputs_embeds=flatten_choices(inputs_embeds),
            use_mems=use_mems,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            past_key_values=past_key_values,
            reads=HeadReads(padding=self.config.summary_type != "last"),  # "first" / "mean" read padding
            **kwargs,
        )
        summary = summary_state(out.last_hidden_state, attention_mask, self.config.summary_type)
        logits = self.classifier(summary).view(-1, num_choices)
        loss = multiple_choice_loss(logits, labels) if labels is not None else None
        result = XLNetForMultipleChoiceOutput(
            loss=loss, logits=logits, mems=out.mems, hidden_states=out.hidden_states, attentions=out.attentions
        )
        return _return(result, return_dict)


__all__ = [
    "XLNetPreTrainedModel",
    "XLNetModel",
    "XLNetLMHeadModel",
    "XLNetForSequenceClassification",
    "XLNetForTokenClassification",
    "XLNetForQuestionAnsweringSimple",
    "XLNetForMultipleChoice",
]
