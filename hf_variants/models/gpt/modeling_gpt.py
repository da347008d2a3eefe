"""GPT (GPT-1 and GPT-2): a causal decoder on the shared blocks.

What is GPT's own, on top of ``hf_variants.modules``:

- the embeddings: token + learned position, no LayerNorm (GPT-2 normalises inside the pre-LN
  layers, GPT-1 after each sub-block), no padding row in the word table (GPT-2 usually pads with
  ``<|endoftext|>``, which must keep its embedding and gradient), and ``token_type_ids`` looked up
  in the word table as transformers does (:class:`GPTEmbeddings`);
- positions 0..T-1 when none are passed, whatever the padding (transformers' GPT-2 / OpenAI GPT);
  ``generate()`` passes positions counted over real tokens, so left-padded rows generate as if alone;
- GPT-2's scaled initialisation of the residual projections (std / sqrt(2 L));
- sequence classification on each row's last token that is not ``pad_token_id``, read from the
  ids as transformers does, through a bias-free ``score`` projection.

The layer itself is the shared one: ``pre_layer_norm=True`` gives GPT-2's block and final
LayerNorm, ``False`` GPT-1's post-LN block (``x = LN(x + Attn(x)); x = LN(x + FFN(x))``).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import GenerationMixin
from transformers import initialization as init

from ...modules.decoder import DecoderBackbone
from ...modules.embeddings import TransformerEmbeddings, check_ids_or_embeds, check_index_range
from ...modules.encoder import LayerStack
from ...modules.generation import DecoderForCausalLM
from ...modules.padding import gather_positions
from ...modules.task_models import (
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
)
from ..modeling_base import VariantPreTrainedModel
from .configuration_gpt import GPTConfig


class GPTEmbeddings(TransformerEmbeddings):
    """word + learned position (+ the word embeddings of ``token_type_ids``) -> dropout.
    (B, T) ids -> (B, T, H); the packed (N,) layout gives (N, H)."""

    def check_inputs(self, input_ids, token_type_ids, position_ids, sequence_length) -> None:
        super().check_inputs(input_ids, None, position_ids, sequence_length)
        if token_type_ids is not None:
            check_index_range(token_type_ids, self.word_embeddings.num_embeddings, "token_type_ids", "vocab_size")

    def forward(self, input_ids, position_ids, token_type_ids=None, inputs_embeds=None) -> torch.Tensor:
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        embeddings = embeddings + self.position_embeddings(position_ids)
        if token_type_ids is not None:
            embeddings = embeddings + self.word_embeddings(token_type_ids)
        return self.dropout(embeddings)


class GPTPreTrainedModel(VariantPreTrainedModel):
    config_class = GPTConfig
    base_model_prefix = "transformer"  # transformers' name for GPT-2's and OpenAI GPT's backbone

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        # GPT-2: the projections that add into the residual stream start smaller, std / sqrt(2 L),
        # so the residual's variance does not grow with depth (GPTModel.build_layers marks them).
        if getattr(module, "is_residual_projection", False) and self.config.scale_residual_init:
            std = self.config.initializer_range / math.sqrt(2 * self.config.num_hidden_layers)
            init.normal_(module.weight, mean=0.0, std=std)


class GPTModel(DecoderBackbone, GPTPreTrainedModel):
    """The bare decoder: last_hidden_state (B, T, H) after the final LayerNorm (GPT-2) or the last
    post-LN block (GPT-1), and the cache (``past_key_values``)."""

    positions_from_attention_mask = False  # 0..T-1 after the cache unless position_ids are given

    def build_embeddings(self, config: GPTConfig) -> GPTEmbeddings:
        kwargs = TransformerEmbeddings.config_kwargs(config)
        return GPTEmbeddings(**{**kwargs, "pad_token_id": None}, layer_norm=False)

    def build_layers(self, config: GPTConfig) -> LayerStack:
        stack = super().build_layers(config)
        for layer in stack.layers:
            # With layer_sharing "attention" or "ffn", later layers hold None and reuse layer 0's.
            if layer.attention is not None:
                layer.attention.out.is_residual_projection = True
            if layer.ffn is not None:
                layer.ffn.down.is_residual_projection = True
        return stack


class GPTLMHeadModel(DecoderForCausalLM, GPTPreTrainedModel, GenerationMixin):
    """Causal LM with the output tied to the word embeddings; generates through transformers' generate()."""

    backbone_class = GPTModel


class _WithoutCache:
    """Task heads that read one forward pass keep no cache (config.use_cache serves generation)."""

    def _encode(self, *args, **kwargs):
        kwargs.setdefault("use_cache", False)
        return super()._encode(*args, **kwargs)


class GPTScore(nn.Module):
    """transformers' bias-free ``score`` projection of the summary token: (B, H) -> (B, num_labels).
    No dropout (as transformers' GPT-2 / OpenAI GPT classifiers); ``dropout`` is the classifier
    interface's argument, unused."""

    def __init__(self, hidden_size: int, num_labels: int, dropout: float) -> None:
        super().__init__()
        self.out_proj = nn.Linear(hidden_size, num_labels, bias=False)

    def forward(self, summary: torch.Tensor, pooled: torch.Tensor | None) -> torch.Tensor:
        return self.out_proj(summary)


def last_token_positions(
    input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None, pad_token_id: int | None
) -> torch.Tensor:
    """(B, 1) position of each row's last token that is not ``pad_token_id`` (transformers' rule:
    the ids decide, not the attention mask); the last position when there are no ids to look at."""
    reference = input_ids if input_ids is not None else inputs_embeds
    batch, length = check_ids_or_embeds(input_ids, inputs_embeds)
    if pad_token_id is None and batch != 1:
        raise ValueError(
            "GPT sequence classification reads the last non-padding token: set config.pad_token_id for batches > 1"
        )
    if input_ids is None or pad_token_id is None:
        return torch.full((batch, 1), length - 1, dtype=torch.long, device=reference.device)
    ramp = torch.arange(1, length + 1, device=input_ids.device)
    return ((input_ids != pad_token_id) * ramp).argmax(dim=-1, keepdim=True)


class GPTForSequenceClassification(_WithoutCache, EncoderForSequenceClassification, GPTPreTrainedModel):
    """Logits (B, num_labels) from the last real token (see :func:`last_token_positions`)."""

    backbone_class = GPTModel
    uses_pooler = False
    classifier_class = GPTScore

    def head_reads(
        self, input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The last layer computes the summary position alone (unless all states are asked for)."""
        if input_ids is None and inputs_embeds is None:
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        positions = last_token_positions(input_ids, inputs_embeds, self.config.pad_token_id)
        return positions, torch.ones_like(positions, dtype=torch.bool)

    def head_logits(
        self, out, attention_mask: torch.Tensor | None, read: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        hidden_states = out.last_hidden_state
        summary = hidden_states[:, 0] if hidden_states.shape[1] == 1 else gather_positions(hidden_states, read[0])[:, 0]
        return self.classifier(summary, None)


class GPTForTokenClassification(_WithoutCache, EncoderForTokenClassification, GPTPreTrainedModel):
    backbone_class = GPTModel


class GPTForQuestionAnswering(_WithoutCache, EncoderForQuestionAnswering, GPTPreTrainedModel):
    backbone_class = GPTModel


__all__ = [
    "GPTPreTrainedModel",
    "GPTEmbeddings",
    "GPTModel",
    "GPTLMHeadModel",
    "GPTForSequenceClassification",
    "GPTForTokenClassification",
    "GPTForQuestionAnswering",
    "last_token_positions",
]
