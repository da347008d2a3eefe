"""ALBERT (Lan et al. 2020): the variant's one declaration. Everything else reads ``SPEC``."""

from ... import papers
from ...conversion import register_weights
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
    paper=papers.ALBERT,
    pretraining_objective="ngram+sop",
    tokenizer_kind="unigram",
)

# The one key map serves from_transformers, to_transformers and from_pretrained (models/<v>/weights.py).
register_weights(WEIGHTS, SPEC.classes)

__all__ = ["AlbertConfig", "SPEC", *_modeling_all]
