"""RoBERTa (Liu et al. 2019): BERT's encoder, pretrained better (dynamic masking, no NSP, full-length
inputs, large batches, byte-level BPE). XLM-RoBERTa (Conneau et al. 2020) is the same network with
a larger vocabulary, so these classes serve both.

RoBERTa = BERT + only what differs, as transformers' ``modular_roberta`` builds it: the layers,
the stack, the attention backends and the padding-free fast path are BERT's
(:mod:`hf_variants.models.bert.modeling_bert`). What is RoBERTa's own, top to bottom:

- positions are offset by the padding index (fairseq's ``make_positions``): real tokens count
  from ``pad_token_id + 1``, padding tokens sit at ``pad_token_id`` wherever they are (left padding
  included), so 512 tokens use 514 position rows (:class:`RobertaEmbeddings`);
- the encoder lives under ``roberta`` (transformers' name), so every head is written out here
  with BERT's blocks and BERT's losses, as transformers' RoBERTa file does;
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
from torch import nn
from transformers.cache_utils import Cache
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from ...modules.dropout import Dropout
from ...modules.fast_path import HeadReads, fast_path_enabled
from ...modules.heads import (
    IGNORE_INDEX,
    MaskedLMHead,
    PooledClassifier,
    SummaryClassifier,
    sequence_classification_loss,
    span_extraction_loss,
    summarize,
    token_classification_loss,
)
from ...modules.masks import targets_at_padding
from ...modules.task_models import (
    choice_count,
    classifier_dropout,
    flatten_choices,
    multiple_choice_loss,
    refuse_next_sentence_label,
)
from ..bert.modeling_bert import BertEmbeddings, BertMaskedLMHeadModel, BertModel, BertPreTrainedModel, _return
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
class RobertaForMaskedLM(RobertaPreTrainedModel):
    """Masked language modelling with BERT's tied MLM head (transform + decoder tied to the word
    embeddings, own bias) and BERT's sparse prediction (``config.sparse_prediction``: logits
    (num_masked, V) at the masked positions only)."""

    config_class = RobertaConfig
    _tied_weights_keys = {"mlm_head.decoder.weight": "roberta.embeddings.word_embeddings.weight"}
    uses_pooler = False  # the positions the MLM reads never include a pooled summary
    # BERT's: which positions the last layer computes, and the loss at them (they read only
    # self.config, self.mlm_head and uses_pooler).
    _only_labelled_positions_are_read = BertMaskedLMHeadModel._only_labelled_positions_are_read
    _mlm_reads = BertMaskedLMHeadModel._mlm_reads
    _mlm_loss = BertMaskedLMHeadModel._mlm_loss
    get_output_embeddings = BertMaskedLMHeadModel.get_output_embeddings
    set_output_embeddings = BertMaskedLMHeadModel.set_output_embeddings

    def __init__(self, config: RobertaConfig) -> None:
        super().__init__(config)
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.mlm_head = MaskedLMHead(
            config.hidden_size, config.vocab_size, config.hidden_act, config.layer_norm_eps, config.embedding_size
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
    ) -> MaskedLMOutput | tuple:
        """labels: (B, T) target ids, -100 where nothing is predicted. Logits (B, T, V)."""
        reads = self._mlm_reads(
            labels, input_ids, inputs_embeds, attention_mask, output_attentions, output_hidden_states
        )
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
        """As :meth:`RobertaForMaskedLM.forward`."""
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
    """dropout -> dense -> tanh -> dropout -> out_proj on ``<s>`` (no pooler). labels: (B,) class
    ids, (B,) floats for regression (num_labels == 1), or (B, num_labels) multi-hot
    (problem_type). Logits (B, num_labels)."""

    config_class = RobertaConfig
    reads_summary_only = True  # the head reads the summary token alone

    def __init__(self, config: RobertaConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.classifier = SummaryClassifier(config.hidden_size, config.num_labels, classifier_dropout(config))
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


class RobertaForTokenClassification(RobertaPreTrainedModel):
    """Per-token labels (NER, POS): dropout + linear on every position. labels: (B, T) class ids,
    -100 on ignored tokens. Logits (B, T, num_labels)."""

    config_class = RobertaConfig

    def __init__(self, config: RobertaConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.roberta = RobertaModel(config, add_pooling_layer=False)
        self.dropout = Dropout(classifier_dropout(config))
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
        fast = reference is not None and fast_path_enabled(self.config, reference.device)
        reads = HeadReads(padding=fast and targets_at_padding(labels, attention_mask, IGNORE_INDEX))
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


class RobertaForQuestionAnswering(RobertaPreTrainedModel):
    """Extractive QA: start/end logits (B, T) each; the span softmax runs over all T positions,
    padding included, as transformers' (so the fast path runs it padded)."""

    config_class = RobertaConfig

    def __init__(self, config: RobertaConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.roberta = RobertaModel(config, add_pooling_layer=False)
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


class RobertaForMultipleChoice(RobertaPreTrainedModel):
    """One score per choice from the pooled ``<s>`` (dropout -> linear), as transformers' RoBERTa.
    Inputs (B, C, T); logits (B, C); labels (B,)."""

    config_class = RobertaConfig
    reads_summary_only = True

    def __init__(self, config: RobertaConfig) -> None:
        super().__init__(config)
        self.roberta = RobertaModel(config)
        self.classifier = PooledClassifier(config.hidden_size, 1, classifier_dropout(config))
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

        outputs = self.roberta(
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
