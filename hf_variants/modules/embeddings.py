"""What the variants' input embeddings share: the position schemes a config may name, the fixed
sinusoidal table (Vaswani et al. 2017, sec. 3.5) and the word-table-only embedding step of the
relative-position models (the input checks are in ``inputs.py``). Each variant writes its
embeddings module in its own modeling file (``BertEmbeddings``, ...)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .inputs import check_batch_shape, check_index_range, check_not_empty

POSITION_EMBEDDING_TYPES = ("learned", "sinusoidal", "none")


SINUSOIDAL_LAYOUTS = ("interleaved", "concatenated")


def sinusoidal_table(num_positions: int, dim: int, layout: str = "interleaved") -> torch.Tensor:
    """The fixed encoding of "Attention Is All You Need" (sec. 3.5): (num_positions, dim) with
    wavelengths 2pi .. 10000*2pi. ``layout`` "interleaved" (the paper's formula): sin on even and
    cos on odd dimensions; "concatenated": all sines then all cosines (tensor2tensor, fairseq,
    Marian). Angles are computed in float64 (as Marian's numpy table), then cast to float32."""
    if layout not in SINUSOIDAL_LAYOUTS:
        raise ValueError(f"sinusoidal layout must be one of {SINUSOIDAL_LAYOUTS}, got {layout!r}")
    position = torch.arange(num_positions, dtype=torch.float64)[:, None]
    frequency = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
    sines, cosines = torch.sin(position * frequency), torch.cos(position * frequency[: dim // 2])
    if layout == "concatenated":
        return torch.cat([sines, cosines], dim=1).float()
    table = torch.zeros(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = sines
    table[:, 1::2] = cosines
    return table.float()


def embed_token_ids(
    word_embeddings: nn.Module, input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None, hidden_size: int
) -> torch.Tensor:
    """The (B, T, H) input of a model whose embedding is the word table alone (positions enter
    through relative attention: Transformer-XL, XLNet): exactly one of ``input_ids`` (B, T), checked
    against the table's ``num_embeddings``, or ``inputs_embeds`` (B, T, H); ValueError otherwise."""
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError("pass exactly one of input_ids and inputs_embeds")
    if input_ids is not None:
        check_batch_shape("input_ids", input_ids)
        check_index_range(input_ids, word_embeddings.num_embeddings, "input_ids", "vocab_size")
        return word_embeddings(input_ids)
    if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != hidden_size:
        raise ValueError(f"inputs_embeds must be (batch, length, {hidden_size}), got {tuple(inputs_embeds.shape)}")
    check_not_empty("inputs_embeds", tuple(inputs_embeds.shape), *inputs_embeds.shape[:2])
    return inputs_embeds
