"""Task models shared by every encoder variant: MLM, sequence classification, token
classification, extractive QA and multiple choice.

A variant declares, e.g.::

    class BertForSequenceClassification(EncoderForSequenceClassification, BertPreTrainedModel):
        backbone_class = BertModel

The mixin builds ``self.<base_model_prefix> = backbone_class(config, ...)`` plus the head, and
gives a forward with explicit arguments (Trainer inspects the signature to keep dataset columns).
Outputs are transformers' ModelOutput types, with ``loss`` when labels are given.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import nn
from transformers.cache_utils import Cache
from transformers.modeling_outputs import (
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import ModelOutput

from .dropout import Dropout
from .heads import (
    IGNORE_INDEX,
    MaskedLMHead,
    PooledClassifier,
    choice_count,
    classifier_dropout,
    flatten_choices,
    masked_lm_loss,
    multiple_choice_loss,
    refuse_next_sentence_label,
    sentence_relation_loss,
    sequence_classification_loss,
    span_extraction_loss,
    summarize,
    token_classification_loss,
)
from .masks import summary_positions, targets_at_padding
from .padding import selected_positions


class EncoderTaskModel:
    """Common plumbing: build the backbone under ``base_model_prefix`` and run it."""

    backbone_class: type
    uses_pooler: bool = False
    # False for heads whose output reads the hidden states at padding positions (QA's softmax over
    # all T positions): the padding-free path leaves those at zero, so such heads run padded.
    padding_free_safe: bool = True
    # True for heads that read only the summary token (config.summary_type: the pooler / [CLS]):
    # the backbone then computes the last layer at that position alone (see LayerStack.forward).
    reads_summary_only: bool = False

    def _build_backbone(self, config) -> None:
        setattr(self, self.base_model_prefix, self.backbone_class(config, add_pooling_layer=self.uses_pooler))

    @property
    def backbone(self):
        return getattr(self, self.base_model_prefix)

    def _encode(
        self,
        input_ids,
        attention_mask,
        token_type_ids,
        position_ids,
        inputs_embeds,
        output_attentions,
        output_hidden_states,
        token_labels: torch.Tensor | None = None,
        read: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs,
    ):
        """Run the backbone (arguments in the order of every task forward); returns BaseModelOutputWithPooling.

        The backbone's layout plan (layout.py) decides packed vs padded from what this head reads:
        ``token_labels`` (B, T) per-token targets (a target at a padding position is read from the
        hidden state there, which only the padded layout computes; collators put -100 on padding,
        so this is the rare case); ``read`` the positions from :meth:`_read_positions`, which the
        last layer computes alone. ``kwargs``: further embedding inputs (e.g. XLM's ``langs``).
        """
        reads_padding = not self.padding_free_safe
        # Only the packed layout cares (and reading the labels would sync: no graph break without it).
        padding_free = kwargs.get("padding_free")
        may_pack = (self.config.padding_free if padding_free is None else padding_free) and not reads_padding
        if may_pack:
            reads_padding = reads_padding or targets_at_padding(token_labels, attention_mask, IGNORE_INDEX)
        return self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            summary_only=self.reads_summary_only,
            output_positions=None if read is None else read[0],
            output_positions_mask=None if read is None else read[1],
            reads_padding=reads_padding,
            **kwargs,
        )

    def _summary(self, out, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """(B, H) summary-token states of a backbone output (see heads.summarize)."""
        return summarize(out.last_hidden_state, self.config.summary_type, attention_mask)

    def _read_positions(
        self,
        labels,
        input_ids,
        inputs_embeds,
        output_attentions,
        output_hidden_states,
        also_read: tuple[torch.Tensor, torch.Tensor] | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """With sparse prediction only the masked positions (the summary token too when the pooler is
        used, and ``also_read`` = (row indices, positions) a second head reads) reach the outputs,
        so the last layer computes those alone: ((B, M) positions, (B, M) real-position mask)
        from :func:`selected_positions`, or None for every position."""
        if (
            not self.config.sparse_prediction
            or self.config.is_decoder  # causal stacks compute every position (BatchLayout.plan)
            or (self.uses_pooler and self.config.summary_type == "mean")  # the pooler reads every position
            or not self._only_labelled_positions_are_read(
                labels, input_ids, inputs_embeds, output_attentions, output_hidden_states
            )
        ):
            return None
        selected = labels != IGNORE_INDEX
        if self.uses_pooler:  # the pooler reads the summary token
            batch, length = selected.shape
            summary = summary_positions(self.config.summary_type, attention_mask, batch, length, selected.device)
            selected.scatter_(1, summary, True)
        if also_read is not None:
            selected[also_read] = True
        return selected_positions(selected)

    @staticmethod
    def _slots(read: tuple[torch.Tensor, torch.Tensor], length: int) -> torch.Tensor:
        """(B, T) map from a position to its index among the (B, M) positions read (0 elsewhere)."""
        positions, real = read
        rows = torch.arange(positions.shape[0], device=positions.device)[:, None].expand_as(positions)
        slots = torch.zeros(positions.shape[0], length, dtype=torch.long, device=positions.device)
        slots[rows[real], positions[real]] = torch.arange(positions.shape[1], device=positions.device).expand_as(
            positions
        )[real]
        return slots

    @staticmethod
    def _labels_at(labels: torch.Tensor | None, read: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor | None:
        """(B, T) labels -> (B, M) labels at the positions of :meth:`_read_positions` (-100 at padding)."""
        if read is None:
            return labels
        positions, real = read
        return labels.gather(1, positions).masked_fill(~real, IGNORE_INDEX)

    def _only_labelled_positions_are_read(
        self, labels, input_ids, inputs_embeds, output_attentions, output_hidden_states
    ) -> bool:
        """True when the caller reads the hidden states at the labelled positions only: labels of
        the inputs' (B, T) shape with at least one target, and no hidden states or attentions
        asked for (the backbone would then compute every position anyway)."""
        reference = input_ids if input_ids is not None else inputs_embeds
        if labels is None or reference is None or tuple(labels.shape) != tuple(reference.shape[:2]):
            return False
        config = self.config
        wants_all = output_attentions if output_attentions is not None else config.output_attentions
        wants_all = wants_all or (
            output_hidden_states if output_hidden_states is not None else config.output_hidden_states
        )
        return not wants_all and bool((labels != IGNORE_INDEX).any())

    # A variant's own output types, standing in for the standard ones (XLNet's carry ``mems``).
    output_types: dict[type, type] = {}

    def extra_outputs(self, backbone_output) -> dict:
        """Fields of the backbone's output a head returns beside its own (XLNet: ``mems``)."""
        return {}

    def _finish(self, output_cls, return_dict: bool | None, backbone_output=None, **fields):
        if backbone_output is not None:
            fields.update(self.extra_outputs(backbone_output))
        output = self.output_types.get(output_cls, output_cls)(**fields)
        return output if return_dict is not False else output.to_tuple()


class MaskedLMPass(NamedTuple):
    """What :meth:`EncoderForMaskedLM._masked_lm` returns: the backbone output (last_hidden_state
    (B, T, H), or (B, M, H) at the M positions read), the mean MLM loss (None without labels), the
    logits ((B, T, V), or (num_masked, V) with sparse prediction), and the positions read (None
    for every position; else ((B, M) positions, (B, M) real-position mask))."""

    encoded: Any
    loss: torch.Tensor | None
    logits: torch.Tensor
    read: tuple[torch.Tensor, torch.Tensor] | None


class EncoderForMaskedLM(EncoderTaskModel):
    """Masked language modelling; the decoder is tied to the word embeddings.

    With ``config.sparse_prediction`` and labels, logits are computed only at the masked
    positions and returned as (num_masked, V) instead of (B, T, V).
    """

    # The variant's name where this is its pretraining model and the paper has no next sentence
    # prediction (RoBERTa): a next_sentence_label is then refused (refuse_next_sentence_label).
    pretrained_without_nsp: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if hasattr(cls, "base_model_prefix"):
            cls._tied_weights_keys = {
                "mlm_head.decoder.weight": f"{cls.base_model_prefix}.embeddings.word_embeddings.weight"
            }

    def __init__(self, config) -> None:
        super().__init__(config)
        self._build_backbone(config)
        self.mlm_head = self.build_lm_head(config)
        self.post_init()

    def build_lm_head(self, config) -> MaskedLMHead:
        """BERT's transform + tied decoder (XLM overrides: the decoder alone)."""
        return MaskedLMHead(
            config.hidden_size, config.vocab_size, config.hidden_act, config.layer_norm_eps, config.embedding_size
        )

    def get_output_embeddings(self) -> nn.Linear:
        return self.mlm_head.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.mlm_head.decoder = new_embeddings

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
        """labels: (B, T) target ids, -100 where nothing is predicted. Logits (B, T, V), or
        (num_predicted, V) with ``config.sparse_prediction``. past_key_values: a key/value prefix
        (peft's prefix tuning), passed to the backbone."""
        if self.pretrained_without_nsp:
            refuse_next_sentence_label(kwargs, self.pretrained_without_nsp)
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
            **kwargs,
        )
        out = mlm.encoded
        return self._finish(
            MaskedLMOutput,
            return_dict,
            backbone_output=out,
            loss=mlm.loss,
            logits=mlm.logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )

    def _masked_lm(
        self,
        labels: torch.Tensor | None,
        *,
        input_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
        output_attentions: bool | None,
        output_hidden_states: bool | None,
        also_read: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs,
    ) -> MaskedLMPass:
        """The masked-LM pass every MLM head shares (MLM alone, BERT's MLM + NSP, ALBERT's MLM + SOP,
        SpanBERT's MLM + SBO): plan which positions the last layer computes (with sparse
        prediction: the masked ones, the summary token when the pooler is used, and ``also_read``
        for a second head), encode, and score the masked positions. labels (B, T), -100 where
        nothing is predicted; the inputs by name, as the head's forward takes them (``kwargs``:
        further backbone inputs, e.g. ``past_key_values``, XLM's ``langs``); see
        :class:`MaskedLMPass` for the shapes returned."""
        read = self._read_positions(
            labels,
            input_ids,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            also_read=also_read,
            attention_mask=attention_mask,
        )
        encoded = self._encode(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            token_labels=labels,
            read=read,
            **kwargs,
        )
        loss, logits = masked_lm_loss(
            self.mlm_head,
            encoded.last_hidden_state,
            self._labels_at(labels, read),
            self.config.vocab_size,
            bool(self.config.sparse_prediction),
        )
        return MaskedLMPass(encoded, loss, logits, read)


class EncoderForMaskedLMAndSentenceRelation(EncoderForMaskedLM):
    """MLM + a two-way sentence-pair task on the pooled summary token (BERT's next sentence
    prediction, ALBERT's sentence order prediction); loss = the sum of the two means. A variant
    builds its relation head in ``__init__`` and writes the forward with its label's name and its
    own declared output class: ``self._masked_lm(...)``, then ``self._sentence_relation(...)``."""

    uses_pooler = True

    def _sentence_relation(
        self,
        relation_head: Callable[[torch.Tensor], torch.Tensor],
        mlm: MaskedLMPass,
        relation_labels: torch.Tensor | None,
        label_name: str,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """The second task on the MLM pass's pooled (B, H) summary: its logits (B, 2), its mean loss
        against ``relation_labels`` (B,) (None without them; a ValueError names ``label_name`` for
        bad labels), and the total loss mlm + relation (None unless both labels were given)."""
        relation_logits = relation_head(mlm.encoded.pooler_output)
        relation_loss = None
        if relation_labels is not None:
            relation_loss = sentence_relation_loss(relation_logits, relation_labels, label_name)
        loss = mlm.loss + relation_loss if mlm.loss is not None and relation_loss is not None else None
        return relation_logits, relation_loss, loss


class EncoderHeadModel(EncoderTaskModel, metaclass=ABCMeta):
    """One head on the backbone, one loss, one output type: the forward every such task shares
    (sequence and token classification, BERT's next sentence prediction, ELECTRA's replaced token
    detection). A subclass builds its head in :meth:`build_head`, says what the head reads in
    :meth:`head_logits` and how it is scored in :meth:`head_loss` (abstract: a class that lacks one
    cannot be instantiated), and names its ``output_class``;
    ``labels_per_token`` when its labels are (B, T), one per token (the layout plan reads them,
    see :meth:`EncoderTaskModel._encode`)."""

    output_class: type[ModelOutput]
    labels_per_token: bool = False

    def __init__(self, config) -> None:
        super().__init__(config)
        self._build_backbone(config)
        self.build_head(config)
        self.post_init()

    @abstractmethod
    def build_head(self, config) -> None:
        """Create the head's modules (their attribute names are the key map's)."""

    def head_reads(
        self, input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The positions the head reads, which the last layer then computes alone: ((B, M)
        positions, (B, M) real-position mask), or None (the plan of :meth:`_encode` decides)."""
        return None

    @abstractmethod
    def head_logits(
        self, out, attention_mask: torch.Tensor | None, read: tuple[torch.Tensor, torch.Tensor] | None
    ) -> torch.Tensor:
        """The head on the backbone output ``out`` (BaseModelOutputWithPooling; at the positions
        ``read`` of :meth:`head_reads` alone when those were given) -> logits."""

    @abstractmethod
    def head_loss(
        self, logits: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """The mean loss of ``logits`` against ``labels`` (ValueError naming bad labels)."""

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
    ) -> ModelOutput | tuple:
        """Inputs (B, T); ``labels`` as the class docstring says; past_key_values: a key/value
        prefix (peft's prefix tuning) for the backbone. Returns ``output_class`` with ``loss``
        (when labels are given), ``logits``, ``hidden_states``, ``attentions``."""
        read = self.head_reads(input_ids, inputs_embeds)
        out = self._encode(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            token_labels=labels if self.labels_per_token else None,
            read=read,
            past_key_values=past_key_values,
            **kwargs,
        )
        logits = self.head_logits(out, attention_mask, read)
        loss = self.head_loss(logits, labels, attention_mask) if labels is not None else None
        return self._finish(
            self.output_class,
            return_dict,
            backbone_output=out,
            loss=loss,
            logits=logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )


class EncoderForSequenceClassification(EncoderHeadModel):
    """Single sentences or pairs (NLI); regression when num_labels == 1; multi-label via problem_type.
    labels: (B,) class ids, (B,) floats for regression, or (B, num_labels) multi-hot. Logits (B, num_labels)."""

    uses_pooler = True
    reads_summary_only = True
    classifier_class = PooledClassifier
    output_class = SequenceClassifierOutput

    def build_head(self, config) -> None:
        self.num_labels = config.num_labels
        self.classifier = self.build_classifier(config, config.num_labels)

    def build_classifier(self, config, num_outputs: int) -> nn.Module:
        """The head on the summary token: called as ``classifier(summary (B, H), pooled (B, H) or None)``,
        returns (B, num_outputs). Variants with another head (XLM's sequence summary) override it."""
        return self.classifier_class(config.hidden_size, num_outputs, classifier_dropout(config))

    def head_logits(self, out, attention_mask: torch.Tensor | None, read=None) -> torch.Tensor:
        return self.classifier(self._summary(out, attention_mask), out.pooler_output)

    def head_loss(
        self, logits: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        return sequence_classification_loss(self.config, logits, labels)


class EncoderForTokenClassification(EncoderHeadModel):
    """Per-token labels (NER, POS). labels: (B, T) class ids, -100 on ignored tokens. Logits (B, T, num_labels)."""

    labels_per_token = True
    output_class = TokenClassifierOutput

    def build_head(self, config) -> None:
        self.num_labels = config.num_labels
        self.dropout = Dropout(classifier_dropout(config))
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def head_logits(self, out, attention_mask: torch.Tensor | None, read=None) -> torch.Tensor:
        return self.classifier(self.dropout(out.last_hidden_state))

    def head_loss(
        self, logits: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        return token_classification_loss(logits, labels)


class EncoderForQuestionAnswering(EncoderTaskModel):
    """Extractive QA: start/end logits per token; SQuAD 2.0 "no answer" points at position 0 ([CLS]).

    As in transformers, the span softmax runs over all T positions, padding included, so this head
    always runs the padded path (``padding_free_safe = False``): its loss equals transformers'.
    """

    padding_free_safe = False

    def __init__(self, config) -> None:
        super().__init__(config)
        self._build_backbone(config)
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
        """start_positions/end_positions: (B,) token indices. Logits (B, T) each. past_key_values:
        a key/value prefix (peft's prefix tuning) for the backbone."""
        out = self._encode(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
            past_key_values=past_key_values,
            **kwargs,
        )
        start_logits, end_logits = self.qa_outputs(out.last_hidden_state).unbind(dim=-1)
        start_logits, end_logits = start_logits.contiguous(), end_logits.contiguous()
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_extraction_loss(start_logits, end_logits, start_positions, end_positions)
        return self._finish(
            QuestionAnsweringModelOutput,
            return_dict,
            backbone_output=out,
            loss=loss,
            start_logits=start_logits,
            end_logits=end_logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )


class EncoderForMultipleChoice(EncoderTaskModel):
    """Inputs (B, num_choices, T); one score per choice from the pooled output; logits (B, num_choices)."""

    uses_pooler = True
    reads_summary_only = True

    def __init__(self, config) -> None:
        super().__init__(config)
        self._build_backbone(config)
        self.classifier = self.build_classifier(config, 1)
        self.post_init()

    def build_classifier(self, config, num_outputs: int) -> nn.Module:
        """One score per choice: called as ``classifier(summary (B*C, H), pooled or None)`` -> (B*C, 1)."""
        return PooledClassifier(config.hidden_size, num_outputs, classifier_dropout(config))

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
        """All inputs (B, C, T) (inputs_embeds (B, C, T, E)); labels (B,) index of the right choice;
        past_key_values: a key/value prefix for the backbone (over the B * C flattened rows)."""
        num_choices = choice_count(input_ids, inputs_embeds)

        out = self._encode(
            flatten_choices(input_ids),
            flatten_choices(attention_mask),
            flatten_choices(token_type_ids),
            flatten_choices(position_ids),
            flatten_choices(inputs_embeds),
            output_attentions,
            output_hidden_states,
            past_key_values=past_key_values,
            **{
                name: flatten_choices(value) if isinstance(value, torch.Tensor) else value
                for name, value in kwargs.items()
            },
        )
        logits = self.classifier(self._summary(out, flatten_choices(attention_mask)), out.pooler_output).view(
            -1, num_choices
        )
        loss = None
        if labels is not None:
            loss = multiple_choice_loss(logits, labels)
        return self._finish(
            MultipleChoiceModelOutput,
            return_dict,
            backbone_output=out,
            loss=loss,
            logits=logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )
