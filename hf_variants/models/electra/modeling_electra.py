"""ELECTRA (Clark et al. 2020): BERT's encoder, pretrained by replaced token detection (RTD) against
a small masked-LM generator instead of by masked language modelling.

ELECTRA = BERT + what it adds, as transformers' ``modular_roberta`` builds RoBERTa: the embeddings,
self-attention, layers, stack, attention backends and the padding-free fast path are BERT's
(:mod:`hf_variants.models.bert.modeling_bert`). What is ELECTRA's own, top to bottom:

- **factorized embeddings**: tables of width E (``embedding_size``, Small: 128) projected to the
  encoder's H (256) when E != H; BERT's embeddings end in that projection
  (``BertEmbeddings.projection``; transformers' ``electra.embeddings_project``), see
  :class:`ElectraModel`. No pooler: ELECTRA's sequence heads read the first token directly;
- **the discriminator's head**: one "was this token replaced?" logit per position
  (:class:`ReplacedTokenDetectionHead`) and its loss, BCE over the real tokens
  (:func:`replaced_token_detection_loss`), alone in :class:`ElectraForReplacedTokenDetection`
  (transformers' ``ElectraForPreTraining``);
- **the generator**: a small masked-LM encoder (width ``generator_hidden_size`` x H,
  ``config.generator_config()``) with BERT's MLM head, alone in :class:`ElectraForMaskedLM`;
- **the pair, trained jointly** (:class:`ElectraForPreTraining`): generator and discriminator share
  their embedding tables (:data:`SHARED_EMBEDDING_MODULES`); the generator's predictions at the
  masked positions are sampled (:func:`gumbel_max_sample`) to corrupt the input; the discriminator
  labels each token of the corrupted input; loss = MLM + lambda x RTD (lambda = 50);
- the fine-tuning heads that read a summary: sequence classification and multiple choice read the
  first token through dense -> GELU (:class:`ElectraClassificationHead`), not BERT's tanh pooler. The
  masked LM, token classification and QA heads are BERT's classes on ELECTRA's encoder
  (:meth:`ElectraPreTrainedModel.build_encoder` puts it under ``electra``, transformers' name, which
  the state-dict keys carry), as RoBERTa's heads are BERT's under ``roberta``.

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
from transformers.cache_utils import Cache
from transformers.modeling_outputs import (
    MultipleChoiceModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import ModelOutput

from ...modules.fast_path import HeadReads, fast_path_enabled
from ...modules.heads import (
    IGNORE_INDEX,
    MaskedLMHead,
    SummaryClassifier,
    check_label_shape,
    choice_count,
    classifier_dropout,
    flatten_choices,
    masked_lm_loss,
    multiple_choice_loss,
    refuse_next_sentence_label,
    sequence_classification_loss,
    summarize,
)
from ...modules.inputs import check_batch_shape
from ...modules.masks import targets_at_padding
from ...modules.padding import selected_positions
from ..bert.modeling_bert import (
    BertForMaskedLM,
    BertForQuestionAnswering,
    BertForTokenClassification,
    BertModel,
    BertPreTrainedModel,
    _return,
)
from .configuration_electra import ElectraConfig


# ----------------------------------------------------------------------------- model
class ElectraPreTrainedModel(BertPreTrainedModel):
    """BERT's, with ELECTRA's config and transformers' ``electra`` prefix. Every ELECTRA class
    names ``config_class`` itself: transformers writes the config class into each subclass's own
    namespace, so a BERT class earlier in the MRO would otherwise win."""

    config_class = ElectraConfig
    base_model_prefix = "electra"

    def build_encoder(self, config: ElectraConfig, add_pooling_layer: bool = True) -> None:
        """BERT's heads run ``self.electra`` (an :class:`ElectraModel`) in place of ``self.bert``;
        it has no pooler whatever ``add_pooling_layer`` asks (the heads that read one are ELECTRA's own)."""
        self.electra = ElectraModel(config)


class ElectraModel(BertModel, ElectraPreTrainedModel):
    """The bare encoder: the discriminator, or at the generator's sizes the generator. BERT's
    embeddings -> BERT's layers, with no pooler (ELECTRA's sequence heads read the first token).

    The factorized embedding is ELECTRA's: word, position and segment tables of width E
    (``config.embedding_size``), LayerNorm and dropout at width E, then a Linear E -> H when E != H
    (``embeddings.projection``, transformers' ``embeddings_project``; ``BertEmbeddings.forward``'s last
    line). The fast path runs the projection packed with the rest of the embeddings."""

    config_class = ElectraConfig

    def __init__(self, config: ElectraConfig) -> None:
        super().__init__(config, add_pooling_layer=False)


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


class ElectraForReplacedTokenDetection(ElectraPreTrainedModel):
    """The discriminator with its RTD head: transformers' ``ElectraForPreTraining`` (same weights,
    same logits). Logits (B, T); labels (B, T) 1 where a token was replaced."""

    config_class = ElectraConfig

    def __init__(self, config: ElectraConfig) -> None:
        super().__init__(config)
        self.electra = ElectraModel(config)
        self.discriminator_predictions = ReplacedTokenDetectionHead(config.hidden_size, config.hidden_act)
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
        """labels: (B, T) 1 = replaced, 0 = original, -100 = ignored; the loss averages over the
        real tokens."""
        # A target on a padding position is read from the state computed there: only the padded
        # layout computes it (asked on the fast path only: reading the labels syncs the device).
        reference = input_ids if input_ids is not None else inputs_embeds
        fast = reference is not None and fast_path_enabled(self.config, reference.device)
        reads = HeadReads(padding=fast and targets_at_padding(labels, attention_mask, IGNORE_INDEX))
        outputs = self.electra(
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
        logits = self.discriminator_predictions(outputs.last_hidden_state)
        loss = replaced_token_detection_loss(logits, labels, attention_mask) if labels is not None else None
        return _return(
            TokenClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


# ----------------------------------------------------------------------------- the generator alone
class ElectraForMaskedLM(BertForMaskedLM, ElectraPreTrainedModel):
    """The generator as a masked LM (transformers' ``ElectraForMaskedLM``): BERT's masked LM on
    ``self.electra``, its MLM head dense (H -> E) -> activation -> LayerNorm -> decoder tied to the
    word embeddings (own bias), and BERT's sparse prediction (``config.sparse_prediction``: logits
    (num_masked, V) at the masked positions)."""

    config_class = ElectraConfig
    _tied_weights_keys = {"mlm_head.decoder.weight": "electra.embeddings.word_embeddings.weight"}


# ----------------------------------------------------------------------------- joint pretraining
def gumbel_max_sample(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """One token per row from softmax(logits / temperature), as argmax(logits / temperature + g)
    with g i.i.d. Gumbel(0, 1) (the Gumbel-max trick the paper's code uses). (N, V) -> (N,) ids.
    Not differentiable: the RTD loss never reaches the generator through its samples. The noise is
    drawn in row-major order whatever the logits' strides (``rand_like`` would follow them: the
    eval-mode decoder returns transposed strides), so equal logits and seed give equal samples."""
    with torch.no_grad():
        scaled = logits.detach().float() / temperature
        uniform = torch.rand(scaled.shape, dtype=scaled.dtype, device=scaled.device)
        uniform.clamp_(min=torch.finfo(torch.float32).tiny)
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


class ElectraForPreTraining(ElectraPreTrainedModel):
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

    config_class = ElectraConfig
    _tied_weights_keys = {"generator_mlm_head.decoder.weight": "electra.embeddings.word_embeddings.weight"}

    def __init__(self, config: ElectraConfig) -> None:
        super().__init__(config)
        # The discriminator: the encoder every fine-tuning head reads, and its RTD head.
        self.electra = ElectraModel(config)
        self.discriminator_predictions = ReplacedTokenDetectionHead(config.hidden_size, config.hidden_act)
        # The generator: a narrower encoder of the same design with BERT's MLM head, decoding to E.
        generator_config = config.generator_config()
        self.generator = ElectraModel(generator_config)
        self.generator_mlm_head = MaskedLMHead(
            generator_config.hidden_size,
            config.vocab_size,
            generator_config.hidden_act,
            config.layer_norm_eps,
            generator_config.embedding_size,  # E, tied to the shared word embeddings
            cpu_kernel=config.padding_free,  # the speed plug-in's TiedDecoder, else nn.Linear
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

    # ------------------------------------------------------------------ the shared embeddings
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
        if self.generator.config.padding_free != config.padding_free:  # its config is derived from ours:
            self.generator.config.padding_free = config.padding_free  # the speed switch selects both paths
        if labels is not None:
            check_label_shape(labels, input_ids.shape, "labels")
        selected = None if labels is None else labels != IGNORE_INDEX  # (B, T) the masked positions
        shared_inputs = (attention_mask, token_type_ids, position_ids)  # both networks read them

        if selected is None or not bool(selected.any()):
            # Nothing masked: nothing to predict or replace; the discriminator reads the input itself.
            generator_states = self.generator(input_ids, *shared_inputs, return_dict=True).last_hidden_state
            prediction_logits = self.generator_mlm_head(generator_states)  # (B, T, V)
            corrupted, discriminator_labels = input_ids, None if labels is None else torch.zeros_like(labels)
            # The zero keeps the generator in the graph, so every parameter gets a (zero) gradient,
            # as data-parallel training expects.
            mlm_loss = None if labels is None else prediction_logits.sum() * 0.0
        else:
            # 1. The generator: masked LM, its last layer and decoder at the masked positions only
            #    (a causal stack computes every position: its decoder reads the masked ones).
            read = None if config.is_decoder else selected_positions(selected)  # ((B, M), (B, M) real)
            generator = self.generator(input_ids, *shared_inputs, return_dict=True, reads=HeadReads(positions=read))
            generator_states = generator.last_hidden_state
            generator_labels = labels if read is None else labels.gather(1, read[0]).masked_fill(~read[1], IGNORE_INDEX)
            # generator_states (B, M, h) at the positions read (or (B, T, h)) -> prediction_logits
            # (num_masked, V), in the row-major order of `selected`.
            mlm_loss, prediction_logits = masked_lm_loss(
                self.generator_mlm_head, generator_states, generator_labels, config.vocab_size, sparse=True
            )
            # 2. Corrupt: the originals, with a sample of the generator's softmax at each masked position.
            original = torch.where(selected, labels, input_ids)
            corrupted = original.clone()
            corrupted[selected] = gumbel_max_sample(prediction_logits, config.sampling_temperature)
            # 3. A correct guess counts as original.
            discriminator_labels = (corrupted != original).long()

        # 4. The discriminator: one replaced/original logit per token of the corrupted input.
        outputs = self.electra(
            corrupted, *shared_inputs, None, None, output_attentions, output_hidden_states, return_dict=True
        )
        logits = self.discriminator_predictions(outputs.last_hidden_state)  # (B, T)
        # 5. The joint loss: MLM + lambda x RTD (the RTD loss is ~50x smaller: lambda = 50).
        loss = discriminator_loss = None
        if labels is not None:
            discriminator_loss = replaced_token_detection_loss(logits, discriminator_labels, attention_mask)
            loss = config.generator_weight * mlm_loss + config.discriminator_weight * discriminator_loss
        return _return(
            ElectraForPreTrainingOutput(
                loss=loss,
                logits=logits,
                mlm_loss=mlm_loss,
                discriminator_loss=discriminator_loss,
                prediction_logits=prediction_logits,
                discriminator_labels=discriminator_labels,
                corrupted_input_ids=corrupted,
                hidden_states=outputs.hidden_states,
                attentions=outputs.attentions,
            ),
            return_dict,
        )


# ----------------------------------------------------------------------------- fine-tuning heads
# What ELECTRA changes: sequence classification and multiple choice read the first token through
# dense -> GELU (no pooler). Token classification and QA are BERT's heads on ``self.electra``.
class ElectraClassificationHead(SummaryClassifier):
    """transformers' ElectraClassificationHead: dropout, dense, GELU (not BERT's tanh), dropout,
    out_proj, on the first token."""

    def __init__(self, hidden_size: int, num_labels: int, dropout: float, cpu_dropout: bool = True) -> None:
        super().__init__(hidden_size, num_labels, dropout, activation="gelu", cpu_dropout=cpu_dropout)


class ElectraForSequenceClassification(ElectraPreTrainedModel):
    """Single sentences or pairs (NLI): :class:`ElectraClassificationHead` on the first token (no
    pooler). labels: (B,) class ids, (B,) floats for regression (num_labels == 1), or
    (B, num_labels) multi-hot (problem_type). Logits (B, num_labels)."""

    config_class = ElectraConfig
    reads_summary_only = True  # the head reads the summary token alone

    def __init__(self, config: ElectraConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.electra = ElectraModel(config)
        self.classifier = ElectraClassificationHead(
            config.hidden_size, config.num_labels, classifier_dropout(config), config.padding_free
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
        outputs = self.electra(
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
        summary = summarize(outputs.last_hidden_state, self.config.summary_type, attention_mask)  # (B, H)
        logits = self.classifier(summary, None)
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return _return(
            SequenceClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
        )


class ElectraForTokenClassification(BertForTokenClassification, ElectraPreTrainedModel):
    """BERT's per-token classifier (dropout + linear on every position) on ``self.electra``."""

    config_class = ElectraConfig


class ElectraForQuestionAnswering(BertForQuestionAnswering, ElectraPreTrainedModel):
    """BERT's extractive QA head on ``self.electra``: start/end logits (B, T) each; the span softmax
    runs over all T positions, padding included, as transformers'."""

    config_class = ElectraConfig


class ElectraForMultipleChoice(ElectraPreTrainedModel):
    """transformers' sequence summary (first token -> dense -> GELU -> dropout of
    ``summary_last_dropout``, none before the dense) followed by a linear scorer per choice.
    Inputs (B, C, T); logits (B, C); labels (B,)."""

    config_class = ElectraConfig
    reads_summary_only = True

    def __init__(self, config: ElectraConfig) -> None:
        super().__init__(config)
        self.electra = ElectraModel(config)
        self.classifier = SummaryClassifier(
            config.hidden_size,
            1,
            config.summary_last_dropout,
            activation="gelu",
            input_dropout=0.0,
            cpu_dropout=config.padding_free,
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
    ) -> MultipleChoiceModelOutput | tuple:
        """All inputs (B, C, T) (inputs_embeds (B, C, T, E)); labels (B,) the right choice."""
        num_choices = choice_count(input_ids, inputs_embeds)

        flat_mask = flatten_choices(attention_mask)
        outputs = self.electra(
            flatten_choices(input_ids),
            flat_mask,
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
        summary = summarize(outputs.last_hidden_state, self.config.summary_type, flat_mask)  # (B * C, H)
        logits = self.classifier(summary, None).view(-1, num_choices)
        loss = multiple_choice_loss(logits, labels) if labels is not None else None
        return _return(
            MultipleChoiceModelOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
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
