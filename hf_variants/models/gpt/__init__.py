"""GPT (GPT-1, Radford et al. 2018; GPT-2, Radford et al. 2019): the variant's one declaration.
Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_gpt import GPTConfig
from .finetuning import GPTDoubleHeadsModel, GPTDoubleHeadsOutput, format_gpt1_inputs
from .modeling_gpt import *  # noqa: F401,F403
from .modeling_gpt import (
    GPTForQuestionAnswering,
    GPTForSequenceClassification,
    GPTForTokenClassification,
    GPTLMHeadModel,
    GPTModel,
)
from .modeling_gpt import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="gpt",
    config_class=GPTConfig,
    classes={
        "Model": GPTModel,
        "LMHeadModel": GPTLMHeadModel,
        "ForSequenceClassification": GPTForSequenceClassification,
        "ForTokenClassification": GPTForTokenClassification,
        "ForQuestionAnswering": GPTForQuestionAnswering,
        "DoubleHeadsModel": GPTDoubleHeadsModel,  # GPT-1 fine-tuning (no Auto class)
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="gpt2-mini",
    pretraining_objective="clm",
    tokenizer_kind="bpe",
)

__all__ = ["GPTConfig", "SPEC", "GPTDoubleHeadsModel", "GPTDoubleHeadsOutput", "format_gpt1_inputs", *_modeling_all]
