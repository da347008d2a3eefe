"""Registration of every variant with transformers' Auto classes (done on ``import hf_variants``)."""

from __future__ import annotations

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForMultipleChoice,
    AutoModelForNextSentencePrediction,
    AutoModelForPreTraining,
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

# Auto class -> the attribute suffix of the variant's class name that serves it.
AUTO_CLASS_SUFFIXES = {
    AutoModel: "Model",
    AutoModelForPreTraining: "ForPreTraining",
    AutoModelForMaskedLM: "ForMaskedLM",
    AutoModelForNextSentencePrediction: "ForNextSentencePrediction",
    AutoModelForSequenceClassification: "ForSequenceClassification",
    AutoModelForTokenClassification: "ForTokenClassification",
    AutoModelForQuestionAnswering: "ForQuestionAnswering",
    AutoModelForMultipleChoice: "ForMultipleChoice",
}

# model_type -> {auto class name: model class}; read by the Hub export (auto_map).
REGISTERED: dict[str, dict[str, type]] = {}


def register_variant(config_class: type, prefix: str, module) -> None:
    """Register ``config_class`` and every ``<prefix><suffix>`` class found in ``module``."""
    model_type = config_class.model_type
    AutoConfig.register(model_type, config_class, exist_ok=True)
    classes = REGISTERED.setdefault(model_type, {})
    for auto_class, suffix in AUTO_CLASS_SUFFIXES.items():
        model_class = getattr(module, prefix + suffix, None)
        if model_class is not None:
            auto_class.register(config_class, model_class, exist_ok=True)
            classes[auto_class.__name__] = model_class
