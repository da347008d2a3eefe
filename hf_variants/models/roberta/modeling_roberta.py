"""RoBERTa (Liu et al. 2019): BERT's encoder, pretrained better (dynamic masking, no NSP, full-length
inputs, large batches, byte-level BPE). XLM-RoBERTa (Conneau et al. 2020) is the same network with
a larger vocabulary, so these classes serve both.

RoBERTa = BERT + only what differs, as transformers' ``modular_roberta`` builds it: the layers,
the stack, the attention backends and the padding-free fast path are BERT's
(:mod:`hf_variants.models.bert.modeling_bert`). What is RoBERTa's own, top to bottom:

- positions are offset by the padding index (fairseq's ``make_positions``): real tokens count
  from ``pad_token_id + 1``, padding tokens sit at ``pad_token_id`` wherever they are (left padding
  included), so 512 tokens use 514 position rows (:class:`RobertaEmbeddings`);
- the encoder lives under ``roberta`` (transformers' name): BERT's heads run it through the hook
  :meth:`RobertaPreTrainedModel.build_encoder`, so masked LM, token classification, QA and multiple
  choice are BERT's classes with RoBERTa's config and prefix;
- one segment type and no next-sentence prediction (:class:`RobertaForPreTraining` is MLM; the
  dynamic masking is the collators' job: a fresh mask every time a batch is built);
- sequence classification reads ``<s>`` through dense -> tanh -> out_proj
  (:class:`~hf_variants.modules.heads.SummaryClassifier`), not BERT's pooler.

The pooler: the paper's model has none, and no head but multiple choice reads one. transformers'
``RobertaModel`` still builds it by default (``add_pooling_layer=True``) and its
``RobertaForMultipleChoice`` scores the pooled ``<s>``; ours does the same, so every transformers
checkpoint (a fine-tuned multiple-choice model included) loads with identical outputs. The released
pretrained checkpoints carry no pooler weights: transformers initialises it, as we do.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache
from transformers.modeling_outputs import BaseModelOutputWithPooling, MaskedLMOutput, SequenceClassifierOutput

from ...modules.heads import (
    HeadReads,
    SummaryClassifier,
    classifier_dropout,
    refuse_next_sentence_label,
    sequence_classification_loss,
    summarize,
)
from ..bert.modeling_bert import (
    BertEmbeddings,
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForTokenClassification,
    BertModel,
    BertPreTrainedModel,
    _return,
)
from .configuration_roberta import RobertaConfig


# ----------------------------------------------------------------------------- embeddings
class RobertaEmbeddings(BertEmbeddings):
    """BERT's embeddings with positions offset by the padding index ``p``
    (:meth:`default_position_ids`); the padding position's row starts at zero and gets no
    gradient, as in fairseq and transformers."""

    def __init__(self, config: RobertaConfig) -> None:
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.position_embeddings.padding_idx = self.padding_idx

    @property
    def max_sequence_length(self) -> int:
        """Tokens the position table covers: real tokens start at ``padding_idx + 1``."""
        return self.max_position_embeddings - self.padding_idx - 1

    def default_position_ids(
        self, input_ids: torch.Tensor | None, batch: int, length: int, device: torch.device
    ) -> torch.Tensor:
        """(B, T) positions counted from the padding index ``p``.

        From ``input_ids``: a padding token gets position ``p``, the k-th real token of its row
        (k = 1, 2, ...) position ``p + k``, counting only real tokens, so left padding shifts
        nothing; padding is recognised by the padding id, not by ``attention_mask``, exactly as
        transformers' ``create_position_ids_from_input_ids``. From ``inputs_embeds`` (``input_ids``
        None) nothing tells padding apart: ``p + 1 .. p + T`` for every row
        (``create_position_ids_from_inputs_embeds``).
        """
        if input_ids is None:
            first = self.padding_idx + 1
            return torch.arange(first, first + length, device=device).expand(batch, length)
        real = input_ids.ne(self.padding_idx).long()
        return real.cumsum(dim=1) * real + self.padding_idx


# ----------------------------------------------------------------------------- model
class RobertaPreTrainedModel(BertPreTrainedModel):
    """BERT's, with RoBERTa's config and transformers' ``roberta`` prefix. Every RoBERTa class
    names ``config_class`` itself: transformers writes the config class into each subclass's own
    namespace, so a BERT class earlier in the MRO would otherwise win."""

    config_class = RobertaConfig
    base_model_prefix = "roberta"

    def build_encoder(self, config: RobertaConfig, add_pooling_layer: bool = True) -> None:
        """BERT's heads run ``self.roberta`` (a :class:`RobertaModel`) in place of ``self.bert``."""
        self.roberta = RobertaModel(config, add_pooling_layer=add_pooling_layer)


class RobertaModel(BertModel, RobertaPreTrainedModel):
    """BERT's encoder with :class:`RobertaEmbeddings`. ``add_pooling_layer`` (default True, as
    transformers') adds BERT's tanh pooler over ``<s>``, which only :class:`RobertaForMultipleChoice`
    reads."""

    config_class = RobertaConfig
    embeddings_class = RobertaEmbeddings

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
        """:meth:`BertModel.forward` with RoBERTa's default ``position_ids`` (B, T)
        (:meth:`RobertaEmbeddings.default_position_ids`); every other argument and the output are BERT's."""
        main = input_ids if input_ids is not None else inputs_embeds
        well_formed = (input_ids is None) != (inputs_embeds is None) and main.dim() == (
            2 if input_ids is not None else 3
        )
        if position_ids is None and well_formed:  # malformed inputs: BertModel names the problem
            batch, length = main.shape[:2]
            if length > self.embeddings.max_sequence_length:
                raise ValueError(
                    f"sequence length {length} exceeds the {self.embeddings.max_sequence_length} tokens RoBERTa's "
                    f"positions cover (max_position_embeddings {self.embeddings.max_position_embeddings} minus "
                    "pad_token_id + 1, where real tokens start); truncate the input"
                )
            position_ids = self.embeddings.default_position_ids(input_ids, batch, length, main.device)
        return super().forward(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            past_key_values,
            output_attentions,
            output_hidden_states,
            return_dict,
            reads,
            **kwargs,
        )


# ----------------------------------------------------------------------------- heads
class RobertaForMaskedLM(BertForMaskedLM, RobertaPreTrainedModel):
    """BERT's masked LM on ``self.roberta``: the tied MLM head (transform + decoder tied to the word
    embeddings, own bias) and BERT's sparse prediction (``config.sparse_prediction``: logits
    (num_masked, V) at the masked positions only)."""

    config_class = RobertaConfig
    _tied_weights_keys = {"mlm_head.decoder.weight": "roberta.embeddings.word_embeddings.weight"}


class RobertaForPreTraining(RobertaForMaskedLM):
    """The paper's pretraining objective: masked language modelling alone (no NSP), served by
    ``AutoModelForPreTraining`` (transformers maps RoBERTa's to its ``RobertaForMaskedLM`` too).

    Dynamic masking is a property of the data, not of the model: feed it the MLM collator of
    ``hf_variants.objectives``, which draws a new mask every time it builds a batch, over
    FULL-SENTENCES / DOC-SENTENCES packed inputs. A ``next_sentence_label`` (a BERT collator's
    column) raises rather than being silently ignored.
    """

    config_class = RobertaConfig

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
        """As :meth:`BertForMaskedLM.forward`."""
        refuse_next_sentence_label(kwargs, "RoBERTa")
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
            **kwargs,
        )


class RobertaForSequenceClassification(RobertaPreTrainedModel):
    """RoBERTa's own classifier: dropout -> dense -> tanh -> dropout -> out_proj on ``<s>`` (no
    pooler; BERT's reads the pooled [CLS]). labels: (B,) class ids, (B,) floats for regression
    (num_labels == 1), or (B, num_labels) multi-hot (problem_type). Logits (B, num_labels)."""

    config_class = RobertaConfig
    reads_summary_only = True  # the head reads the summary token alone

    def __init__(self, config: RobertaConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.classifier = SummaryClassifier(
            config.hidden_size, config.num_labels, classifier_dropout(config), cpu_dropout=config.padding_free
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
        outputs = self.roberta(
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
        summary = summarize(outputs.last_hidden_state, self.config.summary_type, attention_mask)  # (B, H): <s>
        logits = self.classifier(summary, None)
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return _return(
            SequenceClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class RobertaForTokenClassification(BertForTokenClassification, RobertaPreTrainedModel):
    """BERT's per-token classifier (dropout + linear on every position) on ``self.roberta``."""

    config_class = RobertaConfig


class RobertaForQuestionAnswering(BertForQuestionAnswering, RobertaPreTrainedModel):
    """BERT's extractive QA head on ``self.roberta``: start/end logits (B, T) each; the span softmax
    runs over all T positions, padding included, as transformers'."""

    config_class = RobertaConfig


class RobertaForMultipleChoice(BertForMultipleChoice, RobertaPreTrainedModel):
    """BERT's multiple-choice head on ``self.roberta``: one score per choice from the pooled ``<s>``
    (dropout -> linear), as transformers' RoBERTa. Inputs (B, C, T); logits (B, C); labels (B,)."""

    config_class = RobertaConfig


__all__ = [
    "RobertaPreTrainedModel",
    "RobertaEmbeddings",
    "RobertaModel",
    "RobertaForPreTraining",
    "RobertaForMaskedLM",
    "RobertaForSequenceClassification",
    "RobertaForTokenClassification",
    "RobertaForQuestionAnswering",
    "RobertaForMultipleChoice",
]
