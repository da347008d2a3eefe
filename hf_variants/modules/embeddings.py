"""What the variants' input embeddings share: the position schemes a config may name, the fixed
sinusoidal table (Vaswani et al. 2017, sec. 3.5). The input checks, and the word-table-only
embedding step of the relative-position models (``embed_token_ids``), are in ``inputs.py``. Each
variant writes its embeddings module in its own modeling file (``BertEmbeddings``, ...)."""

from __future__ import annotations

import math

import torch

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
