"""The generation cache's name, across transformers releases.

transformers 5.24 renamed the cache that ``generate()`` hands to ``forward`` and reads back from
its outputs: ``past_key_values`` became ``cache`` (the old name still works on inputs and outputs,
with a deprecation warning, but ``generate()`` itself passes and reads only the new one). Earlier
5.x releases pass and read ``past_key_values``. A forward that took only the old name received the
new one in ``**kwargs``, dropped it, and recomputed each step from the last token alone: wrong
tokens with no error. Every forward here therefore takes both names (:func:`pick_cache`), and every
output stores the cache under the name the installed release reads (:data:`CACHE_FIELD`).
"""

from __future__ import annotations

import dataclasses
import warnings

import torch
from transformers.cache_utils import EncoderDecoderCache
from transformers.modeling_outputs import BaseModelOutputWithPast

from .tracing import is_tracing

# The output field (and generate()'s model_kwargs key) holding the cache in the installed transformers.
CACHE_FIELD: str = (
    "cache" if "cache" in {field.name for field in dataclasses.fields(BaseModelOutputWithPast)} else "past_key_values"
)

# Names under which a caller may hand a model a cache of another kind; a model that takes none of
# them must not swallow them silently in **kwargs.
FOREIGN_CACHE_NAMES = ("cache_params",)


def pick_cache(cache, past_key_values, kwargs: dict | None = None):
    """The one cache a forward was given: ``cache`` (transformers >= 5.24) or ``past_key_values``
    (earlier releases, peft's prefix tuning). Both at once, or a cache under a name this model does
    not read, raise a ValueError rather than being ignored.

    Where the installed transformers names it ``cache`` (>= 5.24), a cache given as
    ``past_key_values`` still works but warns (``FutureWarning``), as transformers' own models warn
    (``deprecate_kwarg("past_key_values", ..., new_name="cache")``): the library's own calls use
    ``cache=``. Earlier releases pass ``past_key_values`` from ``generate()``: no warning there."""
    if cache is not None and past_key_values is not None:
        raise ValueError("pass the cache once, as cache= (transformers >= 5.24) or past_key_values=, not both")
    for name in FOREIGN_CACHE_NAMES:
        if kwargs and kwargs.get(name) is not None:
            raise ValueError(f"{name} is not a cache this model can use: pass a transformers Cache as cache=")
    if past_key_values is not None and CACHE_FIELD == "cache":
        warnings.warn(
            "`past_key_values` is deprecated (transformers >= 5.24 names the cache `cache`): use `cache` instead",
            FutureWarning,
            stacklevel=2,
        )
    return cache if cache is not None else past_key_values


def with_cache(cache) -> dict:
    """``{CACHE_FIELD: cache}``: keyword arguments that put a cache into a transformers ModelOutput
    under the installed release's field name (no deprecation warning, read back by generate())."""
    return {CACHE_FIELD: cache}


def output_cache(output):
    """The cache a transformers ModelOutput holds (None if it holds none)."""
    return getattr(output, CACHE_FIELD, None)


def check_cache_positions(cache_position: torch.Tensor | None, past_length: int, length: int) -> None:
    """``cache_position`` (T,) (transformers < 5.24 passes it from generate()) must continue right
    after the ``past_length`` cached positions: a cache of another length would be read at the wrong
    positions, so it is refused rather than silently used."""
    if cache_position is None or is_tracing():
        return
    if cache_position.dim() != 1 or cache_position.shape[0] != length:
        raise ValueError(
            f"cache_position has shape {tuple(cache_position.shape)}, expected ({length},) like the new tokens"
        )
    first = int(cache_position[0]) if length else past_length
    if first != past_length:
        raise ValueError(
            f"cache_position starts at {first} but the cache holds {past_length} positions: the cache does not "
            "belong to these inputs (pass the cache returned by the previous call, or none)"
        )


def check_cache_batch(cache, batch: int) -> None:
    """A cache filled for another batch size belongs to other inputs: refuse it by name (torch would
    fail later inside attention with a shape error, or broadcast a batch-1 cache silently)."""
    self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
    for layer in getattr(self_cache, "layers", ())[:1]:
        keys = getattr(layer, "keys", None)
        if isinstance(keys, torch.Tensor) and keys.dim() == 4 and keys.numel() and keys.shape[0] != batch:
            raise ValueError(
                f"the cache holds {keys.shape[0]} rows but the inputs have {batch}: it does not belong to these "
                "inputs (pass the cache returned by the previous call with the same batch, or none)"
            )
