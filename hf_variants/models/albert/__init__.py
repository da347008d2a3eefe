"""ALBERT (Lan et al. 2020): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_albert import AlbertConfig
from .modeling_albert import *  # noqa: F401,F403
from .modeling_albert import (
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
    AlbertModel,
)
from .modeling_albert import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="albert",
    config_class=AlbertConfig,
    classes={
        "Model": AlbertModel,
        "ForPreTraining": AlbertForPreTraining,
        "ForMaskedLM": AlbertForMaskedLM,
        "ForSequenceClassification": AlbertForSequenceClassification,
        "ForTokenClassification": AlbertForTokenClassification,
        "ForQuestionAnswering": AlbertForQuestionAnswering,
        "ForMultipleChoice": AlbertForMultipleChoice,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="albert-mini",
    pretraining_objective="ngram+sop",
    tokenizer_kind="unigram",
)


__all__ = ["AlbertConfig", "SPEC", *_modeling_all]
