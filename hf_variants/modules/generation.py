"""Task bases that generate: causal LM (decoder-only) and seq2seq LM (encoder-decoder).

Both inherit transformers' ``GenerationMixin``, so ``model.generate(...)`` runs transformers' own
loop (greedy, sampling, beam search, ``max_new_tokens``, EOS stopping, left-padded batches) with
a ``DynamicCache`` / ``EncoderDecoderCache`` that the backbones read and extend; beams reorder the
cache through ``Cache.reorder_cache``. A variant declares::

    class XForCausalLM(DecoderForCausalLM, XPreTrainedModel, GenerationMixin):
        backbone_class = XModel                       # a DecoderBackbone class

    class XForConditionalGeneration(EncoderDecoderForSeq2SeqLM, XPreTrainedModel, GenerationMixin):
        backbone_class = XModel                       # an EncoderDecoderBackbone class

(``GenerationMixin`` last among the direct bases, transformers' convention: its remote-code
loading and ``can_generate()`` look for it there; the checks of ``CheckedGenerationMixin`` run
first, since it precedes ``GenerationMixin`` in the MRO.)

The output projection is tied to the word embeddings (``config.tie_word_embeddings``); variants
with a rescale before it (T5: d_model^-0.5) override :meth:`GenerativeTaskModel.compute_logits`.
Generation reads ``bos_token_id`` / ``eos_token_id`` / ``pad_token_id`` / ``decoder_start_token_id``
from the config, as transformers does.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.cache_utils import Cache
from transformers.modeling_outputs import BaseModelOutput, CausalLMOutputWithCrossAttentions, Seq2SeqLMOutput

from .cache import output_cache, with_cache

# The LM losses live with the other losses (heads.py); imported here too for this module's heads
# and for callers that import them from here.
from .heads import (
    IGNORE_INDEX,
    causal_lm_loss,
    finish_seq2seq,
    lm_loss,
    make_vocabulary_decoder,
    shift_tokens_right,
)
from .inputs import pick_cache
from .masks import targets_at_padding
from .token_ids import CheckedGenerationMixin, check_token_id


class GenerativeTaskModel(CheckedGenerationMixin):
    """Common plumbing of the two bases: the backbone under ``base_model_prefix``, an LM head tied to
    the word embeddings, and ``compute_logits``. ``generate()`` is transformers' own, after refusing
    special ids it would look up outside the vocabulary (see ``token_ids.py``)."""

    backbone_class: type
    label_smoothing: float = 0.0  # the original Transformer trains with 0.1

    @classmethod
    def can_generate(cls) -> bool:
        # transformers looks for GenerationMixin among a model's direct bases. The shipped heads
        # list it there too (transformers' convention, which its remote-code loading and
        # test_inherits_generation_mixin expect); this also covers a head built on these bases
        # without it (it gives the model its generation_config).
        return True

    def _build(self, config) -> None:
        if config.embedding_size not in (None, config.hidden_size):
            raise ValueError(
                f"the LM head is tied to (vocab_size, hidden_size) word embeddings; embedding_size="
                f"{config.embedding_size} != hidden_size={config.hidden_size} needs a head that projects back to E"
            )
        setattr(self, self.base_model_prefix, self.backbone_class(config))
        # Bias-free, as every tied LM output in the family. With the speed switch (config.padding_free),
        # TiedDecoder builds the weight's gradient contiguous so the tied embedding accumulates it in
        # place (see heads.py); without it, nn.Linear.
        self.lm_head = make_vocabulary_decoder(
            config.hidden_size, config.vocab_size, bias=False, cpu_kernel=config.padding_free
        )

    @property
    def backbone(self):
        return getattr(self, self.base_model_prefix)

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """(..., H) -> (..., V). Variants that rescale before a tied output override this."""
        return self.lm_head(hidden_states)

    @staticmethod
    def _finish(output_cls, return_dict: bool | None, **fields):
        output = output_cls(**fields)
        return output if return_dict is not False else output.to_tuple()


class DecoderForCausalLM(GenerativeTaskModel):
    """Causal language modelling: logits (B, T, V), loss = next-token cross-entropy with -100 ignored.

    Without labels the backbone keeps a cache by default (``config.use_cache``), as transformers'
    models do; with labels (training) it does not unless ``use_cache=True`` is passed, so training
    batches are free to run in the packed layout.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if getattr(cls, "base_model_prefix", ""):
            cls._tied_weights_keys = {"lm_head.weight": f"{cls.base_model_prefix}.embeddings.word_embeddings.weight"}

    def __init__(self, config) -> None:
        super().__init__(config)
        self._build(config)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        attention_bias: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> CausalLMOutputWithCrossAttentions | tuple:
        """Args as the decoder backbone, plus:
            labels: (B, T) target ids (usually the input ids), -100 where nothing is predicted; the
                shift happens inside (position t predicts labels[:, t + 1]).
            logits_to_keep: k > 0 computes logits for the last k positions only (generation reads
                the last one); a 1-D tensor selects positions. Not with labels.
            attention_bias: an extra additive (B, 1, T, T) bias, e.g. the block-diagonal mask of
                packed documents (masks.document_causal_bias); runs padded.
            document_ids: (B, T) packed documents, -1 on padding (DataCollatorForPackedCausalLM's
                column): the same block-diagonal attention without any mask, each document run
                as its own padding-free sequence (faster than ``attention_bias``).
            cache: the cache under the name transformers >= 5.24 passes (``past_key_values`` before).
            shift_labels (in kwargs): (B, T) targets already shifted (no shift inside); they replace
                ``labels`` for the loss, as in transformers' ``ForCausalLMLoss``.
        Returns:
            CausalLMOutputWithCrossAttentions: loss, logits (B, T or k, V), the cache, ...
        """
        past_key_values = pick_cache(cache, past_key_values, kwargs)
        if labels is not None and use_cache is None and past_key_values is None:
            use_cache = False
        if labels is not None and not (isinstance(logits_to_keep, int) and logits_to_keep == 0):
            raise ValueError("logits_to_keep cannot be combined with labels (the loss needs every position)")
        out = self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            cache=past_key_values,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            # A padding slot predicting a real target (left padding) is read where packed leaves zeros.
            reads_padding=targets_at_padding(labels, attention_mask, IGNORE_INDEX, shifted=True),
            attention_bias=attention_bias,
            document_ids=document_ids,
            cache_position=kwargs.get("cache_position"),
        )
        hidden_states = out.last_hidden_state
        if isinstance(logits_to_keep, int):
            if logits_to_keep > 0:
                hidden_states = hidden_states[:, -logits_to_keep:]
        else:
            hidden_states = hidden_states[:, logits_to_keep]
        logits = self.compute_logits(hidden_states)
        # shift_labels (B, T): targets already aligned with the logits (position t predicts
        # shift_labels[:, t]), what Trainer hands over under sequence/context parallelism, where the
        # shift must happen on the whole sequence before it is sharded. They take precedence over labels.
        shift_labels = kwargs.get("shift_labels")
        if shift_labels is not None:
            loss = lm_loss(logits, shift_labels, self.label_smoothing)
        else:
            loss = causal_lm_loss(logits, labels, self.label_smoothing) if labels is not None else None
        return self._finish(
            CausalLMOutputWithCrossAttentions,
            return_dict,
            loss=loss,
            logits=logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
            **with_cache(output_cache(out)),
        )


class EncoderDecoderForSeq2SeqLM(GenerativeTaskModel):
    """Sequence-to-sequence language modelling (translation, T5's text-to-text).

    labels (B, T): the target ids, -100 where nothing is predicted. Without ``decoder_input_ids``
    they are built from the labels as transformers does: shifted right behind
    ``config.decoder_start_token_id``, -100 replaced by the pad token.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        prefix = getattr(cls, "base_model_prefix", "")
        if prefix:
            source = f"{prefix}.encoder.embeddings.word_embeddings.weight"
            cls._tied_weights_keys = {
                "lm_head.weight": source,
                f"{prefix}.decoder.embeddings.word_embeddings.weight": source,
            }

    def __init__(self, config) -> None:
        super().__init__(config)
        self._build(config)
        self.post_init()

    def get_encoder(self, modality: str | None = None):
        return self.backbone.get_encoder()

    def get_decoder(self):
        return self.backbone.get_decoder()

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """Used by transformers' DataCollatorForSeq2Seq to build decoder_input_ids in the collator."""
        use = "decoder_input_ids are built from the labels with it"
        check_token_id("decoder_start_token_id", self.config.decoder_start_token_id, self.config.vocab_size, use)
        if bool((labels == IGNORE_INDEX).any()):  # ignored targets become padding inputs
            check_token_id("pad_token_id", self.config.pad_token_id, self.config.vocab_size, use)
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_position_ids: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput | tuple:
        """Args as the encoder-decoder backbone, plus ``labels`` (B, T). Returns Seq2SeqLMOutput:
        loss (mean token cross-entropy, ``label_smoothing`` applied), logits (B, T, V), the cache
        and the encoder output (reused by ``generate``). The cache comes as ``cache`` (transformers
        >= 5.24) or ``past_key_values``."""
        past_key_values = pick_cache(cache, past_key_values, kwargs)
        if labels is not None:
            if use_cache is None and past_key_values is None:
                use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        out = self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            decoder_position_ids=decoder_position_ids,
            encoder_outputs=encoder_outputs,
            cache=past_key_values,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            reads_padding=targets_at_padding(labels, decoder_attention_mask, IGNORE_INDEX),
            # the source's segments / positions go on to the encoder, which checks them
            # (and the decoder's cache_position, from transformers < 5.24, to the decoder, which checks it)
            **{
                name: kwargs[name]
                for name in ("token_type_ids", "position_ids", "cache_position")
                if kwargs.get(name) is not None
            },
        )
        logits = self.compute_logits(out.last_hidden_state)
        loss = lm_loss(logits, labels, self.label_smoothing) if labels is not None else None
        return finish_seq2seq(Seq2SeqLMOutput, return_dict, out, loss=loss, logits=logits)
