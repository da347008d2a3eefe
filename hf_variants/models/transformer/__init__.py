"""The original Transformer (Vaswani et al. 2017): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import TINY_TEST_SIZES, VariantSpec
from .configuration_transformer import OriginalTransformerConfig
from .modeling_transformer import *  # noqa: F401,F403
from .modeling_transformer import TransformerForConditionalGeneration, TransformerModel
from .modeling_transformer import __all__ as _modeling_all
from .schedule import noam_learning_rate, noam_peak_learning_rate, noam_training_arguments
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="transformer",
    config_class=OriginalTransformerConfig,
    classes={"Model": TransformerModel, "ForConditionalGeneration": TransformerForConditionalGeneration},
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="transformer-mini",
    tiny_config={**TINY_TEST_SIZES, "decoder_layers": 2, "vocab_size": 99, "max_position_embeddings": 64},
    pretraining_objective="seq2seq",
    tokenizer_kind="bpe",
    # Marian (the transformers reference) concatenates sin|cos; the paper interleaves them.
    reference_config_overrides={"marian": {"sinusoidal_layout": "concatenated"}},
    exports={
        "noam_learning_rate": noam_learning_rate,
        "noam_peak_learning_rate": noam_peak_learning_rate,
        "noam_training_arguments": noam_training_arguments,
    },
)

__all__ = ["OriginalTransformerConfig", "SPEC", "noam_learning_rate", "noam_peak_learning_rate",
           "noam_training_arguments", *_modeling_all]
