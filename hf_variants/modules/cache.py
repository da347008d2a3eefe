"""The generation cache's name, across transformers releases.

transformers 5.24 renamed the cache that ``generate()`` hands to ``forward`` and reads back from
its outputs: ``past_key_values`` became ``cache`` (the old name still works on inputs and outputs,
with a deprecation warning, but ``generate()`` itself passes and reads only the new one). Earlier
5.x releases pass and read ``past_key_values``. A forward that took only the old name received the
new one in ``**kwargs``, dropped it, and recomputed each step from the last token alone: wrong
tokens with no error. Every forward here therefore takes both names and keeps the one it was
handed (:func:`hf_variants.modules.inputs.pick_cache`, beside the other checks of a forward's
inputs), and every output stores the cache under the name the installed release reads
(:data:`CACHE_FIELD`). The checks of a given cache's state (its positions, its batch) are here.
"""

from __future__ import annotations

import dataclasses

import torch
from transformers.cache_utils import EncoderDecoderCache
from transformers.modeling_outputs import BaseModelOutputWithPast

from .tracing import is_tracing

# The output field (and generate()'s model_kwargs key) holding the cache in the installed transformers.
CACHE_FIELD: str = (
    "cache" if "cache" in {field.name for field in dataclasses.fields(BaseModelOutputWithPast)} else "past_key_values"
)


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
