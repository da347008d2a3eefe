"""ELECTRA (Clark et al. 2020): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_electra import ElectraConfig
from .modeling_electra import *  # noqa: F401,F403
from .modeling_electra import (
    ElectraForMaskedLM,
    ElectraForMultipleChoice,
    ElectraForPreTraining,
    ElectraForQuestionAnswering,
    ElectraForReplacedTokenDetection,
    ElectraForSequenceClassification,
    ElectraForTokenClassification,
    ElectraModel,
)
from .modeling_electra import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="electra",
    config_class=ElectraConfig,
    classes={
        "Model": ElectraModel,
        "ForPreTraining": ElectraForPreTraining,  # the joint generator + discriminator
        "ForReplacedTokenDetection": ElectraForReplacedTokenDetection,  # transformers' ElectraForPreTraining
        "ForMaskedLM": ElectraForMaskedLM,
        "ForSequenceClassification": ElectraForSequenceClassification,
        "ForTokenClassification": ElectraForTokenClassification,
        "ForQuestionAnswering": ElectraForQuestionAnswering,
        "ForMultipleChoice": ElectraForMultipleChoice,
    },
    weights=WEIGHTS,  # the one key map: from_transformers, to_transformers and from_pretrained
    paper=PAPER,
    mini_config="electra-mini",
    pretraining_objective="rtd",
    tokenizer_kind="wordpiece-uncased",
)

__all__ = ["ElectraConfig", "SPEC", *_modeling_all]
