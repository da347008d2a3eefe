"""BERT (Devlin et al. 2019): a post-LN Transformer encoder pretrained with masked language
modelling + next sentence prediction.

The architecture, top to bottom in the order data flows: :class:`BertEmbeddings` (word + position
+ segment, LayerNorm, dropout) -> :class:`BertSelfAttention` (fused QKV projection, the shared
:func:`~hf_variants.modules.attention.attention_function`: eager or SDPA by ``attn_implementation``)
-> :class:`BertFFN` -> :class:`BertLayer` (residuals, post-LN; pre-LN for Xiong et al.'s ablation)
-> :class:`BertEncoder` (the stack; ALBERT-style sharing for ablations) -> :class:`BertModel`
(+ tanh pooler over [CLS]) -> the heads: :class:`BertForPreTraining` (MLM + NSP, the paper's
objective), :class:`BertForMaskedLM`, :class:`BertForNextSentencePrediction`,
:class:`BertForSequenceClassification`, :class:`BertForTokenClassification`,
:class:`BertForQuestionAnswering`, :class:`BertForMultipleChoice`.

Submodule names are those of the key map (``hf_variants/conversion/bert_layout.py``), which
converts to and from transformers' BERT (fused ``qkv`` = its query, key and value stacked).

Speed is a plug-in: with ``config.padding_free`` (default on) and CPU inputs, :class:`BertModel`
hands its forward to :class:`~hf_variants.modules.fast_path.PaddingFreePath`, which runs these same
modules on the real tokens only (packed) and computes the last layer at the positions a head reads
(:class:`~hf_variants.modules.heads.HeadReads`); results are identical. The switch also selects the
CPU kernels when the model is built: the uniform-mask dropout (``modules/dropout.py``, for hidden
states and attention probabilities; same distribution, another random stream) and the MLM decoder
(``modules/heads.py`` ``TiedDecoder``), instead of torch's ``nn.Dropout`` and ``nn.Linear``. With
``config.padding_free = False`` the plain path below is all that runs, in plain PyTorch; on CUDA too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    NextSentencePredictorOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import ModelOutput

from ...modules.attention import (
    FusedQKVProjection,
    attention_function,
    fast_attention_function,
    packed_self_attention,
)
from ...modules.cache import check_cache_batch, check_cache_positions
from ...modules.dropout import make_dropout
from ...modules.embeddings import sinusoidal_table
from ...modules.fast_path import fast_path_enabled, fast_path_for
from ...modules.heads import (
    IGNORE_INDEX,
    HeadReads,
    MaskedLMHead,
    PooledClassifier,
    Pooler,
    choice_count,
    classifier_dropout,
    flatten_choices,
    masked_lm_loss,
    multiple_choice_loss,
    sentence_relation_loss,
    sequence_classification_loss,
    span_extraction_loss,
    summarize,
    token_classification_loss,
)
from ...modules.inputs import check_index_range, check_not_empty, pick_cache
from ...modules.masks import (
    KeyMask,
    gather_positions,
    make_attention_bias,
    selected_positions,
    summary_positions,
    targets_at_padding,
)
from ...modules.norms import build_norm
from ...modules.padding import UnpaddedBatch
from ...modules.token_ids import check_token_id
from ..modeling_base import VariantPreTrainedModel
from .configuration_bert import BertConfig


# ----------------------------------------------------------------------------- embeddings
class BertEmbeddings(nn.Module):
    """word + position + segment embeddings -> LayerNorm -> dropout (-> Linear E -> H when the
    embeddings are factorized, ``config.embedding_size``). Inputs (B, T), or packed (N,) on the
    fast path; output (B, T, H) or (N, H)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        embedding_size = config.embedding_size or config.hidden_size
        self.position_embedding_type = config.position_embedding_type  # learned | sinusoidal | none
        self.max_position_embeddings = config.max_position_embeddings
        self.type_vocab_size = config.type_vocab_size
        # A pad id outside the table is refused by name (torch's own check is an AssertionError).
        check_token_id(
            "pad_token_id", config.pad_token_id, config.vocab_size, "it is the padding row of the word embeddings"
        )
        self.word_embeddings = nn.Embedding(config.vocab_size, embedding_size, padding_idx=config.pad_token_id)
        if self.position_embedding_type == "learned":
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, embedding_size)
        elif self.position_embedding_type == "sinusoidal":  # a function of the config: not saved
            self.register_buffer(
                "sinusoidal_positions",
                sinusoidal_table(config.max_position_embeddings, embedding_size),
                persistent=False,
            )
        self.token_type_embeddings = (
            nn.Embedding(config.type_vocab_size, embedding_size) if config.type_vocab_size > 0 else None
        )
        self.layer_norm = nn.LayerNorm(embedding_size, eps=config.layer_norm_eps)
        self.dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)
        self.projection = (
            nn.Linear(embedding_size, config.hidden_size) if embedding_size != config.hidden_size else None
        )

    def reset_fixed_buffers(self) -> None:
        """Recompute the sinusoidal table (after meta-device initialisation in from_pretrained)."""
        if self.position_embedding_type == "sinusoidal":
            table = sinusoidal_table(self.max_position_embeddings, self.word_embeddings.embedding_dim)
            self.sinusoidal_positions.copy_(table.to(self.sinusoidal_positions.device))

    def check_inputs(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
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
            if self.token_type_embeddings is None:
                raise ValueError(
                    "token_type_ids were given but this model has no segment embeddings (type_vocab_size=0)"
                )
            check_index_range(token_type_ids, self.type_vocab_size, "token_type_ids", "type_vocab_size")

    def forward(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """ids (B, T) or (N,), or ``inputs_embeds`` (B, T, E) -> (B, T, H) or (N, H)."""
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(position_ids)
            embeddings = embeddings + self.token_type_embeddings(token_type_ids)
        if self.position_embedding_type == "learned":
            embeddings = embeddings + self.position_embeddings(position_ids)
        elif self.position_embedding_type == "sinusoidal":  # the fp32 buffer, added in the model's dtype
            embeddings = embeddings + self.sinusoidal_positions[position_ids].to(embeddings.dtype)
        embeddings = self.dropout(self.layer_norm(embeddings))
        return embeddings if self.projection is None else self.projection(embeddings)


# ----------------------------------------------------------------------------- attention
class BertSelfAttention(nn.Module):
    """Multi-head self-attention: fused QKV projection -> attention -> output projection.
    (B, T, H) -> (B, T, H) (or (N, H) packed, or (B, M, H) at ``query_positions``)."""

    adapter_role = "attention"  # peft's default targets: its input projection (integrations/peft_targets.py)

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config  # attn_implementation is read at each call: it may be switched at run time
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim or config.hidden_size // config.num_attention_heads
        self.inner_size = self.num_heads * self.head_dim
        self.scale = config.attention_scale if config.attention_scale is not None else 1.0 / math.sqrt(self.head_dim)
        self.dropout_prob = config.attention_probs_dropout_prob
        self.is_causal = config.is_decoder
        # The speed plug-in's CPU dropout kernel on the probabilities (modules/attention.py), chosen at build.
        self.attend = fast_attention_function if config.padding_free else attention_function
        # One GEMM instead of three; the key map splits it into transformers' query, key, value.
        self.qkv = FusedQKVProjection(config.hidden_size, 3 * self.inner_size, bias=config.use_bias)
        self.out = nn.Linear(self.inner_size, config.hidden_size, bias=config.use_bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, heads * D) -> (B, heads, T, D)."""
        return x.view(*x.shape[:2], self.num_heads, self.head_dim).transpose(1, 2)

    def _project(
        self, hidden_states: torch.Tensor, query_positions: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, H) -> query (B, T or M, inner), key and value (B, T, inner). With ``query_positions``
        (B, M) the queries nobody reads are never projected (the fused weight's query rows alone)."""
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
        compute those queries only (the fast path's last layer). ``past_key_values``: a key/value
        prefix of P positions per layer (prefix tuning), read at ``layer_idx``; S = P + T.
        Returns (output, attention probabilities (B, heads, T, S) if asked, else None)."""
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
                "(cached and memory positions count; build the mask over all of them)"
            )
        context, probs = self.attend(query, key, value, attention_mask, self.is_causal, dropout, self.scale, backend)
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2)
        if torch.compiler.is_exporting():
            # The ONNX exporter decomposes SDPA into matmuls whose output is (B, heads, T, D)-contiguous:
            # the reshape below must not be recorded as a view of it (docs/ecosystem.md, export).
            context = context.clone(memory_format=torch.contiguous_format)
        return self.out(context.reshape(batch, length, self.inner_size)), probs


# ----------------------------------------------------------------------------- feed-forward
class BertFFN(nn.Module):
    """FFN(x) = W_down act(W_up x) (gated for T5-style ablations: W_down (act(W_gate x) * W_up x)).
    (..., H) -> (..., H)."""

    adapter_role = "feed_forward"  # (IA)^3's feed-forward module (integrations/peft_targets.py)

    def __init__(self, config: BertConfig) -> None:
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
class BertLayer(GradientCheckpointingLayer):
    """One block: x = LN(x + Dropout(Attention(x))); x = LN(x + Dropout(FFN(x))) (post-LN, BERT);
    with ``config.pre_layer_norm``: x = x + Dropout(Attention(LN(x))), and likewise for the FFN.

    A layer whose attention or FFN is shared with layer 0 (``config.layer_sharing``) stores none and
    is handed layer 0's by the encoder (so safetensors sees each shared tensor once)."""

    def __init__(self, config: BertConfig, own_attention: bool = True, own_ffn: bool = True) -> None:
        super().__init__()
        self.pre_layer_norm = config.pre_layer_norm
        self.attention = BertSelfAttention(config) if own_attention else None
        self.attention_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.ffn = BertFFN(config) if own_ffn else None
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
        shared_attention: BertSelfAttention | None = None,
        shared_ffn: BertFFN | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, T, H) -> ((B, T, H), attention probabilities or None); arguments as
        :meth:`BertSelfAttention.forward`. With ``query_positions`` (B, M) the output is (B, M, H).
        All positional where they vary per depth: gradient checkpointing replays positional inputs."""
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


class BertEncoder(nn.Module):
    """``num_hidden_layers`` BertLayers (+ a final norm for pre-LN). ``config.layer_sharing``
    (ALBERT's ablation): "none", "all" (one layer applied at every depth), "attention" or "ffn"
    (that sub-block of layer 0 used at every depth)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.num_layers = config.num_hidden_layers
        self.sharing = config.layer_sharing
        if self.sharing == "all":
            self.layers = nn.ModuleList([BertLayer(config)])
        else:
            self.layers = nn.ModuleList(
                BertLayer(
                    config, own_attention=i == 0 or self.sharing != "attention", own_ffn=i == 0 or self.sharing != "ffn"
                )
                for i in range(self.num_layers)
            )
        # Pre-LN leaves the residual stream un-normalised: one norm closes the stack.
        self.final_layer_norm = (
            build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps) if config.pre_layer_norm else None
        )

    def layer_at(self, depth: int) -> BertLayer:
        return self.layers[0] if self.sharing == "all" else self.layers[depth]

    def shared_blocks(self, depth: int) -> tuple[BertSelfAttention | None, BertFFN | None]:
        """(attention, FFN) of layer 0 where the layer at ``depth`` shares them, else None."""
        return (
            self.layers[0].attention if self.sharing == "attention" else None,
            self.layers[0].ffn if self.sharing == "ffn" else None,
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        past_key_values: Cache | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None, tuple[torch.Tensor, ...] | None]:
        """(B, T, H) embeddings, additive (B, 1, 1, S) bias -> (last hidden states (B, T, H), every
        layer's input + the output if asked, every layer's attention probabilities if asked)."""
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
            if output_attentions:
                all_attentions += (probs,)
        if self.final_layer_norm is not None:
            hidden_states = self.final_layer_norm(hidden_states)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)
        return hidden_states, all_hidden_states, all_attentions


# ----------------------------------------------------------------------------- model
class BertPreTrainedModel(VariantPreTrainedModel):
    config_class = BertConfig
    base_model_prefix = "bert"
    # The unit device_map="auto" never splits, FSDP wraps and gradient checkpointing recomputes.
    _no_split_modules = ["BertLayer"]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, BertEmbeddings):
            module.reset_fixed_buffers()

    def build_encoder(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        """The heads' encoder, under ``base_model_prefix``: ``self.bert``, which the heads call as
        ``self.base_model`` (transformers' name for that submodule). The hook of the variants that
        reuse BERT's heads on their own encoder (RoBERTa: ``self.roberta``, a RobertaModel)."""
        self.bert = BertModel(config, add_pooling_layer=add_pooling_layer)


class BertModel(BertPreTrainedModel):
    """The bare encoder: embeddings -> encoder -> pooler (tanh over the summary token, [CLS])."""

    embeddings_class: type[BertEmbeddings] = BertEmbeddings  # RoBERTa's counts positions from the padding index
    encoder_class: type[BertEncoder] = BertEncoder  # ALBERT's applies groups of shared layers

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__(config)  # config.check_architecture(): a ValueError naming a bad field
        self.config = config
        self.embeddings = self.embeddings_class(config)
        self.encoder = self.encoder_class(config)
        self.pooler = Pooler(config.hidden_size) if add_pooling_layer else None
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
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        past_key_values: Cache | None,
        kwargs: dict,
    ) -> tuple[int, int, int, KeyMask]:
        """Every input against the main one; a ValueError naming the first problem. Returns (B, T,
        the prefix length P, the checked mask)."""
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
        for name, tensor in {"token_type_ids": token_type_ids, "position_ids": position_ids}.items():
            if tensor is not None and tuple(tensor.shape) != (batch, length):
                raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {(batch, length)} like input_ids")
        mask = KeyMask.prepare(attention_mask, batch, length, past_length, like=" like input_ids")
        self.embeddings.check_inputs(input_ids, token_type_ids, position_ids, past_length + length)
        return batch, length, past_length, mask

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        reads: HeadReads | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """Encode a batch.

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, E)).
            attention_mask: (B, T) 1 for real tokens, 0 for padding ((B, P + T) with a prefix).
            token_type_ids: (B, T) segment ids (default 0). position_ids: (B, T) (default 0..T-1).
            past_key_values: a transformers Cache holding a key/value prefix of P positions per
                layer (peft's prefix tuning); every query also attends to it. Encoders keep no
                cache: ``use_cache`` is ignored, as transformers' BERT ignores it.
            reads: what the caller reads (:class:`~hf_variants.modules.fast_path.HeadReads`): the
                summary token or some positions only; last_hidden_state then holds those alone.
            kwargs: ``cache`` (transformers >= 5.24's name for ``past_key_values``), ``cache_position``.
        Returns:
            BaseModelOutputWithPooling: last_hidden_state (B, T, H) (zeros at padding on the fast
            path), pooler_output (B, H) or None, hidden_states (layers + 1 of (B, T, H)) and
            attentions (layers of (B, heads, T, S)) if asked.
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
        batch, length, _, mask = self._check_inputs(
            input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids, past_key_values, kwargs
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
            sequence_output, pooled_output = fast_path.encode(
                self, input_ids, token_type_ids, position_ids, inputs_embeds, mask.new_tokens, reads
            )
            output = BaseModelOutputWithPooling(last_hidden_state=sequence_output, pooler_output=pooled_output)
            return output if return_dict else output.to_tuple()

        # The plain path.
        embedding_output = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds)
        attention_bias = make_attention_bias(mask.keys, embedding_output.dtype)  # (B, 1, 1, P + T) or None
        sequence_output, all_hidden_states, all_attentions = self.encoder(
            embedding_output, attention_bias, output_attentions, output_hidden_states, past_key_values
        )
        summary = summary_positions(
            config.summary_type, mask.new_tokens, batch, length, device
        )  # (B, 1); None for "mean"
        pooled_output = None
        if self.pooler is not None:
            pooled_output = self.pooler(summarize(sequence_output, config.summary_type, mask.new_tokens))
        output = BaseModelOutputWithPooling(
            last_hidden_state=reads.select(sequence_output, summary),
            pooler_output=pooled_output,
            hidden_states=all_hidden_states,
            attentions=all_attentions,
        )
        return output if return_dict else output.to_tuple()


# ----------------------------------------------------------------------------- heads
def _return(output: ModelOutput, return_dict: bool | None) -> ModelOutput | tuple:
    """The heads' return: the ModelOutput unless ``return_dict=False`` is asked for."""
    return output if return_dict is not False else output.to_tuple()


def _wants_every_layer(config: BertConfig, output_attentions: bool | None, output_hidden_states: bool | None) -> bool:
    wants = output_attentions if output_attentions is not None else config.output_attentions
    return bool(wants or (output_hidden_states if output_hidden_states is not None else config.output_hidden_states))


class BertMaskedLMHeadModel(BertPreTrainedModel):
    """What the two MLM models share: the tied MLM head, and which positions the last layer must
    compute with ``config.sparse_prediction`` (the masked tokens, [CLS] when pooled)."""

    _tied_weights_keys = {"mlm_head.decoder.weight": "bert.embeddings.word_embeddings.weight"}
    uses_pooler = False

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.build_encoder(config, add_pooling_layer=self.uses_pooler)  # self.bert (RoBERTa: self.roberta)
        # transform (dense, activation, LayerNorm) + decoder tied to the word embeddings, own bias
        # (the speed plug-in's TiedDecoder with config.padding_free, else nn.Linear).
        self.mlm_head = MaskedLMHead(
            config.hidden_size,
            config.vocab_size,
            config.hidden_act,
            config.layer_norm_eps,
            config.embedding_size,
            cpu_kernel=config.padding_free,
        )

    def get_output_embeddings(self) -> nn.Linear:
        return self.mlm_head.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.mlm_head.decoder = new_embeddings

    def _only_labelled_positions_are_read(
        self, labels: torch.Tensor | None, input_ids, inputs_embeds, output_attentions, output_hidden_states
    ) -> bool:
        """True when only the labelled positions are read: labels of the inputs' (B, T) shape with
        at least one target, and no hidden states or attentions asked for."""
        reference = input_ids if input_ids is not None else inputs_embeds
        if labels is None or reference is None or tuple(labels.shape) != tuple(reference.shape[:2]):
            return False
        return not _wants_every_layer(self.config, output_attentions, output_hidden_states) and bool(
            (labels != IGNORE_INDEX).any()
        )

    def _mlm_reads(
        self,
        labels: torch.Tensor | None,
        input_ids,
        inputs_embeds,
        attention_mask,
        output_attentions,
        output_hidden_states,
    ) -> HeadReads:
        """With sparse prediction: the masked positions (+ the summary token for the pooler)."""
        config = self.config
        reference = input_ids if input_ids is not None else inputs_embeds
        fast = reference is not None and config.padding_free and fast_path_enabled(config, reference.device)
        padding = fast and targets_at_padding(labels, attention_mask, IGNORE_INDEX)
        if (
            not config.sparse_prediction
            or config.is_decoder
            or (self.uses_pooler and config.summary_type == "mean")  # the pooler reads every position
            or not self._only_labelled_positions_are_read(
                labels, input_ids, inputs_embeds, output_attentions, output_hidden_states
            )
        ):
            return HeadReads(padding=padding)
        selected = labels != IGNORE_INDEX
        if self.uses_pooler:
            batch, length = selected.shape
            selected.scatter_(
                1, summary_positions(config.summary_type, attention_mask, batch, length, selected.device), True
            )
        return HeadReads(positions=selected_positions(selected), padding=padding)

    def _mlm_loss(
        self, sequence_output: torch.Tensor, labels: torch.Tensor | None, reads: HeadReads
    ) -> tuple[torch.Tensor | None, torch.Tensor]:
        """(mean MLM loss or None, logits (B, T, V), or (num_masked, V) with sparse prediction)."""
        if reads.positions is not None:  # (B, T) labels -> (B, M) at the positions read
            positions, real = reads.positions
            labels = labels.gather(1, positions).masked_fill(~real, IGNORE_INDEX)
        return masked_lm_loss(
            self.mlm_head, sequence_output, labels, self.config.vocab_size, bool(self.config.sparse_prediction)
        )


@dataclass
class BertForPreTrainingOutput(ModelOutput):
    """loss = mlm_loss + nsp_loss; prediction_logits (B, T, V) (or (num_masked, V) with sparse
    prediction); seq_relationship_logits (B, 2)."""

    loss: torch.Tensor | None = None
    mlm_loss: torch.Tensor | None = None
    nsp_loss: torch.Tensor | None = None
    prediction_logits: torch.Tensor | None = None
    seq_relationship_logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class BertForPreTraining(BertMaskedLMHeadModel):
    """MLM + NSP, the paper's pretraining objective (loss = the sum of the two means)."""

    uses_pooler = True

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.nsp_head = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        next_sentence_label: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> BertForPreTrainingOutput | tuple:
        """labels: (B, T) MLM targets (-100 elsewhere); next_sentence_label: (B,) 0 = next, 1 = random."""
        reads = self._mlm_reads(
            labels, input_ids, inputs_embeds, attention_mask, output_attentions, output_hidden_states
        )
        outputs = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=reads,
            **kwargs,
        )
        mlm_loss, prediction_logits = self._mlm_loss(outputs.last_hidden_state, labels, reads)
        seq_relationship_logits = self.nsp_head(outputs.pooler_output)
        nsp_loss = None
        if next_sentence_label is not None:
            nsp_loss = sentence_relation_loss(seq_relationship_logits, next_sentence_label, "next_sentence_label")
        loss = mlm_loss + nsp_loss if mlm_loss is not None and nsp_loss is not None else None
        return _return(
            BertForPreTrainingOutput(
                loss=loss,
                mlm_loss=mlm_loss,
                nsp_loss=nsp_loss,
                prediction_logits=prediction_logits,
                seq_relationship_logits=seq_relationship_logits,
                hidden_states=outputs.hidden_states,
                attentions=outputs.attentions,
            ),
            return_dict,
        )


class BertForMaskedLM(BertMaskedLMHeadModel):
    """Masked language modelling; the decoder is tied to the word embeddings. With
    ``config.sparse_prediction`` and labels, logits are computed at the masked positions only and
    returned as (num_masked, V) instead of (B, T, V)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> MaskedLMOutput | tuple:
        """labels: (B, T) target ids, -100 where nothing is predicted."""
        reads = self._mlm_reads(
            labels, input_ids, inputs_embeds, attention_mask, output_attentions, output_hidden_states
        )
        outputs = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=reads,
            **kwargs,
        )
        loss, logits = self._mlm_loss(outputs.last_hidden_state, labels, reads)
        return _return(
            MaskedLMOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class BertForNextSentencePrediction(BertPreTrainedModel):
    """The NSP head alone: does segment B follow segment A? labels: (B,) 0 = B follows A, 1 = B is
    random. Logits (B, 2) from the pooled [CLS]."""

    reads_summary_only = True  # the head reads the pooled summary token alone

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.build_encoder(config)  # self.bert (RoBERTa: self.roberta)
        self.nsp_head = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> NextSentencePredictorOutput | tuple:
        outputs = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(summary_only=self.reads_summary_only),
            **kwargs,
        )
        logits = self.nsp_head(outputs.pooler_output)
        loss = sentence_relation_loss(logits, labels, "labels") if labels is not None else None
        return _return(
            NextSentencePredictorOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class BertForSequenceClassification(BertPreTrainedModel):
    """Single sentences or pairs (NLI): dropout + linear on the pooled [CLS]. labels: (B,) class
    ids, (B,) floats for regression (num_labels == 1), or (B, num_labels) multi-hot
    (problem_type). Logits (B, num_labels)."""

    reads_summary_only = True

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.build_encoder(config)  # self.bert (RoBERTa: self.roberta)
        self.classifier = PooledClassifier(
            config.hidden_size, config.num_labels, classifier_dropout(config), config.padding_free
        )
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput | tuple:
        outputs = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(summary_only=self.reads_summary_only),
            **kwargs,
        )
        logits = self.classifier(None, outputs.pooler_output)
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return _return(
            SequenceClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class BertForTokenClassification(BertPreTrainedModel):
    """Per-token labels (NER, POS): dropout + linear on every position. labels: (B, T) class ids,
    -100 on ignored tokens. Logits (B, T, num_labels)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.build_encoder(config, add_pooling_layer=False)  # self.bert (RoBERTa: self.roberta)
        self.dropout = make_dropout(classifier_dropout(config), config.padding_free)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> TokenClassifierOutput | tuple:
        # A target on a padding position is read from the state computed there: only the padded
        # layout computes it (collators put -100 on padding, so this is the rare case).
        reference = input_ids if input_ids is not None else inputs_embeds
        fast = reference is not None and self.config.padding_free and fast_path_enabled(self.config, reference.device)
        reads = HeadReads(padding=fast and targets_at_padding(labels, attention_mask, IGNORE_INDEX))
        outputs = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=reads,
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


class BertForQuestionAnswering(BertPreTrainedModel):
    """Extractive QA: start/end logits per token; SQuAD 2.0's "no answer" points at [CLS]. As in
    transformers, the span softmax runs over all T positions, padding included (``HeadReads``
    with ``padding=True``: the fast path runs it padded), so the loss equals transformers'."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.build_encoder(config, add_pooling_layer=False)  # self.bert (RoBERTa: self.roberta)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> QuestionAnsweringModelOutput | tuple:
        """start_positions / end_positions: (B,) token indices. Logits (B, T) each."""
        outputs = self.base_model(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
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


class BertForMultipleChoice(BertPreTrainedModel):
    """Inputs (B, C, T); one score per choice from the pooled [CLS]; logits (B, C); labels (B,)."""

    reads_summary_only = True

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.build_encoder(config)  # self.bert (RoBERTa: self.roberta)
        self.classifier = PooledClassifier(config.hidden_size, 1, classifier_dropout(config), config.padding_free)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> MultipleChoiceModelOutput | tuple:
        """All inputs (B, C, T) (inputs_embeds (B, C, T, E)); labels (B,) the right choice."""
        num_choices = choice_count(input_ids, inputs_embeds)

        outputs = self.base_model(
            flatten_choices(input_ids),
            flatten_choices(attention_mask),
            flatten_choices(token_type_ids),
            flatten_choices(position_ids),
            flatten_choices(inputs_embeds),
            past_key_values,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(summary_only=self.reads_summary_only),
            **kwargs,
        )
        logits = self.classifier(None, outputs.pooler_output).view(-1, num_choices)
        loss = multiple_choice_loss(logits, labels) if labels is not None else None
        return _return(
            MultipleChoiceModelOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


__all__ = [
    "BertPreTrainedModel",
    "BertModel",
    "BertForPreTraining",
    "BertForPreTrainingOutput",
    "BertForMaskedLM",
    "BertForNextSentencePrediction",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "BertForMultipleChoice",
]
