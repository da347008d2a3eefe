"""Transformer-XL (Dai et al. 2019): a causal language model with segment-level recurrence and
relative positional encoding.

What is Transformer-XL's own, on top of ``hf_variants.modules``:

- recurrence (sec. 3.2): each layer attends over its memory, the input states it saw on earlier
  segments (``SegmentMemory``: detached, the last ``mem_len`` kept), followed by the current
  segment; ``mems`` are returned and accepted (one (M, B, H) tensor per layer, time first as the
  original code and transformers' XLNet), and evaluation may pass a longer memory than training.
- relative attention (sec. 3.3, ``modules/relative_attention.py``): scores
  ``(q_i + u)·k_j + (q_i + v)·W_r R_{i-j}`` with per-layer ``u = r_w_bias``, ``v = r_r_bias``,
  the relative shift, distances clamped at ``clamp_len``; causal, so query i sees the memory and
  positions up to i.
- the block: post-LN attention and ReLU FFN (dropout inside and after), embeddings scaled by
  sqrt(d_model), dropout on embeddings, position encodings and the output.

The LM head is a softmax tied to the embeddings or, with ``config.cutoffs`` / ``div_val`` /
``embedding_size``, the paper's adaptive input and projected adaptive softmax (``adaptive.py``),
whose ``logits`` are then log-probabilities. Labels follow transformers' causal LMs: pass
``labels = input_ids``; the shift is inside.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.utils import ModelOutput

from ...modules.dropout import Dropout
from ...modules.feed_forward import FeedForward
from ...modules.heads import IGNORE_INDEX, check_class_labels, cross_entropy_or_zero
from ...modules.inputs import embed_token_ids
from ...modules.masks import check_mask_shape, check_no_padding, memory_causal_bias, split_prefix_mask
from ...modules.memory import MemoryGenerationMixin, SegmentMemory
from ...modules.norms import build_norm
from ...modules.relative_attention import KeyValuePrefix, RelativeAttention, relative_encodings
from ..modeling_base import VariantPreTrainedModel
from .adaptive import AdaptiveEmbedding, AdaptiveSoftmax, Projections
from .configuration_transfo_xl import TransfoXLConfig


@dataclass
class TransfoXLModelOutput(ModelOutput):
    """last_hidden_state (B, T, H); mems: one (M, B, H) tensor per layer for the next segment."""

    last_hidden_state: torch.Tensor | None = None
    mems: tuple[torch.Tensor, ...] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class TransfoXLLMHeadModelOutput(ModelOutput):
    """loss (scalar, next-token cross-entropy), logits (B, T, V), mems as TransfoXLModelOutput."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    mems: tuple[torch.Tensor, ...] | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class TransfoXLLayer(GradientCheckpointingLayer):
    """x = LN(x + Dropout(RelAttn(x, memory))); x = LN(x + Dropout(FFN(x))), FFN with inner dropout."""

    def __init__(self, config: TransfoXLConfig) -> None:
        super().__init__()
        self.attention = RelativeAttention(
            config.hidden_size,
            config.num_attention_heads,
            dropout=config.attention_probs_dropout_prob,
            head_dim=config.head_dim,
            segment_terms=False,
        )
        self.attention_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.ffn = FeedForward(
            config.hidden_size, config.intermediate_size, config.hidden_act, inner_dropout=config.hidden_dropout_prob
        )
        self.ffn_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(
        self,
        hidden_states: torch.Tensor,
        memory: torch.Tensor | None,
        encodings: torch.Tensor,
        causal_bias: torch.Tensor,
        attn_implementation: str,
        output_attentions: bool,
        key_value_prefix: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """hidden (B, T, H), memory (B, M, H) or None, encodings (1, M + T + 1, H), causal_bias
        (1, 1, T, M + T); key_value_prefix (B, heads, P, D) each, M then counting those P too."""
        attended, probs = self.attention(
            hidden_states,
            memory,
            encodings,
            None,
            causal_bias,
            attn_implementation,
            output_attentions,
            key_value_prefix=key_value_prefix,
        )
        hidden_states = self.attention_norm(hidden_states + self.dropout(attended))
        return self.ffn_norm(hidden_states + self.dropout(self.ffn(hidden_states))), probs


class TransfoXLPreTrainedModel(VariantPreTrainedModel):
    config_class = TransfoXLConfig
    _no_split_modules = ["TransfoXLLayer"]
    base_model_prefix = "transformer"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, RelativeAttention):
            for parameter in module.parameters_to_initialise():
                init.normal_(parameter, mean=0.0, std=self.config.initializer_range)
        if isinstance(module, Projections):
            for projection in module:
                init.normal_(projection, mean=0.0, std=self.config.initializer_range)
        if isinstance(module, AdaptiveSoftmax) and len(module.bounds) > 1:
            init.normal_(module.cluster_weight, mean=0.0, std=self.config.initializer_range)
            init.zeros_(module.cluster_bias)


class TransfoXLModel(TransfoXLPreTrainedModel):
    """The bare recurrent decoder."""

    def __init__(self, config: TransfoXLConfig) -> None:
        super().__init__(config)
        if config.adaptive_input:
            self.word_embeddings = AdaptiveEmbedding(
                config.vocab_size,
                config.hidden_size,
                config.embedding_size or config.hidden_size,
                config.cutoffs,
                config.div_val,
            )
        else:
            self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(TransfoXLLayer(config) for _ in range(config.num_hidden_layers))
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding | AdaptiveEmbedding:
        return self.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding | AdaptiveEmbedding) -> None:
        self.word_embeddings = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        inputs_embeds: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mem_len: int | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> TransfoXLModelOutput | tuple:
        """input_ids (B, T) (or inputs_embeds (B, T, H)); mems: one (M, B, H) tensor per layer from
        the previous segment; ``mem_len`` overrides config.mem_len for this call (evaluation with a
        longer memory than training). ``attention_mask`` is accepted only when it masks nothing:
        Transformer-XL reads contiguous text, with no padding. ``past_key_values``: a
        transformers Cache holding P keys/values per layer, a learned memory in front of ``mems``
        (peft's prefix tuning, see KeyValuePrefix); ``attention_mask`` may then cover P + T."""
        config = self.config
        output_attentions = config.output_attentions if output_attentions is None else output_attentions
        output_hidden_states = config.output_hidden_states if output_hidden_states is None else output_hidden_states
        return_dict = config.return_dict if return_dict is None else return_dict
        use_mems = config.use_mems if use_mems is None else use_mems
        token_type_ids = kwargs.pop("token_type_ids", None)
        # Not dropped silently by **kwargs: all zeros (a tokenizer's one-text output) is the one
        # segment Transformer-XL reads; anything else would be ignored, so it is refused.
        if token_type_ids is not None and bool(token_type_ids.any()):
            raise ValueError("Transformer-XL has no segments: token_type_ids must be all 0 (one text) or left out")
        check_no_padding(attention_mask, "Transformer-XL")  # 0/1 only: a mask of 2s is no "all ones"
        inputs_embeds = embed_token_ids(self.word_embeddings, input_ids, inputs_embeds, config.hidden_size)
        batch, length = inputs_embeds.shape[:2]
        # With a prefix (past_key_values) the mask covers P + T: split_prefix_mask checks it.
        if attention_mask is not None and past_key_values is None:
            check_mask_shape(attention_mask, (batch, length), "attention_mask")
        mem_len = config.mem_len if mem_len is None else mem_len
        memory = SegmentMemory(
            None if mems is None else [m.transpose(0, 1) for m in mems], config.num_hidden_layers, mem_len=mem_len
        )
        memory.check_batch(batch, config.hidden_size)
        prefix = past_key_values
        if prefix is not None:
            prefix = KeyValuePrefix(
                prefix, config.num_hidden_layers, batch, config.num_attention_heads, self.layers[0].attention.head_dim
            )
            split_prefix_mask(attention_mask, prefix.length, length)  # checks its width (the all-ones check ran above)
        memory_length = memory.length + (prefix.length if prefix is not None else 0)  # the prefix comes first
        key_length = memory_length + length

        # Query i (after M memory positions) sees keys 0 .. M + i (same_length: none older than i - mem_len).
        causal_bias = memory_causal_bias(
            length,
            memory_length,
            inputs_embeds.dtype,
            inputs_embeds.device,
            same_length=config.same_length,
            mem_len=mem_len,
        )
        encodings = relative_encodings(
            length,
            key_length,
            config.hidden_size,
            bidirectional=False,
            clamp_len=config.clamp_len,
            device=inputs_embeds.device,
        )
        encodings = self.dropout(encodings.to(inputs_embeds.dtype))
        hidden_states = self.dropout(inputs_embeds * config.hidden_size**0.5)
        all_hidden, all_attentions = [], []
        for depth, layer in enumerate(self.layers):
            memory.record(depth, hidden_states)
            if output_hidden_states:
                all_hidden.append(hidden_states)
            hidden_states, probs = layer(
                hidden_states,
                memory.layer(depth),
                encodings,
                causal_bias,
                self.attention_backend,
                output_attentions,
                None if prefix is None else prefix.layer(depth),
            )
            if output_attentions:
                all_attentions.append(probs)
        if output_hidden_states:
            all_hidden.append(hidden_states)
        new_mems = memory.updated() if use_mems else None
        result = TransfoXLModelOutput(
            last_hidden_state=self.dropout(hidden_states),
            mems=None if new_mems is None else tuple(m.transpose(0, 1) for m in new_mems),
            hidden_states=tuple(all_hidden) if output_hidden_states else None,
            attentions=tuple(all_attentions) if output_attentions else None,
        )
        return result if return_dict else result.to_tuple()


def adaptive_tied_weights(config: TransfoXLConfig) -> dict[str, str]:
    """{softmax tensor: input tensor} shared by the adaptive input and softmax: every cluster's
    table, and with ``tie_projections`` the tail clusters' projections (the head's is its own)."""
    embeddings, clusters = "transformer.word_embeddings", len(config.cutoffs or []) + 1
    if not config.adaptive_input:
        return {"lm_head.cluster_layers.0.weight": f"{embeddings}.weight"}
    tables = range(clusters) if config.div_val > 1 else [0]
    tied = {f"lm_head.cluster_layers.{k}.weight": f"{embeddings}.tables.{k}.weight" for k in tables}
    if config.tie_projections:
        tied.update(
            {
                f"lm_head.projections.{k}": f"{embeddings}.projections.{k if config.div_val > 1 else 0}"
                for k in range(1, clusters)
            }
        )
    return tied


class TransfoXLLMHeadModel(TransfoXLPreTrainedModel, MemoryGenerationMixin, GenerationMixin):
    """Next-token prediction: logits = h E^T + b (tied softmax), loss = cross-entropy of
    logits[:, :-1] against labels[:, 1:] (-100 ignored). With an adaptive vocabulary
    (``config.adaptive_softmax``), ``lm_head`` is the projected adaptive softmax, ``logits`` (B, T, V) are
    log-probabilities (None when labels are given: only the loss is computed) and the loss is its
    negative log-likelihood (the paper's definition)."""

    _tied_weights_keys = {"lm_head.weight": "transformer.word_embeddings.weight"}

    def __init__(self, config: TransfoXLConfig) -> None:
        super().__init__(config)
        self.transformer = TransfoXLModel(config)
        if config.adaptive_softmax:
            self._tied_weights_keys = adaptive_tied_weights(config)
            self.lm_head = AdaptiveSoftmax(
                config.vocab_size,
                config.hidden_size,
                config.embedding_size or config.hidden_size,
                config.cutoffs,
                config.div_val,
            )
        else:
            self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    # generate(): the prompt runs once, then each new token runs alone on the memory of everything
    # before it (the paper's fast evaluation, sec. 3.2). Exact equal to recomputing the whole text
    # while it fits in mem_len; beyond that each token sees the last mem_len states, as in training.
    def prepare_inputs_for_generation(
        self, input_ids, mems=None, mem_len=None, use_cache=True, token_type_ids=None, **kwargs
    ) -> dict:
        """``mems``: the previous step's memories (see MemoryGenerationMixin). With ``mem_len=0``
        (no memory) or ``use_cache=False`` every step recomputes the text. ``token_type_ids`` (a
        tokenizer's output) are checked on the first step (all 0: one text) and not read after."""
        self.check_no_key_value_cache(kwargs)
        recurrent = use_cache and (self.config.mem_len if mem_len is None else mem_len) > 0
        inputs = {"mem_len": mem_len, "use_mems": recurrent, "logits_to_keep": kwargs.get("logits_to_keep", 0)}
        if recurrent and mems:
            inputs.update(input_ids=input_ids[:, -1:], mems=mems)
        else:  # the first step: the padding check sees the whole attention mask
            inputs.update(
                input_ids=input_ids, attention_mask=kwargs.get("attention_mask"), token_type_ids=token_type_ids
            )
        return inputs

    def get_output_embeddings(self) -> nn.Linear | None:
        return None if self.config.adaptive_softmax else self.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mem_len: int | None = None,
        use_mems: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int = 0,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> TransfoXLLMHeadModelOutput | tuple:
        """``logits_to_keep`` k > 0: logits of the last k positions only, (B, k, V) (generate()
        asks for 1: no (B, T, V) tensor over the prompt); 0: every position. ``past_key_values``:
        a key/value prefix in front of the memory (peft's prefix tuning)."""
        out = self.transformer(
            input_ids,
            mems=mems,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            mem_len=mem_len,
            use_mems=use_mems,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            past_key_values=past_key_values,
            # kwargs: inputs the model refuses by name (token_type_ids)
            return_dict=True,
            **kwargs,
        )
        hidden = out.last_hidden_state
        read = hidden[:, -logits_to_keep:] if logits_to_keep > 0 and labels is None else hidden
        adaptive = isinstance(self.lm_head, AdaptiveSoftmax)
        # With labels, the adaptive head computes only the clustered loss (no (B, T, V) tensor: the
        # point of an adaptive softmax over a 267k vocabulary); logits are None then.
        if adaptive:
            logits = None if labels is not None else self.lm_head.log_probs(read)
        else:
            logits = self.lm_head(read)
        loss = None
        if labels is not None:
            if tuple(labels.shape) != tuple(hidden.shape[:2]):
                raise ValueError(f"labels has shape {tuple(labels.shape)}, expected {tuple(hidden.shape[:2])}")
            check_class_labels(labels, self.config.vocab_size)
            targets = labels[:, 1:].reshape(-1)
            if adaptive:  # the clustered negative log-likelihood: each tail softmax only where needed
                losses = self.lm_head.negative_log_likelihood(hidden[:, :-1].reshape(-1, hidden.shape[-1]), targets)
                # No target (every label -100, or one-token rows): an exact 0 in the graph, not 0 / 0.
                loss = losses.sum() / (targets != IGNORE_INDEX).sum().clamp(min=1)
            else:
                loss = cross_entropy_or_zero(logits[:, :-1].reshape(-1, logits.shape[-1]), targets)
        result = TransfoXLLMHeadModelOutput(
            loss=loss, logits=logits, mems=out.mems, hidden_states=out.hidden_states, attentions=out.attentions
        )
        return result if return_dict is not False else result.to_tuple()


__all__ = [
    "TransfoXLPreTrainedModel",
    "TransfoXLModel",
    "TransfoXLLMHeadModel",
    "TransfoXLModelOutput",
    "TransfoXLLMHeadModelOutput",
]
