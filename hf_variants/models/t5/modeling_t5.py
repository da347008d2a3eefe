"""T5 on the shared encoder-decoder blocks. What is T5's own:

- :class:`T5RelativePositionBias`: the bucketed relative-position bias, computed once per stack and
  forward (``TransformerBackbone.build_position_bias``) and added to every self-attention layer's
  scores; bidirectional buckets in the encoder, causal ones in the decoder; none in cross-attention.
- the stacks: embeddings without positions, segments, norm or padding row (the pad id is also the
  decoder start token, so its embedding is trained); pre-RMS-norm layers without biases or score
  scaling; a final norm and dropout per stack (the rest is set by :class:`T5Config`);
- the output: tied to the embeddings with the d_model^-0.5 rescale (v1.0) or untied (v1.1);
- the heads as transformers' T5: sequence classification on the decoder state of the last EOS,
  extractive QA on the decoder states, token classification on the encoder.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.cache_utils import Cache
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    Seq2SeqQuestionAnsweringModelOutput,
    Seq2SeqSequenceClassifierOutput,
)

from ...modules.attention import MultiHeadAttention
from ...modules.backbone import TransformerBackbone
from ...modules.decoder import DecoderBackbone, EncoderDecoderBackbone
from ...modules.embeddings import TransformerEmbeddings, check_batch_shape, check_index_range
from ...modules.encoder import LayerSpec, LayerStack
from ...modules.feed_forward import FeedForward
from ...modules.generation import EncoderDecoderForSeq2SeqLM, finish_seq2seq, shift_tokens_right
from ...modules.heads import SummaryClassifier, sequence_classification_loss, span_extraction_loss
from ...modules.task_models import EncoderForTokenClassification
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
    """One learned scalar per (bucket, head), added to the attention scores: (1, heads, T, S)."""

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


class T5PreTrainedModel(VariantPreTrainedModel):
    config_class = T5Config
    base_model_prefix = "transformer"
    _keys_to_ignore_on_load_unexpected = [
        r"decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight"
    ]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Mesh TensorFlow's initialisation, as the original: unit-variance embeddings, fan-in scaled
        projections, with the missing 1/sqrt(d_kv) score scale folded into the query init."""
        super()._init_weights(module)
        config, factor = self.config, self.config.initializer_factor
        inner = config.num_attention_heads * config.head_dim
        if isinstance(module, TransformerEmbeddings):
            init.normal_(module.word_embeddings.weight, 0.0, factor)
        elif isinstance(module, T5RelativePositionBias):
            init.normal_(module.embedding.weight, 0.0, factor * config.hidden_size**-0.5)
        elif isinstance(module, MultiHeadAttention):
            stds = [(config.hidden_size * config.head_dim) ** -0.5, config.hidden_size**-0.5, config.hidden_size**-0.5]
            if module.cross_attention:
                init.normal_(module.query.weight, 0.0, factor * stds[0])
                init.normal_(module.key_value.weight, 0.0, factor * stds[1])
            elif not getattr(
                module.qkv.weight, "_is_hf_initialized", False
            ):  # (row blocks are views: no flag of their own)
                for rows, std in zip(module.qkv.weight.split(inner), stds):
                    rows.normal_(0.0, factor * std)
            init.normal_(module.out.weight, 0.0, factor * inner**-0.5)
        elif isinstance(module, FeedForward):
            for projection in (module.up, module.gate):
                if projection is not None:
                    init.normal_(projection.weight, 0.0, factor * config.hidden_size**-0.5)
            init.normal_(module.down.weight, 0.0, factor * config.intermediate_size**-0.5)
        elif isinstance(module, SummaryClassifier):
            for projection in (module.dense, module.out_proj):
                init.normal_(projection.weight, 0.0, factor * config.hidden_size**-0.5)
                init.zeros_(projection.bias)
        elif isinstance(module, T5ForConditionalGeneration) and not config.tie_word_embeddings:
            init.normal_(module.lm_head.weight, 0.0, factor)
        elif isinstance(module, T5ForQuestionAnswering):
            init.normal_(module.qa_outputs.weight, 0.0, factor * config.hidden_size**-0.5)
            init.zeros_(module.qa_outputs.bias)
        elif isinstance(module, T5ForTokenClassification):
            init.normal_(module.classifier.weight, 0.0, factor)
            init.zeros_(module.classifier.bias)


class _T5StackHooks:
    """The backbone hooks both T5 stacks share (the encoder's bidirectional, the decoder's causal)."""

    # A 4-D (B, 1, T, past + T) attention mask is used as given, as transformers' T5 takes one
    # (packed documents, a shared prefix): the encoder's ``attention_mask``, the decoder's
    # ``decoder_attention_mask`` (causality included). The relative position bias still counts
    # positions in the row.
    accepts_4d_attention_mask = True

    def build_embeddings(self, config: T5Config) -> TransformerEmbeddings:
        # No padding row: the pad id is also the decoder start token, whose embedding must train.
        return TransformerEmbeddings(
            **{**TransformerEmbeddings.config_kwargs(config), "pad_token_id": None, "layer_norm": False}
        )

    def build_layers(self, config: T5Config) -> LayerStack:
        spec = LayerSpec.from_config(config, cross_attention=config.add_cross_attention)
        return LayerStack(
            spec, config.num_hidden_layers, sharing=config.layer_sharing, final_dropout=config.hidden_dropout_prob
        )

    def build_pooler(self, config: T5Config) -> None:
        return None

    def build_position_bias(self, config: T5Config) -> T5RelativePositionBias:
        return T5RelativePositionBias(
            config.num_attention_heads,
            config.relative_attention_num_buckets,
            config.relative_attention_max_distance,
            bidirectional=not config.is_decoder,
        )


class T5Stack(_T5StackHooks, TransformerBackbone, T5PreTrainedModel):
    """The encoder: (B, S) ids -> (B, S, H)."""


class T5DecoderStack(_T5StackHooks, DecoderBackbone, T5PreTrainedModel):
    """The decoder: causal self-attention with a cache, cross-attention to the encoder."""


class T5Model(EncoderDecoderBackbone, T5PreTrainedModel):
    """The bare encoder-decoder: Seq2SeqModelOutput with the decoder's last hidden state (B, T, H)."""

    encoder_class = T5Stack
    decoder_class = T5DecoderStack


class T5ForConditionalGeneration(EncoderDecoderForSeq2SeqLM, T5PreTrainedModel, GenerationMixin):
    """Text-to-text: seq2seq LM loss from ``labels`` and ``generate()``."""

    backbone_class = T5Model

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """v1.0 rescales by d_model^-0.5 before the tied output (the embeddings have unit variance)."""
        if self.config.rescales_output:
            hidden_states = hidden_states * self.config.hidden_size**-0.5
        return self.lm_head(hidden_states)


class T5EncoderModel(T5PreTrainedModel):
    """The encoder alone (transformers' T5EncoderModel): BaseModelOutput (B, S, H)."""

    def __init__(self, config: T5Config, add_pooling_layer: bool = False) -> None:
        super().__init__(config)
        self.encoder = T5Stack(EncoderDecoderBackbone.encoder_config(config), add_pooling_layer=False)
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
    ) -> BaseModelOutputWithPooling | tuple:
        """Args and output as the encoder stack (TransformerBackbone.forward); past_key_values: a
        key/value prefix for the encoder."""
        return self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values, **kwargs
        )


class T5ForTokenClassification(EncoderForTokenClassification, T5PreTrainedModel):
    """Per-token labels on the encoder states (dropout ``classifier_dropout``, linear)."""

    backbone_class = T5EncoderModel


class _T5EncoderDecoderHead(T5PreTrainedModel):
    """Heads reading the decoder over the source shifted right (transformers' T5 classification and QA)."""

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

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.get_input_embeddings()

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

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.get_input_embeddings()

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
            reads_padding=True,  # the span softmax runs over every position, padding included
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
