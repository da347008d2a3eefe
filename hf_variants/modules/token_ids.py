"""Special token ids (pad / bos / eos / decoder start) against the vocabulary, checked where used.

A config may name ids its vocabulary does not have: transformers' ``GPT2Config`` keeps bos/eos
50256 whatever ``vocab_size`` is, and transformers builds such a model (a tiny GPT-2 with
``vocab_size=99`` is the usual test model). So do we: a config is never refused for such an id.
An id is refused, with a ValueError naming it, when something would look it up in the vocabulary:

- the word table's padding row, at build (``pad_token_id`` of variants whose table has one, as
  transformers' BERT / Marian have: each variant's embeddings call :func:`check_token_id`);
- ``generate()``: the token it starts from (``bos_token_id`` without a prompt, the decoder's
  ``decoder_start_token_id``) and the one it writes after a finished sequence (``pad_token_id``,
  only reachable when an ``eos_token_id`` is in the vocabulary): :class:`CheckedGenerationMixin`;
- decoder inputs built from labels (``decoder_start_token_id``, ``pad_token_id``);
- any id in ``input_ids`` (the embeddings' range check).

An ``eos_token_id`` outside the vocabulary is never looked up: no token can equal it, so
generation runs to its length limit, as transformers' does.
"""

from __future__ import annotations

from typing import Any

from transformers import GenerationMixin

# The scalar check lives with the other id-against-table checks (embeddings.py); imported here for
# this module's generation checks and for callers that import it from here.
from .inputs import check_token_id


def _as_list(ids: int | list[int] | None) -> list[int]:
    if ids is None:
        return []
    return [int(i) for i in ids] if isinstance(ids, (list, tuple)) else [int(ids)]


def check_generation_token_ids(model: Any, inputs: Any, generation_config: Any, kwargs: dict[str, Any]) -> None:
    """The special ids ``model.generate(inputs, generation_config, **kwargs)`` will feed to the model
    or write into its output, checked against ``model.config.vocab_size``.

    Each id is read as generate() resolves it: a keyword argument first, then the
    ``generation_config`` passed, then the model's own ``generation_config``.
    """

    def resolved(name: str) -> Any:
        for source in (kwargs, generation_config, model.generation_config):
            value = source.get(name) if isinstance(source, dict) else getattr(source, name, None)
            if value is not None:
                return value
        return None

    vocab_size = model.config.vocab_size
    prompted = inputs is not None or any(
        kwargs.get(k) is not None for k in ("input_ids", "inputs_embeds", "encoder_outputs")
    )
    if not prompted:
        check_token_id(
            "bos_token_id", resolved("bos_token_id"), vocab_size, "generate() was given no input_ids and starts from it"
        )
    if model.config.is_encoder_decoder and kwargs.get("decoder_input_ids") is None:
        # transformers starts the decoder from decoder_start_token_id, else from bos_token_id.
        name = "decoder_start_token_id" if resolved("decoder_start_token_id") is not None else "bos_token_id"
        check_token_id(name, resolved(name), vocab_size, "generate() starts the decoder from it")
    eos = _as_list(resolved("eos_token_id"))
    if any(0 <= e < vocab_size for e in eos):  # a sequence can finish, so padding is written after it
        pad = resolved("pad_token_id")
        name = "pad_token_id" if pad is not None else "eos_token_id"  # transformers pads with eos when pad is unset
        check_token_id(
            name,
            pad if pad is not None else eos[0],
            vocab_size,
            "generate() writes it after a finished sequence and feeds it back to the model",
        )


class CheckedGenerationMixin(GenerationMixin):
    """transformers' ``GenerationMixin`` whose ``generate()`` first refuses special ids it would
    look up outside the vocabulary (:func:`check_generation_token_ids`), rather than failing with an
    IndexError inside the embedding. Everything else is transformers' own ``generate``."""

    def generate(self, inputs=None, generation_config=None, *args, **kwargs):
        check_generation_token_ids(self, inputs, generation_config, kwargs)
        self.check_prompts(kwargs.get("attention_mask"))
        return super().generate(inputs, generation_config, *args, **kwargs)

    def check_prompts(self, attention_mask) -> None:
        """A variant's own refusal of prompts transformers' ``generate()`` would continue wrongly,
        with a ValueError (GPT: right-padded rows). Nothing to refuse here."""
