"""GPT (GPT-1, Radford et al. 2018; GPT-2, Radford et al. 2019): the variant's one declaration.
Everything else reads ``SPEC``."""

from ...registry import TINY_TEST_SIZES, VariantSpec
from .configuration_gpt import GPTConfig
from .modeling_gpt import *  # noqa: F401,F403
from .modeling_gpt import (
    GPTForQuestionAnswering,
    GPTForSequenceClassification,
    GPTForTokenClassification,
    GPTLMHeadModel,
    GPTModel,
)
from .modeling_gpt import __all__ as _modeling_all
from .finetuning import GPTDoubleHeadsModel, GPTDoubleHeadsOutput, format_gpt1_inputs
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
    # pad_token_id: batched sequence classification reads the last non-padding token.
    tiny_config={**TINY_TEST_SIZES, "vocab_size": 99, "max_position_embeddings": 64, "pad_token_id": 0},
    pretraining_objective="clm",
    tokenizer_kind="bpe",
    # transformers' OpenAI GPT (GPT-1): post-LN, FFN 4x hidden (256 = 4 x the init test's 64), no
    # scaled residual init. GPT-2 is our default.
    reference_config_overrides={
        "openai-gpt": {"pre_layer_norm": False, "scale_residual_init": False, "intermediate_size": 256},
    },
    compile_benchmark=(("ForSequenceClassification", False),),  # benchmarks/bench_compile.py
    exports={"GPTDoubleHeadsOutput": GPTDoubleHeadsOutput, "format_gpt1_inputs": format_gpt1_inputs},
)

__all__ = ["GPTConfig", "SPEC", "GPTDoubleHeadsModel", "GPTDoubleHeadsOutput", "format_gpt1_inputs", *_modeling_all]
