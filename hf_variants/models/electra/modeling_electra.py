"""ELECTRA (Clark et al. 2020): a BERT encoder with factorized embeddings (E -> H when E != H) and
no pooler, pretrained by replaced token detection (RTD) against a small masked-LM generator.

The encoder and the fine-tuning heads come from ``hf_variants.modules``; this file adds what is
ELECTRA's own:

- the RTD head (dense -> activation -> one logit per token) and its loss (BCE over real tokens);
- ELECTRA's classifiers, which read the first token without a pooler and use GELU;
- the joint pretraining model :class:`ElectraForPreTraining`: generator + discriminator sharing
  their embedding tables, Gumbel-max sampling of replacements, loss = MLM + 50 x RTD.

Names. transformers calls its discriminator-with-RTD-head class ``ElectraForPreTraining``; here
that name is the joint model, because ``AutoModelForPreTraining.from_config`` must build what
pretraining ELECTRA from scratch means (both networks), and every variant's ``...ForPreTraining`` is
its paper's pretraining objective. transformers' class maps onto
:class:`ElectraForReplacedTokenDetection` (same weights, same outputs), named after the paper's task
(key map: ``weights.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.modeling_outputs import TokenClassifierOutput
from transformers.utils import ModelOutput

from ...modules.backbone import TransformerBackbone
from ...modules.embeddings import check_batch_shape
from ...modules.heads import IGNORE_INDEX, MaskedLMHead, SummaryClassifier, check_label_shape, masked_lm_loss
from ...modules.padding import selected_positions
from ...modules.task_models import (
    EncoderForMaskedLM,
    EncoderForMultipleChoice,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
    EncoderHeadModel,
    EncoderTaskModel,
    refuse_next_sentence_label,
)
from ..modeling_base import VariantPreTrainedModel
from .configuration_electra import ElectraConfig


class ElectraPreTrainedModel(VariantPreTrainedModel):
    config_class = ElectraConfig
    base_model_prefix = "electra"


class ElectraModel(TransformerBackbone, ElectraPreTrainedModel):
    """The bare encoder (the discriminator, or at generator sizes the generator). The E -> H
    projection is ``embeddings.projection`` (transformers: ``embeddings_project``). No pooler:
    ELECTRA's sequence heads read the first token directly."""

    def build_pooler(self, config: ElectraConfig) -> None:
        return None


# ----------------------------------------------------------------------------- replaced token detection
class ReplacedTokenDetectionHead(nn.Module):
    """dense (H -> H) -> activation -> dense_prediction (H -> 1): one "was this token replaced?"
    logit per position. (..., H) -> (...)."""

    def __init__(self, hidden_size: int, activation: str) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = ACT2FN[activation]
        self.dense_prediction = nn.Linear(hidden_size, 1)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.dense_prediction(self.activation(self.dense(hidden_states))).squeeze(-1)


def replaced_token_detection_loss(
    logits: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """Binary cross-entropy averaged over the real tokens (attention_mask 1), as the paper's code
    and transformers do. logits (B, T); labels (B, T): 1 = replaced, 0 = original, -100 = ignored."""
    check_label_shape(labels, logits.shape, "labels")
    used = labels != IGNORE_INDEX
    if bool(((labels[used] != 0) & (labels[used] != 1)).any()):
        bad = int(labels[used & (labels != 0) & (labels != 1)][0])
        raise ValueError(f"replaced-token labels must be 0 (original), 1 (replaced) or {IGNORE_INDEX}, got {bad}")
    if attention_mask is not None:
        used = used & attention_mask.bool()
    return F.binary_cross_entropy_with_logits(logits[used], labels[used].to(logits.dtype))


class ElectraForReplacedTokenDetection(EncoderHeadModel, ElectraPreTrainedModel):
    """The discriminator with its RTD head: transformers' ``ElectraForPreTraining`` (same weights,
    same logits). Logits (B, T); labels (B, T) 1 where a token was replaced."""

    backbone_class = ElectraModel
    labels_per_token = True
    output_class = TokenClassifierOutput

    def build_head(self, config: ElectraConfig) -> None:
        self.discriminator_predictions = ReplacedTokenDetectionHead(config.hidden_size, config.hidden_act)

    def head_logits(self, out, attention_mask: torch.Tensor | None, read=None) -> torch.Tensor:
        return self.discriminator_predictions(out.last_hidden_state)

    def head_loss(
        self, logits: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        return replaced_token_detection_loss(logits, labels, attention_mask)


# ----------------------------------------------------------------------------- fine-tuning heads
class ElectraClassificationHead(SummaryClassifier):
    """transformers' ElectraClassificationHead: dropout, dense, GELU (not BERT's tanh), dropout,
    out_proj, on the first token."""

    def __init__(self, hidden_size: int, num_labels: int, dropout: float) -> None:
        super().__init__(hidden_size, num_labels, dropout, activation="gelu")


class ElectraForMaskedLM(EncoderForMaskedLM, ElectraPreTrainedModel):
    """The generator as a masked LM (transformers' ``ElectraForMaskedLM``): dense (H -> E) ->
    activation -> LayerNorm -> decoder tied to the word embeddings (own bias)."""

    backbone_class = ElectraModel


class ElectraForSequenceClassification(EncoderForSequenceClassification, ElectraPreTrainedModel):
    backbone_class = ElectraModel
    uses_pooler = False
    classifier_class = ElectraClassificationHead


class ElectraForTokenClassification(EncoderForTokenClassification, ElectraPreTrainedModel):
    backbone_class = ElectraModel


class ElectraForQuestionAnswering(EncoderForQuestionAnswering, ElectraPreTrainedModel):
    backbone_class = ElectraModel


class ElectraForMultipleChoice(EncoderForMultipleChoice, ElectraPreTrainedModel):
    """transformers' sequence summary (first token -> dense -> GELU -> dropout of
    ``summary_last_dropout``, none before the dense) followed by a linear scorer per choice."""

    backbone_class = ElectraModel
    uses_pooler = False

    def build_classifier(self, config: ElectraConfig, num_outputs: int) -> nn.Module:
        return SummaryClassifier(
            config.hidden_size, num_outputs, config.summary_last_dropout, activation="gelu", input_dropout=0.0
        )


# ----------------------------------------------------------------------------- joint pretraining
def gumbel_max_sample(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """One token per row from softmax(logits / temperature), as argmax(logits / temperature + g)
    with g i.i.d. Gumbel(0, 1) (the Gumbel-max trick the paper's code uses). (N, V) -> (N,) ids.
    Not differentiable: the RTD loss never reaches the generator through its samples."""
    with torch.no_grad():
        scaled = logits.detach().float() / temperature
        uniform = torch.rand_like(scaled).clamp_(min=torch.finfo(torch.float32).tiny)
        return (scaled - torch.log(-torch.log(uniform))).argmax(dim=-1)


@dataclass
class ElectraForPreTrainingOutput(ModelOutput):
    """Outputs of the joint model.

    loss: generator_weight * mlm_loss + discriminator_weight * discriminator_loss.
    logits: the discriminator's RTD logits (B, T) on ``corrupted_input_ids``.
    mlm_loss: the generator's masked-LM cross-entropy (mean over the masked positions).
    discriminator_loss: the RTD binary cross-entropy (mean over real tokens).
    prediction_logits: the generator's logits, (num_masked, V) at the masked positions when
        ``labels`` are given (row-major order), else (B, T, V).
    discriminator_labels: (B, T) 1 where the corrupted token differs from the original.
    corrupted_input_ids: (B, T) the discriminator's input: the originals with the generator's
        samples at the masked positions (the input itself when no labels are given).
    hidden_states, attentions: the discriminator's, when asked for.
    """

    # Field order: loss, then the discriminator's logits, as transformers' ElectraForPreTrainingOutput
    # (loss, logits, hidden_states, attentions): without labels ``outputs[0]`` is the discriminator's
    # output, computed from the hidden states returned (the generator's logits come after).
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    mlm_loss: torch.Tensor | None = None
    discriminator_loss: torch.Tensor | None = None
    prediction_logits: torch.Tensor | None = None
    discriminator_labels: torch.Tensor | None = None
    corrupted_input_ids: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


# Embedding modules the generator takes from the discriminator (the paper's tied embeddings: the
# original code builds both under one "electra/embeddings" scope). Each keeps its own projection.
SHARED_EMBEDDING_MODULES = ("word_embeddings", "position_embeddings", "token_type_embeddings", "layer_norm")


class ElectraForPreTraining(EncoderTaskModel, ElectraPreTrainedModel):
    """Generator + discriminator trained jointly by replaced token detection.

    Feed it masked batches from :class:`hf_variants.objectives.DataCollatorForReplacedTokenDetection`
    (``input_ids`` with 15% of positions chosen, 85% of them [MASK] and 15% unchanged; ``labels`` the
    original ids there, -100 elsewhere). Each forward then

    1. runs the generator (hidden = ``generator_hidden_size`` x H, see ``config.generator_config()``)
       and computes its MLM logits at the masked positions only;
    2. samples a replacement for each masked position from them (Gumbel-max, temperature
       ``config.sampling_temperature``, no gradient);
    3. runs the discriminator on the originals with those replacements; a position is "replaced"
       only where the sample differs from the original (a correct guess counts as original);
    4. returns loss = ``generator_weight`` x MLM + ``discriminator_weight`` x RTD, both reported.

    One departure from the original's initialisation (``discriminator_prior_bias``, on by default):
    the RTD logit bias starts at log(p / (1 - p)), p = ``mlm_probability``, not 0. From 0, Adam fit
    that constant through every position-independent encoder weight at once, collapsing the
    discriminator's token states onto one direction, and fine-tuning a short run's checkpoint sat
    at ln 2 for hundreds of steps (docs/electra_rootcause.md).

    Weights: ``electra`` + ``discriminator_predictions`` are the discriminator, under the names of
    :class:`ElectraForReplacedTokenDetection`, so this checkpoint loads into every fine-tuning head
    with ``from_pretrained``. ``generator`` + ``generator_mlm_head`` are the generator;
    :meth:`generator_as_masked_lm` gives it as an :class:`ElectraForMaskedLM` (to save or use alone).
    The generator's word, position and segment tables and embedding LayerNorm ARE the
    discriminator's (one tensor each, stored once).
    """

    backbone_class = ElectraModel
    _tied_weights_keys = {"generator_mlm_head.decoder.weight": "electra.embeddings.word_embeddings.weight"}

    def __init__(self, config: ElectraConfig) -> None:
        super().__init__(config)
        self._build_backbone(config)
        self.discriminator_predictions = ReplacedTokenDetectionHead(config.hidden_size, config.hidden_act)
        generator_config = config.generator_config()
        self.generator = ElectraModel(generator_config)
        self.generator_mlm_head = MaskedLMHead(
            generator_config.hidden_size,
            config.vocab_size,
            generator_config.hidden_act,
            config.layer_norm_eps,
            generator_config.embedding_size,  # E, tied to the shared word embeddings
        )
        self._share_embeddings()
        # save_pretrained reads the instance's map to store each shared tensor once.
        self._tied_weights_keys = {**type(self)._tied_weights_keys, **self._shared_embedding_keys()}
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """The original's init, but the RTD logit bias at the prior log-odds (class docstring).
        Through transformers.initialization: a bias loaded from a checkpoint is left alone."""
        super()._init_weights(module)
        if isinstance(module, ReplacedTokenDetectionHead) and self.config.discriminator_prior_bias:
            p = self.config.mlm_probability
            init.constant_(module.dense_prediction.bias, math.log(p / (1.0 - p)))

    # ------------------------------------------------------------------ shared weights
    def _shared_embedding_keys(self) -> dict[str, str]:
        """{generator parameter: discriminator parameter} for the shared embedding tables."""
        embeddings = self.electra.embeddings
        names = [
            f"{module}.{name}"
            for module in SHARED_EMBEDDING_MODULES
            if getattr(embeddings, module, None) is not None
            for name, _ in getattr(embeddings, module).named_parameters()
        ]
        return {f"generator.embeddings.{name}": f"electra.embeddings.{name}" for name in names}

    def _share_embeddings(self) -> None:
        for module in SHARED_EMBEDDING_MODULES:
            # Sinusoidal or no positions: no table to share (each side computes the same function).
            if hasattr(self.electra.embeddings, module):
                setattr(self.generator.embeddings, module, getattr(self.electra.embeddings, module))

    def get_expanded_tied_weights_keys(self, all_submodels: bool = False) -> dict:
        """transformers' tie map (the generator decoder -> word embeddings, when
        ``tie_word_embeddings``) plus the shared embedding tables, which are shared whatever
        ``tie_word_embeddings`` says: save_pretrained stores them once, from_pretrained re-ties them."""
        tied = super().get_expanded_tied_weights_keys(all_submodels)
        tied.update(self._shared_embedding_keys())
        return tied

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        """Both networks read the new table (resize_token_embeddings keeps them shared)."""
        self.electra.embeddings.word_embeddings = value
        self.generator.embeddings.word_embeddings = value

    def get_output_embeddings(self) -> nn.Linear:
        return self.generator_mlm_head.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.generator_mlm_head.decoder = new_embeddings

    def generator_as_masked_lm(self) -> "ElectraForMaskedLM":
        """The generator as an :class:`ElectraForMaskedLM` whose modules ARE this model's (no copy:
        training one trains the other). ``.save_pretrained(dir)`` saves the generator alone."""
        generator_config = self.generator.config
        generator_config.vocab_size = self.config.vocab_size  # follows resize_token_embeddings
        with torch.device("meta"):  # its own modules are replaced at once: never allocate them
            masked_lm = ElectraForMaskedLM(generator_config)
        masked_lm.electra = self.generator
        masked_lm.mlm_head = self.generator_mlm_head
        return masked_lm

    # ------------------------------------------------------------------ forward
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
        **kwargs,
    ) -> ElectraForPreTrainingOutput | tuple:
        """input_ids (B, T): the masked batch; labels (B, T): the original id at each masked
        position, -100 elsewhere. Without labels nothing is replaced: the generator's logits
        (B, T, V) and the discriminator's logits on the input itself are returned, with no loss."""
        if input_ids is None or inputs_embeds is not None:
            raise ValueError("ElectraForPreTraining needs input_ids (it samples replacement ids), not inputs_embeds")
        check_batch_shape("input_ids", input_ids)  # before the labels are checked against it
        refuse_next_sentence_label(kwargs, "ELECTRA")
        config = self.config
        segments = dict(attention_mask=attention_mask, token_type_ids=token_type_ids, position_ids=position_ids)
        selected = None if labels is None else labels != IGNORE_INDEX
        if labels is not None:
            check_label_shape(labels, input_ids.shape, "labels")
        if selected is None or not bool(selected.any()):
            generator_states = self.generator(input_ids, **segments, return_dict=True).last_hidden_state
            prediction_logits = self.generator_mlm_head(generator_states)
            corrupted, discriminator_labels = input_ids, None if labels is None else torch.zeros_like(labels)
            # No masked position: nothing to predict or replace. The zero keeps the generator in the
            # graph, so every parameter gets a (zero) gradient, as data-parallel training expects.
            mlm_loss = None if labels is None else prediction_logits.sum() * 0.0
        else:
            # The generator's last layer and decoder run at the masked positions only (a causal
            # stack computes every position, BatchLayout.plan: its decoder reads the masked ones).
            read = None if config.is_decoder else selected_positions(selected)
            positions = {} if read is None else {"output_positions": read[0], "output_positions_mask": read[1]}
            generator_out = self.generator(input_ids, **segments, **positions, return_dict=True)
            mlm_loss, prediction_logits = masked_lm_loss(
                self.generator_mlm_head,
                generator_out.last_hidden_state,
                labels if read is None else self._labels_at(labels, read),
                config.vocab_size,
                sparse=True,
            )
            original = torch.where(selected, labels, input_ids)
            corrupted = original.clone()
            corrupted[selected] = gumbel_max_sample(prediction_logits, config.sampling_temperature)
            discriminator_labels = (corrupted != original).long()
        out = self._encode(
            corrupted, attention_mask, token_type_ids, position_ids, None, output_attentions, output_hidden_states
        )
        logits = self.discriminator_predictions(out.last_hidden_state)
        loss = discriminator_loss = None
        if labels is not None:
            discriminator_loss = replaced_token_detection_loss(logits, discriminator_labels, attention_mask)
            loss = config.generator_weight * mlm_loss + config.discriminator_weight * discriminator_loss
        return self._finish(
            ElectraForPreTrainingOutput,
            return_dict,
            loss=loss,
            mlm_loss=mlm_loss,
            discriminator_loss=discriminator_loss,
            prediction_logits=prediction_logits,
            logits=logits,
            discriminator_labels=discriminator_labels,
            corrupted_input_ids=corrupted,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )


__all__ = [
    "ElectraPreTrainedModel",
    "ElectraModel",
    "ElectraForPreTraining",
    "ElectraForPreTrainingOutput",
    "ElectraForReplacedTokenDetection",
    "ElectraForMaskedLM",
    "ElectraForSequenceClassification",
    "ElectraForTokenClassification",
    "ElectraForQuestionAnswering",
    "ElectraForMultipleChoice",
    "gumbel_max_sample",
]
