"""XLM (Lample & Conneau 2019, "Cross-lingual Language Model Pretraining"): BERT's post-LN encoder
with a language embedding added to every token, trained with causal (CLM), masked (MLM) or
translation (TLM) language modelling.

The architecture, top to bottom in the order data flows: :class:`XLMEmbeddings` (word + position
+ language, LayerNorm, dropout; no segment table) -> :class:`XLMAttention` (fused QKV, the shared
:func:`~hf_variants.modules.attention.attention_function`: eager or SDPA by ``attn_implementation``;
causal with ``is_decoder`` / ``causal``, the CLM setting) -> :class:`XLMFFN` -> :class:`XLMLayer`
(residuals, post-LN) -> :class:`XLMEncoder` (the stack; states at padding positions set to exactly
zero after the embeddings and every layer, as transformers' XLM multiplies them by the mask) ->
:class:`XLMModel` (no pooler; the padding comes from ``attention_mask``, else ``lengths`` (B,), else
the ``pad_token_id`` tokens) -> the heads: :class:`XLMWithLMHeadModel` (MLM / TLM / CLM: a decoder
tied to the word embeddings, no transform; ``generate()`` as transformers'),
:class:`XLMForSequenceClassification` and :class:`XLMForMultipleChoice` (transformers'
``SequenceSummary`` on the summary token), :class:`XLMForTokenClassification`,
:class:`XLMForQuestionAnsweringSimple`.

What differs from BERT (``models/bert/modeling_bert.py``): the language embedding and no segment
table (``token_type_ids``, if given, index the *word* table, as in transformers' XLM); frozen
sinusoids held in the position table (``position_embedding_type="sinusoidal"``); zeros at padding;
padding from ``lengths`` or pad ids; no pooler; sequence-summary heads. The layer is BERT's (the
same equations), written out here so that the file reads top to bottom; the ablation fields of the
shared config (pre-LN, RMSNorm, gated FFN, ALBERT-style ``layer_sharing``, ...) work as in BERT.

Submodule names are those of the key map (``models/xlm/weights.py``), which converts to and from
transformers' XLM (fused ``qkv`` = its ``q_lin``, ``k_lin``, ``v_lin`` stacked).

Speed is a plug-in: with ``config.padding_free`` (default on) and CPU inputs, :class:`XLMModel`
hands its forward to :class:`~hf_variants.modules.fast_path.PaddingFreePath`, which runs these same
modules on the real tokens only (packed; ``langs`` packed with them) and computes the last layer at
the positions a head reads; results are identical. With ``config.padding_free = False`` (and on
CUDA) the plain path below is all that runs. Labels are never shifted inside the model (as
transformers' XLMWithLMHeadModel): for CLM, pass the next tokens as labels.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import nn
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import ModelOutput

from ...modules.attention import FusedQKVProjection, attention_function, packed_self_attention
from ...modules.cache import check_cache_batch, check_cache_positions
from ...modules.dropout import make_dropout
from ...modules.embeddings import sinusoidal_table
from ...modules.fast_path import HeadReads, fast_path_enabled, fast_path_for
from ...modules.heads import (
    IGNORE_INDEX,
    MaskedLMHead,
    SequenceSummary,
    choice_count,
    flatten_choices,
    masked_lm_loss,
    multiple_choice_loss,
    sequence_classification_loss,
    span_extraction_loss,
    summarize,
    token_classification_loss,
)
from ...modules.inputs import check_ids_or_embeds, check_index_range, pick_cache
from ...modules.masks import (
    KeyMask,
    make_attention_bias,
    mask_from_lengths,
    mask_from_pad_tokens,
    summary_positions,
    targets_at_padding,
    zeroing_mask,
)
from ...modules.norms import build_norm
from ...modules.padding import UnpaddedBatch, gather_positions, selected_positions
from ...modules.token_ids import CheckedGenerationMixin, check_token_id
from ..modeling_base import VariantPreTrainedModel
from .configuration_xlm import XLMConfig


# ----------------------------------------------------------------------------- embeddings
class FrozenSinusoids(nn.Embedding):
    """A position table holding the fixed sinusoids (the original code's ``--sinusoidal_embeddings``),
    frozen as there: it never receives a gradient (also after ``from_pretrained``, which makes
    loaded parameters trainable again). A table, not a buffer, so that checkpoints hold it under
    transformers' name (``position_embeddings.weight``)."""

    def __init__(self, num_positions: int, dim: int) -> None:
        super().__init__(num_positions, dim)
        self.weight.requires_grad_(False)
        self.reset_sinusoids()

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(position_ids, self.weight.detach())

    def reset_sinusoids(self) -> None:
        """Fill the table (skipped for a table loaded from a checkpoint)."""
        init.copy_(self.weight, sinusoidal_table(*self.weight.shape).to(self.weight.device))


class XLMEmbeddings(nn.Module):
    """(word + position + language [+ word table at token_type_ids]) -> LayerNorm -> dropout.
    Inputs (B, T), or packed (N,) on the fast path; output (B, T, H) or (N, H).

    ``langs``: language ids in [0, n_langs), shaped like ``input_ids``. They are checked always and
    embedded when ``use_lang_emb`` and ``n_langs > 1`` (transformers ignores them otherwise, e.g.
    for XLM-100).
    """

    def __init__(self, config: XLMConfig) -> None:
        super().__init__()
        self.position_embedding_type = config.position_embedding_type  # learned | sinusoidal | none
        self.max_position_embeddings = config.max_position_embeddings
        self.n_langs = config.n_langs
        check_token_id(
            "pad_token_id", config.pad_token_id, config.vocab_size, "it is the padding row of the word embeddings"
        )
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        if self.position_embedding_type == "learned":
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        elif self.position_embedding_type == "sinusoidal":
            self.position_embeddings = FrozenSinusoids(config.max_position_embeddings, config.hidden_size)
        uses_languages = config.use_lang_emb and config.n_langs > 1
        self.lang_embeddings = nn.Embedding(config.n_langs, config.hidden_size) if uses_languages else None
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    def check_inputs(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        langs: torch.Tensor | None,
        sequence_length: int,
    ) -> None:
        """A ValueError naming the first id outside its table (torch would raise an IndexError)."""
        if input_ids is not None:  # the live table size: resize_token_embeddings changes it
            check_index_range(input_ids, self.word_embeddings.num_embeddings, "input_ids", "vocab_size")
        if self.position_embedding_type != "none" and sequence_length > self.max_position_embeddings:
            raise ValueError(
                f"sequence length {sequence_length} exceeds max_position_embeddings "
                f"({self.max_position_embeddings}); truncate the input or use a config with more positions"
            )
        if position_ids is not None and self.position_embedding_type != "none":
            check_index_range(position_ids, self.max_position_embeddings, "position_ids", "max_position_embeddings")
        if token_type_ids is not None:
            check_index_range(
                token_type_ids,
                self.word_embeddings.num_embeddings,
                "token_type_ids",
                "vocab_size (XLM looks token_type_ids up in the word embeddings)",
            )
        if langs is not None:
            check_index_range(langs, self.n_langs, "langs", "n_langs")

    def forward(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """ids (B, T) or (N,), or ``inputs_embeds`` (B, T, H) -> (B, T, H) or (N, H)."""
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        if self.position_embedding_type != "none":
            embeddings = embeddings + self.position_embeddings(position_ids)
        added = None  # language + segment rows: one sum added to the rest, as transformers adds them
        if langs is not None and self.lang_embeddings is not None:
            added = self.lang_embeddings(langs)
        if token_type_ids is not None:  # XLM has no segment table: the word table serves
            segments = self.word_embeddings(token_type_ids)
            added = segments if added is None else added + segments
        if added is not None:
            embeddings = embeddings + added
        return self.dropout(self.layer_norm(embeddings))


# ----------------------------------------------------------------------------- attention
class XLMAttention(nn.Module):
    """Multi-head self-attention (transformers' ``MultiHeadAttention``): fused QKV projection ->
    attention (causal for CLM) -> output projection. (B, T, H) -> (B, T, H) (or (N, H) packed, or
    (B, M, H) at ``query_positions``)."""

    adapter_role = "attention"  # peft's default targets: its input projection (integrations/peft_targets.py)

    def __init__(self, config: XLMConfig) -> None:
        super().__init__()
        self.config = config  # attn_implementation is read at each call: it may be switched at run time
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim or config.hidden_size // config.num_attention_heads
        self.inner_size = self.num_heads * self.head_dim
        self.scale = config.attention_scale if config.attention_scale is not None else 1.0 / math.sqrt(self.head_dim)
        self.dropout_prob = config.attention_probs_dropout_prob
        self.is_causal = config.is_decoder
        # One GEMM instead of three; the key map splits it into transformers' q_lin, k_lin, v_lin.
        self.qkv = FusedQKVProjection(config.hidden_size, 3 * self.inner_size, bias=config.use_bias)
        self.out = nn.Linear(self.inner_size, config.hidden_size, bias=config.use_bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, heads * D) -> (B, heads, T, D)."""
        return x.view(*x.shape[:2], self.num_heads, self.head_dim).transpose(1, 2)

    def _project(
        self, hidden_states: torch.Tensor, query_positions: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, H) -> query (B, T or M, inner), key and value (B, T, inner); with
        ``query_positions`` (B, M) only the queries read are projected."""
        if query_positions is None:
            return self.qkv(hidden_states).chunk(3, dim=-1)
        query_input = gather_positions(hidden_states, query_positions)
        if isinstance(self.qkv, FusedQKVProjection):
            query, key_value = self.qkv(query_input, hidden_states)
            return (query, *key_value.chunk(2, dim=-1))
        # Wrapped by an adapter (peft's LoRA, (IA)^3): run the whole projection, keep the rows needed.
        return (
            self.qkv(query_input)[..., : self.inner_size],
            *self.qkv(hidden_states)[..., self.inner_size :].chunk(2, dim=-1),
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | UnpaddedBatch | None = None,
        output_attentions: bool = False,
        query_positions: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        layer_idx: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend. ``attention_mask``: an additive (B, 1, 1|T, S) bias (None: nothing masked), or
        the fast path's packed batch (then ``hidden_states`` are (N, H)). ``query_positions`` (B, M):
        compute those queries only. ``past_key_values``: a key/value prefix of P positions per layer
        (prefix tuning), read at ``layer_idx``; S = P + T. Returns (output, attention probabilities
        (B, heads, T, S) if asked, else None)."""
        dropout = self.dropout_prob if self.training else 0.0
        backend = "eager" if output_attentions or self.config._attn_implementation == "eager" else "sdpa"
        if isinstance(attention_mask, UnpaddedBatch):  # the padding-free fast path (modules/fast_path.py)
            if attention_mask.total_tokens == 0:
                return self.out(hidden_states.new_zeros(0, self.inner_size)), None
            context = packed_self_attention(
                self.qkv(hidden_states), attention_mask, self.num_heads, self.scale, dropout, self.is_causal, backend
            )
            return self.out(context), None
        query, key, value = (self._split_heads(x) for x in self._project(hidden_states, query_positions))
        if past_key_values is not None:  # the prefix's keys and values come first
            key, value = past_key_values.update(key, value, layer_idx)
        if attention_mask is not None and attention_mask.shape[-1] not in (1, key.shape[2]):
            raise ValueError(
                f"attention_bias covers {attention_mask.shape[-1]} keys but there are {key.shape[2]} "
                "(cached positions count; build the mask over all of them)"
            )
        context, probs = attention_function(
            query, key, value, attention_mask, self.is_causal, dropout, self.scale, backend
        )
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2)
        if torch.compiler.is_exporting():
            # The ONNX exporter's SDPA decomposition leaves (B, heads, T, D)-contiguous output: copy
            # before the reshape so it is not recorded as a view (see BertSelfAttention.forward).
            context = context.clone(memory_format=torch.contiguous_format)
        return self.out(context.reshape(batch, length, self.inner_size)), probs


# ----------------------------------------------------------------------------- feed-forward
class XLMFFN(nn.Module):
    """transformers' ``TransformerFFN``: FFN(x) = lin2(act(lin1(x))), GELU (or ReLU); gated for
    ablations: down(act(gate(x)) * up(x)). (..., H) -> (..., H)."""

    adapter_role = "feed_forward"  # (IA)^3's feed-forward module (integrations/peft_targets.py)

    def __init__(self, config: XLMConfig) -> None:
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


# ----------------------------------------------------------------------------- layer and stack
class XLMLayer(GradientCheckpointingLayer):
    """One block, as transformers' XLM: x = layer_norm1(x + Dropout(Attention(x)));
    x = layer_norm2(x + Dropout(FFN(x))) (post-LN); with ``config.pre_layer_norm`` (an ablation):
    x = x + Dropout(Attention(LN(x))), likewise for the FFN.

    A layer whose attention or FFN is shared with layer 0 (``config.layer_sharing``) stores none and
    is handed layer 0's by the encoder."""

    def __init__(self, config: XLMConfig, own_attention: bool = True, own_ffn: bool = True) -> None:
        super().__init__()
        self.pre_layer_norm = config.pre_layer_norm
        self.attention = XLMAttention(config) if own_attention else None
        self.attention_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.ffn = XLMFFN(config) if own_ffn else None
        self.ffn_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.residual_dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | UnpaddedBatch | None = None,
        output_attentions: bool = False,
        query_positions: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        layer_idx: int | None = None,
        shared_attention: XLMAttention | None = None,
        shared_ffn: XLMFFN | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, T, H) -> ((B, T, H), attention probabilities or None); arguments as
        :meth:`XLMAttention.forward`. With ``query_positions`` (B, M) the output is (B, M, H).
        All positional: gradient checkpointing replays positional inputs."""
        attention = self.attention if self.attention is not None else shared_attention
        ffn = self.ffn if self.ffn is not None else shared_ffn
        residual = hidden_states if query_positions is None else gather_positions(hidden_states, query_positions)
        if self.pre_layer_norm:
            attention_output, probs = attention(
                self.attention_norm(hidden_states),
                attention_mask,
                output_attentions,
                query_positions,
                past_key_values,
                layer_idx,
            )
            hidden_states = residual + self.residual_dropout(attention_output)
            hidden_states = hidden_states + self.residual_dropout(ffn(self.ffn_norm(hidden_states)))
        else:
            attention_output, probs = attention(
                hidden_states, attention_mask, output_attentions, query_positions, past_key_values, layer_idx
            )
            hidden_states = self.attention_norm(residual + self.residual_dropout(attention_output))
            hidden_states = self.ffn_norm(hidden_states + self.residual_dropout(ffn(hidden_states)))
        return hidden_states, probs


class XLMEncoder(nn.Module):
    """``num_hidden_layers`` XLMLayers (+ a final norm for pre-LN), with padding states zeroed after
    the embeddings and after every layer (XLM's own: transformers' ``tensor *= mask``).
    ``config.layer_sharing`` (ALBERT's ablation): "none", "all", "attention" or "ffn"."""

    def __init__(self, config: XLMConfig) -> None:
        super().__init__()
        self.num_layers = config.num_hidden_layers
        self.sharing = config.layer_sharing
        if self.sharing == "all":
            self.layers = nn.ModuleList([XLMLayer(config)])
        else:
            self.layers = nn.ModuleList(
                XLMLayer(
                    config, own_attention=i == 0 or self.sharing != "attention", own_ffn=i == 0 or self.sharing != "ffn"
                )
                for i in range(self.num_layers)
            )
        self.final_layer_norm = (
            build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps) if config.pre_layer_norm else None
        )

    def layer_at(self, depth: int) -> XLMLayer:
        return self.layers[0] if self.sharing == "all" else self.layers[depth]

    def shared_blocks(self, depth: int) -> tuple[XLMAttention | None, XLMFFN | None]:
        """(attention, FFN) of layer 0 where the layer at ``depth`` shares them, else None."""
        return (
            self.layers[0].attention if self.sharing == "attention" else None,
            self.layers[0].ffn if self.sharing == "ffn" else None,
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        keep: torch.Tensor | None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        past_key_values: Cache | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None, tuple[torch.Tensor, ...] | None]:
        """(B, T, H) embeddings, additive (B, 1, 1, S) bias, ``keep`` the (B, T) real-token mask (None
        when nothing is padding) -> (last hidden states (B, T, H), every layer's input + the output
        if asked, every layer's attention probabilities if asked)."""
        keep = None if keep is None else keep[..., None].to(hidden_states.dtype)
        if keep is not None:
            hidden_states = hidden_states * keep
        all_hidden_states = () if output_hidden_states else None
        all_attentions = () if output_attentions else None
        for depth in range(self.num_layers):
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            hidden_states, probs = self.layer_at(depth)(
                hidden_states,
                attention_mask,
                output_attentions,
                None,
                past_key_values,
                depth,
                *self.shared_blocks(depth),
            )
            if keep is not None:
                hidden_states = hidden_states * keep
            if output_attentions:
                all_attentions += (probs,)
        if self.final_layer_norm is not None:
            hidden_states = self.final_layer_norm(hidden_states)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)
        return hidden_states, all_hidden_states, all_attentions


# ----------------------------------------------------------------------------- model
class XLMPreTrainedModel(VariantPreTrainedModel):
    config_class = XLMConfig
    base_model_prefix = "transformer"
    # The unit device_map="auto" never splits, FSDP wraps and gradient checkpointing recomputes.
    _no_split_modules = ["XLMLayer"]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, FrozenSinusoids):
            module.reset_sinusoids()
        elif isinstance(module, nn.Embedding):  # the paper code: N(0, embed_init_std), zero padding row
            init.normal_(module.weight, mean=0.0, std=self.config.embed_init_std)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])


def padding_mask(
    input_ids: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    lengths: torch.Tensor | None,
    pad_token_id: int | None,
    batch: int,
    length: int,
    device: torch.device,
) -> torch.Tensor | None:
    """The (B, T) mask XLM attends with: ``attention_mask`` if given, else the first ``lengths``
    (B,) tokens of each row, else the tokens that are not ``pad_token_id`` (transformers counts
    them and keeps that many leading tokens: the same for right padding), else None."""
    if attention_mask is not None:
        return attention_mask
    if lengths is not None:
        return mask_from_lengths(lengths, batch, length, device)
    return mask_from_pad_tokens(input_ids, pad_token_id)


class XLMModel(XLMPreTrainedModel):
    """The bare encoder: embeddings -> encoder; no pooler; zeros at padding positions."""

    # The fast path zeroes padding states too when it runs a batch padded (modules/fast_path.py).
    zeroes_padding_states = True

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config)  # config.check_architecture(): a ValueError naming a bad field
        self.config = config
        self.embeddings = XLMEmbeddings(config)
        self.encoder = XLMEncoder(config)
        self.pooler = None  # XLM has none (the attribute the fast path reads)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def _check_inputs(
        self,
        input_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        per_token: dict[str, torch.Tensor | None],
        lengths: torch.Tensor | None,
        past_key_values: Cache | None,
        kwargs: dict,
    ) -> tuple[int, int, KeyMask]:
        """Every input against the main one; a ValueError naming the first problem. ``per_token``:
        token_type_ids, position_ids and langs by name, each (B, T). Returns (B, T, the checked mask,
        from ``attention_mask``, ``lengths`` or the pad tokens)."""
        batch, length = check_ids_or_embeds(input_ids, inputs_embeds)
        device = (input_ids if input_ids is not None else inputs_embeds).device
        attention_mask = padding_mask(
            input_ids, attention_mask, lengths, self.config.pad_token_id, batch, length, device
        )
        if past_key_values is not None and not isinstance(past_key_values, Cache):
            raise ValueError(
                f"past_key_values must be a transformers Cache holding a key/value prefix, got {type(past_key_values).__name__}"
            )
        past_length = past_key_values.get_seq_length() if past_key_values is not None else 0
        if kwargs.get("cache_position") is not None:
            check_cache_positions(kwargs["cache_position"], past_length, length)
        if past_length:
            check_cache_batch(past_key_values, batch)
        if kwargs.get("encoder_hidden_states") is not None:
            raise ValueError("encoder_hidden_states were given but this model has no cross-attention layers")
        for name, tensor in per_token.items():
            if tensor is not None and tuple(tensor.shape) != (batch, length):
                raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {(batch, length)} like input_ids")
        mask = KeyMask.prepare(attention_mask, batch, length, past_length, like=" like input_ids")
        self.embeddings.check_inputs(
            input_ids, per_token["token_type_ids"], per_token["position_ids"], per_token["langs"], past_length + length
        )
        return batch, length, mask

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        reads: HeadReads | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """Encode a batch (transformers' XLMModel arguments; its ``cache`` is ``past_key_values``).

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, H)).
            attention_mask: (B, T) 1 for real tokens, 0 for padding ((B, P + T) with a prefix).
                Without it, ``lengths`` (B,) real tokens per row, else the ``pad_token_id`` tokens.
            langs: (B, T) language ids. token_type_ids: (B, T) ids looked up in the word table.
            position_ids: (B, T) (default 0..T-1).
            past_key_values: a transformers Cache holding a key/value prefix of P positions per
                layer (peft's prefix tuning); every query also attends to it. The encoder keeps no
                cache: ``use_cache`` is ignored.
            reads: what the caller reads (:class:`~hf_variants.modules.fast_path.HeadReads`);
                last_hidden_state then holds those positions alone.
            kwargs: ``cache`` (transformers >= 5.24's name for ``past_key_values``), ``cache_position``.
        Returns:
            BaseModelOutputWithPooling: last_hidden_state (B, T, H), zeros at padding; pooler_output
            None; hidden_states (layers + 1 of (B, T, H)) and attentions (layers of (B, heads, T, S))
            if asked.
        """
        config = self.config
        output_attentions = bool(output_attentions if output_attentions is not None else config.output_attentions)
        output_hidden_states = bool(
            output_hidden_states if output_hidden_states is not None else config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else config.return_dict
        reads = reads or HeadReads()
        # one cache, under either name (or None)
        past_key_values = pick_cache(kwargs.pop("cache", None), past_key_values, kwargs)
        per_token = {"token_type_ids": token_type_ids, "position_ids": position_ids, "langs": langs}
        batch, length, mask = self._check_inputs(
            input_ids, inputs_embeds, attention_mask, per_token, lengths, past_key_values, kwargs
        )
        device = (input_ids if input_ids is not None else inputs_embeds).device
        if position_ids is None:  # with a prefix too: the tokens' positions start at 0
            position_ids = torch.arange(length, device=device).expand(batch, length)

        fast_path = None
        if config.padding_free:  # the speed plug-in's rule (modules/fast_path.py): CPU, nothing it cannot give
            fast_path = fast_path_for(
                config, device, output_attentions or output_hidden_states, past_key_values is not None
            )
        if fast_path is not None:  # the same modules, packed and only where read (modules/fast_path.py)
            sequence_output, _ = fast_path.encode(
                self, input_ids, token_type_ids, position_ids, inputs_embeds, mask.new_tokens, reads, {"langs": langs}
            )
            output = BaseModelOutputWithPooling(last_hidden_state=sequence_output)
            return output if return_dict else output.to_tuple()

        # The plain path.
        embedding_output = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds, langs)
        attention_bias = make_attention_bias(mask.keys, embedding_output.dtype)  # (B, 1, 1, P + T) or None
        sequence_output, all_hidden_states, all_attentions = self.encoder(
            embedding_output,
            attention_bias,
            zeroing_mask(mask.new_tokens, length),
            output_attentions,
            output_hidden_states,
            past_key_values,
        )
        summary = summary_positions(config.summary_type, mask.new_tokens, batch, length, device)
        output = BaseModelOutputWithPooling(
            last_hidden_state=reads.select(sequence_output, summary),
            hidden_states=all_hidden_states,
            attentions=all_attentions,
        )
        return output if return_dict else output.to_tuple()


# ----------------------------------------------------------------------------- heads
def _return(output: ModelOutput, return_dict: bool | None) -> ModelOutput | tuple:
    """The heads' return: the ModelOutput unless ``return_dict=False`` is asked for."""
    return output if return_dict is not False else output.to_tuple()


def _fast(config: XLMConfig, input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None) -> bool:
    """Whether this call may take the fast path (heads ask before reading their labels: a sync)."""
    reference = input_ids if input_ids is not None else inputs_embeds
    return reference is not None and config.padding_free and fast_path_enabled(config, reference.device)


class XLMWithLMHeadModel(XLMPreTrainedModel, CheckedGenerationMixin, GenerationMixin):
    """MLM / TLM (and CLM with ``is_decoder``): logits = h W_emb^T + b at every position (transformers'
    ``XLMPredLayer``: the decoder alone, tied to the word embeddings), loss = cross-entropy where
    ``labels`` != -100 (labels are not shifted). With ``config.sparse_prediction`` and labels, logits
    are computed at the labelled positions only, (num_labelled, V).

    ``generate()`` works as transformers' XLMWithLMHeadModel: each step re-encodes the sequence with
    ``config.mask_token_id`` appended (language ``config.lang_id`` everywhere, no cache; a
    left-padded batch keeps its attention mask and counts positions from each row's first real
    token) and predicts the token at that mask. With ``output_attentions`` /
    ``output_hidden_states`` each step returns its (B, heads, T + 1, T + 1) attentions and
    (B, T + 1, H) hidden states, as transformers' XLM does."""

    _tied_weights_keys = {"mlm_head.decoder.weight": "transformer.embeddings.word_embeddings.weight"}

    # Not forwarded to a step. The per-token inputs are rebuilt from the sequence so far
    # (transformers' XLM drops them too: the prompt's would not cover the appended tokens). The
    # cache generate() creates is dropped: every step re-encodes the whole sequence, since the
    # appended mask token moves each step and changes every position's context (an encoder keeps
    # no cache; one handed in would be read as a key/value prefix).
    _rebuilt_each_step = (
        "token_type_ids",
        "attention_mask",
        "position_ids",
        "cache",
        "past_key_values",
        "cache_position",
    )

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config)
        self.transformer = XLMModel(config)
        self.mlm_head = MaskedLMHead(
            config.hidden_size, config.vocab_size, config.hidden_act, config.layer_norm_eps, transform=False
        )
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.mlm_head.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.mlm_head.decoder = new_embeddings

    def _mlm_reads(
        self,
        labels: torch.Tensor | None,
        input_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        wants_every_layer: bool,
    ) -> HeadReads:
        """What the head reads: every position, or with sparse prediction (not causal) the labelled
        ones alone; ``padding`` when a label sits on a padding position (fast path only)."""
        config = self.config
        padding = _fast(config, input_ids, inputs_embeds) and targets_at_padding(labels, attention_mask, IGNORE_INDEX)
        reference = input_ids if input_ids is not None else inputs_embeds
        if (
            not config.sparse_prediction
            or config.is_decoder  # causal stacks compute every position
            or labels is None
            or reference is None
            or tuple(labels.shape) != tuple(reference.shape[:2])
            or wants_every_layer
            or not bool((labels != IGNORE_INDEX).any())
        ):
            return HeadReads(padding=padding)
        return HeadReads(positions=selected_positions(labels != IGNORE_INDEX), padding=padding)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> MaskedLMOutput | tuple:
        """labels: (B, T) target ids, -100 where nothing is predicted (for CLM: the next tokens).
        Logits (B, T, V), or (num_labelled, V) with ``config.sparse_prediction``."""
        config = self.config
        wants_every_layer = bool(
            (output_attentions if output_attentions is not None else config.output_attentions)
            or (output_hidden_states if output_hidden_states is not None else config.output_hidden_states)
        )
        reads = self._mlm_reads(labels, input_ids, inputs_embeds, attention_mask, wants_every_layer)
        outputs = self.transformer(
            input_ids,
            attention_mask,
            langs,
            token_type_ids,
            position_ids,
            lengths,
            past_key_values,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=reads,
            **kwargs,
        )
        if reads.positions is not None:  # (B, T) labels -> (B, M) at the positions read
            positions, real = reads.positions
            labels = labels.gather(1, positions).masked_fill(~real, IGNORE_INDEX)
        loss, logits = masked_lm_loss(
            self.mlm_head, outputs.last_hidden_state, labels, config.vocab_size, bool(config.sparse_prediction)
        )
        return _return(
            MaskedLMOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )

    def prepare_inputs_for_generation(
        self, input_ids: torch.Tensor, is_first_iteration: bool = False, **kwargs
    ) -> dict:
        """input_ids (B, T) -> the step's inputs: (B, T + 1) ids ending in the mask token, and langs
        (B, T + 1), and for a left-padded batch its attention_mask and position_ids (B, T + 1) so
        each row generates as it would alone; every other keyword generate() hands over (``output_attentions``,
        ``output_hidden_states``, ``use_cache``, a caller's own model kwargs) is forwarded unchanged,
        except the per-token inputs the step rebuilds and the cache (``_rebuilt_each_step``)."""
        mask = torch.full(
            (input_ids.shape[0], 1), self.config.mask_token_id, dtype=input_ids.dtype, device=input_ids.device
        )
        input_ids = torch.cat([input_ids, mask], dim=1)
        langs = torch.full_like(input_ids, self.config.lang_id) if self.config.n_langs > 1 else None
        model_inputs = {"input_ids": input_ids, "langs": langs}
        attention_mask = kwargs.get("attention_mask")
        if attention_mask is not None and not bool(attention_mask.all()):
            # A padded batch: the mask token and every generated token must sit where they would in
            # the row alone. With left padding, the real tokens are counted from 0 (position_ids) and
            # the padding is masked out; right padding would put the mask token after a short
            # row's padding, at a position it never has alone.
            if attention_mask.dim() != 2 or attention_mask.shape != input_ids[:, :-1].shape:
                raise ValueError(
                    f"attention_mask has shape {tuple(attention_mask.shape)}, expected {tuple(input_ids[:, :-1].shape)} "
                    "like input_ids"
                )
            if not bool(attention_mask[:, -1].all()):
                raise ValueError(
                    "XLMWithLMHeadModel.generate() needs prompts padded on the left (tokenizer.padding_side = "
                    "'left'): a right-padded row would continue after its padding"
                )
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=1)
            model_inputs["attention_mask"] = attention_mask
            model_inputs["position_ids"] = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        for key, value in kwargs.items():
            if key not in self._rebuilt_each_step and key not in model_inputs:
                model_inputs[key] = value
        return model_inputs


def summary_arguments(config: XLMConfig) -> dict:
    """transformers' XLMSequenceSummary options, from the config's ``summary_*`` fields."""
    return dict(
        use_proj=config.summary_use_proj,
        proj_to_labels=config.summary_proj_to_labels,
        activation=config.summary_activation,
        first_dropout=config.summary_first_dropout,
        last_dropout=config.summary_last_dropout,
    )


class XLMForSequenceClassification(XLMPreTrainedModel):
    """The summary token (``summary_type``, first by default) -> transformers' ``SequenceSummary``
    (dropout -> Linear(H, num_labels)). labels: (B,) class ids, (B,) floats for regression
    (num_labels == 1), or (B, num_labels) multi-hot (problem_type). Logits (B, num_labels)."""

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = XLMModel(config)
        self.classifier = SequenceSummary(config.hidden_size, config.num_labels, **summary_arguments(config))
        if self.classifier.output_size != config.num_labels:
            raise ValueError(
                "XLMForSequenceClassification needs the summary projected to num_labels: set "
                "summary_use_proj=True and summary_proj_to_labels=True"
            )
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput | tuple:
        outputs = self.transformer(
            input_ids,
            attention_mask,
            langs,
            token_type_ids,
            position_ids,
            lengths,
            past_key_values,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(summary_only=True),
            **kwargs,
        )
        logits = self.classifier(summarize(outputs.last_hidden_state, self.config.summary_type, attention_mask))
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return _return(
            SequenceClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class XLMForTokenClassification(XLMPreTrainedModel):
    """Per-token labels (NER, POS): dropout + linear on every position. labels: (B, T) class ids,
    -100 on ignored tokens. Logits (B, T, num_labels)."""

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = XLMModel(config)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = make_dropout(dropout, config.padding_free)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> TokenClassifierOutput | tuple:
        # A target on a padding position is read from the state computed there: only the padded
        # layout computes it (collators put -100 on padding, so this is the rare case).
        padding = _fast(self.config, input_ids, inputs_embeds) and targets_at_padding(
            labels, attention_mask, IGNORE_INDEX
        )
        outputs = self.transformer(
            input_ids,
            attention_mask,
            langs,
            token_type_ids,
            position_ids,
            lengths,
            past_key_values,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(padding=padding),
            **kwargs,
        )
        logits = self.classifier(self.dropout(outputs.last_hidden_state))
        loss = token_classification_loss(logits, labels) if labels is not None else None
        return _return(
            TokenClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class XLMForQuestionAnsweringSimple(XLMPreTrainedModel):
    """Start/end logits per token (transformers' XLMForQuestionAnsweringSimple, the class its
    AutoModelForQuestionAnswering picks for XLM). As in transformers, the span softmax runs over all
    T positions, padding included (``HeadReads(padding=True)``: the fast path runs it padded). The
    beam-search SQuAD head of transformers' XLMForQuestionAnswering is not provided."""

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = XLMModel(config)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> QuestionAnsweringModelOutput | tuple:
        """start_positions / end_positions: (B,) token indices. Logits (B, T) each."""
        outputs = self.transformer(
            input_ids,
            attention_mask,
            langs,
            token_type_ids,
            position_ids,
            lengths,
            past_key_values,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(padding=True),
            **kwargs,
        )
        start_logits, end_logits = self.qa_outputs(outputs.last_hidden_state).unbind(dim=-1)
        start_logits, end_logits = start_logits.contiguous(), end_logits.contiguous()
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_extraction_loss(start_logits, end_logits, start_positions, end_positions)
        return _return(
            QuestionAnsweringModelOutput(
                loss=loss,
                start_logits=start_logits,
                end_logits=end_logits,
                hidden_states=outputs.hidden_states,
                attentions=outputs.attentions,
            ),
            return_dict,
        )


class ChoiceScorer(SequenceSummary):
    """transformers' XLMForMultipleChoice head: the sequence summary (B*C, num_labels or H), then
    ``logits_proj`` to one score per choice (B*C, 1). The summary's weights sit where sequence
    classification keeps them (``classifier.summary``), so one key map serves both heads."""

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config.hidden_size, config.num_labels, **summary_arguments(config))
        self.logits_proj = nn.Linear(self.output_size, 1)

    def forward(self, summary: torch.Tensor, pooled: torch.Tensor | None = None) -> torch.Tensor:
        return self.logits_proj(super().forward(summary))


class XLMForMultipleChoice(XLMPreTrainedModel):
    """Inputs (B, C, T); one score per choice from the summary token; logits (B, C); labels (B,).
    ``lengths``: (B, C), the real tokens of each choice (flattened with the choices); a (B,)
    per-example ``lengths`` cannot say which choice it measures: like transformers'
    XLMForMultipleChoice it is dropped with a warning and the attention mask (or the pad tokens)
    gives the padding."""

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config)
        self.transformer = XLMModel(config)
        self.classifier = ChoiceScorer(config)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> MultipleChoiceModelOutput | tuple:
        """All inputs (B, C, T) (inputs_embeds (B, C, T, H)), ``lengths`` (B, C); labels (B,) the
        right choice."""
        num_choices = choice_count(input_ids, inputs_embeds)
        if lengths is not None and lengths.dim() == 1:
            warnings.warn(
                f"lengths of shape {tuple(lengths.shape)} (one per example) cannot be used with multiple choice "
                "inputs (batch, num_choices, seq_len): ignored; pass attention_mask or (batch, num_choices) lengths",
                stacklevel=2,
            )
            lengths = None
        attention_mask = flatten_choices(attention_mask)
        outputs = self.transformer(
            flatten_choices(input_ids),
            attention_mask,
            flatten_choices(langs),
            flatten_choices(token_type_ids),
            flatten_choices(position_ids),
            None if lengths is None else lengths.reshape(-1),
            past_key_values,
            flatten_choices(inputs_embeds),
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(summary_only=True),
            **kwargs,
        )
        summary = summarize(outputs.last_hidden_state, self.config.summary_type, attention_mask)
        logits = self.classifier(summary).view(-1, num_choices)
        loss = multiple_choice_loss(logits, labels) if labels is not None else None
        return _return(
            MultipleChoiceModelOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


__all__ = [
    "XLMPreTrainedModel",
    "XLMModel",
    "XLMWithLMHeadModel",
    "XLMForSequenceClassification",
    "XLMForTokenClassification",
    "XLMForQuestionAnsweringSimple",
    "XLMForMultipleChoice",
]
