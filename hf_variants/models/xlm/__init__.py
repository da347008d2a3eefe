"""XLM (Lample & Conneau 2019): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_xlm import XLMConfig
from .modeling_xlm import *  # noqa: F401,F403
from .modeling_xlm import (
    XLMForMultipleChoice,
    XLMForQuestionAnsweringSimple,
    XLMForSequenceClassification,
    XLMForTokenClassification,
    XLMModel,
    XLMWithLMHeadModel,
)
from .modeling_xlm import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="xlm",
    config_class=XLMConfig,
    classes={
        "Model": XLMModel,
        # One LM head serves MLM, TLM and CLM (as transformers maps XLM for pretraining and MLM).
        "ForPreTraining": XLMWithLMHeadModel,
        "ForMaskedLM": XLMWithLMHeadModel,
        "ForSequenceClassification": XLMForSequenceClassification,
        "ForTokenClassification": XLMForTokenClassification,
        "ForQuestionAnswering": XLMForQuestionAnsweringSimple,
        "ForMultipleChoice": XLMForMultipleChoice,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="xlm-mini",
    # run_pretraining has no "tlm" objective yet (TLM needs parallel rows: objectives.tlm_dataset).
    pretraining_objective="mlm",
    tokenizer_kind="bpe",  # XLM uses BPE (fastBPE); ours is the byte-level kind (no unknown characters in any language)
)


__all__ = ["XLMConfig", "SPEC", *_modeling_all]
