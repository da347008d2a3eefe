"""XLNet (Yang et al. 2019): a post-LN Transformer-XL encoder trained by permutation language
modelling with two-stream attention.

What is XLNet's own, on top of ``hf_variants.modules``:

- relative attention (``modules/relative_attention.py``, shared with Transformer-XL) with XLNet's
  relative segment term: ``(q + r_w_bias)·k + (q + r_r_bias)·W_r R_{i-j} + (q + r_s_bias)·s_ij``.
  The content term runs through the shared ``attend`` (eager or SDPA) with the query shifted by
  ``r_w_bias``; the position and segment terms ride along as its additive ``position_bias``.
- two streams: the content stream ``h`` (sees itself) and the query stream ``g``, started from the
  learned ``mask_emb`` at the ``target_mapping`` positions (sees the content of the others only,
  never its own token): the prediction at a position cannot read the token it predicts.
- masks: ``perm_mask`` (B, T, T) (1: i may not see j), padding, ``attn_type="uni"`` causality.
- memory: each layer's input states of earlier segments (:class:`~hf_variants.modules.memory.SegmentMemory`),
  accepted and returned as transformers' ``mems``: one (M, B, H) tensor per layer, time first.

Everything runs in the padded layout (relative positions and permutation masks are defined there);
with ``padding_free``, left-padded batches of plain encoding run in length buckets, each cut to its
own longest row (exact at real tokens: the relative terms depend on i - j only).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.models.xlnet.modeling_xlnet import (
    XLNetForMultipleChoiceOutput,
    XLNetForQuestionAnsweringSimpleOutput,
    XLNetForSequenceClassificationOutput,
    XLNetForTokenClassificationOutput,
    XLNetLMHeadModelOutput,
    XLNetModelOutput,
)

from ...modules.dropout import Dropout
from ...modules.embeddings import embed_token_ids
from ...modules.feed_forward import FeedForward
from ...modules.heads import SequenceSummary, check_class_labels, cross_entropy_or_zero, summarize
from ...modules.masks import check_mask_values, is_left_padded, two_stream_biases, worth_unpadding
from ...modules.memory import MemoryGenerationMixin, SegmentMemory
from ...modules.norms import build_norm
from ...modules.padding import bucket_rows
from ...modules.relative_attention import KeyValuePrefix, RelativeAttention, relative_encodings
from ...modules.task_models import (
    EncoderForMultipleChoice,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
)
from ...modules.tracing import is_tracing
from ..modeling_base import VariantPreTrainedModel
from .configuration_xlnet import XLNetConfig


@dataclass
class XLNetBackboneOutput(XLNetModelOutput):
    """transformers' XLNetModelOutput, plus an always-None ``pooler_output`` (XLNet has no pooler)
    that the shared task heads read."""

    pooler_output: torch.Tensor | None = None


class TwoStreamAttention(RelativeAttention):
    """XLNet's two-stream self-attention (Yang et al. 2019, sec. 2.3): the content stream h (what
    Transformer-XL computes) and the query stream g, which knows a position but not its token,
    attend to the same keys and values (memory + content stream) with the same projections; only
    their queries and masks differ. Parameters and their names are :class:`RelativeAttention`'s."""

    def forward(
        self,
        content: torch.Tensor,
        memory: torch.Tensor | None,
        encodings: torch.Tensor,
        different_segment: torch.Tensor | None,
        content_bias: torch.Tensor | None,
        attn_implementation: str,
        output_attentions: bool,
        key_value_prefix: tuple[torch.Tensor, torch.Tensor] | None = None,
        query_stream: torch.Tensor | None = None,
        query_bias: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor | None, ...]]:
        """The content stream ``content`` (B, T, H) attends under ``content_bias`` (B or 1, 1, T,
        M + T), as :meth:`RelativeAttention.forward`; the query stream ``query_stream`` (B, P, H)
        attends to the same keys and values under ``query_bias``; with ``target_mapping``
        (B, P, T) each of its P queries sits at the position it predicts. Returns the content
        output (B, T, H), the query output (B, P, H) or None, and the attention maps:
        (content,) or (content, query)."""
        key, value = self.memory_keys_values(content, memory, key_value_prefix)
        shared = (key, value, self.position_keys(encodings), different_segment)
        context, probs = self.attend_relative(
            self.project_queries(content), *shared, content_bias, attn_implementation, output_attentions
        )
        if query_stream is None:
            return self.output(context), None, (probs,)
        query = self.project_queries(query_stream)
        if target_mapping is not None:  # (B, heads, P, D) -> (B, heads, T, D)
            query = torch.einsum("bnpd,bpt->bntd", query, target_mapping)
        query_context, query_probs = self.attend_relative(
            query, *shared, query_bias, attn_implementation, output_attentions
        )
        if target_mapping is not None:
            query_context = torch.einsum("bntd,bpt->bnpd", query_context, target_mapping)
        return self.output(context), self.output(query_context), (probs, query_probs)


class XLNetLayer(GradientCheckpointingLayer):
    """Relative attention for each stream -> dropout -> residual -> LayerNorm, then the shared FFN
    (its inner dropout is XLNet's dropout) -> dropout -> residual -> LayerNorm, for each stream."""

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__()
        self.attention = TwoStreamAttention(
            config.hidden_size, config.num_attention_heads, dropout=config.hidden_dropout_prob, head_dim=config.head_dim
        )  # with XLNet's relative segment terms
        self.attention_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.ffn = FeedForward(
            config.hidden_size, config.intermediate_size, config.hidden_act, inner_dropout=config.hidden_dropout_prob
        )
        self.ffn_norm = build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def _finish(self, stream: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """Attention output (B, T, H) + residual ``stream`` (B, T, H) -> the layer's output."""
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
        attn_implementation: str,
        output_attentions: bool,
        key_value_prefix: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple]:
        """content (B, T, H), query_stream (B, P, H) or None, memory (B, M, H) or None,
        encodings (1 or B, M + 2T, H), target_mapping (B, P, T), key_value_prefix (B, heads, P', D)
        each or None -> the new streams and attention maps."""
        content_attended, query_attended, probs = self.attention(
            content,
            memory,
            encodings,
            different_segment,
            content_bias,
            attn_implementation,
            output_attentions,
            key_value_prefix=key_value_prefix,
            query_stream=query_stream,
            query_bias=query_bias,
            target_mapping=target_mapping,
        )
        new_content = self._finish(content, content_attended)
        if query_stream is None:
            return new_content, None, probs
        return new_content, self._finish(query_stream, query_attended), probs


class XLNetPreTrainedModel(VariantPreTrainedModel):
    config_class = XLNetConfig
    _no_split_modules = ["XLNetLayer"]
    base_model_prefix = "transformer"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        std = self.config.initializer_range
        if isinstance(module, RelativeAttention):
            for parameter in module.parameters_to_initialise():
                init.normal_(parameter, mean=0.0, std=std)
        elif isinstance(module, XLNetModel):
            init.normal_(module.mask_emb, mean=0.0, std=std)


class XLNetModel(XLNetPreTrainedModel):
    """The bare two-stream encoder. ``last_hidden_state`` is the query stream at the
    ``target_mapping`` predictions (B, P, H) when one is given, else the content stream (B, T, H)."""

    def __init__(self, config: XLNetConfig, add_pooling_layer: bool = False) -> None:
        super().__init__(config)
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.mask_emb = nn.Parameter(torch.empty(1, 1, config.hidden_size))
        self.layers = nn.ModuleList(XLNetLayer(config) for _ in range(config.num_hidden_layers))
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.word_embeddings = value

    # ------------------------------------------------------------------ the inputs XLNet reads
    def relative_encodings(self, length: int, key_length: int, batch: int, device: torch.device) -> torch.Tensor:
        """Sinusoids of the relative distances from ``key_length`` down to -length + 1 ("bi") or 0
        ("uni"), clamped to ``clamp_len``: (1, R, H), or (B, R, H) with ``bi_data`` (the second half
        of the batch reads the distances negated: the sequence backwards)."""
        config = self.config
        return relative_encodings(
            length,
            key_length,
            config.hidden_size,
            bidirectional=config.attn_type == "bi",
            clamp_len=config.clamp_len,
            batch=batch,
            both_directions=config.bi_data,
            device=device,
        )

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
        The shared task bases' layout arguments are read only to decide whether left-padded rows
        may run in length buckets (:meth:`_runs_in_length_buckets`, ``config.padding_free``);
        ``output_positions`` and the like are ignored: XLNet computes every position.
        """
        config = self.config
        for name in ("position_ids",):
            if kwargs.get(name) is not None:
                raise ValueError(f"XLNet has no {name}: positions are relative")
        output_attentions = config.output_attentions if output_attentions is None else output_attentions
        output_hidden_states = config.output_hidden_states if output_hidden_states is None else output_hidden_states
        return_dict = config.return_dict if return_dict is None else return_dict
        if use_mems is None:
            use_mems = config.use_mems_train if self.training else config.use_mems_eval
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
        if prefix is None and self._runs_in_length_buckets(
            attention_mask, mems, perm_mask, target_mapping, use_mems, output_attentions or output_hidden_states, kwargs
        ):
            result = self._forward_in_length_buckets(inputs_embeds, attention_mask, token_type_ids)
            return result if return_dict else result.to_tuple()

        # mems: transformers' (M, B, H) per layer <-> the shared memory's (B, M, H).
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
        encodings = self.dropout(self.relative_encodings(length, memory_length + length, batch, device).to(dtype))

        content = self.dropout(inputs_embeds)
        query_stream = None
        if target_mapping is not None:
            target_mapping = target_mapping.to(dtype)
            query_stream = self.dropout(self.mask_emb.expand(batch, target_mapping.shape[1], -1))

        backend = self.attention_backend
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
                backend,
                output_attentions,
                None if prefix is None else prefix.layer(depth),
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

    def _runs_in_length_buckets(
        self, attention_mask, mems, perm_mask, target_mapping, use_mems, outputs_per_layer, layout: dict
    ) -> bool:
        """Whether this call may run its rows in length buckets (``config.padding_free``, or the
        caller's ``padding_free``): a plain bidirectional encoding (no memory in or out, no
        permutation or targets, no per-layer outputs, no ``bi_data``) of a left-padded batch
        (every row ends at the last position, as XLNet's tokenizer pads) with enough padding to
        be worth it, read only where real tokens sit (not ``reads_padding``; a summary head reads
        the last token, or the mean)."""
        allowed = layout.get("padding_free")
        config = self.config
        if not (config.padding_free if allowed is None else allowed) or attention_mask is None:
            return False
        if is_tracing():  # the bucket layout reads mask values: traced graphs take the padded path
            return False
        if mems is not None or perm_mask is not None or target_mapping is not None or use_mems or outputs_per_layer:
            return False
        if config.attn_type != "bi" or config.bi_data or layout.get("reads_padding"):
            return False
        if layout.get("summary_only") and config.summary_type not in ("last", "last_real", "mean"):
            return False
        return is_left_padded(attention_mask) and worth_unpadding(attention_mask)

    def _forward_in_length_buckets(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None
    ) -> XLNetBackboneOutput:
        """Left-padded rows grouped by length (:func:`~hf_variants.modules.padding.bucket_rows`), each
        group encoded cut to its own longest row: the padding a group does not need costs nothing.

        Exact at real tokens: every term of XLNet's attention depends on positions only through
        i - j, so dropping padding keys (masked anyway) from the left changes nothing; the outputs
        at padding positions are zeros, as in the shared padding-free path.
        inputs_embeds (B, T, H), attention_mask (B, T) -> last_hidden_state (B, T, H)."""
        batch, length, hidden = inputs_embeds.shape
        lengths = attention_mask.sum(dim=1).tolist()
        output = inputs_embeds.new_zeros(batch, length, hidden)
        for rows in bucket_rows(lengths):
            index = torch.tensor(rows, device=inputs_embeds.device)
            window = slice(length - max(lengths[row] for row in rows), length)
            mask = attention_mask[index, window]
            part = self(
                inputs_embeds=inputs_embeds[index, window],
                attention_mask=mask,
                use_mems=False,
                return_dict=True,
                token_type_ids=None if token_type_ids is None else token_type_ids[index, window],
                padding_free=False,
            ).last_hidden_state
            output[index, window] = part * mask[..., None].to(part.dtype)
        return XLNetBackboneOutput(last_hidden_state=output)


def check_shape(tensor: torch.Tensor, expected: tuple[int, ...], name: str) -> None:
    if tuple(tensor.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {tuple(expected)}")


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
        return result if return_dict is not False else result.to_tuple()


class SummaryScorer(nn.Module):
    """transformers' XLNet sequence head: the summary token (B, H) -> SequenceSummary (projection to
    H, tanh, dropout) -> ``logits_proj`` (B, num_outputs)."""

    def __init__(self, config: XLNetConfig, num_outputs: int) -> None:
        super().__init__()
        self.summary = SequenceSummary(
            config.hidden_size,
            num_outputs,
            use_proj=config.summary_use_proj,
            proj_to_labels=False,
            activation=config.summary_activation,
            last_dropout=config.summary_last_dropout,
        )
        self.logits_proj = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, summary: torch.Tensor, pooled: torch.Tensor | None = None) -> torch.Tensor:
        return self.logits_proj(self.summary(summary))


class _XLNetTaskModel:
    """The shared encoder heads on XLNet's backbone (no pooler). Each head's forward names XLNet's
    own inputs (mems, perm_mask, ...) and hands them to the backbone by keyword."""

    backbone_class = XLNetModel
    uses_pooler = False
    # transformers' XLNet output types: the standard fields plus the next segment's ``mems``.
    output_types = {
        SequenceClassifierOutput: XLNetForSequenceClassificationOutput,
        TokenClassifierOutput: XLNetForTokenClassificationOutput,
        QuestionAnsweringModelOutput: XLNetForQuestionAnsweringSimpleOutput,
        MultipleChoiceModelOutput: XLNetForMultipleChoiceOutput,
    }

    def extra_outputs(self, backbone_output) -> dict:
        return {"mems": backbone_output.mems}

    def _summary(self, out, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """(B, T, H) states -> (B, H) summary. "last" is XLNet's <cls>, the last token its tokenizer
        writes: each row's last real token (``attention_mask`` (B, T)), which is position T-1 for
        the left-padded or unpadded batches XLNet's tokenizer gives (transformers' XLNet reads T-1
        always, so a right-padded batch from another tokenizer would score a padding token there).
        "first" and "mean" read position 0 / average all T, padding included, as transformers'."""
        states = out.last_hidden_state
        summary_type = self.config.summary_type
        if summary_type == "last":
            if attention_mask is not None:  # (B, P + T) with a key/value prefix (peft): the tokens' columns
                attention_mask = attention_mask[:, attention_mask.shape[1] - states.shape[1] :]
            return summarize(states, "last_real", attention_mask)
        return {"first": states[:, 0], "mean": states.mean(dim=1)}[summary_type]

    def build_classifier(self, config: XLNetConfig, num_outputs: int) -> SummaryScorer:
        return SummaryScorer(config, num_outputs)


class XLNetForSequenceClassification(_XLNetTaskModel, EncoderForSequenceClassification, XLNetPreTrainedModel):
    """The summary token (``summary_type``: last, XLNet's <cls>) -> SummaryScorer (B, num_labels)."""

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
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        use_mems: bool | None = None,
        **kwargs,
    ) -> XLNetForSequenceClassificationOutput | tuple:
        """As :meth:`EncoderHeadModel.forward`, plus XLNet's inputs (see :meth:`XLNetModel.forward`; inputs
        (B, T)): named here so that Trainer keeps those dataset columns."""
        return super().forward(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            labels,
            output_attentions,
            output_hidden_states,
            return_dict,
            past_key_values,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            input_mask=input_mask,
            use_mems=use_mems,
            **kwargs,
        )


class XLNetForMultipleChoice(_XLNetTaskModel, EncoderForMultipleChoice, XLNetPreTrainedModel):
    """Inputs (B, C, T); one score per choice from the summary token; logits (B, C)."""

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
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        use_mems: bool | None = None,
        **kwargs,
    ) -> XLNetForMultipleChoiceOutput | tuple:
        """As :meth:`EncoderForMultipleChoice.forward`, plus XLNet's inputs (see :meth:`XLNetModel.forward`; inputs
        (B, C, T), flattened to (B * C, T)): named here so that Trainer keeps those dataset columns."""
        return super().forward(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            labels,
            output_attentions,
            output_hidden_states,
            return_dict,
            past_key_values,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            input_mask=input_mask,
            use_mems=use_mems,
            **kwargs,
        )


class XLNetForTokenClassification(_XLNetTaskModel, EncoderForTokenClassification, XLNetPreTrainedModel):
    """Per-token Linear(H, num_labels) (no dropout before it, as transformers' XLNet)."""

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
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        use_mems: bool | None = None,
        **kwargs,
    ) -> XLNetForTokenClassificationOutput | tuple:
        """As :meth:`EncoderHeadModel.forward`, plus XLNet's inputs (see :meth:`XLNetModel.forward`; inputs
        (B, T)): named here so that Trainer keeps those dataset columns."""
        return super().forward(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            labels,
            output_attentions,
            output_hidden_states,
            return_dict,
            past_key_values,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            input_mask=input_mask,
            use_mems=use_mems,
            **kwargs,
        )


class XLNetForQuestionAnsweringSimple(_XLNetTaskModel, EncoderForQuestionAnswering, XLNetPreTrainedModel):
    """Start/end logits per token (transformers' XLNetForQuestionAnsweringSimple, the class its
    AutoModelForQuestionAnswering picks). The beam-search SQuAD 2.0 head is not provided."""

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
        mems: list[torch.Tensor] | tuple[torch.Tensor, ...] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        input_mask: torch.Tensor | None = None,
        use_mems: bool | None = None,
        **kwargs,
    ) -> XLNetForQuestionAnsweringSimpleOutput | tuple:
        """As :meth:`EncoderForQuestionAnswering.forward`, plus XLNet's inputs (see :meth:`XLNetModel.forward`; inputs
        (B, T)): named here so that Trainer keeps those dataset columns."""
        return super().forward(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            start_positions,
            end_positions,
            output_attentions,
            output_hidden_states,
            return_dict,
            past_key_values,
            mems=mems,
            perm_mask=perm_mask,
            target_mapping=target_mapping,
            input_mask=input_mask,
            use_mems=use_mems,
            **kwargs,
        )


__all__ = [
    "XLNetPreTrainedModel",
    "XLNetModel",
    "XLNetLMHeadModel",
    "XLNetForSequenceClassification",
    "XLNetForTokenClassification",
    "XLNetForQuestionAnsweringSimple",
    "XLNetForMultipleChoice",
]
