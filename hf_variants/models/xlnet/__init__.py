"""XLNet (Yang et al. 2019): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_xlnet import XLNetConfig
from .modeling_xlnet import *  # noqa: F401,F403
from .modeling_xlnet import (
    XLNetForMultipleChoice,
    XLNetForQuestionAnsweringSimple,
    XLNetForSequenceClassification,
    XLNetForTokenClassification,
    XLNetLMHeadModel,
    XLNetModel,
)
from .modeling_xlnet import __all__ as _modeling_all
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="xlnet",
    config_class=XLNetConfig,
    classes={
        "Model": XLNetModel,
        # The permutation LM is the pretraining model (as transformers maps XLNet for pretraining).
        "LMHeadModel": XLNetLMHeadModel,
        "ForPreTraining": XLNetLMHeadModel,
        "ForSequenceClassification": XLNetForSequenceClassification,
        "ForTokenClassification": XLNetForTokenClassification,
        "ForQuestionAnswering": XLNetForQuestionAnsweringSimple,
        "ForMultipleChoice": XLNetForMultipleChoice,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="xlnet-mini",
    pretraining_objective="plm",
    tokenizer_kind="unigram-xlnet",  # A <sep> <cls>, left-padded: the heads read <cls> last
)

__all__ = ["XLNetConfig", "SPEC", *_modeling_all]
