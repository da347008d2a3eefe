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

from functools import partial

import torch

from ...modules.backbone import TransformerBackbone
from ..modeling_base import VariantPreTrainedModel
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
    pretraining_output,
)
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


AlbertForPreTrainingOutput = pretraining_output(
    "AlbertForPreTrainingOutput", "sop", "sop_logits", __name__,
    """loss = mlm_loss + sop_loss (when both label sets are given); prediction_logits (B, T, V)
    (or (num_masked, V) with sparse prediction); sop_logits (B, 2): 0 = in order, 1 = swapped.""",
)


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
        **kwargs,
    ) -> AlbertForPreTrainingOutput | tuple:
        """labels: (B, T) MLM targets (-100 elsewhere); sentence_order_label: (B,) 0 = A then B, 1 = swapped."""
        return self._masked_lm_and_relation(
            AlbertForPreTrainingOutput, return_dict, partial(self.sop_classifier, None), sentence_order_label,
            "sentence_order_label", labels, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions, output_hidden_states,
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
