"""ViT (Dosovitskiy et al. 2021): the variant's one declaration. Everything else reads ``SPEC``."""

from ... import papers
from ...conversion import register_weights
from ...registry import VariantSpec
from .configuration_vit import ViTConfig
from .mae import ViTForPreTraining, ViTForPreTrainingOutput
from .modeling_vit import (
    ViTForImageClassification,
    ViTForMaskedImageModeling,
    ViTModel,
    ViTPreTrainedModel,
)
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
    paper=papers.VIT,
    pretraining_objective="mae",
    tokenizer_kind="none",  # images: no tokenizer
)

# The one key map serves from_transformers, to_transformers and from_pretrained (weights.py).
register_weights(WEIGHTS, SPEC.classes)

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
