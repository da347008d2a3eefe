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
from transformers.cache_utils import Cache
from transformers.modeling_outputs import ModelOutput

from ...modules.dropout import Dropout
from ...modules.generation import causal_lm_loss
from ...modules.heads import TiedDecoder
from ...modules.padding import gather_positions
from ...modules.task_models import classifier_dropout, multiple_choice_loss
from ...modules.tracing import is_tracing
from .modeling_gpt import GPTModel, GPTPreTrainedModel


@dataclass
class GPTDoubleHeadsOutput(ModelOutput):
    """loss = mc_loss + lm_loss_weight * lm_loss (either part alone when only its labels are given);
    logits (B, C, T, V); mc_logits (B, C)."""

    loss: torch.Tensor | None = None
    lm_loss: torch.Tensor | None = None
    mc_loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    mc_logits: torch.Tensor | None = None
    past_key_values: Cache | None = None
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


class GPTDoubleHeadsModel(GPTPreTrainedModel):
    """LM head (tied) + a multiple-choice / classification head on [EXTRACT].

    Inputs (B, C, T): C candidate sequences per example (C = 1 for classification with one
    sequence: then score with ``num_labels`` via one row per class, or use
    :class:`~hf_variants.GPTForSequenceClassification`).
    """

    _tied_weights_keys = {"lm_head.weight": "transformer.embeddings.word_embeddings.weight"}

    def __init__(self, config) -> None:
        super().__init__(config)
        self.transformer = GPTModel(config)
        self.lm_head = TiedDecoder(config.hidden_size, config.vocab_size, bias=False)
        self.multiple_choice_head = ChoiceScore(config.hidden_size, classifier_dropout(config))
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

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
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> GPTDoubleHeadsOutput | tuple:
        """Args:
            input_ids / attention_mask / token_type_ids / position_ids: (B, C, T).
            mc_token_ids: (B, C) position of [EXTRACT] in each candidate (default: the last, T - 1).
            labels: (B, C, T) LM targets (usually the ids, -100 on padding); shifted inside.
            mc_labels: (B,) index of the right candidate.
        """
        reference = input_ids if input_ids is not None else inputs_embeds
        if reference is None or reference.dim() < 3:
            raise ValueError("double-heads inputs must have shape (batch, num_choices, seq_len)")
        batch, choices, length = reference.shape[:3]

        def flat(tensor):
            # (B, C, T, ...) -> (B*C, T, ...). A tensor of another shape (a mask without its batch
            # dim) is flattened as far as it goes, and the backbone names its shape in a ValueError.
            return None if tensor is None else tensor.reshape(-1, *tensor.shape[2:])

        out = self.transformer(
            input_ids=flat(input_ids), attention_mask=flat(attention_mask), token_type_ids=flat(token_type_ids),
            position_ids=flat(position_ids), inputs_embeds=flat(inputs_embeds), use_cache=False,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = out.last_hidden_state  # (B*C, T, H)
        if mc_token_ids is None:
            mc_token_ids = torch.full((batch, choices), length - 1, dtype=torch.long, device=reference.device)
        if tuple(mc_token_ids.shape) != (batch, choices):
            raise ValueError(f"mc_token_ids has shape {tuple(mc_token_ids.shape)}, expected {(batch, choices)}")
        if not is_tracing() and bool((mc_token_ids < 0).any() | (mc_token_ids >= length).any()):
            raise ValueError(f"mc_token_ids must be positions in [0, {length})")
        extract = gather_positions(hidden_states, mc_token_ids.reshape(-1, 1))[:, 0]
        mc_logits = self.multiple_choice_head(extract).view(batch, choices)
        logits = self.lm_head(hidden_states)
        lm_loss = causal_lm_loss(logits, flat(labels)) if labels is not None else None
        mc_loss = multiple_choice_loss(mc_logits, mc_labels) if mc_labels is not None else None
        parts = [part for part in (mc_loss, None if lm_loss is None else self.config.lm_loss_weight * lm_loss) if part is not None]
        output = GPTDoubleHeadsOutput(
            loss=sum(parts) if parts else None, lm_loss=lm_loss, mc_loss=mc_loss,
            logits=logits.view(batch, choices, length, -1), mc_logits=mc_logits,
            hidden_states=out.hidden_states, attentions=out.attentions,
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
