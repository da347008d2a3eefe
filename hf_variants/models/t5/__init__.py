"""T5 (Raffel et al. 2020): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_t5 import T5Config
from .modeling_t5 import *  # noqa: F401,F403
from .modeling_t5 import (
    T5EncoderModel,
    T5ForConditionalGeneration,
    T5ForQuestionAnswering,
    T5ForSequenceClassification,
    T5ForTokenClassification,
    T5Model,
)
from .modeling_t5 import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="t5",
    config_class=T5Config,
    classes={
        "Model": T5Model,
        "ForConditionalGeneration": T5ForConditionalGeneration,
        "EncoderModel": T5EncoderModel,
        "ForSequenceClassification": T5ForSequenceClassification,
        "ForTokenClassification": T5ForTokenClassification,
        "ForQuestionAnswering": T5ForQuestionAnswering,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="t5-mini",
    pretraining_objective="span-corruption",
    tokenizer_kind="unigram-t5",
)

__all__ = ["T5Config", "SPEC", *_modeling_all]
