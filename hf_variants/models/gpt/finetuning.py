"""GPT-1's fine-tuning (Radford et al. 2018, sec. 3.2-3.3): task inputs as one token sequence
delimited by [START] / [DELIM] / [EXTRACT], a linear head on the final state of [EXTRACT], and the
language-modelling loss kept as an auxiliary objective: L3 = L2 (task) + lambda * L1 (LM), lambda 0.5.

:class:`GPTDoubleHeadsModel` has transformers' GPT2DoubleHeadsModel / OpenAIGPTDoubleHeadsModel
weights and outputs (``logits``, ``mc_logits``, ``lm_loss``, ``mc_loss``); its ``loss`` is the
paper's combination, what Trainer minimises. :func:`format_gpt1_inputs` builds the inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import GenerationMixin
from transformers.cache_utils import Cache
from transformers.modeling_outputs import ModelOutput

from ...modules.cache import output_cache, with_cache
from ...modules.dropout import Dropout
from ...modules.heads import causal_lm_loss, classifier_dropout, make_vocabulary_decoder, multiple_choice_loss
from ...modules.inputs import pick_cache
from ...modules.padding import gather_positions
from ...modules.token_ids import CheckedGenerationMixin
from ...modules.tracing import is_tracing
from .modeling_gpt import GPTModel, GPTPreTrainedModel, check_left_padded_prompts


@dataclass
class GPTDoubleHeadsOutput(ModelOutput):
    """loss = mc_loss + lm_loss_weight * lm_loss (either part alone when only its labels are given);
    logits (B, C, T, V); mc_logits (B, C)."""

    loss: torch.Tensor | None = None
    lm_loss: torch.Tensor | None = None
    mc_loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    mc_logits: torch.Tensor | None = None
    past_key_values: Cache | None = None  # the cache, under transformers < 5.24's name
    cache: Cache | None = None  # the cache, under transformers >= 5.24's name (modules/cache.py)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class ChoiceScore(nn.Module):
    """dropout -> linear(H, 1) on the [EXTRACT] state: (..., H) -> (...)."""

    def __init__(self, hidden_size: int, dropout: float) -> None:
        super().__init__()
        self.dropout = Dropout(dropout)
        self.out_proj = nn.Linear(hidden_size, 1)

    def forward(self, summary: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.dropout(summary)).squeeze(-1)


class GPTDoubleHeadsModel(GPTPreTrainedModel, CheckedGenerationMixin, GenerationMixin):
    """LM head (tied) + a multiple-choice / classification head on [EXTRACT].

    Inputs (B, C, T): C candidate sequences per example (C = 1 for classification with one
    sequence: then score with ``num_labels`` via one row per class, or use
    :class:`~hf_variants.GPTForSequenceClassification`). Like transformers' double-heads models it
    also takes plain (B, T) sequences (logits (B, T, V), mc_logits (B,)), keeps a cache and
    generates with the LM head through ``generate()``.
    """

    _tied_weights_keys = {"lm_head.weight": "transformer.embeddings.word_embeddings.weight"}

    def __init__(self, config) -> None:
        super().__init__(config)
        self.transformer = GPTModel(config)
        self.lm_head = make_vocabulary_decoder(
            config.hidden_size, config.vocab_size, bias=False, cpu_kernel=config.padding_free
        )
        self.multiple_choice_head = ChoiceScore(config.hidden_size, classifier_dropout(config))
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def check_prompts(self, attention_mask: torch.Tensor | None) -> None:
        """Called by ``generate()`` (CheckedGenerationMixin): refuses right-padded prompts (:func:`check_left_padded_prompts`)."""
        check_left_padded_prompts(attention_mask)

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        mc_token_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        mc_labels: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int = 0,
        cache: Cache | None = None,
        **kwargs,
    ) -> GPTDoubleHeadsOutput | tuple:
        """Args:
            input_ids / attention_mask / token_type_ids / position_ids: (B, C, T), or (B, T) for
                one sequence per example (generation).
            mc_token_ids: (B, C) (or (B,)) position of [EXTRACT] in each candidate (default: the last, T - 1).
            labels: (B, C, T) (or (B, T)) LM targets (usually the ids, -100 on padding); shifted inside.
            mc_labels: (B,) index of the right candidate (3-D inputs only).
            cache / past_key_values, use_cache: the decoder's cache, as GPTLMHeadModel's.
            logits_to_keep: k > 0 computes LM logits for the last k positions only (generation).
        Returns:
            GPTDoubleHeadsOutput: logits (B, C, T, V) and mc_logits (B, C); (B, T, V) and (B,) for 2-D inputs.
        """
        past_key_values = pick_cache(cache, past_key_values, kwargs)
        reference = input_ids if input_ids is not None else inputs_embeds
        token_dims = 1 if input_ids is not None else 2  # trailing dims of one position: () or (H,)
        if reference is None or reference.dim() not in (1 + token_dims, 2 + token_dims):
            raise ValueError("double-heads inputs must have shape (batch, num_choices, seq_len) or (batch, seq_len)")
        has_choices = reference.dim() == 2 + token_dims
        if has_choices:
            batch, choices, length = reference.shape[:3]
        else:
            (batch, length), choices = reference.shape[:2], 1

        def flat(tensor):
            # (B, C, T, ...) -> (B*C, T, ...). A tensor of another shape (a mask without its batch
            # dim) is flattened as far as it goes, and the backbone names its shape in a ValueError.
            return None if tensor is None or not has_choices else tensor.reshape(-1, *tensor.shape[2:])

        def rows(tensor):  # (B, C, ...) -> (B*C, ...); (B, ...) unchanged
            return flat(tensor) if has_choices else tensor

        if labels is not None and use_cache is None and past_key_values is None:
            use_cache = False
        out = self.transformer(
            input_ids=rows(input_ids),
            attention_mask=rows(attention_mask),
            token_type_ids=rows(token_type_ids),
            position_ids=rows(position_ids),
            inputs_embeds=rows(inputs_embeds),
            cache=past_key_values,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            cache_position=kwargs.get("cache_position"),
        )
        hidden_states = out.last_hidden_state  # (B*C, T, H)
        expected = (batch, choices) if has_choices else (batch,)
        if mc_token_ids is None:
            mc_token_ids = torch.full(expected, length - 1, dtype=torch.long, device=reference.device)
        if tuple(mc_token_ids.shape) != expected:
            raise ValueError(f"mc_token_ids has shape {tuple(mc_token_ids.shape)}, expected {expected}")
        mc_token_ids = mc_token_ids.reshape(batch, choices)
        if not is_tracing() and bool((mc_token_ids < 0).any() | (mc_token_ids >= length).any()):
            raise ValueError(f"mc_token_ids must be positions in [0, {length})")
        extract = gather_positions(hidden_states, mc_token_ids.reshape(-1, 1))[:, 0]
        mc_logits = self.multiple_choice_head(extract).view(batch, choices)
        if logits_to_keep and labels is not None:
            raise ValueError("logits_to_keep cannot be combined with labels (the loss needs every position)")
        logits = self.lm_head(hidden_states[:, -logits_to_keep:] if logits_to_keep else hidden_states)
        lm_loss = causal_lm_loss(logits, rows(labels)) if labels is not None else None
        if mc_labels is not None and not has_choices:
            raise ValueError("mc_labels need (batch, num_choices, seq_len) inputs")
        mc_loss = multiple_choice_loss(mc_logits, mc_labels) if mc_labels is not None else None
        parts = [
            part
            for part in (mc_loss, None if lm_loss is None else self.config.lm_loss_weight * lm_loss)
            if part is not None
        ]
        output = GPTDoubleHeadsOutput(
            loss=sum(parts) if parts else None,
            lm_loss=lm_loss,
            mc_loss=mc_loss,
            logits=logits.view(batch, choices, logits.shape[1], -1) if has_choices else logits,
            mc_logits=mc_logits if has_choices else mc_logits[:, 0],
            hidden_states=out.hidden_states,
            attentions=out.attentions,
            **with_cache(output_cache(out)),
        )
        return output if return_dict is not False else output.to_tuple()


def format_gpt1_inputs(
    candidates: list[list[list[int]]], start_id: int, delimiter_id: int, extract_id: int, pad_id: int
) -> dict[str, torch.Tensor]:
    """GPT-1's input transformations (Figure 1): each candidate is a list of token-id segments,
    joined as ``[START] s1 [DELIM] s2 ... [EXTRACT]``:

    - classification: one candidate of one segment, ``[[text]]``;
    - entailment: ``[[premise, hypothesis]]``;
    - similarity: both orders, ``[[a, b], [b, a]]`` (the paper adds the two states; here, two rows);
    - multiple choice / QA: ``[[context, answer_1], [context, answer_2], ...]``.

    Returns input_ids / attention_mask (1, C, T) right-padded with ``pad_id``, mc_token_ids (1, C)
    (the [EXTRACT] positions) and labels (1, C, T) (the ids, -100 on padding) for the auxiliary LM loss.
    Stack several examples' outputs (same C) along dim 0 after padding them to one T.
    """
    if not candidates or any(not segments for segments in candidates):
        raise ValueError("give at least one candidate, each a non-empty list of token-id segments")
    rows = []
    for segments in candidates:
        row = [start_id]
        for index, segment in enumerate(segments):
            row += ([delimiter_id] if index else []) + list(segment)
        rows.append(row + [extract_id])
    length = max(len(row) for row in rows)
    ids = torch.full((1, len(rows), length), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for index, row in enumerate(rows):
        ids[0, index, : len(row)] = torch.tensor(row)
        mask[0, index, : len(row)] = 1
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "mc_token_ids": torch.tensor([[len(row) - 1 for row in rows]]),
        "labels": ids.masked_fill(mask == 0, -100),
    }


__all__ = ["GPTDoubleHeadsModel", "GPTDoubleHeadsOutput", "ChoiceScore", "format_gpt1_inputs"]
