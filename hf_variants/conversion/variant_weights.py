"""Per-variant weight formats: the key map, the checkpoint formats it reads, the config translation.

A variant's ``models/<variant>/weights.py`` builds one :class:`VariantWeights` (it must not import
the variant's modeling module, so a model and its key map never import each other);
:func:`register_weights` then wires it into every direction at once:

- ``from_transformers`` / ``to_transformers``: a (our class, transformers class, adapter) pair
  per head that transformers has;
- ``OurClass.from_pretrained(<transformers checkpoint>)``: the transforms derived from the key map
  are registered with transformers' ``register_checkpoint_conversion_mapping`` under our
  model_type, and the config translation is applied by :mod:`hf_variants.conversion.loading`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import transformers
from transformers import PreTrainedConfig, PreTrainedModel
from transformers.conversion_mapping import register_checkpoint_conversion_mapping
from transformers.core_model_loading import WeightTransform

from .key_map import KeyMap, StateDictAdapter


def shared_config_fields(source: PreTrainedConfig | dict, target_class: type) -> dict:
    """The entries of ``source`` (a config or its dict) that ``target_class`` (a dataclass config) declares as fields."""
    names = {f.name for f in dataclasses.fields(target_class)}
    items = source.items() if isinstance(source, dict) else source.to_dict().items()
    return {k: v for k, v in items if k in names}


def require_values(config: PreTrainedConfig, family: str, required: dict[str, Any]) -> None:
    """Refuse a config transformers' ``family`` cannot express: ValueError naming the first field
    of ``config`` in ``required`` (field name -> the only value ``family`` has) that differs."""
    for name, needed in required.items():
        value = getattr(config, name)
        if value != needed:
            raise ValueError(f"transformers' {family} has no equivalent of {name}={value!r} (needs {needed!r})")


@dataclass(frozen=True)
class VariantWeights:
    """Everything about one variant's weights outside its modeling code.

    Args:
        config_class: our config class (model_type ``hfv_<variant>``).
        key_map: the one explicit key map (transformers names -> ours).
        transformers_classes: head suffix -> the name of the transformers class with the same head,
            for ``from_transformers`` / ``to_transformers`` (heads transformers lacks are left out);
            or a tuple of names, one per transformers family with the same weight names
            (``("RobertaModel", "XLMRobertaModel")``), the first being ``to_transformers``' default.
        source_model_types: model_types of other checkpoints whose weights follow ``key_map``
            (transformers' "bert"); ``from_pretrained`` translates their config.json. A config.json
            without a model_type (checkpoints from before transformers recorded it) counts as one.
        config_to_theirs: our config -> the transformers config of the first family (ValueError
            where it has no equivalent); :meth:`config_to_family` gives the other families'.
        config_defaults: values set on configs translated from a source format, where ours
            differs from theirs by default or by name.
        renamed_fields: a source config field -> ours, where only the name differs (T5's ``d_model``
            -> ``hidden_size``): read under its name when it is set (not None).
        constructor_kwargs: head suffix -> a function of a model giving the arguments beyond the
            config that rebuild its architecture in the other library (both classes take the same
            ones, e.g. ViTModel's ``add_pooling_layer`` / ``use_mask_token``); heads not listed
            need none.
        theirs_built_by_init: transformers keys (regexes) with no counterpart of ours that the
            transformers class computes itself when built (Marian's fixed sinusoidal table, its
            all-zero ``final_logits_bias``): ``to_transformers`` leaves them to its init.
    """

    config_class: type
    key_map: KeyMap
    transformers_classes: dict[str, str | tuple[str, ...]]
    source_model_types: tuple[str, ...]
    config_to_theirs: Callable[[PreTrainedConfig], PreTrainedConfig]
    config_defaults: dict[str, Any] = field(default_factory=dict)
    renamed_fields: dict[str, str] = field(default_factory=dict)
    constructor_kwargs: dict[str, Callable[[PreTrainedModel], dict]] = field(default_factory=dict)
    theirs_built_by_init: tuple[str, ...] = ()

    @property
    def model_type(self) -> str:
        return self.config_class.model_type

    def adapter(self, head: str) -> StateDictAdapter:
        return self.key_map.adapter(head)

    def adapter_for_config(self, head: str, config: PreTrainedConfig) -> StateDictAdapter:
        """The adapter ``from_transformers`` / ``to_transformers`` use for a model with ``config``
        (the target's). The key map's own, unless a variant's names depend on the config (ALBERT's
        inner layer groups, which no ``{i}`` template can renumber)."""
        return self.adapter(head)

    def checkpoint_conversion(self) -> list[WeightTransform]:
        return self.key_map.checkpoint_conversion()

    def transformers_class_names(self, head: str) -> tuple[str, ...]:
        """The transformers classes (names, default first) with the same head as our ``head``."""
        names = self.transformers_classes[head]
        return (names,) if isinstance(names, str) else tuple(names)

    def config_to_family(self, config: PreTrainedConfig, config_class: type) -> PreTrainedConfig:
        """Our config -> ``config_class``, the config class of one of our transformers families
        (the target model's ``config_class``). Families share weight names and config fields
        (``XLMRobertaConfig`` and ``RobertaConfig``), so another family's config is the first
        family's, read by its own class."""
        theirs = self.config_to_theirs(config)
        if type(theirs) is config_class:
            return theirs
        return config_class(**shared_config_fields(theirs, config_class))

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        """A source checkpoint's config.json contents -> the arguments of our config class:
        the fields both have, plus ``config_defaults``, plus the ``renamed_fields`` that are set
        (model_type, architectures and fields we do not have, such as ``use_cache``, are dropped)."""
        fields = shared_config_fields(config_dict, self.config_class)
        fields.pop("architectures", None)
        fields.update(self.config_defaults)
        fields.update(
            {
                ours: config_dict[theirs]
                for theirs, ours in self.renamed_fields.items()
                if config_dict.get(theirs) is not None
            }
        )
        return fields

    def config_to_ours(self, config: PreTrainedConfig, **overrides) -> PreTrainedConfig:
        """A transformers config object (e.g. ``transformers.BertConfig``) -> ours."""
        return self.config_class(**{**self.config_dict_to_ours(config.to_dict()), **overrides})


@dataclass
class ConversionPair:
    """Our class <-> transformers class (head suffix ``head``), with the adapter and the variant's
    config translators; ``constructor_kwargs(model)``: the arguments beyond the config that rebuild
    ``model`` (or None)."""

    ours: type
    theirs: type
    adapter: StateDictAdapter
    weights: VariantWeights
    constructor_kwargs: Callable[[PreTrainedModel], dict] | None = None
    head: str = "Model"


# Our model_type -> its weights; every (ours, theirs) pair, in registration order.
WEIGHTS: dict[str, VariantWeights] = {}
PAIRS: list[ConversionPair] = []


def register_weights(weights: VariantWeights, classes: dict[str, type]) -> None:
    """Wire a variant's weights into from_transformers, to_transformers and from_pretrained.

    ``classes``: head suffix ("Model", "ForMaskedLM", ...) -> our class (a VariantSpec's
    ``classes``). The first variant registered for a transformers class answers
    ``from_transformers`` for it; an our class with several transformers families gets one pair
    per family, default family first. Registering again (a module reload) replaces the earlier
    registration.
    """
    WEIGHTS[weights.model_type] = weights
    register_checkpoint_conversion_mapping(weights.model_type, weights.checkpoint_conversion(), overwrite=True)
    PAIRS[:] = [p for p in PAIRS if p.weights.model_type != weights.model_type]
    for suffix in weights.transformers_classes:
        for their_name in weights.transformers_class_names(suffix):
            PAIRS.append(
                ConversionPair(
                    ours=classes[suffix],
                    theirs=getattr(transformers, their_name),
                    adapter=weights.adapter(suffix),
                    weights=weights,
                    constructor_kwargs=weights.constructor_kwargs.get(suffix),
                    head=suffix,
                )
            )
