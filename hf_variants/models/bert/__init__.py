"""BERT (Devlin et al. 2019): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_bert import BertConfig
from .modeling_bert import *  # noqa: F401,F403
from .modeling_bert import (
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForNextSentencePrediction,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from .modeling_bert import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="bert",
    config_class=BertConfig,
    classes={
        "Model": BertModel,
        "ForPreTraining": BertForPreTraining,
        "ForMaskedLM": BertForMaskedLM,
        "ForNextSentencePrediction": BertForNextSentencePrediction,
        "ForSequenceClassification": BertForSequenceClassification,
        "ForTokenClassification": BertForTokenClassification,
        "ForQuestionAnswering": BertForQuestionAnswering,
        "ForMultipleChoice": BertForMultipleChoice,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="bert-mini",
    pretraining_objective="mlm+nsp",
    tokenizer_kind="wordpiece-uncased",
)


__all__ = ["BertConfig", "SPEC", *_modeling_all]
