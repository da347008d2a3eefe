"""SpanBERT (Joshi et al. 2020): BERT's encoder pretrained on single segments with span masking,
MLM and the Span Boundary Objective (SBO), without NSP.

SpanBERT = BERT + the SBO. The encoder and every fine-tuning head are BERT's, from
:mod:`hf_variants.models.bert.modeling_bert` (as transformers' ``modular_roberta`` builds RoBERTa
from BERT's classes); only the config class differs. What this file adds is SpanBERT's own, in
the order data flows: the SBO targets read from the span-masking collator's columns
(:class:`SpanBoundaryTargets`), the head (:class:`SpanBoundaryHead`), its loss
(:func:`span_boundary_loss`) and :class:`SpanBertForPreTraining` (MLM + SBO, no NSP).

The backbone lives under ``bert`` (``base_model_prefix``), as in the released SpanBERT
checkpoints, so BERT-format weights map onto it with BERT's key map (see ``weights.py``):
``SpanBertForQuestionAnswering.from_pretrained("SpanBERT/spanbert-base-cased")`` loads them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers.cache_utils import Cache
from transformers.utils import ModelOutput

from ...modules.heads import (
    IGNORE_INDEX,
    HeadReads,
    PredictionTransform,
    check_class_labels,
    check_label_shape,
    make_vocabulary_decoder,
    refuse_next_sentence_label,
)
from ...modules.inputs import check_index_range
from ...modules.masks import selected_positions
from ..bert.modeling_bert import (
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertMaskedLMHeadModel,
    BertModel,
    BertPreTrainedModel,
    _return,
)
from .configuration_spanbert import SpanBertConfig

# The per-token columns the span-masking collator produces for the SBO, in this order.
SBO_INPUT_NAMES = ("sbo_left", "sbo_right", "sbo_relative", "sbo_labels")


def _weights():
    """SpanBERT's key map module (weights.py, which imports no modeling code), imported on first
    use by absolute name: the self-contained remote-code export of this file does not carry it."""
    return importlib.import_module("hf_variants.models.spanbert.weights")


class SpanBertPreTrainedModel(BertPreTrainedModel):
    """BERT's, with SpanBERT's config and its two BERT-checkpoint helpers. Every SpanBERT class
    names ``config_class`` itself: transformers writes the config class into each subclass's own
    namespace, so BERT's class (earlier in the MRO) would otherwise win."""

    config_class = SpanBertConfig
    base_model_prefix = "bert"

    @classmethod
    def from_bert_checkpoint(cls, source, output_loading_info: bool = False, **config_overrides):
        """Load a BERT-format checkpoint (e.g. a released SpanBERT: transformers ``BertModel`` keys,
        no MLM/SBO weights) into this SpanBERT class: ``from_pretrained`` (which reads such
        checkpoints directly) plus a transformers model instance as source and the report below.

        Args:
            source: a folder with ``config.json`` (model_type "bert") and ``model.safetensors`` (or
                ``pytorch_model.bin``), a Hub id of such a repository (e.g. "SpanBERT/spanbert-base-cased"),
                or a transformers BERT model instance.
            output_loading_info: also return ``{"initialised": [...], "unused": [...]}``: our
                weights the checkpoint did not provide (freshly initialised heads) and checkpoint
                weights this class has no place for (e.g. the pooler for SpanBertForPreTraining).
            config_overrides: SpanBertConfig fields to set (num_labels, sbo_weight, ...).
        """
        return _weights().load_bert_checkpoint(cls, source, output_loading_info=output_loading_info, **config_overrides)

    def save_bert_checkpoint(self, save_directory) -> None:
        """Export the encoder as a plain transformers ``BertModel`` folder (config.json model_type
        "bert" + model.safetensors) that loads without hf-variants. Heads are not exported."""
        _weights().export_bert_encoder(self).save_pretrained(save_directory)


class SpanBertModel(BertModel, SpanBertPreTrainedModel):
    """The bare SpanBERT encoder: BERT's (embeddings -> encoder -> tanh pooler over [CLS]),
    unchanged; only the config class differs."""

    config_class = SpanBertConfig


class SpanBoundaryHead(nn.Module):
    """Span Boundary Objective: predict the token at relative position i of a masked span (s..e)
    from the encodings of the span's outside boundary tokens and a relative-position embedding:

        y_i = LN(GeLU(W2 · LN(GeLU(W1 · [h_{s-1}; h_{e+1}; p_i]))))   logits = E · y_i + b

    The decoder weight E is tied to the word embeddings; the bias b is the head's own.

    Args:
        hidden_size: H.
        vocab_size: V.
        max_span_length: number of relative positions (rows of ``position_embeddings``).
        position_embedding_size: width of p_i (200 in the paper's code).
        embedding_size: width of the tied word embeddings (H unless factorized).
        cpu_kernel: the speed plug-in's decoder (``TiedDecoder``; ``config.padding_free``), else ``nn.Linear``.
    """

    def __init__(
        self,
        hidden_size: int,
        vocab_size: int,
        max_span_length: int,
        position_embedding_size: int,
        activation: str,
        layer_norm_eps: float,
        embedding_size: int | None = None,
        cpu_kernel: bool = True,
    ) -> None:
        super().__init__()
        self.position_embeddings = nn.Embedding(max_span_length, position_embedding_size)
        self.layer1 = PredictionTransform(
            2 * hidden_size + position_embedding_size, hidden_size, activation, layer_norm_eps
        )
        self.layer2 = PredictionTransform(hidden_size, embedding_size or hidden_size, activation, layer_norm_eps)
        self.decoder = make_vocabulary_decoder(embedding_size or hidden_size, vocab_size, cpu_kernel=cpu_kernel)

    def forward(self, left_hidden: torch.Tensor, right_hidden: torch.Tensor, relative: torch.Tensor) -> torch.Tensor:
        """left_hidden, right_hidden: (N, H) encodings of h_{s-1}, h_{e+1}; relative: (N,) offsets
        i - s. Returns (N, V) logits."""
        features = torch.cat([left_hidden, right_hidden, self.position_embeddings(relative)], dim=-1)
        return self.decoder(self.layer2(self.layer1(features)))


@dataclass
class SpanBoundaryTargets:
    """The SBO targets of a batch, flattened to the N predicted tokens (all (N,) long tensors)."""

    batch_index: torch.Tensor
    left: torch.Tensor
    right: torch.Tensor
    relative: torch.Tensor
    labels: torch.Tensor

    @classmethod
    def from_collator_columns(
        cls,
        shape: tuple[int, int],
        vocab_size: int,
        max_span_length: int,
        sbo_left: torch.Tensor | None,
        sbo_right: torch.Tensor | None,
        sbo_relative: torch.Tensor | None,
        sbo_labels: torch.Tensor | None,
    ) -> "SpanBoundaryTargets | None":
        """Validate the collator's (B, T) columns and keep the positions where ``sbo_labels != -100``.

        Returns None when no SBO column was given. Raises ValueError naming the column when one
        is missing, has the wrong shape, or holds an index outside its range: boundaries outside
        [0, T), a boundary not strictly before/after its token, an offset >= max_span_length, a
        label outside the vocabulary.
        """
        columns = dict(zip(SBO_INPUT_NAMES, (sbo_left, sbo_right, sbo_relative, sbo_labels)))
        given = [name for name, value in columns.items() if value is not None]
        if not given:
            return None
        if len(given) < len(columns):
            missing = [name for name in columns if name not in given]
            raise ValueError(f"the span boundary objective needs all of {SBO_INPUT_NAMES}; missing {missing}")
        for name, value in columns.items():
            check_label_shape(value, shape, name)
        check_class_labels(sbo_labels, vocab_size, "sbo_labels")
        selected = sbo_labels != IGNORE_INDEX
        batch_index, position = selected.nonzero(as_tuple=True)
        left, right, relative = sbo_left[selected], sbo_right[selected], sbo_relative[selected]
        length = shape[1]
        check_index_range(left, length, "sbo_left", "sequence_length")
        check_index_range(right, length, "sbo_right", "sequence_length")
        check_index_range(relative, max_span_length, "sbo_relative", "max_span_length")
        # The boundaries are outside the span: h_{s-1} strictly before the token, h_{e+1} strictly after.
        for name, boundary, wrong_side, side in (
            ("sbo_left", left, left >= position, "before"),
            ("sbo_right", right, right <= position, "after"),
        ):
            if bool(wrong_side.any()):
                index = int(wrong_side.nonzero()[0])
                raise ValueError(
                    f"{name} is {int(boundary[index])} for the SBO target at (batch {int(batch_index[index])}, "
                    f"position {int(position[index])}); the boundary must lie {side} the masked token"
                )
        return cls(batch_index, left, right, relative, sbo_labels[selected])

    def boundaries(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(row indices, positions) of every boundary token the SBO reads."""
        return torch.cat([self.batch_index, self.batch_index]), torch.cat([self.left, self.right])

    def at_read_positions(self, read: tuple[torch.Tensor, torch.Tensor], length: int) -> "SpanBoundaryTargets":
        """The same targets with boundaries renumbered into the (B, M) positions ``read`` (the
        encoder's output holds only those with sparse prediction: :class:`HeadReads`)."""
        positions, real = read
        rows = torch.arange(positions.shape[0], device=positions.device)[:, None].expand_as(positions)
        # (B, T) map from a position to its index among the positions read (0 elsewhere).
        slots = torch.zeros(positions.shape[0], length, dtype=torch.long, device=positions.device)
        slots[rows[real], positions[real]] = torch.arange(positions.shape[1], device=positions.device).expand_as(
            positions
        )[real]
        return SpanBoundaryTargets(
            self.batch_index,
            slots[self.batch_index, self.left],
            slots[self.batch_index, self.right],
            self.relative,
            self.labels,
        )


def span_boundary_loss(
    head: SpanBoundaryHead, hidden_states: torch.Tensor, targets: SpanBoundaryTargets
) -> tuple[torch.Tensor, torch.Tensor]:
    """SBO loss (mean over the N span tokens) and their (N, V) logits, computed only at the
    selected tokens. hidden_states: (B, T, H). With no target in the batch (e.g. every span
    touches an edge) the loss is an exact 0 that still belongs to the graph."""
    logits = head(
        hidden_states[targets.batch_index, targets.left],
        hidden_states[targets.batch_index, targets.right],
        targets.relative,
    )
    if targets.labels.numel() == 0:
        return logits.sum() * 0.0, logits
    return F.cross_entropy(logits, targets.labels), logits


@dataclass
class SpanBertForPreTrainingOutput(ModelOutput):
    """What :class:`SpanBertForPreTraining` returns.

    Attributes:
        loss: () mlm_loss + sbo_weight * sbo_loss (the terms whose labels were given).
        mlm_loss: () mean cross-entropy over the masked positions (with ``labels``).
        sbo_loss: () mean span-boundary cross-entropy over the N tokens with ``sbo_labels != -100``.
        prediction_logits: (B, T, V), or (num_masked, V) with ``config.sparse_prediction``.
        sbo_logits: (N, V) at those N tokens, in row-major (batch, position) order.
        hidden_states: (layers + 1) x (B, T, H), when ``output_hidden_states``.
        attentions: layers x (B, heads, T, T), when ``output_attentions``.
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    sbo_loss: torch.FloatTensor | None = None
    prediction_logits: torch.FloatTensor | None = None
    sbo_logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class SpanBertForPreTraining(BertMaskedLMHeadModel, SpanBertPreTrainedModel):
    """Masked LM + Span Boundary Objective, the paper's pretraining objective (no NSP, no pooler):
    loss = mlm_loss + sbo_weight * sbo_loss.

    Feed it the span-masking collator's batches (``hf_variants.objectives``): ``labels`` and the
    ``sbo_*`` columns.
    """

    config_class = SpanBertConfig
    # Both vocabulary decoders share the word embedding matrix.
    _tied_weights_keys = {
        **BertMaskedLMHeadModel._tied_weights_keys,
        "sbo_head.decoder.weight": "bert.embeddings.word_embeddings.weight",
    }

    def __init__(self, config: SpanBertConfig) -> None:
        super().__init__(config)  # BERT's encoder (no pooler) and tied MLM head
        self.sbo_head = SpanBoundaryHead(
            config.hidden_size,
            config.vocab_size,
            config.max_span_length,
            config.sbo_position_embedding_size,
            config.hidden_act,
            config.layer_norm_eps,
            config.embedding_size,
            cpu_kernel=config.padding_free,
        )
        self.post_init()

    def _reads_with_boundaries(
        self, reads: HeadReads, labels: torch.Tensor, targets: SpanBoundaryTargets | None
    ) -> HeadReads:
        """With sparse prediction the last layer computes only what the two heads read: the masked
        tokens (MLM, ``reads``) and the span boundaries (SBO)."""
        if reads.positions is None or targets is None:
            return reads
        selected = labels != IGNORE_INDEX
        selected[targets.boundaries()] = True
        return HeadReads(positions=selected_positions(selected), padding=reads.padding)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        sbo_left: torch.Tensor | None = None,
        sbo_right: torch.Tensor | None = None,
        sbo_relative: torch.Tensor | None = None,
        sbo_labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> SpanBertForPreTrainingOutput | tuple:
        """All label columns are (B, T), as the span-masking collator makes them.

        Args:
            labels: MLM targets, -100 where nothing is predicted.
            sbo_left / sbo_right: index of the token just before / just after the span holding
                each masked token (0 elsewhere).
            sbo_relative: 0-based offset of the token inside its span (< config.max_span_length).
            sbo_labels: target id where the span has both boundaries inside the sequence, -100
                elsewhere; the SBO is computed only at these positions.
            past_key_values: a key/value prefix for the encoder (peft's prefix tuning).
        """
        refuse_next_sentence_label(kwargs, "SpanBERT")
        reference = input_ids if input_ids is not None else inputs_embeds
        if reference is None:
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        targets = SpanBoundaryTargets.from_collator_columns(
            tuple(reference.shape[:2]),
            self.config.vocab_size,
            self.config.max_span_length,
            sbo_left,
            sbo_right,
            sbo_relative,
            sbo_labels,
        )
        reads = self._mlm_reads(
            labels, input_ids, inputs_embeds, attention_mask, output_attentions, output_hidden_states
        )
        reads = self._reads_with_boundaries(reads, labels, targets)
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
        sbo_loss = sbo_logits = None
        if targets is not None:
            if reads.positions is not None:
                targets = targets.at_read_positions(reads.positions, reference.shape[1])
            sbo_loss, sbo_logits = span_boundary_loss(self.sbo_head, outputs.last_hidden_state, targets)
        terms = [
            t for t in (mlm_loss, None if sbo_loss is None else self.config.sbo_weight * sbo_loss) if t is not None
        ]
        loss = sum(terms[1:], terms[0]) if terms else None
        return _return(
            SpanBertForPreTrainingOutput(
                loss=loss,
                mlm_loss=mlm_loss,
                sbo_loss=sbo_loss,
                prediction_logits=prediction_logits,
                sbo_logits=sbo_logits,
                hidden_states=outputs.hidden_states,
                attentions=outputs.attentions,
            ),
            return_dict,
        )


# ----------------------------------------------------------------------------- fine-tuning heads: BERT's
class SpanBertForMaskedLM(BertForMaskedLM, SpanBertPreTrainedModel):
    """BERT's masked LM head on SpanBERT's encoder."""

    config_class = SpanBertConfig


class SpanBertForSequenceClassification(BertForSequenceClassification, SpanBertPreTrainedModel):
    """BERT's classifier on the pooled [CLS] (SpanBERT's fine-tuning keeps BERT's heads)."""

    config_class = SpanBertConfig


class SpanBertForTokenClassification(BertForTokenClassification, SpanBertPreTrainedModel):
    """BERT's per-token classifier."""

    config_class = SpanBertConfig


class SpanBertForQuestionAnswering(BertForQuestionAnswering, SpanBertPreTrainedModel):
    """BERT's span-extraction head (the paper's SQuAD setting)."""

    config_class = SpanBertConfig


class SpanBertForMultipleChoice(BertForMultipleChoice, SpanBertPreTrainedModel):
    """BERT's multiple-choice head."""

    config_class = SpanBertConfig


__all__ = [
    "SpanBertPreTrainedModel",
    "SpanBertModel",
    "SpanBoundaryHead",
    "SpanBertForPreTraining",
    "SpanBertForMaskedLM",
    "SpanBertForSequenceClassification",
    "SpanBertForTokenClassification",
    "SpanBertForQuestionAnswering",
    "SpanBertForMultipleChoice",
]
