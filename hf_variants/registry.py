"""The one place a variant is declared: its :class:`VariantSpec`.

Each ``hf_variants/models/<variant>/__init__.py`` exposes ``SPEC``; ``import hf_variants`` finds
every such sub-package (:func:`discover_specs`), registers each spec with transformers' Auto
classes and exports its classes. Examples, the Hub code and the tests read the specs instead of
keeping tables of their own, so adding a variant means adding one folder under ``models/`` (plus
its named configs under ``modeling_configs/``).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForImageClassification,
    AutoModelForMaskedImageModeling,
    AutoModelForMaskedLM,
    AutoModelForMultipleChoice,
    AutoModelForNextSentencePrediction,
    AutoModelForPreTraining,
    AutoModelForQuestionAnswering,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

MODEL_TYPE_PREFIX = "hfv_"  # every hf-variants model_type starts with it (never clashes with transformers)

# Head name (the suffix of a variant's class names) -> the Auto class that serves it.
HEAD_AUTO_CLASSES: dict[str, type] = {
    "Model": AutoModel,
    "ForPreTraining": AutoModelForPreTraining,
    "ForMaskedLM": AutoModelForMaskedLM,
    "ForCausalLM": AutoModelForCausalLM,
    "LMHeadModel": AutoModelForCausalLM,
    "ForConditionalGeneration": AutoModelForSeq2SeqLM,
    "ForNextSentencePrediction": AutoModelForNextSentencePrediction,
    "ForSequenceClassification": AutoModelForSequenceClassification,
    "ForTokenClassification": AutoModelForTokenClassification,
    "ForQuestionAnswering": AutoModelForQuestionAnswering,
    "ForMultipleChoice": AutoModelForMultipleChoice,
    "ForImageClassification": AutoModelForImageClassification,
    "ForMaskedImageModeling": AutoModelForMaskedImageModeling,
}


@dataclass(frozen=True)
class VariantInfo:
    """What a variant's paper contributes to its model card (``models/<variant>/paper.py``)."""

    display_name: str
    description: str  # one paragraph: what the variant changes and why
    paper_title: str
    paper_url: str
    bibtex: str


@dataclass(frozen=True)
class VariantSpec:
    """Everything the rest of the package needs to know about one variant.

    Attributes:
        name: the variant's folder name ("bert"); its model_type is ``"hfv_" + name``.
        config_class: its PreTrainedConfig (``model_type`` must be ``"hfv_" + name``).
        classes: head name ("Model", "ForMaskedLM", ... keys of HEAD_AUTO_CLASSES, or a name of the
            variant's own such as "ForSpanBoundaryPretraining") -> model class. Heads whose name is a
            key of HEAD_AUTO_CLASSES are registered with that Auto class.
        paper: the card paragraph and citation (``models/<variant>/paper.py``).
        mini_config: the variant's small named config (``modeling_configs/<mini_config>``) for
            examples and CPU runs (the zoo pretrains it; the tests shrink it to their tiny sizes).
        pretraining_objective: run_pretraining's default ``--objective`` for this variant.
        tokenizer_kind: run_pretraining's default ``--tokenizer_kind`` when training one from scratch.
        weights: the variant's ``VariantWeights`` (models/<variant>/weights.py: the one key map to
            transformers' classes); registering the spec wires it into from_transformers,
            to_transformers and from_pretrained. None for a variant transformers has no counterpart of.
    """

    name: str
    config_class: type
    classes: dict[str, type]
    paper: VariantInfo
    mini_config: str | None = None
    pretraining_objective: str = "mlm"
    tokenizer_kind: str = "wordpiece-uncased"
    weights: object | None = None

    @property
    def model_type(self) -> str:
        return MODEL_TYPE_PREFIX + self.name

    def auto_classes(self) -> dict[str, type]:
        """Auto class name -> our class, for every head an Auto class serves (the Hub's auto_map)."""
        return {
            HEAD_AUTO_CLASSES[head].__name__: cls for head, cls in self.classes.items() if head in HEAD_AUTO_CLASSES
        }


# model_type -> spec, filled by register().
SPECS: dict[str, VariantSpec] = {}
# model_type -> {auto class name: model class}; read by the Hub export (auto_map).
REGISTERED: dict[str, dict[str, type]] = {}


def register(spec: VariantSpec) -> None:
    """Register ``spec``'s config and every head with transformers' Auto classes, and its weights
    with the conversion machinery."""
    if spec.config_class.model_type != spec.model_type:
        raise ValueError(
            f"variant {spec.name!r}: config model_type {spec.config_class.model_type!r} must be {spec.model_type!r}"
        )
    AutoConfig.register(spec.model_type, spec.config_class, exist_ok=True)
    for head, model_class in spec.classes.items():
        if head in HEAD_AUTO_CLASSES:
            HEAD_AUTO_CLASSES[head].register(spec.config_class, model_class, exist_ok=True)
    if spec.weights is not None:
        from .conversion import register_weights  # the conversion machinery reads the specs' classes

        register_weights(spec.weights, spec.classes)
    SPECS[spec.model_type] = spec
    REGISTERED[spec.model_type] = spec.auto_classes()


def discover_specs(package: ModuleType) -> list[VariantSpec]:
    """The ``SPEC`` of every sub-package of ``package`` (hf_variants.models), in name order."""
    specs = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        if info.ispkg:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            spec = getattr(module, "SPEC", None)
            if not isinstance(spec, VariantSpec):
                raise ValueError(f"{module.__name__} must define SPEC = VariantSpec(...)")
            specs.append(spec)
    return specs


def spec_for(model_type: str) -> VariantSpec:
    """The registered spec of ``model_type`` ("hfv_bert"), or a ValueError naming the known ones."""
    if model_type not in SPECS:
        raise ValueError(f"no hf-variants variant has model_type {model_type!r}; registered: {sorted(SPECS)}")
    return SPECS[model_type]
