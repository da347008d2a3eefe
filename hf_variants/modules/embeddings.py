"""What the variants' input embeddings share: the position schemes a config may name, the fixed
sinusoidal table (Vaswani et al. 2017, sec. 3.5), the word-table-only embedding step of the
relative-position models, and the input checks (shapes, empty batches, ids inside their tables).
Each variant writes its embeddings module in its own modeling file (``BertEmbeddings``, ...)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .tracing import is_tracing

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


def check_batch_shape(name: str, tensor: torch.Tensor, trailing: tuple[str, ...] = ()) -> tuple[int, int]:
    """Raise a ValueError unless ``tensor`` is (batch, length, *trailing) with at least one example
    and one token; return (batch, length). Every model input read as a batch of sequences goes
    through it before anything unpacks its shape (a 1-D ``input_ids`` is the usual mistake: one
    sequence without its batch dimension)."""
    dims = ("batch", "length", *trailing)
    if tensor.dim() != len(dims):
        raise ValueError(f"{name} must be ({', '.join(dims)}), got shape {tuple(tensor.shape)}")
    batch, length = tensor.shape[:2]
    check_not_empty(name, tuple(tensor.shape), batch, length)
    return batch, length


def check_ids_or_embeds(input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None) -> tuple[int, int]:
    """(batch, length) of exactly one of ``input_ids`` (B, T) and ``inputs_embeds`` (B, T, H), each
    checked by :func:`check_batch_shape` (for heads that read the shape before the backbone does)."""
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError("pass exactly one of input_ids or inputs_embeds")
    if input_ids is not None:
        return check_batch_shape("input_ids", input_ids)
    return check_batch_shape("inputs_embeds", inputs_embeds, ("hidden",))


def check_not_empty(name: str, shape: tuple[int, ...], batch: int, length: int) -> None:
    """A batch without examples or tokens is a ValueError (not an empty output, nor an error from
    a reduction deep inside the model)."""
    if batch == 0 or length == 0:
        what = "no examples" if batch == 0 else "no tokens"
        raise ValueError(f"empty batch: {name} has shape {shape} ({what})")


def check_token_id(name: str, value: int | None, vocab_size: int, use: str = "") -> None:
    """Raise ValueError when ``value`` (the config's ``name``, e.g. "bos_token_id") is not an id
    of a ``vocab_size``-token vocabulary; ``use`` says what needed it. None passes (unset)."""
    if value is not None and not 0 <= value < vocab_size:
        raise ValueError(
            f"{name} {value} is outside the vocabulary (vocab_size={vocab_size})" + (f": {use}" if use else "")
        )


def check_index_range(ids: torch.Tensor, size: int, what: str, size_name: str) -> None:
    """Raise a ValueError naming the first bad id (or a non-integer dtype) instead of an IndexError
    or a dtype RuntimeError deep inside torch."""
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise ValueError(f"{what} must be an integer tensor (torch.long), got dtype {ids.dtype}")
    if ids.numel() == 0 or is_tracing():  # reading the values would break a compiled graph
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(f"{what} contains id {bad}, outside the valid range [0, {size}) ({size_name}={size})")
