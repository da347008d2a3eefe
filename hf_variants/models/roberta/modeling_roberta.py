"""RoBERTa (Liu et al. 2019): BERT's encoder, pretrained better (dynamic masking, no NSP, full-length
inputs, large batches, byte-level BPE). XLM-RoBERTa (Conneau et al. 2020) is the same network with
a larger vocabulary, so these classes serve both.

What is RoBERTa's own, on top of ``hf_variants.modules``:

- positions are offset by the padding index (fairseq's ``make_positions``): real tokens count
  from ``pad_token_id + 1``, padding tokens sit at ``pad_token_id`` wherever they are (left padding
  included), so 512 tokens use 514 position rows (:class:`RobertaEmbeddings`);
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

from ...modules.backbone import TransformerBackbone
from ..modeling_base import VariantPreTrainedModel
from ...modules.embeddings import TransformerEmbeddings
from ...modules.heads import SummaryClassifier
from ...modules.task_models import (
    EncoderForMaskedLM,
    EncoderForMultipleChoice,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
)
from .configuration_roberta import RobertaConfig


class RobertaEmbeddings(TransformerEmbeddings):
    """BERT's embeddings with positions offset by the padding index ``p``.

    From ``input_ids`` (B, T): a padding token gets position ``p``, the k-th real token of its row
    (k = 1, 2, ...) position ``p + k``, counting only real tokens, so left padding shifts nothing.
    From ``inputs_embeds`` nothing tells padding apart: positions are ``p + 1 .. p + T`` for
    every row (transformers' ``create_position_ids_from_inputs_embeds``).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.padding_idx = kwargs["pad_token_id"]
        # The padding position's row starts at zero and gets no gradient, as in fairseq/transformers.
        self.position_embeddings.padding_idx = self.padding_idx

    @property
    def max_sequence_length(self) -> int:
        return self.max_position_embeddings - self.padding_idx - 1

    def default_position_ids(
        self, input_ids: torch.Tensor | None, attention_mask: torch.Tensor | None, batch: int, length: int, device
    ) -> torch.Tensor:
        """(B, T) positions as above. Padding is recognised by the padding id, not by
        ``attention_mask``, exactly as transformers' ``create_position_ids_from_input_ids``."""
        if input_ids is None:
            first = self.padding_idx + 1
            return torch.arange(first, first + length, device=device).expand(batch, length)
        real = input_ids.ne(self.padding_idx).long()
        return real.cumsum(dim=1) * real + self.padding_idx

    def check_inputs(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        sequence_length: int,
    ) -> None:
        if position_ids is None and sequence_length > self.max_sequence_length:
            raise ValueError(
                f"sequence length {sequence_length} exceeds the {self.max_sequence_length} tokens RoBERTa's positions "
                f"cover (max_position_embeddings {self.max_position_embeddings} minus pad_token_id + 1, where real "
                "tokens start); truncate the input"
            )
        super().check_inputs(input_ids, token_type_ids, position_ids, sequence_length)


class RobertaPreTrainedModel(VariantPreTrainedModel):
    config_class = RobertaConfig
    base_model_prefix = "roberta"


class RobertaModel(TransformerBackbone, RobertaPreTrainedModel):
    """The bare encoder. ``add_pooling_layer`` (default True, as transformers') adds BERT's tanh
    pooler over ``<s>``, which only :class:`RobertaForMultipleChoice` reads."""

    def build_embeddings(self, config: RobertaConfig) -> RobertaEmbeddings:
        return RobertaEmbeddings(**TransformerEmbeddings.config_kwargs(config))


class RobertaForMaskedLM(EncoderForMaskedLM, RobertaPreTrainedModel):
    backbone_class = RobertaModel


class RobertaForPreTraining(RobertaForMaskedLM):
    """The paper's pretraining objective: masked language modelling alone (no NSP), served by
    ``AutoModelForPreTraining`` (transformers maps RoBERTa's to its ``RobertaForMaskedLM`` too).

    Dynamic masking is a property of the data, not of the model: feed it the MLM collator of
    ``hf_variants.objectives``, which draws a new mask every time it builds a batch, over
    FULL-SENTENCES / DOC-SENTENCES packed inputs.
    """

    pretrained_without_nsp = "RoBERTa"


class RobertaForSequenceClassification(EncoderForSequenceClassification, RobertaPreTrainedModel):
    """dropout -> dense -> tanh -> dropout -> out_proj on ``<s>`` (no pooler)."""

    backbone_class = RobertaModel
    uses_pooler = False
    classifier_class = SummaryClassifier


class RobertaForTokenClassification(EncoderForTokenClassification, RobertaPreTrainedModel):
    backbone_class = RobertaModel


class RobertaForQuestionAnswering(EncoderForQuestionAnswering, RobertaPreTrainedModel):
    backbone_class = RobertaModel


class RobertaForMultipleChoice(EncoderForMultipleChoice, RobertaPreTrainedModel):
    """One score per choice from the pooled ``<s>`` (dropout -> linear), as transformers' RoBERTa."""

    backbone_class = RobertaModel


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
