"""XLM (Lample & Conneau 2019, "Cross-lingual Language Model Pretraining"): BERT's post-LN encoder
with a language embedding added to every token, trained with causal (CLM), masked (MLM) or
translation (TLM) language modelling.

What is XLM's own, on top of ``hf_variants.modules``:

- :class:`XLMEmbeddings`: word + position + language embeddings (``langs`` (B, T), one id per
  token), no segment table: ``token_type_ids``, if given, index the word table, as in
  transformers' XLM. Fixed sinusoids (``position_embedding_type="sinusoidal"``) live in the
  position table, frozen, as in the original code and in transformers' checkpoints.
- :class:`XLMModel`: no pooler; states at padding positions are exactly zero (transformers
  multiplies by the mask after the embeddings and each layer); without an ``attention_mask``,
  ``lengths`` (B,) or the ``pad_token_id`` tokens give the padding.
- heads: the LM head is a decoder tied to the word embeddings with no transform; sequence
  classification and multiple choice read transformers' ``SequenceSummary`` (dropout ->
  projection to num_labels), multiple choice then scores each choice with ``logits_proj``.

Attention runs with eager or SDPA kernels and the padding-free layout (transformers' XLM is
eager only). With ``is_decoder`` (alias ``causal``) attention is causal: the CLM setting. Labels
are never shifted inside the model (as transformers' XLMWithLMHeadModel): for CLM, pass the next
tokens as labels.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn
from transformers import GenerationMixin
from transformers import initialization as init
from transformers.cache_utils import Cache
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from ...modules.backbone import TransformerBackbone
from ...modules.embeddings import TransformerEmbeddings, check_ids_or_embeds, check_index_range, sinusoidal_table
from ...modules.heads import MaskedLMHead, SequenceSummary
from ...modules.masks import mask_from_lengths, mask_from_pad_tokens
from ...modules.task_models import (
    EncoderForMaskedLM,
    EncoderForMultipleChoice,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
)
from ...modules.token_ids import CheckedGenerationMixin
from ..modeling_base import VariantPreTrainedModel
from .configuration_xlm import XLMConfig


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


class XLMEmbeddings(TransformerEmbeddings):
    """(word + position + language [+ word table at token_type_ids]) -> LayerNorm -> dropout.

    ``langs``: (B, T) language ids in [0, n_langs), or the packed (N,) layout like ``input_ids``.
    They are checked always and embedded when ``use_lang_emb`` and ``n_langs > 1`` (transformers
    ignores them otherwise, e.g. for XLM-100).
    """

    extra_input_names = ("langs",)

    def __init__(self, config: XLMConfig) -> None:
        kwargs = TransformerEmbeddings.config_kwargs(config)
        fixed_sinusoids = config.position_embedding_type == "sinusoidal"
        if fixed_sinusoids:
            kwargs["position_embedding_type"] = "learned"  # a table lookup, of the frozen sinusoids
        super().__init__(**kwargs)
        if fixed_sinusoids:
            self.position_embeddings = FrozenSinusoids(config.max_position_embeddings, config.hidden_size)
        self.n_langs = config.n_langs
        uses_languages = config.use_lang_emb and config.n_langs > 1
        self.lang_embeddings = nn.Embedding(config.n_langs, config.hidden_size) if uses_languages else None

    def check_inputs(self, input_ids, token_type_ids, position_ids, sequence_length: int) -> None:
        super().check_inputs(input_ids, None, position_ids, sequence_length)
        if token_type_ids is not None:
            check_index_range(
                token_type_ids,
                self.word_embeddings.num_embeddings,
                "token_type_ids",
                "vocab_size (XLM looks token_type_ids up in the word embeddings)",
            )

    def additional_embeddings(
        self, token_type_ids: torch.Tensor | None, langs: torch.Tensor | None = None
    ) -> torch.Tensor | None:
        added = None
        if langs is not None:
            check_index_range(langs, self.n_langs, "langs", "n_langs")
            if self.lang_embeddings is not None:
                added = self.lang_embeddings(langs)
        if token_type_ids is not None:
            segments = self.word_embeddings(token_type_ids)
            added = segments if added is None else added + segments
        return added


class XLMPreTrainedModel(VariantPreTrainedModel):
    config_class = XLMConfig
    base_model_prefix = "transformer"

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


class XLMModel(TransformerBackbone, XLMPreTrainedModel):
    """The bare encoder: no pooler; zeros at padding positions."""

    zeroes_padding_states = True

    def build_embeddings(self, config: XLMConfig) -> XLMEmbeddings:
        return XLMEmbeddings(config)

    def build_pooler(self, config: XLMConfig) -> None:
        return None

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        langs: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        """transformers' XLMModel arguments (no ``cache``): ``langs`` (B, T) language ids,
        ``lengths`` (B,) real tokens per row (an alternative to ``attention_mask``),
        ``past_key_values`` a key/value prefix (peft's prefix tuning); the rest and the outputs as
        :meth:`TransformerBackbone.forward` (pooler_output is None)."""
        batch, length = check_ids_or_embeds(input_ids, inputs_embeds)
        reference = input_ids if input_ids is not None else inputs_embeds
        attention_mask = padding_mask(
            input_ids, attention_mask, lengths, self.config.pad_token_id, batch, length, reference.device
        )
        return super().forward(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=return_dict,
            past_key_values=past_key_values,
            langs=langs,
            **kwargs,
        )


def summary_arguments(config: XLMConfig) -> dict:
    """transformers' XLMSequenceSummary options, from the config's ``summary_*`` fields."""
    return dict(
        use_proj=config.summary_use_proj,
        proj_to_labels=config.summary_proj_to_labels,
        activation=config.summary_activation,
        first_dropout=config.summary_first_dropout,
        last_dropout=config.summary_last_dropout,
    )


class XLMWithLMHeadModel(EncoderForMaskedLM, XLMPreTrainedModel, CheckedGenerationMixin, GenerationMixin):
    """MLM / TLM (and CLM with ``is_decoder``): logits = h W_emb^T + b at every position, loss =
    cross-entropy where ``labels`` != -100 (labels are not shifted).

    ``generate()`` works as transformers' XLMWithLMHeadModel: each step re-encodes the sequence with
    ``config.mask_token_id`` appended (language ``config.lang_id`` everywhere, no cache; a
    left-padded batch keeps its attention mask and counts positions from each row's first real
    token) and predicts the token at that mask. With ``output_attentions`` /
    ``output_hidden_states`` each step returns its (B, heads, T + 1, T + 1) attentions and
    (B, T + 1, H) hidden states, as transformers' XLM does."""

    backbone_class = XLMModel

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
        langs: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        **kwargs,
    ) -> MaskedLMOutput | tuple:
        """As :meth:`EncoderForMaskedLM.forward`, plus XLM's ``langs`` (B, T) language ids and ``lengths`` (B,)
        real tokens per row (named here so that Trainer keeps those dataset columns)."""
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
            langs=langs,
            lengths=lengths,
            **kwargs,
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

    def build_lm_head(self, config: XLMConfig) -> MaskedLMHead:
        return MaskedLMHead(
            config.hidden_size, config.vocab_size, config.hidden_act, config.layer_norm_eps, transform=False
        )


class XLMForSequenceClassification(EncoderForSequenceClassification, XLMPreTrainedModel):
    """The summary token (``summary_type``, first by default) -> dropout -> Linear(H, num_labels)."""

    backbone_class = XLMModel
    uses_pooler = False

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
        langs: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput | tuple:
        """As :meth:`EncoderHeadModel.forward`, plus XLM's ``langs`` (B, T) language ids and ``lengths`` (B,)
        real tokens per row (named here so that Trainer keeps those dataset columns)."""
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
            langs=langs,
            lengths=lengths,
            **kwargs,
        )

    def build_classifier(self, config: XLMConfig, num_outputs: int) -> SequenceSummary:
        summary = SequenceSummary(config.hidden_size, num_outputs, **summary_arguments(config))
        if summary.output_size != num_outputs:
            raise ValueError(
                "XLMForSequenceClassification needs the summary projected to num_labels: set "
                "summary_use_proj=True and summary_proj_to_labels=True"
            )
        return summary


class ChoiceScorer(SequenceSummary):
    """transformers' XLMForMultipleChoice head: the sequence summary (B*C, num_labels or H), then
    ``logits_proj`` to one score per choice (B*C, 1). The summary's weights sit where sequence
    classification keeps them (``classifier.summary``), so one key map serves both heads."""

    def __init__(self, config: XLMConfig) -> None:
        super().__init__(config.hidden_size, config.num_labels, **summary_arguments(config))
        self.logits_proj = nn.Linear(self.output_size, 1)

    def forward(self, summary: torch.Tensor, pooled: torch.Tensor | None = None) -> torch.Tensor:
        return self.logits_proj(super().forward(summary))


class XLMForMultipleChoice(EncoderForMultipleChoice, XLMPreTrainedModel):
    """Inputs (B, C, T). ``lengths``: (B, C), the real tokens of each choice (flattened with the
    choices); a (B,) per-example ``lengths`` cannot say which choice it measures: like transformers'
    XLMForMultipleChoice it is dropped with a warning and the attention mask (or the pad tokens)
    gives the padding."""

    backbone_class = XLMModel
    uses_pooler = False

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
        langs: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        **kwargs,
    ) -> MultipleChoiceModelOutput | tuple:
        """As :meth:`EncoderForMultipleChoice.forward` (inputs (B, C, T)), plus XLM's ``langs``
        (B, C, T) and ``lengths`` (B, C) (see the class docstring)."""
        reference = input_ids if input_ids is not None else inputs_embeds
        if lengths is not None and reference is not None and reference.dim() >= 3 and lengths.dim() == 1:
            warnings.warn(
                f"lengths of shape {tuple(lengths.shape)} (one per example) cannot be used with multiple choice "
                "inputs (batch, num_choices, seq_len): ignored; pass attention_mask or (batch, num_choices) lengths",
                stacklevel=2,
            )
            lengths = None
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
            langs=langs,
            lengths=lengths,
            **kwargs,
        )

    def build_classifier(self, config: XLMConfig, num_outputs: int) -> ChoiceScorer:
        return ChoiceScorer(config)


class XLMForTokenClassification(EncoderForTokenClassification, XLMPreTrainedModel):
    backbone_class = XLMModel

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
        langs: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        **kwargs,
    ) -> TokenClassifierOutput | tuple:
        """As :meth:`EncoderHeadModel.forward`, plus XLM's ``langs`` (B, T) language ids and ``lengths`` (B,)
        real tokens per row (named here so that Trainer keeps those dataset columns)."""
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
            langs=langs,
            lengths=lengths,
            **kwargs,
        )


class XLMForQuestionAnsweringSimple(EncoderForQuestionAnswering, XLMPreTrainedModel):
    """Start/end logits per token (transformers' XLMForQuestionAnsweringSimple, the class its
    AutoModelForQuestionAnswering picks for XLM). The beam-search SQuAD head of transformers'
    XLMForQuestionAnswering is not provided."""

    backbone_class = XLMModel

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
        langs: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
        **kwargs,
    ) -> QuestionAnsweringModelOutput | tuple:
        """As :meth:`EncoderForQuestionAnswering.forward`, plus XLM's ``langs`` (B, T) language ids and ``lengths`` (B,)
        real tokens per row (named here so that Trainer keeps those dataset columns)."""
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
            langs=langs,
            lengths=lengths,
            **kwargs,
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
