"""The original Transformer (Vaswani et al. 2017): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
from .configuration_transformer import OriginalTransformerConfig
from .modeling_transformer import *  # noqa: F401,F403
from .modeling_transformer import TransformerForConditionalGeneration, TransformerModel
from .modeling_transformer import __all__ as _modeling_all
from .paper import PAPER
from .schedule import noam_learning_rate, noam_peak_learning_rate, noam_training_arguments
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="transformer",
    config_class=OriginalTransformerConfig,
    classes={"Model": TransformerModel, "ForConditionalGeneration": TransformerForConditionalGeneration},
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="transformer-mini",
    pretraining_objective="seq2seq",
    tokenizer_kind="bpe",
)

__all__ = [
    "OriginalTransformerConfig",
    "SPEC",
    "noam_learning_rate",
    "noam_peak_learning_rate",
    "noam_training_arguments",
    *_modeling_all,
]
