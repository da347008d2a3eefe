"""Segment-level recurrence memory (Transformer-XL, Dai et al. 2019, sec. 3.2; XLNet's ``mems``).

Each layer attends over its own memory, the input states it saw on earlier segments, followed by
the current segment; the memory holds no gradient ("stop-gradient" in the paper's eq. for
h~_{tau+1}) and keeps the last ``mem_len`` positions. :class:`SegmentMemory` is the per-layer slot
the layer stacks of Transformer-XL and XLNet read (``layer``) and write (``record``); the score
function (relative positions) is the variant's own and is not here.

Layout is batch-first, (B, M, H), like every other tensor in the library (transformers' XLNet
and the original code keep memories time-first, (M, B, H); a variant converts at its boundary).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .token_ids import CheckedGenerationMixin


class SegmentMemory:
    """One memory tensor per layer for one forward pass.

    Args:
        memories: the previous segment's memories, one (B, M, H) tensor per layer, or None on the
            first segment (no memory yet).
        num_layers: the depth of the stack.
        mem_len: how many of the most recent positions to keep for the next segment (0: keep none,
            Transformer-XL's switch-off; None: keep all of memory + segment, XLNet's ``mem_len=None``).
        reuse_length: only the first ``reuse_length`` positions of the current segment enter the
            memory (XLNet's ``reuse_len``, for pretraining segments whose tail is the prediction
            target); None: all of them.
    """

    def __init__(
        self,
        memories: Sequence[torch.Tensor] | None,
        num_layers: int,
        mem_len: int | None,
        reuse_length: int | None = None,
    ) -> None:
        if mem_len is not None and mem_len < 0:
            raise ValueError(f"mem_len must be >= 0, got {mem_len}")
        if reuse_length is not None and reuse_length < 0:
            raise ValueError(f"reuse_length must be >= 0 or None, got {reuse_length}")
        if memories is not None:
            memories = list(memories)
            if len(memories) != num_layers:
                raise ValueError(f"memories has {len(memories)} tensors, expected one per layer ({num_layers})")
            if any(m.dim() != 3 for m in memories) or len({tuple(m.shape) for m in memories}) != 1:
                raise ValueError(
                    "memories must be (B, M, H) tensors of one shape for every layer, got "
                    f"{[tuple(m.shape) for m in memories]}"
                )
        self.num_layers = num_layers
        self.mem_len = mem_len
        self.reuse_length = reuse_length
        self._previous = memories
        self._new: list[torch.Tensor | None] = [None] * num_layers

    @property
    def length(self) -> int:
        """M, the number of memory positions each layer attends to (0 on the first segment)."""
        return 0 if self._previous is None else self._previous[0].shape[1]

    def layer(self, depth: int) -> torch.Tensor | None:
        """The (B, M, H) memory of layer ``depth``, or None when there is none."""
        if self._previous is None or self.length == 0:
            return None
        return self._previous[depth]

    def check_batch(self, batch_size: int, hidden_size: int) -> None:
        """Raise a ValueError when the memories do not fit a (batch_size, T, hidden_size) input."""
        if self._previous is None:
            return
        batch, _, hidden = self._previous[0].shape
        if (batch, hidden) != (batch_size, hidden_size):
            raise ValueError(
                f"memories are for batch {batch} x hidden {hidden}, the input is batch {batch_size} x hidden {hidden_size}"
            )

    def record(self, depth: int, layer_input: torch.Tensor) -> None:
        """Store layer ``depth``'s input states (B, T, H) for the next segment: the last ``mem_len``
        positions of memory + input, detached (no gradient flows into an earlier segment)."""
        if self.mem_len == 0:
            return
        current = layer_input if self.reuse_length is None else layer_input[:, : self.reuse_length]
        previous = self.layer(depth)
        combined = current if previous is None else torch.cat([previous.to(current.dtype), current], dim=1)
        kept = combined if self.mem_len is None else combined[:, -self.mem_len :]
        self._new[depth] = kept.detach()

    def updated(self) -> tuple[torch.Tensor, ...] | None:
        """The memories for the next segment, one (B, min(mem_len, M + T), H) tensor per layer
        (M + T with ``mem_len`` None), or None with ``mem_len`` 0. Call after the stack has run."""
        if self.mem_len == 0:
            return None
        if any(m is None for m in self._new):
            raise ValueError("the stack has not recorded every layer yet; call updated() after the forward pass")
        return tuple(self._new)


def reorder_memories(mems: Sequence[torch.Tensor], beam_idx: torch.Tensor) -> list[torch.Tensor]:
    """Beam search: time-first memories (M, B, H), as ``mems`` go in and out of a model, follow
    the chosen beams (``beam_idx`` (B,))."""
    return [layer.index_select(1, beam_idx.to(layer.device)) for layer in mems]


class MemoryGenerationMixin(CheckedGenerationMixin):
    """``generate()`` over segment memories (Transformer-XL / XLNet ``mems``, one time-first (M, B, H)
    tensor per layer) instead of a key/value Cache (special ids checked first, as every generating
    head: ``token_ids.CheckedGenerationMixin``).

    Between steps generate() keeps the mems in its model kwargs under ``mems``, a name every 5.x
    release treats as a cache (beam search reorders it with :func:`reorder_memories`), and hands them
    to ``prepare_inputs_for_generation(mems=...)``. Releases before 5.24 copied an output's mems to
    ``past_key_values`` themselves and 5.24 reads only an output field named ``cache``: both are
    replaced by this one explicit hand-over, so a release that renames its cache cannot make every
    step silently recompute the text (or drop the memory).
    """

    _reorder_cache = staticmethod(reorder_memories)

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the state is mems, not key/value pairs: generate() must not build a DynamicCache

    def _update_model_kwargs_for_generation(self, outputs, model_kwargs: dict, *args, **kwargs) -> dict:
        model_kwargs = super()._update_model_kwargs_for_generation(outputs, model_kwargs, *args, **kwargs)
        mems = getattr(outputs, "mems", None)
        for name in ("past_key_values", "cache"):
            # a release's own copy of the mems under its cache name: beam search must reorder one copy only
            if name in model_kwargs and model_kwargs[name] is mems:
                del model_kwargs[name]
        if mems is not None:
            model_kwargs["mems"] = mems
        return model_kwargs

    @staticmethod
    def check_no_key_value_cache(kwargs: dict) -> None:
        """generate() over mems takes no key/value Cache: refuse one rather than ignore it."""
        for name in ("cache", "past_key_values"):
            if kwargs.get(name) is not None:
                raise ValueError(
                    f"{name}: this model generates over its segment memories (mems), not a key/value Cache; "
                    "pass mems= (or nothing) to generate()"
                )
