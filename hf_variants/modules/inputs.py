"""What a forward is handed, checked once: batch shapes, ids inside their tables, and the one
cache under either of its names.

Every model's forward runs these before it reads a shape or an id, so that bad input is a
ValueError naming the argument instead of an IndexError or a shape error deep inside torch.

The cache's name (:func:`pick_cache`): transformers 5.24 renamed the cache that ``generate()``
hands to ``forward``: ``past_key_values`` became ``cache`` (the old name still works, with a
deprecation warning, but ``generate()`` itself passes only the new one). A forward that took only
the old name received the new one in ``**kwargs``, dropped it, and recomputed each step from the
last token alone: wrong tokens with no error. Every forward that takes a cache therefore takes
both names and calls :func:`pick_cache` first, with or without one; where the installed
transformers says ``cache``, a cache given as ``past_key_values`` warns (``FutureWarning``), as
transformers' own models do (``deprecate_kwarg("past_key_values", ..., new_name="cache")``).
The output side (the field an output stores the cache under) and the checks of a given cache's
state are in :mod:`hf_variants.modules.cache`.
"""

from __future__ import annotations

import warnings

import torch
from transformers.cache_utils import Cache

from .cache import CACHE_FIELD
from .tracing import is_tracing

# Names under which a caller may hand a model a cache of another kind; a model that takes none of
# them must not swallow them silently in **kwargs.
FOREIGN_CACHE_NAMES = ("cache_params",)


def pick_cache(cache: Cache | None, past_key_values: Cache | None, kwargs: dict | None = None) -> Cache | None:
    """The one cache a forward was handed, or None: ``cache`` (transformers >= 5.24) or
    ``past_key_values`` (earlier releases, peft's prefix tuning; FutureWarning where the release says
    ``cache``). Both at once, or a cache under a name no model here reads, is a ValueError."""
    if cache is not None and past_key_values is not None:
        raise ValueError("pass the cache once, as cache= (transformers >= 5.24) or past_key_values=, not both")
    for name in FOREIGN_CACHE_NAMES:
        if kwargs and kwargs.get(name) is not None:
            raise ValueError(f"{name} is not a cache this model can use: pass a transformers Cache as cache=")
    if past_key_values is not None and CACHE_FIELD == "cache":
        message = "`past_key_values` is deprecated (transformers >= 5.24 names the cache `cache`): use `cache` instead"
        warnings.warn(message, FutureWarning, stacklevel=2)
    return cache if cache is not None else past_key_values


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
