"""ALBERT (Lan et al. 2020): BERT's post-LN encoder with a factorized embedding (V x E, projected
to H), cross-layer parameter sharing, and sentence-order prediction (SOP) instead of NSP.

What is ALBERT's own is small, and lives in the backbone's hooks:

- ``build_embeddings``: the shared TransformerEmbeddings with its E -> H projection always
  present (transformers' ``encoder.embedding_hidden_mapping_in``, mapped in conversion.py);
- ``build_layers``: the shared LayerStack with ALBERT's sharing; for "all" sharing a schedule
  saying which stored layer each depth applies (``num_hidden_groups`` x ``inner_group_num``
  layers, see AlbertConfig). A shared layer is one module applied repeatedly, so its tensors
  exist once: in the state dict, in safetensors, and for the optimizer.

Heads: the shared task mixins (the MLM head's transform projects H -> E and its decoder is tied
to the E-wide word table) plus ForPreTraining = MLM + SOP, both losses reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch
from transformers.cache_utils import Cache
from transformers.utils import ModelOutput

from ...modules.backbone import TransformerBackbone
from ...modules.embeddings import TransformerEmbeddings
from ...modules.encoder import LayerSpec, LayerStack
from ...modules.heads import PooledClassifier
from ...modules.task_models import (
    EncoderForMaskedLM,
    EncoderForMaskedLMAndSentenceRelation,
    EncoderForMultipleChoice,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
    classifier_dropout,
)
from ..modeling_base import VariantPreTrainedModel
from .configuration_albert import AlbertConfig


class AlbertPreTrainedModel(VariantPreTrainedModel):
    config_class = AlbertConfig
    base_model_prefix = "albert"


class AlbertModel(TransformerBackbone, AlbertPreTrainedModel):
    """The bare encoder with the tanh pooler over [CLS]. last_hidden_state (B, T, H)."""

    def build_embeddings(self, config: AlbertConfig) -> TransformerEmbeddings:
        return TransformerEmbeddings(**TransformerEmbeddings.config_kwargs(config), project=True)

    def build_layers(self, config: AlbertConfig) -> LayerStack:
        return LayerStack(
            LayerSpec.from_config(config), config.depth, sharing=config.layer_sharing, schedule=config.layer_schedule()
        )


@dataclass
class AlbertForPreTrainingOutput(ModelOutput):
    """What :class:`AlbertForPreTraining` returns (transformers' field names, plus the two losses).

    Attributes:
        loss: () mlm_loss + sop_loss, when both label sets are given.
        mlm_loss: () mean cross-entropy over the masked positions (with ``labels``).
        sop_loss: () mean cross-entropy of sentence order prediction (with ``sentence_order_label``).
        prediction_logits: (B, T, V), or (num_masked, V) with ``config.sparse_prediction``.
        sop_logits: (B, 2) 0 = segments in order, 1 = swapped.
        hidden_states: (layers + 1) x (B, T, H), when ``output_hidden_states``.
        attentions: layers x (B, heads, T, T), when ``output_attentions``.
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    sop_loss: torch.FloatTensor | None = None
    prediction_logits: torch.FloatTensor | None = None
    sop_logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class AlbertForPreTraining(EncoderForMaskedLMAndSentenceRelation, AlbertPreTrainedModel):
    """MLM + sentence-order prediction, the paper's objective (loss = sum of the two means)."""

    backbone_class = AlbertModel

    def __init__(self, config: AlbertConfig) -> None:
        super().__init__(config)
        # Dropout + linear on the pooled [CLS], as transformers' AlbertSOPHead.
        self.sop_classifier = PooledClassifier(config.hidden_size, 2, classifier_dropout(config))
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        sentence_order_label: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> AlbertForPreTrainingOutput | tuple:
        """labels: (B, T) MLM targets (-100 elsewhere); sentence_order_label: (B,) 0 = A then B, 1 = swapped;
        past_key_values: a key/value prefix for the encoder (peft's prefix tuning)."""
        mlm = self._masked_lm(
            labels,
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            past_key_values=past_key_values,
        )
        # The SOP head is a PooledClassifier(summary, pooled): it reads the pooled summary only.
        sop_logits, sop_loss, loss = self._sentence_relation(
            partial(self.sop_classifier, None), mlm, sentence_order_label, "sentence_order_label"
        )
        return self._finish(
            AlbertForPreTrainingOutput,
            return_dict,
            loss=loss,
            mlm_loss=mlm.loss,
            sop_loss=sop_loss,
            prediction_logits=mlm.logits,
            sop_logits=sop_logits,
            hidden_states=mlm.encoded.hidden_states,
            attentions=mlm.encoded.attentions,
        )


class AlbertForMaskedLM(EncoderForMaskedLM, AlbertPreTrainedModel):
    """MLM alone: transform H -> E, decoder tied to the E-wide word embeddings."""

    backbone_class = AlbertModel


class AlbertForSequenceClassification(EncoderForSequenceClassification, AlbertPreTrainedModel):
    backbone_class = AlbertModel


class AlbertForTokenClassification(EncoderForTokenClassification, AlbertPreTrainedModel):
    backbone_class = AlbertModel


class AlbertForQuestionAnswering(EncoderForQuestionAnswering, AlbertPreTrainedModel):
    backbone_class = AlbertModel


class AlbertForMultipleChoice(EncoderForMultipleChoice, AlbertPreTrainedModel):
    backbone_class = AlbertModel


__all__ = [
    "AlbertPreTrainedModel",
    "AlbertModel",
    "AlbertForPreTrainingOutput",
    "AlbertForPreTraining",
    "AlbertForMaskedLM",
    "AlbertForSequenceClassification",
    "AlbertForTokenClassification",
    "AlbertForQuestionAnswering",
    "AlbertForMultipleChoice",
]
