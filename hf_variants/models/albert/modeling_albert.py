"""ALBERT (Lan et al. 2020): BERT's post-LN encoder with a factorized embedding, cross-layer
parameter sharing, and sentence-order prediction (SOP) instead of NSP.

ALBERT = BERT + what ALBERT changes, as transformers' ``modular_*`` files build one model from
another: the self-attention, FFN, layer, input checks, attention backends and the padding-free
fast path are BERT's (:mod:`hf_variants.models.bert.modeling_bert`). What is ALBERT's own, in the
order data flows:

- :class:`AlbertEmbeddings`: the **factorized embedding**. Tokens are looked up in a V x E table
  (E = ``embedding_size``, 128 in every released size), normalised at width E, then projected
  E -> H by one linear map (transformers' ``encoder.embedding_hidden_mapping_in``): V*E + E*H
  parameters instead of V*H. The projection exists even when E = H, as in transformers.
- :class:`AlbertEncoder`: **cross-layer parameter sharing**. One layer (or a few groups of
  layers) serves every depth: ``layer_sharing="all"`` stores ``num_hidden_groups *
  inner_group_num`` layers and applies them on transformers' schedule
  (:meth:`AlbertConfig.layer_schedule`); "attention" / "ffn" (the paper's Table 4 ablation) share
  that sub-block of layer 0 across the depths (BERT's ``BertEncoder`` does this part). A shared
  tensor exists once: in the state dict, in safetensors and for the optimizer.
- :class:`AlbertForPreTraining`: MLM (transform H -> E, decoder tied to the E-wide word table) +
  the **SOP head** on the pooled [CLS] (dropout + linear, two classes: segments in order or
  swapped); loss = the sum of the two means.

The other heads (masked LM, sequence and token classification, QA, multiple choice) are BERT's
classes on ALBERT's encoder: :meth:`AlbertPreTrainedModel.build_encoder` puts it under ``albert``
(transformers' attribute name, which the state-dict keys carry; see ``weights.py``), as RoBERTa's
heads are BERT's under ``roberta``.

Speed: :class:`AlbertModel` is a :class:`BertModel`, so with ``config.padding_free`` (default) on
CPU inputs it hands its forward to BERT's strategy (:mod:`hf_variants.modules.fast_path`), which
calls ``self.embeddings`` (the projection included) and ``encoder.layer_at(depth)`` (the schedule
included) on the packed tokens; ``config.padding_free = False`` runs the plain path below.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.cache_utils import Cache
from transformers.utils import ModelOutput

from ...modules.heads import PooledClassifier, classifier_dropout, sentence_relation_loss
from ...modules.norms import build_norm
from ..bert.modeling_bert import (
    BertEmbeddings,
    BertEncoder,
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertLayer,
    BertMaskedLMHeadModel,
    BertModel,
    BertPreTrainedModel,
    _return,
)
from .configuration_albert import AlbertConfig


# ----------------------------------------------------------------------------- embeddings
class AlbertEmbeddings(BertEmbeddings):
    """The factorized embedding: BERT's word + position + segment sum, LayerNorm and dropout at
    width E, then ``projection`` E -> H, always present (BERT adds it only when E != H).
    ids (B, T) or packed (N,) -> (B, T, H) or (N, H)."""

    def __init__(self, config: AlbertConfig) -> None:
        super().__init__(config)
        if self.projection is None:  # E == H: transformers' ALBERT still has the mapping
            self.projection = nn.Linear(config.embedding_size or config.hidden_size, config.hidden_size)


# ----------------------------------------------------------------------------- stack
class AlbertEncoder(BertEncoder):
    """BERT's stack with ALBERT's sharing: ``depth`` applications of BertLayers.

    ``layer_sharing="all"``: ``num_hidden_groups`` groups of ``inner_group_num`` distinct layers
    are stored (group g's inner layer j at index g * inner_group_num + j); each of the
    ``num_hidden_layers`` applications runs a whole group, so ``depth = num_hidden_layers *
    inner_group_num`` and ``schedule[depth]`` names the stored layer used there (one layer at every
    depth for the released models). "none" / "attention" / "ffn": BERT's per-layer stack, with
    layer 0's attention or FFN handed to every depth (:meth:`BertEncoder.shared_blocks`).

    The forward is BERT's (it asks :meth:`layer_at` for each depth); so is the fast path's loop.
    """

    def __init__(self, config: AlbertConfig) -> None:
        if config.layer_sharing != "all":
            super().__init__(config)  # BERT's stack: "none", or one sub-block shared by every depth
            return
        nn.Module.__init__(self)  # BERT's attributes, ALBERT's layers
        self.sharing = "all"
        self.schedule = tuple(config.layer_schedule())  # the stored layer applied at each depth
        self.num_layers = len(self.schedule)  # config.depth
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_groups * config.inner_group_num))
        # ALBERT is post-LN; a pre-LN ablation closes the stack with one norm, as BERT's.
        self.final_layer_norm = (
            build_norm(config.norm_type, config.hidden_size, config.layer_norm_eps) if config.pre_layer_norm else None
        )

    def layer_at(self, depth: int) -> BertLayer:
        """The module applied at ``depth`` (0 .. num_layers - 1)."""
        return self.layers[self.schedule[depth]] if self.sharing == "all" else self.layers[depth]


# ----------------------------------------------------------------------------- model
class AlbertPreTrainedModel(BertPreTrainedModel):
    """BERT's, with ALBERT's config and transformers' ``albert`` prefix. Every ALBERT class names
    ``config_class`` itself: transformers writes the config class into each subclass's own
    namespace, so a BERT class earlier in the MRO would otherwise win."""

    config_class = AlbertConfig
    base_model_prefix = "albert"

    def build_encoder(self, config: AlbertConfig, add_pooling_layer: bool = True) -> None:
        """BERT's heads run ``self.albert`` (an :class:`AlbertModel`) in place of ``self.bert``."""
        self.albert = AlbertModel(config, add_pooling_layer=add_pooling_layer)


class AlbertModel(BertModel, AlbertPreTrainedModel):
    """BERT's encoder with the factorized embedding and the shared stack: embeddings (B, T) -> (B, T, H),
    ``config.depth`` layer applications, tanh pooler over [CLS]. last_hidden_state (B, T, H)."""

    config_class = AlbertConfig
    embeddings_class = AlbertEmbeddings
    encoder_class = AlbertEncoder


# ----------------------------------------------------------------------------- pretraining: MLM + SOP
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


class AlbertForPreTraining(BertMaskedLMHeadModel, AlbertPreTrainedModel):
    """MLM + sentence-order prediction, the paper's objective (loss = the sum of the two means).
    SOP replaces BERT's NSP: segment B is always A's true continuation, swapped half of the time,
    so the head learns discourse coherence rather than topic.

    The MLM part is BERT's (:class:`BertMaskedLMHeadModel`: ``self.albert``, the tied MLM head, whose
    transform projects H -> E and whose decoder is tied to the E-wide word table, and sparse
    prediction); what ALBERT changes is the SOP head and its label."""

    config_class = AlbertConfig
    _tied_weights_keys = {"mlm_head.decoder.weight": "albert.embeddings.word_embeddings.weight"}
    uses_pooler = True  # SOP reads the pooled [CLS]

    def __init__(self, config: AlbertConfig) -> None:
        super().__init__(config)  # self.albert (with the pooler) and the MLM head
        # Dropout + linear on the pooled [CLS], as transformers' AlbertSOPHead (BERT's NSP head: linear).
        self.sop_classifier = PooledClassifier(config.hidden_size, 2, classifier_dropout(config), config.padding_free)
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
        reads = self._mlm_reads(
            labels, input_ids, inputs_embeds, attention_mask, output_attentions, output_hidden_states
        )
        outputs = self.base_model(
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
        mlm_loss, prediction_logits = self._mlm_loss(outputs.last_hidden_state, labels, reads)
        sop_logits = self.sop_classifier(None, outputs.pooler_output)  # (B, 2)
        sop_loss = None
        if sentence_order_label is not None:
            sop_loss = sentence_relation_loss(sop_logits, sentence_order_label, "sentence_order_label")
        loss = mlm_loss + sop_loss if mlm_loss is not None and sop_loss is not None else None
        return _return(
            AlbertForPreTrainingOutput(
                loss=loss,
                mlm_loss=mlm_loss,
                sop_loss=sop_loss,
                prediction_logits=prediction_logits,
                sop_logits=sop_logits,
                hidden_states=outputs.hidden_states,
                attentions=outputs.attentions,
            ),
            return_dict,
        )


# ----------------------------------------------------------------------------- the other heads: BERT's
class AlbertForMaskedLM(BertForMaskedLM, AlbertPreTrainedModel):
    """BERT's masked LM on ``self.albert``: transform H -> E, decoder tied to the E-wide word
    embeddings. With ``config.sparse_prediction`` and labels, logits are (num_masked, V) at the
    masked positions."""

    config_class = AlbertConfig
    _tied_weights_keys = {"mlm_head.decoder.weight": "albert.embeddings.word_embeddings.weight"}


class AlbertForSequenceClassification(BertForSequenceClassification, AlbertPreTrainedModel):
    """BERT's classifier on ``self.albert``: dropout + linear on the pooled [CLS]."""

    config_class = AlbertConfig


class AlbertForTokenClassification(BertForTokenClassification, AlbertPreTrainedModel):
    """BERT's per-token classifier (dropout + linear on every position) on ``self.albert``."""

    config_class = AlbertConfig


class AlbertForQuestionAnswering(BertForQuestionAnswering, AlbertPreTrainedModel):
    """BERT's extractive QA head on ``self.albert``: start/end logits (B, T) each; the span softmax
    runs over all T positions, padding included, as transformers'."""

    config_class = AlbertConfig


class AlbertForMultipleChoice(BertForMultipleChoice, AlbertPreTrainedModel):
    """BERT's multiple-choice head on ``self.albert``: one score per choice from the pooled [CLS].
    Inputs (B, C, T); logits (B, C); labels (B,)."""

    config_class = AlbertConfig


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
