"""ViT (Dosovitskiy et al. 2021): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import TINY_TEST_SIZES, VariantSpec
from .configuration_vit import ViTConfig
from .mae import ViTForPreTraining, ViTForPreTrainingOutput
from .modeling_vit import (
    ViTForImageClassification,
    ViTForMaskedImageModeling,
    ViTModel,
    ViTPreTrainedModel,
)
from .paper import PAPER
from .weights import WEIGHTS

SPEC = VariantSpec(
    name="vit",
    config_class=ViTConfig,
    classes={
        "Model": ViTModel,
        "ForPreTraining": ViTForPreTraining,
        "ForImageClassification": ViTForImageClassification,
        "ForMaskedImageModeling": ViTForMaskedImageModeling,
    },
    weights=WEIGHTS,
    paper=PAPER,
    mini_config="vit-mini",
    tiny_config={
        **TINY_TEST_SIZES, "image_size": 8, "patch_size": 4, "encoder_stride": 4,
        "decoder_hidden_size": 32, "decoder_num_hidden_layers": 1, "decoder_num_attention_heads": 2, "decoder_intermediate_size": 37,
    },
    pretraining_objective="mae",
    tokenizer_kind="none",  # images: no tokenizer
    compile_benchmark=(("ForImageClassification", False),),  # benchmarks/bench_compile.py
)


__all__ = [
    "ViTConfig",
    "SPEC",
    "ViTPreTrainedModel",
    "ViTModel",
    "ViTForImageClassification",
    "ViTForMaskedImageModeling",
    "ViTForPreTraining",
    "ViTForPreTrainingOutput",
]
