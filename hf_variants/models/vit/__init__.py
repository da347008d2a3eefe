"""ViT (Dosovitskiy et al. 2021): the variant's one declaration. Everything else reads ``SPEC``."""

from ...registry import VariantSpec
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
    pretraining_objective="mae",
    tokenizer_kind="none",  # images: no tokenizer
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
