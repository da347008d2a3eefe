"""Transformer-XL (Dai et al. 2019): the variant's one declaration. Everything else reads ``SPEC``.

transformers v5 has no Transformer-XL (removed with its pickled tokenizer), so there is no
from_transformers / to_transformers pair; ``weights.py`` maps the OLD transformers format, read by
``convert_old_transfo_xl_checkpoint`` (``convert_old_checkpoint.py``).
"""

from ...registry import VariantSpec
from .configuration_transfo_xl import TransfoXLConfig
from .convert_old_checkpoint import convert_old_checkpoint as convert_old_transfo_xl_checkpoint
from .modeling_transfo_xl import *  # noqa: F401,F403
from .modeling_transfo_xl import TransfoXLLMHeadModel, TransfoXLModel
from .modeling_transfo_xl import __all__ as _modeling_all
from .paper import PAPER
from .tokenization_transfo_xl import tokenizer_from_symbols, word_level_tokenizer

SPEC = VariantSpec(
    name="transfo_xl",
    config_class=TransfoXLConfig,
    classes={
        "Model": TransfoXLModel,
        "LMHeadModel": TransfoXLLMHeadModel,
    },
    paper=PAPER,
    mini_config="transfo-xl-mini",
    pretraining_objective="clm",
    tokenizer_kind="wordpiece-cased",  # run_pretraining's kinds; word_level_tokenizer is the paper's vocabulary
)

__all__ = [
    "TransfoXLConfig",
    "SPEC",
    "word_level_tokenizer",
    "tokenizer_from_symbols",
    "convert_old_transfo_xl_checkpoint",
    *_modeling_all,
]
