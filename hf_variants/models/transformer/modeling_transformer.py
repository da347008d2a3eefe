"""The original Transformer (Vaswani et al. 2017, "Attention Is All You Need"): a post-LN
encoder-decoder with sinusoidal positions and one word matrix shared by source, target and output.

The architecture, top to bottom in the order data flows (the order of transformers'
``modeling_marian.py``, its counterpart): :class:`ScaledWordEmbedding` (the shared table, looked up
x sqrt(d_model), sec. 3.4) and :class:`ScaledSinusoidalEmbeddings` (+ fixed sin/cos positions
0..T-1 whatever the padding, Marian's convention; dropout; no LayerNorm) -> :class:`TransformerFFN`
(ReLU) -> :class:`TransformerAttention` (scaled dot-product self-attention; it appends to the
decoder's cache) -> :class:`TransformerLayer` (post-LN: x = LayerNorm(x + Dropout(Sublayer(x))) for
self-attention, in the decoder the shared :class:`~hf_variants.modules.attention.CrossAttention`,
which keeps the encoder's projected keys/values in the cache once, FFN) -> :class:`TransformerLayers` (the layers) ->
:class:`TransformerEncoder` / :class:`TransformerDecoder` (the embeddings, the masks, the layers) ->
:class:`TransformerModel` -> :class:`TransformerForConditionalGeneration` (label-smoothed
cross-entropy, sec. 5.4, ``config.label_smoothing``; ``generate()``). The warm-up schedule is in
:mod:`hf_variants.models.transformer.schedule`.

Submodule names are those of the key map (``weights.py``): a stack's layers sit under
``<stack>.encoder.layers`` in both stacks; the fused ``qkv`` / ``key_value`` projections are
Marian's ``q, k, v`` / ``k, v`` stacked.

Speed is a plug-in (``modules/fast_path.py``): with ``config.padding_free`` (default on) and CPU
inputs, the encoder stack runs on the real tokens alone (packed; self-attention re-pads each length
bucket only, ``attention.packed_self_attention``) and its output is re-padded with zeros at padding,
which the decoder's cross-attention masks; the decoder runs padded. The switch also selects the
CPU kernels when the model is built (``modules/dropout.py``'s uniform-mask dropout); results are
identical. With ``config.padding_free = False`` the plain path is all that runs; see
docs/architecture.md, "Reading a variant".
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from transformers import GenerationMixin
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, EncoderDecoderCache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
)
from transformers.utils import ModelOutput

from ...modules.attention import (
    CrossAttention,
    FusedQKVProjection,
    attention_function,
    encoder_decoder_cache,
    fast_attention_function,
    packed_self_attention,
)
from ...modules.cache import CACHE_FIELD, check_cache_batch, check_cache_positions
from ...modules.dropout import make_dropout
from ...modules.embeddings import sinusoidal_table
from ...modules.fast_path import fast_path_for
from ...modules.heads import (
    HeadReads,
    finish_seq2seq,
    lm_loss,
    make_vocabulary_decoder,
    shift_tokens_right,
)
from ...modules.inputs import check_index_range, check_not_empty, pick_cache
from ...modules.layout import BatchLayout
from ...modules.masks import check_key_mask, make_attention_bias
from ...modules.norms import build_norm
from ...modules.padding import UnpaddedBatch
from ...modules.token_ids import CheckedGenerationMixin, check_token_id
from ..modeling_base import VariantPreTrainedModel
from .configuration_transformer import OriginalTransformerConfig

__all__ = [
    "ScaledWordEmbedding",
    "ScaledSinusoidalEmbeddings",
    "OriginalTransformerPreTrainedModel",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerModel",
    "TransformerForConditionalGeneration",
]


# ----------------------------------------------------------------------------- embeddings
class ScaledWordEmbedding(nn.Embedding):
    """The word table whose lookup is scaled: ids (B, T) -> ``embed_scale`` * table[ids] (B, T, E).

    The scale lives in the module ``get_input_embeddings()`` returns (as Marian's
    ``MarianScaledWordEmbedding``), so ``model(inputs_embeds=model.get_input_embeddings()(ids))``
    equals ``model(input_ids=ids)``; ``resize_token_embeddings`` replaces the weight in place and
    keeps the module, scale included. The LM head ties to ``weight`` (unscaled), as in the paper.
    """

    def __init__(
        self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, embed_scale: float = 1.0
    ) -> None:
        super().__init__(num_embeddings, embedding_dim, padding_idx=padding_idx)
        self.embed_scale = embed_scale

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return super().forward(input_ids) * self.embed_scale


class ScaledSinusoidalEmbeddings(nn.Module):
    """sqrt(d_model) * word embedding + position -> dropout. (B, T) ids -> (B, T, H).

    Positions are the paper's fixed sinusoids (``sinusoidal_positions``, a buffer computed from the
    config, not saved), or a learned table (``position_embedding_type="learned"``, an ablation), or
    none. Embeddings passed as ``inputs_embeds`` are used as given (not scaled again): the scale is
    in the word table's own lookup (:class:`ScaledWordEmbedding`). No LayerNorm: the post-LN layers
    normalise after each sub-layer."""

    def __init__(self, config: OriginalTransformerConfig) -> None:
        super().__init__()
        self.position_embedding_type = config.position_embedding_type  # sinusoidal | learned | none
        self.max_position_embeddings = config.max_position_embeddings
        self.sinusoidal_layout = config.sinusoidal_layout
        # A pad id outside the table is refused by name (torch's own check is an AssertionError).
        check_token_id(
            "pad_token_id", config.pad_token_id, config.vocab_size, "it is the padding row of the word embeddings"
        )
        self.word_embeddings = ScaledWordEmbedding(
            config.vocab_size,
            config.hidden_size,
            padding_idx=config.pad_token_id,
            embed_scale=math.sqrt(config.hidden_size) if config.scale_embedding else 1.0,
        )
        if self.position_embedding_type == "learned":
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        elif self.position_embedding_type == "sinusoidal":
            self.register_buffer(
                "sinusoidal_positions",
                sinusoidal_table(config.max_position_embeddings, config.hidden_size, config.sinusoidal_layout),
                persistent=False,
            )
        self.dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    @property
    def scale(self) -> float:
        return self.word_embeddings.embed_scale

    def reset_fixed_buffers(self) -> None:
        """Recompute the sinusoidal table (after meta-device initialisation in from_pretrained)."""
        if self.position_embedding_type == "sinusoidal":
            table = sinusoidal_table(
                self.max_position_embeddings, self.word_embeddings.embedding_dim, self.sinusoidal_layout
            )
            self.sinusoidal_positions.copy_(table.to(self.sinusoidal_positions.device))

    def forward(
        self, input_ids: torch.Tensor | None, position_ids: torch.Tensor, inputs_embeds: torch.Tensor | None = None
    ) -> torch.Tensor:
        """ids (B, T) (or ``inputs_embeds`` (B, T, H)) and positions (B, T) -> (B, T, H)."""
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        if self.position_embedding_type == "learned":
            embeddings = embeddings + self.position_embeddings(position_ids)
        elif self.position_embedding_type == "sinusoidal":
            # The table is a buffer that may be kept in float32: added in the embeddings' dtype.
            embeddings = embeddings + self.sinusoidal_positions[position_ids].to(embeddings.dtype)
        return self.dropout(embeddings)


# ----------------------------------------------------------------------------- feed-forward
class TransformerFFN(nn.Module):
    """FFN(x) = down(dropout(ReLU(up x))) (sec. 3.3), or down(act(gate x) * up x) with
    ``config.gated_ffn`` (an ablation). (..., H) -> (..., H). Marian's ``fc1`` / ``fc2`` are ``up`` / ``down``."""

    adapter_role = "feed_forward"  # (IA)^3's feed-forward module (integrations/peft_targets.py)

    def __init__(self, config: OriginalTransformerConfig) -> None:
        super().__init__()
        if config.hidden_act not in ACT2FN:
            raise ValueError(f"unknown activation {config.hidden_act!r}; choose one of {sorted(ACT2FN)}")
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


# ----------------------------------------------------------------------------- attention
class TransformerAttention(nn.Module):
    """Multi-head scaled dot-product self-attention (sec. 3.2): softmax(Q K^T / sqrt(d_k)) V per
    head, fused ``qkv`` projection. (B, T, H) -> (B, T, H). The decoder's attention over the encoder
    states is the shared :class:`~hf_variants.modules.attention.CrossAttention`.

    The cache state lives here, read and written at ``layer_idx`` of a transformers Cache: this
    call's keys/values are appended (the decoder's ``EncoderDecoderCache`` self-attention half, or an
    encoder's key/value prefix for prefix tuning) and attended over with all earlier ones."""

    adapter_role = "attention"  # peft's default targets: its input projections (integrations/peft_targets.py)

    def __init__(self, config: OriginalTransformerConfig) -> None:
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
        attention_bias: torch.Tensor | UnpaddedBatch | None,
        cache: Cache | None = None,
        layer_idx: int = 0,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend. ``attention_bias``: additive, broadcastable to (B, heads, T, S): padding (+ the
        causal mask in the decoder); None when nothing is hidden; or the fast path's packed encoder
        batch (``hidden_states`` are then (N, H), modules/fast_path.py). Returns (output (B, T, H)
        or (N, H), probabilities (B, heads, T, S) if asked, else None)."""
        dropout = self.dropout_prob if self.training else 0.0
        backend = "eager" if output_attentions or self.config._attn_implementation == "eager" else "sdpa"
        if isinstance(attention_bias, UnpaddedBatch):  # the padding-free fast path (modules/fast_path.py)
            context = packed_self_attention(
                self.qkv(hidden_states), attention_bias, self.num_heads, self.scale, dropout, False, backend
            )
            return self.out(context), None
        query, key, value = (self._split_heads(x) for x in self.qkv(hidden_states).chunk(3, dim=-1))
        if cache is not None:  # earlier steps' (or a prefix's) keys and values come first
            self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
            key, value = self_cache.update(key, value, layer_idx)
        context, probs = self.attend(query, key, value, attention_bias, False, dropout, self.scale, backend)
        batch, _, length, _ = context.shape
        return self.out(context.transpose(1, 2).reshape(batch, length, self.inner_size)), probs


# ----------------------------------------------------------------------------- layer and stack
class TransformerLayer(GradientCheckpointingLayer):
    """One post-LN layer (sec. 3.1): x = LayerNorm(x + Dropout(SelfAttention(x))); in the decoder
    x = LayerNorm(x + Dropout(CrossAttention(x, encoder states))); x = LayerNorm(x + Dropout(FFN(x))).
    ``config.pre_layer_norm`` (an ablation): x = x + Dropout(Sublayer(LayerNorm(x))) instead.

    A layer whose attention or FFN is shared with layer 0 (``config.layer_sharing``, ALBERT-style
    ablations) stores none and is handed layer 0's at each call."""

    def __init__(self, config: OriginalTransformerConfig, own_attention: bool = True, own_ffn: bool = True) -> None:
        super().__init__()
        norm = (config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.pre_layer_norm = config.pre_layer_norm
        self.attention = TransformerAttention(config) if own_attention else None
        self.attention_norm = build_norm(*norm)
        if config.is_decoder:
            self.cross_attention = CrossAttention(config)  # the shared block (modules/attention.py)
            self.cross_attention_norm = build_norm(*norm)
        else:
            self.cross_attention = None
        self.ffn = TransformerFFN(config) if own_ffn else None
        self.ffn_norm = build_norm(*norm)
        self.residual_dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    def _residual(self, hidden_states: torch.Tensor, norm: nn.Module, sublayer) -> tuple[torch.Tensor, object]:
        """Post-LN: norm(x + dropout(f(x))); pre-LN: x + dropout(f(norm(x))). ``sublayer`` returns
        (output, extra): the extra (attention probabilities) is handed back beside the new states."""
        if self.pre_layer_norm:
            output, extra = sublayer(norm(hidden_states))
            return hidden_states + self.residual_dropout(output), extra
        output, extra = sublayer(hidden_states)
        return norm(hidden_states + self.residual_dropout(output)), extra

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_bias: torch.Tensor | None,
        encoder_hidden_states: torch.Tensor | None,
        encoder_attention_bias: torch.Tensor | None,
        cache: Cache | None,
        layer_idx: int,
        output_attentions: bool = False,
        shared_attention: TransformerAttention | None = None,
        shared_ffn: TransformerFFN | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """(B, T, H) -> ((B, T, H), self-attention probabilities or None, cross-attention
        probabilities (B, heads, T, S) or None). Every argument is positional where it is called:
        gradient checkpointing makes only positional tensors inputs of the checkpoint."""
        attention = shared_attention or self.attention
        ffn = shared_ffn or self.ffn
        hidden_states, probs = self._residual(
            hidden_states,
            self.attention_norm,
            lambda x: attention(x, attention_bias, cache, layer_idx, output_attentions),
        )
        cross_probs = None
        if self.cross_attention is not None:
            hidden_states, cross_probs = self._residual(
                hidden_states,
                self.cross_attention_norm,
                lambda x: self.cross_attention(
                    x, encoder_hidden_states, encoder_attention_bias, cache, layer_idx, output_attentions
                ),
            )
        hidden_states, _ = self._residual(hidden_states, self.ffn_norm, lambda x: (ffn(x), None))
        return hidden_states, probs, cross_probs


class TransformerLayers(nn.Module):
    """A stack's ``num_hidden_layers`` layers (and, pre-LN only, a final LayerNorm: the residual
    stream is left un-normalised). ``config.layer_sharing``: "none" (the paper), "all" (one layer
    at every depth), "attention" or "ffn" (that sub-layer of layer 0 at every depth)."""

    def __init__(self, config: OriginalTransformerConfig) -> None:
        super().__init__()
        self.num_layers = config.num_hidden_layers
        self.sharing = config.layer_sharing
        if self.sharing == "all":
            self.layers = nn.ModuleList([TransformerLayer(config)])
        else:
            self.layers = nn.ModuleList(
                TransformerLayer(
                    config, own_attention=i == 0 or self.sharing != "attention", own_ffn=i == 0 or self.sharing != "ffn"
                )
                for i in range(self.num_layers)
            )
        self.final_layer_norm = (
            build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps) if config.pre_layer_norm else None
        )

    def layer_at(self, depth: int) -> TransformerLayer:
        return self.layers[0] if self.sharing == "all" else self.layers[depth]

    def shared_sublayers(self, depth: int) -> tuple[TransformerAttention | None, TransformerFFN | None]:
        """(attention, FFN) of layer 0 where the layer at ``depth`` shares them, else None."""
        return (
            self.layers[0].attention if self.sharing == "attention" else None,
            self.layers[0].ffn if self.sharing == "ffn" else None,
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_bias: torch.Tensor | None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_bias: torch.Tensor | None = None,
        cache: Cache | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> tuple[torch.Tensor, tuple | None, tuple | None, tuple | None]:
        """(B, T, H) embeddings -> (last hidden states (B, T, H), every layer's input + the output
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
                *self.shared_sublayers(depth),
            )
            if output_attentions:
                all_attentions += (probs,)
                if all_cross_attentions is not None:
                    all_cross_attentions += (cross_probs,)
        if self.final_layer_norm is not None:
            hidden_states = self.final_layer_norm(hidden_states)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)
        return hidden_states, all_hidden_states, all_attentions, all_cross_attentions


# ----------------------------------------------------------------------------- model
class OriginalTransformerPreTrainedModel(VariantPreTrainedModel):
    config_class = OriginalTransformerConfig
    base_model_prefix = "model"
    # The unit device_map="auto" never splits, FSDP wraps and gradient checkpointing recomputes.
    _no_split_modules = ["TransformerLayer"]
    # Marian checkpoints store their fixed sinusoidal tables; ours are computed from the config.
    _keys_to_ignore_on_load_unexpected = [r"(en|de)coder\.embed_positions\.weight"]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """transformers' normal(0, initializer_range) init; the sinusoidal table recomputed."""
        super()._init_weights(module)
        if isinstance(module, ScaledSinusoidalEmbeddings):
            module.reset_fixed_buffers()


def stack_config(config: OriginalTransformerConfig, is_decoder: bool) -> OriginalTransformerConfig:
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


class TransformerEncoder(OriginalTransformerPreTrainedModel):
    """The encoder stack (``config.is_decoder`` False): source ids (B, S) -> states (B, S, H).
    :class:`TransformerDecoder` is the same stack with causal self-attention, a cache and
    cross-attention to the encoder states: embeddings -> the masks (once for every layer) -> the layers."""

    def __init__(
        self, config: OriginalTransformerConfig, model_config: OriginalTransformerConfig | None = None
    ) -> None:
        super().__init__(config)
        self.config = config
        # The config of the model this stack belongs to (``stack_config`` made ``config`` a copy of it):
        # the speed plug-in's switch is read there at each call, so ``model.config.padding_free = False``
        # selects the plain path (modules/fast_path.py).
        self.model_config = config if model_config is None else model_config
        self.embeddings = ScaledSinusoidalEmbeddings(config)
        self.encoder = TransformerLayers(config)  # named `encoder` in both stacks: the key map's names
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
    ) -> BatchLayout | None:
        """The speed plug-in's layout for the encoder (``modules/fast_path.py``, asked with the switch
        on): packed when the inputs are on CPU, the (B, T) mask pads enough of the batch, and nothing is
        asked that only the plain path gives (every layer's outputs, a key/value prefix); else None,
        the plain path. The decoder runs padded."""
        config = self.config
        if config.is_decoder or attention_mask is None:
            return None
        fast_path = fast_path_for(self.model_config, device, needs_every_layer, cache is not None)
        if fast_path is None:
            return None
        dtype = self.embeddings.word_embeddings.weight.dtype
        layout = fast_path.plan_stack(attention_mask, batch, length, dtype, HeadReads())
        return layout if layout.packed else None

    def _positions(
        self, position_ids: torch.Tensor | None, batch: int, length: int, past_length: int, device: torch.device
    ) -> torch.Tensor | None:
        """(B, T) positions: the caller's, or past_length .. past_length + T - 1 whatever the
        padding (Marian's convention: the source is right-padded, the target starts at the start token)."""
        if self.embeddings.position_embedding_type == "none":
            return position_ids
        if past_length + length > self.embeddings.max_position_embeddings:
            raise ValueError(
                f"sequence length {past_length + length} exceeds max_position_embeddings "
                f"({self.embeddings.max_position_embeddings}); truncate the input or use a config with more positions"
            )
        if position_ids is None:
            return torch.arange(past_length, past_length + length, device=device).expand(batch, length)
        check_index_range(
            position_ids, self.embeddings.max_position_embeddings, "position_ids", "max_position_embeddings"
        )
        return position_ids

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPastAndCrossAttentions | tuple:
        """Run one stack.

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, H), used as given: not scaled).
            attention_mask: (B, past + T) keep-mask (1 real, 0 padding).
            position_ids: (B, T) positions (default past .. past + T - 1).
            encoder_hidden_states / encoder_attention_mask: (B, S, H) / (B, S) (the decoder).
            cache / past_key_values: the decoder's cache (one of the two names, see modules/cache.py),
                extended in place and returned; an encoder's key/value prefix (prefix tuning).
            use_cache: (the decoder) create and return a cache (default ``config.use_cache``).
        Returns:
            BaseModelOutputWithPastAndCrossAttentions: last_hidden_state (B, T, H), the cache, and
            hidden states / attentions (over past + T keys) / cross-attentions (B, heads, T, S) if asked.
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
        check_key_mask(attention_mask, batch, length, past_length, like=" like input_ids")
        position_ids = self._positions(position_ids, batch, length, past_length, main.device)

        # Embeddings, the masks (once for every layer), then the layers. With the speed plug-in the
        # encoder runs on the real tokens alone (packed, modules/fast_path.py).
        needs_every_layer = output_attentions or output_hidden_states
        layout = None
        if self.model_config.padding_free:  # the speed plug-in's rule (modules/fast_path.py)
            layout = self._packed_layout(attention_mask, batch, length, main.device, needs_every_layer, cache)
        if layout is not None:
            hidden_states = self.embeddings(
                layout.to_packed(input_ids), layout.to_packed(position_ids), layout.to_packed(inputs_embeds)
            )
            packed_output = self.encoder(hidden_states, layout.unpadded)[0]
            output = BaseModelOutputWithPastAndCrossAttentions(
                last_hidden_state=layout.to_padded(packed_output), **{CACHE_FIELD: None}
            )
            return output if return_dict else output.to_tuple()
        hidden_states = self.embeddings(input_ids, position_ids, inputs_embeds)
        dtype, device = hidden_states.dtype, hidden_states.device
        attention_bias = make_attention_bias(
            attention_mask, dtype, config.is_decoder, length, past_length + length, device
        )
        encoder_attention_bias = None
        if encoder_hidden_states is not None:
            check_key_mask(
                encoder_attention_mask, batch, encoder_hidden_states.shape[1], like=" like the encoder states"
            )
            encoder_attention_bias = make_attention_bias(encoder_attention_mask, dtype)
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


class TransformerDecoder(TransformerEncoder):
    """The decoder stack: masked self-attention (with the cache), attention over the encoder's
    states, FFN; built from a decoder config (``stack_config(config, is_decoder=True)``)."""


class TransformerModel(OriginalTransformerPreTrainedModel):
    """Encoder + decoder sharing one word matrix; returns the decoder's last states (B, T, H)."""

    _tied_weights_keys = {"decoder.embeddings.word_embeddings.weight": "encoder.embeddings.word_embeddings.weight"}

    def __init__(self, config: OriginalTransformerConfig) -> None:
        super().__init__(config)
        self.config = config
        self.encoder = TransformerEncoder(stack_config(config, is_decoder=False), config)
        self.decoder = TransformerDecoder(stack_config(config, is_decoder=True))
        self.decoder.set_input_embeddings(self.encoder.get_input_embeddings())
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.set_input_embeddings(value)
        self.decoder.set_input_embeddings(value)

    def get_encoder(self, modality: str | None = None) -> TransformerEncoder:
        return self.encoder

    def get_decoder(self) -> TransformerDecoder:
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
            input_ids / inputs_embeds: (B, S) source ids / (B, S, H) embeddings.
            attention_mask: (B, S) source keep-mask (also the cross-attention mask).
            decoder_input_ids: (B, T) target ids, shifted right (see ``shift_tokens_right``).
            decoder_attention_mask: (B, past + T) target keep-mask (causality is added).
            encoder_outputs: the encoder's output from an earlier call (generation reuses it).
            cache / past_key_values: the decoder's cache (one of the two names, see modules/cache.py).
            position_ids / decoder_position_ids (in kwargs): (B, S) / (B, T) positions, by default
                0..S-1 / past..past+T-1.
        Returns:
            Seq2SeqModelOutput: last_hidden_state (B, T, H) of the decoder, the cache,
            encoder_last_hidden_state (B, S, H) and the optional hidden states / attentions.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=kwargs.get("position_ids"),
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
            position_ids=kwargs.get("decoder_position_ids"),
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


# ----------------------------------------------------------------------------- the translation head
class TransformerForConditionalGeneration(CheckedGenerationMixin, OriginalTransformerPreTrainedModel, GenerationMixin):
    """The translation model: logits (B, T, V) from the output layer tied to the shared embeddings
    (unscaled, bias-free, sec. 3.4), loss = label-smoothed cross-entropy (``config.label_smoothing``,
    0.1 in the paper, sec. 5.4); ``generate()`` decodes greedily or by beam search (transformers'
    own, after refusing special ids outside the vocabulary, ``modules/token_ids.py``)."""

    _tied_weights_keys = {
        "lm_head.weight": "model.encoder.embeddings.word_embeddings.weight",
        "model.decoder.embeddings.word_embeddings.weight": "model.encoder.embeddings.word_embeddings.weight",
    }

    def __init__(self, config: OriginalTransformerConfig) -> None:
        super().__init__(config)
        self.model = TransformerModel(config)
        # With the speed switch, TiedDecoder builds the weight's gradient contiguous so the tied
        # embedding accumulates it in place (modules/heads.py); nn.Linear with it off.
        self.lm_head = make_vocabulary_decoder(
            config.hidden_size, config.vocab_size, bias=False, cpu_kernel=config.padding_free
        )
        self.label_smoothing = config.label_smoothing
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.model.set_input_embeddings(value)

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def get_encoder(self, modality: str | None = None) -> TransformerEncoder:
        return self.model.encoder

    def get_decoder(self) -> TransformerDecoder:
        return self.model.decoder

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
        """Args as :meth:`TransformerModel.forward`, plus ``labels`` (B, T): target ids, -100 where
        nothing is predicted; without ``decoder_input_ids`` the decoder reads them shifted right.
        Returns Seq2SeqLMOutput: loss (mean token cross-entropy, label-smoothed), logits (B, T, V),
        the cache and the encoder output (reused by ``generate``)."""
        past_key_values = pick_cache(cache, past_key_values, kwargs)  # one cache, under either name (or None)
        if labels is not None:
            if use_cache is None and past_key_values is None:
                use_cache = False  # training: no cache unless asked
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        out = self.model(
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
            **{
                name: kwargs[name]
                for name in ("token_type_ids", "position_ids", "decoder_position_ids", "cache_position")
                if kwargs.get(name) is not None
            },
        )
        logits = self.lm_head(out.last_hidden_state)
        loss = lm_loss(logits, labels, self.label_smoothing) if labels is not None else None
        return finish_seq2seq(Seq2SeqLMOutput, return_dict, out, loss=loss, logits=logits)
