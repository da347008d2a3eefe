"""BERT (Devlin et al. 2019): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import TINY_TEST_SIZES, VariantSpec
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
    tiny_config={**TINY_TEST_SIZES, "vocab_size": 99, "max_position_embeddings": 64},
    pretraining_objective="mlm+nsp",
    tokenizer_kind="wordpiece-uncased",
    # benchmarks/bench_compile.py: sequence classification, inference and a training step.
    compile_benchmark=(("ForSequenceClassification", False), ("ForSequenceClassification", True)),
)


__all__ = ["BertConfig", "SPEC", *_modeling_all]
