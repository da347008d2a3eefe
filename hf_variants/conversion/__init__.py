"""Weights to and from transformers' native classes, from one explicit key map per variant.

- ``from_transformers(model)`` returns the hf-variants model with the same head and identical
  weights; ``to_transformers(model)`` the reverse (``to_transformers(model, transformers_class)``
  picks the family where several transformers families share the variant's weights).
- ``OurClass.from_pretrained(<folder or Hub id of a transformers checkpoint>)`` converts on load
  through transformers v5's checkpoint conversion mapping (see :mod:`.loading`, called by the
  hooks in ``hf_variants/models/configuration_base.py`` and ``modeling_base.py``).

All three read the same :class:`KeyMap` (``models/<variant>/weights.py``), wired in by
:func:`register_weights`.
"""

from __future__ import annotations

import copy
import re

from transformers import PreTrainedConfig, PreTrainedModel

from .key_map import KeyMap, StateDictAdapter
from .variant_weights import PAIRS, WEIGHTS, ConversionPair, VariantWeights, register_weights, shared_config_fields

__all__ = [
    "KeyMap",
    "StateDictAdapter",
    "VariantWeights",
    "ConversionPair",
    "register_weights",
    "shared_config_fields",
    "from_transformers",
    "to_transformers",
    "load_pretrained",
]


def _convert(model: PreTrainedModel, pair: ConversionPair, to_ours: bool) -> PreTrainedModel:
    weights = pair.weights
    config = (
        weights.config_to_ours(model.config)
        if to_ours
        else weights.config_to_family(model.config, pair.theirs.config_class)
    )
    target_class = pair.ours if to_ours else pair.theirs
    implementation = model.config._attn_implementation
    if implementation == "sdpa" and not target_class._supports_sdpa:
        implementation = "eager"  # a transformers class with one kernel only (XLM): same maths
    config._attn_implementation = implementation
    target = target_class(config, **(pair.constructor_kwargs(model) if pair.constructor_kwargs else {}))
    state = model.state_dict()
    expected = set(target.state_dict())
    adapter = weights.adapter_for_config(pair.head, config)
    mapped = adapter.to_ours(state) if to_ours else adapter.to_theirs(state, expected)
    # Tied copies (e.g. the MLM decoder) may appear under one name only.
    missing = expected - set(mapped)
    missing = {k for k in missing if not _is_tied_copy(target, k)}
    if not to_ours:
        missing = {k for k in missing if not any(re.fullmatch(p, k) for p in weights.theirs_built_by_init)}
    if missing:
        raise ValueError(f"converted weights miss {sorted(missing)[:8]}")
    unexpected = target.load_state_dict(mapped, strict=False).unexpected_keys
    if unexpected:
        raise ValueError(f"converted weights have no place in {target_class.__name__}: {sorted(unexpected)[:8]}")
    target.to(dtype=next(model.parameters()).dtype)
    target.train(model.training)
    _carry_generation_config(model, target)
    return target


def _carry_generation_config(source: PreTrainedModel, target: PreTrainedModel) -> None:
    """Give ``target`` the generation config ``source`` generates with.

    A fresh model derives its generation config from its model config, and the config translation
    keeps only the architecture: a MarianMTModel's ``forced_eos_token_id``, or the ``num_beams`` /
    ``bad_words_ids`` of a checkpoint's generation_config.json, would be dropped, and default
    ``generate()`` would give other tokens. Token ids mean the same on both sides (one vocabulary,
    the same weights), so the whole config carries over unchanged.
    """
    source_config = getattr(source, "generation_config", None)
    if source_config is not None and target.can_generate():
        target.generation_config = copy.deepcopy(source_config)


def _is_tied_copy(model: PreTrainedModel, key: str) -> bool:
    return key in (getattr(model, "all_tied_weights_keys", None) or {})


def from_transformers(model: PreTrainedModel) -> PreTrainedModel:
    """transformers model (e.g. ``transformers.BertForMaskedLM``) -> the hf-variants equivalent."""
    for pair in PAIRS:
        if type(model) is pair.theirs:
            return _convert(model, pair, to_ours=True)
    raise ValueError(f"no hf-variants equivalent registered for {type(model).__name__}")


def to_transformers(model: PreTrainedModel, transformers_class: type | None = None) -> PreTrainedModel:
    """hf-variants model -> the transformers class with the same architecture and head.

    ``transformers_class`` picks one when several transformers families share our weights
    (``RobertaForMaskedLM`` or ``XLMRobertaForMaskedLM``); by default, the variant's first family.
    """
    candidates = [p for p in PAIRS if type(model) is p.ours and transformers_class in (None, p.theirs)]
    if transformers_class is None and len(candidates) > 1:
        # Several families: the one whose config the variant translates this model's config to
        # (GPT: GPT-2 for a pre-LN config, OpenAI GPT for a post-LN one); else the default first.
        wanted = type(candidates[0].weights.config_to_theirs(model.config))
        candidates = [p for p in candidates if p.theirs.config_class is wanted] or candidates
    if candidates:
        return _convert(model, candidates[0], to_ours=False)
    target = "" if transformers_class is None else f" of class {transformers_class.__name__}"
    raise ValueError(f"no transformers equivalent{target} registered for {type(model).__name__}")


def _is_ours(model_type: str | None) -> bool:
    """True for an hf-variants model type registered with AutoConfig, with or without a key map to
    transformers (Transformer-XL has none: transformers v5 removed it)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return model_type in CONFIG_MAPPING and CONFIG_MAPPING[model_type].__module__.startswith("hf_variants.")


def load_pretrained(path_or_id: str, auto_class: type, **kwargs) -> PreTrainedModel:
    """Load a checkpoint as an hf-variants model, whatever format it is in.

    hf-variants checkpoints load through ``auto_class`` (e.g. ``AutoModelForSequenceClassification``);
    a transformers checkpoint of an architecture a variant reads (model_type "bert", e.g. the real
    all-MiniLM-L6-v2) loads into that variant's class for ``auto_class`` (the first variant
    registered that reads it: BERT for "bert"), converted on load by ``from_pretrained``.
    ``kwargs`` go to ``from_pretrained`` (``num_labels``, ``id2label``, a ``config`` ...).
    """
    config = kwargs.pop("config", None)
    download = {
        k: kwargs[k] for k in ("cache_dir", "force_download", "local_files_only", "token", "revision") if k in kwargs
    }
    if config is not None:
        model_type = config.model_type
    else:
        model_type = PreTrainedConfig.get_config_dict(path_or_id, **download)[0].get("model_type")
    if model_type in WEIGHTS or _is_ours(model_type):
        return auto_class.from_pretrained(path_or_id, **({"config": config} if config is not None else {}), **kwargs)
    weights = next((w for w in WEIGHTS.values() if model_type in w.source_model_types), None)
    if weights is None:
        raise ValueError(
            f"{path_or_id} is a checkpoint of model_type {model_type!r}, which no hf-variants variant reads "
            f"(readable: {sorted(WEIGHTS)} and {sorted({t for w in WEIGHTS.values() for t in w.source_model_types})})"
        )
    if config is None:
        # Our config from theirs; config fields among kwargs (num_labels, id2label ...) are set on it.
        config, kwargs = weights.config_class.from_pretrained(path_or_id, return_unused_kwargs=True, **kwargs)
        kwargs.update(download)
    else:
        config = weights.config_to_ours(config)
    return auto_class.from_pretrained(path_or_id, config=config, **kwargs)
