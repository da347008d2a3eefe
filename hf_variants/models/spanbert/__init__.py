"""SpanBERT (Joshi et al. 2020): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_spanbert import SpanBertConfig
from .modeling_spanbert import *  # noqa: F401,F403
from .modeling_spanbert import (
    SpanBertForMaskedLM,
    SpanBertForMultipleChoice,
    SpanBertForPreTraining,
    SpanBertForQuestionAnswering,
    SpanBertForSequenceClassification,
    SpanBertForTokenClassification,
    SpanBertModel,
)
from .modeling_spanbert import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="spanbert",
    config_class=SpanBertConfig,
    classes={
        "Model": SpanBertModel,
        "ForPreTraining": SpanBertForPreTraining,
        "ForMaskedLM": SpanBertForMaskedLM,
        "ForSequenceClassification": SpanBertForSequenceClassification,
        "ForTokenClassification": SpanBertForTokenClassification,
        "ForQuestionAnswering": SpanBertForQuestionAnswering,
        "ForMultipleChoice": SpanBertForMultipleChoice,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="spanbert-mini",
    pretraining_objective="span",
    tokenizer_kind="wordpiece-cased",
)


__all__ = ["SpanBertConfig", "SPEC", *_modeling_all]
