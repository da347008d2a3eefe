"""The tests' one input factory: padded batches of random token ids, as the parity and fast-path
tests feed them to ours and transformers' models alike.

    inputs = make_inputs(99, "right", segments=True, choices=2)   # (3, 2, 12) ids, mask, segments
"""

from __future__ import annotations

import torch

PADDING_SIDES = ("none", "right", "left")


def padding_mask(lengths: tuple[int, ...] | list[int], length: int, side: str = "right") -> torch.Tensor:
    """(B, T) long mask with ``lengths[b]`` real tokens in row b, at the start ("right" padding)
    or at the end ("left" padding) of the row; all ones for "none"."""
    if side not in PADDING_SIDES:
        raise ValueError(f"padding must be one of {PADDING_SIDES}, got {side!r}")
    if side == "none":
        return torch.ones(len(lengths), length, dtype=torch.long)
    mask = (torch.arange(length)[None, :] < torch.tensor(list(lengths))[:, None]).long()
    return mask.flip(1) if side == "left" else mask


def as_choices(inputs: dict[str, torch.Tensor], choices: int) -> dict[str, torch.Tensor]:
    """Every (B, T) input repeated into (B, choices, T), the multiple-choice layout."""
    return {key: value[:, None].repeat(1, choices, *([1] * (value.dim() - 1))) for key, value in inputs.items()}


def make_inputs(
    vocab_size: int,
    padding: str = "none",
    *,
    lengths: tuple[int, ...] = (12, 8, 3),
    length: int = 12,
    low: int = 1,
    pad_token_id: int = 0,
    segments: bool = False,
    choices: int | None = None,
    generator: torch.Generator | None = None,
    seed: int = 1,
) -> dict[str, torch.Tensor]:
    """A padded batch: ``input_ids`` (B, T) drawn from [low, vocab_size) (``pad_token_id`` at padding),
    ``attention_mask`` (B, T) from :func:`padding_mask` (``lengths`` apply unless padding is "none"),
    with ``segments`` a ``token_type_ids`` (B, T) of 0 on the first half and 1 on the second (0 at
    padding), and with ``choices`` every input repeated to (B, choices, T). ``generator`` (else a
    fresh one seeded with ``seed``) draws the ids; a caller may draw more from it afterwards."""
    generator = generator if generator is not None else torch.Generator().manual_seed(seed)
    ids = torch.randint(low, vocab_size, (len(lengths), length), generator=generator)
    mask = padding_mask(lengths, length, padding)
    inputs = {"input_ids": ids.masked_fill(mask == 0, pad_token_id), "attention_mask": mask}
    if segments:
        inputs["token_type_ids"] = (torch.arange(length) >= length // 2).long().expand(len(lengths), length) * mask
    return as_choices(inputs, choices) if choices else inputs
