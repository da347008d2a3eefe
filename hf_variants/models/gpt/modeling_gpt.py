"""GPT (GPT-1, Radford et al. 2018; GPT-2, Radford et al. 2019): a causal Transformer decoder
pretrained by next-token prediction.

The architecture, top to bottom in the order data flows: :class:`GPTEmbeddings` (token + learned
position, dropout; no LayerNorm, no segment table) -> :class:`GPTAttention` (causal, fused QKV; the
layer appends its keys/values to the transformers ``Cache`` itself) -> :class:`GPTMLP` ->
:class:`GPTBlock` (pre-LN for GPT-2: ``x = x + Attn(LN(x)); x = x + MLP(LN(x))``; post-LN for
GPT-1: ``x = LN(x + Attn(x)); x = LN(x + MLP(x))``, ``config.pre_layer_norm``) ->
:class:`GPTStack` (the blocks + GPT-2's final LayerNorm) -> :class:`GPTModel` -> the heads:
:class:`GPTLMHeadModel` (the paper's objective, tied output, ``generate()``),
:class:`GPTForSequenceClassification` (the last real token), :class:`GPTForTokenClassification`,
:class:`GPTForQuestionAnswering`; GPT-1's double heads are in ``finetuning.py``.

What differs from BERT (``models/bert/modeling_bert.py``): causal attention, a KV cache for
generation, positions that continue after the cached ones (0..T-1 whatever the padding when none
are passed, as transformers' GPT-2; ``generate()`` passes positions counted over real tokens, so
left-padded rows generate as if alone), no padding row in the word table (GPT-2 pads with
``<|endoftext|>``, which keeps its embedding and gradient), ``token_type_ids`` looked up in the word
table (transformers' convention), GPT-2's scaled init of the residual projections (std / sqrt(2 L)).

Submodule names are those of the key map (``weights.py``; the stack sits under ``encoder`` for the
checkpoints' keys), which converts to and from transformers' GPT-2 and OpenAI GPT.

Speed is a plug-in: with ``config.padding_free`` (default on), CPU inputs and no cache (training
with labels), :class:`GPTModel` hands its forward to
:class:`~hf_variants.modules.fast_path.PaddingFreePath`, which runs these same modules on the real
tokens only (packed, causal within each row or each ``document_ids`` document); results are
identical. With ``config.padding_free = False``, on CUDA, and whenever a cache is kept
(generation), the plain path below is all that runs.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutputWithPastAndCrossAttentions,
    CausalLMOutputWithCrossAttentions,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import ModelOutput

from ...modules.attention import FusedQKVProjection, attention_function, packed_self_attention
from ...modules.cache import CACHE_FIELD, check_cache_batch, check_cache_positions
from ...modules.dropout import make_dropout
from ...modules.fast_path import HeadReads, fast_path_enabled, fast_path_for
from ...modules.heads import (
    IGNORE_INDEX,
    causal_lm_loss,
    lm_loss,
    make_vocabulary_decoder,
    sequence_classification_loss,
    span_extraction_loss,
    token_classification_loss,
)
from ...modules.inputs import check_ids_or_embeds, check_index_range, check_not_empty, pick_cache
from ...modules.masks import (
    KeyMask,
    combine_biases,
    document_bias,
    make_attention_bias,
    reads_a_padding_position,
    targets_at_padding,
)
from ...modules.norms import build_norm
from ...modules.padding import UnpaddedBatch, gather_positions
from ...modules.token_ids import CheckedGenerationMixin
from ..modeling_base import VariantPreTrainedModel
from .configuration_gpt import GPTConfig


# ----------------------------------------------------------------------------- embeddings
class GPTEmbeddings(nn.Module):
    """word + learned position (+ the word embeddings of ``token_type_ids``) -> dropout.
    Inputs (B, T), or packed (N,) on the fast path; output (B, T, H) or (N, H)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.max_position_embeddings = config.max_position_embeddings
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)  # no padding row (see above)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    def check_inputs(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        sequence_length: int,
    ) -> None:
        """A ValueError naming the first id outside its table (torch would raise an IndexError)."""
        vocab_size = self.word_embeddings.num_embeddings  # the live size: resize_token_embeddings changes it
        if input_ids is not None:
            check_index_range(input_ids, vocab_size, "input_ids", "vocab_size")
        if sequence_length > self.max_position_embeddings:
            raise ValueError(
                f"sequence length {sequence_length} exceeds max_position_embeddings "
                f"({self.max_position_embeddings}); truncate the input or use a config with more positions"
            )
        if position_ids is not None:
            check_index_range(position_ids, self.max_position_embeddings, "position_ids", "max_position_embeddings")
        if token_type_ids is not None:
            check_index_range(token_type_ids, vocab_size, "token_type_ids", "vocab_size")

    def forward(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """ids (B, T) or (N,), or ``inputs_embeds`` (B, T, H) -> (B, T, H) or (N, H)."""
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        embeddings = embeddings + self.position_embeddings(position_ids)
        if token_type_ids is not None:
            embeddings = embeddings + self.word_embeddings(token_type_ids)
        return self.dropout(embeddings)


# ----------------------------------------------------------------------------- attention
class GPTAttention(nn.Module):
    """Causal multi-head self-attention: fused QKV projection -> attention -> output projection.
    (B, T, H) -> (B, T, H) (or (N, H) packed). With a cache, this layer's keys and values of the
    earlier steps come first: query i is key position P + i and sees keys 0..P + i."""

    adapter_role = "attention"  # peft's default targets: its input projection (integrations/peft_targets.py)

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config  # attn_implementation is read at each call: it may be switched at run time
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.inner_size = self.num_heads * self.head_dim
        self.scale = config.attention_scale if config.attention_scale is not None else 1.0 / math.sqrt(self.head_dim)
        self.dropout_prob = config.attention_probs_dropout_prob
        # One GEMM; transformers' c_attn holds [query; key; value] the same way (the key map transposes it).
        self.qkv = FusedQKVProjection(config.hidden_size, 3 * self.inner_size, bias=config.use_bias)
        self.out = nn.Linear(self.inner_size, config.hidden_size, bias=config.use_bias)
        self.out.is_residual_projection = True  # GPT-2's scaled init (GPTPreTrainedModel._init_weights)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, heads * D) -> (B, heads, T, D)."""
        return x.view(*x.shape[:2], self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | UnpaddedBatch | None = None,
        output_attentions: bool = False,
        past_key_values: Cache | None = None,
        layer_idx: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend. ``attention_mask``: an additive (B, 1, 1|T, P + T) bias (None: nothing masked but
        the future), or the fast path's packed batch (then ``hidden_states`` are (N, H)).
        ``past_key_values``: the cache; this call's keys/values (B, heads, T, D) are appended to its
        layer ``layer_idx`` and attention reads all P + T. Returns (output, attention
        probabilities (B, heads, T, P + T) if asked, else None)."""
        dropout = self.dropout_prob if self.training else 0.0
        backend = "eager" if output_attentions or self.config._attn_implementation == "eager" else "sdpa"
        if isinstance(attention_mask, UnpaddedBatch):  # the padding-free fast path (modules/fast_path.py)
            if attention_mask.total_tokens == 0:
                return self.out(hidden_states.new_zeros(0, self.inner_size)), None
            context = packed_self_attention(
                self.qkv(hidden_states), attention_mask, self.num_heads, self.scale, dropout, True, backend
            )
            return self.out(context), None
        query, key, value = (self._split_heads(x) for x in self.qkv(hidden_states).chunk(3, dim=-1))
        if past_key_values is not None:  # the layer owns its cache: append, then read every step's keys
            key, value = past_key_values.update(key, value, layer_idx)
        if attention_mask is not None and attention_mask.shape[-1] not in (1, key.shape[2]):
            raise ValueError(
                f"attention_bias covers {attention_mask.shape[-1]} keys but there are {key.shape[2]} "
                "(cached positions count; build the mask over all of them)"
            )
        context, probs = attention_function(query, key, value, attention_mask, True, dropout, self.scale, backend)
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2)
        if torch.compiler.is_exporting():
            # The ONNX exporter decomposes SDPA into matmuls whose output is (B, heads, T, D)-contiguous:
            # the reshape below must not be recorded as a view of it (docs/ecosystem.md, export).
            context = context.clone(memory_format=torch.contiguous_format)
        return self.out(context.reshape(batch, length, self.inner_size)), probs


# ----------------------------------------------------------------------------- feed-forward
class GPTMLP(nn.Module):
    """MLP(x) = W_down act(W_up x), act = the tanh GELU (gated for ablations: W_down (act(W_gate x) * W_up x)).
    (..., H) -> (..., H)."""

    adapter_role = "feed_forward"  # (IA)^3's feed-forward module (integrations/peft_targets.py)

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.use_bias)
        self.gate = (
            nn.Linear(config.hidden_size, config.intermediate_size, bias=config.use_bias) if config.gated_ffn else None
        )
        self.activation = ACT2FN[config.hidden_act]
        self.inner_dropout = make_dropout(config.ffn_dropout_prob, config.padding_free)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.use_bias)
        self.down.is_residual_projection = True  # GPT-2's scaled init

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.gate is None:
            inner = self.activation(self.up(hidden_states))
        else:
            inner = self.activation(self.gate(hidden_states)) * self.up(hidden_states)
        return self.down(self.inner_dropout(inner))


# ----------------------------------------------------------------------------- block and stack
class GPTBlock(GradientCheckpointingLayer):
    """One block, GPT-2's pre-LN ``x = x + Dropout(Attn(LN(x))); x = x + Dropout(MLP(LN(x)))`` or
    GPT-1's post-LN ``x = LN(x + Dropout(Attn(x))); x = LN(x + Dropout(MLP(x)))``.

    A block whose attention or MLP is shared with block 0 (``config.layer_sharing``, an ablation)
    stores none and is handed block 0's by the stack."""

    def __init__(self, config: GPTConfig, own_attention: bool = True, own_ffn: bool = True) -> None:
        super().__init__()
        self.pre_layer_norm = config.pre_layer_norm
        self.attention = GPTAttention(config) if own_attention else None
        self.attention_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.ffn = GPTMLP(config) if own_ffn else None
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
        shared_attention: GPTAttention | None = None,
        shared_ffn: GPTMLP | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, T, H) -> ((B, T, H), attention probabilities or None); arguments as
        :meth:`GPTAttention.forward`. ``query_positions`` is the fast path's slot for heads that
        read a few positions: a causal block computes every position, so it must be None.
        All positional where they vary per depth: gradient checkpointing replays positional inputs."""
        if query_positions is not None:
            raise ValueError("a causal GPT block computes every position: query_positions must be None")
        attention = self.attention if self.attention is not None else shared_attention
        ffn = self.ffn if self.ffn is not None else shared_ffn
        if self.pre_layer_norm:
            attention_output, probs = attention(
                self.attention_norm(hidden_states), attention_mask, output_attentions, past_key_values, layer_idx
            )
            hidden_states = hidden_states + self.residual_dropout(attention_output)
            hidden_states = hidden_states + self.residual_dropout(ffn(self.ffn_norm(hidden_states)))
        else:
            attention_output, probs = attention(
                hidden_states, attention_mask, output_attentions, past_key_values, layer_idx
            )
            hidden_states = self.attention_norm(hidden_states + self.residual_dropout(attention_output))
            hidden_states = self.ffn_norm(hidden_states + self.residual_dropout(ffn(hidden_states)))
        return hidden_states, probs


class GPTStack(nn.Module):
    """``num_hidden_layers`` GPTBlocks (+ GPT-2's final LayerNorm). ``config.layer_sharing``
    (ALBERT's ablation): "none", "all" (one block at every depth), "attention" or "ffn" (that
    sub-block of block 0 at every depth). Held as ``GPTModel.encoder`` (the checkpoints' keys)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.num_layers = config.num_hidden_layers
        self.sharing = config.layer_sharing
        if self.sharing == "all":
            self.layers = nn.ModuleList([GPTBlock(config)])
        else:
            self.layers = nn.ModuleList(
                GPTBlock(
                    config, own_attention=i == 0 or self.sharing != "attention", own_ffn=i == 0 or self.sharing != "ffn"
                )
                for i in range(self.num_layers)
            )
        # Pre-LN leaves the residual stream un-normalised: one norm closes the stack (GPT-2's ln_f).
        self.final_layer_norm = (
            build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps) if config.pre_layer_norm else None
        )

    def layer_at(self, depth: int) -> GPTBlock:
        return self.layers[0] if self.sharing == "all" else self.layers[depth]

    def shared_blocks(self, depth: int) -> tuple[GPTAttention | None, GPTMLP | None]:
        """(attention, MLP) of block 0 where the block at ``depth`` shares them, else None."""
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
        """(B, T, H) embeddings, additive bias (B, 1, 1|T, P + T) or None, the cache (indexed by
        depth) -> (last hidden states (B, T, H), every block's input + the final output if asked,
        every block's attention probabilities if asked)."""
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
class GPTPreTrainedModel(VariantPreTrainedModel):
    config_class = GPTConfig
    base_model_prefix = "transformer"  # transformers' name for GPT-2's and OpenAI GPT's backbone
    # The unit device_map="auto" never splits, FSDP wraps and gradient checkpointing recomputes.
    _no_split_modules = ["GPTBlock"]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        # GPT-2: the projections that add into the residual stream start smaller, std / sqrt(2 L),
        # so the residual's variance does not grow with depth (GPTAttention.out, GPTMLP.down).
        if getattr(module, "is_residual_projection", False) and self.config.scale_residual_init:
            std = self.config.initializer_range / math.sqrt(2 * self.config.num_hidden_layers)
            init.normal_(module.weight, mean=0.0, std=std)


class GPTModel(GPTPreTrainedModel):
    """The bare decoder: embeddings -> blocks -> (final LayerNorm). last_hidden_state (B, T, H) and
    the cache (``past_key_values`` / ``cache``)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)  # config.check_architecture(): a ValueError naming a bad field
        self.config = config
        self.embeddings = GPTEmbeddings(config)
        self.encoder = GPTStack(config)
        self.pooler = None  # the fast path's interface: GPT has no pooler
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def _prepare_cache(self, cache: Cache | None, use_cache: bool | None) -> Cache | None:
        """The cache this call reads and extends: the caller's, or a new ``DynamicCache`` when
        ``use_cache`` (default ``config.use_cache``); None when neither."""
        if use_cache is None:
            use_cache = self.config.use_cache
        if self.training and (use_cache or cache is not None) and self.is_activation_checkpointing:
            # Checkpointed layers drop the cache (transformers' GradientCheckpointingLayer): keep none.
            if cache is not None:
                raise ValueError("past_key_values cannot be used while training with gradient checkpointing")
            use_cache = False
        if cache is None and not use_cache:
            return None
        if cache is not None and not isinstance(cache, Cache):
            raise ValueError(
                f"past_key_values must be a transformers Cache (DynamicCache), got {type(cache).__name__}; "
                "tuples of tensors are not supported"
            )
        cache = DynamicCache() if cache is None else cache
        if cache.is_compileable:
            # A static cache returns its whole preallocated length, unfilled slots included.
            raise ValueError(
                f"{type(cache).__name__} is not supported; use the default DynamicCache "
                "(generate() without cache_implementation)"
            )
        if cache.layer_class_to_replicate is None and len(cache.layers) < self.encoder.num_layers:
            raise ValueError(
                f"the cache was built for {len(cache.layers)} layers but this decoder has {self.encoder.num_layers}"
            )
        return cache

    def _check_inputs(
        self,
        input_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        cache: Cache | None,
        document_ids: torch.Tensor | None,
        kwargs: dict,
    ) -> tuple[int, int, int, KeyMask]:
        """Every input against the main one; a ValueError naming the first problem. Returns (B, T,
        the cached length P, the checked mask over P + T keys)."""
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
        past_length = cache.get_seq_length() if cache is not None else 0
        if kwargs.get("cache_position") is not None:
            check_cache_positions(kwargs["cache_position"], past_length, length)
        if past_length:
            check_cache_batch(cache, batch)
        if kwargs.get("encoder_hidden_states") is not None:
            raise ValueError("encoder_hidden_states were given but this model has no cross-attention layers")
        if document_ids is not None and past_length:
            raise ValueError(
                "document_ids describe the new tokens only: they cannot be combined with cached positions or memories"
            )
        per_token = {"token_type_ids": token_type_ids, "position_ids": position_ids, "document_ids": document_ids}
        for name, tensor in per_token.items():
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
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        attention_bias: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        reads: HeadReads | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPastAndCrossAttentions | tuple:
        """Decode a batch.

        Args:
            input_ids: (B, T) token ids (or ``inputs_embeds`` (B, T, H)).
            attention_mask: (B, P + T) 1 for real tokens, 0 for padding (P cached positions first).
            token_type_ids: (B, T), embedded by the word table. position_ids: (B, T) (default
                P..P+T-1, whatever the padding).
            cache / past_key_values: a transformers Cache from an earlier call (transformers >= 5.24
                names it ``cache``), extended in place and returned. use_cache: create one
                (default ``config.use_cache``).
            attention_bias: an extra additive bias broadcastable to (B, heads, T, P + T) (e.g. a
                block-diagonal document mask); runs padded.
            document_ids: (B, T) rows packed with several documents, 0, 1, ... per document and -1
                on padding: attention stays inside each document (packed, one sequence per
                document, on the fast path; a block-diagonal bias on the plain one). Not with a cache.
            reads: what the caller reads (:class:`~hf_variants.modules.fast_path.HeadReads`): here
                only whether it reads states at padding positions (the fast path then runs padded).
            kwargs: ``cache_position`` (transformers < 5.24's generate()), checked.
        Returns:
            BaseModelOutputWithPastAndCrossAttentions: last_hidden_state (B, T, H) (zeros at padding
            on the fast path), the cache, hidden_states (layers + 1 of (B, T, H)) and attentions
            (layers of (B, heads, T, P + T)) if asked.
        """
        config = self.config
        output_attentions = bool(output_attentions if output_attentions is not None else config.output_attentions)
        output_hidden_states = bool(
            output_hidden_states if output_hidden_states is not None else config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else config.return_dict
        cache = pick_cache(cache, past_key_values, kwargs)  # one cache, under either name (or None)
        cache = self._prepare_cache(cache, use_cache)
        batch, length, past_length, mask = self._check_inputs(
            input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids, cache, document_ids, kwargs
        )
        device = (input_ids if input_ids is not None else inputs_embeds).device
        if position_ids is None:  # after the cached positions, whatever the padding (transformers' GPT-2)
            position_ids = torch.arange(past_length, past_length + length, device=device).expand(batch, length)

        # A caller's extra bias is defined in padded coordinates: such a call runs padded anyway.
        fast_path = None
        if config.padding_free and attention_bias is None:  # the speed plug-in's rule (modules/fast_path.py)
            fast_path = fast_path_for(config, device, output_attentions or output_hidden_states, cache is not None)
        if fast_path is not None:  # the same modules, packed (modules/fast_path.py)
            sequence_output, _ = fast_path.encode(
                self,
                input_ids,
                token_type_ids,
                position_ids,
                inputs_embeds,
                mask.new_tokens,
                reads or HeadReads(),
                document_ids=document_ids,
            )
            output = BaseModelOutputWithPastAndCrossAttentions(last_hidden_state=sequence_output, **{CACHE_FIELD: None})
            return output if return_dict else output.to_tuple()

        # The plain path.
        hidden_states = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds)
        dtype = hidden_states.dtype
        bias = make_attention_bias(
            mask.keys, dtype
        )  # (B, 1, 1, P + T) padding bias or None; causality is the attention's
        if document_ids is not None:
            bias = combine_biases(bias, document_bias(document_ids, dtype), dtype)
        if attention_bias is not None:
            bias = combine_biases(bias, attention_bias.to(dtype), dtype)
        sequence_output, all_hidden_states, all_attentions = self.encoder(
            hidden_states, bias, output_attentions, output_hidden_states, cache
        )
        output = BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=sequence_output,
            **{CACHE_FIELD: cache},  # under the installed transformers' field name (modules/cache.py)
            hidden_states=all_hidden_states,
            attentions=all_attentions,
        )
        return output if return_dict else output.to_tuple()


# ----------------------------------------------------------------------------- heads
def _return(output: ModelOutput, return_dict: bool | None) -> ModelOutput | tuple:
    """The heads' return: the ModelOutput unless ``return_dict=False`` is asked for."""
    return output if return_dict is not False else output.to_tuple()


def check_left_padded_prompts(attention_mask: torch.Tensor | None) -> None:
    """generate() continues each row after its last position: a (B, T) prompt mask whose last
    column holds padding (right padding) would make a short row continue after its padding, at
    positions it never has alone. Refused by name; left padding (``tokenizer.padding_side =
    "left"``) generates each row as alone."""
    if attention_mask is not None and attention_mask.dim() == 2 and not bool(attention_mask[:, -1].all()):
        raise ValueError(
            "GPT generates after each prompt's last position: the prompts must be padded on the left "
            "(tokenizer.padding_side = 'left'); this attention_mask has padding in its last column (right padding)"
        )


class GPTLMHeadModel(GPTPreTrainedModel, CheckedGenerationMixin, GenerationMixin):
    """Causal language modelling, the paper's objective: logits (B, T, V) from an output layer tied
    to the word embeddings; loss = next-token cross-entropy (-100 ignored). Generates through
    transformers' ``generate()`` (greedy, sampling, beam search, assisted, left-padded batches);
    ``CheckedGenerationMixin`` first refuses special ids outside the vocabulary.

    Without labels the model keeps a cache by default (``config.use_cache``), as transformers'
    models do; with labels (training) it does not unless ``use_cache=True`` is passed, so training
    batches may run packed on the fast path."""

    _tied_weights_keys = {"lm_head.weight": "transformer.embeddings.word_embeddings.weight"}

    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        self.transformer = GPTModel(config)
        # Bias-free. With the speed switch, TiedDecoder builds the weight's gradient contiguous so the
        # tied embedding accumulates it in place, and decodes a few rows faster on CPU (modules/heads.py).
        self.lm_head = make_vocabulary_decoder(
            config.hidden_size, config.vocab_size, bias=False, cpu_kernel=config.padding_free
        )
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def check_prompts(self, attention_mask: torch.Tensor | None) -> None:
        """Called by ``generate()`` (CheckedGenerationMixin): refuses right-padded prompts (:func:`check_left_padded_prompts`)."""
        check_left_padded_prompts(attention_mask)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        attention_bias: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> CausalLMOutputWithCrossAttentions | tuple:
        """Args as :meth:`GPTModel.forward`, plus:
            labels: (B, T) target ids (usually the input ids), -100 where nothing is predicted; the
                shift happens inside (position t predicts labels[:, t + 1]).
            logits_to_keep: k > 0 computes logits for the last k positions only (generation reads
                the last one); a 1-D tensor selects positions. Not with labels.
            shift_labels (in kwargs): (B, T) targets already shifted (no shift inside), what Trainer
                hands over under sequence parallelism; they replace ``labels`` for the loss.
        Returns:
            CausalLMOutputWithCrossAttentions: loss, logits (B, T or k, V), the cache, ...
        """
        past_key_values = pick_cache(cache, past_key_values, kwargs)  # one cache, under either name (or None)
        if labels is not None and use_cache is None and past_key_values is None:
            use_cache = False
        if labels is not None and not (isinstance(logits_to_keep, int) and logits_to_keep == 0):
            raise ValueError("logits_to_keep cannot be combined with labels (the loss needs every position)")
        # A padding slot predicting a real target (left padding) is read where the packed layout leaves zeros.
        reference = input_ids if input_ids is not None else inputs_embeds
        fast = reference is not None and self.config.padding_free and fast_path_enabled(self.config, reference.device)
        reads = HeadReads(padding=fast and targets_at_padding(labels, attention_mask, IGNORE_INDEX, shifted=True))
        outputs = self.transformer(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            attention_bias=attention_bias,
            document_ids=document_ids,
            reads=reads,
            cache=past_key_values,
            cache_position=kwargs.get("cache_position"),
        )
        hidden_states = outputs.last_hidden_state
        if isinstance(logits_to_keep, int):
            hidden_states = hidden_states[:, -logits_to_keep:] if logits_to_keep > 0 else hidden_states
        else:
            hidden_states = hidden_states[:, logits_to_keep]
        logits = self.lm_head(hidden_states)
        shift_labels = kwargs.get("shift_labels")
        loss = None
        if shift_labels is not None:
            loss = lm_loss(logits, shift_labels)
        elif labels is not None:
            loss = causal_lm_loss(logits, labels)
        return _return(
            CausalLMOutputWithCrossAttentions(
                loss=loss,
                logits=logits,
                hidden_states=outputs.hidden_states,
                attentions=outputs.attentions,
                **{CACHE_FIELD: getattr(outputs, CACHE_FIELD)},
            ),
            return_dict,
        )


def last_token_positions(
    input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None, pad_token_id: int | None
) -> torch.Tensor:
    """(B, 1) position of each row's last token that is not ``pad_token_id`` (transformers' rule:
    the ids decide, not the attention mask); the last position when there are no ids to look at."""
    reference = input_ids if input_ids is not None else inputs_embeds
    batch, length = check_ids_or_embeds(input_ids, inputs_embeds)
    if pad_token_id is None and batch != 1:
        raise ValueError(
            "GPT sequence classification reads the last non-padding token: set config.pad_token_id for batches > 1"
        )
    if input_ids is None or pad_token_id is None:
        return torch.full((batch, 1), length - 1, dtype=torch.long, device=reference.device)
    ramp = torch.arange(1, length + 1, device=input_ids.device)
    return ((input_ids != pad_token_id) * ramp).argmax(dim=-1, keepdim=True)


def _classifier_dropout(config: GPTConfig) -> float:
    return config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob


class GPTScore(nn.Module):
    """transformers' bias-free ``score`` projection of the summary token: (B, H) -> (B, num_labels).
    No dropout (as transformers' GPT-2 / OpenAI GPT classifiers)."""

    def __init__(self, hidden_size: int, num_labels: int) -> None:
        super().__init__()
        self.out_proj = nn.Linear(hidden_size, num_labels, bias=False)

    def forward(self, summary: torch.Tensor) -> torch.Tensor:
        return self.out_proj(summary)


class GPTForSequenceClassification(GPTPreTrainedModel):
    """Logits (B, num_labels) from each row's last real token (see :func:`last_token_positions`).
    labels: (B,) class ids, (B,) floats for regression (num_labels == 1), or (B, num_labels)
    multi-hot (problem_type). Keeps no cache (one forward pass)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = GPTModel(config)
        self.classifier = GPTScore(config.hidden_size, config.num_labels)
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
        """past_key_values: a key/value prefix (peft's prefix tuning), read as cached positions."""
        if input_ids is None and inputs_embeds is None:
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        positions = last_token_positions(input_ids, inputs_embeds, self.config.pad_token_id)  # (B, 1)
        # The ids decide the position read; where the mask calls it padding, only the padded layout computes it.
        reference = input_ids if input_ids is not None else inputs_embeds
        reads_padding = (
            self.config.padding_free
            and fast_path_enabled(self.config, reference.device)
            and attention_mask is not None
            and tuple(attention_mask.shape) == tuple(reference.shape[:2])
            and reads_a_padding_position(attention_mask, positions)
        )
        kwargs.pop("use_cache", None)  # a classifier reads one pass: no cache
        outputs = self.transformer(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            False,
            output_attentions,
            output_hidden_states,
            return_dict=True,
            reads=HeadReads(padding=reads_padding),
            **kwargs,
        )
        logits = self.classifier(gather_positions(outputs.last_hidden_state, positions)[:, 0])
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return _return(
            SequenceClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class GPTForTokenClassification(GPTPreTrainedModel):
    """Per-token labels (NER, POS): dropout + linear on every position. labels: (B, T) class ids,
    -100 on ignored tokens. Logits (B, T, num_labels)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = GPTModel(config)
        self.dropout = make_dropout(_classifier_dropout(config), config.padding_free)
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
        kwargs.pop("use_cache", None)  # one forward pass: no cache
        outputs = self.transformer(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            False,
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


class GPTForQuestionAnswering(GPTPreTrainedModel):
    """Extractive QA: start/end logits per token (B, T) each. As in transformers, the span softmax
    runs over all T positions, padding included (``HeadReads(padding=True)``: the fast path runs it
    padded), so the loss equals transformers'."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.transformer = GPTModel(config)
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
        """start_positions / end_positions: (B,) token indices."""
        kwargs.pop("use_cache", None)  # one forward pass: no cache
        outputs = self.transformer(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            False,
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


__all__ = [
    "GPTPreTrainedModel",
    "GPTEmbeddings",
    "GPTModel",
    "GPTLMHeadModel",
    "GPTForSequenceClassification",
    "GPTForTokenClassification",
    "GPTForQuestionAnswering",
    "last_token_positions",
    "check_left_padded_prompts",
]
