"""Weights to and from transformers' native classes.

``from_transformers(model)`` returns the hf-variants model with the same head and identical
weights; ``to_transformers(model)`` the reverse. Each variant registers an explicit
:class:`StateDictAdapter` (models/<variant>/conversion.py) and the class pairs it covers.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Callable

import torch
from transformers import PreTrainedConfig, PreTrainedModel


@dataclass
class StateDictAdapter:
    """An explicit, two-way key map between a transformers state dict and ours.

    ``renames`` are (transformers regex, our template) pairs applied in order; the reverse
    direction is derived from them (templates use ``{i}`` for the layer index). ``fused`` lists
    our tensors built by concatenating several transformers tensors along dim 0 (the fused QKV
    projection): (our template, [transformers templates]). ``ignored`` are transformers keys with
    no counterpart of ours (duplicates of tied tensors).
    """

    renames: list[tuple[str, str]]
    fused: list[tuple[str, list[str]]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    @staticmethod
    def _pattern(template: str) -> re.Pattern:
        return re.compile("^" + re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)") + "$")

    def to_ours(self, theirs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ours: dict[str, torch.Tensor] = {}
        pending = dict(theirs)
        for our_template, their_templates in self.fused:
            patterns = [self._pattern(t) for t in their_templates]
            for key in [k for k in pending if patterns[0].match(k)]:
                index = patterns[0].match(key).groupdict().get("i")
                parts = [t.format(i=index) for t in their_templates]
                ours[our_template.format(i=index)] = torch.cat([pending.pop(p) for p in parts], dim=0)
        for key in list(pending):
            if any(re.fullmatch(p, key) for p in self.ignored):
                pending.pop(key)
                continue
            for their_template, our_template in self.renames:
                match = self._pattern(their_template).match(key)
                if match:
                    ours[our_template.format(**match.groupdict())] = pending.pop(key)
                    break
        if pending:
            raise ValueError(f"no mapping for transformers weights: {sorted(pending)[:8]}")
        return ours

    def to_theirs(self, ours: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        theirs: dict[str, torch.Tensor] = {}
        pending = dict(ours)
        for our_template, their_templates in self.fused:
            pattern = self._pattern(our_template)
            for key in [k for k in pending if pattern.match(k)]:
                index = pattern.match(key).groupdict().get("i")
                for name, part in zip(their_templates, pending.pop(key).chunk(len(their_templates), dim=0)):
                    theirs[name.format(i=index)] = part.clone()
        for key in list(pending):
            for their_template, our_template in self.renames:
                match = self._pattern(our_template).match(key)
                if match:
                    theirs[their_template.format(**match.groupdict())] = pending.pop(key)
                    break
        if pending:
            raise ValueError(f"no transformers counterpart for weights: {sorted(pending)[:8]}")
        return theirs


@dataclass
class ConversionPair:
    """Our class <-> transformers class, with the adapter and the config translators.

    ``adapter_for_config`` (optional): the adapter for one model's config, when the key map
    depends on it (ALBERT's inner layer groups); given the target config of a conversion.
    """

    ours: type
    theirs: type
    adapter: StateDictAdapter
    config_to_ours: Callable[[PreTrainedConfig], PreTrainedConfig]
    config_to_theirs: Callable[[PreTrainedConfig], PreTrainedConfig]
    adapter_for_config: Callable[[PreTrainedConfig], StateDictAdapter] | None = None


_PAIRS: list[ConversionPair] = []


def register_conversion(pair: ConversionPair) -> None:
    _PAIRS.append(pair)


def shared_config_fields(source: PreTrainedConfig, target_class: type) -> dict:
    """The entries of ``source`` that ``target_class`` (a dataclass config) declares as fields."""
    names = {f.name for f in dataclasses.fields(target_class)}
    return {k: v for k, v in source.to_dict().items() if k in names}


def _convert(model: PreTrainedModel, pair: ConversionPair, to_ours: bool) -> PreTrainedModel:
    config = pair.config_to_ours(model.config) if to_ours else pair.config_to_theirs(model.config)
    config._attn_implementation = model.config._attn_implementation
    target_class = pair.ours if to_ours else pair.theirs
    target = target_class(config)
    state = model.state_dict()
    adapter = pair.adapter_for_config(config) if pair.adapter_for_config is not None else pair.adapter
    mapped = adapter.to_ours(state) if to_ours else adapter.to_theirs(state)
    expected = set(target.state_dict())
    # Tied copies (e.g. the MLM decoder) may appear under one name only.
    missing = expected - set(mapped)
    missing = {k for k in missing if not _is_tied_copy(target, k)}
    if missing:
        raise ValueError(f"converted weights miss {sorted(missing)[:8]}")
    target.load_state_dict(mapped, strict=False)
    target.to(dtype=next(model.parameters()).dtype)
    target.train(model.training)
    return target


def _is_tied_copy(model: PreTrainedModel, key: str) -> bool:
    return key in (getattr(model, "all_tied_weights_keys", None) or {})


def from_transformers(model: PreTrainedModel) -> PreTrainedModel:
    """transformers model (e.g. ``transformers.BertForMaskedLM``) -> the hf-variants equivalent."""
    for pair in _PAIRS:
        if type(model) is pair.theirs:
            return _convert(model, pair, to_ours=True)
    raise ValueError(f"no hf-variants equivalent registered for {type(model).__name__}")


def to_transformers(model: PreTrainedModel) -> PreTrainedModel:
    """hf-variants model -> the transformers class with the same architecture and head."""
    for pair in _PAIRS:
        if type(model) is pair.ours:
            return _convert(model, pair, to_ours=False)
    raise ValueError(f"no transformers equivalent registered for {type(model).__name__}")


def load_pretrained(path_or_id: str, auto_class: type, **kwargs) -> PreTrainedModel:
    """Load a checkpoint as an hf-variants model, whatever format it is in.

    hf-variants checkpoints load directly through ``auto_class`` (e.g.
    ``AutoModelForSequenceClassification``); a transformers checkpoint of an architecture we
    convert (model_type "bert", e.g. the real all-MiniLM-L6-v2) is loaded with transformers and
    converted with :func:`from_transformers`, so the weights are identical either way.
    ``kwargs`` go to ``from_pretrained`` (``num_labels``, ``id2label``, ...).
    """
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path_or_id)
    if config.model_type.startswith("hfv_"):
        return auto_class.from_pretrained(path_or_id, **kwargs)
    theirs = auto_class.from_pretrained(path_or_id, **kwargs)
    if not any(type(theirs) is pair.theirs for pair in _PAIRS):
        raise ValueError(
            f"{path_or_id} is a transformers {type(theirs).__name__} checkpoint (model_type {config.model_type!r}), "
            "which hf-variants cannot convert"
        )
    return from_transformers(theirs)
