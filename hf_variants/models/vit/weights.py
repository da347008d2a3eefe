"""ViT's weights: the one explicit key map between transformers' ViT (ViTModel,
ViTForImageClassification, ViTForMaskedImageModeling) and ours, and the config translation.
Read by ``from_transformers``, ``to_transformers`` and ``from_pretrained`` alike (see
``hf_variants.conversion``); it imports no modeling code.

transformers 5 names its ViT weights ``layers.{i}.attention.{q,k,v,o}_proj``, ``layernorm_before``,
``layernorm_after``, ``mlp.fc{1,2}`` and ``layernorm``. Checkpoints saved by transformers 4 (the
Hub's google/vit-* checkpoints) use ``encoder.layer.{i}.attention.attention.query`` and friends:
those names are listed too (``HUB_BACKBONE``), after today's, so ``from_pretrained`` reads both
formats and ``to_transformers`` writes today's.
"""

from __future__ import annotations

import transformers
from transformers import PreTrainedModel

from ...conversion import KeyMap, VariantWeights, shared_config_fields
from ...conversion.variant_weights import require_values
from .configuration_vit import ViTConfig

_OUR_LAYER = "encoder.layers.{i}"


def _parameters(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(their module, our module) -> weight and bias renames."""
    return [(f"{theirs}.{p}", f"{ours}.{p}") for theirs, ours in pairs for p in ("weight", "bias")]


def _backbone(their_layer: str, their_names: dict[str, str], their_final_norm: str) -> list[tuple[str, str]]:
    """Backbone renames for one naming scheme of transformers' ViT layers."""
    return _parameters(
        [
            (f"{their_layer}.{their_names[ours]}", f"{_OUR_LAYER}.{ours}")
            for ours in ("attention.out", "attention_norm", "ffn_norm", "ffn.up", "ffn.down")
        ]
        + [(their_final_norm, "encoder.final_layer_norm"), ("pooler.dense", "pooler.dense")]
    )


EMBEDDINGS = [
    (f"embeddings.{name}", f"embeddings.{name}") for name in ("cls_token", "mask_token", "position_embeddings")
]
EMBEDDINGS += _parameters([("embeddings.patch_embeddings.projection", "embeddings.patch_embeddings.projection")])

# Inside the encoder (relative to it): transformers 5's name -> ours.
TODAY = {
    "attention.out": "attention.o_proj",
    "attention_norm": "layernorm_before",
    "ffn_norm": "layernorm_after",
    "ffn.up": "mlp.fc1",
    "ffn.down": "mlp.fc2",
}
BACKBONE = EMBEDDINGS + _backbone("layers.{i}", TODAY, "layernorm")
# The same tensors under transformers 4's names (checkpoints on the Hub); read only.
HUB = {
    "attention.out": "attention.output.dense",
    "attention_norm": "layernorm_before",
    "ffn_norm": "layernorm_after",
    "ffn.up": "intermediate.dense",
    "ffn.down": "output.dense",
}
HUB_BACKBONE = _backbone("encoder.layer.{i}", HUB, "layernorm")

# Our fused QKV projection = transformers' query, key and value concatenated along dim 0.
BACKBONE_FUSED = [
    (f"{_OUR_LAYER}.attention.qkv.{param}", [f"{layer}.{name}.{param}" for name in names])
    for layer, names in (
        ("layers.{i}.attention", ("q_proj", "k_proj", "v_proj")),
        ("encoder.layer.{i}.attention.attention", ("query", "key", "value")),
    )
    for param in ("weight", "bias")
]

KEY_MAP = KeyMap(
    backbone=BACKBONE + [rename for rename in HUB_BACKBONE if rename not in BACKBONE],
    backbone_fused=BACKBONE_FUSED,
    heads={
        "Model": [],
        "ForImageClassification": _parameters([("classifier", "classifier")]),
        "ForMaskedImageModeling": _parameters(
            [("decoder.0", "decoder.0")]
        ),  # the 1x1 convolution before the pixel shuffle
    },
    their_prefix="vit",
    our_prefix="vit",
)


class ViTWeights(VariantWeights):
    """VariantWeights plus a check that a transformers ViT config has nothing ours cannot express."""

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        for name in ("image_size", "patch_size"):
            if name in config_dict and not isinstance(config_dict[name], int):
                raise ValueError(
                    f"hf-variants' ViT takes square images and patches: {name} must be an int, "
                    f"got {config_dict[name]!r}"
                )
        hidden_size = config_dict.get("hidden_size", ViTConfig.hidden_size)
        required = {"qkv_bias": True, "pooler_act": "tanh", "pooler_output_size": hidden_size}
        for name, value in required.items():
            if config_dict.get(name, value) not in (value, None):
                raise ValueError(
                    f"hf-variants' ViT has no equivalent of transformers' {name}={config_dict[name]!r} "
                    f"(needs {value!r})"
                )
        return super().config_dict_to_ours(config_dict)


def config_to_theirs(config: ViTConfig) -> transformers.ViTConfig:
    require_values(
        config,
        "ViT",
        {
            "layer_sharing": "none",
            "norm_type": "layer_norm",
            "use_bias": True,
            "gated_ffn": False,
            "attention_scale": None,
            "head_dim": None,
            "ffn_dropout_prob": 0.0,
        },
    )
    return transformers.ViTConfig(**shared_config_fields(config, transformers.ViTConfig))


def bare_model_kwargs(model: PreTrainedModel) -> dict:
    """ViTModel's constructor arguments beyond the config, read off a model (same names in both libraries)."""
    return {"add_pooling_layer": model.pooler is not None, "use_mask_token": model.embeddings.mask_token is not None}


WEIGHTS = ViTWeights(
    config_class=ViTConfig,
    key_map=KEY_MAP,
    transformers_classes={head: f"ViT{head}" for head in KEY_MAP.heads},
    source_model_types=("vit",),
    config_to_theirs=config_to_theirs,
    constructor_kwargs={"Model": bare_model_kwargs},
)
