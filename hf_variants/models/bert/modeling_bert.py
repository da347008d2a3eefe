"""BERT (Devlin et al. 2019): a post-LN Transformer encoder pretrained with masked language
modelling + next sentence prediction.

Everything but the pretraining heads comes from ``hf_variants.modules``: the backbone is
``TransformerBackbone`` and the fine-tuning heads are the shared task mixins.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.cache_utils import Cache
from transformers.modeling_outputs import NextSentencePredictorOutput
from transformers.utils import ModelOutput

from ...modules.backbone import TransformerBackbone
from ..modeling_base import VariantPreTrainedModel
from ...modules.heads import sentence_relation_loss
from ...modules.task_models import (
    EncoderForMaskedLM,
    EncoderForMaskedLMAndSentenceRelation,
    EncoderForMultipleChoice,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
    EncoderHeadModel,
)
from .configuration_bert import BertConfig


class BertPreTrainedModel(VariantPreTrainedModel):
    config_class = BertConfig
    base_model_prefix = "bert"


class BertModel(TransformerBackbone, BertPreTrainedModel):
    """The bare encoder with BERT's pooler."""


@dataclass
class BertForPreTrainingOutput(ModelOutput):
    """What :class:`BertForPreTraining` returns (transformers' field names, plus the two losses).

    Attributes:
        loss: () mlm_loss + nsp_loss, when both label sets are given.
        mlm_loss: () mean cross-entropy over the masked positions (with ``labels``).
        nsp_loss: () mean cross-entropy of next sentence prediction (with ``next_sentence_label``).
        prediction_logits: (B, T, V), or (num_masked, V) with ``config.sparse_prediction``.
        seq_relationship_logits: (B, 2) 0 = segment B follows A, 1 = B is random.
        hidden_states: (layers + 1) x (B, T, H), when ``output_hidden_states``.
        attentions: layers x (B, heads, T, T), when ``output_attentions``.
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    nsp_loss: torch.FloatTensor | None = None
    prediction_logits: torch.FloatTensor | None = None
    seq_relationship_logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class BertForPreTraining(EncoderForMaskedLMAndSentenceRelation, BertPreTrainedModel):
    """MLM + NSP, the paper's pretraining objective (loss = sum of the two means)."""

    backbone_class = BertModel

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
        """labels: (B, T) MLM targets (-100 elsewhere); next_sentence_label: (B,) 0 = next, 1 = random;
        past_key_values: a key/value prefix for the encoder (peft's prefix tuning)."""
        mlm = self._masked_lm(
            labels, input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
            position_ids=position_ids, inputs_embeds=inputs_embeds, output_attentions=output_attentions,
            output_hidden_states=output_hidden_states, past_key_values=past_key_values,
        )
        nsp_logits, nsp_loss, loss = self._sentence_relation(self.nsp_head, mlm, next_sentence_label, "next_sentence_label")
        return self._finish(
            BertForPreTrainingOutput, return_dict, loss=loss, mlm_loss=mlm.loss, nsp_loss=nsp_loss,
            prediction_logits=mlm.logits, seq_relationship_logits=nsp_logits,
            hidden_states=mlm.encoded.hidden_states, attentions=mlm.encoded.attentions,
        )


class BertForNextSentencePrediction(EncoderHeadModel, BertPreTrainedModel):
    """The NSP head alone: does segment B follow segment A? labels: (B,) 0 = B follows A, 1 = B is
    random. Logits (B, 2)."""

    backbone_class = BertModel
    uses_pooler = True
    reads_summary_only = True
    output_class = NextSentencePredictorOutput

    def build_head(self, config: BertConfig) -> None:
        self.nsp_head = nn.Linear(config.hidden_size, 2)

    def head_logits(self, out, attention_mask: torch.Tensor | None, read=None) -> torch.Tensor:
        return self.nsp_head(out.pooler_output)

    def head_loss(self, logits: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return sentence_relation_loss(logits, labels, "labels")


class BertForMaskedLM(EncoderForMaskedLM, BertPreTrainedModel):
    backbone_class = BertModel


class BertForSequenceClassification(EncoderForSequenceClassification, BertPreTrainedModel):
    backbone_class = BertModel


class BertForTokenClassification(EncoderForTokenClassification, BertPreTrainedModel):
    backbone_class = BertModel


class BertForQuestionAnswering(EncoderForQuestionAnswering, BertPreTrainedModel):
    backbone_class = BertModel


class BertForMultipleChoice(EncoderForMultipleChoice, BertPreTrainedModel):
    backbone_class = BertModel


__all__ = [
    "BertPreTrainedModel",
    "BertModel",
    "BertForPreTraining",
    "BertForMaskedLM",
    "BertForNextSentencePrediction",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "BertForMultipleChoice",
]
