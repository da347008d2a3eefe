"""ViT <-> transformers' ViT (ViTModel, ViTForImageClassification, ViTForMaskedImageModeling):
config translation and the explicit weight key map.

transformers 5 names its ViT weights ``layers.{i}.attention.{q,k,v,o}_proj``, ``layernorm_before``,
``layernorm_after``, ``mlp.fc{1,2}`` and ``layernorm``; its own checkpoint conversion maps the older
``encoder.layer.{i}.attention.attention.query`` names of Hub checkpoints (google/vit-base-patch16-224)
to these when it loads them, so this map starts from the new names.
"""

from __future__ import annotations

import transformers

from ...conversion import ConversionPair, StateDictAdapter, register_conversion, shared_config_fields
from . import modeling_vit as ours
from .configuration_vit import ViTConfig


def encoder_renames(prefix: str) -> list[tuple[str, str]]:
    """transformers' ViT backbone names -> ours, for a backbone stored under ``prefix`` ("vit." or "")."""
    layer, our_layer = f"{prefix}layers.{{i}}", f"{prefix}encoder.layers.{{i}}"
    renames = [
        (f"{prefix}embeddings.{name}", f"{prefix}embeddings.{name}")
        for name in ("cls_token", "mask_token", "position_embeddings")
    ]
    for param in ("weight", "bias"):
        renames += [
            (f"{prefix}embeddings.patch_embeddings.projection.{param}", f"{prefix}embeddings.patch_embeddings.projection.{param}"),
            (f"{layer}.attention.o_proj.{param}", f"{our_layer}.attention.out.{param}"),
            (f"{layer}.layernorm_before.{param}", f"{our_layer}.attention_norm.{param}"),
            (f"{layer}.layernorm_after.{param}", f"{our_layer}.ffn_norm.{param}"),
            (f"{layer}.mlp.fc1.{param}", f"{our_layer}.ffn.up.{param}"),
            (f"{layer}.mlp.fc2.{param}", f"{our_layer}.ffn.down.{param}"),
            (f"{prefix}layernorm.{param}", f"{prefix}encoder.final_layer_norm.{param}"),
            (f"{prefix}pooler.dense.{param}", f"{prefix}pooler.dense.{param}"),
        ]
    return renames


def fused_qkv(prefix: str) -> list[tuple[str, list[str]]]:
    return [
        (f"{prefix}encoder.layers.{{i}}.attention.qkv.{param}",
         [f"{prefix}layers.{{i}}.attention.{name}_proj.{param}" for name in ("q", "k", "v")])
        for param in ("weight", "bias")
    ]


def same_names(*modules: str) -> list[tuple[str, str]]:
    return [(f"{m}.{p}", f"{m}.{p}") for m in modules for p in ("weight", "bias")]


HEADS: dict[str, list[tuple[str, str]]] = {
    "Model": [],
    "ForImageClassification": same_names("classifier"),
    "ForMaskedImageModeling": same_names("decoder.0"),  # the 1x1 convolution before the pixel shuffle
}


def vit_adapter(head: str) -> StateDictAdapter:
    # The bare ViTModel's keys have no "vit." prefix, in transformers' state dict as in ours.
    prefix = "" if head == "Model" else "vit."
    return StateDictAdapter(renames=encoder_renames(prefix) + HEADS[head], fused=fused_qkv(prefix))


def config_to_ours(config: transformers.ViTConfig) -> ViTConfig:
    for name in ("image_size", "patch_size"):
        if not isinstance(getattr(config, name), int):
            raise ValueError(f"hf-variants' ViT takes square images and patches: {name} must be an int, "
                             f"got {getattr(config, name)!r}")
    unsupported = {
        "qkv_bias": (config.qkv_bias, True),
        "pooler_act": (config.pooler_act, "tanh"),
        "pooler_output_size": (config.pooler_output_size, config.hidden_size),
    }
    for name, (value, required) in unsupported.items():
        if value != required:
            raise ValueError(f"hf-variants' ViT has no equivalent of transformers' {name}={value!r} (needs {required!r})")
    return ViTConfig(**shared_config_fields(config, ViTConfig))


def config_to_theirs(config: ViTConfig) -> transformers.ViTConfig:
    unsupported = {
        "layer_sharing": (config.layer_sharing, "none"),
        "norm_type": (config.norm_type, "layer_norm"),
        "use_bias": (config.use_bias, True),
        "gated_ffn": (config.gated_ffn, False),
        "attention_scale": (config.attention_scale, None),
        "head_dim": (config.head_dim, None),
        "ffn_dropout_prob": (config.ffn_dropout_prob, 0.0),
    }
    for name, (value, required) in unsupported.items():
        if value != required:
            raise ValueError(f"transformers' ViT has no equivalent of {name}={value!r} (needs {required!r})")
    return transformers.ViTConfig(**shared_config_fields(config, transformers.ViTConfig))


def bare_model_kwargs(model) -> dict:
    """ViTModel's constructor arguments beyond the config, read off the model (same names in both libraries)."""
    return {"add_pooling_layer": model.pooler is not None, "use_mask_token": model.embeddings.mask_token is not None}


for _head in HEADS:
    register_conversion(
        ConversionPair(
            ours=getattr(ours, f"ViT{_head}"),
            theirs=getattr(transformers, f"ViT{_head}"),
            adapter=vit_adapter(_head),
            config_to_ours=config_to_ours,
            config_to_theirs=config_to_theirs,
            constructor_kwargs=bare_model_kwargs if _head == "Model" else None,
        )
    )
