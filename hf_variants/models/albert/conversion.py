"""ALBERT <-> transformers' ALBERT: config translation and the one explicit weight key map.

transformers' layout differs from ours in three places, each mapped here explicitly:

- the E -> H projection sits in its encoder (``encoder.embedding_hidden_mapping_in``); ours is
  the embeddings' ``projection``;
- its layers are ``encoder.albert_layer_groups.{g}.albert_layers.{j}`` (group g, inner layer j);
  ours are the LayerStack's stored layers ``encoder.layers.{g * inner_group_num + j}``. With one
  inner layer per group (every released checkpoint) that is a plain ``{i}`` rename; with more,
  the names are listed per layer for the config at hand (``albert_adapter``);
- its query / key / value are separate; ours are one fused ``qkv`` (concatenated along dim 0).

transformers has no per-sub-block sharing: layer_sharing "attention" / "ffn" do not convert;
"none" converts as transformers' one group per layer (num_hidden_groups = num_hidden_layers).
"""

from __future__ import annotations

import transformers

from ...conversion import ConversionPair, StateDictAdapter, register_conversion, shared_config_fields
from . import modeling_albert as ours
from .configuration_albert import AlbertConfig

# Inside one layer: transformers' AlbertLayer name -> ours (TransformerLayer).
LAYER_PARTS = [
    ("attention.dense", "attention.out"),
    ("attention.LayerNorm", "attention_norm"),
    ("ffn", "ffn.up"),
    ("ffn_output", "ffn.down"),
    ("full_layer_layer_norm", "ffn_norm"),
]
# Inside the backbone, outside the layers.
BACKBONE_PARTS = [
    ("embeddings.LayerNorm", "embeddings.layer_norm"),
    ("encoder.embedding_hidden_mapping_in", "embeddings.projection"),
    ("pooler", "pooler.dense"),
]
EMBEDDING_TABLES = ["word_embeddings", "position_embeddings", "token_type_embeddings"]


def weight_and_bias(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(f"{theirs}.{p}", f"{ours_}.{p}") for theirs, ours_ in pairs for p in ("weight", "bias")]


def stored_layers(num_hidden_groups: int, inner_group_num: int) -> list[tuple[str, str]]:
    """(transformers layer name, our layer name) of every stored layer, as templates."""
    if inner_group_num == 1:
        return [("encoder.albert_layer_groups.{i}.albert_layers.0", "encoder.layers.{i}")]
    return [
        (f"encoder.albert_layer_groups.{group}.albert_layers.{inner}", f"encoder.layers.{group * inner_group_num + inner}")
        for group in range(num_hidden_groups)
        for inner in range(inner_group_num)
    ]


def backbone_renames(layers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[tuple[str, list[str]]]]:
    """(renames, fused) inside the backbone, relative to it."""
    renames = [(f"embeddings.{t}.weight", f"embeddings.{t}.weight") for t in EMBEDDING_TABLES]
    renames += weight_and_bias(BACKBONE_PARTS)
    fused = []
    for their_layer, our_layer in layers:
        renames += weight_and_bias([(f"{their_layer}.{t}", f"{our_layer}.{o}") for t, o in LAYER_PARTS])
        fused += [
            (f"{our_layer}.attention.qkv.{p}", [f"{their_layer}.attention.{name}.{p}" for name in ("query", "key", "value")])
            for p in ("weight", "bias")
        ]
    return renames, fused


MLM_HEAD = weight_and_bias(
    [("predictions.dense", "mlm_head.transform.dense"), ("predictions.LayerNorm", "mlm_head.transform.layer_norm")]
) + [("predictions.decoder.weight", "mlm_head.decoder.weight"), ("predictions.bias", "mlm_head.decoder.bias")]
# transformers keeps the decoder bias under two names (tied); ours has one.
MLM_IGNORED = [r"predictions\.decoder\.bias"]

HEADS: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "Model": ([], []),
    "ForPreTraining": (MLM_HEAD + weight_and_bias([("sop_classifier.classifier", "sop_classifier.out_proj")]), MLM_IGNORED),
    "ForMaskedLM": (MLM_HEAD, MLM_IGNORED),
    "ForSequenceClassification": (weight_and_bias([("classifier", "classifier.out_proj")]), []),
    "ForTokenClassification": (weight_and_bias([("classifier", "classifier")]), []),
    "ForQuestionAnswering": (weight_and_bias([("qa_outputs", "qa_outputs")]), []),
    "ForMultipleChoice": (weight_and_bias([("classifier", "classifier.out_proj")]), []),
}


def albert_adapter(head: str, num_hidden_groups: int = 1, inner_group_num: int = 1) -> StateDictAdapter:
    """The full-key adapter of ``Albert<head>`` for a layer grouping (the bare model has no prefix)."""
    prefix = "" if head == "Model" else "albert."
    renames, fused = backbone_renames(stored_layers(num_hidden_groups, inner_group_num))
    head_renames, ignored = HEADS[head]
    return StateDictAdapter(
        renames=[(prefix + t, prefix + o) for t, o in renames] + head_renames,
        fused=[(prefix + o, [prefix + t for t in ts]) for o, ts in fused],
        ignored=ignored,
    )


def config_to_ours(config: transformers.AlbertConfig) -> AlbertConfig:
    fields = shared_config_fields(config, AlbertConfig)
    fields["classifier_dropout"] = config.classifier_dropout_prob
    if config.num_hidden_groups == config.num_hidden_layers > 1 and config.inner_group_num == 1:
        # One group per layer: nothing is shared.
        fields.update(layer_sharing="none", num_hidden_groups=1, inner_group_num=1)
    else:
        fields["layer_sharing"] = "all"
    return AlbertConfig(**fields)


def config_to_theirs(config: AlbertConfig) -> transformers.AlbertConfig:
    unsupported = {
        "layer_sharing": (config.layer_sharing in ("all", "none"), "all or none"),
        "pre_layer_norm": (not config.pre_layer_norm, False),
        "position_embedding_type": (config.position_embedding_type == "learned", "learned"),
        "norm_type": (config.norm_type == "layer_norm", "layer_norm"),
        "use_bias": (config.use_bias, True),
        "gated_ffn": (not config.gated_ffn, False),
        "attention_scale": (config.attention_scale is None, None),
        "head_dim": (config.head_dim in (None, config.hidden_size // config.num_attention_heads), None),
        "summary_type": (config.summary_type == "first", "first"),
        "type_vocab_size": (config.type_vocab_size > 0, "> 0"),
        "is_decoder": (not config.is_decoder, False),
    }
    for name, (supported, required) in unsupported.items():
        if not supported:
            raise ValueError(
                f"transformers' ALBERT has no equivalent of {name}={getattr(config, name)!r} (needs {required})"
            )
    fields = shared_config_fields(config, transformers.AlbertConfig)
    fields.update(
        embedding_size=config.embedding_size or config.hidden_size,
        classifier_dropout_prob=config.hidden_dropout_prob if config.classifier_dropout is None else config.classifier_dropout,
    )
    if config.layer_sharing == "none":
        fields.update(num_hidden_groups=config.num_hidden_layers, inner_group_num=1)
    return transformers.AlbertConfig(**fields)


def _adapter_for_config(head: str):
    def adapter(config) -> StateDictAdapter:
        return albert_adapter(head, config.num_hidden_groups, config.inner_group_num)

    return adapter


for _head in HEADS:
    register_conversion(
        ConversionPair(
            ours=getattr(ours, f"Albert{_head}"),
            theirs=getattr(transformers, f"Albert{_head}"),
            adapter=albert_adapter(_head),
            config_to_ours=config_to_ours,
            config_to_theirs=config_to_theirs,
            adapter_for_config=_adapter_for_config(_head),
        )
    )
