"""RoBERTa (Liu et al. 2019), and XLM-RoBERTa through the same classes: the variant's one
declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_roberta import RobertaConfig
from .modeling_roberta import *  # noqa: F401,F403
from .modeling_roberta import (
    RobertaForMaskedLM,
    RobertaForMultipleChoice,
    RobertaForPreTraining,
    RobertaForQuestionAnswering,
    RobertaForSequenceClassification,
    RobertaForTokenClassification,
    RobertaModel,
)
from .modeling_roberta import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="roberta",
    config_class=RobertaConfig,
    classes={
        "Model": RobertaModel,
        "ForPreTraining": RobertaForPreTraining,
        "ForMaskedLM": RobertaForMaskedLM,
        "ForSequenceClassification": RobertaForSequenceClassification,
        "ForTokenClassification": RobertaForTokenClassification,
        "ForQuestionAnswering": RobertaForQuestionAnswering,
        "ForMultipleChoice": RobertaForMultipleChoice,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="roberta-mini",
    pretraining_objective="mlm",
    tokenizer_kind="bpe",
)


__all__ = ["RobertaConfig", "SPEC", *_modeling_all]
